/* Memory streams for the checkpoint format's tests (ckpt_mem.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/common.h>

#include "ckpt_mem.h"

ssize_t ckpt_mem_read(void *arg, void *buf, size_t len)
{
    struct ckpt_mem_src *s = arg;
    size_t n = s->len - s->off;
    if (n > len)
        n = len;
    if (s->step > 0 && n > s->step)
        n = s->step;
    memcpy(buf, s->p + s->off, n);
    s->off += n;
    return (ssize_t)n;
}

int ckpt_mem_write(void *arg, const void *buf, size_t len)
{
    struct ckpt_mem_sink *s = arg;
    if (s->fail_after > 0 && s->len + len > s->fail_after)
        return EBB_EIO;
    if (s->len + len > s->cap) {
        size_t cap = s->cap > 0 ? s->cap : 4096;
        while (cap < s->len + len)
            cap *= 2;
        unsigned char *p = realloc(s->p, cap);
        if (p == NULL)
            return EBB_ENOMEM;
        s->p = p;
        s->cap = cap;
    }
    if (len > 0)
        memcpy(s->p + s->len, buf, len);
    s->len += len;
    return 0;
}

unsigned char *ckpt_mem_pattern(size_t n, unsigned seed)
{
    unsigned char *p = malloc(n > 0 ? n : 1);
    uint64_t x = 0x9e3779b97f4a7c15u ^ seed;
    for (size_t i = 0; p != NULL && i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
    return p;
}
