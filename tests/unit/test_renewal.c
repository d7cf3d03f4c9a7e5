/* The renewal policy (policies/renewal/): its model and planner compiled
 * in (rn_model.c, rn_dp.c), and the plugin loaded from the build tree by
 * the real loader.
 *
 * - The model: the chain's transitions against the closed form of a
 *   two-state chain, the EM fit recovering a known mixture from its
 *   bucket counts, the prior's pull on few periods, the belief by age.
 * - The planner: a tiny instance whose optimum is worked out by hand
 *   below, and the value of every action there; a table extended in
 *   pieces equal to one solved at once; the grid's step ladder.
 * - The safety net: the plugin driven by a small event simulator that
 *   asks it only when the engine would (its `until`, or a change of spot
 *   capacity), against adversaries that take spot away at the worst
 *   moment; every feasible deadline is met.
 * - No history: an offer without a record (and a view from an ebbd that
 *   predates the record) plans on the prior alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>

#include <ebb/policy.h>

#include "market/forecast.h" /* ebb__period_bucket: the record's buckets */
#include "policy_harness.h"
#include "rn_dp.h"
#include "rn_model.h"

/* ---- the model ----------------------------------------------------------- */

/* With both up phases ending at lambda and both down phases at mu, the
 * chain is the two-state one: P(up after t | up) = mu/(l+mu) +
 * l/(l+mu) e^(-(l+mu) t). */
static void chain_matches_two_state(void **state)
{
    (void)state;
    struct rn_params p = {.rate = {0.7, 0.7, 2.5, 2.5},
                          .to_short_up = 0.3, .to_short_down = 0.6};
    double m[RN_PHASES][RN_PHASES];
    for (double t = 0.05; t < 20; t *= 3) {
        rn_chain(&p, t, m);
        double l = 0.7, mu = 2.5, a = l + mu;
        double uu = mu / a + l / a * exp(-a * t);
        double dd = l / a + mu / a * exp(-a * t);
        for (int c = 0; c < RN_PHASES; c++) {
            double sum = 0, up = 0;
            for (int d = 0; d < RN_PHASES; d++) {
                assert_true(m[c][d] >= -1e-12);
                sum += m[c][d];
                up += d < RN_UP_PHASES ? m[c][d] : 0;
            }
            assert_true(fabs(sum - 1) < 1e-9);
            assert_true(fabs(up - (c < RN_UP_PHASES ? uu : 1 - dd)) < 1e-9);
        }
    }
}

/* EM recovers a mixture from (large) bucket counts drawn exactly from it. */
static void fit_recovers_mixture(void **state)
{
    (void)state;
    const struct rn_mix truth = {0.7, 0.2, 9.0};
    double probs[EBB_PERIOD_BUCKETS];
    rn_bucket_probs(&truth, probs);
    unsigned counts[EBB_PERIOD_BUCKETS];
    for (int b = 0; b < EBB_PERIOD_BUCKETS; b++)
        counts[b] = (unsigned)lround(probs[b] * 1e6);
    const struct rn_mix start = {0.5, 1.0, 4.0};
    struct rn_mix fit;
    rn_fit(counts, &start, 0, &fit);
    assert_true(fabs(fit.p_short - 0.7) < 0.01);
    assert_true(fabs(fit.short_h - 0.2) / 0.2 < 0.03);
    assert_true(fabs(fit.long_h - 9.0) / 9.0 < 0.03);
}

/* No record: the prior. Two periods against a prior of 4: the fit moves
 * toward the data but the prior still counts; 400 periods: the data. */
static void fit_prior_and_record(void **state)
{
    (void)state;
    const struct rn_mix prior = {0.5, 0.25, 8.0};
    struct rn_mix fit;
    rn_fit(NULL, &prior, 4, &fit);
    assert_true(fabs(fit.p_short - 0.5) < 0.05);
    assert_true(fabs(fit.long_h - 8.0) / 8.0 < 0.1);
    unsigned counts[EBB_PERIOD_BUCKETS] = {0};
    counts[ebb__period_bucket(90 * MIN)] = 2; /* two periods of 64-128 min */
    rn_fit(counts, &prior, 4, &fit);
    double mean = fit.p_short * fit.short_h + (1 - fit.p_short) * fit.long_h;
    double prior_mean = 0.5 * 0.25 + 0.5 * 8.0;
    assert_true(mean < prior_mean);
    assert_true(mean > 1.0);
    counts[ebb__period_bucket(90 * MIN)] = 400;
    rn_fit(counts, &prior, 4, &fit);
    mean = fit.p_short * fit.short_h + (1 - fit.p_short) * fit.long_h;
    assert_true(mean > 64.0 / 60 && mean < 128.0 / 60);
}

