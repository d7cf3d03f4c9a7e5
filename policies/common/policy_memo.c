/* What a policy keeps from one market view to the next job planned on it
 * (see struct pu_memo in policy_util.h): the offers in the order of the
 * least they can cost per unit of work, so that the searches for the
 * cheapest offer stop at the first one that cannot win instead of looking
 * at every offer for every job. */
#include "policy_util.h"

#include <math.h>
#include <stdlib.h>

struct keyed {
    double key;
    size_t k;
};

static int by_key(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* The least offer k can cost per reference hour of work, started now or
 * later: the lower of its price now and its forecast's lowest p50 over its
 * speed (pu_cannot_beat's bound without the job's restart and rework).
 * -INFINITY when nothing bounds it (no forecast low, or an unusable
 * offer): such offers are visited first and never skipped. */
static double least_per_work(const struct ebb_offer *o)
{
    if (o->forecast_p50_low <= 0 || !pu_usable(o))
        return -INFINITY;
    ebb_micros low = o->price_per_hour < o->forecast_p50_low
                         ? o->price_per_hour
                         : o->forecast_p50_low;
    return (double)low / o->speed;
}

static int memo_build(const struct pu_ctx *c, struct pu_memo *m)
{
    if (c->n > m->cap) {
        struct keyed *buf = realloc(m->buf, c->n * sizeof(*buf));
        size_t *order = realloc(m->order, c->n * sizeof(*order));
        double *least = realloc(m->least, c->n * sizeof(*least));
        char(*text)[PU_OFFER_TEXT] = realloc(m->text, c->n * sizeof(*text));
        unsigned char *has = realloc(m->has_text, c->n);
        size_t *od = realloc(m->od, c->n * sizeof(*od));
        if (buf != NULL)
            m->buf = buf;
        if (order != NULL)
            m->order = order;
        if (least != NULL)
            m->least = least;
        if (text != NULL)
            m->text = text;
        if (has != NULL)
            m->has_text = has;
        if (od != NULL)
            m->od = od;
        if (buf == NULL || order == NULL || least == NULL || text == NULL ||
            has == NULL || od == NULL)
            return EBB_ENOMEM;
        m->cap = c->n;
    }
    m->n_od = 0;
    for (size_t k = 0; k < c->n; k++) {
        m->buf[k] = (struct keyed){least_per_work(pu_offer_fc(c, k)), k};
        m->least[k] = m->buf[k].key;
        m->has_text[k] = 0;
        if (pu_offer(c, k)->market == EBB_MARKET_ON_DEMAND)
            m->od[m->n_od++] = k;
    }
    qsort(m->buf, c->n, sizeof(*m->buf), by_key);
    for (size_t i = 0; i < c->n; i++)
        m->order[i] = m->buf[i].k;
    m->generation = c->generation;
    m->offers = c->offers;
    m->n = c->n;
    m->stride = c->stride;
    return 0;
}

/* A view is sorted only when a second job is planned on it: ebbd builds
 * a new view whenever the next job may use other offers, and a sort for
 * a view that serves one job would cost more than it saves. */
void pu_memo_attach(struct pu_ctx *c, struct pu_memo *m)
{
    c->memo = NULL;
    if (m == NULL || c->generation == 0 || c->n == 0)
        return;
    int same = m->generation == c->generation && m->offers == c->offers &&
               m->n == c->n && m->stride == c->stride;
    if (same) {
        c->memo = m;
        return;
    }
    if (m->seen != c->generation) {
        m->seen = c->generation;
        m->generation = 0;
        return;
    }
    if (memo_build(c, m) != 0) {
        m->generation = 0;
        return;
    }
    c->memo = m;
}

void pu_memo_free(struct pu_memo *m)
{
    free(m->buf);
    free(m->order);
    free(m->least);
    free(m->text);
    free(m->has_text);
    free(m->od);
    *m = (struct pu_memo){0};
}

size_t pu_nth(const struct pu_ctx *c, size_t i)
{
    return c->memo != NULL ? c->memo->order[i] : i;
}

int pu_past_bound(const struct pu_ctx *c, size_t k, double bound)
{
    if (c->memo == NULL || !isfinite(bound))
        return 0;
    /* The least the offer's expected cost can be: pu_cannot_beat's bound
     * with the restart and the rework left out, less a margin for the
     * rounding that computing it another way brings. */
    double least = c->memo->least[k] * c->remaining /
                   (double)EBB_MS_PER_HOUR * (1.0 - 1e-12);
    return least > bound * (1.0 + 1e-9) + 1e-6;
}
