/* `ebb plan` (plan.h): the job through the backtest once per sampled
 * future, and the quantiles of what it cost and when it finished.
 *
 * Each sample is written as a pair of traces the sim replays: the price
 * history of the last four weeks before `now` (what the engine's outlook
 * reads, engine_outlook.c), then one row per step of a sampled path up to
 * the job's deadline (30 days without one), and an availability trace of
 * the sampled outages from `now` on. The history is formatted once; only
 * the future is written per sample. The cost of a sample is one backtest
 * of one job without the oracle: loading the plugins, replaying the
 * history into the engine, the planning passes. Samples run on up to
 * `threads` workers (each its own files, engine and plugins); sample i
 * depends only on (seed, i), so the quote does not depend on how many.
 */
#include "report/plan.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebb/buf.h>
#include <ebb/units.h>

#include "base/paths.h"
#include "engine/engine.h"
#include "market/forecast.h"
#include "report/backtest.h"
#include "report/plan_sample.h"

/* The longest future sampled, and a job's window without a deadline. */
#define PLAN_HORIZON (30 * EBB_MS_PER_DAY)
/* A sampled path holds each price for 6 hours: the shipped traces' prices
 * change a few times a day, and every change makes the engine forecast
 * again (engine_outlook.c), so hourly steps cost five times as much. */
#define PLAN_STEP (6 * EBB_MS_PER_HOUR)
/* An outage's mean length when the history shows none ended. */
#define PLAN_MEAN_DOWN_DEFAULT EBB_MS_PER_HOUR
/* Capacity when up: more than any one job launches. */
#define PLAN_CAPACITY_UP 1000000
/* Outages sampled per series and sample, at most (a hazard of 10 an hour
 * over 30 days is 7,200). */
#define PLAN_MAX_OUTAGES 8192
/* Workers when the caller leaves it to the CPUs. */
#define PLAN_MAX_THREADS 8

struct series {
    const struct ebb_price_series *s;
    struct ebb_forecast_point *fc; /* n_steps */
};

struct avail {
    const struct ebb_avail_series *s;
    double hazard;
    ebb_dur_ms mean_down;
};

struct plan {
    const struct ebb__plan_options *o;
    struct ebb_diag *d;
    struct series *series;
    size_t n_series;
    struct avail *avail;
    size_t n_avail;
    size_t n_steps;
    char *history; /* the price trace's header and history rows */
    char dir[4096];
    /* per sample, each written by the one worker that runs it */
    double *cost;
    ebb_time_ms *finish; /* INT64_MAX: did not finish */
    int *met, *within;
    double budget; /* USD; < 0: none */
    ebb_time_ms deadline;
    char policy[128]; /* the policy the engine gave the job (sample 0) */
};

/* One worker: samples id, id + n, id + 2n, ... with its own files. */
struct worker {
    struct plan *p;
    unsigned id, n;
    char *prices_path, *avail_path;
    ebb_micros *path;
    ebb_time_ms *starts, *ends;
    struct ebb_diag d;
    int rc;
    unsigned failed_at; /* the sample that failed, when rc != 0 */
};

static int list_has(const struct ebb_string_list *l, const char *s)
{
    if (l->n == 0)
        return 1;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], s) == 0)
            return 1;
    return 0;
}

/* Series the job may use by name (the engine applies the rest: GPUs,
 * providers, currencies); leaving the others out only saves time. */
static int wanted(const struct ebb__job_resources *r, const struct ebb_price_series *s)
{
    return list_has(&r->instance_types, s->instance_type) &&
           list_has(&r->regions, s->region) &&
           (s->zone[0] == '\0' || list_has(&r->zones, s->zone));
}

static void put_price(struct ebb_buf *b, const struct ebb_price_series *s,
                      ebb_time_ms at, ebb_micros price)
{
    ebb__plan_price_row(b, at, s->provider, s->region, s->zone, s->instance_type,
                        s->product, price);
}

/* The mean length of the outages (capacity 0) that ended before `origin`. */
static ebb_dur_ms mean_down(const struct ebb_avail_series *s, ebb_time_ms origin)
{
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i + 1 < s->n && s->at[i + 1] < origin; i++)
        if (s->available[i] == 0 && s->available[i + 1] != 0) {
            size_t j = i;
            while (j > 0 && s->available[j - 1] == 0)
                j--;
            sum += (double)(s->at[i + 1] - s->at[j]);
            n++;
        }
    return n > 0 ? (ebb_dur_ms)(sum / (double)n) : PLAN_MEAN_DOWN_DEFAULT;
}