/* A fresh period is short with the mixture's share; one that has lasted
 * many short lengths is surely long. */
static void belief_by_age(void **state)
{
    (void)state;
    const struct rn_mix up = {0.8, 0.25, 10}, down = {0.3, 0.1, 5};
    double b[RN_PHASES];
    rn_belief(&up, &down, 1, 0, b);
    assert_true(fabs(b[0] - 0.8) < 1e-12 && fabs(b[1] - 0.2) < 1e-12);
    assert_true(b[2] == 0 && b[3] == 0);
    rn_belief(&up, &down, 1, 3, b);
    assert_true(b[1] > 0.999);
    rn_belief(&up, &down, 0, 0, b);
    assert_true(fabs(b[2] - 0.3) < 1e-12 && b[0] == 0);
    rn_belief(&up, &down, 0, 1e6, b); /* no underflow to 0/0 */
    assert_true(fabs(b[2] + b[3] - 1) < 1e-12 && b[3] > 0.999);
}

/* ---- the planner on a tiny instance -------------------------------------- */

/* One step (1 h) of work left, two steps of slack, restart = one step.
 * Spot costs 1 per hour, on-demand 3; up periods end at ln 2 per hour (so
 * spot survives a step with probability 1/2), down periods never end.
 * Idle with spot up at (i = 1, j = 2), by hand (S spot, I idle, O
 * on-demand; u/d spot up/down; a start spends a step of slack and pays
 * it, then the chain has moved one step):
 *   S(1, 0) = 1 (run the step); S(1, 1) = 1.
 *   I_d(1, 0) = infeasible (no slack for a start);
 *   I_d(1, 1) = start on-demand: 3 + O(1, 0) = 3 + 3 = 6.
 *   start spot at (1, 2): 1 + 1/2 S(1, 1) + 1/2 I_d(1, 1) = 1 + 0.5 + 3
 *     = 4.5;
 *   start on-demand: 3 + O(1, 1) = 3 + 3 = 6;
 *   wait: 1/2 I_u(1, 1) + 1/2 I_d(1, 1), with I_u(1, 1) = min(start spot:
 *     1 + 1/2 S(1, 0) + 1/2 I_d(1, 0) = infeasible, start on-demand 6) = 6,
 *     so 6.
 * The optimum is 4.5, by starting spot. On spot at (1, 0) the only
 * choice is to run the step (1); idle with spot down at (1, 1) it is
 * on-demand (6). */
static void planner_tiny_instance(void **state)
{
    (void)state;
    struct rn_params p = {
        .rate = {log(2.0), log(2.0), 0, 0},
        .to_short_up = 0.5, .to_short_down = 0.5,
        .spot_price = 1, .od_price = 3,
        .step_ms = 3600000, .k = 1, .nw = 1, .ns = 2,
    };
    struct rn_table t;
    assert_int_equal(rn_solve(&p, &t), 0);
    const double up[RN_PHASES] = {0.5, 0.5, 0, 0};
    const double down[RN_PHASES] = {0, 0, 0.5, 0.5};
    float v;
    assert_int_equal(rn_best(&t, 1, 2, RN_JOB_IDLE, up, RN_ALL, &v), RN_RUN_SPOT);
    assert_true(fabsf(v - 4.5f) < 1e-5f);
    assert_true(fabsf(rn_action_value(&t, 1, 2, RN_JOB_IDLE, up, RN_RUN_OD) -
                      6.0f) < 1e-5f);
    assert_true(fabsf(rn_action_value(&t, 1, 2, RN_JOB_IDLE, up, RN_WAIT) -
                      6.0f) < 1e-5f);
    assert_true(fabsf(rn_value(&t, 1, 0, RN_SPOT(0)) - 1.0f) < 1e-6f);
    assert_true(rn_value(&t, 1, 0, RN_IDLE(2)) >= RN_BIG);
    assert_int_equal(rn_best(&t, 1, 1, RN_JOB_IDLE, down, RN_ALL, &v), RN_RUN_OD);
    assert_true(fabsf(v - 6.0f) < 1e-5f);
    assert_true(rn_action_value(&t, 1, 1, RN_JOB_IDLE, down, RN_RUN_SPOT) >=
                RN_BIG);
    assert_true(rn_value(&t, 0, 0, RN_IDLE(0)) == 0); /* done */
    rn_table_free(&t);
    struct rn_params bad = p;
    bad.rate[1] = -1;
    assert_int_equal(rn_solve(&bad, &t), -1);
    assert_null(t.row);
}

