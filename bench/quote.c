/* bench-quote: how fast `ebb plan` quotes and how well its odds hold.
 *
 * Speed: 200 samples of a 48-hour job on the shipped AWS trace, against
 * one backtest of the same job (the baseline: one sample costs about one
 * such run).
 *
 * Calibration: jobs drawn (seeded) over the shipped traces, each quoted at
 * its submit time from the history before it, then run through the
 * backtest on the real trace; how often the real cost and finish fall
 * inside the quote's p10..p90 (a calibrated band holds 80%), and the mean
 * error of p50. Nothing is fitted here: the sampler's constants were
 * chosen before this bench ran (report/plan_sample.h, docs/plan.md).
 *
 * Usage: bench-quote [--speed] [--calibration] [--jobs N] [--samples N]
 * (both parts by default; 30 jobs a trace, 50 samples a quote).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ebb/trace.h>
#include <ebb/units.h>

#include "report/backtest.h"
#include "report/plan.h"
#include "report/plan_sample.h"

#define HOUR EBB_MS_PER_HOUR
#define DAY EBB_MS_PER_DAY

static char aws_prices[1024], aws_avail[1024], catalog[1024], market_prices[1024];

static double clock_s(clockid_t which)
{
    struct timespec ts;
    clock_gettime(which, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of the whole process, every thread's. */
