/* `ebb plan`'s sampler (src/report/plan_sample.c) and runner
 * (src/report/plan.c): seeded determinism, the quantiles of a known
 * distribution, outages at the hazard's rate, and a flat certain future
 * quoted exactly at the deterministic backtest's cost. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebb/units.h>

#include "market/forecast.h"
#include "market/speed_est.h"
#include "report/backtest.h"
#include "report/plan.h"
#include "report/plan_sample.h"

#define HOUR EBB_MS_PER_HOUR
#define USD EBB_MICROS_PER_UNIT
/* 2020-01-01T00:00:00Z */
#define T0 INT64_C(1577836800000)

/* ---- the sampler ------------------------------------------------------- */

static void same_seed_same_path(void **state)
{
    (void)state;
    struct ebb_forecast_point fc[48];
    for (size_t k = 0; k < 48; k++)
        fc[k] = (struct ebb_forecast_point){0, 1 * USD, 2 * USD, 4 * USD};
    ebb_micros a[48], b[48], c[48], d[48];
    struct ebb__plan_rng r;
    ebb__plan_rng_seed(&r, 7, 3);
    ebb__plan_sample_path(fc, 48, 0.9, &r, a);
    ebb__plan_rng_seed(&r, 7, 3);
    ebb__plan_sample_path(fc, 48, 0.9, &r, b);
    ebb__plan_rng_seed(&r, 7, 4);
    ebb__plan_sample_path(fc, 48, 0.9, &r, c);
    ebb__plan_rng_seed(&r, 8, 3);
    ebb__plan_sample_path(fc, 48, 0.9, &r, d);
    assert_memory_equal(a, b, sizeof(a));
    assert_memory_not_equal(a, c, sizeof(a));
    assert_memory_not_equal(a, d, sizeof(a));
}

static int cmp_micros(const void *x, const void *y)
{
    ebb_micros a = *(const ebb_micros *)x, b = *(const ebb_micros *)y;
    return (a > b) - (a < b);
}

/* Many paths drawn under one forecast point: their empirical p10, p50 and
 * p90 are the point's, at the first step and after the AR(1) has run. */
static void quantiles_of_the_band(void **state)
{
    (void)state;
    enum { N = 20000, STEPS = 24 };
    struct ebb_forecast_point fc[STEPS];
    for (size_t k = 0; k < STEPS; k++)
        fc[k] = (struct ebb_forecast_point){0, 1 * USD, 2 * USD, 4 * USD};
    static ebb_micros first[N], last[N];
    ebb_micros path[STEPS];
    for (unsigned i = 0; i < N; i++) {
        struct ebb__plan_rng r;
        ebb__plan_rng_seed(&r, 1, i);
        ebb__plan_sample_path(fc, STEPS, 0.8, &r, path);
        first[i] = path[0];
        last[i] = path[STEPS - 1];
    }
    ebb_micros *sets[2] = {first, last};
    for (int s = 0; s < 2; s++) {
        qsort(sets[s], N, sizeof(ebb_micros), cmp_micros);
        /* Within 3% of the true quantiles: a sample of 20,000 puts the
         * 10th percentile within about 0.4 percentage points. */
        assert_true(llabs(sets[s][N / 10] - 1 * USD) < 3 * USD / 100);
        assert_true(llabs(sets[s][N / 2] - 2 * USD) < 6 * USD / 100);
        assert_true(llabs(sets[s][9 * N / 10] - 4 * USD) < 12 * USD / 100);
        /* Never below half of p10. */
        assert_true(sets[s][0] >= USD / 2);
    }
}

static void price_at_scores(void **state)
{
    (void)state;
    struct ebb_forecast_point p = {0, 1 * USD, 2 * USD, 4 * USD};
    assert_int_equal(ebb__plan_price_at(&p, 0), 2 * USD);
    assert_int_equal(ebb__plan_price_at(&p, 1.2815515655446004), 4 * USD);
    assert_int_equal(ebb__plan_price_at(&p, -1.2815515655446004), 1 * USD);
    assert_int_equal(ebb__plan_price_at(&p, -10), USD / 2);
    struct ebb_forecast_point flat = {0, 3 * USD, 3 * USD, 3 * USD};
    assert_int_equal(ebb__plan_price_at(&flat, 2.5), 3 * USD);
}

/* Outages come at the hazard's rate, in order, not overlapping, and last
 * their mean on average. */
