/* One EC2 Query API call: the form body, its SigV4 signature, the request
 * through the host's HTTP client, and the answer classified into an ebb
 * error. The client retries, with backoff and jitter, connect errors,
 * timeouts, 5xx and 429, and whatever the classifier here calls
 * throttling in EC2's words (RequestLimitExceeded, Throttling ... at any
 * status).
 *
 * Calls in flight are operations on the provider's tracker (ebb_ops) over
 * its HTTP calls (ebb_calls), so destroy() completes each with
 * EBB_ECANCELED and detaches its request, whose answer is then dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/ops.h>

#include "aws.h"
#include "aws_ec2.h"
#include <ebb/sigv4.h>

struct aws_call {
    struct ebb_op op; /* on a->ops */
    struct ebb_call *call;
    aws_call_cb cb;
    void *arg;
};

static const struct {
    const char *code;
    int status;
} error_codes[] = {
    {"AuthFailure", EBB_EAUTH},
    {"UnauthorizedOperation", EBB_EAUTH},
    {"InvalidClientTokenId", EBB_EAUTH},
    {"SignatureDoesNotMatch", EBB_EAUTH},
    {"OptInRequired", EBB_EAUTH},
    {"RequestLimitExceeded", EBB_ETHROTTLED},
    {"Throttling", EBB_ETHROTTLED},
    {"EC2ThrottledException", EBB_ETHROTTLED},
    {"InsufficientInstanceCapacity", EBB_ENOCAPACITY},
    {"InsufficientCapacity", EBB_ENOCAPACITY},
    {"SpotMaxPriceTooLow", EBB_ENOCAPACITY},
    {"MaxSpotInstanceCountExceeded", EBB_ENOCAPACITY},
    {"UnfulfillableCapacity", EBB_ENOCAPACITY},
    {"InvalidInstanceID.NotFound", EBB_ENOTFOUND},
};

int aws_error_status(const char *code, int http_status)
{
    for (size_t i = 0; i < sizeof(error_codes) / sizeof(error_codes[0]); i++)
        if (strcmp(code, error_codes[i].code) == 0)
            return error_codes[i].status;
    /* "AuthFailure.ServiceLinkedRoleCreationNotPermitted" and the like. */
    if (strncmp(code, "AuthFailure.", 12) == 0)
        return EBB_EAUTH;
    if (http_status == 401 || http_status == 403)
        return EBB_EAUTH;
    if (http_status == 429 || http_status == 503)
        return EBB_ETHROTTLED;
    return EBB_EHTTP;
}

static void on_http(void *arg, const struct ebb_http_response *res)
{
    struct aws_call *c = arg;
    ebb_op_remove(&c->op);
    char code[128] = "", message[512] = "";
    struct aws_reply r = {
        .http_status = res->status,
        .code = code,
        .message = message,
        .body = res->body,
        .body_len = res->body_len,
    };
    if (res->error != 0) {
        r.status = res->error;
        snprintf(message, sizeof(message), "%s", res->error_message);
    } else if (res->status != 200) {
        aws_parse_error(res->body, res->body_len, code, sizeof(code), message,
                        sizeof(message));
        r.status = aws_error_status(code, res->status);
        if (code[0] == '\0')
            snprintf(message, sizeof(message), "HTTP %d", res->status);
    }
    c->cb(c->arg, &r);
    free(c);
}

/* The host's classifier: EC2's throttling codes are worth another
 * attempt at any status, as are 5xx; other errors are final. */
static int classify(void *arg, const struct ebb_http_response *res)
{
    (void)arg;
    if (res->error != 0)
        return -1;
    if (res->status == 200)
        return 0;
    char code[128] = "", message[16];
    aws_parse_error(res->body, res->body_len, code, sizeof(code), message,
                    sizeof(message));
    return aws_error_status(code, res->status) == EBB_ETHROTTLED || res->status >= 500;
}

static void call_cancel(struct ebb_op *op)
{
    struct aws_call *c = (struct aws_call *)op;
    ebb_call_detach(c->call);
    ebb_op_remove(op);
    aws_call_cb cb = c->cb;
    void *arg = c->arg;
    free(c);
    struct aws_reply r = {.status = EBB_ECANCELED, .code = "", .message = ""};
    cb(arg, &r);
}

void aws_call_cancel_all(struct aws *a)
{
    ebb_ops_cancel_all(&a->ops);
    ebb_calls_detach(&a->calls);
}

/* The endpoint for `region`: "{region}" replaced, a path of "/" added
 * when it has none. `authority` receives host[:port] for the Host header,
 * `path` the path to sign. */