static int add_avail(struct plan *p, const struct ebb_price_series *ps)
{
    const struct ebb_avail_trace *a = p->o->availability;
    ssize_t k = a ? ebb_avail_trace_find(a, ps->provider, ps->zone, ps->instance_type)
                  : EBB_ENOTFOUND;
    if (k < 0)
        return 0;
    for (size_t i = 0; i < p->n_avail; i++)
        if (p->avail[i].s == &a->series[k])
            return 0;
    const struct ebb_avail_series *s = &a->series[k];
    ebb_time_ms origin = p->o->availability_replayed ? a->last_at + 1 : p->o->now;
    struct ebb__capacity_history ch = {s->at, s->available, s->n};
    p->avail[p->n_avail++] = (struct avail){
        .s = s,
        .hazard = ebb__preemption_hazard(&ch, origin, 0, 0),
        .mean_down = mean_down(s, origin),
    };
    return 0;
}

/* Chooses the series, forecasts each and formats their history. */
static int prepare(struct plan *p)
{
    const struct ebb__plan_options *o = p->o;
    const struct ebb_price_trace *t = o->prices;
    ebb_dur_ms window = p->deadline > 0 ? p->deadline - o->now : PLAN_HORIZON;
    if (window > PLAN_HORIZON)
        window = PLAN_HORIZON;
    p->n_steps = (size_t)((window + PLAN_STEP - 1) / PLAN_STEP);
    if (p->n_steps == 0)
        p->n_steps = 1;
    p->series = calloc(t->n_series, sizeof(*p->series));
    p->avail = calloc(t->n_series, sizeof(*p->avail));
    if (!p->series || !p->avail)
        return EBB_ENOMEM;
    /* Every series when the job's names match none: the engine then says
     * why the job cannot run, as it would at submit. */
    int any = 0;
    for (size_t i = 0; i < t->n_series && !any; i++)
        any = wanted(&o->job->resources, &t->series[i]) && t->series[i].at[0] < o->now;
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, EBB__PLAN_PRICES_HEADER);
    for (size_t i = 0; i < t->n_series; i++) {
        const struct ebb_price_series *s = &t->series[i];
        if (s->at[0] >= o->now || (any && !wanted(&o->job->resources, s)))
            continue;
        size_t end = 0;
        while (end < s->n && s->at[end] < o->now)
            end++;
        size_t begin = end - 1;
        while (begin > 0 && s->at[begin] >= o->now - EBB__ENGINE_OUTLOOK_HISTORY)
            begin--;
        for (size_t r = begin; r < end; r++)
            put_price(&b, s, s->at[r], s->price[r]);
        struct series *x = &p->series[p->n_series++];
        x->s = s;
        x->fc = calloc(p->n_steps, sizeof(*x->fc));
        if (x->fc == NULL) {
            ebb_buf_free(&b);
            return EBB_ENOMEM;
        }
        struct ebb__price_history h = {s->at + begin, s->price + begin, end - begin};
        if (ebb__forecast_prices(&h, o->now + 1, PLAN_STEP, p->n_steps, x->fc) != 0)
            for (size_t k = 0; k < p->n_steps; k++)
                x->fc[k] = (struct ebb_forecast_point){0, s->price[end - 1],
                                                       s->price[end - 1],
                                                       s->price[end - 1]};
        add_avail(p, s);
    }
    if (p->n_series == 0) {
        ebb_buf_free(&b);
        char at[EBB_TIME_BUFSZ];
        ebb_diag_set(p->d, NULL, 0, "no spot price is known before %s: nothing "
                     "to plan from", ebb_format_time(o->now, at, sizeof(at)));
        return EBB_EINVAL;
    }
    p->history = ebb_buf_take(&b);
    return p->history != NULL ? 0 : EBB_ENOMEM;
}