/* A table extended in pieces (a small job's rectangle, then a wide one
 * and a tall one: a staircase) holds, at every point, the bytes a table
 * solved at once for the whole rectangle holds. */
static void extend_as_solved(void **state)
{
    (void)state;
    struct rn_params p = {
        .rate = {3.0, 0.05, 4.0, 0.2},
        .to_short_up = 0.7, .to_short_down = 0.8,
        .spot_price = 0.97e6, .od_price = 3.06e6,
        .step_ms = 6 * MIN, .k = 2, .nw = 10, .ns = 12,
    };
    struct rn_table part, whole;
    assert_int_equal(rn_solve(&p, &part), 0);
    assert_true(rn_covers(&part, 10, 12));
    assert_false(rn_covers(&part, 11, 0));
    assert_false(rn_covers(&part, 0, 13));
    assert_int_equal(rn_extend(&part, 40, 5), 0);  /* wide */
    assert_int_equal(rn_extend(&part, 3, 60), 0);  /* tall */
    assert_true(rn_covers(&part, 40, 5) && rn_covers(&part, 3, 60));
    assert_false(rn_covers(&part, 40, 6));
    assert_false(rn_covers(&part, 11, 13));
    assert_int_equal((int)part.points, 61 * 4 + 13 * 7 + 6 * 30);
    p.nw = 40;
    p.ns = 60;
    assert_int_equal(rn_solve(&p, &whole), 0);
    for (int i = 0; i <= 40; i++)
        for (int j = 0; j <= part.ext[i]; j++)
            for (int v = 0; v < RN_VALUES; v++) {
                float a = rn_value(&part, i, j, v), b = rn_value(&whole, i, j, v);
                assert_memory_equal(&a, &b, sizeof(a));
            }
    rn_table_free(&part);
    rn_table_free(&whole);
}

/* A random chain on a 60 x 40 grid of minutes for the planner's checks:
 * short up periods ending at up_lo + 0..9 up_step per hour, short down
 * ones at down_lo + 0..9 down_step, long ones at 0.01-0.1 per hour. */
static struct rn_params random_chain(double up_lo, double up_step, double down_lo,
                                     double down_step)
{
    double up_short = up_lo + rand() % 10 * up_step;
    double up_long = 0.01 + rand() % 10 / 100.0;
    double down_short = down_lo + rand() % 10 * down_step;
    double down_long = 0.01 + rand() % 10 / 100.0;
    double su = 0.1 + rand() % 8 / 10.0, sd = 0.1 + rand() % 8 / 10.0;
    return (struct rn_params){
        .rate = {up_short, up_long, down_short, down_long},
        .to_short_up = su, .to_short_down = sd,
        .spot_price = 0.97e6, .od_price = 3.06e6,
        .step_ms = MIN, .k = 1 + rand() % 3, .nw = 60, .ns = 40,
    };
}

/* Waiting for spot that is down is valued without learning the phase
 * (rn_dp.c, wait_down_value): on random chains, points and beliefs it is
 * never below the table's value (that of a job told the phase after one
 * step) but by a step's discretisation, the choice between waiting and
 * on-demand follows it, and there are points where the table's value
 * would wait and the job now starts on-demand; with spot that never
 * comes back, waiting costs exactly the on-demand start it delays. */
static void wait_not_optimistic(void **state)
{
    (void)state;
    srand(7);
    int fewer = 0; /* points where the table would wait and the job does not */
    for (int round = 0; round < 40; round++) {
        struct rn_params p = random_chain(0.05, 0.05, 0.05, 0.2);
        struct rn_table t;
        assert_int_equal(rn_solve(&p, &t), 0);
        for (int q = 0; q < 40; q++) {
            int i = 1 + rand() % 60, j = 1 + rand() % 40;
            double b[RN_PHASES] = {0, 0, rand() % 11 / 10.0, 0};
            b[3] = 1 - b[2];
            double told = 0;
            for (int c = RN_UP_PHASES; c < RN_PHASES; c++)
                for (int n = 0; n < RN_PHASES; n++)
                    told += b[c] * t.one[c][n] * rn_value(&t, i, j - 1, RN_IDLE(n));
            float wait = rn_action_value(&t, i, j, RN_JOB_IDLE, b, RN_WAIT);
            float od = rn_action_value(&t, i, j, RN_JOB_IDLE, b, RN_RUN_OD);
            /* A step's discretisation apart (the table's chain moves in
             * whole steps, the job sees spot come back within one). */
            assert_true(wait >= told * (1 - 1e-3));
            unsigned both = (1u << RN_WAIT) | (1u << RN_RUN_OD);
            enum rn_action a = rn_best(&t, i, j, RN_JOB_IDLE, b, both, NULL);
            if (od < RN_BIG) /* else on-demand: finish as early as possible */
                assert_true(a == RN_WAIT ? wait <= od : od < wait);
            fewer += told < od && a == RN_RUN_OD;
        }
        rn_table_free(&t);
    }
    assert_true(fewer > 0);
    struct rn_params never = {
        .rate = {1, 0.1, 0, 0}, .to_short_up = 0.5, .to_short_down = 0.5,
        .spot_price = 1, .od_price = 3, .step_ms = 3600000, .k = 1,
        .nw = 3, .ns = 3,
    };
    struct rn_table t;
    assert_int_equal(rn_solve(&never, &t), 0);
    const double down[RN_PHASES] = {0, 0, 0.5, 0.5};
    float wait = rn_action_value(&t, 2, 3, RN_JOB_IDLE, down, RN_WAIT);
    float later = rn_action_value(&t, 2, 2, RN_JOB_IDLE, down, RN_RUN_OD);
    assert_true(fabsf(wait - later) < 1e-5f);
    assert_true(wait >= rn_action_value(&t, 2, 3, RN_JOB_IDLE, down, RN_RUN_OD) - 1e-5f);
    assert_int_equal(rn_horizon(&t, 2, 3, RN_JOB_IDLE, down, RN_WAIT), 1);
    rn_table_free(&t);
}

