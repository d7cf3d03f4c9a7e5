/* The engine (src/engine/) driven as `ebb backtest` drives it: virtual
 * clock, ":memory:" store, a registry loaded from an ebb.yaml buffer with
 * the real sim provider and the real policies (found through
 * EBB_PLUGIN_PATH), ebb__engine_new, the providers started with
 * ebb__engine_host_env, jobs submitted from YAML at the clock's time.
 *
 * Traces (tests/data/engine/, all on 2020-01-01 UTC, repeated unchanged on
 * 01-03 so the trace spans two days):
 *   prices_flat.csv  us-east-1a p3.2xlarge 0.90 USD/h, p3.8xlarge 3.60.
 *   avail_drop.csv   p3.2xlarge capacity 1, 0 from 02:00, 1 from 03:00.
 *   avail_three_drop.csv  the same with capacity 3 instead of 1.
 *   avail_none.csv   no spot capacity for either type.
 *   avail_one.csv    p3.2xlarge capacity 1 throughout.
 *   catalog.csv      on demand p3.2xlarge 3.06 (speed 1), p3.8xlarge 12.24
 *                    (speed 2); both 10 Gbps of network.
 * The sim's defaults apply (docs/sim.md): no launch latency, 30 s per
 * checkpoint, notices 120 s ahead, per-second billing. 0.90 USD/h is 250
 * micro-USD a second, 3.06 USD/h 850, 3.60 USD/h 1000.
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

#include <jansson.h>

#include <ebb/units.h>

#include "base/str.h"
#include "engine/engine.h"
#include "engine/internal.h" /* attempts, releases and ids: internals */
#include "engine/vengine.h"
#include "jobs/jobspec.h"
#include "market/billing.h"
#include "market/catalog.h"
#include "plugin/plugin.h"
#include "report/backtest.h"
#include "report/backtest_yardsticks.h"
#include "store/store.h"
#include "store_peek.h"

#define S EBB_MS_PER_SECOND
#define MINUTE EBB_MS_PER_MINUTE
#define H EBB_MS_PER_HOUR

static ebb_time_ms T0; /* 2020-01-01T00:00:00Z */

static const char *data_path(const char *name, char *buf, size_t len)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    snprintf(buf, len, "%s/tests/data/engine/%s", root ? root : ".", name);
    return buf;
}

/* ---- the fixture: what backtest.c's setup() builds ----------------------- */

/* The engine under test, built as `ebb backtest` builds it, with the
 * catalog its on-demand offers are priced from. */
struct fx {
    struct ebb__catalog *catalog;
    struct ebb__vengine v;
};

/* The fixture running now, so that a test that fails half way still
 * closes it (teardown), and leak checks stay meaningful. */
static struct fx *live;
static struct fx fx_mem; /* not on a stack a failed test unwinds */

static void fx_stop(struct fx *f)
{
    ebb__vengine_close(&f->v);
    ebb__catalog_free(f->catalog);
    f->catalog = NULL;
    live = NULL;
}

/* `extra` is appended to ebb.yaml after the sim's keys: more of them
 * (indented by four) and then top-level keys. */
static void fx_start_with(struct fx *f, const char *prices, const char *avail,
                          const char *policy, const char *extra)
{
    char path[1024];
    struct ebb_diag d = {{0}};
    memset(f, 0, sizeof(*f));
    if (ebb__catalog_load(data_path("catalog.csv", path, sizeof(path)),
                          &f->catalog, &d) != 0)
        fail_msg("%s", d.msg);
    live = f;
    struct ebb_buf b = {0};
    ebb_buf_printf(&b, "providers:\n  sim:\n    prices: \"%s\"\n",
                    data_path(prices, path, sizeof(path)));
    if (avail != NULL)
        ebb_buf_printf(&b, "    availability: \"%s\"\n",
                        data_path(avail, path, sizeof(path)));
    ebb_buf_printf(&b, "%sdefault_policy: %s\n", extra, policy);
    char *text = ebb_buf_take(&b);
    assert_non_null(text);
    int rc = ebb__vengine_open(&f->v, "(test)", text, f->catalog, T0, &d);
    free(text);
    if (rc != 0)
        fail_msg("%s", d.msg);
    ebb__clock_run_until(&f->v.clock, T0);
    assert_true(f->v.engine->market.n_offers > 0);
}

static void fx_start(struct fx *f, const char *avail, const char *policy)
{
    fx_start_with(f, "prices_flat.csv", avail, policy, "");
}

static int teardown(void **state)
{
    (void)state;
    if (live != NULL)
        fx_stop(live);
    return 0;
}

static void run_to(struct fx *f, ebb_time_ms t)
{
    ebb__clock_run_until(&f->v.clock, t);
}

/* Submits a job spec (YAML) at the clock's time. */
/* Loads `yaml` (it must load) and submits it from `workdir` (may be
 * NULL); returns the engine's answer, the job in *job (NULL when
 * refused), why in *d. */
static int submit_from(struct fx *f, const char *yaml, const char *workdir,
                       struct ebb__job **job, struct ebb_diag *d)
{
    struct ebb__job_spec spec;
    *d = (struct ebb_diag){{0}};
    if (ebb__jobspec_load_buffer("job.yaml", yaml, strlen(yaml), &spec, d) != 0)
        fail_msg("%s", d->msg);
    *job = NULL;
    int rc = ebb__engine_submit(f->v.engine, &spec, yaml, 0, workdir, job, d);
    ebb__jobspec_free(&spec); /* zeroed by the submit when it took it */
    return rc;
}

static struct ebb__job *submit(struct fx *f, const char *yaml)
{
    struct ebb__job *job;
    struct ebb_diag d;
    if (submit_from(f, yaml, NULL, &job, &d) != 0)
        fail_msg("%s", d.msg);
    return job;
}

/* ---- reading the store ------------------------------------------------- */

/* Runs `sql` with `job_id` bound to ?1 and returns the rows as text, one
 * line per row, columns separated by '|' (NULL as "NULL"). Free it. */
static char *query(struct fx *f, const char *sql, const char *job_id)
{
    sqlite3 *db = ebb_test_store_db(f->v.store);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (job_id != NULL)
        sqlite3_bind_text(st, 1, job_id, -1, SQLITE_STATIC);
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, "");
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const unsigned char *v = sqlite3_column_text(st, c);
            ebb_buf_printf(&b, "%s%s", c ? "|" : "", v ? (const char *)v : "NULL");
        }
        ebb_buf_puts(&b, "\n");
    }
    sqlite3_finalize(st);
    char *out = ebb_buf_take(&b);
    assert_non_null(out);
    return out;
}

static int64_t query_int(struct fx *f, const char *sql, const char *job_id)
{
    char *s = query(f, sql, job_id);
    int64_t v = strtoll(s, NULL, 10);
    free(s);
    return v;
}

/* The job's states in order ("pending waiting ..."), after checking that
 * every event has a reason, chains from the previous state, and starts
 * from nothing. */
static char *states(struct fx *f, const char *job_id)
{
    char *rows = query(f, "SELECT ifnull(from_state, ''), to_state, reason FROM "
                       "job_events WHERE job_id = ?1 ORDER BY seq", job_id);
    if (getenv("EBB_TEST_DUMP"))
        fprintf(stderr, "%s", rows);
    struct ebb_buf b = {0};
    char prev[32] = "";
    ebb_buf_puts(&b, "");
    for (char *line = rows; *line != '\0';) {
        char *nl = strchr(line, '\n');
        *nl = '\0';
        char *bar1 = strchr(line, '|');
        assert_non_null(bar1);
        char *bar2 = strchr(bar1 + 1, '|');
        assert_non_null(bar2);
        *bar1 = *bar2 = '\0';
        assert_string_equal(line, prev); /* from = the previous to */
        if (bar2[1] == '\0')
            fail_msg("%s -> %s has no reason", line, bar1 + 1);
        snprintf(prev, sizeof(prev), "%s", bar1 + 1);
        ebb_buf_printf(&b, "%s%s", b.len ? " " : "", bar1 + 1);
        line = nl + 1;
    }
    free(rows);
    char *out = ebb_buf_take(&b);
    assert_non_null(out);
    return out;
}

