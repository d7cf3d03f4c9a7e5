/* What the renewal policy keeps between decisions: see rn_cache.h. */
#include "rn_cache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RN_TABLES 8
#define RN_FITS 8

struct rn_fit_memo {
    int has;
    unsigned up[EBB_PERIOD_BUCKETS], down[EBB_PERIOD_BUCKETS];
    struct rn_mix up_fit, down_fit;
};

struct rn_cache {
    struct rn_table t[RN_TABLES];
    uint64_t used[RN_TABLES];
    uint64_t tick;
    struct rn_fit_memo fit[RN_FITS];
    size_t next_fit;
};

struct rn_cache *rn_cache_new(void)
{
    return calloc(1, sizeof(struct rn_cache));
}

void rn_cache_free(struct rn_cache *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < RN_TABLES; i++)
        rn_table_free(&c->t[i]);
    free(c);
}

/* 1 when table *t answers for *want: the same chain, prices and step,
 * and a grid at least as large (the values at a grid point do not depend
 * on the grid's extent: it is the job's work and slack left). */
static int covers(const struct rn_table *t, const struct rn_params *want)
{
    if (t->v == NULL || t->p.nw < want->nw || t->p.ns < want->ns)
        return 0;
    struct rn_params a = t->p, b = *want;
    a.nw = b.nw = a.ns = b.ns = 0;
    return memcmp(&a, &b, sizeof(a)) == 0;
}

const struct rn_table *rn_cache_table(struct rn_cache *c,
                                      const struct rn_params *want)
{
    size_t slot = 0;
    c->tick++;
    for (size_t i = 0; i < RN_TABLES; i++) {
        if (covers(&c->t[i], want)) {
            c->used[i] = c->tick;
            return &c->t[i];
        }
        if (c->used[i] < c->used[slot])
            slot = i;
    }
    /* A quarter more room, for the next job a little larger. */
    struct rn_params p = *want;
    p.nw += p.nw / 4;
    p.ns += p.ns / 4;
    rn_table_free(&c->t[slot]);
    if (rn_solve(&p, &c->t[slot]) != 0) {
        c->used[slot] = 0;
        return NULL;
    }
    c->used[slot] = c->tick;
    return &c->t[slot];
}

int rn_offer_fits(struct rn_cache *c, const struct ebb_offer *o,
                  const struct rn_mix *up_prior, const struct rn_mix *down_prior,
                  double weight, struct rn_mix *up, struct rn_mix *down)
{
    if (!EBB_POLICY_HAS(struct ebb_offer, o, availability_since) ||
        o->up_lengths == NULL || o->down_lengths == NULL)
        return 0;
    for (size_t i = 0; i < RN_FITS; i++) {
        const struct rn_fit_memo *f = &c->fit[i];
        if (f->has && memcmp(f->up, o->up_lengths, sizeof(f->up)) == 0 &&
            memcmp(f->down, o->down_lengths, sizeof(f->down)) == 0) {
            *up = f->up_fit;
            *down = f->down_fit;
            return 1;
        }
    }
    rn_fit(o->up_lengths, up_prior, weight, up);
    rn_fit(o->down_lengths, down_prior, weight, down);
    struct rn_fit_memo *f = &c->fit[c->next_fit];
    c->next_fit = (c->next_fit + 1) % RN_FITS;
    memcpy(f->up, o->up_lengths, sizeof(f->up));
    memcpy(f->down, o->down_lengths, sizeof(f->down));
    f->up_fit = *up;
    f->down_fit = *down;
    f->has = 1;
    return 1;
}
