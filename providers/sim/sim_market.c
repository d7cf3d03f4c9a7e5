/* The replayed market: prices and spot capacity as step functions of time,
 * read from the core's trace readers (src/base/trace.c), and the one timer that
 * tells the engine when they change.
 *
 * Every series of the price trace is a spot offer. Its capacity comes from
 * the availability series with the same (provider, zone, instance_type),
 * or is unlimited (-1) when there is none. Availability is used exactly as
 * recorded unless the configuration says `align_availability: true`: the
 * recorded traces do not come from the same period (the shipped AWS prices
 * end in February 2020, the availability starts in March 2020), and then
 * an availability trace that does not overlap the price trace at all is
 * moved onto it: its first row is replayed at the price trace's first row,
 * and the whole trace is repeated back to back until the price trace ends.
 * After that nothing changes any more, so a virtual clock run to "the end"
 * terminates.
 */
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "sim.h"

static int load_error(const struct ebb_host *host, int rc,
                      const struct ebb_diag *d)
{
    host->log(host->ctx, EBB_LOG_ERROR, "%s", d->msg);
    return rc == EBB_ENOMEM ? EBB_ENOMEM : EBB_ECONFIG;
}

/* Row indices of a price series where the price differs from the row
 * before (always row 0): the times at which the offer really changes. */
static int offer_init(struct sim_offer *o, const struct ebb_price_series *ps,
                      const struct ebb_avail_trace *avail)
{
    o->ps = ps;
    o->avail = -1;
    if (avail != NULL) {
        ssize_t a = ebb_avail_trace_find(avail, ps->provider, ps->zone,
                                          ps->instance_type);
        o->avail = a >= 0 ? a : -1;
    }
    o->chg = malloc(ps->n * sizeof(*o->chg));
    if (o->chg == NULL)
        return EBB_ENOMEM;
    o->n_chg = 0;
    for (size_t i = 0; i < ps->n; i++) {
        if (i == 0 || ps->price[i] != ps->price[i - 1])
            o->chg[o->n_chg++] = i;
    }
    return 0;
}

/* Moves the availability onto the prices when asked to and they do not
 * overlap, saying so; warns when they do not overlap and it was not
 * asked, since the availability then changes nothing the prices cover. */
static void plan_shift(struct sim_market *m, int align)
{
    const struct ebb_price_trace *p = m->prices;
    const struct ebb_avail_trace *a = m->avail;
    struct ebb_avail_alignment al = ebb_avail_trace_align(a, p);
    if (!al.shifted)
        return;
    char a_first[EBB_TIME_BUFSZ], a_last[EBB_TIME_BUFSZ], p_first[EBB_TIME_BUFSZ],
        p_last[EBB_TIME_BUFSZ], per[EBB_DURATION_BUFSZ];
    ebb_format_time(a->first_at, a_first, sizeof(a_first));
    ebb_format_time(a->last_at, a_last, sizeof(a_last));
    ebb_format_time(p->first_at, p_first, sizeof(p_first));
    ebb_format_time(p->last_at, p_last, sizeof(p_last));
    if (!align) {
        m->host->log(m->host->ctx, EBB_LOG_WARN,
                     "availability %s (%s to %s) does not overlap prices %s "
                     "(%s to %s): used as recorded; set align_availability: "
                     "true to replay it over the prices", a->path, a_first, a_last,
                     p->path, p_first, p_last);
        return;
    }
    m->align = al;
    m->host->log(m->host->ctx, EBB_LOG_INFO,
                 "availability %s (%s to %s) does not overlap prices %s "
                 "(%s to %s): replaying it from %s, repeated every %s until %s "
                 "(align_availability)", a->path, a_first, a_last, p->path, p_first, p_last, p_first,
                 ebb_format_duration(al.period, per, sizeof(per)), p_last);
}

int sim_market_init(struct sim_market *m, const struct ebb_host *host,
                    const struct sim_cfg *cfg)
{
    *m = (struct sim_market){
        .host = host, .currency = cfg->currency, .delivered = INT64_MIN};
    struct ebb_diag d = {{0}};
    if (cfg->prices == NULL || cfg->prices[0] == '\0') {
        host->log(host->ctx, EBB_LOG_ERROR,
                  "prices: required: the path of a price trace CSV "
                  "(example: data/traces/aws_spot_gpu_p2p3_6regions_"
                  "2019-12-20_2020-02-29.csv)");
        return EBB_ECONFIG;
    }
    int rc = ebb_price_trace_load(cfg->prices, &m->prices, &d);
    if (rc != 0)
        return load_error(host, rc, &d);
    if (cfg->availability != NULL && cfg->availability[0] != '\0') {
        rc = ebb_avail_trace_load(cfg->availability, &m->avail, &d);
        if (rc != 0) {
            sim_market_fini(m);
            return load_error(host, rc, &d);
        }
        plan_shift(m, cfg->align_availability);
    }
    m->offers = calloc(m->prices->n_series, sizeof(*m->offers));
    if (m->offers == NULL) {
        sim_market_fini(m);
        return EBB_ENOMEM;
    }
    for (size_t i = 0; i < m->prices->n_series; i++) {
        m->n_offers = i + 1;
        if (offer_init(&m->offers[i], &m->prices->series[i], m->avail) != 0) {
            sim_market_fini(m);
            return EBB_ENOMEM;
        }
    }
    return 0;
}

