
#include <string.h>

#include <ebb/shquote.h>

void ebb_buf_sh_quote(struct ebb_buf *b, const char *s)
{
    ebb_buf_puts(b, "'");
    for (const char *q; (q = strchr(s, '\'')) != NULL; s = q + 1) {
        ebb_buf_append(b, s, (size_t)(q - s));
        ebb_buf_puts(b, "'\\''");
    }
    ebb_buf_puts(b, s);
    ebb_buf_puts(b, "'");
}
