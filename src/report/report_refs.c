/* The report's references: pricing an interval on a series of price
 * steps, the price series instances ran on, and what each ledger row
 * would have cost on-demand and on spot started at once. */
#include <stdlib.h>
#include <string.h>

#include "base/str.h"
#include "market/billing.h"
#include "report/report.h"
#include "report/report_impl.h"
#include "store/store.h"

ebb_micros ebb__report_round_cents(ebb_micros amount)
{
    ebb_micros cent = EBB_MICROS_PER_UNIT / 100;
    ebb_micros half = amount < 0 ? -cent / 2 : cent / 2;
    return (amount + half) / cent * cent;
}

ebb_micros ebb__report_cost_on(const struct ebb__report_point *p, size_t n,
                               ebb_time_ms start, ebb_time_ms end)
{
    /* The step in effect at start: the last one at or before it. */
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].at <= start)
            lo = mid;
        else
            hi = mid;
    }
    ebb_micros total = 0;
    for (size_t i = lo; i < n && start < end; i++) {
        ebb_time_ms next = i + 1 < n && p[i + 1].at < end ? p[i + 1].at : end;
        if (next > start) {
            total += ebb__cost_of(p[i].value, next - start);
            start = next;
        }
    }
    return total;
}

/* ---- the references of a ledger row ------------------------------------ */

static enum ebb_market market_of(const char *s)
{
    return strcmp(s, "on-demand") == 0 ? EBB_MARKET_ON_DEMAND : EBB_MARKET_SPOT;
}

struct series_cache *ebb__report_series(struct report_build *b,
                                        const struct fact *f)
{
    enum ebb_market m = market_of(f->market);
    for (size_t i = 0; i < b->n_series; i++) {
        struct series_cache *s = &b->series[i];
        if (s->market == m && strcmp(s->provider, f->provider) == 0 &&
            strcmp(s->region, f->region) == 0 &&
            strcmp(s->zone, f->zone) == 0 &&
            strcmp(s->instance_type, f->instance_type) == 0)
            return s;
    }
    if (b->n_series == b->cap_series) {
        size_t cap = b->cap_series ? b->cap_series * 2 : 8;
        void *n = realloc(b->series, cap * sizeof(*b->series));
        if (n == NULL)
            return NULL;
        b->series = n;
        b->cap_series = cap;
    }
    struct series_cache *s = &b->series[b->n_series];
    *s = (struct series_cache){
        .provider = strdup(f->provider), .region = strdup(f->region),
        .zone = strdup(f->zone), .instance_type = strdup(f->instance_type),
        .market = m, .currency = "USD",
    };
    b->n_series++;
    if (s->provider == NULL || s->region == NULL || s->zone == NULL ||
        s->instance_type == NULL)
        return NULL;
    return s;
}

static int push_point(struct series_cache *s, size_t *cap, ebb_time_ms at,
                      ebb_micros v)
{
    if (s->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        void *p = realloc(s->p, ncap * sizeof(*s->p));
        if (p == NULL)
            return EBB_ENOMEM;
        s->p = p;
        *cap = ncap;
    }
    s->p[s->n++] = (struct ebb__report_point){at, v};
    return 0;
}

/* A series being loaded: where its steps go. */
struct load {
    struct report_build *b;
    struct series_cache *s;
    size_t cap;
};

static int on_step(void *arg, const struct ebb__price_step *step)
{
    struct load *l = arg;
    if (l->s->n == 0)
        ebb__strlcpy(l->s->currency, step->currency, sizeof(l->s->currency));
    return ebb__report_stop(l->b,
                            push_point(l->s, &l->cap, step->at, step->price));
}

int ebb__report_series_load(struct report_build *b, struct series_cache *s)
{
    if (s->loaded)
        return 0;
    s->loaded = 1;
    struct ebb__price_series series = {
        .provider = s->provider, .region = s->region, .zone = s->zone,
        .instance_type = s->instance_type, .market = s->market,
    };
    struct load l = {.b = b, .s = s};
    int r = ebb__report_walked(
        b, ebb__store_price_steps(b->store, &series, b->r->until,
                                  on_step, &l),
        "cannot read prices");
    if (r == 0 && s->n == 0 && s->market == EBB_MARKET_ON_DEMAND &&
        b->o->catalog != NULL) {
        const struct ebb__catalog_entry *e = ebb__catalog_find(
            b->o->catalog, s->provider, s->region, s->instance_type);
        if (e != NULL && e->on_demand > 0)
            r = push_point(s, &l.cap, b->r->since, e->on_demand);
    }
    return r;
}

int ebb__report_price_refs(struct report_build *b, const struct ref_row *row,
                           int compute, struct ebb__report_figures *add)
{
    const struct fact *f = row->f;
    ebb_dur_ms len = row->end - row->start;
    int rc = 0;

    /* On-demand: the same work on on-demand, which is the row's useful
     * time (its lost time at the end left out: an on-demand run would
     * not have been preempted). An on-demand row is its own reference,
     * for its useful part; a spot row's useful time is priced on its
     * type's on-demand series (the prices a provider reported, else the
     * catalog's list price, as the engine's on-demand offers are). The
     * basis stays what the whole row cost. The lookup comes first: adding
     * a series may move the cache. */
    ebb_time_ms useful_end = row->end - row->lost;
    if (strcmp(f->market, "spot") == 0) {
        struct fact od = *f;
        od.zone = "";
        od.market = "on-demand";
        struct series_cache *o = ebb__report_series(b, &od);
        if (o == NULL)
            return EBB_ENOMEM;
        rc = ebb__report_series_load(b, o);
        if (rc == 0 && o->n > 0) {
            rc = ebb__report_to_currency(
                b, ebb__report_cost_on(o->p, o->n, row->start, useful_end),
                o->currency, &add->on_demand);
            add->on_demand_basis = row->amount;
        }
        if (rc != 0)
            return rc;
    }
    struct series_cache *s = ebb__report_series(b, f);
    if (s == NULL)
        return EBB_ENOMEM;
    s->spend += row->amount;
    if (s->market == EBB_MARKET_ON_DEMAND) {
        add->on_demand_basis = row->amount;
        add->on_demand = len > 0 ? (ebb_micros)((ebb__i128)row->amount *
                                                (len - row->lost) / len)
                                 : row->amount;
    }

    /* Spot at once: the job's productive time on this series (lost time
     * left out, as for on-demand), laid back to back from the job's
     * submission. */
    if (!compute || s->market != EBB_MARKET_SPOT)
        return 0;
    rc = ebb__report_series_load(b, s);
    if (rc != 0 || s->n == 0)
        return rc;
    ebb_time_ms t0 = row->submitted_at + row->prior_compute;
    rc = ebb__report_to_currency(b, ebb__report_cost_on(s->p, s->n, t0,
                                                        t0 + len - row->lost),
                                 s->currency, &add->spot_at_once);
    if (rc == 0)
        add->spot_at_once_basis = row->amount;
    return rc;
}
