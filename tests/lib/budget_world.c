/* The randomised budget tests' world (budget_world.h). */
#include "budget_world.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebb/buf.h>
#include <ebb/units.h>

#include "base/str.h"
#include "jobs/jobspec.h"
#include "market/billing.h"
#include "store/store.h"
#include "store_peek.h"

#define MINUTE EBB_MS_PER_MINUTE
#define DAY EBB_MS_PER_DAY
#define USD EBB_MICROS_PER_UNIT

struct budget_world *budget_world_live;

static uint64_t next_rand(struct budget_world *w)
{
    /* xorshift64*: reproducible per seed. */
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return w->rng * UINT64_C(2685821657736338717);
}

int64_t budget_world_rand(struct budget_world *w, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next_rand(w) % (uint64_t)(hi - lo + 1));
}

void budget_world_stop(struct budget_world *w)
{
    ebb__vengine_close(&w->v);
    if (w->trace[0] != '\0')
        unlink(w->trace);
    if (w->dir[0] != '\0')
        rmdir(w->dir);
    memset(w, 0, sizeof(*w));
    budget_world_live = NULL;
}

int budget_world_teardown(void **state)
{
    (void)state;
    if (budget_world_live != NULL)
        budget_world_stop(budget_world_live);
    return 0;
}

/* A price trace for two zones from `from` to `to`: a new price every 20
 * minutes, a random walk around 0.90 USD/h, and from `calm_until` on now
 * and then a spike of 2 to 12 times the price for 20 to 80 minutes. The
 * calm history keeps spikes out of the forecast, so they come as
 * surprises. */
static void write_spiky_trace(struct budget_world *w, ebb_time_ms from,
                              ebb_time_ms calm_until, ebb_time_ms to,
                              int gpu_types)
{
    static const struct {
        const char *type;
        int64_t times;
    } types[] = {{"p3.2xlarge", 1}, {"p3.8xlarge", 4}, {"p3.16xlarge", 8}};
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
            base[z] += budget_world_rand(w, -60000, 60000);
            if (base[z] < 500000)
                base[z] = 500000;
            if (base[z] > 1400000)
                base[z] = 1400000;
            if (spike_left[z] == 0 && t >= calm_until &&
                budget_world_rand(w, 0, 99) < 8) {
                spike_left[z] = (int)budget_world_rand(w, 1, 4);
                factor[z] = budget_world_rand(w, 2, 12);
            }
            ebb_micros price = base[z] * (spike_left[z] > 0 ? factor[z] : 1);
            if (spike_left[z] > 0)
                spike_left[z]--;
            for (int k = 0; k < (gpu_types ? 3 : 1); k++) {
                ebb_micros p = price * types[k].times;
                fprintf(f, "%s,aws,us-east-1,%s,%s,Linux/UNIX,%lld.%06lld\n",
                        at, zones[z], types[k].type, (long long)(p / USD),
                        (long long)(p % USD));
            }
        }
    }
    assert_int_equal(fclose(f), 0);
}

void budget_world_start(struct budget_world *w, uint64_t seed, ebb_time_ms start,
                        ebb_time_ms end, const char *providers_more,
                        const char *top_more)
{
    const struct budget_world_setup s = {.providers_more = providers_more,
                                         .top_more = top_more};
    budget_world_open(w, seed, start, end, &s);
}

void budget_world_open(struct budget_world *w, uint64_t seed, ebb_time_ms start,
                       ebb_time_ms end, const struct budget_world_setup *s)
{
    memset(w, 0, sizeof(*w));
    w->rng = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
    budget_world_live = w;
    write_spiky_trace(w, start - DAY, start, end + DAY, s->gpu_types);
    w->team_cap = budget_world_rand(w, 3, 9) * USD;
    if (s->team_cap_usd > 0)
        w->team_cap = s->team_cap_usd * USD;
    struct ebb_buf b = {0};
    ebb_buf_printf(&b, "providers:\n  sim:\n    prices: \"%s\"\n"
                    "    preemption_hazard: 0.%lld\n"
                    "    preempt_after: %lldm\n    seed: %llu\n"
                    "    checkpoint_time: 170s\n"
                    "    billing: %s\n%s"
                    "default_policy: greedy\n"
                    "teams:\n  ml:\n    members: %s\n"
                    "    budget: %lld USD\n%s%s",
                    w->trace, (long long)budget_world_rand(w, 1, 5),
                    (long long)budget_world_rand(w, 60, 240),
                    (unsigned long long)seed,
                    budget_world_rand(w, 0, 1) ? "aws-hourly" : "per-second",
                    s->providers_more, s->members ? s->members : "[alice]",
                    (long long)(w->team_cap / USD),
                    s->team_more ? s->team_more : "", s->top_more);
    char *text = ebb_buf_take(&b);
    assert_non_null(text);
    struct ebb_diag d = {{0}};
    int rc = ebb__vengine_open(&w->v, "(test)", text, s->catalog, start, &d);
    free(text);
    if (rc != 0)
        fail_msg("%s", d.msg);
    /* What ebbd does (src/daemon/daemon.c); backtests pass no teams. */
    ebb__engine_set_budget_config(w->v.engine, w->v.config);
    ebb__clock_run_until(&w->v.clock, start);
}

struct ebb__job_info budget_world_info(const struct ebb__job *job)
{
    struct ebb__job_info i;
    ebb__engine_job_info(job, &i);
    return i;
}

