/* The HTTP/1.1 request-head parser of the HTTP server (httpd.h), as a
 * pure function.
 *
 * It takes the bytes a connection has buffered and says whether they start
 * with a complete, well-formed request head; it touches no socket and no
 * loop, so a fuzzer can call it on any bytes (tests/fuzz/) and
 * httpd_conn.c answers what it returns.
 */
#ifndef EBB_HTTP_HEAD_H
#define EBB_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>

/* A head is at most this long, its closing CRLFCRLF included (431 beyond). */
#define EBB__HTTP_HEAD_MAX (64 * 1024)
/* At most this many header lines (400 beyond). */
#define EBB__HTTP_HEADERS_MAX 100
/* A Content-Length above this is refused (400). */
#define EBB__HTTP_BODY_MAX ((size_t)16 << 20)

/* What ebb__http_parse_head() returns besides an HTTP error status. */
enum {
    EBB__HTTP_HEAD_DONE = 0, /* a complete head; `out` is filled */
    EBB__HTTP_HEAD_MORE = 1, /* no complete head yet; read more bytes */
};

/* A parsed head. Every string is NUL-terminated and points into `text_`,
 * the parser's private copy, freed by ebb__http_head_free(). */
struct ebb__http_head {
    const char *method;  /* "GET" */
    const char *target;  /* the raw request-target: "/v1/offers?limit=5" */
    const char *path;    /* "/v1/offers" */
    const char *query;   /* "limit=5", or "" */
    const char *version; /* "HTTP/1.1" */
    size_t n_headers;
    const char *names[EBB__HTTP_HEADERS_MAX];  /* as sent */
    const char *values[EBB__HTTP_HEADERS_MAX]; /* blanks trimmed */
    size_t head_len;  /* bytes of the input the head took, CRLFCRLF included */
    size_t body_len;  /* its Content-Length; 0 when it has none */
    bool keep_alive;  /* HTTP/1.1 unless "Connection: close"; 1.0 if asked */
    bool head_only;   /* the method is HEAD: answer without a body */
    char *text_;      /* private */
};

/* Parses the request head at the start of `buf` (`len` bytes, which may
 * hold more than one request; only the first head is read, and the body
 * that follows it is not looked at).
 *
 * Returns EBB__HTTP_HEAD_DONE and fills `*out` (release it with
 * ebb__http_head_free()); EBB__HTTP_HEAD_MORE when the head is not complete
 * yet and may still become so; an HTTP status to answer before closing the
 * connection: 400 (a NUL byte, a CR or LF outside a CRLF, no
 * method/target/version, a header line without a colon, more than
 * EBB__HTTP_HEADERS_MAX headers, a Content-Length that is not digits or
 * above EBB__HTTP_BODY_MAX), 431 (longer than
 * EBB__HTTP_HEAD_MAX), 501 (Transfer-Encoding); or EBB_ENOMEM. On anything
 * but DONE, `*out` holds nothing to free. */
int ebb__http_parse_head(const char *buf, size_t len, struct ebb__http_head *out);

/* Frees what a parse that returned EBB__HTTP_HEAD_DONE allocated; `h` may
 * be released twice. */
void ebb__http_head_free(struct ebb__http_head *h);

/* Case-insensitive header lookup; the value, or NULL when absent. */
const char *ebb__http_head_header(const struct ebb__http_head *h, const char *name);

#endif
