/* Budget caps when ebb-agent runs the jobs under an accelerated clock
 * (#16 point 5, docs/budgets.md): the sim market (price spikes,
 * preemptions with notices) with its instances run on a runner that has
 * no stop_job (tests/plugins/providers/runner.c, run_on: {sim: runner}),
 * so the engine talks to agents, which this test plays on the wall clock
 * of an ebbd running 1, 60, 120 or 720 times as fast (the virtual clock's
 * speed). Agents report every 5 s of wall time and hear a stop only in
 * the answer to a report, as ebb-agent does; a checkpoint takes them 1 to
 * 40 s of wall time, often longer than the grace they are given (then
 * their own grace timer kills the job), and some hang for good once asked
 * to stop, so that only ebbd's own release ends their instance.
 *
 * After every instant the test checks that no job's and no team's spend
 * (ledger plus running instances) passed its cap, and that no stopping or
 * noticed instance outlived the grace period the engine priced
 * (ebb__engine_grace_end). Seeds are printed; a failing seed reruns alone
 * with EBB_TEST_SEED=N.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "budget_world.h"
#include "engine/internal.h" /* attempts and their grace: internals */

#define MINUTE EBB_MS_PER_MINUTE
#define S EBB_MS_PER_SECOND
#define DAY EBB_MS_PER_DAY
#define HEARTBEAT (5 * S) /* wall time */

#define N_SEEDS 40
#define N_JOBS BUDGET_WORLD_JOBS

/* One agent, for one attempt of one job. */
struct agent {
    char token[EBB__TOKEN_SIZE]; /* "" : none */
    int started, stopping, done, hung, stop_ckpt;
    ebb_time_ms started_at, next_beat, next_ckpt, ckpt_due, exit_at;
    double ckpt_fraction, stop_fraction;
    ebb_dur_ms ckpt_time;  /* market time a checkpoint takes */
};

struct tally {
    unsigned stops, slow, hung, notices, exhausted, team_pauses,
        at_once, succeeded, preemptions;
};

struct run {
    struct budget_world w;
    struct agent agents[N_JOBS];
    struct tally t;
};

static struct run run_mem; /* not on a stack a failed test unwinds */

static ebb_time_ms now_of(struct run *r)
{
    return ebb__clock_now(&r->w.v.clock);
}

static ebb_dur_ms market(struct run *r, ebb_dur_ms wall)
{
    return ebb__clock_from_real_ms(&r->w.v.clock, wall);
}

/* The fraction of the work the job has done by now on its instance: its
 * saved work, plus the offer's speed times the time since its restart
 * overhead ended. */
static double fraction(struct run *r, const struct ebb__job *job,
                       const struct agent *ag)
{
    const struct ebb__attempt *a = job->current;
    double speed = r->w.v.engine->market.offers[a->offer].speed;
    ebb_time_ms from = ag->started_at + job->spec.restart_overhead;
    double work = (double)a->work_base;
    if (now_of(r) > from)
        work += (double)(now_of(r) - from) * (speed > 0 ? speed : 1);
    double f = work / (double)job->work_total;
    return f < 1 ? f : 1;
}

static void stop_agent(struct run *r, struct agent *ag, const struct ebb__job *job,
                       ebb_dur_ms grace_wall)
{
    ag->stopping = 1;
    r->t.stops++;
    if (ag->hung) {
        r->t.hung++;
        ag->next_beat = ag->next_ckpt = ag->ckpt_due = ag->exit_at = INT64_MAX;
        return;
    }
    ebb_dur_ms grace = market(r, grace_wall);
    ag->stop_fraction = fraction(r, job, ag);
    ag->stop_ckpt = ag->ckpt_time <= grace;
    r->t.slow += !ag->stop_ckpt;
    ag->exit_at = now_of(r) + (ag->stop_ckpt ? ag->ckpt_time : grace);
    ag->next_ckpt = ag->ckpt_due = INT64_MAX;
}

/* Sends one report and acts on the answer, as ebb-agent does. */
static void report(struct run *r, struct ebb__job *job, struct agent *ag,
                   struct ebb__agent_report *rep)
{
    struct ebb__agent_reply reply;
    ebb__engine_agent_report(job, 0, rep, &reply);
    if (reply.command == EBB__AGENT_STOP && !ag->stopping && !ag->done)
        stop_agent(r, ag, job, reply.grace);
}

