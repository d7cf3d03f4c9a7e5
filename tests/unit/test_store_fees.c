/* Checkpoint stores in money and time, through the engine (engine_transfer.c,
 * docs/stores.md "Fees and timing"): a job with a store on the sim market
 * (aws, us-east-1) run by the test runner, whose agent the test plays.
 *
 * - storage: each durable checkpoint is billed once, bytes x time from
 *   durable to deletion (pushed out of keep, or the job's end), in exact
 *   micro-units, as a `fee` row noted `storage`; a restart reads the held
 *   ones back and bills them at their deletion, never twice;
 * - egress: the resume download is billed when it leaves the store's
 *   region or cloud (`fee`, `egress`), free in the store's own region;
 * - the restart overhead a policy sees grows by the download time, at the
 *   measured rate or the default 100 MB/s;
 * - the checkpoint interval the engine chooses (Young/Daly; a gang's at
 *   its nodes' hazard) and the transfer cost of a move in the policy's
 *   view;
 * - a job without a store: none of this. */
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
#include "market/store_prices.h"
#include "report/report.h"

#define MINUTE EBB_MS_PER_MINUTE
#define S EBB_MS_PER_SECOND
#define H EBB_MS_PER_HOUR
#define DAY EBB_MS_PER_DAY
#define GIB ((int64_t)1 << 30)

static struct budget_world world;
static struct ebb__store_prices *prices;

static void load_prices(void)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    char path[4096];
    snprintf(path, sizeof(path), "%s/data/store_prices.csv", root ? root : ".");
    struct ebb_diag d = {{0}};
    if (ebb__store_prices_load(path, &prices, &d) != 0)
        fail_msg("%s", d.msg);
}

/* A world whose ebb.yaml has store `ckpt` as `store_yaml` (indented by
 * four) and the runner running the sim market's instances. */
static struct ebb__engine *start(const char *store_yaml, ebb_time_ms at)
{
    char top[512];
    snprintf(top, sizeof(top), "run_on: {sim: runner}\nstores:\n  ckpt:\n%s",
             store_yaml);
    budget_world_start(&world, 11, at, at + DAY, "  runner: {}\n", top);
    struct ebb__engine *e = world.v.engine;
    e->opt.run_on = world.v.config->run_on;
    e->opt.n_run_on = world.v.config->n_run_on;
    load_prices();
    e->opt.store_fees = prices;
    return e;
}

static void stop(void)
{
    budget_world_stop(&world);
    ebb__store_prices_free(prices);
    prices = NULL;
}

/* A spot job on greedy with store `ckpt` (`store` 0: without one), running. */
static struct ebb__job *running_job(ebb_time_ms at, int store)
{
    struct ebb__job *job = budget_world_submit(&world, "name: f\nrun: [python, t.py]\n"
        "work: 100h\nmarket: spot\npolicy: greedy\nrestart_overhead: 2m\n"
        "checkpoint: {grace: 60s}\n");
    /* checkpoint.store is parsed by the spec reader (not this test's
     * part): set as it would be. */
    if (store)
        job->spec.checkpoint.store = strdup("ckpt");
    ebb__clock_run_until(&world.v.clock, at + MINUTE);
    assert_non_null(job->current);
    assert_true(job->current->launched);
    return job;
}

static void report(struct ebb__job *job, struct ebb__agent_report r)
{
    struct ebb__agent_reply reply;
    ebb__engine_agent_report(job, 0, &r, &reply);
}

static void checkpoint_at(struct ebb__job *job, ebb_time_ms at, int64_t bytes)
{
    ebb__clock_run_until(&world.v.clock, at);
    report(job, (struct ebb__agent_report){
        .kind = EBB__AGENT_CHECKPOINT, .fraction = -1, .path = "ckpt",
        .duration = 20 * S, .bytes = bytes, .upload_ms = 10 * S});
}

