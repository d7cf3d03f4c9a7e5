/* JSON calls to ebbd for the checkpoint store (see store.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/store.h"
#include "base/str.h"

#define API_TIMEOUT_MS 30000
#define API_ATTEMPTS 4

struct api_call {
    struct agent *a;
    agent_api_cb cb;
    void *arg;
};

static void on_api_done(const struct ebb_http_response *res, void *arg)
{
    struct api_call *c = arg;
    json_t *body = res->error == 0 && res->body_len > 0
                       ? json_loadb(res->body, res->body_len, 0, NULL) : NULL;
    c->cb(c->a, c->arg, res, json_is_object(body) ? body : NULL);
    json_decref(body);
    free(c);
}

int agent_api(struct agent *a, const char *method, const char *path, json_t *body,
              agent_api_cb cb, void *arg)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    char *url = ebb_strfmt("%s/v1/agent/%s", a->rep.base_url, path);
    struct api_call *c = calloc(1, sizeof(*c));
    if (url == NULL || c == NULL || (body != NULL && text == NULL)) {
        free(text);
        free(url);
        free(c);
        return EBB_ENOMEM;
    }
    *c = (struct api_call){a, cb, arg};
    const char *headers[] = {a->rep.auth_header, "Content-Type: application/json"};
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = method, .url = url, .headers = headers, .n_headers = text ? 2 : 1,
        .body = text, .body_len = text ? strlen(text) : 0,
        .timeout = API_TIMEOUT_MS, .max_attempts = API_ATTEMPTS,
    };
    int rc = ebb__http_request(a->http, &req, on_api_done, c);
    free(text);
    free(url);
    if (rc != 0)
        free(c);
    return rc;
}

const char *agent_api_why(const struct ebb_http_response *res, json_t *body, char *buf,
                          size_t size)
{
    const char *err = json_string_value(json_object_get(body, "error"));
    if (res->error == 0 && err != NULL)
        snprintf(buf, size, "HTTP %d: %.200s", res->status, err);
    else
        agent_describe_failure(res, buf, size);
    return buf;
}
