#include "base/shquote.h"

#include <string.h>

void ebb__buf_sh_quote(struct ebb__buf *b, const char *s)
{
    ebb__buf_puts(b, "'");
    for (const char *q; (q = strchr(s, '\'')) != NULL; s = q + 1) {
        ebb__buf_append(b, s, (size_t)(q - s));
        ebb__buf_puts(b, "'\\''");
    }
    ebb__buf_puts(b, s);
    ebb__buf_puts(b, "'");
}
