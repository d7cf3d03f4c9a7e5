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
 *   sees the catalog's speed there.
 *
 * The stall guard (engine_stall.c, docs/agent.md "Stall guard") on the same
 * world: off without progress lines; on from the first, at 4 times the
 * job's longest interval between lines (at least 10 min) or its
 * stall_after; a job whose reported work stops growing is checkpointed
 * and moved, its host left out, the reason in its event and a
 * `job.stalled` note, and it finishes elsewhere.
 *
 * The GPU guard (min_gpu_util) on the same world: utilisation reported in
 * the restart overhead does not count; reports under the minimum that
 * span the window move the job; one at or above it starts the window
 * again; without min_gpu_util, or without reports spanning the window,
 * nothing moves. */
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
#include "jobs/jobspec.h"

#define MINUTE EBB_MS_PER_MINUTE
#define H EBB_MS_PER_HOUR
#define DAY EBB_MS_PER_DAY

#define WORK (100 * H)
#define REAL 0.25 /* what the host really does, against the catalog's */

static struct budget_world world;

/* The notes the engine made (opt.note), by type. */
static unsigned n_stalled;
static char stalled_reason[512];

static void on_note(void *arg, const struct ebb__engine_note *n)
{
    (void)arg;
    if (strcmp(n->type, "job.stalled") == 0) {
        n_stalled++;
        snprintf(stalled_reason, sizeof(stalled_reason), "%s", n->reason);
    }
}

static void start(ebb_time_ms at)
{
    budget_world_start(&world, 11, at, at + DAY, "  runner: {}\n",
                       "run_on: {sim: runner}\n");
    struct ebb__engine *e = world.v.engine;
    e->opt.run_on = world.v.config->run_on;
    e->opt.n_run_on = world.v.config->n_run_on;
    /* The sweep that looks for silent agents runs the guard: every
     * heartbeat timeout / 4 (here 5 minutes, on the virtual clock). */
    e->opt.agent_heartbeat_timeout = 20 * MINUTE;
    ebb__engine_agent_sweep_start(e);
    e->opt.note = on_note;
    n_stalled = 0;
    stalled_reason[0] = '\0';
}

/* A job of family `name`, with `more` (YAML lines) in its spec. */
static struct ebb__job *submit_with(const char *name, const char *more)
{
    char yaml[512];
    snprintf(yaml, sizeof(yaml), "name: %s\nrun: [python, t.py]\nwork: 100h\n"
             "market: spot\npolicy: greedy\nrestart_overhead: 2m\n"
             "checkpoint: {grace: 60s}\n%s", name, more);
    return budget_world_submit(&world, yaml);
}

static struct ebb__job *submit(const char *name)
{
    return submit_with(name, "");
}

