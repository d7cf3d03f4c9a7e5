/* One signed RPC call to ECS: common parameters, V1 signature, a POST with
 * a form body (so nothing of the request lands in URLs or their logs), the
 * JSON answer, and the error codes ebb acts on.
 *
 * Retries are the host's HTTP client's, with two hooks: ECS refuses a
 * SignatureNonce it has seen (SignatureNonceUsed), so the prepare hook
 * signs every attempt afresh (a new nonce and Timestamp); and ECS
 * throttles with HTTP 400 and a Throttling* code, so the classifier says
 * that is worth another attempt, as are 5xx and 429 (connect errors and
 * timeouts the host retries itself). At most `retries` retries, the first
 * after up to `retry_backoff`, doubling. Launches are safe to retry: they
 * carry a ClientToken.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include <ebb/buf.h>
#include <ebb/units.h>
#include <ebb/urlenc.h>

#include "alibaba.h"

struct ali_rpc {
    struct ali *a;
    char *url, *region, *action;
    struct ali_params params;
    ali_rpc_cb cb;
    void *arg;
    char *body; /* the current attempt's signed form */
    struct ebb_call *call;
};

static void rpc_free(struct ali_rpc *r)
{
    ali_params_free(&r->params);
    free(r->body);
    free(r->url);
    free(r->region);
    free(r->action);
    free(r);
}

static int is_auth_code(const char *code)
{
    static const char *const auth[] = {
        "InvalidAccessKeyId", "SignatureDoesNotMatch", "IncompleteSignature",
        "InvalidSecurityToken", "InvalidAccessKeySecret",
    };
    for (size_t i = 0; i < sizeof(auth) / sizeof(auth[0]); i++)
        if (strncmp(code, auth[i], strlen(auth[i])) == 0)
            return 1;
    return 0;
}

/* The EBB_E* code for an ECS error Code. */
static int status_of_code(const char *code, int http_status)
{
    if (strncmp(code, "Throttling", 10) == 0 || http_status == 429)
        return EBB_ETHROTTLED;
    if (is_auth_code(code))
        return EBB_EAUTH;
    if (strstr(code, "NoStock") != NULL)
        return EBB_ENOCAPACITY;
    if (strncmp(code, "Forbidden", 9) == 0)
        return EBB_EPERM;
    if (strstr(code, "NotFound") != NULL)
        return EBB_ENOTFOUND;
    if (strncmp(code, "Invalid", 7) == 0 || strncmp(code, "Missing", 7) == 0)
        return EBB_EINVAL;
    return EBB_EHTTP;
}

/* Copies `msg` with the credentials cut out: a server may echo the
 * string it signed, which holds the access key id. */
static char *redacted(const struct ali *a, const char *msg)
{
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, "");
    const char *secrets[2] = {a->key_id, a->secret};
    const char *p = msg;
    while (*p != '\0') {
        size_t skip = 0;
        for (int i = 0; i < 2 && skip == 0; i++) {
            size_t n = strlen(secrets[i]);
            if (n > 0 && strncmp(p, secrets[i], n) == 0)
                skip = n;
        }
        if (skip > 0) {
            ebb_buf_puts(&b, "<credential>");
            p += skip;
        } else {
            ebb_buf_append(&b, p++, 1);
        }
    }
    return ebb_buf_take(&b);
}

static void on_answer(void *arg, const struct ebb_http_response *res);

static char *signed_body(struct ali_rpc *r)
{
    struct ali *a = r->a;
    struct ali_params p = {0};
    for (size_t i = 0; i < r->params.n; i++)
        ali_params_add(&p, r->params.v[i].key, r->params.v[i].value);
    unsigned char nonce[16];
    if (RAND_bytes(nonce, sizeof(nonce)) != 1)
        p.failed = 1;
    char nonce_hex[33], when[EBB_TIME_BUFSZ];
    for (size_t i = 0; i < sizeof(nonce); i++)
        snprintf(nonce_hex + 2 * i, 3, "%02x", nonce[i]);
    ebb_format_time(ali_now(a) / EBB_MS_PER_SECOND * EBB_MS_PER_SECOND, when,
                     sizeof(when));
    ali_params_add(&p, "Action", r->action);
    ali_params_add(&p, "Version", "2014-05-26");
    ali_params_add(&p, "Format", "JSON");
    ali_params_add(&p, "AccessKeyId", a->key_id);
    ali_params_add(&p, "SignatureMethod", "HMAC-SHA1");
    ali_params_add(&p, "SignatureVersion", "1.0");
    ali_params_add(&p, "SignatureNonce", nonce_hex);
    ali_params_add(&p, "Timestamp", when);
    char sig[ALI_SIG_V1_LEN];
    char *body = NULL;
    if (ali_sign_v1("POST", &p, a->secret, sig) == 0) {
        /* Signing sorted p: its canonical query is the form body. */
        char *query = ali_canonical_query(&p);
        struct ebb_buf b = {0};
        ebb_buf_printf(&b, "%s&Signature=", query ? query : "");
        ebb_pct_encode(&b, sig, strlen(sig), 0);
        free(query);
        body = query && !b.failed ? ebb_buf_take(&b) : NULL;
        ebb_buf_free(&b);
    }
    ali_params_free(&p);
    return body;
}

/* The host's prepare hook: every attempt carries its own signature. */
static int prepare(void *arg, struct ebb_http_attempt *attempt)
{
    struct ali_rpc *r = arg;
    free(r->body);
    r->body = signed_body(r);
    if (r->body == NULL)
        return EBB_ENOMEM;
    attempt->body = r->body;
    attempt->body_len = strlen(r->body);
    return 0;
}