/* What the agent of job i does at now: its first report, a heartbeat
 * with progress, a periodic checkpoint written, the end of a stop. */
static void act(struct run *r, size_t i)
{
    struct ebb__job *job = r->w.jobs[i];
    struct agent *ag = &r->agents[i];
    struct ebb__attempt *a = job->current;
    ebb_time_ms now = now_of(r);
    if (a == NULL || !a->launched || a->terminating) {
        ag->token[0] = '\0'; /* its instance is gone, or going */
        return;
    }
    if (strcmp(ag->token, a->token) != 0) {
        memset(ag, 0, sizeof(*ag));
        snprintf(ag->token, sizeof(ag->token), "%s", a->token);
        ag->hung = budget_world_rand(&r->w, 0, 3) == 0;
        ag->ckpt_time = market(r, budget_world_rand(&r->w, 1, 40) * S);
        ag->next_beat = now;
        ag->next_ckpt = ag->ckpt_due = ag->exit_at = INT64_MAX;
    }
    if (ag->done)
        return;
    if (!ag->started) {
        ag->started = 1;
        ag->started_at = now;
        ag->next_beat = now + market(r, HEARTBEAT);
        if (job->spec.checkpoint.every > 0)
            ag->next_ckpt = now + job->spec.restart_overhead +
                            job->spec.checkpoint.every;
        report(r, job, ag, &(struct ebb__agent_report){.kind = EBB__AGENT_STARTED});
        return;
    }
    /* A notice reaches the agent through the metadata endpoint. */
    if (a->notice && !ag->stopping) {
        r->t.notices++;
        stop_agent(r, ag, job, ebb__engine_agent_grace(job));
    }
    if (now >= ag->exit_at) {
        ag->done = 1;
        if (ag->stop_ckpt)
            report(r, job, ag, &(struct ebb__agent_report){
                .kind = EBB__AGENT_CHECKPOINT, .fraction = ag->stop_fraction});
        report(r, job, ag, &(struct ebb__agent_report){
            .kind = EBB__AGENT_EXITED, .status = -1, .signal = ag->stop_ckpt ? 0 : 9,
            .stopped = 1});
        return;
    }
    if (now >= ag->next_ckpt) {
        ag->ckpt_fraction = fraction(r, job, ag);
        ag->ckpt_due = now + ag->ckpt_time;
        ag->next_ckpt = now + job->spec.checkpoint.every;
    }
    if (now >= ag->ckpt_due) {
        ag->ckpt_due = INT64_MAX;
        report(r, job, ag, &(struct ebb__agent_report){
            .kind = EBB__AGENT_CHECKPOINT, .fraction = ag->ckpt_fraction});
    }
    if (now >= ag->next_beat && !ag->done) {
        ag->next_beat = now + market(r, HEARTBEAT);
        double f = fraction(r, job, ag);
        if (f >= 1 && !ag->stopping) {
            ag->done = 1;
            report(r, job, ag, &(struct ebb__agent_report){
                .kind = EBB__AGENT_EXITED, .status = 0});
            return;
        }
        report(r, job, ag, &(struct ebb__agent_report){
            .kind = EBB__AGENT_PROGRESS, .fraction = f});
    }
}

static ebb_time_ms next_action(const struct run *r)
{
    ebb_time_ms due = INT64_MAX;
    for (size_t i = 0; i < r->w.n_jobs; i++) {
        const struct agent *ag = &r->agents[i];
        const struct ebb__attempt *a = r->w.jobs[i]->current;
        if (a == NULL || !a->launched || a->terminating || ag->done)
            continue;
        if (strcmp(ag->token, a->token) != 0)
            return ebb__clock_now(&r->w.v.clock); /* a new agent starts */
        ebb_time_ms t[] = {ag->next_beat, ag->next_ckpt, ag->ckpt_due, ag->exit_at};
        for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++)
            if (t[k] < due)
                due = t[k];
    }
    return due;
}

/* No stopping or noticed instance runs past the end of the grace period
 * the engine priced: its release is under way by then. */
static void check_grace(struct run *r, ebb_time_ms now)
{
    for (size_t i = 0; i < r->w.n_jobs; i++) {
        struct ebb__job *job = r->w.jobs[i];
        const struct ebb__attempt *a = job->current;
        if (a == NULL || !a->launched || a->terminating)
            continue;
        ebb_time_ms end = ebb__engine_grace_end(job);
        if (now > end)
            fail_msg("job %s: %s still runs at %lld, its grace ended at %lld",
                     job->id, a->token, (long long)now, (long long)end);
    }
}