static void report(struct ebb__job *job, ebb_time_ms at, struct ebb__agent_report r)
{
    ebb__clock_run_until(&world.v.clock, at);
    assert_non_null(job->current);
    struct ebb__agent_reply reply;
    ebb__engine_agent_report(job, 0, &r, &reply);
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

/* Progress lines a minute apart from `from` (exclusive) to `to`, the work
 * growing at the real speed until `stuck_at` (0: never) and not after. */
static void lines(struct ebb__job *job, ebb_time_ms run, int from, int to, int stuck_at,
                  double speed)
{
    for (int m = from + 1; m <= to; m++) {
        int worked = stuck_at > 0 && m > stuck_at ? stuck_at : m;
        progress(job, run + m * MINUTE, (ebb_dur_ms)((worked - 2) * MINUTE * speed));
    }
}

static void guard_off_without_progress_lines(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    start(t0);
    struct ebb__job *job = submit("f");
    ebb__clock_run_until(&world.v.clock, t0 + MINUTE);
    assert_non_null(job->current);
    ebb_time_ms run = t0 + 2 * MINUTE;
    report(job, run, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    char token[EBB__TOKEN_SIZE];
    snprintf(token, sizeof(token), "%s", job->current->token);
    assert_int_equal(ebb__engine_stall_after(job), 0);
    /* Heartbeats only, for 35 minutes (more than three times the guard's
     * floor; the sim preempts this instance later): never moved. */
    for (int m = 5; m <= 35; m += 5)
        report(job, run + m * MINUTE,
               (struct ebb__agent_report){.kind = EBB__AGENT_HEARTBEAT});
    assert_non_null(job->current);
    assert_string_equal(job->current->token, token);
    assert_false(job->current->stop_sent);
    assert_int_equal(n_stalled, 0);
    budget_world_stop(&world);
}

static void a_stalled_job_is_moved_and_finishes(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    start(t0);
    struct ebb__job *job = submit("f");
    ebb__clock_run_until(&world.v.clock, t0 + MINUTE);
    assert_non_null(job->current);
    size_t stuck_offer = job->current->offer;
    double catalog = world.v.engine->market.offers[stuck_offer].speed;
    ebb_time_ms run = t0 + 2 * MINUTE;
    report(job, run, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    /* Lines a minute apart: the guard is on at its floor of 10 minutes. */
    lines(job, run, 2, 8, 0, catalog);
    assert_int_equal(ebb__engine_stall_after(job), EBB__STALL_AFTER_MIN);
    /* The work stops growing at minute 8; lines keep coming (the agent is
     * alive, the job hung). Nine minutes later it has not been moved. */
    lines(job, run, 8, 17, 8, catalog);
    assert_false(job->current->stop_sent);
    assert_int_equal(n_stalled, 0);
    /* By the first sweep 10 minutes after its last progress (the sweep
     * runs about every 5 minutes from t0: t0 + 20m) it is checkpointing,
     * to move. */
    lines(job, run, 17, 18, 8, catalog);
    ebb__clock_run_until(&world.v.clock, run + 18 * MINUTE + 30 * EBB_MS_PER_SECOND);
    assert_non_null(job->current);
    assert_true(job->current->stop_sent);
    assert_int_equal(n_stalled, 1);
    assert_non_null(strstr(stalled_reason, "stalled: no progress for"));
    assert_non_null(strstr(stalled_reason, "stall_after 10m"));
    const struct ebb__offer *o = &world.v.engine->market.offers[stuck_offer];
    assert_true(o->unavailable_until >= run + 24 * H);
    char *why = budget_world_sql_text(&world, "SELECT reason FROM job_events WHERE "
                                      "job_id = ?1 AND reason LIKE 'stalled:%' ORDER "
                                      "BY rowid LIMIT 1", job->id);
    assert_non_null(strstr(why, "checkpointing, moving, leaving spot p3.2xlarge"));
    free(why);
    /* It checkpoints and exits; the job launches on another host. */
    ebb_time_ms at = run + 18 * MINUTE + 40 * EBB_MS_PER_SECOND;
    report(job, at, (struct ebb__agent_report){
        .kind = EBB__AGENT_CHECKPOINT, .fraction = 6.0 * MINUTE * catalog / WORK,
        .path = "ckpt"});
    report(job, at + 5 * EBB_MS_PER_SECOND, (struct ebb__agent_report){.kind = EBB__AGENT_EXITED,
                                                         .stopped = 1});
    ebb__clock_run_until(&world.v.clock, at + 5 * MINUTE);
    assert_non_null(job->current);
    assert_int_not_equal(job->current->offer, stuck_offer);
    /* There it works to the end. */
    ebb_time_ms again = at + 6 * MINUTE;
    report(job, again, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    report(job, again + 5 * MINUTE, (struct ebb__agent_report){
        .kind = EBB__AGENT_PROGRESS, .fraction = 1.0});
    report(job, again + 6 * MINUTE, (struct ebb__agent_report){.kind = EBB__AGENT_EXITED});
    ebb__clock_run_until(&world.v.clock, again + 10 * MINUTE);
    assert_int_equal(job->state, EBB__JOB_SUCCEEDED);
    assert_int_equal(n_stalled, 1);
    budget_world_stop(&world);
}

static void the_first_line_counts_from_the_restart_overhead(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    start(t0);
    struct ebb__job *job = submit("f");
    ebb__clock_run_until(&world.v.clock, t0 + MINUTE);
    assert_non_null(job->current);
    double catalog = world.v.engine->market.offers[job->current->offer].speed;
    ebb_time_ms run = t0 + 2 * MINUTE;
    report(job, run, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    /* A job that reports every 30 minutes: its first line, 30 minutes
     * after its restart overhead, sets the guard at 2 hours. */
    progress(job, run + 32 * MINUTE, (ebb_dur_ms)(30 * MINUTE * catalog));
    assert_int_equal(ebb__engine_stall_after(job), 4 * 30 * MINUTE);
    budget_world_stop(&world);
}

static void stall_after_from_the_spec(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY;
    start(t0);
    struct ebb__job *job = submit_with("f", "stall_after: 3m\n");
    ebb__clock_run_until(&world.v.clock, t0 + MINUTE);
    assert_non_null(job->current);
    double catalog = world.v.engine->market.offers[job->current->offer].speed;
    ebb_time_ms run = t0 + 2 * MINUTE;
    report(job, run, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    lines(job, run, 2, 5, 0, catalog);
    assert_int_equal(ebb__engine_stall_after(job), 3 * MINUTE);
    lines(job, run, 5, 8, 5, catalog);
    ebb__clock_run_until(&world.v.clock, run + 8 * MINUTE + 30 * EBB_MS_PER_SECOND);
    assert_true(job->current->stop_sent);
    assert_non_null(strstr(stalled_reason, "stall_after 3m)"));
    budget_world_stop(&world);
}

/* Heartbeats from `from` to `to` minutes after `run`, a minute apart,
 * each reporting `util` % GPU utilisation. */
static void gpu_beats(struct ebb__job *job, ebb_time_ms run, int from, int to, int util)
{
    for (int m = from; m <= to; m++)
        report(job, run + m * MINUTE, (struct ebb__agent_report){
            .kind = EBB__AGENT_HEARTBEAT, .has_gpu_util = 1, .gpu_util = util});
}

/* A job started at t0 + 2m (restart overhead 2m) with `more` in its spec. */
static struct ebb__job *gpu_job(ebb_time_ms t0, const char *more, ebb_time_ms *run)
{
    start(t0);
    struct ebb__job *job = submit_with("f", more);
    ebb__clock_run_until(&world.v.clock, t0 + MINUTE);
    assert_non_null(job->current);
    *run = t0 + 2 * MINUTE;
    report(job, *run, (struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
    return job;
}

static void idle_gpus_move_the_job(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY, run;
    struct ebb__job *job = gpu_job(t0, "min_gpu_util: 50\n", &run);
    size_t idle_offer = job->current->offer;
    unsigned reports;
    int latest;
    /* In the restart overhead (loading data): not counted. */
    gpu_beats(job, run, 0, 1, 3);
    assert_int_equal(ebb__engine_gpu_window(job, &reports, &latest), 10 * MINUTE);
    assert_int_equal(reports, 0);
    /* From its end, 12% and 8% a minute apart: by minute 11 the reports
     * span the 10-minute window; the sweep at t0 + 15m moves the job. */
    for (int m = 2; m <= 12; m++)
        gpu_beats(job, run, m, m, m % 2 ? 8 : 12);
    assert_int_equal(ebb__engine_gpu_window(job, &reports, &latest), 10 * MINUTE);
    assert_int_equal(reports, 11);
    assert_int_equal(latest, 12);
    assert_false(job->current->stop_sent);
    ebb__clock_run_until(&world.v.clock, t0 + 15 * MINUTE + 30 * EBB_MS_PER_SECOND);
    assert_true(job->current->stop_sent);
    assert_int_equal(n_stalled, 1);
    assert_string_equal(stalled_reason, "stalled: GPU utilisation under 50% for 10m (mean "
                                        "10%); checkpointing, moving, leaving spot p3.2xlarge "
                                        "us-east-1a aws out for 24 h");
    assert_true(world.v.engine->market.offers[idle_offer].unavailable_until >= run + 24 * H);
    /* It checkpoints and exits, and launches elsewhere. */
    ebb_time_ms at = t0 + 16 * MINUTE;
    report(job, at, (struct ebb__agent_report){.kind = EBB__AGENT_CHECKPOINT,
                                               .fraction = 0.01, .path = "ckpt"});
    report(job, at + 5 * EBB_MS_PER_SECOND,
           (struct ebb__agent_report){.kind = EBB__AGENT_EXITED, .stopped = 1});
    ebb__clock_run_until(&world.v.clock, at + 5 * MINUTE);
    assert_non_null(job->current);
    assert_int_not_equal(job->current->offer, idle_offer);
    assert_int_equal(ebb__engine_gpu_window(job, &reports, &latest), 10 * MINUTE);
    assert_int_equal(reports, 0);
    budget_world_stop(&world);
}

static void a_busy_report_starts_the_window_again(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY, run;
    struct ebb__job *job = gpu_job(t0, "min_gpu_util: 50\nstall_after: 5m\n", &run);
    unsigned reports;
    int latest;
    assert_int_equal(ebb__engine_gpu_window(job, &reports, &latest), 5 * MINUTE);
    /* Low for 4 minutes, then 50% (the minimum counts as busy), then low
     * again from minute 7: the 5 minutes are spanned at minute 12 (t0 +
     * 14m), and the sweep at t0 + 15m moves the job. */
    gpu_beats(job, run, 2, 5, 20);
    gpu_beats(job, run, 6, 6, 50);
    gpu_beats(job, run, 7, 11, 20);
    ebb__clock_run_until(&world.v.clock, run + 11 * MINUTE + 30 * EBB_MS_PER_SECOND);
    assert_false(job->current->stop_sent);
    gpu_beats(job, run, 12, 12, 20);
    ebb__clock_run_until(&world.v.clock, t0 + 15 * MINUTE + 30 * EBB_MS_PER_SECOND);
    assert_true(job->current->stop_sent);
    assert_non_null(strstr(stalled_reason, "stalled: GPU utilisation under 50% for 5m "
                                           "(mean 20%)"));
    budget_world_stop(&world);
}

static void no_move_without_min_gpu_util_or_evidence(void **state)
{
    (void)state;
    ebb_time_ms t0 = ebb_days_from_civil(2020, 1, 30) * DAY, run;
    /* No min_gpu_util: idle GPUs are the job's own business. */
    struct ebb__job *job = gpu_job(t0, "", &run);
    unsigned reports;
    int latest;
    gpu_beats(job, run, 2, 40, 0);
    assert_int_equal(ebb__engine_gpu_window(job, &reports, &latest), 0);
    assert_int_equal(reports, 39);
    assert_int_equal(latest, 0);
    assert_false(job->current->stop_sent);
    budget_world_stop(&world);
    /* One low report, then heartbeats without utilisation (nvidia-smi
     * stopped answering): no evidence the GPUs stayed idle. */
    job = gpu_job(t0, "min_gpu_util: 50\n", &run);
    gpu_beats(job, run, 2, 2, 1);
    for (int m = 3; m <= 40; m++)
        report(job, run + m * MINUTE, (struct ebb__agent_report){.kind = EBB__AGENT_HEARTBEAT});
    assert_false(job->current->stop_sent);
    assert_int_equal(n_stalled, 0);
    budget_world_stop(&world);
}

static void stall_after_below_a_minute_is_refused(void **state)
{
    (void)state;
    static const char spec[] = "name: f\nrun: [python, t.py]\nwork: 1h\nstall_after: 30s\n";
    struct ebb__job_spec js;
    struct ebb_diag d = {{0}};
    assert_int_not_equal(ebb__jobspec_load_buffer("job.yaml", spec, strlen(spec), &js, &d), 0);
    assert_non_null(strstr(d.msg, "stall_after: must be at least 1m"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(rates_only_in_working_time, budget_world_teardown),
        cmocka_unit_test_teardown(the_family_moves_to_a_faster_host, budget_world_teardown),
        cmocka_unit_test_teardown(guard_off_without_progress_lines, budget_world_teardown),
        cmocka_unit_test_teardown(a_stalled_job_is_moved_and_finishes, budget_world_teardown),
        cmocka_unit_test_teardown(the_first_line_counts_from_the_restart_overhead,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(stall_after_from_the_spec, budget_world_teardown),
        cmocka_unit_test(stall_after_below_a_minute_is_refused),
        cmocka_unit_test_teardown(idle_gpus_move_the_job, budget_world_teardown),
        cmocka_unit_test_teardown(a_busy_report_starts_the_window_again,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(no_move_without_min_gpu_util_or_evidence,
                                  budget_world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
