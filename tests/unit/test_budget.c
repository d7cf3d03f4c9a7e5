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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "budget_world.h"
#include "engine/engine.h"
#include "engine/vengine.h"

#define MINUTE EBB_MS_PER_MINUTE
#define H EBB_MS_PER_HOUR
#define DAY EBB_MS_PER_DAY
#define USD EBB_MICROS_PER_UNIT

#define N_SEEDS 60

static struct budget_world world_mem; /* not on a stack a failed test unwinds */

/* Runs the clock instant by instant up to `end`, checking after each. */
static uint64_t run_checked(struct budget_world *w, ebb_time_ms end)
{
    uint64_t instants = 0;
    for (;;) {
        ebb_time_ms due = ebb__clock_next_due(&w->v.clock);
        if (due > end)
            break;
        ebb__clock_run_until(&w->v.clock, due);
        budget_world_check_caps(w, ebb__clock_now(&w->v.clock));
        instants++;
    }
    return instants;
}

/* ---- tests ---------------------------------------------------------------- */

struct tally {
    unsigned at_once, preemptions, exhausted, price_pauses, team_pauses,
        succeeded, month_wakes;
};

static void count_outcomes(struct budget_world *w, struct tally *t)
{
    for (size_t i = 0; i < w->n_jobs; i++) {
        const struct ebb__job *job = w->jobs[i];
        t->preemptions += budget_world_info(job).preemptions;
        t->exhausted += budget_world_info(job).state == EBB__JOB_BUDGET_EXHAUSTED;
        t->succeeded += budget_world_info(job).state == EBB__JOB_SUCCEEDED;
        t->price_pauses += (unsigned)budget_world_sql_int(w, "SELECT count(*) FROM job_events "
            "WHERE job_id = ?1 AND reason LIKE 'budget: spent%'",
            budget_world_info(job).id, 0, 0);
        t->at_once += (unsigned)budget_world_sql_int(w, "SELECT count(*) FROM job_events "
            "WHERE job_id = ?1 AND reason LIKE '%no room%'", budget_world_info(job).id, 0, 0);
        t->team_pauses += (unsigned)budget_world_sql_int(w, "SELECT count(*) FROM job_events "
            "WHERE job_id = ?1 AND reason LIKE 'team ml budget:%'",
            budget_world_info(job).id, 0, 0);
        /* Jobs the team's cap stopped in January that ran in February. */
        ebb_time_ms feb = ebb_days_from_civil(2020, 2, 1) * DAY;
        int stopped_in_jan = budget_world_sql_int(w, "SELECT count(*) FROM job_events "
            "WHERE job_id = ?1 AND reason LIKE 'team ml budget:%' AND at < ?2",
            budget_world_info(job).id, feb, 0) > 0;
        int ran_in_feb = budget_world_sql_int(w, "SELECT count(*) FROM instances WHERE "
            "job_id = ?1 AND requested_at >= ?2", budget_world_info(job).id, feb, 0) > 0;
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
        struct budget_world *w = &world_mem;
        budget_world_start(w, seed, start, end, "", "");
        static const char *const policies[] = {"greedy", "uniform-progress",
                                               "trough"};
        budget_world_submit_random(w, policies, 180);
        instants += run_checked(w, end);
        count_outcomes(w, &t);
        budget_world_stop(w);
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

/* A world on the flat market of tests/data/engine/prices_flat.csv
 * (0.90 USD/h in us-east-1a) from 2020-01-01, jobs planned by `policy`. */
static ebb_time_ms flat_world(struct budget_world *w, const char *policy)
{
    ebb_time_ms start = ebb_days_from_civil(2020, 1, 1) * DAY;
    memset(w, 0, sizeof(*w));
    budget_world_live = w;
    const char *root = getenv("EBB_SOURCE_ROOT");
    char text[1024];
    snprintf(text, sizeof(text), "providers:\n  sim:\n    prices: \"%s/tests/"
             "data/engine/prices_flat.csv\"\ndefault_policy: %s\n",
             root ? root : ".", policy);
    struct ebb_diag d = {{0}};
    if (ebb__vengine_open(&w->v, "(test)", text, NULL, start, &d) != 0)
        fail_msg("%s", d.msg);
    ebb__clock_run_until(&w->v.clock, start);
    return start;
}

/* On a flat market a job runs until the next checkpoint interval no
 * longer fits its cap; it checkpoints and ends budget_exhausted (no lower
 * price can come), its checkpoint kept and the reason saying what it
 * spent of what. */
static void capped_job_ends_budget_exhausted(void **state)
{
    (void)state;
    struct budget_world *w = &world_mem;
    ebb_time_ms start = flat_world(w, "greedy");
    /* 0.90 USD/h: 30m of work cost 0.45 USD; a 1.50 USD cap pays for the
     * first stretch (5m restart, 30m, 60s grace: 0.54 USD) and one more
     * (0.465), not a third. */
    struct ebb__job *job = budget_world_submit(w, "name: capped\n"
        "run: [python, train.py]\nrestart_overhead: 5m\nwork: 10h\n"
        "market: spot\ncheckpoint:\n  every: 30m\n  grace: 60s\n"
        "budget: 1.50 USD\n");
    run_checked(w, start + DAY);

    struct ebb__job_info ji = budget_world_info(job);
    assert_int_equal(ji.state, EBB__JOB_BUDGET_EXHAUSTED);
    assert_false(ji.has_instance);
    assert_true(ji.spent <= 3 * USD / 2);
    assert_true(ji.spent > USD);
    /* Its checkpoint is kept: the work it saved is the last one recorded. */
    assert_true(ji.work_saved >= 60 * MINUTE);
    assert_int_equal(budget_world_sql_int(w, "SELECT max(work_done_ms) FROM "
                                          "checkpoints WHERE job_id = ?1",
                                          ji.id, 0, 0),
                     ji.work_saved);
    /* The reason, as `ebb job show` lists it with the job's events. */
    char *why = budget_world_sql_text(w, "SELECT reason FROM job_events WHERE "
                                      "job_id = ?1 AND to_state = "
                                      "'budget_exhausted'", ji.id);
    assert_non_null(strstr(why, "budget: exhausted, spent "));
    assert_non_null(strstr(why, " of 1.50 USD"));
    assert_non_null(strstr(why, "cheapest step"));
    free(why);
    budget_world_stop(w);
}

/* A budget below any first step (restart, one checkpoint interval, grace)
 * ends the job budget_exhausted at once under every policy, the default
 * deadline policy included (it used to wait for ever, saying nothing). */
static void budget_below_any_step_ends_under_every_policy(void **state)
{
    (void)state;
    static const char *const policies[] = {"deadline", "greedy",
                                           "uniform-progress", "trough",
                                           "on-demand"};
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        struct budget_world *w = &world_mem;
        ebb_time_ms start = flat_world(w, policies[i]);
        struct ebb__job *job = budget_world_submit(w, "name: tiny\n"
            "run: [python, train.py]\nwork: 2h\ndeadline: 12h\n"
            "checkpoint: {every: 30m, grace: 60s}\nbudget: 0.05 USD\n");
        run_checked(w, start + H);
        struct ebb__job_info ji = budget_world_info(job);
        if (ji.state != EBB__JOB_BUDGET_EXHAUSTED)
            fail_msg("policy %s: the job is %s, not budget_exhausted",
                     policies[i], ebb__job_state_name(ji.state));
        assert_int_equal(ji.spent, 0);
        char *why = budget_world_sql_text(w, "SELECT reason FROM job_events "
                                          "WHERE job_id = ?1 AND to_state = "
                                          "'budget_exhausted'", ji.id);
        assert_non_null(strstr(why, "budget: exhausted, spent 0.00 USD of "
                                    "0.05 USD; the cheapest step left"));
        free(why);
        budget_world_stop(w);
    }
}

/* The deadline policy's "only X left" counts what the running instance
 * has cost so far, not only what the ledger billed (which is nothing
 * until an instance ends). */
static void deadline_policy_counts_the_running_instance(void **state)
{
    (void)state;
    struct budget_world *w = &world_mem;
    ebb_time_ms start = flat_world(w, "deadline");
    struct ebb__job *job = budget_world_submit(w, "name: left\n"
        "run: [python, train.py]\nrestart_overhead: 5m\nwork: 10h\n"
        "market: spot\ncheckpoint:\n  every: 30m\n  grace: 60s\n"
        "budget: 1.50 USD\n");
    run_checked(w, start + DAY);
    struct ebb__job_info ji = budget_world_info(job);
    char *why = budget_world_sql_text(w, "SELECT reason FROM job_events WHERE "
                                      "job_id = ?1 AND reason LIKE "
                                      "'%only % left%'", ji.id);
    char *at = budget_world_sql_text(w, "SELECT at FROM job_events WHERE "
                                     "job_id = ?1 AND reason LIKE "
                                     "'%only % left%'", ji.id);
    char *since = budget_world_sql_text(w, "SELECT started_at FROM instances "
                                        "WHERE job_id = ?1 ORDER BY "
                                        "requested_at LIMIT 1", ji.id);
    const char *only = strstr(why, "only ");
    if (only == NULL)
        fail_msg("no \"only ... left\" among the job's events");
    /* 0.90 USD/h is 250 micro-USD a second, billed from the launch. */
    double left = strtod(only + 5, NULL);
    double spent = 250.0 * (double)(strtoll(at, NULL, 10) -
                                    strtoll(since, NULL, 10)) / 1000 / USD;
    if (left < 1.50 - spent - 0.006 || left > 1.50 - spent + 0.006)
        fail_msg("\"%s\": %.2f left, but the instance had cost %.4f of "
                 "1.50 by then", why, left, spent);
    assert_true(left < 0.5);
    assert_true(ji.spent <= 3 * USD / 2);
    free(why);
    free(at);
    free(since);
    budget_world_stop(w);
}

/* A gang's step counts each node: on the flat market (0.90 USD/h) a
 * 2-node job commits twice what a single instance does for the same
 * stretch (5m restart, 30m, 60s grace: 0.54 USD a node) and accrues
 * twice as fast; a 0.80 USD cap fits one node's first stretch, not two
 * nodes', so the gang ends budget_exhausted at once, saying so. */
static void a_gangs_step_counts_each_node(void **state)
{
    (void)state;
    struct budget_world *w = &world_mem;
    ebb_time_ms start = flat_world(w, "greedy");
    static const char job[] = "run: [python, train.py]\nrestart_overhead: 5m\n"
                              "work: 10h\nmarket: spot\n"
                              "checkpoint: {every: 30m, grace: 60s}\n";
    char yaml[512];
    struct ebb__job *jobs[4];
    static const char *const more[] = {
        "name: one\nbudget: 5 USD\n", "name: two\nbudget: 5 USD\nnodes: 2\n",
        "name: one-tight\nbudget: 0.80 USD\n",
        "name: two-tight\nbudget: 0.80 USD\nnodes: 2\n",
    };
    for (int i = 0; i < 4; i++) {
        snprintf(yaml, sizeof(yaml), "%s%s", job, more[i]);
        jobs[i] = budget_world_submit(w, yaml);
    }
    ebb__clock_run_until(&w->v.clock, start);
    struct ebb__budget_usage u[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(ebb__engine_job_budget(jobs[i], start, &u[i]), 0);
    /* 36 min 1 s (the release's second) at 0.90 USD/h */
    assert_int_equal(u[0].committed, 540250);
    assert_int_equal(u[1].committed, 2 * u[0].committed);
    assert_true(budget_world_info(jobs[2]).has_instance);
    struct ebb__job_info gang = budget_world_info(jobs[3]);
    assert_int_equal(gang.state, EBB__JOB_BUDGET_EXHAUSTED);
    assert_int_equal(gang.attempts, 0);
    char *why = budget_world_sql_text(w, "SELECT reason FROM job_events WHERE "
                                      "job_id = ?1 AND to_state = "
                                      "'budget_exhausted'", gang.id);
    assert_string_equal(why, "budget: exhausted, spent 0.00 USD of 0.80 USD; the "
                        "cheapest step left (restart, one checkpoint interval, "
                        "grace) costs up to 1.0805 USD");
    free(why);

    ebb_time_ms later = start + 10 * MINUTE;
    ebb__clock_run_until(&w->v.clock, later);
    for (int i = 0; i < 2; i++)
        assert_int_equal(ebb__engine_job_budget(jobs[i], later, &u[i]), 0);
    assert_int_equal(u[0].spent, 150000); /* 10 min at 0.90 USD/h */
    assert_int_equal(u[1].spent, 2 * u[0].spent);
    budget_world_stop(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(capped_job_ends_budget_exhausted,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(budget_below_any_step_ends_under_every_policy,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(deadline_policy_counts_the_running_instance,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(caps_hold_through_spikes_and_preemptions,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(a_gangs_step_counts_each_node,
                                  budget_world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
