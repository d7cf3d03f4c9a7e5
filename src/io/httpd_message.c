/* What httpd.h gives handlers: the request's headers and the helpers that
 * fill in a response (the server renders and sends it, httpd_conn.c). */
#include "io/httpd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *ebb__httpd_header(const struct ebb__httpd_request *req,
                                   const char *name)
{
    for (size_t i = 0; i < req->n_headers; i++) {
        if (strcasecmp(req->header_names[i], name) == 0)
            return req->header_values[i];
    }
    return NULL;
}

void ebb__httpd_set_body(struct ebb__httpd_response *res,
                              const void *body, size_t len)
{
    char *copy = malloc(len + 1);
    if (copy == NULL) {
        res->oom_ = true;
        return;
    }
    if (len > 0)
        memcpy(copy, body, len);
    copy[len] = '\0';
    free(res->body_);
    res->body_ = copy;
    res->body_len_ = len;
}

void ebb__httpd_set_bodyf(struct ebb__httpd_response *res,
                               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text == NULL) {
        res->oom_ = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    free(res->body_);
    res->body_ = text;
    res->body_len_ = (size_t)n;
}

void ebb__httpd_add_header(struct ebb__httpd_response *res,
                                const char *name, const char *value)
{
    size_t add = strlen(name) + 2 + strlen(value) + 2;
    char *h = realloc(res->headers_, res->headers_len_ + add + 1);
    if (h == NULL) {
        res->oom_ = true;
        return;
    }
    snprintf(h + res->headers_len_, add + 1, "%s: %s\r\n", name, value);
    res->headers_ = h;
    res->headers_len_ += add;
}

void ebb__httpd_set_json(struct ebb__httpd_response *res, int status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    res->status = text ? status : 500;
    ebb__httpd_add_header(res, "Content-Type", "application/json");
    if (text)
        ebb__httpd_set_body(res, text, strlen(text));
    else
        ebb__httpd_set_bodyf(res, "{\"error\":\"out of memory\"}");
    free(text);
}