static void assert_states(struct fx *f, const struct ebb__job *job,
                          const char *want)
{
    char *got = states(f, job->id);
    assert_string_equal(got, want);
    free(got);
}

/* The ledger adds up to what the job says it spent, and the stored job
 * agrees. */
static void assert_ledger(struct fx *f, const struct ebb__job *job)
{
    ebb_micros total = -1;
    assert_int_equal(ebb__store_ledger_job_total(f->v.store, job->id, &total), 0);
    assert_int_equal(total, job->spent);
    assert_int_equal(query_int(f, "SELECT spent_micros FROM jobs WHERE id = ?1",
                               job->id), job->spent);
    /* Every instance is over and billed. */
    assert_int_equal(query_int(f, "SELECT count(*) FROM instances WHERE job_id = "
                               "?1 AND state <> 'terminated'", job->id), 0);
}

#define JOB_YAML(name, extra)                                               \
    "name: " name "\nrun: [python, train.py]\nrestart_overhead: 5m\n"       \
    "checkpoint:\n  every: 30m\n" extra

/* ---- scenarios --------------------------------------------------------- */

/* Constant spot price, unlimited capacity. */
static void one_job_on_a_flat_market(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, NULL, "greedy");
    run_to(f, T0 + H);
    /* 2h of work on the reference type: 5m overhead, 3 checkpoints of 30s
     * (at 30m, 1h and 1h30m of work), done at 03:06:30. */
    struct ebb__job *a = submit(f, JOB_YAML("flat-ref", "work: 2h\n"
        "deadline: 6h\nmarket: spot-fallback\n"
        "resources:\n  instance_types: [p3.2xlarge]\n"));
    /* The same work on p3.8xlarge (speed 2): 1h of wall time. */
    struct ebb__job *b = submit(f, JOB_YAML("flat-fast", "work: 2h\n"
        "deadline: 6h\nmarket: spot\n"
        "resources:\n  instance_types: [p3.8xlarge]\n"));
    run_to(f, T0 + 12 * H);

    assert_int_equal(a->state, EBB__JOB_SUCCEEDED);
    assert_int_equal(a->finished_at, T0 + 3 * H + 6 * MINUTE + 30 * S);
    assert_int_equal(a->spent, 7590 * 250); /* 1.8975 USD */
    assert_int_equal(a->work_saved, 2 * H);
    assert_int_equal(a->preemptions, 0);
    assert_int_equal(a->restarts, 0);
    assert_states(f, a, "pending waiting launching running succeeded");
    assert_ledger(f, a);
    char *inst = query(f, "SELECT market, zone, instance_type, state, started_at "
                       "- requested_at, ended_at - started_at FROM instances "
                       "WHERE job_id = ?1", a->id);
    assert_string_equal(inst, "spot|us-east-1a|p3.2xlarge|terminated|0|7590000\n");
    free(inst);
    char *ck = query(f, "SELECT work_done_ms / 60000 FROM checkpoints WHERE "
                     "job_id = ?1 ORDER BY at", a->id);
    assert_string_equal(ck, "30\n60\n90\n");
    free(ck);

    assert_int_equal(b->state, EBB__JOB_SUCCEEDED);
    assert_int_equal(b->finished_at, T0 + 2 * H + 6 * MINUTE + 30 * S);
    assert_int_equal(b->spent, 3990 * 1000);
    assert_states(f, b, "pending waiting launching running succeeded");
    assert_ledger(f, b);
    fx_stop(f);
}

/* Spot capacity 1 drops to 0 at 02:00 and returns at 03:00. The notice
 * comes at 01:58; the job checkpoints what it has (1h22m of work) by
 * 01:58:30, is lost at 02:00, waits, and resumes at 03:00 from 1h22m. */
static struct ebb__job *drop_scenario(struct fx *f)
{
    fx_start(f, "avail_drop.csv", "greedy");
    run_to(f, T0 + 30 * MINUTE);
    struct ebb__job *job = submit(f, JOB_YAML("through-the-drop", "work: 3h\n"
        "deadline: 12h\nmarket: spot\n"
        "resources:\n  instance_types: [p3.2xlarge]\n"));
    run_to(f, T0 + 24 * H);
    return job;
}

static void preempted_job_resumes_from_its_checkpoint(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    struct ebb__job *job = drop_scenario(f);
    assert_int_equal(job->state, EBB__JOB_SUCCEEDED);
    assert_int_equal(job->preemptions, 1);
    assert_int_equal(job->restarts, 1);
    assert_int_equal(job->attempts, 2);
    assert_states(f, job, "pending waiting launching running checkpointing "
                  "preempted waiting launching running succeeded");
    /* The notice checkpoint, then the second instance's own, counted from
     * the 1h22m it resumed from (not from zero). */
    char *ck = query(f, "SELECT at - (SELECT submitted_at FROM jobs WHERE id = "
                     "?1), work_done_ms / 60000 FROM checkpoints WHERE job_id = "
                     "?1 ORDER BY at", job->id);
    assert_string_equal(ck, "2130000|30\n3960000|60\n5310000|82\n"
                        "11130000|112\n12960000|142\n14790000|172\n");
    free(ck);
    /* Work lost: 1h23m30s done at the loss, 1h22m saved; under the notice
     * lead (120 s), as the model promises with a notice checkpoint. */
    char *inst = query(f, "SELECT started_at, ended_at, end_reason FROM "
                       "instances WHERE job_id = ?1 ORDER BY requested_at",
                       job->id);
    char want[512];
    snprintf(want, sizeof(want), "%lld|%lld|spot capacity reclaimed\n"
             "%lld|%lld|released\n",
             (long long)(T0 + 30 * MINUTE), (long long)(T0 + 2 * H),
             (long long)(T0 + 3 * H), (long long)(T0 + 4 * H + 44 * MINUTE + 30 * S));
    assert_string_equal(inst, want);
    free(inst);
    /* 3h of work: 1h38m left after the drop, 5m overhead, 3 checkpoints. */
    assert_int_equal(job->finished_at, T0 + 4 * H + 44 * MINUTE + 30 * S);
    /* 00:30-02:00 (5400 s) and 03:00-04:44:30 (6270 s) at 250 per s. */
    assert_int_equal(job->spent, (5400 + 6270) * 250);
    assert_ledger(f, job);
    fx_stop(f);
}

/* No spot capacity at all: greedy waits while slack lasts, then goes on
 * demand in time for the deadline. */
static void fallback_goes_on_demand_in_time(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, "avail_none.csv", "greedy");
    run_to(f, T0 + H);
    struct ebb__job *job = submit(f, JOB_YAML("no-spot", "work: 2h\n"
        "deadline: 3h\nmarket: spot-fallback\n"
        "resources:\n  instance_types: [p3.2xlarge]\n"));
    run_to(f, T0 + 24 * H);
    assert_int_equal(job->state, EBB__JOB_SUCCEEDED);
    assert_true(job->finished_at <= job->deadline);
    char *inst = query(f, "SELECT market, instance_type FROM instances WHERE "
                       "job_id = ?1", job->id);
    assert_string_equal(inst, "on-demand|p3.2xlarge\n");
    free(inst);
    /* Slack at 01:00 is 3h - 2h - 5m = 55m; greedy's margin is 10m, so it
     * launches at 01:45 (greedy asks again 1 ms later, when the slack is
     * below the margin rather than equal to it) and finishes 2h6m30s
     * later. */
    int64_t started = query_int(f, "SELECT started_at FROM instances WHERE "
                                "job_id = ?1", job->id);
    assert_true(started >= T0 + H + 45 * MINUTE && started < T0 + H + 45 * MINUTE + S);
    assert_int_equal(job->finished_at, started + 2 * H + 6 * MINUTE + 30 * S);
    assert_int_equal(job->spent, 7590 * 850);
    assert_ledger(f, job);
    fx_stop(f);
}

/* The on-demand policy keeps a spot-fallback job off spot even when spot
 * is cheap and plentiful; no policy puts a spot-only job on demand. */