static void one_seed(struct run *r, uint64_t seed)
{
    static const double speeds[] = {1, 60, 120, 720};
    static const char *const policies[] = {"greedy", "uniform-progress",
                                           "deadline"};
    ebb_time_ms start = ebb_days_from_civil(2020, 1, 30) * DAY;
    ebb_time_ms end = start + 3 * DAY;
    struct budget_world *w = &r->w;
    memset(r->agents, 0, sizeof(r->agents));
    char providers[64];
    snprintf(providers, sizeof(providers), "  runner:\n    hourly: %s\n",
             seed % 3 == 0 ? "true" : "false");
    budget_world_start(w, seed, start, end, providers, "run_on: {sim: runner}\n");
    struct ebb__engine *e = w->v.engine;
    e->opt.run_on = w->v.config->run_on;
    e->opt.n_run_on = w->v.config->n_run_on;
    e->opt.agent_heartbeat = HEARTBEAT;
    w->v.clock.speed = speeds[budget_world_rand(w, 0, 3)];
    budget_world_submit_random(w, policies, 30);
    /* Bounded: the clock only moves forward, to `end`. */
    for (;;) {
        ebb_time_ms due = ebb__clock_next_due(&w->v.clock);
        ebb_time_ms agent = next_action(r);
        if (agent < due)
            due = agent;
        if (due > end)
            break;
        ebb__clock_run_until(&w->v.clock, due);
        for (size_t i = 0; i < w->n_jobs; i++)
            act(r, i);
        ebb__clock_run_until(&w->v.clock, due); /* what the reports started */
        budget_world_check_caps(w, due);
        check_grace(r, due);
    }
    for (size_t i = 0; i < w->n_jobs; i++) {
        struct ebb__job_info ji = budget_world_info(w->jobs[i]);
        r->t.exhausted += ji.state == EBB__JOB_BUDGET_EXHAUSTED;
        r->t.succeeded += ji.state == EBB__JOB_SUCCEEDED;
        r->t.preemptions += ji.preemptions;
        r->t.team_pauses += (unsigned)budget_world_sql_int(w, "SELECT count(*) "
            "FROM job_events WHERE job_id = ?1 AND reason LIKE 'team ml budget:%'",
            ji.id, 0, 0);
        r->t.at_once += (unsigned)budget_world_sql_int(w, "SELECT count(*) FROM "
            "job_events WHERE job_id = ?1 AND reason LIKE '%no room%'", ji.id, 0, 0);
    }
    budget_world_stop(w);
}

static void caps_hold_with_agents_on_the_wall_clock(void **state)
{
    (void)state;
    struct run *r = &run_mem;
    memset(r, 0, sizeof(*r));
    const char *only = getenv("EBB_TEST_SEED");
    uint64_t first = only != NULL ? strtoull(only, NULL, 10) : 1;
    uint64_t last = only != NULL ? first : N_SEEDS;
    for (uint64_t seed = first; seed <= last; seed++) {
        print_message("seed %llu\n", (unsigned long long)seed);
        one_seed(r, seed);
    }
    struct tally *t = &r->t;
    print_message("seeds %llu-%llu: %u stops heard, %u checkpoints slower than "
                  "the grace, %u agents hung, %u notices, %u preemptions, %u "
                  "budget_exhausted, %u paused by the team cap, %u stopped "
                  "without a checkpoint for a price spike, %u succeeded\n",
                  (unsigned long long)first, (unsigned long long)last, t->stops,
                  t->slow, t->hung, t->notices, t->preemptions, t->exhausted,
                  t->team_pauses, t->at_once, t->succeeded);
    if (only != NULL)
        return;
    /* The runs went through what the test is about. */
    assert_true(t->slow > 0);
    assert_true(t->hung > 0);
    assert_true(t->notices > 0);
    assert_true(t->exhausted > 0);
    assert_true(t->team_pauses > 0);
    assert_true(t->succeeded > 0);
}

/* The grace arithmetic on one job at x120 (engine_grace.c): a 60 s grace
 * becomes 20 minutes of market time where an agent runs the job (10 s of
 * wall time), the sim market's own instances keep 60 s, and at x1 both
 * keep 60 s; a release may bill 30 s more at x120 (250 ms of wall time),
 * 1 s at x1. Once ebbd stops the job, the agent is told what is left of
 * the grace at its next report, and an agent that never answers again has
 * its instance released when the grace ends, billed to that instant. */
