#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <ebb/gang.h>

size_t ebb_gang_size(const char *ids)
{
    if (ids[0] == '\0')
        return 0;
    size_t n = 1;
    for (const char *p = ids; (p = strchr(p, EBB_GANG_SEP)) != NULL; p++)
        n++;
    return n;
}

int ebb_gang_member(const char *ids, size_t rank, char *out, size_t len)
{
    const char *p = ids;
    for (size_t i = 0; i < rank; i++) {
        p = strchr(p, EBB_GANG_SEP);
        if (p == NULL)
            return -1;
        p++;
    }
    const char *end = strchr(p, EBB_GANG_SEP);
    size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
    if (n == 0 || n >= len)
        return -1;
    memcpy(out, p, n);
    out[n] = '\0';
    return 0;
}

int ebb_gang_tokens_ok(const struct ebb_launch *req)
{
    if (req->count > EBB_GANG_MAX || !EBB_HAS(struct ebb_launch, req, agent_tokens) ||
        req->agent_tokens == NULL)
        return 0;
    for (unsigned i = 0; i < req->count; i++)
        if (req->agent_tokens[i] == NULL || req->agent_tokens[i][0] == '\0')
            return 0;
    return 1;
}

int ebb_gang_join_refuse(const struct ebb_host *host, const struct ebb_launch *req,
                         const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    host->log(host->ctx, EBB_LOG_ERROR, "join of rank %u into gang %s refused: %s",
              req->join_rank, req->join_gang ? req->join_gang : "", why);
    return EBB_EINVAL;
}

void ebb_gang_append(struct ebb_buf *b, const char *id)
{
    if (b->len > 0)
        ebb_buf_append(b, (const char[]){EBB_GANG_SEP}, 1);
    ebb_buf_puts(b, id);
}
