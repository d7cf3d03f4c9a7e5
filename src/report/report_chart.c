/* What the report's chart draws (report_svg.c): cumulative spend against
 * its on-demand reference, each instance's run, and the price history of
 * the series they ran on, trimmed to the window and converted. */
#include <stdlib.h>
#include <string.h>

#include "base/str.h"
#include "report/report_impl.h"
#include "store/store_ledger.h"

/* Enough points for a line a few hundred pixels wide. */
#define MAX_CUMULATIVE 600
/* What the chart data may hold, so that a year of history stays well
 * inside one API message: the series most spent on, each thinned to at
 * most 3 points per 1/PRICE_BUCKETS of the window, and the first runs. */
#define MAX_SERIES 8
#define PRICE_BUCKETS 1000
#define MAX_RUNS 20000

int ebb__report_cumulate(struct report_build *b, ebb_time_ms at,
                         ebb_micros spend, ebb_micros on_demand)
{
    struct ebb__report *r = b->r;
    if (r->n_cumulative == b->cap_cumulative) {
        size_t cap = b->cap_cumulative ? b->cap_cumulative * 2 : 256;
        void *n = realloc(r->cumulative, cap * sizeof(*r->cumulative));
        if (n == NULL)
            return EBB_ENOMEM;
        r->cumulative = n;
        b->cap_cumulative = cap;
    }
    r->cumulative[r->n_cumulative++] =
        (struct ebb__report_cumulative){at, spend, on_demand};
    return 0;
}

int ebb__report_mark_preempted(struct report_build *b, const char *token)
{
    void *n = realloc(b->preempted, (b->n_preempted + 1) * sizeof(char *));
    if (n == NULL)
        return EBB_ENOMEM;
    b->preempted = n;
    b->preempted[b->n_preempted] = strdup(token);
    return b->preempted[b->n_preempted++] != NULL ? 0 : EBB_ENOMEM;
}

