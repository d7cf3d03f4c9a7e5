/* ebb-agent's first contact with a one-time enrolment token
 * (docs/agent-protocol.md, "Enrolment").
 *
 * Cloud boot data (EC2 and ECS user data, a vast.ai environment) stays
 * readable by anything on the instance for its whole life, so what it
 * carries is good once: the agent trades it at POST /v1/enrol for the
 * session token it then uses, and keeps that only in memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent/agent.h"
#include "base/log.h"
#include "base/str.h"

/* engine.h's EBB__ENROL_PREFIX (the agent links only base and io). */
#define ENROL_PREFIX "enrol:"
#define ENROL_TIMEOUT_MS 15000
#define MAX_SESSION_TOKEN 512

bool agent_token_is_enrolment(const char *token)
{
    return strncmp(token, ENROL_PREFIX, strlen(ENROL_PREFIX)) == 0;
}

static void refused(struct agent *a, const char *why)
{
    ebb__error("ebbd refused the enrolment: %s", why);
    a->exit_code = AGENT_EXIT_REFUSED;
    agent_finish(a);
}

/* The session token from ebbd's answer, checked: printable, no blanks,
 * and not another enrolment token. */
static char *session_token(const struct ebb_http_response *res)
{
    json_t *root = json_loadb(res->body, res->body_len, 0, NULL);
    const char *token = json_string_value(json_object_get(root, "token"));
    size_t len = token != NULL ? strlen(token) : 0;
    bool ok = len > 0 && len <= MAX_SESSION_TOKEN && !agent_token_is_enrolment(token);
    for (size_t i = 0; ok && i < len; i++)
        ok = token[i] > ' ' && token[i] < 0x7f;
    char *copy = ok ? ebb_strfmt("%s", token) : NULL;
    json_decref(root);
    return copy;
}

static void on_enrolled(const struct ebb_http_response *res, void *arg)
{
    struct agent *a = arg;
    if (a->state != AGENT_FETCHING || res->error == EBB_ECANCELED)
        return;
    char why[512];
    if (res->error != 0 || res->status >= 500 || res->status == 429) {
        a->fetch_failures++;
        int64_t delay = agent_backoff_ms(a->rep.backoff_base_ms, a->rep.backoff_cap_ms,
                                         a->fetch_failures);
        ebb__log(a->fetch_failures == 1 ? EBB_LOG_WARN : EBB_LOG_DEBUG, "agent",
                 "cannot enrol with %s: %s; retrying in %lld ms", a->opt.ebbd_url,
                 agent_describe_failure(res, why, sizeof(why)), (long long)delay);
        ebb__timer_start(&a->clock, &a->fetch_timer, ebb__clock_now(&a->clock) + delay);
        return;
    }
    if (res->status != 200) {
        refused(a, agent_describe_failure(res, why, sizeof(why)));
        return;
    }
    char *token = session_token(res);
    if (token == NULL) {
        refused(a, "its answer holds no session token");
        return;
    }
    if (agent_reporter_set_token(&a->rep, token) != 0) {
        free(token);
        ebb__error("out of memory");
        agent_finish(a);
        return;
    }
    explicit_bzero(a->token, strlen(a->token));
    free(a->token);
    a->token = token;
    a->enrolling = false;
    a->fetch_failures = 0;
    ebb__info("enrolled with ebbd; the boot data's token is spent");
    agent_fetch_job(a);
}

void agent_enrol(struct agent *a)
{
    char *url = ebb_strfmt("%s/v1/enrol", a->rep.base_url);
    const char *headers[] = {a->rep.auth_header};
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = "POST", .url = url, .headers = headers, .n_headers = 1,
        .body = "", .body_len = 0, .timeout = ENROL_TIMEOUT_MS, .max_attempts = 1,
    };
    int rc = url ? ebb__http_request(a->http, &req, on_enrolled, a) : EBB_ENOMEM;
    free(url);
    if (rc != 0) {
        ebb__error("cannot enrol with ebbd: %s", ebb_strerror(rc));
        agent_finish(a);
    }
}
