#include "base/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

char *ebb_vstrfmt(const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s == NULL)
        return NULL;
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *ebb_strfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = ebb_vstrfmt(fmt, ap);
    va_end(ap);
    return s;
}

int ebb__strlcpy(char *dst, const char *src, size_t size)
{
    size_t len = strlen(src);
    size_t n = len < size - 1 ? len : size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return len != n;
}

void ebb__str_wipe(char **s)
{
    if (*s != NULL) {
        OPENSSL_cleanse(*s, strlen(*s));
        free(*s);
        *s = NULL;
    }
}

int ebb__hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void *ebb__grow(void *v, size_t *cap, size_t n, size_t size, size_t first)
{
    if (n < *cap)
        return v;
    size_t want = *cap ? *cap * 2 : first;
    if (want < *cap || (size != 0 && want > SIZE_MAX / size))
        return NULL;
    void *nv = realloc(v, want * size);
    if (nv == NULL)
        return NULL;
    *cap = want;
    return nv;
}

static int buf_reserve(struct ebb_buf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *data = realloc(b->data, cap);
    if (data == NULL) {
        b->failed = 1;
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

void ebb_buf_append(struct ebb_buf *b, const char *s, size_t len)
{
    if (buf_reserve(b, len) != 0)
        return;
    memcpy(b->data + b->len, s, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void ebb_buf_puts(struct ebb_buf *b, const char *s)
{
    ebb_buf_append(b, s, strlen(s));
}

void ebb_buf_printf(struct ebb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buf_reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *ebb_buf_take(struct ebb_buf *b)
{
    if (b->failed) {
        ebb_buf_free(b);
        return NULL;
    }
    if (b->data == NULL)
        ebb_buf_append(b, "", 0);
    char *s = b->data;
    *b = (struct ebb_buf){0};
    return s;
}

void ebb_buf_clear(struct ebb_buf *b)
{
    b->len = 0;
    b->failed = 0;
    if (b->data != NULL)
        b->data[0] = '\0';
}

void ebb_buf_free(struct ebb_buf *b)
{
    free(b->data);
    *b = (struct ebb_buf){0};
}

void ebb__short_id(const char *prefix, const char *name, int64_t at,
                   uint64_t seq, char *out, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a of the name */
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    h ^= (uint64_t)at * 0x9E3779B97F4A7C15ULL;
    h ^= seq * 0xC2B2AE3D27D4EB4FULL;
    h ^= h >> 29;
    snprintf(out, len, "%s-%08llx", prefix, (unsigned long long)(h & 0xffffffffULL));
}