static void markets_are_respected(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, NULL, "on-demand");
    run_to(f, T0 + H);
    struct ebb__job *job = submit(f, JOB_YAML("od-policy", "work: 2h\n"
        "deadline: 6h\nmarket: spot-fallback\n"
        "resources:\n  instance_types: [p3.2xlarge, p3.8xlarge]\n"));
    run_to(f, T0 + 24 * H);
    assert_int_equal(job->state, EBB__JOB_SUCCEEDED);
    assert_int_equal(query_int(f, "SELECT count(*) FROM instances WHERE job_id = "
                               "?1 AND market = 'spot'", job->id), 0);
    assert_int_equal(query_int(f, "SELECT count(*) FROM instances WHERE job_id = "
                               "?1 AND market = 'on-demand'", job->id), 1);
    assert_ledger(f, job);
    fx_stop(f);

    static const char *const policies[] = {"greedy", "on-demand",
                                           "uniform-progress"};
    for (size_t i = 0; i < 3; i++) {
        fx_start(f, "avail_none.csv", policies[i]);
        job = submit(f, JOB_YAML("spot-only", "work: 1h\ndeadline: 4h\n"
                                  "market: spot\n"));
        run_to(f, T0 + 24 * H);
        assert_int_equal(query_int(f, "SELECT count(*) FROM instances WHERE "
                                   "job_id = ?1", job->id), 0);
        assert_int_equal(job->spent, 0);
        assert_false(job->state == EBB__JOB_SUCCEEDED);
        fx_stop(f);
    }
}

/* The same inputs give the same history, event for event. */
static void runs_are_deterministic(void **state)
{
    (void)state;
    const char *sql = "SELECT job_id, at, ifnull(from_state, ''), to_state, "
                      "reason FROM job_events ORDER BY seq";
    const char *sql2 = "SELECT * FROM ledger ORDER BY id";
    struct fx *f = &fx_mem;
    drop_scenario(f);
    char *events1 = query(f, sql, NULL);
    char *ledger1 = query(f, sql2, NULL);
    fx_stop(f);
    drop_scenario(f);
    char *events2 = query(f, sql, NULL);
    char *ledger2 = query(f, sql2, NULL);
    fx_stop(f);
    assert_true(strlen(events1) > 200);
    assert_string_equal(events1, events2);
    assert_string_equal(ledger1, ledger2);
    free(events1);
    free(events2);
    free(ledger1);
    free(ledger2);
}

/* Capacity 1, two spot jobs: never two spot instances there at once, and
 * the second runs once the first has released the capacity. */
static void two_jobs_share_capacity_one(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, "avail_one.csv", "greedy");
    run_to(f, T0 + H);
    const char *spec = "work: 1h\ndeadline: 8h\nmarket: spot\n"
                       "resources:\n  instance_types: [p3.2xlarge]\n";
    struct ebb_buf b1 = {0}, b2 = {0};
    ebb_buf_printf(&b1, JOB_YAML("first", "%s"), spec);
    ebb_buf_printf(&b2, JOB_YAML("second", "%s"), spec);
    char *y1 = ebb_buf_take(&b1), *y2 = ebb_buf_take(&b2);
    struct ebb__job *a = submit(f, y1);
    struct ebb__job *b = submit(f, y2);
    free(y1);
    free(y2);
    run_to(f, T0 + 24 * H);

    /* No two spot instances in us-east-1a overlap in time. */
    assert_int_equal(query_int(f, "SELECT count(*) FROM instances x JOIN "
        "instances y ON x.token < y.token WHERE x.market = 'spot' AND y.market "
        "= 'spot' AND x.zone = y.zone AND x.started_at IS NOT NULL AND "
        "y.started_at IS NOT NULL AND x.started_at < ifnull(y.ended_at, "
        "9e18) AND y.started_at < ifnull(x.ended_at, 9e18)", NULL), 0);
    assert_int_equal(a->state, EBB__JOB_SUCCEEDED);
    assert_int_equal(a->finished_at, T0 + 2 * H + 5 * MINUTE + 30 * S);
    /* The second job waited: it never ran before the first was done, and
     * it did run once the capacity was free again. */
    int64_t b_start = query_int(f, "SELECT ifnull(min(started_at), 0) FROM "
                                "instances WHERE job_id = ?1", b->id);
    assert_true(b_start == 0 || b_start >= a->finished_at);
    assert_int_equal(b->state, EBB__JOB_SUCCEEDED);
    assert_int_equal(b_start, a->finished_at);
    assert_ledger(f, a);
    assert_ledger(f, b);
    fx_stop(f);
}

/* ---- against the oracle, through ebb__backtest_run --------------------- */

static void backtest_costs_at_least_the_oracle(void **state)
{
    (void)state;
    char prices[1024], avail[1024], catalog[1024], workload[1024];
    static const char *const policies[] = {"greedy", "on-demand",
                                           "uniform-progress"};
    for (size_t i = 0; i < 3; i++) {
        struct ebb__backtest_options o = {
            .prices = data_path("prices_flat.csv", prices, sizeof(prices)),
            .availability = data_path("avail_drop.csv", avail, sizeof(avail)),
            .catalog = data_path("catalog.csv", catalog, sizeof(catalog)),
            .workload = data_path("workload.yaml", workload, sizeof(workload)),
            .policy = policies[i],
            .seed = 1,
        };
        json_t *r = NULL;
        struct ebb_diag d = {{0}};
        if (ebb__backtest_run(&o, &r, &d) != 0)
            fail_msg("%s: %s", policies[i], d.msg);
        json_t *jobs = json_object_get(r, "jobs");
        assert_int_equal(json_array_size(jobs), 4);
        size_t k;
        json_t *j;
        double sum = 0;
        json_array_foreach(jobs, k, j) {
            const char *name = json_string_value(json_object_get(j, "name"));
            const char *st = json_string_value(json_object_get(j, "state"));
            double cost = json_number_value(json_object_get(j, "cost_usd"));
            json_t *oracle = json_object_get(j, "oracle_cost_usd");
            sum += cost;
            if (!json_is_number(oracle))
                fail_msg("%s %s: no oracle cost", policies[i], name);
            if (strcmp(st, "succeeded") == 0 &&
                cost < json_number_value(oracle) - 1e-6)
                fail_msg("%s %s: cost %.6f below the oracle %.6f", policies[i],
                         name, cost, json_number_value(oracle));
            if (strcmp(st, "succeeded") == 0)
                assert_true(cost > 0);
        }
        double total = json_number_value(json_object_get(r, "total_cost_usd"));
        assert_true(total > sum - 1e-6 && total < sum + 1e-6);
        json_decref(r);
    }
}

/* The budget cap holds whatever the policy says: a launch whose worst case
 * until the first checkpoint does not fit is refused (for good on a flat
 * market, where no lower price can come), and a running job is
 * stopped at a checkpoint once the next stretch could pass the cap. */
static void budget_caps_launches_and_running_jobs(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, NULL, "on-demand");
    /* On demand at 3.06 USD/h: 5m overhead + 30m of work + 90s of grace
     * could cost 1.86 USD before the first checkpoint. */
    struct ebb__job *tight = submit(f, JOB_YAML("tight", "work: 2h\n"
        "deadline: 12h\nmarket: on-demand\nbudget: 0.50 USD\n"
        "resources:\n  instance_types: [p3.2xlarge]\n"));
    struct ebb__job *some = submit(f, JOB_YAML("some", "work: 2h\n"
        "deadline: 12h\nmarket: on-demand\nbudget: 2 USD\n"
        "resources:\n  instance_types: [p3.2xlarge]\n"));
    run_to(f, T0 + 12 * H);

    /* No price on its market can ever fit: it ends, never launched. */
    assert_int_equal(tight->state, EBB__JOB_BUDGET_EXHAUSTED);
    assert_int_equal(tight->spent, 0);
    assert_int_equal(tight->attempts, 0);
    char *why = query(f, "SELECT reason FROM job_events WHERE job_id = ?1 AND "
                      "to_state = 'budget_exhausted'", tight->id);
    assert_non_null(strstr(why, "budget"));
    free(why);

    /* It ran to its first checkpoint, then the next 30 minutes could have
     * passed the cap: it was stopped with its checkpoint, under budget. */
    assert_int_not_equal(some->state, EBB__JOB_SUCCEEDED);
    assert_true(some->spent > 0);
    assert_true(some->spent <= 2 * EBB_MICROS_PER_UNIT);
    assert_int_equal(some->work_saved, 30 * MINUTE);
    assert_int_equal(some->attempts, 1);
    assert_ledger(f, some);
    char *ev = query(f, "SELECT count(*) FROM job_events WHERE job_id = ?1 AND "
                     "reason LIKE 'budget:%'", some->id);
    assert_string_not_equal(ev, "0\n");
    free(ev);
    fx_stop(f);
}

