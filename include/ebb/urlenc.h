/* Percent-encoding as RFC 3986 defines it: every byte but the unreserved
 * characters A-Z a-z 0-9 - _ . ~ becomes %XX with upper-case hex. Both
 * cloud signatures (AWS SigV4, Alibaba RPC) and query strings use it, so it
 * lives here once; plugins link it with base. */
#ifndef EBB_URLENC_H
#define EBB_URLENC_H

#include <stddef.h>

#include "buf.h"

/* Appends `len` bytes of `s`, percent-encoded, to `b`. With `keep_slash`
 * a '/' stays as it is (for URI paths). */
void ebb_pct_encode(struct ebb_buf *b, const char *s, size_t len, int keep_slash);

/* Decodes %XX escapes (and, with `plus_is_space`, '+' as a space, as HTML
 * forms send) of `len` bytes of `s` into a new NUL-terminated string.
 * Returns NULL on allocation failure or a malformed escape. */
char *ebb_pct_decode(const char *s, size_t len, int plus_is_space);

#endif
