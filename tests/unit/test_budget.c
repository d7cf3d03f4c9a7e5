/* Budget caps (src/engine/engine_budget.c, docs/budgets.md) through the
 * real engine on the virtual clock with the sim market, as `ebb backtest`
 * runs it (src/engine/vengine.c), with the teams of the test's ebb.yaml
 * handed to the engine as ebbd hands them.
 *
 * The randomised test writes a spot price trace with random spikes to a
 * temporary CSV, runs jobs with caps and a team cap through random
 * preemptions (preemption_hazard) and forced ones (preempt_after) across a
 * month boundary, and after every instant at which events ran checks that
 * no job's spend and no team's month spend passed its cap, counting the
 * running instances' cost up to that instant (src/market/billing.c) besides the
 * ledger.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebb/units.h>

#include "base/str.h"
#include "engine/engine.h"
#include "engine/vengine.h"
#include "jobs/jobspec.h"
#include "market/billing.h"
#include "store/store.h"
#include "store_peek.h"

#define MINUTE EBB_MS_PER_MINUTE
#define H EBB_MS_PER_HOUR
#define DAY EBB_MS_PER_DAY
#define USD EBB_MICROS_PER_UNIT

#define N_SEEDS 60
#define N_JOBS 4

/* ---- the world: an engine, its trace, its jobs ------------------------- */

struct world {
    struct ebb__vengine v;
    char dir[64];
    char trace[128];
    struct ebb__job *jobs[N_JOBS];
    size_t n_jobs;
    ebb_micros team_cap;
    uint64_t rng;
};

static struct world *live;
static struct world world_mem; /* not on a stack a failed test unwinds */

static uint64_t next_rand(struct world *w)
{
    /* xorshift64*: reproducible per seed. */
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return w->rng * UINT64_C(2685821657736338717);
}

/* Uniform in [lo, hi]. */
static int64_t rand_in(struct world *w, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next_rand(w) % (uint64_t)(hi - lo + 1));
}

static void world_stop(struct world *w)
{
    ebb__vengine_close(&w->v);
    if (w->trace[0] != '\0')
        unlink(w->trace);
    if (w->dir[0] != '\0')
        rmdir(w->dir);
    memset(w, 0, sizeof(*w));
    live = NULL;
}

static int teardown(void **state)
{
    (void)state;
    if (live != NULL)
        world_stop(live);
    return 0;
}

/* A price trace for two zones from `from` to `to`: a new price every 20
 * minutes, a random walk around 0.90 USD/h, and from `calm_until` on now
 * and then a spike of 2 to 12 times the price for 20 to 80 minutes. The
 * calm history keeps spikes out of the forecast, so they come as
 * surprises. */
static void write_spiky_trace(struct world *w, ebb_time_ms from,
                              ebb_time_ms calm_until, ebb_time_ms to)
{
    snprintf(w->dir, sizeof(w->dir), "/tmp/ebb-budget-XXXXXX");
    assert_non_null(mkdtemp(w->dir));
    snprintf(w->trace, sizeof(w->trace), "%s/prices.csv", w->dir);
    FILE *f = fopen(w->trace, "w");
    assert_non_null(f);
    fputs("timestamp_utc,provider,region,zone,instance_type,product,"
          "price_usd_per_hour\n", f);
    static const char *const zones[] = {"us-east-1a", "us-east-1b"};
    ebb_micros base[2] = {900000, 950000};
    int spike_left[2] = {0, 0};
    int64_t factor[2] = {1, 1};
    for (ebb_time_ms t = from; t <= to; t += 20 * MINUTE) {
        char at[40];
        ebb_format_time(t, at, sizeof(at));
        for (int z = 0; z < 2; z++) {
            base[z] += rand_in(w, -60000, 60000);
            if (base[z] < 500000)
                base[z] = 500000;
            if (base[z] > 1400000)
                base[z] = 1400000;
            if (spike_left[z] == 0 && t >= calm_until && rand_in(w, 0, 99) < 8) {
                spike_left[z] = (int)rand_in(w, 1, 4);
                factor[z] = rand_in(w, 2, 12);
            }
            ebb_micros price = base[z] * (spike_left[z] > 0 ? factor[z] : 1);
            if (spike_left[z] > 0)
                spike_left[z]--;
            fprintf(f, "%s,aws,us-east-1,%s,p3.2xlarge,Linux/UNIX,%lld.%06lld\n",
                    at, zones[z], (long long)(price / USD),
                    (long long)(price % USD));
        }
    }
    assert_int_equal(fclose(f), 0);
}