/* A market priced in another currency than the job's: with currency_rates
 * the policy and the budget see its prices in the job's currency, the
 * ledger keeps them as billed, and the job's spend adds up in its own. */
static void prices_in_another_currency_are_converted(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    const char *job_yaml = JOB_YAML("yuan", "work: 10h\nmarket: spot\n"
        "budget: 1 USD\nresources:\n  instance_types: [p3.2xlarge]\n");

    /* 0.90 CNY/h at 0.14 USD per CNY is 0.126 USD/h: about 7.9 hours of
     * the 10 fit under 1 USD. Read unconverted (0.90 USD/h) barely one
     * would. */
    fx_start_with(f, "prices_flat.csv", NULL, "greedy", "    currency: CNY\n"
                  "currency_rates: {CNY: 0.14}\n");
    ebb__engine_set_budget_config(f->v.engine, f->v.config); /* as ebbd does */
    struct ebb__job *job = submit(f, job_yaml);
    run_to(f, T0 + 24 * H);
    assert_int_equal(job->state, EBB__JOB_BUDGET_EXHAUSTED);
    assert_string_equal(job->currency, "USD");
    assert_true(job->spent <= EBB_MICROS_PER_UNIT);
    assert_true(job->spent >= 85 * EBB_MICROS_PER_UNIT / 100);
    assert_true(job->work_saved >= 6 * H);
    char *cur = query(f, "SELECT DISTINCT currency FROM ledger WHERE job_id = ?1",
                      job->id);
    assert_string_equal(cur, "CNY\n");
    free(cur);
    /* Each attempt's bill converts rounding up: at most a micro-dollar
     * more than the whole ledger converted at once. */
    ebb_micros cny = 0, usd = 0;
    assert_int_equal(ebb__store_ledger_job_total(f->v.store, job->id, &cny), 0);
    assert_int_equal(ebb__engine_convert(f->v.engine, cny, "CNY", "USD",
                                         EBB__ROUND_UP, &usd), 0);
    assert_true(job->spent >= usd && job->spent <= usd + job->attempts);
    assert_int_equal(query_int(f, "SELECT spent_micros FROM jobs WHERE id = ?1",
                               job->id), job->spent);
    fx_stop(f);

    /* At 5 USD per CNY the same trace costs 4.50 USD/h: the first stretch
     * (restart, 30 minutes, grace) cannot fit under 1 USD. */
    fx_start_with(f, "prices_flat.csv", NULL, "greedy", "    currency: CNY\n"
                  "currency_rates: {CNY: 5}\n");
    ebb__engine_set_budget_config(f->v.engine, f->v.config);
    job = submit(f, job_yaml);
    run_to(f, T0 + 2 * H);
    assert_int_equal(job->state, EBB__JOB_BUDGET_EXHAUSTED);
    assert_int_equal(job->attempts, 0);
    assert_int_equal(job->spent, 0);
    fx_stop(f);

    /* Without a rate the CNY offers are not the job's to use, and nothing
     * else may run a spot p3.2xlarge: the job is refused at submit (once
     * the market is known) rather than left waiting for ever. */
    fx_start_with(f, "prices_flat.csv", NULL, "greedy", "    currency: CNY\n");
    ebb__engine_set_budget_config(f->v.engine, f->v.config);
    struct ebb_diag d;
    assert_int_equal(submit_from(f, job_yaml, NULL, &job, &d), EBB_EINVAL);
    assert_null(job);
    assert_non_null(strstr(d.msg, "could never run"));
    assert_int_equal(f->v.engine->n_jobs, 0);
    fx_stop(f);
}

/* Under hourly billing an instance-hour costs its start's price to the
 * end, however far the price falls meanwhile: a running capped job's next
 * stretch is priced at that rate, not today's (prices_hour_spike.csv: a
 * week at 0.60 USD/h, then 6.00 from 2020-01-01T00:00 to 00:10). Priced at
 * today's 0.60 the job would run on past its first checkpoint, and by the
 * next one the hour at 6.00 would have passed its 5 USD cap. */
static void hourly_billing_prices_the_hour_at_its_start(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start_with(f, "prices_hour_spike.csv", NULL, "greedy",
                  "    billing: aws-hourly\n");
    struct ebb__job *job = submit(f, JOB_YAML("hourly", "work: 3h\n"
        "market: spot\nbudget: 5 USD\n"
        "resources:\n  instance_types: [p3.2xlarge]\n"));
    for (ebb_time_ms t = T0; t <= T0 + 6 * H; t += MINUTE) {
        run_to(f, t);
        struct ebb__budget_usage u;
        assert_int_equal(ebb__engine_job_budget(job, t, &u), 0);
        if (u.spent > 5 * EBB_MICROS_PER_UNIT)
            fail_msg("spent %lld micro-USD of a 5 USD cap at +%lld min",
                     (long long)u.spent, (long long)((t - T0) / MINUTE));
    }
    /* It stopped at its first checkpoint, within the hour at 6.00. */
    int64_t first_end = query_int(f, "SELECT ended_at FROM instances WHERE "
                                  "job_id = ?1 ORDER BY requested_at LIMIT 1",
                                  job->id);
    assert_true(first_end > T0 + 35 * MINUTE && first_end < T0 + 40 * MINUTE);
    assert_int_not_equal(job->state, EBB__JOB_SUCCEEDED);
    assert_true(job->spent <= 5 * EBB_MICROS_PER_UNIT);
    fx_stop(f);
}

/* A notice says the pool is reclaiming capacity: no new instance goes
 * into it before the reclaim (avail_three_drop.csv: capacity 3 until
 * 02:00, when all of it goes; the notice comes at 01:58). A job submitted
 * after the notice, with room for two more instances, would otherwise
 * launch there and get the same notice at once. */
static void no_launch_into_a_pool_under_notice(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, "avail_three_drop.csv", "greedy");
    run_to(f, T0 + 30 * MINUTE);
    struct ebb__job *first = submit(f, JOB_YAML("first", "work: 3h\n"
        "deadline: 12h\nmarket: spot\n"
        "resources:\n  instance_types: [p3.2xlarge]\n"));
    run_to(f, T0 + 2 * H - MINUTE);
    assert_int_equal(first->state, EBB__JOB_CHECKPOINTING);
    struct ebb__job *late = submit(f, JOB_YAML("late", "work: 1h\n"
        "deadline: 12h\nmarket: spot\n"
        "resources:\n  instance_types: [p3.2xlarge]\n"));
    run_to(f, T0 + 2 * H + 30 * MINUTE);
    assert_int_equal(late->state, EBB__JOB_WAITING);
    assert_int_equal(late->attempts, 0);
    run_to(f, T0 + 24 * H);
    assert_int_equal(late->state, EBB__JOB_SUCCEEDED);
    assert_int_equal(late->preemptions, 0);
    assert_int_equal(late->attempts, 1);
    assert_int_equal(first->state, EBB__JOB_SUCCEEDED);
    fx_stop(f);
}

/* A job that waits because the only pool is paused for new launches (a
 * notice there, no capacity, a refused host: unavailable_until) is planned
 * again when the pause ends, though nothing else happens on the market
 * then (the flat trace's next row is two days on). */
