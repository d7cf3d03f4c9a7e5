/* notify: in ebb.yaml: channels and defaults (config/notify.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cfg_table.h"
#include "base/yaml_read.h"
#include "config/config_impl.h"
#include "config/notify.h"

#define MAX_ATTEMPTS_DEFAULT 10
#define MAX_ATTEMPTS_MAX 100
#define BACKOFF_DEFAULT INT64_C(1000)
#define TIMEOUT_DEFAULT INT64_C(10000)
#define TIMEOUT_MAX INT64_C(600000)

static const char *const channel_keys[] = {
    "webhook", "slack", "command", "secret_file", "max_attempts", "backoff",
    "timeout", "run_as", NULL,
};

static int fail(struct ebb_diag *d, const struct ebb__ynode *n,
                const char *fmt, ...) EBB_PRINTF(3, 4);

static int fail(struct ebb_diag *d, const struct ebb__ynode *n,
                const char *fmt, ...)
{
    char msg[sizeof(d->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ebb_diag_set(d, n->file, n->line, "%s", msg);
    return EBB_ECONFIG;
}

/* A URL ebbd can POST to: http:// or https:// and something after it. */
static int read_url(const struct ebb__ynode *n, const char *what, char **out,
                    struct ebb_diag *d)
{
    int rc = ebb__yread_text(n, what, "https://hooks.example/ebb", out, d);
    if (rc != 0)
        return rc;
    const char *u = *out;
    size_t skip = strncmp(u, "https://", 8) == 0  ? 8
                  : strncmp(u, "http://", 7) == 0 ? 7
                                                  : 0;
    if (skip == 0 || u[skip] == '\0' || strpbrk(u, " \t\r\n") != NULL) {
        char q[EBB_DIAG_QUOTE_SIZE];
        return fail(d, n, "%s: %s is not an http:// or https:// URL", what,
                    ebb__yread_quote(n, q, sizeof(q)));
    }
    return 0;
}

/* Reads the webhook's secret now, so that a missing or unsafe file stops
 * ebbd at start rather than at the first event. A file others may read
 * is refused: the secret is what lets a receiver trust a POST. */
static int read_secret(struct ebb__notify_channel *c, const struct ebb__ynode *n,
                       const char *what, struct ebb_diag *d)
{
    char *path = NULL;
    int rc = ebb__yread_text(n, what, "/etc/ebb/webhook.key", &path, d);
    if (rc != 0)
        return rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        rc = fail(d, n, "%s: cannot read %s: %s", what, path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = fail(d, n, "%s: %s is not a regular file", what, path);
    } else if ((st.st_mode & 077) != 0) {
        rc = fail(d, n, "%s: %s may be read by its group or others (mode "
                  "%04o); the secret must be its owner's alone (chmod 600 %s)",
                  what, path, (unsigned)(st.st_mode & 07777), path);
    } else if (st.st_size > EBB__NOTIFY_SECRET_MAX) {
        rc = fail(d, n, "%s: %s is longer than %d bytes", what, path,
                  EBB__NOTIFY_SECRET_MAX);
    }
    if (rc == 0) {
        c->secret = calloc(1, EBB__NOTIFY_SECRET_MAX + 1);
        ssize_t got = c->secret != NULL
                          ? read(fd, c->secret, EBB__NOTIFY_SECRET_MAX) : -1;
        if (got < 0)
            rc = c->secret == NULL ? ebb__yread_nomem(d)
                                   : fail(d, n, "%s: cannot read %s: %s", what,
                                          path, strerror(errno));
        size_t len = got > 0 ? (size_t)got : 0;
        while (len > 0 && (c->secret[len - 1] == '\n' || c->secret[len - 1] == '\r'))
            len--;
        if (rc == 0 && len == 0)
            rc = fail(d, n, "%s: %s is empty (write a long random secret "
                      "into it: openssl rand -hex 32 > %s)", what, path, path);
        if (c->secret != NULL)
            c->secret[len] = '\0';
        c->secret_len = len;
    }
    if (fd >= 0)
        close(fd);
    free(path);
    return rc;
}

