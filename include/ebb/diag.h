/* User-facing error messages that say where the bad input is.
 *
 * Every parser of user input (ebb.yaml, job specs, CSV price traces) reports
 * its first problem into a `struct ebb_diag` as "file:line: message", the
 * shape compilers use, so editors can jump to it. The caller decides whether
 * to print it, log it or send it back over the API.
 */
#ifndef EBB_DIAG_H
#define EBB_DIAG_H

#include <stddef.h>

#include "common.h"

struct ebb_diag {
    char msg[1024];
};

/* Sets d->msg to "file:line: message" (printf-style `fmt`), or to
 * "file: message" when line <= 0, or to just the message when file is NULL.
 * Messages that do not fit are truncated. `d` may be NULL (nothing is
 * written), so callers that do not care about the message can pass NULL. */
void ebb_diag_set(struct ebb_diag *d, const char *file, int line,
                   const char *fmt, ...) EBB_PRINTF(4, 5);

/* Empties d->msg. `d` may be NULL. */
void ebb_diag_clear(struct ebb_diag *d);

/* Writes `s` (len bytes; may contain NULs) into buf as a double-quoted,
 * printable string for a message: quotes, backslashes and control bytes are
 * escaped and values longer than 60 bytes are cut with "...". Bytes >= 0x80
 * pass through, so UTF-8 text stays readable. Returns buf. */
const char *ebb_diag_quote(const char *s, size_t len, char *buf, size_t size);

/* Enough room for any ebb_diag_quote() result. */
#define EBB_DIAG_QUOTE_SIZE 256

#endif