static void outages_at_the_hazard(void **state)
{
    (void)state;
    enum { MAX = 4096 };
    static ebb_time_ms s[MAX], e[MAX];
    struct ebb__plan_rng r;
    ebb__plan_rng_seed(&r, 5, 0);
    /* 0.5 an hour of up time with 1 h outages: one every 3 h on average,
     * 3,333 over 10,000 hours. */
    size_t n = ebb__plan_sample_outages(0.5, HOUR, T0, T0 + 10000 * HOUR, &r,
                                        s, e, MAX);
    assert_true(n > 3100 && n < 3550);
    double down = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(s[i] < e[i]);
        assert_true(s[i] > T0 && s[i] < T0 + 10000 * HOUR);
        if (i > 0)
            assert_true(s[i] > e[i - 1]);
        down += (double)(e[i] - s[i]);
    }
    assert_true(fabs(down / (double)n / HOUR - 1.0) < 0.1);
    assert_int_equal(ebb__plan_sample_outages(0, HOUR, T0, T0 + 100 * HOUR, &r,
                                              s, e, MAX), 0);
    assert_int_equal(ebb__plan_sample_outages(0.5, HOUR, T0, T0 + 10000 * HOUR,
                                              &r, s, e, 10), 10);
}

/* ---- the runner -------------------------------------------------------- */

static const char *data_path(const char *name, char *buf, size_t len)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    snprintf(buf, len, "%s/%s", root ? root : ".", name);
    return buf;
}

/* A price trace at `path`: p3.2xlarge in us-east-1a hourly for 10 days
 * from T0, at 0.9 USD flat (wave 0) or swinging by `wave` USD a day. */
static void write_trace(const char *path, double wave)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("timestamp_utc,provider,region,zone,instance_type,product,"
          "price_usd_per_hour\n", f);
    for (int h = 0; h < 240; h++) {
        char t[EBB_TIME_BUFSZ];
        double p = 0.9 + wave * sin(6.283185307179586 * h / 24.0) +
                   wave * ((h * 7919) % 13) / 13.0;
        fprintf(f, "%s,aws,us-east-1,us-east-1a,p3.2xlarge,Linux/UNIX,%.6f\n",
                ebb_format_time(T0 + h * HOUR, t, sizeof(t)), p);
    }
    fclose(f);
}

struct world {
    char dir[64], prices[128], catalog[1024];
    struct ebb_price_trace *trace;
    struct ebb__job_spec job;
};

static void world_open(struct world *w, double wave, const char *job_yaml)
{
    memset(w, 0, sizeof(*w));
    snprintf(w->dir, sizeof(w->dir), "/tmp/ebb-test-plan-XXXXXX");
    assert_non_null(mkdtemp(w->dir));
    snprintf(w->prices, sizeof(w->prices), "%s/prices.csv", w->dir);
    write_trace(w->prices, wave);
    data_path("tests/data/engine/catalog.csv", w->catalog, sizeof(w->catalog));
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb_price_trace_load(w->prices, &w->trace, &d), 0);
    if (ebb__jobspec_load_buffer("job.yaml", job_yaml, strlen(job_yaml),
                                 &w->job, &d) != 0)
        fail_msg("%s", d.msg);
}

static void world_close(struct world *w)
{
    ebb__jobspec_free(&w->job);
    ebb_price_trace_free(w->trace);
    unlink(w->prices);
    rmdir(w->dir);
}

static const char job_yaml[] =
    "name: quote\nrun: [true]\nwork: 8h\ndeadline: 24h\nmarket: spot\n"
    "budget: 20 USD\nresources: {instance_types: [p3.2xlarge]}\n"
    "checkpoint: {every: 1h}\n";

/* Workers of the quotes below; the quote must not depend on it. */
static unsigned workers = 1;

static json_t *quote(struct world *w, unsigned samples, uint64_t seed,
                     const char *policy, struct ebb_diag *d, int *rc)
{
    struct ebb__plan_options o = {
        .prices = w->trace, .catalog = w->catalog, .job = &w->job,
        .policy = policy, .now = T0 + 240 * HOUR, .samples = samples, .seed = seed,
        .threads = workers,
    };
    json_t *r = NULL;
    *rc = ebb__plan_run(&o, &r, d);
    return r;
}

