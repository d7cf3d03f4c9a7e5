/* Small string helpers that STYLE.md's banned calls would otherwise tempt. */
#ifndef EBB_STR_H
#define EBB_STR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>

/* A short id for users to type: `prefix` and 8 hex digits of a hash of
 * the name, the time and a sequence number ("j-1a2b3c4d"). Short means two
 * may collide: callers store it under a unique key and draw another
 * (the next `seq`) when it is taken. */
void ebb__short_id(const char *prefix, const char *name, int64_t at,
                   uint64_t seq, char *out, size_t len);

/* printf into a new heap string; NULL on allocation failure. Caller frees. */
char *ebb__strfmt(const char *fmt, ...) EBB_PRINTF(1, 2);
char *ebb__vstrfmt(const char *fmt, va_list ap) EBB_PRINTF(1, 0);

/* Copies at most size-1 bytes and always terminates (size > 0). Returns 1
 * when `src` was truncated, else 0. */
int ebb__strlcpy(char *dst, const char *src, size_t size);

/* A growable string for building output. */
struct ebb__buf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;
    int failed; /* set when an allocation failed; later appends are no-ops */
};

void ebb__buf_append(struct ebb__buf *b, const char *s, size_t len);
void ebb__buf_puts(struct ebb__buf *b, const char *s);
void ebb__buf_printf(struct ebb__buf *b, const char *fmt, ...) EBB_PRINTF(2, 3);
/* Returns the string (never NULL unless `failed`) and resets the buffer;
 * caller frees. */
char *ebb__buf_take(struct ebb__buf *b);
void ebb__buf_free(struct ebb__buf *b);

#endif