static double cpu_s(void)
{
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static int load_job(const char *yaml, struct ebb__job_spec *job)
{
    struct ebb_diag d = {{0}};
    if (ebb__jobspec_load_buffer("bench.yaml", yaml, strlen(yaml), job, &d) != 0) {
        fprintf(stderr, "bench-quote: %s\n", d.msg);
        return -1;
    }
    return 0;
}

struct trace_set {
    const char *name;
    const char *prices_path, *avail_path;
    struct ebb_price_trace *prices;
    struct ebb_avail_trace *avail;
};

static int open_set(struct trace_set *t)
{
    struct ebb_diag d = {{0}};
    if (ebb_price_trace_load(t->prices_path, &t->prices, &d) != 0 ||
        (t->avail_path != NULL && ebb_avail_trace_load(t->avail_path, &t->avail, &d) != 0)) {
        fprintf(stderr, "bench-quote: %s\n", d.msg);
        return -1;
    }
    return 0;
}

static int quote(const struct trace_set *t, const struct ebb__job_spec *job,
                 ebb_time_ms at, unsigned samples, json_t **q)
{
    struct ebb__plan_options o = {
        .prices = t->prices, .availability = t->avail,
        .availability_replayed = t->avail != NULL,
        .catalog = catalog, .job = job, .now = at, .samples = samples, .seed = 1,
    };
    struct ebb_diag d = {{0}};
    int rc = ebb__plan_run(&o, q, &d);
    if (rc != 0)
        fprintf(stderr, "bench-quote: plan: %s\n", d.msg);
    return rc;
}

/* The job on the real trace: its cost and finish (INT64_MAX: unfinished). */
static int real_run(const struct trace_set *t, const struct ebb__job_spec *job,
                    ebb_time_ms at, double *cost, ebb_time_ms *finish)
{
    struct ebb__backtest_options o = {
        .prices = t->prices_path, .availability = t->avail_path,
        .align_availability = t->avail_path != NULL, .catalog = catalog,
        .job = job, .job_submit = at, .seed = 1, .no_oracle = 1,
    };
    json_t *r = NULL;
    struct ebb_diag d = {{0}};
    int rc = ebb__backtest_run(&o, &r, &d);
    if (rc != 0) {
        fprintf(stderr, "bench-quote: backtest: %s\n", d.msg);
        return rc;
    }
    json_t *j = json_array_get(json_object_get(r, "jobs"), 0);
    *cost = json_number_value(json_object_get(j, "cost_usd"));
    const char *f = json_string_value(json_object_get(j, "finished_at"));
    if (f == NULL || ebb_parse_time(f, finish) != 0)
        *finish = INT64_MAX;
    json_decref(r);
    return 0;
}

/* ---- speed --------------------------------------------------------------- */

static int speed(struct trace_set *aws)
{
    static const char *const jobs[2] = {
        "name: quote48\nrun: [true]\nwork: 48h\ndeadline: 96h\nmarket: spot-fallback\n"
        "resources: {instance_types: [p3.2xlarge]}\ncheckpoint: {every: 1h}\n",
        "name: quote48-any\nrun: [true]\nwork: 48h\ndeadline: 96h\nmarket: spot-fallback\n"
        "checkpoint: {every: 1h}\n",
    };
    static const char *const what[2] = {"p3.2xlarge, 6 regions", "any instance type"};
    ebb_time_ms at;
    ebb_parse_time("2020-02-01T00:00:00Z", &at);
    printf("speed: 200 samples of a 48 h job (96 h deadline, spot-fallback), "
           "AWS trace from %s\n", "2020-02-01");
    printf("| job | one backtest | 200-sample quote (wall) | CPU | CPU per sample | "
           "ratio (wall) |\n|---|---|---|---|---|---|\n");
    for (int i = 0; i < 2; i++) {
        struct ebb__job_spec job;
        if (load_job(jobs[i], &job) != 0)
            return -1;
        double cost;
        ebb_time_ms fin;
        double t0 = now_s();
        if (real_run(aws, &job, at, &cost, &fin) != 0)
            return -1;
        double t1 = now_s(), c1 = cpu_s();
        json_t *q = NULL;
        if (quote(aws, &job, at, 200, &q) != 0)
            return -1;
        double t2 = now_s(), c2 = cpu_s();
        printf("| %s | %.3f s | %.2f s | %.2f s | %.1f ms | %.0fx |\n", what[i], t1 - t0,
               t2 - t1, c2 - c1, (c2 - c1) / 200 * 1e3, (t2 - t1) / (t1 - t0));
        json_decref(q);
        ebb__jobspec_free(&job);
    }
    return 0;
}

/* ---- calibration ----------------------------------------------------------- */

struct score {
    unsigned n, cost_in, cost_below, cost_above, finish_in, finish_known;
    unsigned finish_wide; /* of finish_known: bands wider than a second */
    double cost_err, finish_err_h;
};

static void draw_aws(struct ebb__plan_rng *r, char *yaml, size_t len, ebb_time_ms *at)
{
    static const char *const types[] = {"p2.xlarge", "p3.2xlarge", "p3.8xlarge"};
    static const char *const zones[] = {"", "us-east-1c", "us-east-1b"};
    int work = 4 + (int)(ebb__plan_rng_uniform(r) * 21);         /* 4..24 h */
    double slack = 1.5 + 1.5 * ebb__plan_rng_uniform(r);         /* 1.5..3x */
    const char *type = types[(int)(ebb__plan_rng_uniform(r) * 3)];
    const char *zone = zones[(int)(ebb__plan_rng_uniform(r) * 3)];
    /* p2 runs a V100 hour's work in about 6 hours: its deadline covers
     * that (the catalog's speed), so every job can finish on demand. */
    double speed = strcmp(type, "p2.xlarge") == 0 ? 1.0 / 6.3
                 : strcmp(type, "p3.8xlarge") == 0 ? 3.84 : 1.0;
    long deadline_h = (long)ceil(work / speed * slack) + 1;
    if (deadline_h < work + 1) /* a spec's deadline covers its work */
        deadline_h = work + 1;
    ebb_parse_time("2020-01-20T00:00:00Z", at);
    /* Submissions 2020-01-20 .. 2020-02-18: four weeks of history before,
     * room for the window after. */
    *at += (ebb_time_ms)(ebb__plan_rng_uniform(r) * 29 * DAY) / HOUR * HOUR;
    char zline[80] = "";
    if (zone[0] != '\0')
        snprintf(zline, sizeof(zline), ", zones: [%s]", zone);
    snprintf(yaml, len, "name: cal\nrun: [true]\nwork: %dh\ndeadline: %ldh\n"
             "market: spot-fallback\nresources: {instance_types: [%s]%s}\n"
             "checkpoint: {every: 1h}\n", work, deadline_h, type, zline);
}

static void draw_market(struct ebb__plan_rng *r, char *yaml, size_t len, ebb_time_ms *at)
{
    static const char *const gpus[] = {"H100_80GB_SXM5", "A100_80GB_SXM4",
                                       "A100_80GB_PCIe", "GH200_96GB"};
    int work = 4 + (int)(ebb__plan_rng_uniform(r) * 29);          /* 4..32 h */
    int window = 24 + (int)(ebb__plan_rng_uniform(r) * 49);       /* 1..3 days */
    if (window < work + 2)
        window = work + 2;
    const char *gpu = gpus[(int)(ebb__plan_rng_uniform(r) * 4)];
    ebb_parse_time("2025-10-24T00:00:00Z", at);
    *at += (ebb_time_ms)(ebb__plan_rng_uniform(r) * 12 * DAY) / HOUR * HOUR;
    snprintf(yaml, len, "name: cal\nrun: [true]\nwork: %dh\ndeadline: %dh\n"
             "market: spot-fallback\nrestart_overhead: 5m\nresources: "
             "{providers: [primeintellect-aggregate], instance_types: [%s]}\n"
             "checkpoint: {every: 1h}\n", work, window, gpu);
}

static double qnum(const json_t *q, const char *k, const char *p)
{
    return json_number_value(json_object_get(json_object_get(q, k), p));
}

static ebb_time_ms qtime(const json_t *q, const char *p)
{
    ebb_time_ms t;
    const char *s = json_string_value(json_object_get(json_object_get(q, "finish"), p));
    return s != NULL && ebb_parse_time(s, &t) == 0 ? t : INT64_MAX;
}

static int calibrate(struct trace_set *t, int aws, unsigned jobs, unsigned samples,
                     struct score *s)
{
    struct ebb__plan_rng r;
    ebb__plan_rng_seed(&r, 2026, aws);
    for (unsigned i = 0; i < jobs; i++) {
        char yaml[512];
        ebb_time_ms at;
        (aws ? draw_aws : draw_market)(&r, yaml, sizeof(yaml), &at);
        struct ebb__job_spec job;
        if (load_job(yaml, &job) != 0)
            return -1;
        json_t *q = NULL;
        double cost;
        ebb_time_ms fin;
        if (quote(t, &job, at, samples, &q) != 0 || real_run(t, &job, at, &cost, &fin) != 0) {
            ebb__jobspec_free(&job);
            json_decref(q);
            return -1;
        }
        /* A band of width 0 holds the real value when it equals it; a
         * thousandth of a cent absorbs the rounding of the figures. */
        double lo = qnum(q, "cost_usd", "p10") - 1e-5, hi = qnum(q, "cost_usd", "p90") + 1e-5;
        s->n++;
        s->cost_in += cost >= lo && cost <= hi;
        s->cost_below += cost < lo;
        s->cost_above += cost > hi;
        s->cost_err += fabs(qnum(q, "cost_usd", "p50") - cost) / (cost > 0 ? cost : 1);
        ebb_time_ms f10 = qtime(q, "p10"), f50 = qtime(q, "p50"), f90 = qtime(q, "p90");
        if (fin != INT64_MAX && f50 != INT64_MAX) {
            s->finish_known++;
            s->finish_in += fin >= f10 - 1000 && fin <= f90 + 1000;
            s->finish_wide += f90 - f10 > 1000;
            s->finish_err_h += fabs((double)(f50 - fin)) / HOUR;
        }
        json_decref(q);
        ebb__jobspec_free(&job);
        fprintf(stderr, "\r%s: %u/%u", t->name, i + 1, jobs);
    }
    fprintf(stderr, "\n");
    return 0;
}

static void print_score(const char *name, const struct score *s)
{
    printf("| %s | %u | %.0f%% (%u below, %u above) | %.0f%% of %u (%u bands wider "
           "than 0) | %.1f%% | %.2f h |\n",
           name, s->n, 100.0 * s->cost_in / s->n, s->cost_below, s->cost_above,
           s->finish_known ? 100.0 * s->finish_in / s->finish_known : 0, s->finish_known,
           s->finish_wide,
           100.0 * s->cost_err / s->n,
           s->finish_known ? s->finish_err_h / s->finish_known : 0);
}

int main(int argc, char **argv)
{
    int want_speed = 0, want_cal = 0;
    unsigned jobs = 30, samples = 50;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--speed") == 0)
            want_speed = 1;
        else if (strcmp(argv[i], "--calibration") == 0)
            want_cal = 1;
        else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
            jobs = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
            samples = (unsigned)strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench-quote [--speed] [--calibration] [--jobs N] "
                    "[--samples N]\n");
            return 2;
        }
    }
    if (!want_speed && !want_cal)
        want_speed = want_cal = 1;
    /* The plugins come from the build tree, unless EBB_PLUGIN_PATH says. */
    if (setenv("EBB_PLUGIN_PATH", EBB_BENCH_BUILD_ROOT, 0) != 0)
        return 1;
    const char *root = EBB_BENCH_SOURCE_ROOT;
    snprintf(aws_prices, sizeof(aws_prices), "%s/data/traces/"
             "aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv", root);
    snprintf(aws_avail, sizeof(aws_avail), "%s/data/availability_aws_2020-03.csv", root);
    snprintf(catalog, sizeof(catalog), "%s/data/catalog.csv", root);
    snprintf(market_prices, sizeof(market_prices), "%s/bench/scenarios/market-prices.csv", root);
    struct trace_set aws = {"aws", aws_prices, aws_avail, NULL, NULL};
    struct trace_set market = {"marketplace", market_prices, NULL, NULL, NULL};
    int rc = open_set(&aws) == 0 && open_set(&market) == 0 ? 0 : 1;
    if (rc == 0 && want_speed)
        rc = speed(&aws) != 0;
    if (rc == 0 && want_cal) {
        struct score sa = {0}, sm = {0};
        double t0 = now_s();
        rc = calibrate(&aws, 1, jobs, samples, &sa) != 0 ||
             calibrate(&market, 0, jobs, samples, &sm) != 0;
        if (rc == 0) {
            printf("\ncalibration: %u jobs a trace, %u samples a quote, policy "
                   "deadline (%.0f s)\n", jobs, samples, now_s() - t0);
            printf("| trace | jobs | cost in p10..p90 | finish in p10..p90 | "
                   "cost p50 error | finish p50 error |\n|---|---|---|---|---|---|\n");
            print_score("aws p2/p3 + availability (replayed)", &sa);
            print_score("marketplace (no availability)", &sm);
            struct score all = sa;
            all.n += sm.n;
            all.cost_in += sm.cost_in;
            all.cost_below += sm.cost_below;
            all.cost_above += sm.cost_above;
            all.finish_in += sm.finish_in;
            all.finish_known += sm.finish_known;
            all.finish_wide += sm.finish_wide;
            all.cost_err += sm.cost_err;
            all.finish_err_h += sm.finish_err_h;
            print_score("both", &all);
        }
    }
    ebb_price_trace_free(aws.prices);
    ebb_avail_trace_free(aws.avail);
    ebb_price_trace_free(market.prices);
    return rc;
}