static void world_start(struct world *w, uint64_t seed, ebb_time_ms start,
                        ebb_time_ms end)
{
    memset(w, 0, sizeof(*w));
    w->rng = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
    live = w;
    write_spiky_trace(w, start - DAY, start, end + DAY);
    w->team_cap = rand_in(w, 3, 9) * USD;
    struct ebb_buf b = {0};
    ebb_buf_printf(&b, "providers:\n  sim:\n    prices: \"%s\"\n"
                    "    preemption_hazard: 0.%lld\n"
                    "    preempt_after: %lldm\n    seed: %llu\n"
                    "    checkpoint_time: 170s\n"
                    "    billing: %s\n"
                    "default_policy: greedy\n"
                    "teams:\n  ml:\n    members: [alice]\n"
                    "    budget: %lld USD\n",
                    w->trace, (long long)rand_in(w, 1, 5),
                    (long long)rand_in(w, 60, 240), (unsigned long long)seed,
                    rand_in(w, 0, 1) ? "aws-hourly" : "per-second",
                    (long long)(w->team_cap / USD));
    char *text = ebb_buf_take(&b);
    assert_non_null(text);
    struct ebb_diag d = {{0}};
    int rc = ebb__vengine_open(&w->v, "(test)", text, NULL, start, &d);
    free(text);
    if (rc != 0)
        fail_msg("%s", d.msg);
    /* What ebbd does (src/daemon/daemon.c); backtests pass no teams. */
    ebb__engine_set_budget_config(w->v.engine, w->v.config);
    ebb__clock_run_until(&w->v.clock, start);
}

/* What the job is now (engine.h's snapshot). */
static struct ebb__job_info info(const struct ebb__job *job)
{
    struct ebb__job_info i;
    ebb__engine_job_info(job, &i);
    return i;
}

static struct ebb__job *submit(struct world *w, const char *yaml)
{
    struct ebb__job_spec spec;
    struct ebb_diag d = {{0}};
    if (ebb__jobspec_load_buffer("job.yaml", yaml, strlen(yaml), &spec, &d) != 0)
        fail_msg("%s", d.msg);
    struct ebb__job *job = NULL;
    if (ebb__engine_submit(w->v.engine, &spec, yaml, 0, NULL, &job, &d) != 0) {
        ebb__jobspec_free(&spec);
        fail_msg("%s", d.msg);
    }
    w->jobs[w->n_jobs++] = job;
    return job;
}

/* ---- reading the store ------------------------------------------------- */

/* The first column of the first row of `sql`, with ?1 = text and, where
 * the statement has them, ?2 = a and ?3 = b. */

