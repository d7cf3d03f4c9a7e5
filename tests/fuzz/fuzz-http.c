/* Fuzz target: the HTTP/1.1 request-head parser (io/http_head.c), which
 * httpd.c runs on every byte the agent listener and the metrics endpoint
 * receive, before any authentication.
 *
 * Invariants: the answer is DONE, MORE, 400, 431, 501 or ENOMEM; MORE only
 * while no CRLFCRLF is in the first 64 KiB; a head that is DONE ends with
 * CRLFCRLF within the input and 64 KiB, holds no NUL, has a method, a
 * target and a version (http_head.h: 400 otherwise), headers whose names
 * and values hold no CR or LF, a path that is the target up to its '?',
 * and a Content-Length within the cap; the same head alone parses the
 * same, and one byte less of it is MORE. */
#include <ebb/common.h>

#include "fuzz.h"
#include "io/http_head.h"

static void check_done(const char *buf, size_t len,
                       const struct ebb__http_head *h)
{
    FUZZ_CHECK(h->head_len >= 4 && h->head_len <= len &&
               h->head_len <= EBB__HTTP_HEAD_MAX);
    FUZZ_CHECK(memcmp(buf + h->head_len - 4, "\r\n\r\n", 4) == 0);
    FUZZ_CHECK(memchr(buf, '\0', h->head_len) == NULL);
    FUZZ_CHECK(h->method[0] != '\0' && h->target[0] != '\0' &&
               h->version[0] != '\0');
    FUZZ_CHECK(strpbrk(h->method, " \r\n") == NULL);
    FUZZ_CHECK(strpbrk(h->target, " \r\n") == NULL);
    FUZZ_CHECK(h->n_headers <= EBB__HTTP_HEADERS_MAX);
    for (size_t i = 0; i < h->n_headers; i++) {
        FUZZ_CHECK(strpbrk(h->names[i], "\r\n") == NULL);
        FUZZ_CHECK(strpbrk(h->values[i], "\r\n") == NULL);
        FUZZ_CHECK(ebb__http_head_header(h, h->names[i]) != NULL);
    }
    size_t plen = strlen(h->path);
    FUZZ_CHECK(strncmp(h->target, h->path, plen) == 0);
    FUZZ_CHECK(h->target[plen] == '\0' ||
               (h->target[plen] == '?' && strcmp(h->query,
                                                 h->target + plen + 1) == 0));
    FUZZ_CHECK(h->body_len <= EBB__HTTP_BODY_MAX);
}

static int same_head(const struct ebb__http_head *a,
                     const struct ebb__http_head *b)
{
    if (strcmp(a->method, b->method) != 0 ||
        strcmp(a->target, b->target) != 0 ||
        strcmp(a->version, b->version) != 0 || a->n_headers != b->n_headers ||
        a->head_len != b->head_len || a->body_len != b->body_len ||
        a->keep_alive != b->keep_alive || a->head_only != b->head_only)
        return 0;
    for (size_t i = 0; i < a->n_headers; i++)
        if (strcmp(a->names[i], b->names[i]) != 0 ||
            strcmp(a->values[i], b->values[i]) != 0)
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    struct ebb__http_head h;
    int rc = ebb__http_parse_head(buf, size, &h);
    FUZZ_CHECK(rc == EBB__HTTP_HEAD_DONE || rc == EBB__HTTP_HEAD_MORE ||
               rc == 400 || rc == 431 || rc == 501 || rc == EBB_ENOMEM);
    if (rc == EBB__HTTP_HEAD_MORE) {
        FUZZ_CHECK(size < EBB__HTTP_HEAD_MAX);
        FUZZ_CHECK(memmem(buf, size, "\r\n\r\n", 4) == NULL);
    }
    if (rc != EBB__HTTP_HEAD_DONE)
        return 0;
    check_done(buf, size, &h);
    /* The head alone, in a block of its own size (ASan sees overreads). */
    char *alone = malloc(h.head_len);
    FUZZ_CHECK(alone != NULL);
    memcpy(alone, buf, h.head_len);
    struct ebb__http_head again;
    FUZZ_CHECK(ebb__http_parse_head(alone, h.head_len, &again) ==
               EBB__HTTP_HEAD_DONE);
    FUZZ_CHECK(same_head(&h, &again));
    ebb__http_head_free(&again);
    struct ebb__http_head part;
    FUZZ_CHECK(ebb__http_parse_head(alone, h.head_len - 1, &part) ==
               EBB__HTTP_HEAD_MORE);
    free(alone);
    ebb__http_head_free(&h);
    return 0;
}
