/* One call to the vast.ai REST API: JSON in and out, the API key as a
 * Bearer header (never in the URL, so never in a logged URL), and HTTP
 * statuses mapped to ebb's codes. 429 is retried by the host's client,
 * which honours Retry-After.
 *
 * A refused key is not always 401/403: the offer search answers 404 with
 * "Invalid user key" (search_offers.yaml), which is an authentication
 * failure, not a missing resource, or ebb would poll a dead key forever.
 *
 * The instance list is the paginated GET /api/v1/instances/ (at most 25
 * a page, each answer's next_token the next page's after_token); one
 * vast_list_instances() call reads every page and answers once with all
 * of them, as {"instances": [...]}.
 */
#include <stdlib.h>
#include <string.h>

#include <ebb/buf.h>
#include <ebb/urlenc.h>

#include "vastai.h"

#define LIST_PATH "/api/v1/instances/?limit=25"

struct vast_call {
    struct vast *v;
    struct ebb_call *call;
    char *what; /* "PUT /api/v0/asks/1/" for messages */
    vast_api_cb cb;
    void *arg;
    json_t *pages; /* a list's instances so far; NULL for other calls */
};

static int send_call(struct vast_call *c, const char *method, const char *path,
                     json_t *body, int max_attempts);

static int status_of(int http, json_t *body)
{
    const char *msg = json_string_value(json_object_get(body, "msg"));
    if (http == 401 || http == 403 ||
        (http == 404 && msg != NULL && strstr(msg, "Invalid user key") != NULL))
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

/* Adds a list page's instances; asks for the next page when there is
 * one. Returns 0 when it did, 1 when this was the last page, or an
 * error. */
static int next_page(struct vast_call *c, json_t *body)
{
    json_t *list = json_object_get(body, "instances");
    if (!json_is_array(list))
        return EBB_EPROTO;
    if (json_array_extend(c->pages, list) != 0)
        return EBB_ENOMEM;
    const char *token = json_string_value(json_object_get(body, "next_token"));
    if (token == NULL || token[0] == '\0')
        return 1;
    struct ebb_buf path = {0};
    ebb_buf_puts(&path, LIST_PATH "&after_token=");
    ebb_pct_encode(&path, token, strlen(token), 0);
    int rc = path.failed ? EBB_ENOMEM : send_call(c, "GET", path.data, NULL, 0);
    ebb_buf_free(&path);
    return rc;
}

static void on_answer(void *arg, const struct ebb_http_response *res)
{
    struct vast_call *c = arg;
    struct vast *v = c->v;
    json_t *body = res->error == 0 ? json_loadb(res->body, res->body_len, 0, NULL)
                                   : NULL;
    int status = res->error;
    if (status == 0 && res->status / 100 != 2)
        status = status_of(res->status, body);
    else if (status == 0 && !json_is_object(body))
        status = EBB_EPROTO;
    else if (status == 0 && json_is_false(json_object_get(body, "success")))
        status = EBB_EHTTP;
    if (status == EBB_EAUTH)
        v->host->log(v->host->ctx, EBB_LOG_ERROR,
                     "vast.ai refused the API key (HTTP %d) on %s: set a valid "
                     "VAST_API_KEY and restart ebbd", res->status, c->what);
    else if (status != 0 && status != EBB_ENOTFOUND && status != EBB_ECANCELED) {
        char *msg = message_of(v, body, res->error ? res->error_message : "");
        v->host->log(v->host->ctx, EBB_LOG_WARN, "%s: %s (HTTP %d): %s", c->what,
                     ebb_strerror(status), res->status, msg ? msg : "");
        free(msg);
    }
    if (c->pages != NULL && status == 0) {
        status = next_page(c, body);
        if (status == 0) {
            json_decref(body);
            return;
        }
        if (status == 1) {
            json_decref(body);
            body = json_pack("{s:O}", "instances", c->pages);
            status = body != NULL ? 0 : EBB_ENOMEM;
        }
    }
    c->cb(c->arg, status, body);
    json_decref(body);
    json_decref(c->pages);
    free(c->what);
    free(c);
}

/* Sends one request for `c` (again for each page of a list). */
static int send_call(struct vast_call *c, const char *method, const char *path,
                     json_t *body, int max_attempts)
{
    struct vast *v = c->v;
    char *url = ebb_strfmt("%s%s", v->cfg->api_url, path);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (url == NULL || (body != NULL && text == NULL)) {
        free(url);
        free(text);
        return EBB_ENOMEM;
    }
    const char *headers[] = {
        v->auth_header,
        "Accept: application/json",
        "Content-Type: application/json",
    };
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = method,
        .url = url,
        .headers = headers,
        .n_headers = text ? 3 : 2,
        .body = text,
        .body_len = text ? strlen(text) : 0,
        .max_attempts = max_attempts,
    };
    int err = EBB_ENOMEM;
    c->call = ebb_call_start(&v->calls, v->host, &req, on_answer, c, &err);
    free(url);
    free(text);
    return c->call != NULL ? 0 : err;
}

static struct vast_call *start(struct vast *v, const char *method, const char *path,
                               json_t *body, int max_attempts, json_t *pages,
                               vast_api_cb cb, void *arg)
{
    struct vast_call *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        json_decref(pages);
        return NULL;
    }
    *c = (struct vast_call){.v = v, .cb = cb, .arg = arg, .pages = pages,
                            .what = ebb_strfmt("%s %s", method, path)};
    if (c->what == NULL || send_call(c, method, path, body, max_attempts) != 0) {
        json_decref(c->pages);
        free(c->what);
        free(c);
        return NULL;
    }
    return c;
}

struct vast_call *vast_api(struct vast *v, const char *method, const char *path,
                           json_t *body, int max_attempts, vast_api_cb cb,
                           void *arg)
{
    return start(v, method, path, body, max_attempts, NULL, cb, arg);
}

struct vast_call *vast_list_instances(struct vast *v, vast_api_cb cb, void *arg)
{
    json_t *pages = json_array();
    return pages != NULL ? start(v, "GET", LIST_PATH, NULL, 0, pages, cb, arg) : NULL;
}

void vast_api_cancel(struct vast_call *c)
{
    ebb_call_detach(c->call);
    json_decref(c->pages);
    free(c->what);
    free(c);
}
