/* A backtest's input checks (see backtest_input.h). */
#include "report/backtest_input.h"

#include <string.h>

#include <ebb/units.h>

static int known_type(const struct ebb_price_trace *t,
                      const struct ebb__catalog *c, const char *type)
{
    for (size_t i = 0; i < t->n_series; i++)
        if (strcmp(t->series[i].instance_type, type) == 0)
            return 1;
    for (size_t i = 0; i < c->n_entry; i++)
        if (strcmp(c->entry[i].instance_type, type) == 0)
            return 1;
    return 0;
}

/* The fastest speed any on-demand catalog entry allowed to the job offers;
 * 0 when none is. */
static double fastest_on_demand(const struct ebb__catalog *c,
                                const struct ebb__job_spec *spec)
{
    double best = 0;
    const struct ebb_string_list *types = &spec->resources.instance_types;
    for (size_t i = 0; i < c->n_entry; i++) {
        const struct ebb__catalog_entry *e = &c->entry[i];
        int ok = types->n == 0;
        for (size_t k = 0; k < types->n && !ok; k++)
            ok = strcmp(types->items[k], e->instance_type) == 0;
        if (ok && e->speed > best)
            best = e->speed;
    }
    return best;
}

/* Every instance type is known, and the job could finish by its deadline
 * at least on the fastest on-demand type it may use. */
static int check_job(const struct ebb__backtest_options *o,
                     const struct ebb_price_trace *prices,
                     const struct ebb__catalog *c, const struct ebb__job_spec *s,
                     struct ebb_diag *d)
{
    const struct ebb_string_list *types = &s->resources.instance_types;
    for (size_t k = 0; k < types->n; k++) {
        if (!known_type(prices, c, types->items[k])) {
            ebb_diag_set(d, s->file, s->line, "job %s: unknown instance type "
                         "\"%s\" (not in %s nor in %s)", s->name, types->items[k],
                         o->prices, o->catalog);
            return EBB_EINVAL;
        }
    }
    double speed = fastest_on_demand(c, s);
    ebb_time_ms deadline = ebb__jobspec_deadline(s, s->submit);
    if (deadline > 0 && s->market != EBB_JOB_SPOT && speed > 0 &&
        s->submit + s->restart_overhead + (ebb_dur_ms)((double)s->work / speed) >
            deadline) {
        char work[32], window[32];
        ebb_format_duration(s->work, work, sizeof(work));
        ebb_format_duration(deadline - s->submit, window, sizeof(window));
        ebb_diag_set(d, s->file, s->line, "job %s can never finish: %s of work "
                     "plus restart overhead does not fit in %s even on its "
                     "fastest instance type", s->name, work, window);
        return EBB_EINVAL;
    }
    return 0;
}

static int listed(const struct ebb_string_list *l, const char *v)
{
    if (l->n == 0)
        return 1;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], v) == 0)
            return 1;
    return 0;
}

static int may_use(const struct ebb__job_spec *s, const struct ebb_price_series *ps)
{
    const struct ebb__job_resources *r = &s->resources;
    return listed(&r->instance_types, ps->instance_type) &&
           listed(&r->providers, ps->provider) && listed(&r->regions, ps->region) &&
           listed(&r->zones, ps->zone);
}

/* The end of the job's window: its deadline, or without one the least
 * time it needs on its fastest on-demand type. */
static ebb_time_ms window_end(const struct ebb__catalog *c, const struct ebb__job_spec *s)
{
    ebb_time_ms deadline = ebb__jobspec_deadline(s, s->submit);
    if (deadline > 0)
        return deadline;
    double speed = fastest_on_demand(c, s);
    return s->submit + s->restart_overhead +
           (ebb_dur_ms)((double)s->work / (speed > 0 ? speed : 1.0));
}

/* A price is known at the job's submission on at least one series it may
 * use (each holds from its first row to the end of the run). */
