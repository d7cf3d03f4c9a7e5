
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <ebb/diag.h>

void ebb_diag_set(struct ebb_diag *d, const char *file, int line,
                   const char *fmt, ...)
{
    if (d == NULL)
        return;
    int n = 0;
    if (file != NULL && line > 0)
        n = snprintf(d->msg, sizeof(d->msg), "%s:%d: ", file, line);
    else if (file != NULL)
        n = snprintf(d->msg, sizeof(d->msg), "%s: ", file);
    if (n < 0 || (size_t)n >= sizeof(d->msg))
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg + n, sizeof(d->msg) - (size_t)n, fmt, ap);
    va_end(ap);
}

void ebb_diag_clear(struct ebb_diag *d)
{
    if (d != NULL)
        d->msg[0] = '\0';
}

/* Appends `c` (or its escape) when it fits, leaving room for the closing
 * quote, the ellipsis and the terminator. */
static size_t put(char *buf, size_t size, size_t at, const char *text)
{
    size_t len = strlen(text);
    if (at + len + 5 > size)
        return at;
    memcpy(buf + at, text, len);
    return at + len;
}

const char *ebb_diag_quote(const char *s, size_t len, char *buf, size_t size)
{
    enum { MAX_SHOWN = 60 };
    if (size < 8) {
        if (size > 0)
            buf[0] = '\0';
        return buf;
    }
    size_t at = 0;
    buf[at++] = '"';
    size_t shown = len < MAX_SHOWN ? len : MAX_SHOWN;
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        char one[8];
        if (c == '"' || c == '\\') {
            one[0] = '\\';
            one[1] = (char)c;
            one[2] = '\0';
        } else if (c == '\n') {
            memcpy(one, "\\n", 3);
        } else if (c == '\t') {
            memcpy(one, "\\t", 3);
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(one, sizeof(one), "\\x%02x", c);
        } else {
            one[0] = (char)c;
            one[1] = '\0';
        }
        size_t before = at;
        at = put(buf, size, at, one);
        if (at == before) {
            shown = 0; /* out of room: mark as cut below */
            break;
        }
    }
    buf[at++] = '"';
    if (shown < len) {
        memcpy(buf + at, "...", 3);
        at += 3;
    }
    buf[at] = '\0';
    return buf;
}
