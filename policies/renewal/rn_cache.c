/* What the renewal policy keeps between decisions: see rn_cache.h. */
#include "rn_cache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Tables kept: at most RN_TABLES, and at most RN_CACHE_POINTS grid
 * points in all (RN_VALUES floats each: 40 bytes a point, so about
 * 335 MB), least recently used out first. Jobs of many shapes need one
 * table per (fit, prices, restart overhead, rung of rn_grid's step
 * ladder); ten overheads and widely varied work and deadlines on one
 * offer take 24 tables, 5.6 million points (bench-plan --varied: about
 * 220 MB). Past the bound a planning pass would solve tables again for
 * every job that needs an evicted one. */
#define RN_TABLES 64
#define RN_CACHE_POINTS ((size_t)8 << 20)
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

/* 1 when table *t is solved for *want's chain, prices and step (its
 * grid's extent aside: the values at a grid point do not depend on it,
 * it is the job's work and slack left). */
static int same_problem(const struct rn_table *t, const struct rn_params *want)
{
    if (t->row == NULL)
        return 0;
    struct rn_params a = t->p, b = *want;
    a.nw = b.nw = a.ns = b.ns = 0;
    return memcmp(&a, &b, sizeof(a)) == 0;
}

static size_t points_kept(const struct rn_cache *c)
{
    size_t n = 0;
    for (size_t i = 0; i < RN_TABLES; i++)
        n += c->t[i].points;
    return n;
}

/* Frees least recently used tables other than `keep` until `more`
 * points fit under RN_CACHE_POINTS. */
static void make_room(struct rn_cache *c, size_t keep, size_t more)
{
    while (points_kept(c) + more > RN_CACHE_POINTS) {
        size_t old = RN_TABLES;
        for (size_t i = 0; i < RN_TABLES; i++)
            if (i != keep && c->t[i].row != NULL &&
                (old == RN_TABLES || c->used[i] < c->used[old]))
                old = i;
        if (old == RN_TABLES)
            return;
        rn_table_free(&c->t[old]);
        c->used[old] = 0;
    }
}

const struct rn_table *rn_cache_table(struct rn_cache *c,
                                      const struct rn_params *want)
{
    size_t slot = 0;
    c->tick++;
    for (size_t i = 0; i < RN_TABLES; i++) {
        struct rn_table *t = &c->t[i];
        if (same_problem(t, want)) {
            c->used[i] = c->tick;
            if (rn_covers(t, want->nw, want->ns))
                return t;
            make_room(c, i, rn_extend_points(t, want->nw, want->ns));
            if (rn_extend(t, want->nw, want->ns) != 0) {
                c->used[i] = 0;
                return NULL;
            }
            return t;
        }
        if (c->used[i] < c->used[slot])
            slot = i;
    }
    rn_table_free(&c->t[slot]);
    make_room(c, slot, (size_t)(want->nw + 1) * (size_t)(want->ns + 1));
    if (rn_solve(want, &c->t[slot]) != 0) {
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