/* Writes sample i's traces. */
static int write_sample(struct worker *w, unsigned i)
{
    const struct plan *p = w->p;
    const ebb_time_ms now = p->o->now;
    struct ebb__plan_rng rng;
    ebb__plan_rng_seed(&rng, p->o->seed, i);
    struct ebb_buf b = {0};
    for (size_t k = 0; k < p->n_series; k++) {
        ebb__plan_sample_path(p->series[k].fc, p->n_steps,
                              exp(-(double)PLAN_STEP / EBB__PLAN_PATH_MEMORY),
                              &rng, w->path);
        for (size_t j = 0; j < p->n_steps; j++)
            put_price(&b, p->series[k].s, now + (ebb_time_ms)(j + 1) * PLAN_STEP,
                      w->path[j]);
    }
    char *future = ebb_buf_take(&b);
    int rc = future != NULL ? ebb__plan_write_text(w->prices_path, p->history, future, &w->d)
                            : EBB_ENOMEM;
    free(future);
    if (rc != 0 || p->n_avail == 0)
        return rc;
    ebb_time_ms until = now + (ebb_time_ms)p->n_steps * PLAN_STEP;
    ebb_buf_puts(&b, EBB__PLAN_AVAIL_HEADER);
    for (size_t k = 0; k < p->n_avail; k++) {
        const struct avail *a = &p->avail[k];
        const struct ebb_avail_series *s = a->s;
        size_t n = ebb__plan_sample_outages(a->hazard, a->mean_down, now, until,
                                            &rng, w->starts, w->ends,
                                            PLAN_MAX_OUTAGES);
        ebb__plan_avail_row(&b, now, s->provider, s->zone, s->instance_type,
                            PLAN_CAPACITY_UP);
        for (size_t j = 0; j < n; j++) {
            ebb__plan_avail_row(&b, w->starts[j], s->provider, s->zone,
                                s->instance_type, 0);
            ebb__plan_avail_row(&b, w->ends[j], s->provider, s->zone,
                                s->instance_type, PLAN_CAPACITY_UP);
        }
        if (n == 0 || w->ends[n - 1] < until)
            ebb__plan_avail_row(&b, until, s->provider, s->zone, s->instance_type,
                                PLAN_CAPACITY_UP);
    }
    char *avail = ebb_buf_take(&b);
    rc = avail != NULL ? ebb__plan_write_text(w->avail_path, avail, NULL, &w->d) : EBB_ENOMEM;
    free(avail);
    return rc;
}

static ebb_time_ms json_time(const json_t *v)
{
    ebb_time_ms t;
    return json_is_string(v) && ebb_parse_time(json_string_value(v), &t) == 0
               ? t : INT64_MAX;
}

static int run_sample(struct worker *w, unsigned i)
{
    struct plan *p = w->p;
    int rc = write_sample(w, i);
    if (rc != 0)
        return rc;
    struct ebb__backtest_options bo = {
        .prices = w->prices_path,
        .availability = p->n_avail > 0 ? w->avail_path : NULL,
        .catalog = p->o->catalog,
        .job = p->o->job,
        .job_submit = p->o->now,
        .policy = p->o->policy,
        .policy_what = "policy",
        .policies = p->o->policies,
        /* The sim's own random preemptions are off (the sampled outages
         * stand for them), so its seed changes nothing: ours may be any
         * 64-bit number, the sim's key is bounded. */
        .seed = 1,
        .no_oracle = 1,
        /* The sampled path changes a price only every PLAN_STEP: in between
         * an hourly forecast would learn only that an hour passed. */
        .outlook_refresh = PLAN_STEP,
        .speeds = p->o->speeds,
        .n_speeds = p->o->n_speeds,
    };
    json_t *r = NULL;
    rc = ebb__backtest_run(&bo, &r, &w->d);
    if (rc != 0)
        return rc;
    json_t *job = json_array_get(json_object_get(r, "jobs"), 0);
    p->cost[i] = json_number_value(json_object_get(job, "cost_usd"));
    p->finish[i] = json_time(json_object_get(job, "finished_at"));
    p->met[i] = json_is_true(json_object_get(job, "deadline_met"));
    json_t *b = json_object_get(job, "budget_usd");
    double budget = json_is_number(b) ? json_number_value(b) : -1;
    p->within[i] = budget < 0 || p->cost[i] <= budget + 1e-9;
    if (i == 0) {
        p->budget = budget;
        const char *pol = json_string_value(json_object_get(job, "policy"));
        snprintf(p->policy, sizeof(p->policy), "%s", pol ? pol : "");
    }
    json_decref(r);
    return 0;
}

/* ---- the quote --------------------------------------------------------- */

static double round6(double v)
{
    return round(v * 1e6) / 1e6;
}