static int64_t sql_int(struct world *w, const char *sql, const char *text,
                       int64_t a, int64_t b)
{
    sqlite3 *db = ebb_test_store_db(w->v.store);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    if (sqlite3_bind_parameter_count(st) >= 2)
        sqlite3_bind_int64(st, 2, a);
    if (sqlite3_bind_parameter_count(st) >= 3)
        sqlite3_bind_int64(st, 3, b);
    int64_t v = 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* A text column of the first row, copied; "" when there is none. */
static char *sql_text(struct world *w, const char *sql, const char *text)
{
    sqlite3 *db = ebb_test_store_db(w->v.store);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    const unsigned char *v = NULL;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_text(st, 0);
    char *out = strdup(v != NULL ? (const char *)v : "");
    sqlite3_finalize(st);
    assert_non_null(out);
    return out;
}

/* ---- the invariant ------------------------------------------------------ */

/* What the job's running instance would be billed if it ended now. */
static ebb_micros running_cost(const struct world *w, const struct ebb__job *job,
                               ebb_time_ms now)
{
    struct ebb__attempt_info a;
    if (ebb__engine_job_attempt(job, &a) != 0 || !a.launched)
        return 0;
    return ebb__bill(&ebb__engine_market(w->v.engine)->offers[a.offer], a.billing,
                     a.launched_at, now, NULL, NULL);
}

/* No cap passed at `now`: each capped job's ledger plus its running
 * instance's cost so far, and team ml's ledger for this month and the
 * last (rows by the month they end in, docs/budgets.md) plus every running
 * team instance's cost. The ledger and the engine agree on each job's
 * spend. */
static void check_caps(struct world *w, ebb_time_ms now)
{
    ebb_micros team_running = 0;
    for (size_t i = 0; i < w->n_jobs; i++) {
        const struct ebb__job *job = w->jobs[i];
        ebb_micros billed = sql_int(w, "SELECT ifnull(sum(amount_micros), 0) "
                                    "FROM ledger WHERE job_id = ?1",
                                    info(job).id, 0, 0);
        assert_int_equal(billed, info(job).spent);
        ebb_micros running = running_cost(w, job, now);
        if (info(job).budget >= 0 && billed + running > info(job).budget)
            fail_msg("job %s spent %lld + %lld running > cap %lld at %lld",
                     info(job).id, (long long)billed, (long long)running,
                     (long long)info(job).budget, (long long)now);
        if (info(job).spec->team != NULL)
            team_running += running;
    }
    ebb_time_ms from, to, prev_from, prev_to;
    ebb__budget_month(now, &from, &to);
    ebb__budget_month(from - 1, &prev_from, &prev_to);
    static const char team_sql[] = "SELECT ifnull(sum(amount_micros), 0) FROM "
                                   "ledger WHERE team = ?1 AND end_at >= ?2 AND "
                                   "end_at < ?3";
    ebb_micros month = sql_int(w, team_sql, "ml", from, to);
    ebb_micros last = sql_int(w, team_sql, "ml", prev_from, prev_to);
    if (month + team_running > w->team_cap || last > w->team_cap)
        fail_msg("team ml: %lld + %lld running this month, %lld last month; "
                 "cap %lld at %lld", (long long)month, (long long)team_running,
                 (long long)last, (long long)w->team_cap, (long long)now);
}

/* Runs the clock instant by instant up to `end`, checking after each. */
static uint64_t run_checked(struct world *w, ebb_time_ms end)
{
    uint64_t instants = 0;
    for (;;) {
        ebb_time_ms due = ebb__clock_next_due(&w->v.clock);
        if (due > end)
            break;
        ebb__clock_run_until(&w->v.clock, due);
        check_caps(w, ebb__clock_now(&w->v.clock));
        instants++;
    }
    return instants;
}

/* ---- tests ---------------------------------------------------------------- */

struct tally {
    unsigned at_once, preemptions, exhausted, price_pauses, team_pauses,
        succeeded, month_wakes;
};

static void count_outcomes(struct world *w, struct tally *t)
{
    for (size_t i = 0; i < w->n_jobs; i++) {
        const struct ebb__job *job = w->jobs[i];
        t->preemptions += info(job).preemptions;
        t->exhausted += info(job).state == EBB__JOB_BUDGET_EXHAUSTED;
        t->succeeded += info(job).state == EBB__JOB_SUCCEEDED;
        t->price_pauses += (unsigned)sql_int(w, "SELECT count(*) FROM job_events "
            "WHERE job_id = ?1 AND reason LIKE 'budget: spent%'",
            info(job).id, 0, 0);
        t->at_once += (unsigned)sql_int(w, "SELECT count(*) FROM job_events "
            "WHERE job_id = ?1 AND reason LIKE '%no room%'", info(job).id, 0, 0);
        t->team_pauses += (unsigned)sql_int(w, "SELECT count(*) FROM job_events "
            "WHERE job_id = ?1 AND reason LIKE 'team ml budget:%'",
            info(job).id, 0, 0);
        /* Jobs the team's cap stopped in January that ran in February. */
        ebb_time_ms feb = ebb_days_from_civil(2020, 2, 1) * DAY;
        int stopped_in_jan = sql_int(w, "SELECT count(*) FROM job_events "
            "WHERE job_id = ?1 AND reason LIKE 'team ml budget:%' AND at < ?2",
            info(job).id, feb, 0) > 0;
        int ran_in_feb = sql_int(w, "SELECT count(*) FROM instances WHERE "
            "job_id = ?1 AND requested_at >= ?2", info(job).id, feb, 0) > 0;
        t->month_wakes += stopped_in_jan && ran_in_feb;
    }
}

static void caps_hold_through_spikes_and_preemptions(void **state)
{
    (void)state;
    /* Two days before a month's end to two days after it. */
    ebb_time_ms start = (ebb_days_from_civil(2020, 1, 30) * DAY);
    ebb_time_ms end = start + 4 * DAY;
    struct tally t = {0};
    uint64_t instants = 0;
    for (uint64_t seed = 1; seed <= N_SEEDS; seed++) {
        struct world *w = &world_mem;
        world_start(w, seed, start, end);
        static const char *const policies[] = {"greedy", "uniform-progress",
                                               "trough"};
        for (int j = 0; j < N_JOBS; j++) {
            struct ebb_buf b = {0};
            ebb_buf_printf(&b, "name: j%d\nrun: [python, train.py]\n"
                            "restart_overhead: %lldm\nwork: %lldh\n"
                            "deadline: 4d\nmarket: spot\npolicy: %s\n"
                            "checkpoint:\n  every: %lldm\n  grace: %llds\n",
                            j, (long long)rand_in(w, 1, 10),
                            (long long)rand_in(w, 2, 30),
                            policies[rand_in(w, 0, 2)],
                            (long long)rand_in(w, 10, 60),
                            (long long)rand_in(w, 180, 300));
            if (j != 3) /* one job is capped by the team only */
                ebb_buf_printf(&b, "budget: %lld.%02lld USD\n",
                                (long long)rand_in(w, 0, 5),
                                (long long)rand_in(w, 1, 99));
            if (j != 2) /* one job has no team */
                ebb_buf_printf(&b, "team: ml\n");
            char *yaml = ebb_buf_take(&b);
            assert_non_null(yaml);
            submit(w, yaml);
            free(yaml);
        }
        instants += run_checked(w, end);
        count_outcomes(w, &t);
        world_stop(w);
    }
    print_message("%d seeds, %llu instants checked: %u preemptions, %u "
                  "budget_exhausted, %u paused by price, %u by the team cap, "
                  "%u resumed next month, %u stopped without a checkpoint for a price "
                  "spike, %u succeeded\n", N_SEEDS,
                  (unsigned long long)instants, t.preemptions, t.exhausted,
                  t.price_pauses, t.team_pauses, t.month_wakes, t.at_once, t.succeeded);
    /* The runs went through what the test is about. */
    assert_true(t.preemptions > 0);
    assert_true(t.exhausted > 0);
    assert_true(t.price_pauses > 0);
    assert_true(t.team_pauses > 0);
    assert_true(t.month_wakes > 0);
    assert_true(t.at_once > 0);
    assert_true(t.succeeded > 0);
}

/* On a flat market a job runs until the next checkpoint interval no
 * longer fits its cap; it checkpoints and ends budget_exhausted (no lower
 * price can come), its checkpoint kept and the reason saying what it
 * spent of what. */
static void capped_job_ends_budget_exhausted(void **state)
{
    (void)state;
    struct world *w = &world_mem;
    ebb_time_ms start = ebb_days_from_civil(2020, 1, 1) * DAY;
    memset(w, 0, sizeof(*w));
    live = w;
    const char *root = getenv("EBB_SOURCE_ROOT");
    char text[1024];
    snprintf(text, sizeof(text), "providers:\n  sim:\n    prices: \"%s/tests/"
             "data/engine/prices_flat.csv\"\ndefault_policy: greedy\n",
             root ? root : ".");
    struct ebb_diag d = {{0}};
    if (ebb__vengine_open(&w->v, "(test)", text, NULL, start, &d) != 0)
        fail_msg("%s", d.msg);
    ebb__clock_run_until(&w->v.clock, start);
    /* 0.90 USD/h: 30m of work cost 0.45 USD; a 1.50 USD cap pays for the
     * first stretch (5m restart, 30m, 60s grace: 0.54 USD) and one more
     * (0.465), not a third. */
    struct ebb__job *job = submit(w, "name: capped\nrun: [python, train.py]\n"
        "restart_overhead: 5m\nwork: 10h\nmarket: spot\n"
        "checkpoint:\n  every: 30m\n  grace: 60s\nbudget: 1.50 USD\n");
    run_checked(w, start + DAY);

    assert_int_equal(info(job).state, EBB__JOB_BUDGET_EXHAUSTED);
    assert_false(info(job).has_instance);
    assert_true(info(job).spent <= 3 * USD / 2);
    assert_true(info(job).spent > USD);
    /* Its checkpoint is kept: the work it saved is the last one recorded. */
    assert_true(info(job).work_saved >= 60 * MINUTE);
    assert_int_equal(sql_int(w, "SELECT max(work_done_ms) FROM checkpoints "
                             "WHERE job_id = ?1", info(job).id, 0, 0),
                     info(job).work_saved);
    /* The reason, as `ebb job show` lists it with the job's events. */
    char *why = sql_text(w, "SELECT reason FROM job_events WHERE job_id = ?1 "
                         "AND to_state = 'budget_exhausted'", info(job).id);
    assert_non_null(strstr(why, "budget: exhausted, spent "));
    assert_non_null(strstr(why, " of 1.50 USD"));
    assert_non_null(strstr(why, "cheapest step"));
    free(why);
    world_stop(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(capped_job_ends_budget_exhausted, teardown),
        cmocka_unit_test_teardown(caps_hold_through_spikes_and_preemptions,
                                  teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