struct ebb__job *budget_world_submit(struct budget_world *w, const char *yaml)
{
    return budget_world_submit_as(w, yaml, 0);
}

struct ebb__job *budget_world_submit_as(struct budget_world *w, const char *yaml,
                                        int64_t uid)
{
    struct ebb__job_spec spec;
    struct ebb_diag d = {{0}};
    if (ebb__jobspec_load_buffer("job.yaml", yaml, strlen(yaml), &spec, &d) != 0)
        fail_msg("%s", d.msg);
    struct ebb__job *job = NULL;
    if (ebb__engine_submit(w->v.engine, &spec, yaml, uid, NULL, &job, &d) != 0) {
        ebb__jobspec_free(&spec);
        fail_msg("%s", d.msg);
    }
    assert_true(w->n_jobs < BUDGET_WORLD_MAX_JOBS);
    w->jobs[w->n_jobs++] = job;
    return job;
}

void budget_world_submit_random(struct budget_world *w,
                                const char *const policies[3],
                                int64_t grace_min_s)
{
    for (int j = 0; j < BUDGET_WORLD_JOBS; j++) {
        struct ebb_buf b = {0};
        ebb_buf_printf(&b, "name: j%d\nrun: [python, train.py]\n"
                        "restart_overhead: %lldm\nwork: %lldh\n"
                        "deadline: 4d\nmarket: spot\npolicy: %s\n"
                        "checkpoint:\n  every: %lldm\n  grace: %llds\n",
                        j, (long long)budget_world_rand(w, 1, 10),
                        (long long)budget_world_rand(w, 2, 30),
                        policies[budget_world_rand(w, 0, 2)],
                        (long long)budget_world_rand(w, 10, 60),
                        (long long)budget_world_rand(w, grace_min_s, 300));
        if (j != 3) /* one job is capped by the team only */
            ebb_buf_printf(&b, "budget: %lld.%02lld USD\n",
                            (long long)budget_world_rand(w, 0, 5),
                            (long long)budget_world_rand(w, 1, 99));
        if (j != 2) /* one job has no team */
            ebb_buf_printf(&b, "team: ml\n");
        char *yaml = ebb_buf_take(&b);
        assert_non_null(yaml);
        budget_world_submit(w, yaml);
        free(yaml);
    }
}

static sqlite3_stmt *prepare(struct budget_world *w, const char *sql,
                             const char *text, int64_t a, int64_t b)
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
    return st;
}

int64_t budget_world_sql_int(struct budget_world *w, const char *sql,
                             const char *text, int64_t a, int64_t b)
{
    sqlite3_stmt *st = prepare(w, sql, text, a, b);
    int64_t v = 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

char *budget_world_sql_text(struct budget_world *w, const char *sql,
                            const char *text)
{
    sqlite3_stmt *st = prepare(w, sql, text, 0, 0);
    const unsigned char *v = NULL;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_text(st, 0);
    char *out = strdup(v != NULL ? (const char *)v : "");
    sqlite3_finalize(st);
    assert_non_null(out);
    return out;
}

/* What the job's running instance would be billed if it ended now. */
static ebb_micros running_cost(const struct budget_world *w,
                               const struct ebb__job *job, ebb_time_ms now)
{
    struct ebb__attempt_info a;
    if (ebb__engine_job_attempt(job, &a) != 0 || !a.launched)
        return 0;
    return ebb__bill(&ebb__engine_market(w->v.engine)->offers[a.offer], a.billing,
                     a.launched_at, now, NULL, NULL);
}

void budget_world_check_caps(struct budget_world *w, ebb_time_ms now)
{
    ebb_micros team_running = 0;
    for (size_t i = 0; i < w->n_jobs; i++) {
        const struct ebb__job *job = w->jobs[i];
        struct ebb__job_info ji = budget_world_info(job);
        ebb_micros billed = budget_world_sql_int(w, "SELECT ifnull(sum("
                                                 "amount_micros), 0) FROM ledger "
                                                 "WHERE job_id = ?1", ji.id, 0, 0);
        assert_int_equal(billed, ji.spent);
        ebb_micros running = running_cost(w, job, now);
        if (ji.budget >= 0 && billed + running > ji.budget)
            fail_msg("job %s spent %lld + %lld running > cap %lld at %lld",
                     ji.id, (long long)billed, (long long)running,
                     (long long)ji.budget, (long long)now);
        if (ji.spec->team != NULL)
            team_running += running;
    }
    ebb_time_ms from, to, prev_from, prev_to;
    ebb__budget_month(now, &from, &to);
    ebb__budget_month(from - 1, &prev_from, &prev_to);
    static const char team_sql[] = "SELECT ifnull(sum(amount_micros), 0) FROM "
                                   "ledger WHERE team = ?1 AND end_at >= ?2 AND "
                                   "end_at < ?3";
    ebb_micros month = budget_world_sql_int(w, team_sql, "ml", from, to);
    ebb_micros last = budget_world_sql_int(w, team_sql, "ml", prev_from, prev_to);
    if (month + team_running > w->team_cap || last > w->team_cap)
        fail_msg("team ml: %lld + %lld running this month, %lld last month; "
                 "cap %lld at %lld", (long long)month, (long long)team_running,
                 (long long)last, (long long)w->team_cap, (long long)now);
}