static int check_prices(const struct ebb__backtest_options *o,
                        const struct ebb_price_trace *prices,
                        const struct ebb__job_spec *s, struct ebb_diag *d)
{
    const struct ebb_price_series *first = NULL;
    for (size_t i = 0; i < prices->n_series; i++) {
        const struct ebb_price_series *ps = &prices->series[i];
        if (may_use(s, ps) && (first == NULL || ps->at[0] < first->at[0]))
            first = ps;
    }
    if (first == NULL && s->market == EBB_JOB_SPOT) {
        ebb_diag_set(d, s->file, s->line, "job %s: %s has no price series this "
                     "spot job may use (its instance types, providers, regions "
                     "and zones): it could never run", s->name, o->prices);
        return EBB_EINVAL;
    }
    if (first == NULL || first->at[0] <= s->submit)
        return 0;
    char sub[EBB_TIME_BUFSZ], at[EBB_TIME_BUFSZ], gap[EBB_DURATION_BUFSZ];
    ebb_diag_set(d, s->file, s->line, "job %s: %s has no price for it at its "
                 "submission %s: its earliest series, %s %s %s, begins at %s, "
                 "%s later", s->name, o->prices,
                 ebb_format_time(s->submit, sub, sizeof(sub)), first->provider,
                 first->zone, first->instance_type,
                 ebb_format_time(first->at[0], at, sizeof(at)),
                 ebb_format_duration(first->at[0] - s->submit, gap, sizeof(gap)));
    return EBB_EINVAL;
}

/* Every availability series of an offer the job may use covers the job's
 * window: from the series' first row to the trace's last. */
static int check_availability(const struct ebb__backtest_options *o,
                              const struct ebb_price_trace *prices,
                              const struct ebb_avail_trace *avail,
                              const struct ebb__catalog *c,
                              const struct ebb__job_spec *s, struct ebb_diag *d)
{
    ebb_time_ms end = window_end(c, s);
    for (size_t i = 0; i < prices->n_series; i++) {
        const struct ebb_price_series *ps = &prices->series[i];
        if (!may_use(s, ps))
            continue;
        ssize_t k = ebb_avail_trace_find(avail, ps->provider, ps->zone, ps->instance_type);
        if (k < 0)
            continue; /* no series: unlimited capacity, as documented */
        const struct ebb_avail_series *as = &avail->series[k];
        ebb_time_ms from = as->at[0], to = avail->last_at;
        if (s->submit >= from && end <= to)
            continue;
        ebb_time_ms gap_from = s->submit < from ? s->submit : to;
        ebb_time_ms gap_to = s->submit < from ? (end < from ? end : from) : end;
        char a[EBB_TIME_BUFSZ], b[EBB_TIME_BUFSZ], f[EBB_TIME_BUFSZ], t[EBB_TIME_BUFSZ];
        ebb_diag_set(d, s->file, s->line, "job %s: %s does not cover its window: "
                     "series %s %s %s holds from %s to %s, and nothing is known "
                     "from %s to %s (--align-availability replays a trace from "
                     "another period over the prices)", s->name, o->availability,
                     ps->provider, ps->zone, ps->instance_type,
                     ebb_format_time(from, f, sizeof(f)),
                     ebb_format_time(to, t, sizeof(t)),
                     ebb_format_time(gap_from, a, sizeof(a)),
                     ebb_format_time(gap_to, b, sizeof(b)));
        return EBB_EINVAL;
    }
    return 0;
}

int ebb__backtest_check_input(const struct ebb__backtest_options *o,
                              const struct ebb__workload *w,
                              const struct ebb__catalog *c,
                              struct ebb_avail_alignment *align,
                              struct ebb_diag *d)
{
    *align = (struct ebb_avail_alignment){0};
    struct ebb_price_trace *prices = NULL;
    struct ebb_avail_trace *avail = NULL;
    int rc = ebb_price_trace_load(o->prices, &prices, d);
    if (rc == 0 && o->availability != NULL)
        rc = ebb_avail_trace_load(o->availability, &avail, d);
    if (rc == 0 && avail != NULL && o->align_availability)
        *align = ebb_avail_trace_align(avail, prices);
    for (size_t i = 0; i < w->n && rc == 0; i++) {
        const struct ebb__job_spec *s = &w->jobs[i];
        rc = check_job(o, prices, c, s, d);
        /* On-demand prices are the catalog's, known at any time. */
        int spot = s->market != EBB_JOB_ON_DEMAND;
        if (rc == 0 && spot)
            rc = check_prices(o, prices, s, d);
        if (rc == 0 && spot && avail != NULL && !align->shifted)
            rc = check_availability(o, prices, avail, c, s, d);
    }
    ebb_avail_trace_free(avail);
    ebb_price_trace_free(prices);
    return rc;
}
