/* Store URLs and the keys and prefixes operations take: parsing and
 * checking, no I/O. */
#include "objstore/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- URLs ---- */

static int valid_bucket(const char *b, size_t n)
{
    if (n < 3 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '.'))
            return 0;
    }
    return isalnum((unsigned char)b[0]) && isalnum((unsigned char)b[n - 1]);
}

/* No empty, "." or ".." segment and no control character: a key or
 * prefix names one object, never a directory walk on file://. */
static int valid_segments(const char *s, size_t n)
{
    if (n == 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    for (size_t i = 0; i <= n;) {
        size_t len = 0;
        while (i + len < n && s[i + len] != '/')
            len++;
        if (len == 0 || (len == 1 && s[i] == '.') ||
            (len == 2 && s[i] == '.' && s[i + 1] == '.'))
            return 0;
        i += len + 1;
    }
    return 1;
}

int ebb__os_check_key(const char *key)
{
    size_t n = key != NULL ? strlen(key) : 0;
    return n > 0 && n <= 1024 && valid_segments(key, n) ? 0 : EBB_EINVAL;
}

int ebb__os_check_prefix(const char *prefix)
{
    size_t n = prefix != NULL ? strlen(prefix) : 0;
    if (n > 0 && prefix[n - 1] == '/')
        n--;
    if (prefix == NULL || (n == 0 && prefix[0] != '\0'))
        return EBB_EINVAL;
    return n <= 1024 && valid_segments(prefix, n) ? 0 : EBB_EINVAL;
}

void ebb__objstore_url_free(struct ebb__objstore_url *u)
{
    free(u->bucket);
    free(u->prefix);
    free(u->dir);
    memset(u, 0, sizeof(*u));
}

int ebb__objstore_url_parse(const char *url, struct ebb__objstore_url *out,
                            char *err, size_t err_size)
{
    memset(out, 0, sizeof(*out));
    const char *rest = NULL;
    if (url != NULL && strncmp(url, "s3://", 5) == 0) {
        out->kind = EBB__OBJSTORE_S3;
        rest = url + 5;
    } else if (url != NULL && strncmp(url, "oss://", 6) == 0) {
        out->kind = EBB__OBJSTORE_OSS;
        rest = url + 6;
    } else if (url != NULL && strncmp(url, "file://", 7) == 0) {
        const char *dir = url + 7;
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
            n--;
        if (dir[0] != '/' || n == 0 || !valid_segments(dir + 1, n - 1)) {
            snprintf(err, err_size, "\"%s\" is not a store URL: file:// takes "
                     "an absolute directory (file:///DIR)", url);
            return EBB_EINVAL;
        }
        out->kind = EBB__OBJSTORE_FILE;
        out->dir = strndup(dir, n);
        return out->dir != NULL ? 0 : EBB_ENOMEM;
    } else {
        snprintf(err, err_size, "\"%s\" is not a store URL (write "
                 "s3://BUCKET[/PREFIX], oss://BUCKET[/PREFIX] or file:///DIR)",
                 url != NULL ? url : "");
        return EBB_EINVAL;
    }
    size_t blen = strcspn(rest, "/");
    const char *prefix = rest[blen] == '/' ? rest + blen + 1 : "";
    size_t plen = strlen(prefix);
    while (plen > 0 && prefix[plen - 1] == '/')
        plen--;
    if (!valid_bucket(rest, blen)) {
        snprintf(err, err_size, "\"%s\": the bucket must be 3 to 63 lower-case "
                 "letters, digits, '-' or '.', starting and ending with a letter "
                 "or digit", url);
        return EBB_EINVAL;
    }
    if (!valid_segments(prefix, plen)) {
        snprintf(err, err_size, "\"%s\": the prefix after the bucket must not "
                 "hold empty, '.' or '..' parts or control characters", url);
        return EBB_EINVAL;
    }
    out->bucket = strndup(rest, blen);
    out->prefix = strndup(prefix, plen);
    if (out->bucket == NULL || out->prefix == NULL) {
        ebb__objstore_url_free(out);
        return EBB_ENOMEM;
    }
    return 0;
}
