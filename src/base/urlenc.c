
#include <stdlib.h>

#include <ebb/urlenc.h>

#include "base/str.h"

static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
           c == '~';
}

void ebb_pct_encode(struct ebb_buf *b, const char *s, size_t len, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c) || (keep_slash && c == '/')) {
            ebb_buf_append(b, (const char *)&c, 1);
        } else {
            char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
            ebb_buf_append(b, esc, 3);
        }
    }
}

char *ebb_pct_decode(const char *s, size_t len, int plus_is_space)
{
    char *out = malloc(len + 1);
    if (out == NULL)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%') {
            int hi = i + 2 < len ? ebb__hex_digit(s[i + 1]) : -1;
            int lo = hi >= 0 ? ebb__hex_digit(s[i + 2]) : -1;
            if (lo < 0) {
                free(out);
                return NULL;
            }
            out[n++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            out[n++] = plus_is_space && s[i] == '+' ? ' ' : s[i];
        }
    }
    out[n] = '\0';
    return out;
}