static int by_token(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int by_time(const void *a, const void *b)
{
    ebb_time_ms x = ((const struct ebb__report_cumulative *)a)->at;
    ebb_time_ms y = ((const struct ebb__report_cumulative *)b)->at;
    return (x > y) - (x < y);
}

/* Rows come by start; the line is drawn by end: sort, sum up, and keep
 * at most MAX_CUMULATIVE points (always the last, so the line ends at the
 * totals). */
static void cumulate(struct ebb__report *r)
{
    qsort(r->cumulative, r->n_cumulative, sizeof(*r->cumulative), by_time);
    for (size_t i = 1; i < r->n_cumulative; i++) {
        r->cumulative[i].spend += r->cumulative[i - 1].spend;
        r->cumulative[i].on_demand += r->cumulative[i - 1].on_demand;
    }
    size_t stride = r->n_cumulative / MAX_CUMULATIVE + 1, kept = 0;
    for (size_t i = 0; i < r->n_cumulative; i++) {
        if (i % stride == 0 || i + 1 == r->n_cumulative)
            r->cumulative[kept++] = r->cumulative[i];
    }
    r->n_cumulative = kept;
}

static int by_spend(const void *a, const void *b)
{
    ebb_micros x = ((const struct series_cache *)a)->spend;
    ebb_micros y = ((const struct series_cache *)b)->spend;
    return (x < y) - (x > y);
}

/* Keeps, of each 1/PRICE_BUCKETS of the window, the first point and the
 * lowest and highest, in time order: spikes survive, the line's shape
 * stays. Points are thinned in place. */
static void thin(struct ebb__report_series *s, ebb_time_ms since,
                 ebb_time_ms until)
{
    if (s->n_points <= 3 * PRICE_BUCKETS)
        return;
    ebb_dur_ms width = (until - since) / PRICE_BUCKETS + 1;
    size_t kept = 0, i = 0;
    while (i < s->n_points) {
        ebb_time_ms bucket = (s->points[i].at - since) / width;
        size_t first = i, lo = i, hi = i;
        for (i++; i < s->n_points &&
                  (s->points[i].at - since) / width == bucket; i++) {
            if (s->points[i].value < s->points[lo].value)
                lo = i;
            if (s->points[i].value > s->points[hi].value)
                hi = i;
        }
        size_t pick[3] = {first, lo < hi ? lo : hi, lo < hi ? hi : lo};
        for (size_t k = 0; k < 3; k++)
            if (k == 0 || pick[k] != pick[k - 1])
                s->points[kept++] = s->points[pick[k]];
    }
    s->n_points = kept;
}

/* Copies a cached series into the report: the step in effect at `since`
 * (moved to since) and those after it, converted. */
static int publish_series(struct report_build *b, struct series_cache *c,
                          struct ebb__report_series *s)
{
    int rc = ebb__report_series_load(b, c);
    *s = (struct ebb__report_series){
        .provider = c->provider, .region = c->region, .zone = c->zone,
        .instance_type = c->instance_type, .market = c->market,
        .spend = c->spend,
    };
    c->provider = c->region = c->zone = c->instance_type = NULL;
    if (rc != 0 || c->n == 0)
        return rc;
    size_t first = 0;
    while (first + 1 < c->n && c->p[first + 1].at <= b->r->since)
        first++;
    s->points = calloc(c->n - first, sizeof(*s->points));
    if (s->points == NULL)
        return EBB_ENOMEM;
    for (size_t i = first; i < c->n && rc == 0; i++) {
        struct ebb__report_point *p = &s->points[s->n_points++];
        p->at = c->p[i].at < b->r->since ? b->r->since : c->p[i].at;
        rc = ebb__report_to_currency(b, c->p[i].value, c->currency, &p->value);
    }
    thin(s, b->r->since, b->r->until);
    return rc;
}

static size_t series_index(const struct ebb__report *r, const struct fact *f)
{
    for (size_t i = 0; i < r->n_series; i++) {
        const struct ebb__report_series *s = &r->series[i];
        if (strcmp(s->provider, f->provider) == 0 &&
            strcmp(s->region, f->region) == 0 &&
            strcmp(s->zone, f->zone) == 0 &&
            strcmp(s->instance_type, f->instance_type) == 0 &&
            (s->market == EBB_MARKET_SPOT) == (strcmp(f->market, "spot") == 0))
            return i;
    }
    return SIZE_MAX;
}

/* One instance's run (ebb__store_instance_runs()), on the series drawn
 * when it is one of them, marked when the instance was preempted. */
static int add_run(struct report_build *b,
                   const struct ebb__instance_run_row *row)
{
    struct ebb__report *r = b->r;
    if (r->n_runs == MAX_RUNS) {
        r->runs_left_out++;
        return 0;
    }
    void *n = realloc(r->runs, (r->n_runs + 1) * sizeof(*r->runs));
    if (n == NULL)
        return EBB_ENOMEM;
    r->runs = n;
    struct fact f = {
        .provider = row->provider, .region = row->region, .zone = row->zone,
        .instance_type = row->instance_type, .market = row->market,
    };
    struct ebb__report_run *run = &r->runs[r->n_runs];
    *run = (struct ebb__report_run){
        .job_id = strdup(row->job_id),
        .series = series_index(r, &f),
        .start = row->start_at,
        .end = row->end_at,
    };
    if (run->job_id == NULL)
        return EBB_ENOMEM;
    r->n_runs++;
    const char *token = row->instance_token;
    run->preempted = b->n_preempted > 0 &&
                     bsearch(&token, b->preempted, b->n_preempted,
                             sizeof(char *), by_token) != NULL;
    return 0;
}

static int on_run(void *arg, const struct ebb__instance_run_row *row)
{
    struct report_build *b = arg;
    return ebb__report_stop(b, add_run(b, row));
}

int ebb__report_chart(struct report_build *b)
{
    struct ebb__report *r = b->r;
    cumulate(r);
    qsort(b->series, b->n_series, sizeof(*b->series), by_spend);
    size_t n = b->n_series < MAX_SERIES ? b->n_series : MAX_SERIES;
    r->series = calloc(n + 1, sizeof(*r->series));
    if (r->series == NULL)
        return EBB_ENOMEM;
    qsort(b->preempted, b->n_preempted, sizeof(char *), by_token);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = publish_series(b, &b->series[i], &r->series[i]);
        r->n_series++;
    }
    if (rc != 0)
        return rc;
    return ebb__report_walked(
        b, ebb__store_instance_runs(b->store, r->since, r->until, on_run, b),
        "cannot read the store");
}

void ebb__report_build_free(struct report_build *b)
{
    for (size_t i = 0; i < b->n_series; i++) {
        struct series_cache *s = &b->series[i];
        free(s->provider);
        free(s->region);
        free(s->zone);
        free(s->instance_type);
        free(s->p);
    }
    free(b->series);
    for (size_t i = 0; i < b->n_preempted; i++)
        free(b->preempted[i]);
    free(b->preempted);
}
