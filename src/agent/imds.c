/* The metadata watcher (see imds.h). */
#include "agent/imds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebb/units.h>

#include "base/log.h"
#include "base/str.h"

/* The longest token life IMDS grants (6 h); renewed a minute early. */
#define TOKEN_TTL_S 21600
#define TOKEN_RENEW_MARGIN_MS 60000
/* A metadata request that takes longer than this is a failed poll. */
#define REQUEST_TIMEOUT_MS 2000

struct flavor {
    const char *ttl_header;
    const char *token_header;
    const char *notice_path;
    const char *source;
};

static const struct flavor flavors[] = {
    [AGENT_MD_AWS] = {"X-aws-ec2-metadata-token-ttl-seconds", "X-aws-ec2-metadata-token",
                      "/latest/meta-data/spot/instance-action", "aws-imds"},
    [AGENT_MD_ALIBABA] = {"X-aliyun-ecs-metadata-token-ttl-seconds",
                          "X-aliyun-ecs-metadata-token",
                          "/latest/meta-data/instance/spot/termination-time",
                          "alibaba-imds"},
};

static void poll_now(struct agent_imds *m);

const char *agent_imds_default_base(enum agent_md_kind kind)
{
    switch (kind) {
    case AGENT_MD_AWS: return "http://169.254.169.254";
    case AGENT_MD_ALIBABA: return "http://100.100.100.200";
    default: return "";
    }
}

static void schedule(struct agent_imds *m, int64_t delay)
{
    if (!m->stopped && !m->noticed)
        ebb__timer_start(m->clock, &m->timer, ebb__clock_now(m->clock) + delay);
}

static void on_tick(struct ebb__timer *t)
{
    struct agent_imds *m = t->data;
    poll_now(m);
}

static void note_failure(struct agent_imds *m, const char *what,
                         const struct ebb_http_response *res)
{
    if (!m->failing)
        ebb__warn("metadata endpoint %s: %s%s (HTTP %d); still polling every %lld ms",
                  m->base, what, res->error ? ebb_strerror(res->error) : "",
                  res->status, (long long)m->interval_ms);
    m->failing = true;
}

static void note_success(struct agent_imds *m)
{
    if (m->failing)
        ebb__info("metadata endpoint %s answers again", m->base);
    m->failing = false;
}

/* Reads a notice body: AWS's JSON {"action", "time"}, Alibaba's bare time. */
static void report_notice(struct agent_imds *m, const char *body, size_t len)
{
    const struct flavor *f = &flavors[m->kind];
    char action[32] = "terminate";
    char when[64] = "";
    if (m->kind == AGENT_MD_AWS) {
        json_t *root = json_loadb(body, len, 0, NULL);
        const char *a = json_string_value(json_object_get(root, "action"));
        const char *t = json_string_value(json_object_get(root, "time"));
        if (a != NULL)
            ebb__strlcpy(action, a, sizeof(action));
        if (t != NULL)
            ebb__strlcpy(when, t, sizeof(when));
        json_decref(root);
    } else {
        snprintf(when, sizeof(when), "%.*s", (int)(len < 63 ? len : 63), body);
        when[strcspn(when, " \r\n")] = '\0';
    }
    ebb_time_ms deadline = 0;
    if (ebb_parse_time(when, &deadline) != 0) {
        ebb__warn("termination notice without a readable time (\"%s\"); "
                  "treating it as immediate", when);
        deadline = 0;
    }
    ebb__info("termination notice from %s: %s at %s", f->source, action,
              when[0] ? when : "an unknown time");
    m->noticed = true;
    m->on_notice(m->arg, deadline, f->source, action);
}

static void on_notice_answer(const struct ebb_http_response *res, void *arg)
{
    struct agent_imds *m = arg;
    m->in_flight = false;
    if (m->stopped || res->error == EBB_ECANCELED)
        return;
    if (res->error == 0 && res->status == 401) {
        /* The token expired or the service restarted: a new one now,
         * unless this one is brand new (then the next poll tries again). */
        bool fresh = ebb__clock_now(m->clock) - m->token_fetched_at < m->interval_ms;
        free(m->token);
        m->token = NULL;
        if (fresh)
            note_failure(m, "a new token was refused ", res);
        schedule(m, fresh ? m->interval_ms : 0);
        return;
    }
    if (res->error == 0 && res->status == 404) {
        note_success(m);
    } else if (res->error == 0 && res->status == 200) {
        note_success(m);
        report_notice(m, res->body, res->body_len);
        return;
    } else {
        note_failure(m, "notice query failed ", res);
    }
    schedule(m, m->interval_ms);
}

