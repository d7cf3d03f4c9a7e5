/* Path names worked out as text (see pathname.h). */
#include "base/pathname.h"

#include <stdlib.h>
#include <string.h>

#include <ebb/common.h>

/* Appends the components of `p` to out (holding `*len` bytes, room for
 * all of p more), never taking back anything before `floor`. Returns 0 or
 * EBB_EINVAL for a ".." at the floor. */
static int walk(const char *p, char *out, size_t *len, size_t floor)
{
    while (*p != '\0') {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (*len <= floor)
                return EBB_EINVAL;
            /* The last component goes, with the slash before it; the
             * first after the floor leaves the floor as it was. */
            size_t at = *len;
            while (at > floor && out[at - 1] != '/')
                at--;
            *len = at > floor ? at - 1 : floor;
        } else if (n > 0 && !(n == 1 && p[0] == '.')) {
            if (*len > 0 && out[*len - 1] != '/')
                out[(*len)++] = '/';
            memcpy(out + *len, p, n);
            *len += n;
        }
        p += n;
        while (*p == '/')
            p++;
    }
    return 0;
}

int ebb__path_resolve(const char *base, const char *path, char **out)
{
    *out = NULL;
    if (path == NULL || path[0] == '\0')
        return EBB_EINVAL;
    if (path[0] == '/' || (base != NULL && base[0] != '/'))
        base = NULL;
    size_t cap = (base != NULL ? strlen(base) : 0) + strlen(path) + 3;
    char *buf = malloc(cap);
    if (buf == NULL)
        return EBB_ENOMEM;
    size_t len = 0;
    int rc = 0;
    if (path[0] == '/' || base != NULL)
        buf[len++] = '/';
    if (base != NULL)
        rc = walk(base, buf, &len, 1);
    /* What `path` may take back starts after its base (or root). */
    size_t floor = len;
    if (rc == 0)
        rc = walk(path, buf, &len, floor);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    if (len == 0)
        buf[len++] = '.';
    buf[len] = '\0';
    *out = buf;
    return 0;
}