static double q(const json_t *r, const char *what, const char *which)
{
    return json_number_value(json_object_get(json_object_get(r, what), which));
}

/* A flat history forecasts a flat future with no band and no outages:
 * every sample is the one future the backtest replays, so p10 = p50 = p90
 * = the backtest's cost, and the finish times agree too. */
static void flat_future_is_the_backtest(void **state)
{
    (void)state;
    struct world w;
    world_open(&w, 0, job_yaml);
    struct ebb_diag d = {{0}};
    int rc;
    json_t *r = quote(&w, 20, 1, "greedy", &d, &rc);
    if (rc != 0)
        fail_msg("%s", d.msg);
    struct ebb__backtest_options bo = {
        .prices = w.prices, .catalog = w.catalog, .job = &w.job,
        .job_submit = T0 + 240 * HOUR, .policy = "greedy", .seed = 1,
    };
    json_t *bt = NULL;
    if (ebb__backtest_run(&bo, &bt, &d) != 0)
        fail_msg("%s", d.msg);
    json_t *job = json_array_get(json_object_get(bt, "jobs"), 0);
    double cost = json_number_value(json_object_get(job, "cost_usd"));
    const char *finished = json_string_value(json_object_get(job, "finished_at"));
    assert_true(cost > 0);
    assert_true(fabs(q(r, "cost_usd", "p10") - cost) < 1e-6);
    assert_true(fabs(q(r, "cost_usd", "p50") - cost) < 1e-6);
    assert_true(fabs(q(r, "cost_usd", "p90") - cost) < 1e-6);
    assert_true(fabs(json_number_value(json_object_get(r, "budget_95")) - cost) < 1e-6);
    const json_t *f = json_object_get(r, "finish");
    assert_string_equal(json_string_value(json_object_get(f, "p10")), finished);
    assert_string_equal(json_string_value(json_object_get(f, "p90")), finished);
    assert_string_equal(json_string_value(json_object_get(r, "cheapest_deadline")),
                        finished);
    assert_true(json_number_value(json_object_get(r, "p_deadline")) == 1.0);
    assert_true(json_number_value(json_object_get(r, "p_budget")) == 1.0);
    assert_int_equal(json_integer_value(json_object_get(r, "samples")), 20);
    json_decref(bt);
    json_decref(r);
    world_close(&w);
}

/* A moving history gives a spread; the same seed gives the same quote,
 * also on several workers, and another seed another one. */
static void seeded_quotes(void **state)
{
    (void)state;
    struct world w;
    world_open(&w, 0.3, job_yaml);
    struct ebb_diag d = {{0}};
    int rc;
    json_t *a = quote(&w, 30, 1, "greedy", &d, &rc);
    assert_int_equal(rc, 0);
    json_t *b = quote(&w, 30, 1, "greedy", &d, &rc);
    assert_int_equal(rc, 0);
    json_t *c = quote(&w, 30, 2, "greedy", &d, &rc);
    assert_int_equal(rc, 0);
    /* Three workers share the samples out: the same quote. */
    workers = 3;
    json_t *e = quote(&w, 30, 1, "greedy", &d, &rc);
    workers = 1;
    assert_int_equal(rc, 0);
    assert_true(json_equal(a, b));
    assert_true(json_equal(a, e));
    json_decref(e);
    json_object_del(c, "seed");
    json_object_del(a, "seed");
    assert_false(json_equal(a, c));
    assert_true(q(a, "cost_usd", "p10") < q(a, "cost_usd", "p90"));
    assert_true(q(a, "cost_usd", "p10") <= q(a, "cost_usd", "p50"));
    assert_true(q(a, "cost_usd", "p90") <= json_number_value(json_object_get(a, "budget_95")));
    json_decref(a);
    json_decref(b);
    json_decref(c);
    world_close(&w);
}

/* What ebbd learned of the job's family is in the quote: a host that ran
 * the family at half the catalog's speed makes every sample run that much
 * slower there, for that much more, finishing later (a job without a
 * deadline or budget, so that nothing else cuts it short); rates that are
 * not speeds are refused with the host named. */