static void a_paused_pool_wakes_its_waiting_job(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, NULL, "greedy");
    run_to(f, T0 + 10 * MINUTE);
    struct ebb__market *m = &f->v.engine->market;
    for (size_t i = 0; i < m->n_offers; i++)
        if (strcmp(m->offers[i].instance_type, "p3.2xlarge") == 0)
            m->offers[i].unavailable_until = T0 + 40 * MINUTE;
    m->version++;
    struct ebb__job *job = submit(f, JOB_YAML("paused", "work: 1h\nmarket: spot\n"
        "resources:\n  instance_types: [p3.2xlarge]\n"));
    run_to(f, T0 + 39 * MINUTE);
    assert_int_equal(job->state, EBB__JOB_WAITING);
    assert_int_equal(job->attempts, 0);
    run_to(f, T0 + 41 * MINUTE);
    assert_int_equal(job->attempts, 1);
    run_to(f, T0 + 24 * H);
    assert_int_equal(job->state, EBB__JOB_SUCCEEDED);
    fx_stop(f);
}

/* A terminate the provider fails leaves the instance the job's: it is
 * asked again after 10 s, then 20 s, and billed until it is gone, never
 * forgotten while it may still run (the sim fails the first two). The
 * cancel first lets the job checkpoint (the sim takes 30 s), so the
 * terminates go at +30 s, +40 s and +60 s. */
static void failed_terminate_is_asked_again(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start_with(f, "prices_flat.csv", NULL, "greedy",
                  "    failed_terminations: 2\n");
    struct ebb__job *job = submit(f, JOB_YAML("refused-terminate", "work: 2h\n"
        "market: spot\nresources:\n  instance_types: [p3.2xlarge]\n"));
    run_to(f, T0 + 30 * MINUTE);
    assert_int_equal(job->state, EBB__JOB_RUNNING);
    assert_int_equal(ebb__engine_cancel(job, "cancelled by the test"), 0);
    run_to(f, T0 + 30 * MINUTE + 50 * S);
    assert_non_null(job->current); /* asked twice, still there */
    assert_int_equal(job->current->terminate_failures, 2);
    run_to(f, T0 + 2 * H);
    assert_int_equal(job->state, EBB__JOB_CANCELLED);
    int64_t ended = query_int(f, "SELECT ended_at FROM instances WHERE job_id = ?1",
                              job->id);
    assert_true(ended >= T0 + 31 * MINUTE);
    assert_true(ended < T0 + 32 * MINUTE);
    assert_ledger(f, job);
    fx_stop(f);
}

/* A provider that refuses every launch: each failure is a failed start,
 * tried again after 1 minute, doubling, and the job fails after
 * EBB__MAX_FAILED_STARTS launches in a row; nothing is billed. */
static void launch_that_always_fails_gives_up(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start_with(f, "prices_flat.csv", NULL, "greedy",
                  "    failed_launches: 1000\n");
    struct ebb__job *job = submit(f, JOB_YAML("refused-launch", "work: 2h\n"
        "market: spot\nresources:\n  instance_types: [p3.2xlarge]\n"));
    run_to(f, T0 + 30 * S);
    assert_int_equal(job->state, EBB__JOB_WAITING);
    assert_non_null(strstr(job->waiting_reason, "launch on spot p3.2xlarge"));
    assert_non_null(strstr(job->waiting_reason, "trying again at"));
    run_to(f, T0 + 24 * H);
    assert_int_equal(job->state, EBB__JOB_FAILED);
    assert_int_equal(job->attempts, EBB__MAX_FAILED_STARTS);
    assert_int_equal(query_int(f, "SELECT count(*) FROM instances WHERE job_id = ?1 "
                               "AND state = 'failed'", job->id), EBB__MAX_FAILED_STARTS);
    char *asked = query(f, "SELECT requested_at FROM instances WHERE job_id = ?1 "
                        "ORDER BY requested_at", job->id);
    char *p = asked;
    int64_t prev = strtoll(p, &p, 10);
    for (unsigned n = 1; n < EBB__MAX_FAILED_STARTS; n++) {
        int64_t at = strtoll(p, &p, 10);
        assert_true(at - prev >= ebb__engine_retry_backoff(n));
        assert_true(at - prev < ebb__engine_retry_backoff(n) + MINUTE);
        prev = at;
    }
    free(asked);
    char *why = query(f, "SELECT reason FROM job_events WHERE job_id = ?1 AND "
                      "to_state = 'failed'", job->id);
    assert_non_null(strstr(why, "launches in a row never started the job"));
    free(why);
    assert_int_equal(job->spent, 0);
    fx_stop(f);
}

/* Two refused launches, then one that works: the job runs to its end. */
static void launch_failures_then_success(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start_with(f, "prices_flat.csv", NULL, "greedy",
                  "    failed_launches: 2\n");
    struct ebb__job *job = submit(f, JOB_YAML("refused-twice", "work: 2h\n"
        "market: spot\nresources:\n  instance_types: [p3.2xlarge]\n"));
    run_to(f, T0 + 12 * H);
    assert_int_equal(job->state, EBB__JOB_SUCCEEDED);
    assert_int_equal(job->attempts, 3);
    assert_int_equal(job->start_failures, 0);
    assert_int_equal(query_int(f, "SELECT count(*) FROM instances WHERE job_id = ?1 "
                               "AND state = 'failed'", job->id), 2);
    ebb_micros total = -1;
    assert_int_equal(ebb__store_ledger_job_total(f->v.store, job->id, &total), 0);
    assert_int_equal(total, job->spent);
    assert_true(job->spent > 0);
    fx_stop(f);
}

/* A job that cannot run (no spot capacity at all) waits with a reason and
 * ends deadline_missed when its deadline passes. */
static void deadline_passes_while_waiting(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, "avail_none.csv", "greedy");
    struct ebb__job *job = submit(f, JOB_YAML("no-capacity", "work: 2h\n"
        "deadline: 5h\nmarket: spot\nresources:\n  instance_types: [p3.2xlarge]\n"));
    run_to(f, T0 + H);
    assert_int_equal(job->state, EBB__JOB_WAITING);
    struct ebb__job_info info;
    ebb__engine_job_info(job, &info);
    assert_non_null(info.waiting_reason);
    assert_true(strlen(info.waiting_reason) > 0);
    run_to(f, T0 + 5 * H - S);
    assert_int_equal(job->state, EBB__JOB_WAITING);
    run_to(f, T0 + 5 * H);
    assert_int_equal(job->state, EBB__JOB_DEADLINE_MISSED);
    assert_int_equal(job->finished_at, T0 + 5 * H);
    ebb__engine_job_info(job, &info);
    assert_null(info.waiting_reason);
    fx_stop(f);
}

/* An instance nothing waits for (here the one the market took at 02:00,
 * released after its loss) is terminated again when the provider fails
 * the first time, 10 s later, and then forgotten. */
static void failed_release_is_asked_again(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start_with(f, "prices_flat.csv", "avail_drop.csv", "greedy",
                  "    failed_terminations: 1\n");
    run_to(f, T0 + 30 * MINUTE);
    struct ebb__job *job = submit(f, JOB_YAML("lost", "work: 3h\n"
        "deadline: 12h\nmarket: spot\n"
        "resources:\n  instance_types: [p3.2xlarge]\n"));
    run_to(f, T0 + 2 * H + 5 * S);
    assert_int_equal(job->preemptions, 1);
    assert_false(ebb_list_empty(&f->v.engine->releases)); /* failed once, waiting */
    run_to(f, T0 + 2 * H + 15 * S);
    assert_true(ebb_list_empty(&f->v.engine->releases));
    run_to(f, T0 + 24 * H);
    assert_int_equal(job->state, EBB__JOB_SUCCEEDED);
    fx_stop(f);
}

/* Ids are short hashes: when the next one is taken (here by a row put
 * there first), the submit draws another instead of failing. */
static void a_taken_id_is_drawn_again(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, NULL, "greedy");
    struct ebb__engine *e = f->v.engine;
    ebb_time_ms now = ebb__clock_now(&f->v.clock);
    char taken[32];
    ebb__short_id("j", "clash", now, e->id_seq + 1, taken, sizeof(taken));
    struct ebb__job_row row = {
        .id = taken, .name = "earlier", .spec_yaml = "", .spec_json = "{}",
        .state = "succeeded", .policy = "greedy", .submitted_at = now,
        .updated_at = now, .work_ms = H, .budget = -1, .currency = "USD",
    };
    assert_int_equal(ebb__store_job_insert(f->v.store, &row), 0);
    assert_int_equal(ebb__store_job_insert(f->v.store, &row), EBB_EEXISTS);
    struct ebb__job *job = submit(f, JOB_YAML("clash", "work: 1h\nmarket: spot\n"));
    assert_string_not_equal(job->id, taken);
    assert_int_equal(query_int(f, "SELECT count(*) FROM jobs WHERE id = ?1", job->id), 1);
    char *name = query(f, "SELECT name FROM jobs WHERE id = ?1", taken);
    assert_string_equal(name, "earlier\n");
    free(name);
    fx_stop(f);
}