static int read_command(struct ebb__notify_channel *c, const struct ebb__ynode *n,
                        const char *what, struct ebb_diag *d)
{
    struct ebb_string_list argv = {0, NULL};
    int rc = ebb__yread_list(n, what, &argv, d);
    if (rc != 0)
        return rc;
    c->argv = argv.items;
    c->argc = argv.n;
    if (c->argc == 0 || c->argv[0][0] != '/')
        return fail(d, n, "%s: expected a program by its absolute path and "
                    "its arguments (example: [/usr/local/bin/page-oncall])",
                    what);
    return 0;
}

/* The keys every channel may set, whatever its kind. */
static int read_bounds(struct ebb__notify_channel *c, const struct ebb__ynode *map,
                       const char *name, struct ebb_diag *d)
{
    char what[160];
    c->max_attempts = MAX_ATTEMPTS_DEFAULT;
    c->backoff = BACKOFF_DEFAULT;
    c->timeout = TIMEOUT_DEFAULT;
    const struct ebb__ynode *v = ebb__ymap_get(map, "max_attempts");
    int rc = 0;
    if (v != NULL) {
        snprintf(what, sizeof(what), "notify.%s.max_attempts", name);
        rc = ebb__yread_int(v, what, 1, MAX_ATTEMPTS_MAX, &c->max_attempts, d);
    }
    v = ebb__ymap_get(map, "backoff");
    if (rc == 0 && v != NULL) {
        snprintf(what, sizeof(what), "notify.%s.backoff", name);
        rc = ebb__cfg_parse_value(EBB_CFG_DURATION, v, what, &c->backoff, d);
        if (rc == 0 && c->backoff <= 0)
            rc = fail(d, v, "%s: must be more than 0 (example: 1s)", what);
    }
    v = ebb__ymap_get(map, "timeout");
    if (rc == 0 && v != NULL) {
        snprintf(what, sizeof(what), "notify.%s.timeout", name);
        rc = ebb__cfg_parse_value(EBB_CFG_DURATION, v, what, &c->timeout, d);
        if (rc == 0 && (c->timeout <= 0 || c->timeout > TIMEOUT_MAX))
            rc = fail(d, v, "%s: must be more than 0 and at most 10m", what);
    }
    return rc;
}

static int read_channel(struct ebb__notify_channel *c, const struct ebb__ynode *key,
                        const struct ebb__ynode *map, struct ebb_diag *d)
{
    char what[160];
    snprintf(what, sizeof(what), "notify.%s", key->value);
    int rc = ebb__yread_expect_map(map, what, d);
    if (rc == 0)
        rc = ebb__yread_check_keys(map, channel_keys, what, d);
    if (rc != 0)
        return rc;
    static const char *const kinds[] = {"webhook", "slack", "command"};
    const struct ebb__ynode *v = NULL;
    int found = 0;
    for (int k = 0; k < 3; k++) {
        const struct ebb__ynode *x = ebb__ymap_get(map, kinds[k]);
        if (x == NULL)
            continue;
        found++;
        v = x;
        c->kind = (enum ebb__notify_kind)k;
    }
    if (found != 1)
        return fail(d, key, "%s: give exactly one of webhook:, slack: or "
                    "command: (example: {slack: https://hooks.slack.com/"
                    "services/T/B/X})", what);
    const struct ebb__ynode *secret = ebb__ymap_get(map, "secret_file");
    const struct ebb__ynode *run_as = ebb__ymap_get(map, "run_as");
    char sub[200];
    snprintf(sub, sizeof(sub), "%s.%s", what, kinds[c->kind]);
    if (c->kind == EBB__NOTIFY_COMMAND) {
        rc = read_command(c, v, sub, d);
    } else {
        rc = read_url(v, sub, &c->url, d);
    }
    if (rc == 0 && c->kind == EBB__NOTIFY_WEBHOOK && secret == NULL)
        rc = fail(d, key, "%s: a webhook needs secret_file: (the key its "
                  "events are signed with; example: /etc/ebb/webhook.key)",
                  what);
    if (rc == 0 && secret != NULL && c->kind != EBB__NOTIFY_WEBHOOK)
        rc = fail(d, secret, "%s.secret_file: only a webhook is signed", what);
    if (rc == 0 && secret != NULL) {
        snprintf(sub, sizeof(sub), "%s.secret_file", what);
        rc = read_secret(c, secret, sub, d);
    }
    if (rc == 0 && run_as != NULL && c->kind != EBB__NOTIFY_COMMAND)
        rc = fail(d, run_as, "%s.run_as: only a command runs as a user", what);
    if (rc == 0 && run_as != NULL) {
        snprintf(sub, sizeof(sub), "%s.run_as", what);
        rc = ebb__yread_text(run_as, sub, "nobody", &c->run_as, d);
        if (rc == 0 && strcmp(c->run_as, "root") == 0)
            rc = fail(d, run_as, "%s: a notification command never runs as "
                      "root", sub);
    }
    return rc != 0 ? rc : read_bounds(c, map, key->value, d);
}

