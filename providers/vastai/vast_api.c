/* One call to the vast.ai REST API: JSON in and out, the API key as a
 * Bearer header (never in the URL, so never in a logged URL), and HTTP
 * statuses mapped to ebb's codes. 429 is retried by the host's client,
 * which honours Retry-After.
 */
#include <stdlib.h>
#include <string.h>

#include <ebb/buf.h>

#include "vastai.h"

struct vast_call {
    struct vast *v;
    struct ebb_call *call;
    char *what; /* "PUT /api/v0/asks/1/" for messages */
    vast_api_cb cb;
    void *arg;
};

static int status_of(int http)
{
    if (http == 401 || http == 403)
        return EBB_EAUTH;
    if (http == 404 || http == 410)
        return EBB_ENOTFOUND;
    if (http == 429)
        return EBB_ETHROTTLED;
    if (http >= 400 && http < 500)
        return EBB_EINVAL;
    return EBB_EHTTP;
}

/* The server's own words, without the API key should it echo it. */
static char *message_of(const struct vast *v, json_t *body, const char *raw)
{
    const char *m = json_string_value(json_object_get(body, "msg"));
    if (m == NULL)
        m = json_string_value(json_object_get(body, "error"));
    if (m == NULL)
        m = json_string_value(json_object_get(body, "detail"));
    char *s = strdup(m ? m : raw);
    if (s == NULL)
        return NULL;
    size_t n = strlen(v->api_key);
    for (char *at = n ? strstr(s, v->api_key) : NULL; at != NULL;
         at = strstr(at, v->api_key))
        memset(at, '*', n);
    if (strlen(s) > 200)
        s[200] = '\0';
    return s;
}

static void on_answer(void *arg, const struct ebb_http_response *res)
{
    struct vast_call *c = arg;
    struct vast *v = c->v;
    json_t *body = res->error == 0 ? json_loadb(res->body, res->body_len, 0, NULL)
                                   : NULL;
    int status = res->error;
    if (status == 0 && res->status / 100 != 2)
        status = status_of(res->status);
    else if (status == 0 && !json_is_object(body))
        status = EBB_EPROTO;
    else if (status == 0 && json_is_false(json_object_get(body, "success")))
        status = EBB_EHTTP;
    if (status != 0 && status != EBB_ENOTFOUND && status != EBB_EAUTH &&
        status != EBB_ECANCELED) {
        char *msg = message_of(v, body, res->error ? res->error_message : "");
        v->host->log(v->host->ctx, EBB_LOG_WARN, "%s: %s (HTTP %d): %s", c->what,
                     ebb_strerror(status), res->status, msg ? msg : "");
        free(msg);
    }
    c->cb(c->arg, status, body);
    json_decref(body);
    free(c->what);
    free(c);
}

struct vast_call *vast_api(struct vast *v, const char *method, const char *path,
                           json_t *body, int max_attempts, vast_api_cb cb,
                           void *arg)
{
    struct vast_call *c = calloc(1, sizeof(*c));
    char *url = ebb_strfmt("%s%s", v->cfg->api_url, path);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (c == NULL || url == NULL || (body != NULL && text == NULL)) {
        free(c);
        free(url);
        free(text);
        return NULL;
    }
    *c = (struct vast_call){.v = v, .cb = cb, .arg = arg,
                            .what = ebb_strfmt("%s %s", method, path)};
    const char *headers[] = {
        v->auth_header,
        "Accept: application/json",
        "Content-Type: application/json",
    };
    struct ebb_http_request req = {
        .method = method,
        .url = url,
        .headers = headers,
        .n_headers = text ? 3 : 2,
        .body = text,
        .body_len = text ? strlen(text) : 0,
        .max_attempts = max_attempts,
    };
    if (c->what != NULL)
        c->call = ebb_call_start(&v->calls, v->host, &req, on_answer, c, NULL);
    free(url);
    free(text);
    if (c->call == NULL) {
        free(c->what);
        free(c);
        return NULL;
    }
    return c;
}

void vast_api_cancel(struct vast_call *c)
{
    ebb_call_detach(c->call);
    free(c->what);
    free(c);
}