static void get_notice(struct agent_imds *m)
{
    const struct flavor *f = &flavors[m->kind];
    char *url = ebb_strfmt("%s%s", m->base, f->notice_path);
    char *hdr = ebb_strfmt("%s: %s", f->token_header, m->token);
    const char *headers[] = {hdr};
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = "GET", .url = url, .headers = headers, .n_headers = 1,
        .timeout = REQUEST_TIMEOUT_MS, .max_attempts = 1,
    };
    int rc = url && hdr ? ebb__http_request(m->http, &req, on_notice_answer, m)
                        : EBB_ENOMEM;
    free(url);
    free(hdr);
    if (rc == 0)
        m->in_flight = true;
    else
        schedule(m, m->interval_ms);
}

static void on_token(const struct ebb_http_response *res, void *arg)
{
    struct agent_imds *m = arg;
    m->in_flight = false;
    if (m->stopped || res->error == EBB_ECANCELED)
        return;
    if (res->error != 0 || res->status != 200 || res->body_len == 0) {
        note_failure(m, "no token: ", res);
        schedule(m, m->interval_ms);
        return;
    }
    free(m->token);
    m->token = ebb_strfmt("%.*s", (int)strcspn(res->body, "\r\n"), res->body);
    m->token_fetched_at = ebb__clock_now(m->clock);
    m->token_expires = m->token_fetched_at + TOKEN_TTL_S * INT64_C(1000) -
                       TOKEN_RENEW_MARGIN_MS;
    if (m->token == NULL) {
        schedule(m, m->interval_ms);
        return;
    }
    get_notice(m);
}

static void put_token(struct agent_imds *m)
{
    const struct flavor *f = &flavors[m->kind];
    char *url = ebb_strfmt("%s/latest/api/token", m->base);
    char *hdr = ebb_strfmt("%s: %d", f->ttl_header, TOKEN_TTL_S);
    const char *headers[] = {hdr, m->auth_header};
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = "PUT", .url = url, .headers = headers,
        .n_headers = m->auth_header != NULL ? 2 : 1,
        .timeout = REQUEST_TIMEOUT_MS, .max_attempts = 1,
    };
    int rc = url && hdr ? ebb__http_request(m->http, &req, on_token, m) : EBB_ENOMEM;
    free(url);
    free(hdr);
    if (rc == 0)
        m->in_flight = true;
    else
        schedule(m, m->interval_ms);
}

static void poll_now(struct agent_imds *m)
{
    if (m->in_flight || m->stopped || m->noticed)
        return;
    if (m->token == NULL || ebb__clock_now(m->clock) >= m->token_expires)
        put_token(m);
    else
        get_notice(m);
}

int agent_imds_start(struct agent_imds *m, struct ebb__http *http,
                     struct ebb__clock *clock, enum agent_md_kind kind,
                     const char *base, const char *auth_header, int64_t interval_ms,
                     agent_notice_cb cb, void *arg)
{
    *m = (struct agent_imds){
        .http = http, .clock = clock, .kind = kind, .interval_ms = interval_ms,
        .auth_header = auth_header, .on_notice = cb, .arg = arg,
    };
    ebb__timer_init(&m->timer, on_tick, m);
    if (kind == AGENT_MD_NONE)
        return 0;
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        n--;
    m->base = ebb_strfmt("%.*s", (int)n, base);
    if (m->base == NULL)
        return EBB_ENOMEM;
    schedule(m, 0);
    return 0;
}

void agent_imds_stop(struct agent_imds *m)
{
    m->stopped = true;
    if (m->clock != NULL)
        ebb__timer_stop(m->clock, &m->timer);
    free(m->token);
    free(m->base);
    m->token = m->base = NULL;
}
