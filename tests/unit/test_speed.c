/* Learned speed through the engine (engine_speed.c, docs/policies.md
 * "Learned speed"): a job on the sim market (aws, us-east-1) run by the
 * test runner, whose agent the test plays, reports progress at a quarter
 * of the catalog's speed.
 *
 * - rates count only between reports in working time: not across the
 *   restart overhead, a checkpoint, or a stop;
 * - the estimate moves from the catalog's toward the real speed, is what
 *   the job's policy sees for that host, and is kept across a restart
 *   (read back from the store);
 * - the next job of the same family launches elsewhere (the slow host is
 *   no longer the cheapest per unit of work), while another family still
 *   sees the catalog's speed there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "budget_world.h"
#include "engine/internal.h"

#define MINUTE EBB_MS_PER_MINUTE
#define H EBB_MS_PER_HOUR
#define DAY EBB_MS_PER_DAY

#define WORK (100 * H)
#define REAL 0.25 /* what the host really does, against the catalog's */

static struct budget_world world;

static void start(ebb_time_ms at)
{
    budget_world_start(&world, 11, at, at + DAY, "  runner: {}\n",
                       "run_on: {sim: runner}\n");
    struct ebb__engine *e = world.v.engine;
    e->opt.run_on = world.v.config->run_on;
    e->opt.n_run_on = world.v.config->n_run_on;
}

static struct ebb__job *submit(const char *name)
{
    char yaml[256];
    snprintf(yaml, sizeof(yaml), "name: %s\nrun: [python, t.py]\nwork: 100h\n"
             "market: spot\npolicy: greedy\nrestart_overhead: 2m\n"
             "checkpoint: {grace: 60s}\n", name);
    return budget_world_submit(&world, yaml);
}

static void report(struct ebb__job *job, ebb_time_ms at, struct ebb__agent_report r)
{
    ebb__clock_run_until(&world.v.clock, at);
    assert_non_null(job->current);
    struct ebb__agent_reply reply;
    ebb__engine_agent_report(job, &r, &reply);
}

/* A progress line at `at` for `work` done on the current instance. */
static void progress(struct ebb__job *job, ebb_time_ms at, ebb_dur_ms work)
{
    report(job, at, (struct ebb__agent_report){
        .kind = EBB__AGENT_PROGRESS,
        .fraction = (double)(job->current->work_base + work) / (double)WORK});
}

static double speed_of(const struct ebb__job *job, long long *samples)
{
    return ebb__engine_speed(job, job->current->offer, samples);
}

static void rates_only_in_working_time(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    start(t0);
    struct ebb__job *job = submit("f");
    ebb__clock_run_until(&world.v.clock, t0 + MINUTE);
    assert_non_null(job->current);
    const struct ebb__offer *o = &world.v.engine->market.offers[job->current->offer];
    double catalog = o->speed;
    long long n = -1;
    assert_true(speed_of(job, &n) == catalog);
    assert_int_equal(n, 0);
    ebb_time_ms run = t0 + 2 * MINUTE;
    report(job, run, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    /* In the restart overhead (2 min) and across its end: nothing. */
    progress(job, run + MINUTE, 0);
    progress(job, run + 3 * MINUTE, (ebb_dur_ms)(MINUTE * REAL * catalog));
    assert_true(speed_of(job, &n) == catalog);
    assert_int_equal(n, 0);
    /* Ten minutes at a quarter of the speed: one rate. */
    progress(job, run + 13 * MINUTE, (ebb_dur_ms)(11 * MINUTE * REAL * catalog));
    double one = speed_of(job, &n);
    assert_int_equal(n, 1);
    double want = (EBB__SPEED_PRIOR * catalog + REAL * catalog) / (EBB__SPEED_PRIOR + 1);
    assert_true(fabs(one - want) < 1e-3 * catalog);
    /* A checkpoint pauses the work: the interval across it is not a rate. */
    report(job, run + 14 * MINUTE, (struct ebb__agent_report){
        .kind = EBB__AGENT_CHECKPOINT, .fraction = -1, .path = "ckpt"});
    progress(job, run + 15 * MINUTE, (ebb_dur_ms)(12 * MINUTE * REAL * catalog));
    speed_of(job, &n);
    assert_int_equal(n, 1);
    /* Twenty more rates, a minute apart: near the real speed. */
    for (int i = 1; i <= 20; i++)
        progress(job, run + (15 + i) * MINUTE,
                 (ebb_dur_ms)((12 + i) * MINUTE * REAL * catalog));
    double learned = speed_of(job, &n);
    assert_int_equal(n, 21);
    assert_true(fabs(learned - REAL * catalog) < 0.1 * catalog);
    /* Persisted: a row with every rate counted. */
    assert_int_equal(budget_world_sql_int(&world, "SELECT samples FROM speeds WHERE "
                                          "family = ?1", "f", 0, 0), 21);
    /* Another family still sees the catalog's speed there. */
    struct ebb__job *other = submit("g");
    assert_true(ebb__engine_speed(other, job->current->offer, &n) == catalog);
    assert_int_equal(n, 0);
    /* Read back by a new engine's table, as at ebbd's start. */
    struct ebb__engine *e = world.v.engine;
    size_t offer = job->current->offer;
    ebb__engine_speed_free(e);
    assert_true(ebb__engine_speed(job, offer, &n) == catalog);
    assert_int_equal(ebb__engine_speed_load(e), 0);
    assert_true(ebb__engine_speed(job, offer, &n) == learned);
    assert_int_equal(n, 21);
    long long pooled = 0;
    assert_true(ebb__engine_offer_speed(e, offer, &pooled) == learned);
    assert_int_equal(pooled, 21);
    budget_world_stop(&world);
}

static void the_family_moves_to_a_faster_host(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    start(t0);
    struct ebb__job *job = submit("f");
    ebb__clock_run_until(&world.v.clock, t0 + MINUTE);
    assert_non_null(job->current);
    size_t slow = job->current->offer;
    double catalog = world.v.engine->market.offers[slow].speed;
    ebb_time_ms run = t0 + 2 * MINUTE;
    report(job, run, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    for (int i = 0; i <= 20; i++)
        progress(job, run + (3 + i) * MINUTE,
                 (ebb_dur_ms)((1 + i) * MINUTE * REAL * catalog));
    assert_int_equal(job->current->offer, slow);
    /* The same family's next job: greedy takes the spot offer cheapest per
     * unit of work, no longer the slow one. A job of another family, which
     * nothing was learned for, still takes the slow one: it is the
     * cheapest per hour. */
    struct ebb__job *next = submit("f");
    struct ebb__job *other = submit("g");
    ebb__clock_run_until(&world.v.clock, run + 25 * MINUTE);
    assert_non_null(next->current);
    assert_non_null(other->current);
    assert_int_not_equal(next->current->offer, slow);
    assert_int_equal(other->current->offer, slow);
    budget_world_stop(&world);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(rates_only_in_working_time, budget_world_teardown),
        cmocka_unit_test_teardown(the_family_moves_to_a_faster_host, budget_world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