int ebb__config_do_notify(struct ebb__config *cfg, const struct ebb__ynode *n,
                          struct ebb_diag *d)
{
    struct ebb__notify_config *nc = &cfg->notify;
    int rc = ebb__yread_expect_map(n, "notify", d);
    if (rc != 0 || n->n == 0)
        return rc;
    nc->channels = calloc(n->n, sizeof(*nc->channels));
    if (nc->channels == NULL)
        return ebb__yread_nomem(d);
    const struct ebb__ynode *defaults = NULL;
    for (size_t i = 0; i < n->n; i++) {
        const struct ebb__ynode *key = n->keys[i];
        if (ebb__yread_is_key(key, "defaults")) {
            defaults = n->items[i];
            continue;
        }
        if (!ebb__yread_name_valid(key->value, key->len)) {
            char q[EBB_DIAG_QUOTE_SIZE];
            return fail(d, key, "notify: %s is not a channel name (1 to 64 "
                        "letters, digits, - and _; example: ops-slack)",
                        ebb__yread_quote(key, q, sizeof(q)));
        }
        struct ebb__notify_channel *c = &nc->channels[nc->n++];
        c->line = key->line;
        c->name = strdup(key->value);
        if (c->name == NULL)
            return ebb__yread_nomem(d);
        rc = read_channel(c, key, n->items[i], d);
        if (rc != 0)
            return rc;
    }
    if (defaults == NULL)
        return 0;
    rc = ebb__yread_list(defaults, "notify.defaults", &nc->defaults, d);
    for (size_t i = 0; rc == 0 && i < nc->defaults.n; i++) {
        if (ebb__config_channel(cfg, nc->defaults.items[i]) == NULL)
            rc = fail(d, defaults, "notify.defaults: no channel \"%s\" under "
                      "notify:", nc->defaults.items[i]);
    }
    return rc;
}

const struct ebb__notify_channel *
ebb__config_channel(const struct ebb__config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->notify.n; i++)
        if (strcmp(cfg->notify.channels[i].name, name) == 0)
            return &cfg->notify.channels[i];
    return NULL;
}

int ebb__config_notify_check(const struct ebb__config *cfg, const char *file,
                             const struct ebb_string_list *names,
                             struct ebb_diag *why)
{
    for (size_t i = 0; i < names->n; i++) {
        if (ebb__config_channel(cfg, names->items[i]) != NULL)
            continue;
        char known[400] = "";
        size_t at = 0;
        for (size_t k = 0; k < cfg->notify.n; k++) {
            int w = snprintf(known + at, sizeof(known) - at, "%s%s",
                             k > 0 ? ", " : "", cfg->notify.channels[k].name);
            if (w > 0 && (size_t)w < sizeof(known) - at)
                at += (size_t)w;
        }
        ebb_diag_set(why, NULL, 0, "%s: notify: no channel \"%s\" in ebb.yaml "
                     "(notify: %s)", file != NULL ? file : "job",
                     names->items[i], at > 0 ? known : "has none");
        return EBB_EINVAL;
    }
    return 0;
}

void ebb__notify_config_free(struct ebb__notify_config *n)
{
    for (size_t i = 0; i < n->n; i++) {
        struct ebb__notify_channel *c = &n->channels[i];
        free(c->name);
        free(c->url);
        if (c->secret != NULL)
            memset(c->secret, 0, c->secret_len);
        free(c->secret);
        struct ebb_string_list argv = {c->argc, c->argv};
        ebb__string_list_free(&argv);
        free(c->run_as);
    }
    free(n->channels);
    ebb__string_list_free(&n->defaults);
    memset(n, 0, sizeof(*n));
}