static void learned_speed_in_the_quote(void **state)
{
    (void)state;
    struct world w;
    world_open(&w, 0, "name: quote\nrun: [true]\nwork: 8h\nmarket: spot\n"
                      "resources: {instance_types: [p3.2xlarge]}\n");
    struct ebb_diag d = {{0}};
    int rc;
    json_t *plain = quote(&w, 4, 1, "greedy", &d, &rc);
    if (rc != 0)
        fail_msg("%s", d.msg);
    struct ebb__speed_samples s = {0};
    for (int i = 0; i < 40; i++)
        assert_true(ebb__speed_add(&s, 0.5));
    char rates[EBB__SPEED_TEXT_SIZE];
    ebb__speed_format(&s, rates, sizeof(rates));
    double speed = ebb__speed_estimate(&s, 1.0);
    struct ebb__backtest_speed learned[] = {
        {{"quote", "V100", "aws", "p3.2xlarge@us-east-1a"}, s.total, rates},
        /* Another family's, and another host's: not this job's. */
        {{"other", "V100", "aws", "p3.2xlarge@us-east-1a"}, s.total, "0.01"},
    };
    struct ebb__plan_options o = {
        .prices = w.trace, .catalog = w.catalog, .job = &w.job, .policy = "greedy",
        .now = T0 + 240 * HOUR, .samples = 4, .seed = 1, .threads = 1,
        .speeds = learned, .n_speeds = 2,
    };
    json_t *slow = NULL;
    if (ebb__plan_run(&o, &slow, &d) != 0)
        fail_msg("%s", d.msg);
    /* Billed hours: the restart overhead (5 min) plus the work at the
     * speed, at 0.90 USD/h. */
    double overhead = 5.0 / 60.0;
    double h_plain = q(plain, "cost_usd", "p50") / 0.9 - overhead;
    double h_slow = q(slow, "cost_usd", "p50") / 0.9 - overhead;
    if (fabs(h_slow - h_plain / speed) > 0.01 * h_plain / speed)
        fail_msg("%.3f h of work at speed %.3f, want %.3f h", h_slow, speed, h_plain / speed);
    assert_true(speed < 0.55);
    const char *f_plain = json_string_value(json_object_get(json_object_get(plain, "finish"),
                                                            "p50"));
    const char *f_slow = json_string_value(json_object_get(json_object_get(slow, "finish"),
                                                           "p50"));
    assert_true(strcmp(f_slow, f_plain) > 0);
    json_decref(slow);
    /* Not a list of rates. */
    learned[0].rates = "fast";
    json_t *r = NULL;
    memset(&d, 0, sizeof(d));
    assert_int_equal(ebb__plan_run(&o, &r, &d), EBB_EINVAL);
    assert_null(r);
    assert_non_null(strstr(d.msg, "the learned speed of quote on aws p3.2xlarge@us-east-1a is "
                                  "not a list of rates: \"fast\""));
    json_decref(plain);
    world_close(&w);
}

static void bad_input(void **state)
{
    (void)state;
    struct world w;
    world_open(&w, 0, job_yaml);
    struct ebb_diag d = {{0}};
    int rc;
    assert_null(quote(&w, 0, 1, NULL, &d, &rc));
    assert_int_equal(rc, EBB_EINVAL);
    assert_non_null(strstr(d.msg, "samples: 0 is out of range"));
    memset(&d, 0, sizeof(d));
    assert_null(quote(&w, EBB__PLAN_SAMPLES_MAX + 1, 1, NULL, &d, &rc));
    assert_int_equal(rc, EBB_EINVAL);
    memset(&d, 0, sizeof(d));
    assert_null(quote(&w, 2, 1, "nope", &d, &rc));
    assert_int_equal(rc, EBB_EINVAL);
    assert_non_null(strstr(d.msg, "policy: no policy named \"nope\""));
    /* Before the history begins there is nothing to plan from. */
    struct ebb__plan_options o = {
        .prices = w.trace, .catalog = w.catalog, .job = &w.job,
        .now = T0, .samples = 2, .seed = 1,
    };
    json_t *r = NULL;
    memset(&d, 0, sizeof(d));
    assert_int_equal(ebb__plan_run(&o, &r, &d), EBB_EINVAL);
    assert_non_null(strstr(d.msg, "no spot price is known before"));
    world_close(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_seed_same_path),
        cmocka_unit_test(quantiles_of_the_band),
        cmocka_unit_test(price_at_scores),
        cmocka_unit_test(outages_at_the_hazard),
        cmocka_unit_test(flat_future_is_the_backtest),
        cmocka_unit_test(seeded_quotes),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(learned_speed_in_the_quote),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
