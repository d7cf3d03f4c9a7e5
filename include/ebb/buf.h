/* ebb — growable strings and heap formatting, for the core and plugins
 * alike (implemented in src/base/str.c, which plugins link with base). */
#ifndef EBB_BUF_H
#define EBB_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "common.h"

/* printf into a new heap string; NULL on allocation failure. Caller frees. */
char *ebb_strfmt(const char *fmt, ...) EBB_PRINTF(1, 2);
char *ebb_vstrfmt(const char *fmt, va_list ap) EBB_PRINTF(1, 0);

/* A growable string for building output. */
struct ebb_buf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;
    int failed; /* set when an allocation failed; later appends are no-ops */
};

void ebb_buf_append(struct ebb_buf *b, const char *s, size_t len);
void ebb_buf_puts(struct ebb_buf *b, const char *s);
void ebb_buf_printf(struct ebb_buf *b, const char *fmt, ...) EBB_PRINTF(2, 3);
/* Returns the string (never NULL unless `failed`) and resets the buffer;
 * caller frees. */
char *ebb_buf_take(struct ebb_buf *b);
void ebb_buf_free(struct ebb_buf *b);
/* Empties the buffer for reuse, keeping its memory (and clearing
 * `failed`). */
void ebb_buf_clear(struct ebb_buf *b);

#endif