/* A relative checkpoint.dir is the job's: resolved below its working
 * directory when the job is made, stored so, and refused when the submit
 * names no working directory (#16 point 7: it was resolved wherever ebbd
 * and the agent ran, and every resume started from zero). */
static void a_relative_checkpoint_dir_lies_below_the_workdir(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, NULL, "greedy");
    const char *yaml = JOB_YAML("rel", "  dir: runs/a/../ckpt\nwork: 1h\nmarket: spot\n");
    struct ebb_diag d;
    struct ebb__job *job;
    assert_int_equal(submit_from(f, yaml, NULL, &job, &d), EBB_EINVAL);
    assert_string_equal(d.msg, "job.yaml: checkpoint.dir \"runs/a/../ckpt\" is relative, "
                               "and the submit names no working directory to put it "
                               "below: write an absolute path");
    assert_int_equal(query_int(f, "SELECT count(*) FROM jobs", NULL), 0);
    assert_int_equal(submit_from(f, yaml, "/home/u/proj", &job, &d), 0);
    assert_string_equal(job->spec.checkpoint.dir, "/home/u/proj/runs/ckpt");
    char *stored = query(f, "SELECT json_extract(spec_json, '$.checkpoint.dir'), workdir "
                         "FROM jobs WHERE id = ?1", job->id);
    assert_string_equal(stored, "/home/u/proj/runs/ckpt|/home/u/proj\n");
    free(stored);
    fx_stop(f);
}

/* ---- forecasts computed when read ---------------------------------------- */

/* What one offer of a view showed its policy. */
struct seen_forecast {
    size_t n;
    ebb_micros p50_low;
    struct ebb_forecast_point points[EBB__ENGINE_OUTLOOK_STEPS];
};

/* Runs a renewal job on the daily cycle (prices_daily_cycle.csv, 9 days of
 * history) to its first decision, with the policy asking for forecasts or
 * not; fills `seen` (the view's 2 offers) with what the view holds after
 * the decision, each offer's forecast filled in, and returns the job's
 * state then. `pending` gets how many offers were still without their
 * forecast before that, and a check that waiting changes nothing: each
 * one's outlook is brought up to date 20 minutes later first, and its
 * forecast must still be the one due at the decision. */
static enum ebb__job_state first_decision(struct fx *f, int asks,
                                          struct seen_forecast seen[2],
                                          size_t *pending)
{
    fx_start_with(f, "prices_daily_cycle.csv", NULL, "renewal", "");
    struct ebb__plugin_slot *s = ebb__registry_policy(&f->v.registry, "renewal");
    assert_non_null(s);
    assert_true(s->plugin->copy.policy.flags & EBB_POLICY_ASKS_FORECASTS);
    if (!asks)
        s->plugin->copy.policy.flags &= ~EBB_POLICY_ASKS_FORECASTS;
    ebb_time_ms at = T0 + 9 * EBB_MS_PER_DAY + 10 * H;
    run_to(f, at);
    struct ebb__job *job = submit(f, "name: j\nrun: [train]\nwork: 4h\n"
                                     "deadline: 30h\nrestart_overhead: 5m\n"
                                     "resources: {instance_types: [p3.2xlarge]}\n");
    run_to(f, at + MINUTE);
    struct ebb__engine *e = f->v.engine;
    assert_int_equal(e->view_n, 2); /* spot and on-demand */
    *pending = 0;
    for (size_t i = 0; i < e->view_n; i++) {
        struct ebb__offer *o = &e->market.offers[e->view_map[i]];
        if (!o->fc_pending)
            continue;
        (*pending)++;
        assert_null(e->view_offers[i].forecast);
        assert_int_equal(e->view_offers[i].n_forecast, 0);
        ebb_time_ms due = o->fc_origin;
        ebb__engine_outlook(e, e->view_map[i], at + 20 * MINUTE);
        assert_true(o->fc_pending);
        assert_int_equal(o->fc_origin, due);
    }
    for (size_t i = 0; i < e->view_n; i++) {
        assert_int_equal(ebb__engine_fill_forecast(e, i), 0);
        const struct ebb_offer *v = &e->view_offers[i];
        seen[i].n = v->n_forecast;
        seen[i].p50_low = v->forecast_p50_low;
        assert_true(v->n_forecast <= EBB__ENGINE_OUTLOOK_STEPS);
        memcpy(seen[i].points, v->forecast, v->n_forecast * sizeof(*v->forecast));
    }
    assert_int_equal(ebb__engine_fill_forecast(e, e->view_n), EBB_EINVAL);
    enum ebb__job_state state = job->state;
    fx_stop(f);
    return state;
}

/* A policy that asks for forecasts (EBB_POLICY_ASKS_FORECASTS) gets offers
 * without them, each computed when first read as of the instant it fell
 * due: it decides as a policy given every forecast at once, and what it
 * reads is the same. renewal reads none for a job without a budget. */
static void forecasts_are_computed_when_read(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    static struct seen_forecast at_once[2], when_read[2];
    size_t pending_at_once, pending_when_read;
    enum ebb__job_state a = first_decision(f, 0, at_once, &pending_at_once);
    enum ebb__job_state b = first_decision(f, 1, when_read, &pending_when_read);
    assert_int_equal(a, b);
    assert_int_equal(pending_at_once, 0);
    assert_int_equal(pending_when_read, 1); /* the spot offer's */
    for (int i = 0; i < 2; i++) {
        assert_true(at_once[i].n > 0);
        assert_int_equal(at_once[i].n, when_read[i].n);
        assert_int_equal(at_once[i].p50_low, when_read[i].p50_low);
        assert_memory_equal(at_once[i].points, when_read[i].points,
                            at_once[i].n * sizeof(at_once[i].points[0]));
    }
    /* The cycle is in the forecast: night prices are lower than day ones. */
    ebb_micros low = at_once[0].p50_low < at_once[1].p50_low ? at_once[0].p50_low
                                                              : at_once[1].p50_low;
    assert_true(low < 2400000);
}

/* ---- gangs: which offers, what a policy sees, the yardsticks ------------ */

static const char gang_yaml[] = "name: g\nrun: [python, train.py]\nwork: 1h\n"
                                "nodes: 2\n";

/* Makes loaded provider `name` say it launches gangs or not (the
 * loader's copy of its struct, which every reader sees). */
static void set_gangs(struct fx *f, const char *name, int on)
{
    struct ebb__plugin_slot *s = ebb__registry_provider(&f->v.registry, name);
    assert_non_null(s);
    if (on)
        s->plugin->copy.provider.flags |= EBB_PROVIDER_GANGS;
    else
        s->plugin->copy.provider.flags &= ~EBB_PROVIDER_GANGS;
}

/* A gang runs only where its provider (and a run_on runner) launches
 * gangs, and resources.network only on types the catalog says are fast
 * enough; a job that can never run is told why at submit. */
