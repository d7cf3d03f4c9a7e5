/* EC2 Query API parameters: a form body of percent-encoded name=value
 * pairs (lists flattened as Name.1, Name.2, ...). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <ebb/urlenc.h>

#include "aws.h"

void aws_param(struct ebb_buf *b, const char *name, const char *value)
{
    ebb_buf_puts(b, "&");
    ebb_pct_encode(b, name, strlen(name), 0);
    ebb_buf_puts(b, "=");
    ebb_pct_encode(b, value, strlen(value), 0);
}

void aws_paramf(struct ebb_buf *b, const char *value, const char *name_fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, name_fmt);
    vsnprintf(name, sizeof(name), name_fmt, ap);
    va_end(ap);
    aws_param(b, name, value);
}