/* Staying on on-demand while spot is up is valued without learning the
 * phase too (rn_dp.c, stay_up_value): never below the table's value but
 * by a step's discretisation, the choice between spot and on-demand
 * follows it, and there are points where the table's value would stay
 * and the job now moves to spot; with spot that never goes, staying a
 * step costs exactly that step on on-demand before the same move, and
 * with no slack to move, staying costs the rest on on-demand. */
static void stay_not_optimistic(void **state)
{
    (void)state;
    srand(11);
    int fewer = 0; /* points where the table would stay and the job moves */
    for (int round = 0; round < 40; round++) {
        struct rn_params p = random_chain(1, 3, 0.05, 0.05);
        struct rn_table t;
        assert_int_equal(rn_solve(&p, &t), 0);
        double co = p.od_price * p.step_ms / 3600000.0;
        for (int q = 0; q < 40; q++) {
            int i = 2 + rand() % 59, j = rand() % 41;
            double b[RN_PHASES] = {rand() % 11 / 10.0, 0, 0, 0};
            b[1] = 1 - b[0];
            double told = 0;
            for (int c = 0; c < RN_UP_PHASES; c++)
                for (int n = 0; n < RN_PHASES; n++)
                    told += b[c] * t.one[c][n] * (co + rn_value(&t, i - 1, j, RN_OD(n)));
            float stay = rn_action_value(&t, i, j, RN_JOB_OD, b, RN_RUN_OD);
            float spot = rn_action_value(&t, i, j, RN_JOB_OD, b, RN_RUN_SPOT);
            assert_true(stay >= told * (1 - 1e-3));
            unsigned both = (1u << RN_RUN_SPOT) | (1u << RN_RUN_OD);
            enum rn_action a = rn_best(&t, i, j, RN_JOB_OD, b, both, NULL);
            assert_true(a == RN_RUN_SPOT ? spot <= stay : stay < spot);
            fewer += told < spot && a == RN_RUN_SPOT;
        }
        rn_table_free(&t);
    }
    assert_true(fewer > 0);
    struct rn_params never = {
        .rate = {0, 0, 1, 1}, .to_short_up = 0.5, .to_short_down = 0.5,
        .spot_price = 1, .od_price = 3, .step_ms = 3600000, .k = 1,
        .nw = 3, .ns = 3,
    };
    struct rn_table t;
    assert_int_equal(rn_solve(&never, &t), 0);
    const double up[RN_PHASES] = {0.5, 0.5, 0, 0};
    float stay = rn_action_value(&t, 3, 3, RN_JOB_OD, up, RN_RUN_OD);
    float later = 3 + rn_action_value(&t, 2, 3, RN_JOB_OD, up, RN_RUN_SPOT);
    assert_true(fabsf(stay - later) < 1e-5f);
    assert_int_equal(rn_best(&t, 3, 3, RN_JOB_OD, up, RN_ALL, NULL), RN_RUN_SPOT);
    /* That plan's horizon, when the job is to be asked again: one step;
     * none for a value read from the table. */
    assert_int_equal(rn_horizon(&t, 3, 3, RN_JOB_OD, up, RN_RUN_OD), 1);
    assert_int_equal(rn_horizon(&t, 3, 3, RN_JOB_OD, up, RN_RUN_SPOT), 0);
    /* No slack for a restart: staying is finishing on on-demand, 3 steps
     * at 3. */
    assert_true(rn_action_value(&t, 3, 0, RN_JOB_OD, up, RN_RUN_SPOT) >= RN_BIG);
    assert_true(fabsf(rn_action_value(&t, 3, 0, RN_JOB_OD, up, RN_RUN_OD) - 9) < 1e-5f);
    rn_table_free(&t);
}