static int64_t fee(const struct ebb__job *job, const char *note, const char *what)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT coalesce(%s, 0) FROM ledger WHERE job_id "
             "= ?1 AND kind = 'fee' AND note = '%s'", what, note);
    return budget_world_sql_int(&world, sql, job->id, 0, 0);
}

/* bytes x ms x price / (2^30 x hours x 3.6e6), rounded up: the test's own
 * arithmetic, in long double (exact for these figures). */
static int64_t expect_storage(int64_t bytes, ebb_dur_ms ms, int64_t price, int hours)
{
    long double v = (long double)bytes * (long double)ms * (long double)price /
                    ((long double)GIB * hours * 3600000.0L);
    return (int64_t)ceill(v);
}

/* What the savings report (ebb report, src/report) makes of the rows the
 * engine wrote: fees, split by note into fee_storage and fee_egress. */
static void report_shows(ebb_time_ms since, ebb_time_ms until,
                         ebb_micros storage, ebb_micros egress)
{
    struct ebb__report_opts o = {.since = since, .until = until};
    struct ebb__report *r = NULL;
    struct ebb_diag d = {{0}};
    if (ebb__report_build(world.v.store, &o, &r, &d) != 0)
        fail_msg("%s", d.msg);
    assert_int_equal(r->total.fee_storage, storage);
    assert_int_equal(r->total.fee_egress, egress);
    assert_int_equal(r->total.fees, storage + egress);
    ebb__report_free(r);
}