static void gangs_need_a_provider_and_a_network(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    struct ebb__job *job;
    struct ebb_diag d;
    fx_start(f, NULL, "greedy");
    job = submit(f, gang_yaml);
    assert_int_equal(job->n_allowed, 4); /* spot and on demand of both types */
    /* A sim that did not launch gangs. */
    set_gangs(f, "sim", 0);
    assert_int_equal(submit_from(f, gang_yaml, NULL, &job, &d), EBB_EINVAL);
    assert_string_equal(d.msg, "job.yaml: nodes: 2: no offer's provider launches "
                        "gangs, so the job could never run (sim does not; see "
                        "ebb prices)");
    /* A single instance asking for more network than any type has. */
    static const char fast[] = "name: n\nrun: [python, train.py]\nwork: 1h\n"
                               "resources: {network: 25Gbps}\n";
    assert_int_equal(submit_from(f, fast, NULL, &job, &d), EBB_EINVAL);
    assert_string_equal(d.msg, "job.yaml: resources.network: 25Gbps: no matching "
                        "instance type has that much (the catalog's network_gbps), "
                        "so the job could never run (p3.2xlarge has 10Gbps, "
                        "p3.8xlarge has 10Gbps; see ebb prices)");
    job = submit(f, "name: n\nrun: [python, train.py]\nwork: 1h\n"
                    "resources: {network: 10Gbps}\n");
    assert_int_equal(job->n_allowed, 4);
    fx_stop(f);

    /* run_on: the market launches gangs, its runner does not. */
    fx_start_with(f, "prices_flat.csv", NULL, "greedy",
                  "  runner: {}\nrun_on: {sim: runner}\n");
    f->v.engine->opt.run_on = f->v.config->run_on;
    f->v.engine->opt.n_run_on = f->v.config->n_run_on;
    assert_int_equal(submit_from(f, gang_yaml, NULL, &job, &d), EBB_EINVAL);
    assert_string_equal(d.msg, "job.yaml: nodes: 2: no offer's provider launches "
                        "gangs, so the job could never run (sim does; runner does "
                        "not; see ebb prices)");
    set_gangs(f, "runner", 1);
    job = submit(f, gang_yaml);
    assert_int_equal(job->n_allowed, 4);
    fx_stop(f);
}

/* An offer of the view the planner last built (engine internals), with
 * its forecast filled in as for a policy that asks for it. */
static const struct ebb_offer *view_of(const struct fx *f, const char *type,
                                       enum ebb_market market, size_t *k)
{
    struct ebb__engine *e = f->v.engine;
    for (size_t i = 0; i < e->view_n; i++) {
        const struct ebb_offer *o = &e->view_offers[i];
        if (strcmp(o->instance_type, type) == 0 && o->market == market) {
            assert_int_equal(ebb__engine_fill_forecast(e, i), 0);
            *k = e->view_map[i];
            return o;
        }
    }
    fail_msg("no %s offer in the view", type);
    return NULL;
}

/* A gang of 2 sees each offer as one instance of 2: twice the price, the
 * forecast and the hazard (it is lost when either node is), and a pool
 * with capacity 1 is not available to it (avail_drop.csv, at 04:00: the
 * drop of 02:00 gives p3.2xlarge a hazard). Views are shared by jobs
 * planned at the same instant with the same offers, not across sizes. */
static void a_gang_sees_n_times_price_and_hazard(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, "avail_drop.csv", "greedy");
    struct ebb__engine *e = f->v.engine;
    static const char one[] = "name: g\nrun: [python, train.py]\nwork: 1h\n"
                              "restart_overhead: 5m\nmarket: spot\n"
                              "resources: {instance_types: [p3.2xlarge]}\n";
    static const char two[] = "name: g\nrun: [python, train.py]\nwork: 1h\n"
                              "restart_overhead: 5m\nmarket: spot\nnodes: 2\n"
                              "resources: {instance_types: [p3.2xlarge]}\n";
    /* A single instance takes the pool's one spot instance (and keeps it:
     * 10 h of work). */
    struct ebb__job *filler = submit(f, "name: filler\nrun: [python, train.py]\n"
                                        "work: 10h\nmarket: spot\n"
                                        "resources: {instance_types: [p3.2xlarge]}\n");
    run_to(f, T0 + 4 * H);
    assert_int_equal(filler->attempts, 2); /* preempted at 02:00 */
    assert_int_equal(filler->state, EBB__JOB_RUNNING);
    /* Neither the gang nor another single instance can launch now: the
     * market stays as it is through the pass, and the single instance,
     * planned after the gang with the same offers at the same instant,
     * still gets a view of its own. */
    ebb_time_ms at = T0 + 4 * H + MINUTE;
    run_to(f, at);
    uint64_t gen = e->view_generation;
    struct ebb__job *gang = submit(f, two);
    struct ebb__job *single = submit(f, one);
    uint64_t decisions = e->decisions;
    run_to(f, at);
    assert_int_equal(e->decisions - decisions, 2);
    assert_int_equal(e->view_generation, gen + 2);
    assert_int_equal(gang->attempts, 0);
    assert_int_equal(single->attempts, 0);
    size_t k;
    const struct ebb_offer *v = view_of(f, "p3.2xlarge", EBB_MARKET_SPOT, &k);
    assert_int_equal(e->view_nodes, 1);
    assert_int_equal(v->price_per_hour, 900000);

    ebb__engine_mark_dirty(gang);
    gen = e->view_generation;
    run_to(f, at);
    assert_int_equal(e->view_generation, gen + 1);
    assert_int_equal(gang->attempts, 0);
    assert_int_equal(e->view_nodes, 2);
    v = view_of(f, "p3.2xlarge", EBB_MARKET_SPOT, &k);
    const struct ebb__offer *o = &e->market.offers[k];
    assert_int_equal(v->price_per_hour, 2 * 900000);
    assert_true(o->hazard > 0);
    assert_true(v->preemption_per_hour == 2 * o->hazard);
    assert_int_equal(v->forecast_p50_low, 2 * o->fc_p50_low);
    assert_int_equal(v->n_forecast, o->n_fc);
    assert_true(o->n_fc > 0);
    for (size_t i = 0; i < o->n_fc; i++) {
        assert_int_equal(v->forecast[i].at, o->fc[i].at);
        assert_int_equal(v->forecast[i].p50, 2 * o->fc[i].p50);
        assert_int_equal(v->forecast[i].p90, 2 * o->fc[i].p90);
    }
    if (o->has_by_hour)
        for (int h = 0; h < 24; h++)
            assert_true(v->preemption_by_hour[h] == 2 * o->hazard_by_hour[h]);
    assert_int_equal(v->available, 0);
    fx_stop(f);
}

/* A pool whose capacity cannot hold every node is never used by the gang,
 * however long it waits; one that can is (avail_one.csv: capacity 1;
 * avail_three_drop.csv: 3, none 02:00-03:00). */
static void a_gang_needs_capacity_for_every_node(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    static const char two[] = "name: g\nrun: [python, train.py]\nwork: 1h\n"
                              "market: spot\nnodes: 2\n"
                              "resources: {instance_types: [p3.2xlarge]}\n";
    fx_start(f, "avail_one.csv", "greedy");
    struct ebb__job *gang = submit(f, two);
    run_to(f, T0 + 24 * H);
    assert_int_equal(gang->attempts, 0);
    assert_int_equal(gang->state, EBB__JOB_WAITING);
    assert_int_equal(gang->waiting_kind, EBB__WAIT_CAPACITY);
    fx_stop(f);

    fx_start(f, "avail_three_drop.csv", "greedy");
    gang = submit(f, two);
    run_to(f, T0 + MINUTE);
    assert_true(gang->attempts >= 1);
    fx_stop(f);
}

/* The backtest's yardsticks count each node: on demand, twice the cost;
 * the oracle on the same trace with capacity unknown (unlimited), twice
 * within its one rounding; with capacity 1, no schedule for a gang. */