static json_t *money_q(struct plan *p, unsigned n)
{
    double *v = malloc(n * sizeof(*v));
    if (v == NULL)
        return NULL;
    double q[3];
    const double at[3] = {0.10, 0.50, 0.90};
    for (int k = 0; k < 3; k++) {
        memcpy(v, p->cost, n * sizeof(*v));
        q[k] = round6(ebb__fc_quantile(v, n, at[k]));
    }
    free(v);
    return json_pack("{s:f,s:f,s:f}", "p10", q[0], "p50", q[1], "p90", q[2]);
}

static int cmp_time(const void *a, const void *b)
{
    ebb_time_ms x = *(const ebb_time_ms *)a, y = *(const ebb_time_ms *)b;
    return (x > y) - (x < y);
}

static json_t *time_json(ebb_time_ms t)
{
    char buf[EBB_TIME_BUFSZ];
    return t == INT64_MAX || t <= 0 ? json_null()
                                    : json_string(ebb_format_time(t, buf, sizeof(buf)));
}

/* Quantile q of sorted finish times, as ebb__fc_quantile() interpolates;
 * INT64_MAX when it reaches a sample that did not finish. */
static ebb_time_ms time_q(const ebb_time_ms *sorted, unsigned n, double q)
{
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h), hi = (size_t)ceil(h);
    if (sorted[hi] == INT64_MAX)
        return INT64_MAX;
    return sorted[lo] + (ebb_time_ms)llround((h - (double)lo) *
                                              (double)(sorted[hi] - sorted[lo]));
}

static json_t *quote(struct plan *p)
{
    unsigned n = p->o->samples;
    ebb_time_ms *f = malloc(n * sizeof(*f));
    double *v = malloc(n * sizeof(*v));
    if (f == NULL || v == NULL) {
        free(f);
        free(v);
        return NULL;
    }
    memcpy(f, p->finish, n * sizeof(*f));
    qsort(f, n, sizeof(*f), cmp_time);
    memcpy(v, p->cost, n * sizeof(*v));
    double budget_95 = round6(ebb__fc_quantile(v, n, 0.95));
    free(v);
    double mean = 0;
    for (unsigned i = 0; i < n; i++)
        mean += p->cost[i] / n;
    unsigned met = 0, within = 0, unfinished = 0;
    for (unsigned i = 0; i < n; i++) {
        met += (unsigned)p->met[i];
        within += (unsigned)p->within[i];
        unfinished += p->finish[i] == INT64_MAX;
    }
    json_t *finish = json_pack("{s:o,s:o,s:o}", "p10", time_json(time_q(f, n, 0.10)),
                               "p50", time_json(time_q(f, n, 0.50)),
                               "p90", time_json(time_q(f, n, 0.90)));
    ebb_time_ms cheapest = time_q(f, n, 0.90);
    free(f);
    char at[EBB_TIME_BUFSZ];
    const struct ebb__job_spec *job = p->o->job;
    return json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:I,s:o,s:f,s:o,s:o,s:o,s:o,s:f,s:i}",
        "job", job->name,
        "policy", p->policy,
        "at", ebb_format_time(p->o->now, at, sizeof(at)),
        "deadline", time_json(p->deadline),
        "budget_usd", p->budget >= 0 ? json_real(p->budget) : json_null(),
        "samples", (int)n,
        "seed", (json_int_t)p->o->seed,
        "cost_usd", money_q(p, n),
        "cost_mean_usd", round6(mean),
        "finish", finish,
        "p_deadline", p->deadline > 0 ? json_real((double)met / n) : json_null(),
        "p_budget", p->budget >= 0 ? json_real((double)within / n) : json_null(),
        "cheapest_deadline", time_json(cheapest),
        "budget_95", budget_95,
        "unfinished", (int)unfinished);
}

/* ---- driver ------------------------------------------------------------ */

static int worker_open(struct worker *w)
{
    char name[64];
    snprintf(name, sizeof(name), "prices-%u.csv", w->id);
    w->prices_path = ebb__path_join(w->p->dir, name);
    snprintf(name, sizeof(name), "availability-%u.csv", w->id);
    w->avail_path = ebb__path_join(w->p->dir, name);
    w->path = calloc(w->p->n_steps, sizeof(*w->path));
    w->starts = calloc(PLAN_MAX_OUTAGES, sizeof(*w->starts));
    w->ends = calloc(PLAN_MAX_OUTAGES, sizeof(*w->ends));
    return w->prices_path && w->avail_path && w->path && w->starts && w->ends
               ? 0 : EBB_ENOMEM;
}

