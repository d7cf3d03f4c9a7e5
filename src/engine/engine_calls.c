/* Provider calls that follow a commit. A launch must not reach a provider
 * before the row holding its idempotency token is durable (a crash in
 * between is then reconciled by token, never launched twice); a terminate
 * follows the row that says so. Outside a planning pass each call commits
 * the store's pending writes itself. A planning pass holds its calls back
 * and commits once at its end: one fsync for the whole pass instead of one
 * per launch, which with thousands of jobs kept the event loop busy for
 * seconds at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "engine/internal.h"

/* Makes `c` now that what it follows is committed (or not: `committed`). */
static void make(const struct ebb__provider_call *c, int committed)
{
    int rc = committed || !c->needs_commit ? c->issue(c->job, c) : EBB_EIO;
    if (rc != 0)
        c->failed(c->job, c, rc);
}

void ebb__engine_call_after_commit(struct ebb__engine *e,
                                   const struct ebb__provider_call *c)
{
    if (e->batching) {
        if (e->n_calls == e->calls_cap) {
            size_t cap = e->calls_cap ? e->calls_cap * 2 : 64;
            struct ebb__provider_call *grown = realloc(e->calls, cap * sizeof(*grown));
            if (grown == NULL) {
                c->failed(c->job, c, EBB_ENOMEM);
                return;
            }
            e->calls = grown;
            e->calls_cap = cap;
        }
        e->calls[e->n_calls] = *c;
        snprintf(e->calls[e->n_calls].token, sizeof(c->token), "%s",
                 c->job->current->token);
        e->n_calls++;
        return;
    }
    int committed = ebb__store_flush(e->opt.store) == 0;
    if (!committed)
        ebb__error("job %s: cannot commit before calling the provider: %s",
                   c->job->id, ebb__store_errmsg(e->opt.store));
    make(c, committed);
}

void ebb__engine_batch_begin(struct ebb__engine *e)
{
    e->batching = 1;
}

void ebb__engine_batch_end(struct ebb__engine *e)
{
    e->batching = 0;
    if (e->n_calls == 0)
        return;
    int committed = ebb__store_flush(e->opt.store) == 0;
    if (!committed)
        ebb__error("cannot commit a planning pass: %s", ebb__store_errmsg(e->opt.store));
    /* The calls may start another pass's work (a failed launch re-plans),
     * but never synchronously: the list does not move while it is read. */
    size_t n = e->n_calls;
    e->n_calls = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ebb__provider_call *c = &e->calls[i];
        /* Nothing but the pass ran since the call was queued, and a pass
         * decides once per job: the attempt is still the one it was for. */
        if (c->job->current == NULL || strcmp(c->job->current->token, c->token) != 0) {
            ebb__error("job %s: attempt %s changed before its provider call",
                       c->job->id, c->token);
            continue;
        }
        make(c, committed);
    }
}