/* The host's classifier: throttling (a 400 with a Throttling* code, or
 * 429) and 5xx are worth another attempt; other answers are final. */
static int classify(void *arg, const struct ebb_http_response *res)
{
    struct ali_rpc *r = arg;
    if (res->error != 0)
        return -1;
    if (res->status / 100 == 2)
        return 0;
    json_t *body = json_loadb(res->body, res->body_len, 0, NULL);
    const char *code = body != NULL ? ali_json_str(body, "Code") : "";
    int throttled = status_of_code(code, res->status) == EBB_ETHROTTLED;
    if (throttled || res->status >= 500)
        r->a->host->log(r->a->host->ctx, EBB_LOG_INFO, "%s in %s %s (%s); retrying",
                        r->action, r->region, throttled ? "throttled" : "failed",
                        code[0] ? code : "no error code");
    json_decref(body);
    return throttled || res->status >= 500;
}

static int send_call(struct ali_rpc *r)
{
    if (r->params.failed)
        return EBB_ENOMEM;
    static const char *const headers[] = {
        "Content-Type: application/x-www-form-urlencoded",
        "Accept: application/json",
    };
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = "POST",
        .url = r->url,
        .headers = headers,
        .n_headers = 2,
        .max_attempts = (int)r->a->cfg->retries + 1,
        .retry_backoff = r->a->cfg->retry_backoff,
        .prepare = prepare,
        .classify = classify,
        .hook_arg = r,
    };
    int err = 0;
    r->call = ebb_call_start(&r->a->calls, r->a->host, &req, on_answer, r, &err);
    return r->call != NULL ? 0 : err;
}

static void finish(struct ali_rpc *r, int status, json_t *body, const char *code)
{
    r->cb(r->arg, status, body, code);
    rpc_free(r);
}

static void on_answer(void *arg, const struct ebb_http_response *res)
{
    struct ali_rpc *r = arg;
    struct ali *a = r->a;
    r->call = NULL;
    json_t *body = res->error == 0 ? json_loadb(res->body, res->body_len, 0, NULL)
                                   : NULL;
    const char *code = body != NULL ? ali_json_str(body, "Code") : "";
    if (res->error == 0 && res->status / 100 == 2 && code[0] == '\0' &&
        json_is_object(body)) {
        finish(r, 0, body, "");
        json_decref(body);
        return;
    }
    int status = res->error != 0 ? res->error
                 : body == NULL && res->status / 100 == 2
                     ? EBB_EPROTO
                     : status_of_code(code, res->status);
    if (res->error != 0) {
        if (res->error != EBB_ECANCELED)
            a->host->log(a->host->ctx, EBB_LOG_WARN, "%s in %s: %s (%s)", r->action,
                         r->region, ebb_strerror(res->error), res->error_message);
        finish(r, status, NULL, "");
        return;
    }
    if (status != EBB_ENOCAPACITY && status != EBB_ENOTFOUND) {
        char *msg = redacted(a, body ? ali_json_str(body, "Message") : "");
        a->host->log(a->host->ctx, EBB_LOG_ERROR, "%s in %s failed: HTTP %d %s: %s%s",
                     r->action, r->region, res->status,
                     code[0] ? code : "(no error code)", msg ? msg : "",
                     status == EBB_EAUTH
                         ? " (check ALIBABA_CLOUD_ACCESS_KEY_ID and "
                           "ALIBABA_CLOUD_ACCESS_KEY_SECRET)"
                         : "");
        free(msg);
    }
    finish(r, status, body, code);
    json_decref(body);
}

static char *endpoint_for(const char *tmpl, const char *region)
{
    const char *at = strstr(tmpl, "{region}");
    if (at == NULL)
        return strdup(tmpl);
    return ebb_strfmt("%.*s%s%s", (int)(at - tmpl), tmpl, region, at + 8);
}

struct ali_rpc *ali_rpc_start(struct ali *a, const char *region,
                              const char *action, struct ali_params *params,
                              ali_rpc_cb cb, void *arg)
{
    struct ali_rpc *r = calloc(1, sizeof(*r));
    if (r == NULL || params->failed) {
        free(r);
        ali_params_free(params);
        return NULL;
    }
    *r = (struct ali_rpc){
        .a = a,
        .url = endpoint_for(a->cfg->endpoint, region),
        .region = strdup(region),
        .action = strdup(action),
        .params = *params,
        .cb = cb,
        .arg = arg,
    };
    *params = (struct ali_params){0};
    ali_params_add(&r->params, "RegionId", region);
    if (r->url == NULL || r->region == NULL || r->action == NULL ||
        send_call(r) != 0) {
        rpc_free(r);
        return NULL;
    }
    return r;
}

void ali_rpc_cancel(struct ali_rpc *r)
{
    if (r->call != NULL)
        ebb_call_detach(r->call);
    rpc_free(r);
}

const char *ali_json_str(json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s != NULL ? s : "";
}

/* Prices arrive as JSON numbers (floats); micro-units round to nearest.
 * One over EBB_MONEY_MAX (which would not even convert) is no price. */
ebb_micros ali_json_micros(json_t *obj, const char *key, int *ok)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_number(v) || json_number_value(v) < 0 ||
        json_number_value(v) > (double)(EBB_MONEY_MAX / EBB_MICROS_PER_UNIT)) {
        *ok = 0;
        return 0;
    }
    *ok = 1;
    return (ebb_micros)(json_number_value(v) * 1e6 + 0.5);
}
