/* The metadata watcher: polls the cloud's instance metadata service for a
 * spot termination notice.
 *
 * aws: IMDSv2. A token from PUT /latest/api/token (header
 * X-aws-ec2-metadata-token-ttl-seconds), then GET
 * /latest/meta-data/spot/instance-action with X-aws-ec2-metadata-token:
 * 404 = nothing scheduled, 200 = {"action": ..., "time": RFC 3339},
 * 401 = the token expired (a new one is fetched at once).
 * alibaba: the same shape with X-aliyun-ecs-metadata-token-ttl-seconds /
 * X-aliyun-ecs-metadata-token and /latest/meta-data/instance/spot/
 * termination-time, whose 200 body is the time itself.
 *
 * One request at a time; a poll never starts while one is out, so the
 * interval is a lower bound between requests.
 */
#ifndef EBB_AGENT_IMDS_H
#define EBB_AGENT_IMDS_H

#include <stdbool.h>
#include <stdint.h>

#include "io/clock.h"
#include "io/http_client.h"

enum agent_md_kind { AGENT_MD_NONE, AGENT_MD_AWS, AGENT_MD_ALIBABA };

/* `deadline` is the announced termination time (epoch ms), 0 when the
 * notice had no readable time; `source` is "aws-imds" or "alibaba-imds";
 * `action` is AWS's action ("terminate", "stop", "hibernate") or
 * "terminate". */
typedef void (*agent_notice_cb)(void *arg, int64_t deadline, const char *source,
                                const char *action);

struct agent_imds {
    struct ebb__http *http;
    struct ebb__clock *clock;
    struct ebb__timer timer;
    enum agent_md_kind kind;
    char *base;             /* "http://169.254.169.254", no trailing slash */
    const char *auth_header; /* borrowed; sent with the token PUT, or NULL */
    int64_t interval_ms;
    char *token;            /* NULL until fetched */
    int64_t token_fetched_at; /* clock time */
    int64_t token_expires;
    bool in_flight;
    bool noticed;           /* a notice was reported; polling has stopped */
    bool failing;           /* the last poll failed (logged once) */
    bool stopped;
    agent_notice_cb on_notice;
    void *arg;
};

/* The default base URL of `kind`. */
const char *agent_imds_default_base(enum agent_md_kind kind);

/* Starts polling every `interval_ms` (the first poll at once). `base` is
 * copied. `auth_header` ("Authorization: Bearer ...", borrowed, or NULL)
 * goes with each token PUT: ebbd's own metadata endpoint hands a session
 * only to the instance's agent; a cloud's is never sent it. Returns 0 or
 * EBB_ENOMEM. A NONE kind starts nothing. */
int agent_imds_start(struct agent_imds *m, struct ebb__http *http,
                     struct ebb__clock *clock, enum agent_md_kind kind,
                     const char *base, const char *auth_header, int64_t interval_ms,
                     agent_notice_cb cb, void *arg);

/* Stops polling and frees what it holds; a request still in flight must
 * be cancelled by closing the HTTP client. */
void agent_imds_stop(struct agent_imds *m);

#endif
