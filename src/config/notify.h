/* The notify: section of ebb.yaml (docs/notify.md): the channels events
 * are delivered to and the ones every job uses unless its spec names its
 * own.
 *
 *   notify:
 *     ops-slack: {slack: https://hooks.slack.com/services/T/B/X}
 *     audit:     {webhook: https://audit.example/ebb, secret_file: /etc/ebb/webhook.key}
 *     pager:     {command: [/usr/local/bin/page-oncall]}
 *     defaults:  [ops-slack]
 *
 * A channel may also set max_attempts (1 to 100, default 10), backoff (the
 * first retry's wait, default 1s; it doubles up to 10 minutes) and
 * timeout (one attempt's bound, default 10s); a command channel run_as
 * (the user it runs as when ebbd is root; default nobody, never root).
 * A webhook's secret is read from secret_file when the file is loaded,
 * and the file must be readable by its owner alone. */
#ifndef EBB_CONFIG_NOTIFY_H
#define EBB_CONFIG_NOTIFY_H

#include <stddef.h>

#include <ebb/common.h>
#include <ebb/config.h>
#include <ebb/diag.h>

struct ebb__config;

enum ebb__notify_kind {
    EBB__NOTIFY_WEBHOOK,
    EBB__NOTIFY_SLACK,
    EBB__NOTIFY_COMMAND,
};

/* The longest secret a secret_file may hold (bytes). */
#define EBB__NOTIFY_SECRET_MAX 1024

struct ebb__notify_channel {
    char *name;
    int line;
    enum ebb__notify_kind kind;
    char *url;              /* webhook, slack */
    char *secret;           /* webhook: the secret_file's text, no newline */
    size_t secret_len;
    char **argv;            /* command: argc (>= 1) strings */
    size_t argc;
    char *run_as;           /* command: NULL: nobody (when ebbd is root) */
    int max_attempts;
    ebb_dur_ms backoff;
    ebb_dur_ms timeout;
};

struct ebb__notify_config {
    size_t n;
    struct ebb__notify_channel *channels;
    struct ebb_string_list defaults;
};

/* The channel named `name`, or NULL. Borrowed from cfg. */
const struct ebb__notify_channel *
ebb__config_channel(const struct ebb__config *cfg, const char *name);

/* Checks a job spec's notify: list against the configured channels:
 * returns 0, or EBB_EINVAL with "FILE: notify: no channel "x" in ebb.yaml
 * (notify: has a, b)" in `why`. `file` may be NULL. */
int ebb__config_notify_check(const struct ebb__config *cfg, const char *file,
                             const struct ebb_string_list *names,
                             struct ebb_diag *why);

/* Frees what ebb__config_do_notify stored in `n` (config_file.c calls it). */
void ebb__notify_config_free(struct ebb__notify_config *n);

#endif