/* The step ladder: jobs of different shapes with one restart overhead
 * land on a few steps (restarts of 1, 2, 3, 4, 6, 8, ... steps), and jobs
 * whose overhead is planned as none share one step whatever it is. */
static void grid_ladder(void **state)
{
    (void)state;
    static const int ladder[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
    for (int w = 5; w <= 44; w += 3)
        for (int d = 50; d <= 86; d += 4)
            for (int o = 3; o <= 12; o++) {
                struct rn_params p;
                rn_grid(w * H, (d - w) * H, o * MIN, &p);
                double least = sqrt(w * H * (d - w) * H / RN_GRID_POINTS);
                if (p.k == 0) {
                    assert_true(o * MIN < least / 2);
                    double n = 2 * log2(p.step_ms / 1000);
                    assert_true(fabs(n - nearbyint(n)) < 1e-9);
                    assert_true(p.step_ms >= least && p.step_ms < least * sqrt(2) + 1e-6);
                    continue;
                }
                int on = 0;
                for (size_t q = 0; q < sizeof(ladder) / sizeof(ladder[0]); q++)
                    on |= ladder[q] == p.k;
                assert_true(on);
                assert_true(fabs(p.step_ms * p.k - o * MIN) < 1e-6);
                assert_true(p.step_ms >= least || p.k == 1);
            }
    struct rn_params a, b;
    rn_grid(40 * H, 30 * H, 10, &a); /* overheads planned as none */
    rn_grid(40 * H, 31 * H, 20000, &b);
    assert_int_equal(a.k, 0);
    assert_int_equal(b.k, 0);
    assert_true(a.step_ms == b.step_ms);
}

/* The grid: a restart is a whole number of steps, the work and slack fit. */
static void grid_divides_overhead(void **state)
{
    (void)state;
    struct rn_params p;
    rn_grid(48.0 * H, 4.0 * H, 12.0 * MIN, &p);
    assert_true(p.k >= 1);
    assert_true(fabs(p.step_ms * p.k - 12.0 * MIN) < 1e-6);
    assert_true(p.nw * p.step_ms >= 48.0 * H);
    assert_true(p.ns * p.step_ms >= 4.0 * H);
    assert_true((double)p.nw * p.ns <= 4 * RN_GRID_POINTS);
    rn_grid(48.0 * H, 12.0 * H, 3.0 * MIN, &p);
    assert_int_equal(p.k, 1);
    rn_grid(30.0 * 24 * H, 30.0 * 24 * H, 10000, &p); /* tiny overhead */
    assert_int_equal(p.k, 0);
}

/* ---- the plugin ------------------------------------------------------------ */

struct sim {
    struct ph_pol pol;
    struct ebb_job_view job;
    struct ebb_offer offers[2]; /* SPOT_OD */
    double done;                /* reference work ms */
    ebb_time_ms now;
    unsigned spot_starts, od_starts, decisions;
};

/* How the adversary sets spot capacity each minute, from the job's state. */
typedef int (*adversary_fn)(const struct sim *s, long minute);

/* Spot is there whenever the job is not on it, and goes the minute its
 * restart overhead ends: every spot start is wasted, at the worst moment. */
static int adv_worst(const struct sim *s, long minute)
{
    (void)minute;
    if (s->job.running_offer != 0)
        return 1;
    return s->now < s->job.running_since + s->job.restart_overhead;
}

/* Spot flaps pseudo-randomly (a fixed LCG per run), up a third of the time
 * in stretches of 1-60 minutes. */
static unsigned long adv_seed;
static int adv_flaps(const struct sim *s, long minute)
{
    (void)s;
    static int up;
    static long until;
    if (minute == 0)
        until = 0;
    if (minute >= until) {
        adv_seed = adv_seed * 6364136223846793005UL + 1442695040888963407UL;
        up = (adv_seed >> 33) % 3 == 0;
        until = minute + 1 + (long)((adv_seed >> 40) % 60);
    }
    return up;
}

/* Spot for the first 20 h, then gone for good. */
static int adv_vanish(const struct sim *s, long minute)
{
    (void)s;
    return minute < 20 * 60;
}

/* Spot for the first 38 h 50 min, gone for 4 h 54 min, then back: a job
 * of 48 h meets the gap with 9.4 h of work and 3.8 h of slack left. */
static int adv_gap(const struct sim *s, long minute)
{
    (void)s;
    return minute < 2330 || minute >= 2330 + 294;
}

/* Runs the job minute by minute (the spot offer's availability_since
 * moves as capacity changes); the policy is asked as the engine asks:
 * at its `until`, when spot capacity changes, and when the job's instance
 * is lost or released (until 0: on events only). Progress counts after each start's
 * restart overhead. Returns when the work is done (its time) or 0 when
 * the time ran out. */
static ebb_time_ms sim_run(struct sim *s, adversary_fn adv, long minutes)
{
    ebb_time_ms ask = s->job.submitted_at;
    int last_up = -1;
    for (long m = 0; m < minutes; m++) {
        s->now = s->job.submitted_at + m * MIN;
        int up = adv(s, m);
        s->offers[0].available = up;
        if (s->job.running_offer == 0 && !up) {
            s->job.running_offer = SIZE_MAX; /* preempted, work kept */
            s->job.preemptions++;
            ask = s->now;
        }
        if (up != last_up) {
            ask = s->now;
            s->offers[0].availability_since = s->now;
        }
        last_up = up;
        s->job.work_done = (ebb_dur_ms)s->done;
        if (ask > 0 && s->now >= ask) {
            struct ebb_decision d =
                ph_decide_ok(&s->pol, &s->job, s->offers, 2, s->now);
            s->decisions++;
            if (d.kind == EBB_DECIDE_LAUNCH) {
                s->job.running_offer = d.offer;
                s->job.running_since = s->now;
                if (d.offer == 0)
                    s->spot_starts++;
                else
                    s->od_starts++;
            }
            ask = d.until > s->now ? d.until : 0;
            if (d.kind == EBB_DECIDE_STOP) { /* the release is an event */
                s->job.running_offer = SIZE_MAX;
                ask = s->now + MIN;
            }
        }
        if (s->job.running_offer != SIZE_MAX) {
            ebb_time_ms from = s->job.running_since + s->job.restart_overhead;
            ebb_time_ms start = from > s->now ? from : s->now;
            if (start < s->now + MIN)
                s->done += (double)(s->now + MIN - start) *
                           s->offers[s->job.running_offer].speed;
        }
        if (s->done >= (double)s->job.work_total)
            return s->now + MIN;
    }
    return 0;
}

/* The Can't-Be-Late job: 48 h of work, a 52 h deadline, 12 min restarts. */
static void sim_init(struct sim *s, const char *yaml, ebb_dur_ms deadline_h,
                     ebb_dur_ms overhead)
{
    memset(s, 0, sizeof(*s));
    s->pol = ph_load("renewal", yaml);
    s->job = ph_job10();
    s->job.work_total = 48 * H;
    s->job.deadline = s->job.submitted_at + deadline_h * H;
    s->job.restart_overhead = overhead;
    struct ebb_offer o[] = {SPOT("p3.2xlarge", 0.9701, 1.0, 1),
                            OD("p3.2xlarge", 3.06, 1.0)};
    memcpy(s->offers, o, sizeof(o));
}

static void safety_net_worst_moment(void **state)
{
    (void)state;
    static const ebb_dur_ms overheads[] = {12 * MIN, 3 * MIN, 30 * MIN};
    for (size_t k = 0; k < 3; k++) {
        struct sim s;
        sim_init(&s, NULL, 52, overheads[k]);
        ebb_time_ms end = sim_run(&s, adv_worst, 60 * 60);
        if (end == 0)
            fail_msg("overhead %lld min: unfinished, %.1f h done, %u spot "
                     "and %u on-demand starts, %u decisions",
                     (long long)(overheads[k] / MIN), s.done / H,
                     s.spot_starts, s.od_starts, s.decisions);
        assert_true(end <= s.job.deadline);
        ph_unload(&s.pol);
    }
}

static void safety_net_random_flaps(void **state)
{
    (void)state;
    for (unsigned long seed = 1; seed <= 40; seed++) {
        adv_seed = seed;
        struct sim s;
        sim_init(&s, NULL, seed % 2 ? 52 : 60, seed % 3 ? 12 * MIN : 3 * MIN);
        ebb_time_ms end = sim_run(&s, adv_flaps, 80 * 60);
        assert_true(end > 0);
        assert_true(end <= s.job.deadline);
        ph_unload(&s.pol);
    }
}

/* A prior that believes spot comes back at once and stays for days: the
 * model is wrong, the net still holds when spot goes for good. */
static void safety_net_wrong_model(void **state)
{
    (void)state;
    struct sim s;
    sim_init(&s, "{up_short: 10h, up_long: 100h, down_short: 1m, "
                 "down_long: 2m, prior_weight: 1000}",
             52, 12 * MIN);
    ebb_time_ms end = sim_run(&s, adv_vanish, 60 * 60);
    assert_true(end > 0 && end <= s.job.deadline);
    assert_true(s.od_starts >= 1);
    ph_unload(&s.pol);
}

/* A job that cannot be saved any more runs on on-demand. */
static void infeasible_runs_on_demand(void **state)
{
    (void)state;
    struct sim s;
    sim_init(&s, NULL, 52, 12 * MIN);
    s.job.deadline = s.job.submitted_at + 47 * H;
    ph_decide_is(&s.pol, &s.job, s.offers, 2, s.job.submitted_at, LAUNCH, 1);
    ph_unload(&s.pol);
}

/* No history: the first job on a new pool. Spot there and hours of slack:
 * it starts spot; spot gone: it waits, asking again before the net's
 * floor; little slack: on-demand. The same from a view of the first
 * version (no record fields at all). */
static void no_history(void **state)
{
    (void)state;
    struct sim s;
    sim_init(&s, NULL, 70, 12 * MIN);
    ebb_time_ms now = s.job.submitted_at;
    assert_null(s.offers[0].up_lengths);
    ph_decide_is(&s.pol, &s.job, s.offers, 2, now, LAUNCH, 0);
    s.offers[0].available = 0;
    struct ebb_decision d = ph_decide_is(&s.pol, &s.job, s.offers, 2, now,
                                         WAIT, 0);
    assert_true(d.until > now && d.until <= now + 22 * H);
    /* 20 min of slack, 8 after a restart: waiting is safe only until the
     * net's floor (5 min) is reached; at 16 min it is on-demand at once. */
    s.job.deadline = now + 48 * H + 20 * MIN;
    d = ph_decide_ok(&s.pol, &s.job, s.offers, 2, now);
    if (d.kind == WAIT)
        assert_true(d.until > now && d.until <= now + 3 * MIN);
    else
        ph_expect(&d, LAUNCH, 1);
    s.job.deadline = now + 48 * H + 16 * MIN;
    ph_decide_is(&s.pol, &s.job, s.offers, 2, now, LAUNCH, 1);

    /* A view from an ebbd built before the record: offers laid out with
     * the fields up to preemption_by_hour only. */
    s.job.deadline = now + 70 * H;
    s.offers[0].available = 1;
    const size_t v1 = offsetof(struct ebb_offer, up_lengths);
    _Alignas(struct ebb_offer) unsigned char old[2 * sizeof(struct ebb_offer)];
    memset(old, 0x7f, sizeof(old)); /* what lies past v1 must not be read */
    for (size_t k = 0; k < 2; k++) {
        struct ebb_offer o = s.offers[k];
        o.struct_size = (uint32_t)v1;
        memcpy(old + k * v1, &o, v1);
    }
    struct ebb_market_view mv = {.struct_size = sizeof(mv),
                                 .offers = (const struct ebb_offer *)(void *)old,
                                 .n_offers = 2};
    struct ebb_decision out;
    assert_int_equal(s.pol.p->decide(s.pol.self, &s.job, &mv, now, &out), 0);
    assert_int_equal(out.kind, LAUNCH);
    assert_int_equal(out.offer, 0);
    ph_unload(&s.pol);
}

/* With a record of many brief up periods and long down ones, a spot that
 * just came back is not worth a restart from on-demand late in the job;
 * with a record of long up periods it is. */
static void record_changes_the_plan(void **state)
{
    (void)state;
    struct sim s;
    sim_init(&s, NULL, 52, 12 * MIN);
    unsigned up[EBB_PERIOD_BUCKETS] = {0}, down[EBB_PERIOD_BUCKETS] = {0};
    ebb_time_ms now = s.job.submitted_at + 20 * H;
    s.done = 18.5 * H; /* 29.5 h left, 2.5 h of slack */
    s.job.work_done = (ebb_dur_ms)s.done;
    s.job.running_offer = 1;
    s.job.running_since = now - 2 * H;
    s.offers[0].up_lengths = up;
    s.offers[0].down_lengths = down;
    s.offers[0].availability_since = now; /* spot just came back */
    up[ebb__period_bucket(10 * MIN)] = 200;   /* up: ten minutes */
    down[ebb__period_bucket(240 * MIN)] = 200; /* down: four hours */
    ph_decide_is(&s.pol, &s.job, s.offers, 2, now, KEEP, 0);
    memset(up, 0, sizeof(up));
    up[ebb__period_bucket(20 * H)] = 200; /* up: about a day */
    ph_decide_is(&s.pol, &s.job, s.offers, 2, now, LAUNCH, 0);
    ph_unload(&s.pol);
}

/* The plan counts only the slack above the safety net's floor: a job that
 * waits for spot and then starts on-demand keeps enough slack to return
 * when spot comes back, so it is not left on on-demand for hours by a
 * return the net forbids. The prior (flaps, fitted elsewhere) and the
 * record (ups of 5 h and 117 h, a down of 13 h) are those of a probe pool
 * in bench-policies --cbl, where the job used to wait until 27 min of
 * slack (2 restarts and 3 min: under the 5 min floor the net keeps for a
 * return) and then finish on on-demand, spot back for hours. */
static void returns_from_on_demand(void **state)
{
    (void)state;
    struct sim s;
    sim_init(&s, "{up_short: 22m, up_long: 8h8m, up_short_share: 0.86, "
                 "down_short: 17m, down_long: 5h56m, down_short_share: 0.99, "
                 "prior_weight: 1}",
             52, 12 * MIN);
    unsigned up[EBB_PERIOD_BUCKETS] = {0}, down[EBB_PERIOD_BUCKETS] = {0};
    up[ebb__period_bucket(294 * MIN)] = 1;
    up[ebb__period_bucket(7005 * MIN)] = 1;
    down[ebb__period_bucket(792 * MIN)] = 1;
    s.offers[0].up_lengths = up;
    s.offers[0].down_lengths = down;
    ebb_time_ms end = sim_run(&s, adv_gap, 52 * 60);
    assert_true(end > 0 && end <= s.job.deadline);
    assert_int_equal(s.od_starts, 1);
    assert_int_equal(s.spot_starts, 2);
    ph_unload(&s.pol);
}

/* What the instance keeps (tables solved for larger jobs, fits) never
 * changes an answer: jobs of several sizes decided in one order by one
 * instance, and each by a fresh one, give the same bytes. */
static void cache_changes_nothing(void **state)
{
    (void)state;
    static const int hours[] = {70, 52, 60, 100, 49, 52};
    unsigned up[EBB_PERIOD_BUCKETS] = {0}, down[EBB_PERIOD_BUCKETS] = {0};
    up[3] = 5;
    up[10] = 2;
    down[4] = 3;
    struct sim shared;
    sim_init(&shared, NULL, 52, 12 * MIN);
    for (int round = 0; round < 2; round++) {
        for (size_t k = 0; k < sizeof(hours) / sizeof(hours[0]); k++) {
            struct sim s;
            sim_init(&s, NULL, hours[k], k % 2 ? 3 * MIN : 12 * MIN);
            s.offers[0].up_lengths = up;
            s.offers[0].down_lengths = down;
            s.offers[0].available = (int)(k % 3 != 0);
            ebb_time_ms now = s.job.submitted_at + (ebb_time_ms)k * H;
            struct ebb_decision fresh =
                ph_decide_ok(&s.pol, &s.job, s.offers, 2, now);
            struct ebb_decision kept =
                ph_decide_ok(&shared.pol, &s.job, s.offers, 2, now);
            assert_memory_equal(&fresh, &kept, sizeof(fresh));
            ph_unload(&s.pol);
        }
    }
    ph_unload(&shared.pol);
}

static void bad_settings_refused(void **state)
{
    (void)state;
    /* short longer than long, a share of 1, a negative weight */
    static const char *const bad[] = {
        "{up_short: 5h, up_long: 1h}",
        "{down_short_share: 1}",
        "{prior_weight: -1}",
    };
    for (size_t i = 0; i < 3; i++)
        assert_int_not_equal(ph_create_rc("renewal", bad[i]), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chain_matches_two_state),
        cmocka_unit_test(fit_recovers_mixture),
        cmocka_unit_test(fit_prior_and_record),
        cmocka_unit_test(belief_by_age),
        cmocka_unit_test(planner_tiny_instance),
        cmocka_unit_test(grid_divides_overhead),
        cmocka_unit_test(extend_as_solved),
        cmocka_unit_test(grid_ladder),
        cmocka_unit_test(wait_not_optimistic),
        cmocka_unit_test(stay_not_optimistic),
        cmocka_unit_test(safety_net_worst_moment),
        cmocka_unit_test(safety_net_random_flaps),
        cmocka_unit_test(safety_net_wrong_model),
        cmocka_unit_test(infeasible_runs_on_demand),
        cmocka_unit_test(no_history),
        cmocka_unit_test(record_changes_the_plan),
        cmocka_unit_test(returns_from_on_demand),
        cmocka_unit_test(cache_changes_nothing),
        cmocka_unit_test(bad_settings_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