void sim_market_fini(struct sim_market *m)
{
    if (m->timer != 0)
        m->host->timer_stop(m->host->ctx, m->timer);
    m->timer = 0;
    for (size_t i = 0; i < m->n_offers; i++)
        free(m->offers[i].chg);
    free(m->offers);
    m->offers = NULL;
    m->n_offers = 0;
    ebb_price_trace_free(m->prices);
    ebb_avail_trace_free(m->avail);
    m->prices = NULL;
    m->avail = NULL;
}

/* ---- capacity ---- */

int32_t sim_market_capacity(const struct sim_market *m, ssize_t a,
                            ebb_time_ms t)
{
    if (a < 0 || m->avail == NULL)
        return -1;
    const struct ebb_avail_series *s = &m->avail->series[a];
    int32_t v;
    const struct ebb_avail_alignment *al = &m->align;
    if (!al->shifted)
        return ebb_avail_series_at(s, t, &v) == 0 ? v : -1;
    if (t < al->start)
        return -1;
    if (t > al->end)
        t = al->end;
    ebb_time_ms k = 0, off = al->orig_first;
    if (al->period > 0) {
        k = (t - al->start) / al->period;
        off += (t - al->start) % al->period;
    }
    if (ebb_avail_series_at(s, off, &v) == 0)
        return v;
    /* Before this series' first row: nothing known in the first cycle, the
     * value the previous cycle ended with in later ones. */
    return k == 0 ? -1 : s->available[s->n - 1];
}

/* The first row time after `t` of series `a` as replayed (a candidate
 * change: the value may repeat), or INT64_MAX. */
static ebb_time_ms next_row(const struct sim_market *m, ssize_t a, ebb_time_ms t)
{
    const struct ebb_avail_series *s = &m->avail->series[a];
    const struct ebb_avail_alignment *al = &m->align;
    if (!al->shifted)
        return ebb_avail_series_next_change(s, t);
    if (t >= al->end)
        return INT64_MAX;
    ebb_time_ms cand;
    if (t < al->start) {
        cand = al->start + (s->at[0] - al->orig_first);
    } else {
        ebb_time_ms base = al->start, off = al->orig_first;
        if (al->period > 0) {
            base += (t - al->start) / al->period * al->period;
            off += (t - al->start) % al->period;
        }
        ebb_time_ms r = ebb_avail_series_next_change(s, off);
        if (r != INT64_MAX)
            cand = base + (r - al->orig_first);
        else if (al->period > 0)
            cand = base + al->period + (s->at[0] - al->orig_first);
        else
            return INT64_MAX;
    }
    return cand > al->end ? INT64_MAX : cand;
}

ebb_time_ms sim_market_next_capacity_change(const struct sim_market *m,
                                            ssize_t a, ebb_time_ms t)
{
    if (a < 0 || m->avail == NULL)
        return INT64_MAX;
    for (;;) {
        ebb_time_ms c = next_row(m, a, t);
        if (c == INT64_MAX ||
            sim_market_capacity(m, a, c) != sim_market_capacity(m, a, c - 1))
            return c;
        t = c;
    }
}

/* ---- prices ---- */

ebb_micros sim_market_price(const struct sim_offer *o, ebb_time_ms t)
{
    ebb_micros p;
    if (ebb_price_series_at(o->ps, t, &p) != 0)
        return o->ps->price[0];
    return p;
}

static ebb_time_ms next_price_change(const struct sim_offer *o, ebb_time_ms t)
{
    size_t lo = 0, hi = o->n_chg;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->ps->at[o->chg[mid]] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < o->n_chg ? o->ps->at[o->chg[lo]] : INT64_MAX;
}

/* Capacity changes before an offer's first price are not observable: the
 * offer does not exist yet, and its first row reports the capacity. */