static void storage_billed_once_from_durable_to_deletion(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    start("    url: s3://ml-ckpt/ebb\n    region: us-east-1\n", t0);
    struct ebb__job *job = running_job(t0, 1);
    report(job, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    ebb_time_ms c1 = t0 + 5 * MINUTE, c2 = c1 + 7 * MINUTE, c3 = c2 + 7 * MINUTE,
                c4 = c3 + 9 * MINUTE;
    checkpoint_at(job, c1, 100 * GIB);
    checkpoint_at(job, c2, 110 * GIB);
    checkpoint_at(job, c3, 120 * GIB);
    /* keep 3: nothing has left the store yet. */
    assert_int_equal(fee(job, "storage", "count(*)"), 0);
    checkpoint_at(job, c4, 130 * GIB);
    /* The first left when the fourth was durable: [c1, c4) at the AWS S3
     * default, 0.023 USD per GB-month of 730 hours. */
    int64_t first = expect_storage(100 * GIB, c4 - c1, 23000, 730);
    assert_true(first > 0);
    assert_int_equal(fee(job, "storage", "count(*)"), 1);
    assert_int_equal(fee(job, "storage", "sum(amount_micros)"), first);
    assert_int_equal(fee(job, "storage", "min(start_at)"), c1);
    assert_int_equal(fee(job, "storage", "max(end_at)"), c4);
    char *cur = budget_world_sql_text(&world, "SELECT currency || provider FROM "
                                      "ledger WHERE job_id = ?1 AND kind = 'fee'", job->id);
    assert_string_equal(cur, "USDaws");
    free(cur);
    /* One made durable after its instance stopped running the job (ebbd
     * completes it late): held all the same, so it is billed, and it
     * pushes the oldest out. */
    ebb_time_ms late = c4 + MINUTE;
    ebb__clock_run_until(&world.v.clock, late);
    ebb__engine_durable_checkpoint(job, &(struct ebb__agent_report){
        .kind = EBB__AGENT_CHECKPOINT, .path = "late", .bytes = 140 * GIB});
    first += expect_storage(110 * GIB, late - c2, 23000, 730);
    assert_int_equal(fee(job, "storage", "count(*)"), 2);
    assert_int_equal(fee(job, "storage", "sum(amount_micros)"), first);
    c2 = c3, c3 = c4, c4 = late;
    /* What a restart reads back (engine_recover.c): the three held, oldest
     * first, from the store's checkpoint rows; the billed one is not; and
     * the rates its agent measured (130 GiB uploaded in 10 s; the late
     * one reported no upload) with the latest write (none reported). */
    double up = job->xfer->up_rate;
    assert_true(fabs(up - 130.0 * GIB / (10 * S)) < 1e-6);
    job->xfer->n_held = 0;
    job->xfer->last_bytes = 0;
    job->xfer->up_rate = job->xfer->down_rate = 0;
    job->xfer->last_duration = 12345;
    assert_int_equal(ebb__engine_transfer_recover(job), 0);
    assert_true(fabs(job->xfer->up_rate - up) <= 0.001);
    assert_true(job->xfer->down_rate == 0);
    assert_int_equal(job->xfer->last_duration, 0);
    assert_int_equal(job->xfer->n_held, 3);
    assert_int_equal(job->xfer->held[0].at, c2);
    assert_int_equal(job->xfer->held[0].bytes, 120 * GIB);
    assert_int_equal(job->xfer->held[2].at, c4);
    assert_int_equal(job->xfer->last_bytes, 140 * GIB);
    ebb_time_ms end = c4 + 30 * MINUTE;
    ebb__clock_run_until(&world.v.clock, end);
    /* Caps count what the held ones have cost so far, before it is
     * billed: the spend the budget and the policy see. */
    ebb_micros with = ebb__engine_spent_now(job, end);
    size_t held = job->xfer->n_held;
    job->xfer->n_held = 0;
    ebb_micros without = ebb__engine_spent_now(job, end);
    job->xfer->n_held = held;
    assert_int_equal(with - without, expect_storage(120 * GIB, end - c2, 23000, 730) +
                                         expect_storage(130 * GIB, end - c3, 23000, 730) +
                                         expect_storage(140 * GIB, end - c4, 23000, 730));
    ebb_micros spent_before = job->spent;
    ebb__engine_cancel(job, "the test is done");
    ebb__clock_run_until(&world.v.clock, end + 10 * MINUTE);
    assert_true(ebb__job_state_terminal(job->state));
    /* At its end the three left are billed up to then, once. */
    ebb_time_ms ended = job->finished_at;
    int64_t all = first + expect_storage(120 * GIB, ended - c2, 23000, 730) +
                  expect_storage(130 * GIB, ended - c3, 23000, 730) +
                  expect_storage(140 * GIB, ended - c4, 23000, 730);
    assert_int_equal(fee(job, "storage", "count(*)"), 5);
    assert_int_equal(fee(job, "storage", "sum(amount_micros)"), all);
    assert_int_equal(fee(job, "egress", "count(*)"), 0);
    /* The job's spend counts the fees, as its budget does. */
    assert_true(job->spent - spent_before >= all - first);
    assert_int_equal(budget_world_sql_int(&world, "SELECT sum(amount_micros) FROM "
                                          "ledger WHERE job_id = ?1", job->id, 0, 0),
                     job->spent);
    report_shows(t0, t0 + DAY, all, 0);
    stop();
}

static void egress_billed_across_regions_not_within(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    /* A store in another AWS region, with its own prices. */
    start("    url: s3://ml-ckpt/ebb\n    region: us-west-2\n"
          "    price_per_gb_month: 0.025 USD\n    egress_per_gb: 0.02 USD\n", t0);
    struct ebb__job *job = running_job(t0, 1);
    report(job, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED,
                                           .download_bytes = 2 * GIB,
                                           .download_ms = 8 * S});
    assert_int_equal(fee(job, "egress", "count(*)"), 1);
    assert_int_equal(fee(job, "egress", "sum(amount_micros)"), 40000);
    assert_int_equal(fee(job, "egress", "max(rate_micros)"), 20000);
    /* Once per instance, whatever the agent repeats. */
    report(job, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED,
                                           .download_bytes = 2 * GIB,
                                           .download_ms = 8 * S});
    assert_int_equal(fee(job, "egress", "count(*)"), 1);
    report_shows(t0, t0 + DAY, 0, 40000);
    stop();

    /* The same job with its store in its own region: free. */
    start("    url: s3://ml-ckpt/ebb\n    region: us-east-1\n"
          "    egress_per_gb: 0.02 USD\n", t0);
    job = running_job(t0, 1);
    report(job, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED,
                                           .download_bytes = 2 * GIB,
                                           .download_ms = 8 * S});
    assert_int_equal(fee(job, "egress", "count(*)"), 0);
    stop();
}