static void grace_is_priced_told_and_enforced(void **state)
{
    (void)state;
    struct run *r = &run_mem;
    memset(r, 0, sizeof(*r));
    struct budget_world *w = &r->w;
    ebb_time_ms start = ebb_days_from_civil(2020, 1, 30) * DAY;
    budget_world_start(w, 7, start, start + DAY, "  runner: {}\n",
                       "run_on: {sim: runner}\n");
    struct ebb__engine *e = w->v.engine;
    e->opt.run_on = w->v.config->run_on;
    e->opt.n_run_on = w->v.config->n_run_on;
    e->opt.agent_heartbeat = HEARTBEAT;
    struct ebb__job *job = budget_world_submit(w, "name: g\nrun: [python, t.py]\n"
        "work: 10h\nmarket: spot\npolicy: greedy\n"
        "checkpoint: {every: 30m, grace: 60s}\n");
    ebb__clock_run_until(&w->v.clock, start + MINUTE);
    struct ebb__attempt *a = job->current;
    assert_non_null(a);
    assert_true(a->launched);

    w->v.clock.speed = 1;
    assert_int_equal(ebb__engine_offer_grace(job, a->offer), 60 * S);
    assert_int_equal(ebb__engine_release_slack(e), S);
    w->v.clock.speed = 120;
    assert_int_equal(ebb__engine_offer_grace(job, a->offer), 20 * MINUTE);
    assert_int_equal(ebb__engine_attempt_grace(job), 20 * MINUTE);
    assert_int_equal(ebb__engine_release_slack(e), 30 * S);
    /* The sim market alone simulates the job in market time. */
    e->opt.n_run_on = 0;
    assert_int_equal(ebb__engine_offer_grace(job, a->offer), 60 * S);
    e->opt.n_run_on = w->v.config->n_run_on;
    assert_int_equal(ebb__engine_grace_end(job), INT64_MAX);

    struct ebb__agent_reply reply;
    ebb__engine_agent_report(job, 0, &(struct ebb__agent_report){
        .kind = EBB__AGENT_STARTED}, &reply);
    assert_int_equal(reply.command, EBB__AGENT_NONE);
    ebb_time_ms stop_at = now_of(r);
    ebb__engine_release(job, EBB__JOB_PAUSED, SIZE_MAX, "a test stops it");
    assert_int_equal(ebb__engine_grace_end(job), stop_at + 20 * MINUTE);
    /* The next report, 5 s of wall time later, hears the stop with the
     * 5 s of wall time left. */
    ebb__clock_run_until(&w->v.clock, stop_at + market(r, HEARTBEAT));
    ebb__engine_agent_report(job, 0, &(struct ebb__agent_report){
        .kind = EBB__AGENT_HEARTBEAT}, &reply);
    assert_int_equal(reply.command, EBB__AGENT_STOP);
    assert_int_equal(reply.grace, 5 * S);
    char token[EBB__TOKEN_SIZE];
    snprintf(token, sizeof(token), "%s", a->token);
    ebb_time_ms launched = a->launched_at;
    /* The agent hangs: ebbd releases the instance when the grace ends. */
    ebb__clock_run_until(&w->v.clock, stop_at + 20 * MINUTE - 1);
    assert_ptr_equal(job->current, a);
    ebb__clock_run_until(&w->v.clock, stop_at + 20 * MINUTE);
    assert_true(job->current == NULL || strcmp(job->current->token, token) != 0);
    assert_int_equal(budget_world_sql_int(w, "SELECT max(end_at) FROM ledger "
                                          "WHERE instance_token = ?1", token, 0, 0),
                     stop_at + 20 * MINUTE);
    assert_int_equal(budget_world_sql_int(w, "SELECT min(start_at) FROM ledger "
                                          "WHERE instance_token = ?1", token, 0, 0),
                     launched);
    char *st = budget_world_sql_text(w, "SELECT state FROM instances WHERE "
                                     "token = ?1", token);
    assert_string_equal(st, "terminated");
    free(st);
    budget_world_stop(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(grace_is_priced_told_and_enforced,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(caps_hold_with_agents_on_the_wall_clock,
                                  budget_world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