static ebb_time_ms next_offer_change(const struct sim_market *m,
                                     const struct sim_offer *o, ebb_time_ms t)
{
    ebb_time_ms p = next_price_change(o, t);
    ebb_time_ms from = t > o->ps->at[0] ? t : o->ps->at[0];
    ebb_time_ms c = sim_market_next_capacity_change(m, o->avail, from);
    return p < c ? p : c;
}

/* ---- market_changed ---- */

static void on_market_timer(void *arg)
{
    struct sim_market *m = arg;
    m->timer = 0;
    /* Re-arm first: the engine may poll or launch from market_changed. */
    sim_market_arm(m);
    m->host->market_changed(m->host->ctx);
}

void sim_market_arm(struct sim_market *m)
{
    if (m->timer != 0)
        m->host->timer_stop(m->host->ctx, m->timer);
    m->timer = 0;
    ebb_time_ms now = m->host->now(m->host->ctx);
    ebb_time_ms next = INT64_MAX;
    for (size_t i = 0; i < m->n_offers; i++) {
        ebb_time_ms c = next_offer_change(m, &m->offers[i], now);
        if (c < next)
            next = c;
    }
    if (next == INT64_MAX)
        return;
    int64_t id = m->host->timer_start(m->host->ctx, next, on_market_timer, m);
    if (id < 0) {
        m->host->log(m->host->ctx, EBB_LOG_ERROR,
                     "cannot start the market timer: %s", ebb_strerror((int)id));
        return;
    }
    m->timer = id;
}

/* ---- polls ---- */

struct sim_obs {
    struct ebb_price p;
    size_t offer;
};

static int obs_cmp(const void *a, const void *b)
{
    const struct sim_obs *x = a, *y = b;
    if (x->p.at != y->p.at)
        return x->p.at < y->p.at ? -1 : 1;
    return x->offer < y->offer ? -1 : x->offer > y->offer;
}

struct obs_buf {
    struct sim_obs *v;
    size_t n, cap;
};

static int obs_push(struct obs_buf *b, const struct sim_market *m, size_t i,
                    ebb_time_ms t)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        struct sim_obs *v = realloc(b->v, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        b->v = v;
        b->cap = cap;
    }
    const struct sim_offer *o = &m->offers[i];
    b->v[b->n++] = (struct sim_obs){
        .p = {
            .struct_size = sizeof(struct ebb_price),
            .provider = o->ps->provider,
            .region = o->ps->region,
            .zone = o->ps->zone,
            .instance_type = o->ps->instance_type,
            .product = o->ps->product,
            .market = EBB_MARKET_SPOT,
            .at = t,
            .price_per_hour = sim_market_price(o, t),
            .currency = m->currency,
            .capacity = sim_market_capacity(m, o->avail, t),
        },
        .offer = i,
    };
    return 0;
}

/* Every price row in (from, now] is an observation (also one repeating the
 * previous price: AWS writes a row a day), and so is every real capacity
 * change after the offer's first row. */
static int collect_offer(struct obs_buf *b, const struct sim_market *m,
                         size_t i, ebb_time_ms from, ebb_time_ms now)
{
    const struct sim_offer *o = &m->offers[i];
    ebb_time_ms pr = ebb_price_series_next_change(o->ps, from);
    ebb_time_ms cr = sim_market_next_capacity_change(
        m, o->avail, from > o->ps->at[0] ? from : o->ps->at[0]);
    for (;;) {
        ebb_time_ms t = pr < cr ? pr : cr;
        if (t > now || t == INT64_MAX)
            return 0;
        if (obs_push(b, m, i, t) != 0)
            return EBB_ENOMEM;
        if (pr == t)
            pr = ebb_price_series_next_change(o->ps, t);
        if (cr == t)
            cr = sim_market_next_capacity_change(m, o->avail, t);
    }
}

int sim_market_collect(struct sim_market *m, ebb_time_ms now,
                       struct ebb_price **out, size_t *n)
{
    struct obs_buf b = {0};
    *out = NULL;
    *n = 0;
    if (now <= m->delivered)
        return 0;
    for (size_t i = 0; i < m->n_offers; i++) {
        if (collect_offer(&b, m, i, m->delivered, now) != 0) {
            free(b.v);
            return EBB_ENOMEM;
        }
    }
    if (b.n > 0)
        qsort(b.v, b.n, sizeof(*b.v), obs_cmp);
    struct ebb_price *p = malloc((b.n ? b.n : 1) * sizeof(*p));
    if (p == NULL) {
        free(b.v);
        return EBB_ENOMEM;
    }
    for (size_t k = 0; k < b.n; k++)
        p[k] = b.v[k].p;
    free(b.v);
    m->delivered = now;
    *out = p;
    *n = b.n;
    return 0;
}