static void restart_overhead_counts_the_download(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    start("    url: s3://ml-ckpt/ebb\n    region: us-east-1\n", t0);
    struct ebb__job *job = running_job(t0, 1);
    report(job, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    /* No checkpoint yet: the spec's 2 minutes. */
    assert_int_equal(ebb__engine_restart_overhead(job), 2 * MINUTE);
    /* 10 GB at the default 100 MB/s: 100 s more. */
    checkpoint_at(job, t0 + 5 * MINUTE, 10000000000);
    assert_int_equal(ebb__engine_restart_overhead(job), 2 * MINUTE + 100 * S);
    /* A measured download (1 GB in 2 s: 500 MB/s): 20 s more. */
    job->current->download_billed = 0;
    report(job, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED,
                                           .download_bytes = 1000000000,
                                           .download_ms = 2 * S});
    assert_int_equal(ebb__engine_restart_overhead(job), 2 * MINUTE + 20 * S);
    /* A restart of ebbd keeps the measured rate (store_rates.h). */
    job->xfer->down_rate = 0;
    assert_int_equal(ebb__engine_transfer_recover(job), 0);
    assert_int_equal(ebb__engine_restart_overhead(job), 2 * MINUTE + 20 * S);
    stop();
}

static void chosen_interval_follows_the_hazard(void **state)
{
    (void)state;
    /* sqrt(2 C M): C = 1 min, hazard 0.5/h (M = 2 h): sqrt(2 x 60000 x
     * 7200000) = 929516 ms. */
    assert_int_equal(ebb__checkpoint_interval(MINUTE, 0.5), 929516);
    /* Monotonic: a higher hazard, a shorter interval; a dearer
     * checkpoint, a longer one. */
    ebb_dur_ms last = EBB__CKPT_EVERY_CHOSEN_MAX;
    for (double hz = 0.01; hz < 100; hz *= 1.7) {
        ebb_dur_ms t = ebb__checkpoint_interval(2 * MINUTE, hz);
        assert_true(t <= last);
        assert_true(t >= EBB__CKPT_EVERY_CHOSEN_MIN);
        last = t;
    }
    assert_true(ebb__checkpoint_interval(5 * MINUTE, 1) >
                ebb__checkpoint_interval(MINUTE, 1));
    /* Clamps: no hazard known, a tiny one, an absurd one. */
    assert_int_equal(ebb__checkpoint_interval(MINUTE, 0), EBB__CKPT_EVERY_CHOSEN_MAX);
    assert_int_equal(ebb__checkpoint_interval(MINUTE, NAN), EBB__CKPT_EVERY_CHOSEN_MAX);
    assert_int_equal(ebb__checkpoint_interval(MINUTE, 1e-6), EBB__CKPT_EVERY_CHOSEN_MAX);
    assert_int_equal(ebb__checkpoint_interval(1, 1e9), EBB__CKPT_EVERY_CHOSEN_MIN);

    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    start("    url: s3://ml-ckpt/ebb\n    region: us-east-1\n", t0);
    struct ebb__job *job = running_job(t0, 1);
    /* What the launch told a provider that simulates the job (the sim):
     * the interval chosen then (the offer's hazard unknown: the longest),
     * and the speed planned with. */
    struct ebb_job_model m = ebb__engine_job_model(job, job->current, 0);
    assert_int_equal(m.checkpoint_every, EBB__CKPT_EVERY_CHOSEN_MAX);
    assert_true(m.speed == ebb__engine_speed(job, job->current->offer, NULL));
    assert_int_equal(m.work_remaining, job->work_total - job->work_saved);
    assert_int_equal(ebb__engine_job_model(job, job->current, 1).checkpoint_every, 0);
    struct ebb__offer *o = &world.v.engine->market.offers[job->current->offer];
    o->hazard = 0.5;
    /* Before any checkpoint: C = 1 minute. */
    assert_int_equal(ebb__engine_job_checkpoint_every(job), 929516);
    /* A gang of 2 is interrupted at twice the rate (M = 1 h):
     * sqrt(2 x 60000 x 3600000) = 657267 ms. */
    job->spec.nodes = 2;
    assert_int_equal(ebb__engine_job_checkpoint_every(job), 657267);
    job->spec.nodes = 1;
    /* After one: C = its 20 s write + 1 GB at the default 100 MB/s (10 s). */
    report(job, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    checkpoint_at(job, t0 + 5 * MINUTE, 1000000000);
    /* upload measured: 1e9 bytes in 10 s, the same 10 s. */
    assert_int_equal(ebb__engine_job_checkpoint_every(job),
                     (ebb_dur_ms)llround(sqrt(2.0 * 30000 * 7200000)));
    o->hazard = 2;
    assert_true(ebb__engine_job_checkpoint_every(job) <
                (ebb_dur_ms)llround(sqrt(2.0 * 30000 * 7200000)));
    /* The spec's own interval always wins. */
    job->spec.checkpoint.every = 30 * MINUTE;
    assert_int_equal(ebb__engine_job_checkpoint_every(job), 30 * MINUTE);
    stop();
}

static void moves_priced_with_their_transfer(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    start("    url: s3://ml-ckpt/ebb\n    region: us-west-2\n"
          "    egress_per_gb: 0.02 USD\n", t0);
    struct ebb__job *job = running_job(t0, 1);
    struct ebb__engine *e = world.v.engine;
    report(job, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    size_t own = job->current->offer, other = SIZE_MAX;
    for (size_t k = 0; k < e->market.n_offers; k++)
        if (k != own)
            other = k;
    assert_true(other != SIZE_MAX);
    /* No checkpoint yet: nothing travels. */
    assert_int_equal(ebb__engine_transfer_cost(job, other), 0);
    checkpoint_at(job, t0 + 5 * MINUTE, 3 * GIB);
    /* Its own offer costs no move; another (us-east-1, not the store's
     * us-west-2) the egress of 3 GB. */
    assert_int_equal(ebb__engine_transfer_cost(job, own), 0);
    assert_int_equal(ebb__engine_transfer_cost(job, other), 60000);
    stop();
}

static void no_store_no_change(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    start("    url: s3://ml-ckpt/ebb\n    region: us-west-2\n"
          "    egress_per_gb: 0.02 USD\n", t0);
    struct ebb__job *job = running_job(t0, 0);
    report(job, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED,
                                           .download_bytes = GIB,
                                           .download_ms = S});
    checkpoint_at(job, t0 + 5 * MINUTE, 0);
    struct ebb__offer *o = &world.v.engine->market.offers[job->current->offer];
    o->hazard = 1;
    assert_null(job->xfer);
    assert_int_equal(ebb__engine_restart_overhead(job), 2 * MINUTE);
    assert_int_equal(ebb__engine_job_checkpoint_every(job), 0);
    assert_int_equal(fee(job, "egress", "count(*)"), 0);
    ebb__engine_cancel(job, "the test is done");
    ebb__clock_run_until(&world.v.clock, t0 + H);
    assert_int_equal(fee(job, "storage", "count(*)"), 0);
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(storage_billed_once_from_durable_to_deletion,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(egress_billed_across_regions_not_within,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(restart_overhead_counts_the_download,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(chosen_interval_follows_the_hazard,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(moves_priced_with_their_transfer,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(no_store_no_change, budget_world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