static char *endpoint_url(const char *endpoint, const char *region,
                          char *authority, size_t authority_size,
                          const char **path)
{
    struct ebb_buf b = {0};
    for (const char *p = endpoint; *p != '\0';) {
        if (strncmp(p, "{region}", 8) == 0) {
            ebb_buf_puts(&b, region);
            p += 8;
        } else {
            ebb_buf_append(&b, p++, 1);
        }
    }
    const char *host = b.data != NULL ? strstr(b.data, "://") : NULL;
    if (host == NULL) {
        ebb_buf_free(&b);
        return NULL;
    }
    host += 3;
    size_t host_len = strcspn(host, "/?#");
    int has_path = host[host_len] == '/';
    snprintf(authority, authority_size, "%.*s", (int)host_len, host);
    if (!has_path)
        ebb_buf_puts(&b, "/");
    char *url = ebb_buf_take(&b);
    if (url != NULL) {
        const char *h = strstr(url, "://") + 3;
        *path = h + strcspn(h, "/");
    }
    return url;
}

int aws_call(struct aws *a, const char *region, const char *action,
             const char *params, aws_call_cb cb, void *arg)
{
    if (!a->have_creds)
        return EBB_EAUTH;
    char authority[256];
    const char *path = "/";
    char *url = endpoint_url(a->cfg->endpoint, region, authority,
                             sizeof(authority), &path);
    if (url == NULL)
        return EBB_ECONFIG;

    struct ebb_buf body = {0};
    ebb_buf_printf(&body, "Action=%s&Version=%s%s", action, AWS_API_VERSION,
                    params);
    char amz_date[17];
    ebb_sigv4_amz_date(a->host->now(a->host->ctx), amz_date);

    const char *content_type = "application/x-www-form-urlencoded; charset=utf-8";
    struct ebb_sigv4_header sh[4] = {
        {"Content-Type", content_type},
        {"Host", authority},
        {"X-Amz-Date", amz_date},
        {"X-Amz-Security-Token", a->creds.session_token},
    };
    struct ebb_sigv4_request sreq = {
        .method = "POST",
        .path = path,
        .query = "",
        .headers = sh,
        .n_headers = a->creds.session_token != NULL ? 4 : 3,
        .payload = body.data,
        .payload_len = body.len,
    };
    struct ebb_sigv4_scope scope = {
        .access_key_id = a->creds.access_key_id,
        .secret_access_key = a->creds.secret_access_key,
        .region = region,
        .service = "ec2",
        .amz_date = amz_date,
    };
    struct ebb_sigv4_result sig;
    int rc = body.failed ? EBB_ENOMEM : ebb_sigv4_sign(&sreq, &scope, &sig);
    struct aws_call *c = rc == 0 ? calloc(1, sizeof(*c)) : NULL;
    if (rc == 0 && c == NULL)
        rc = EBB_ENOMEM;
    if (rc == 0) {
        char *hdr[5];
        size_t n = 0;
        hdr[n++] = ebb_strfmt("Content-Type: %s", content_type);
        hdr[n++] = ebb_strfmt("Host: %s", authority);
        hdr[n++] = ebb_strfmt("X-Amz-Date: %s", amz_date);
        hdr[n++] = ebb_strfmt("Authorization: %s", sig.authorization);
        if (a->creds.session_token != NULL)
            hdr[n++] = ebb_strfmt("X-Amz-Security-Token: %s",
                                   a->creds.session_token);
        for (size_t i = 0; i < n; i++)
            if (hdr[i] == NULL)
                rc = EBB_ENOMEM;
        struct ebb_http_request hreq = {
            .struct_size = sizeof(struct ebb_http_request),
            .method = "POST",
            .url = url,
            .headers = (const char *const *)hdr,
            .n_headers = n,
            .body = body.data,
            .body_len = body.len,
            .timeout = a->cfg->request_timeout,
            .max_attempts = (int)a->cfg->max_attempts,
            .classify = classify,
        };
        c->cb = cb;
        c->arg = arg;
        if (rc == 0)
            c->call = ebb_call_start(&a->calls, a->host, &hreq, on_http, c, &rc);
        if (c->call != NULL)
            ebb_op_add(&a->ops, &c->op, call_cancel);
        else
            free(c);
        for (size_t i = 0; i < n; i++)
            free(hdr[i]);
        ebb_sigv4_result_free(&sig);
    }
    ebb_buf_free(&body);
    free(url);
    return rc;
}