static void worker_close(struct worker *w)
{
    if (w->prices_path != NULL)
        unlink(w->prices_path);
    if (w->avail_path != NULL)
        unlink(w->avail_path);
    free(w->prices_path);
    free(w->avail_path);
    free(w->path);
    free(w->starts);
    free(w->ends);
}

static void worker_run(struct worker *w)
{
    for (unsigned i = w->id; i < w->p->o->samples && w->rc == 0; i += w->n) {
        w->rc = run_sample(w, i);
        w->failed_at = i;
    }
}

static void *worker_thread(void *arg)
{
    worker_run(arg);
    ebb__engine_thread_done();
    return NULL;
}

/* Runs every sample on `n` workers, the caller's thread the first; the
 * samples of a worker whose thread could not start run on the caller's.
 * The error reported is that of the lowest failed sample, the one a
 * single worker would have met first. */
static int run_samples(struct plan *p, unsigned n)
{
    struct worker *w = calloc(n, sizeof(*w));
    pthread_t *t = calloc(n, sizeof(*t));
    int *started = calloc(n, sizeof(*started));
    int rc = w && t && started ? 0 : EBB_ENOMEM;
    for (unsigned k = 0; k < n && rc == 0; k++) {
        w[k] = (struct worker){.p = p, .id = k, .n = n};
        rc = worker_open(&w[k]);
    }
    for (unsigned k = 1; k < n && rc == 0; k++)
        started[k] = pthread_create(&t[k], NULL, worker_thread, &w[k]) == 0;
    for (unsigned k = 0; k < n && rc == 0; k++)
        if (k == 0 || !started[k])
            worker_run(&w[k]);
    for (unsigned k = 1; started != NULL && k < n; k++)
        if (started[k])
            pthread_join(t[k], NULL);
    const struct worker *bad = NULL;
    for (unsigned k = 0; w != NULL && k < n; k++)
        if (w[k].rc != 0 && (bad == NULL || w[k].failed_at < bad->failed_at))
            bad = &w[k];
    if (bad != NULL) {
        rc = bad->rc;
        *p->d = bad->d;
    }
    for (unsigned k = 0; w != NULL && k < n; k++)
        worker_close(&w[k]);
    free(w);
    free(t);
    free(started);
    return rc;
}

static void close_plan(struct plan *p)
{
    if (p->dir[0] != '\0')
        rmdir(p->dir);
    for (size_t i = 0; i < p->n_series; i++)
        free(p->series[i].fc);
    free(p->series);
    free(p->avail);
    free(p->history);
    free(p->cost);
    free(p->finish);
    free(p->met);
    free(p->within);
}

static unsigned threads(const struct ebb__plan_options *o)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = o->threads > 0 ? o->threads
               : cpus > PLAN_MAX_THREADS ? PLAN_MAX_THREADS
               : cpus > 1 ? (unsigned)cpus : 1;
    return n < o->samples ? n : o->samples;
}

int ebb__plan_run(const struct ebb__plan_options *o, json_t **result,
                  struct ebb_diag *d)
{
    *result = NULL;
    if (o->samples < EBB__PLAN_SAMPLES_MIN || o->samples > EBB__PLAN_SAMPLES_MAX) {
        ebb_diag_set(d, NULL, 0, "samples: %u is out of range (%d to %d)",
                     o->samples, EBB__PLAN_SAMPLES_MIN, EBB__PLAN_SAMPLES_MAX);
        return EBB_EINVAL;
    }
    struct plan p = {.o = o, .d = d, .budget = -1,
                     .deadline = ebb__jobspec_deadline(o->job, o->now)};
    unsigned n = o->samples;
    p.cost = calloc(n, sizeof(*p.cost));
    p.finish = calloc(n, sizeof(*p.finish));
    p.met = calloc(n, sizeof(*p.met));
    p.within = calloc(n, sizeof(*p.within));
    int rc = p.cost && p.finish && p.met && p.within ? 0 : EBB_ENOMEM;
    if (rc == 0)
        rc = prepare(&p);
    if (rc == 0)
        rc = ebb__plan_tmpdir("ebb-plan", p.dir, sizeof(p.dir), d);
    if (rc == 0)
        rc = run_samples(&p, threads(o));
    if (rc == 0) {
        *result = quote(&p);
        if (*result == NULL)
            rc = EBB_ENOMEM;
    }
    if (rc == EBB_ENOMEM && d->msg[0] == '\0')
        ebb_diag_set(d, NULL, 0, "out of memory");
    close_plan(&p);
    return rc;
}