static void a_gangs_yardsticks_count_each_node(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    static const char one[] = "name: g\nrun: [python, train.py]\nwork: 3h\n"
                              "restart_overhead: 5m\nmarket: spot\ndeadline: 12h\n"
                              "resources: {instance_types: [p3.2xlarge]}\n";
    static const char two[] = "name: g\nrun: [python, train.py]\nwork: 3h\n"
                              "restart_overhead: 5m\nmarket: spot\ndeadline: 12h\n"
                              "nodes: 2\nresources: {instance_types: [p3.2xlarge]}\n";
    for (int capacity_one = 0; capacity_one < 2; capacity_one++) {
        fx_start(f, capacity_one ? "avail_one.csv" : NULL, "greedy");
        struct ebb__job *a = submit(f, one), *b = submit(f, two);
        run_to(f, T0 + 13 * H);
        struct ebb__engine *e = f->v.engine;
        ebb_time_ms end = T0 + 13 * H;
        ebb_micros od1 = ebb__backtest_on_demand_cost(e, a);
        ebb_micros od2 = ebb__backtest_on_demand_cost(e, b);
        /* 3 h 5 min at 3.06 USD/h */
        assert_int_equal(od1, 9435000);
        assert_int_equal(od2, 2 * od1);
        ebb_micros o1 = 0, o2 = 0;
        assert_int_equal(ebb__backtest_oracle_cost(e, a, end, &o1), 0);
        /* 3 h 5 min at 0.90 USD/h, to within the oracle's grid (a
         * minute: 15000 micro-USD) */
        assert_true(o1 >= 2775000 && o1 <= 2775000 + 15000);
        if (capacity_one) {
            assert_int_equal(ebb__backtest_oracle_cost(e, b, end, &o2), EBB_ENOTFOUND);
        } else {
            assert_int_equal(ebb__backtest_oracle_cost(e, b, end, &o2), 0);
            assert_true(o2 >= 2 * o1 - 1 && o2 <= 2 * o1 + 1);
        }
        fx_stop(f);
    }
}

/* `ebb backtest` of the same job alone and as a gang of 2 on a trace with
 * unlimited capacity (workload_gang.yaml): the gang's cost, on-demand
 * reference and oracle are twice the single instance's. */
static void a_gangs_backtest_costs_twice(void **state)
{
    (void)state;
    char prices[1024], catalog[1024], workload[1024];
    struct ebb__backtest_options o = {
        .prices = data_path("prices_flat.csv", prices, sizeof(prices)),
        .catalog = data_path("catalog.csv", catalog, sizeof(catalog)),
        .workload = data_path("workload_gang.yaml", workload, sizeof(workload)),
        .policy = "greedy",
        .seed = 1,
    };
    json_t *r = NULL;
    struct ebb_diag d = {{0}};
    if (ebb__backtest_run(&o, &r, &d) != 0)
        fail_msg("%s", d.msg);
    json_t *jobs = json_object_get(r, "jobs");
    assert_int_equal(json_array_size(jobs), 2);
    double cost[2], od[2], oracle[2];
    for (size_t i = 0; i < 2; i++) {
        json_t *j = json_array_get(jobs, i);
        assert_string_equal(json_string_value(json_object_get(j, "state")), "succeeded");
        assert_int_equal(json_integer_value(json_object_get(j, "preemptions")), 0);
        cost[i] = json_number_value(json_object_get(j, "cost_usd"));
        od[i] = json_number_value(json_object_get(j, "on_demand_cost_usd"));
        oracle[i] = json_number_value(json_object_get(j, "oracle_cost_usd"));
    }
    /* 3 h of work and 5 min of restart at 0.90 USD/h, six 30 s checkpoint
     * pauses (the sim's) besides: 2.82 USD. */
    assert_true(cost[0] > 2.775 && cost[0] < 2.85);
    assert_true(cost[1] > 2 * cost[0] - 1e-5 && cost[1] < 2 * cost[0] + 1e-5);
    assert_true(od[1] > 2 * od[0] - 1e-9 && od[1] < 2 * od[0] + 1e-9);
    assert_true(oracle[1] > 2 * oracle[0] - 2e-6 && oracle[1] < 2 * oracle[0] + 2e-6);
    assert_true(oracle[1] <= cost[1] + 1e-6);
    json_decref(r);
}

/* What a running gang has cost and is billed at counts each node that has
 * a member, from its own start: a member billed when it goes (a loss
 * under replace_lost) is not counted again, and no longer adds to the
 * rate (prices_flat.csv: 0.90 USD/h a node, per-second billing). */
static void a_gangs_spend_counts_each_member_once(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    fx_start(f, NULL, "greedy");
    struct ebb__job *gang = submit(f, "name: g\nrun: [python, train.py]\nwork: 10h\n"
                                      "market: spot\nnodes: 2\n"
                                      "resources: {instance_types: [p3.2xlarge]}\n");
    run_to(f, T0 + 10 * MINUTE);
    assert_non_null(gang->current);
    assert_true(gang->current->launched);
    assert_int_equal(gang->current->n_nodes, 2);
    ebb_time_ms now = T0 + 10 * MINUTE;
    ebb_dur_ms ran = now - gang->current->launched_at;
    assert_int_equal(ebb__engine_billed_rate(gang, now), 2 * 900000);
    ebb_micros before = ebb__engine_spent_now(gang, now);
    assert_int_equal(before, 2 * ebb__cost_of(900000, ran));
    /* Node 1's member goes and is billed now. */
    ebb__engine_bill_node(gang, 1, now);
    assert_int_equal(gang->spent, ebb__cost_of(900000, ran));
    assert_int_equal(ebb__engine_spent_now(gang, now), before);
    assert_int_equal(ebb__engine_billed_rate(gang, now), 900000);
    fx_stop(f);
}

/* A gang may keep its checkpoints in a store (one part per rank under one
 * name, docs/gangs.md): submitted, it waits like any job. */
static void a_gang_with_a_store_is_taken(void **state)
{
    (void)state;
    struct fx *f = &fx_mem;
    struct ebb__job *job;
    struct ebb_diag d;
    fx_start(f, NULL, "greedy");
    assert_int_equal(submit_from(f, "name: g\nrun: [python, train.py]\nwork: 1h\n"
                                    "nodes: 2\ncheckpoint: {store: s3}\n",
                                 NULL, &job, &d), 0);
    assert_non_null(job);
    assert_int_equal(job->spec.nodes, 2);
    assert_string_equal(job->spec.checkpoint.store, "s3");
    fx_stop(f);
}

int main(void)
{
    assert_int_equal(ebb_parse_time("2020-01-01T00:00:00Z", &T0), 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(one_job_on_a_flat_market, teardown),
        cmocka_unit_test_teardown(a_relative_checkpoint_dir_lies_below_the_workdir,
                                  teardown),
        cmocka_unit_test_teardown(preempted_job_resumes_from_its_checkpoint,
                                  teardown),
        cmocka_unit_test_teardown(fallback_goes_on_demand_in_time, teardown),
        cmocka_unit_test_teardown(markets_are_respected, teardown),
        cmocka_unit_test_teardown(runs_are_deterministic, teardown),
        cmocka_unit_test_teardown(two_jobs_share_capacity_one, teardown),
        cmocka_unit_test_teardown(backtest_costs_at_least_the_oracle, teardown),
        cmocka_unit_test_teardown(budget_caps_launches_and_running_jobs, teardown),
        cmocka_unit_test_teardown(prices_in_another_currency_are_converted,
                                  teardown),
        cmocka_unit_test_teardown(hourly_billing_prices_the_hour_at_its_start,
                                  teardown),
        cmocka_unit_test_teardown(no_launch_into_a_pool_under_notice, teardown),
        cmocka_unit_test_teardown(failed_terminate_is_asked_again, teardown),
        cmocka_unit_test_teardown(failed_release_is_asked_again, teardown),
        cmocka_unit_test_teardown(launch_that_always_fails_gives_up, teardown),
        cmocka_unit_test_teardown(launch_failures_then_success, teardown),
        cmocka_unit_test_teardown(deadline_passes_while_waiting, teardown),
        cmocka_unit_test_teardown(a_taken_id_is_drawn_again, teardown),
        cmocka_unit_test_teardown(gangs_need_a_provider_and_a_network, teardown),
        cmocka_unit_test_teardown(forecasts_are_computed_when_read, teardown),
        cmocka_unit_test_teardown(a_gang_sees_n_times_price_and_hazard, teardown),
        cmocka_unit_test_teardown(a_gang_needs_capacity_for_every_node, teardown),
        cmocka_unit_test_teardown(a_gangs_yardsticks_count_each_node, teardown),
        cmocka_unit_test_teardown(a_gangs_backtest_costs_twice, teardown),
        cmocka_unit_test_teardown(a_gangs_spend_counts_each_member_once, teardown),
        cmocka_unit_test_teardown(a_gang_with_a_store_is_taken, teardown),
        cmocka_unit_test_teardown(a_paused_pool_wakes_its_waiting_job, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
