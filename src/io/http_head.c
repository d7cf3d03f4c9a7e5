/* The request-head parser; see http_head.h.
 *
 * The head is copied once and cut into NUL-terminated pieces in the copy.
 * That is safe because the copy is checked first: it holds no NUL (which
 * would end a piece before the CRLF the cutting relies on) and ends with
 * the CRLFCRLF that memmem found, so every line in it ends with a CRLF.
 * The path, the target without its query, is a second copy after the head
 * in the same allocation.
 */
#include "io/http_head.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ebb/common.h>

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* Whether every CR and LF in the `len` bytes at `p` is part of a CRLF: a
 * bare one would stay inside a value (RFC 9112 2.2: reject a bare CR). */
static bool crlf_only(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '\r' && (i + 1 == len || p[i + 1] != '\n'))
            return false;
        if (p[i] == '\n' && (i == 0 || p[i - 1] != '\r'))
            return false;
    }
    return true;
}

/* A Content-Length: 1 to 19 digits, at most EBB__HTTP_BODY_MAX. */
static bool parse_length(const char *text, size_t *out)
{
    size_t n = strlen(text);
    if (n == 0 || n > 19 || strspn(text, "0123456789") != n)
        return false;
    unsigned long long v = strtoull(text, NULL, 10);
    if (v > EBB__HTTP_BODY_MAX)
        return false;
    *out = (size_t)v;
    return true;
}

/* Cuts "METHOD SP TARGET SP VERSION" in `line` (NUL-terminated); none of
 * the three may be empty ("GET  HTTP/1.1" has no target). */
static bool parse_request_line(char *line, struct ebb__http_head *h)
{
    char *sp1 = strchr(line, ' ');
    char *sp2 = sp1 != NULL ? strchr(sp1 + 1, ' ') : NULL;
    if (sp1 == NULL || sp2 == NULL || sp1 == line || sp2 == sp1 + 1 ||
        sp2[1] == '\0')
        return false;
    *sp1 = '\0';
    *sp2 = '\0';
    h->method = line;
    h->target = sp1 + 1;
    h->version = sp2 + 1;
    return true;
}

/* Cuts the header lines from `line` up to the empty line that ends the
 * head; false on a line without a colon or too many lines. */
static bool parse_headers(char *line, struct ebb__http_head *h)
{
    while (strncmp(line, "\r\n", 2) != 0) {
        char *eol = strstr(line, "\r\n");
        *eol = '\0';
        char *colon = strchr(line, ':');
        if (colon == NULL || h->n_headers == EBB__HTTP_HEADERS_MAX)
            return false;
        *colon = '\0';
        char *v = colon + 1;
        while (is_blank(*v))
            v++;
        char *ve = v + strlen(v);
        while (ve > v && is_blank(ve[-1]))
            *--ve = '\0';
        h->names[h->n_headers] = line;
        h->values[h->n_headers] = v;
        h->n_headers++;
        line = eol + 2;
    }
    return true;
}

/* Fills in what follows from the headers; 0 or an HTTP status. */
static int interpret(struct ebb__http_head *h, char *path)
{
    const char *cl = ebb__http_head_header(h, "Content-Length");
    if (cl != NULL && !parse_length(cl, &h->body_len))
        return 400;
    if (ebb__http_head_header(h, "Transfer-Encoding") != NULL)
        return 501;

    size_t target_len = strlen(h->target); /* path has room: see below */
    memcpy(path, h->target, target_len + 1);
    char *q = strchr(path, '?');
    h->query = "";
    if (q != NULL) {
        *q = '\0';
        h->query = h->target + (q - path) + 1;
    }
    h->path = path;

    const char *conn = ebb__http_head_header(h, "Connection");
    h->keep_alive = strcmp(h->version, "HTTP/1.1") == 0
                        ? !(conn != NULL && strcasecmp(conn, "close") == 0)
                        : (conn != NULL && strcasecmp(conn, "keep-alive") == 0);
    h->head_only = strcmp(h->method, "HEAD") == 0;
    return 0;
}

int ebb__http_parse_head(const char *buf, size_t len, struct ebb__http_head *out)
{
    memset(out, 0, sizeof(*out));
    /* Only the first EBB__HTTP_HEAD_MAX bytes can hold a head we accept,
     * so no more are searched, however much is buffered. */
    size_t scan = len < EBB__HTTP_HEAD_MAX ? len : EBB__HTTP_HEAD_MAX;
    const char *end = memmem(buf, scan, "\r\n\r\n", 4);
    if (end == NULL)
        return len >= EBB__HTTP_HEAD_MAX ? 431 : EBB__HTTP_HEAD_MORE;
    size_t head_len = (size_t)(end - buf) + 4;
    if (memchr(buf, '\0', head_len) != NULL || !crlf_only(buf, head_len))
        return 400;

    /* The request line ends at the first CRLF, at the latest the one that
     * starts the CRLFCRLF; the target, the longest piece of it, fits in
     * line_len + 1 bytes. */
    size_t line_len = (size_t)((const char *)memmem(buf, head_len, "\r\n", 2) - buf);
    char *text = malloc(head_len + 1 + line_len + 1);
    if (text == NULL)
        return EBB_ENOMEM;
    memcpy(text, buf, head_len);
    text[head_len] = '\0';
    text[line_len] = '\0';

    int rc = 400;
    if (parse_request_line(text, out) && parse_headers(text + line_len + 2, out))
        rc = interpret(out, text + head_len + 1);
    if (rc != 0) {
        free(text);
        memset(out, 0, sizeof(*out));
        return rc;
    }
    out->head_len = head_len;
    out->text_ = text;
    return EBB__HTTP_HEAD_DONE;
}

void ebb__http_head_free(struct ebb__http_head *h)
{
    free(h->text_);
    h->text_ = NULL;
}

const char *ebb__http_head_header(const struct ebb__http_head *h, const char *name)
{
    for (size_t i = 0; i < h->n_headers; i++) {
        if (strcasecmp(h->names[i], name) == 0)
            return h->values[i];
    }
    return NULL;
}
