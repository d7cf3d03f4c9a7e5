/* Tests for the hindsight oracle: hand-computed cases, then thousands of
 * seeded random cases checked against a brute-force enumerator that shares
 * no code with the solver (its own cost, availability and work formulas). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "report/oracle.h"

#define MIN INT64_C(60000)
#define HOUR INT64_C(3600000)
/* 3.6 USD per hour is 1000 micro-USD per second. */
#define P1 INT64_C(3600000)

static const ebb_time_ms t0[1] = {0};

static struct ebb__oracle_offer flat(double speed, const ebb_micros *price)
{
    return (struct ebb__oracle_offer){speed, t0, price, 1, NULL, NULL, 0};
}

static struct ebb__oracle_job job_of(ebb_dur_ms window, ebb_dur_ms work,
                                     ebb_dur_ms overhead, ebb_dur_ms step)
{
    return (struct ebb__oracle_job){0, window, work, overhead, step};
}

/* ---- the reference model, written independently of src/report/oracle.c ---- */

static int ref_avail(const struct ebb__oracle_offer *o, ebb_time_ms a,
                     ebb_time_ms b)
{
    if (a < o->price_at[0])
        return 0;
    if (!o->avail)
        return 1;
    int state = 1;
    for (size_t i = 0; i < o->n_avail; i++) {
        if (o->avail_at[i] <= a)
            state = o->avail[i];
        else if (o->avail_at[i] < b && !o->avail[i])
            return 0;
    }
    return state;
}

/* Price-seconds (micro-USD * s / h): each second starting in [a, b) pays
 * the price in effect at its start. */
static int64_t ref_cost(const struct ebb__oracle_offer *o, ebb_time_ms a,
                        ebb_time_ms b)
{
    int64_t sum = 0;
    for (ebb_time_ms x = a; x < b; x += 1000) {
        ebb_micros p = -1;
        for (size_t i = 0; i < o->n_price && o->price_at[i] <= x; i++)
            p = o->price[i];
        sum += p;
    }
    return sum;
}

static double ref_work(const struct ebb__oracle_offer *o,
                       const struct ebb__oracle_job *j, ebb_time_ms a,
                       ebb_time_ms b)
{
    ebb_dur_ms d = b - a - j->overhead;
    return d > 0 ? (double)d * o->speed : 0.0;
}

struct brute {
    const struct ebb__oracle_job *job;
    const struct ebb__oracle_offer *offers;
    size_t k;
    ebb_time_ms grid[64];
    int n;
    double wdone;
    int64_t best;
};

static void brute_dfs(struct brute *bf, int j, double w, int64_t c)
{
    if (c >= bf->best)
        return;
    if (w >= bf->wdone) {
        bf->best = c;
        return;
    }
    if (j >= bf->n)
        return;
    brute_dfs(bf, j + 1, w, c);
    for (size_t k = 0; k < bf->k; k++) {
        const struct ebb__oracle_offer *o = &bf->offers[k];
        for (int b = j + 1; b <= bf->n; b++) {
            ebb_time_ms ta = bf->grid[j], tb = bf->grid[b];
            if (!ref_avail(o, ta, tb))
                break;
            brute_dfs(bf, b, w + ref_work(o, bf->job, ta, tb),
                      c + ref_cost(o, ta, tb));
        }
    }
}

/* Returns the optimum in price-seconds, or -1 when infeasible. */
static int64_t brute(const struct ebb__oracle_job *job,
                     const struct ebb__oracle_offer *offers, size_t k)
{
    struct brute bf = {.job = job, .offers = offers, .k = k};
    for (ebb_time_ms x = job->release; x < job->deadline; x += job->step)
        bf.grid[bf.n++] = x;
    bf.grid[bf.n] = job->deadline;
    bf.wdone = (double)job->work * (1.0 - 1e-9);
    bf.best = INT64_MAX;
    brute_dfs(&bf, 0, 0.0, 0);
    return bf.best == INT64_MAX ? -1 : bf.best;
}

/* Checks a returned schedule: ordered, on the grid, available, and its
 * cost and work add up to the reported figures. */
static void check_runs(const struct ebb__oracle_job *job,
                       const struct ebb__oracle_offer *offers, size_t k,
                       const struct ebb__oracle_run *runs, size_t n,
                       ebb_micros cost)
{
    int64_t sum = 0;
    double work = 0;
    ebb_time_ms prev = job->release;
    for (size_t i = 0; i < n; i++) {
        const struct ebb__oracle_run *r = &runs[i];
        assert_true(r->offer < k);
        assert_true(r->start >= prev);
        assert_true(r->end > r->start);
        assert_true(r->end <= job->deadline);
        assert_int_equal((r->start - job->release) % job->step, 0);
        assert_true(r->end == job->deadline ||
                    (r->end - job->release) % job->step == 0);
        assert_true(ref_avail(&offers[r->offer], r->start, r->end));
        sum += ref_cost(&offers[r->offer], r->start, r->end);
        work += ref_work(&offers[r->offer], job, r->start, r->end);
        prev = r->end;
    }
    assert_int_equal(sum / 3600, cost);
    assert_true(work >= (double)job->work * (1.0 - 1e-9) - 1e-6);
}

static int solve_checked(const struct ebb__oracle_job *job,
                         const struct ebb__oracle_offer *offers, size_t k,
                         ebb_micros *cost, struct ebb__oracle_run *runs,
                         size_t *n)
{
    int rc = ebb__oracle_solve(job, offers, k, cost, runs, 64, n);
    if (rc == 0) {
        assert_true(*n <= 64);
        check_runs(job, offers, k, runs, *n, *cost);
        ebb_micros again = -1;
        assert_int_equal(ebb__oracle_solve(job, offers, k, &again, NULL, 0,
                                           NULL), 0);
        assert_int_equal(again, *cost);
    }
    return rc;
}

/* ---- hand-computed cases ---- */

static void single_offer_flat_price(void **state)
{
    (void)state;
    static const ebb_micros p[1] = {P1};
    struct ebb__oracle_offer o = flat(1.0, p);
    struct ebb__oracle_job j = job_of(2 * HOUR, HOUR, 5 * MIN, MIN);
    struct ebb__oracle_run runs[64];
    size_t n = 0;
    ebb_micros cost = 0;
    assert_int_equal(solve_checked(&j, &o, 1, &cost, runs, &n), 0);
    assert_int_equal(cost, (3600 + 300) * 1000);
    assert_int_equal(n, 1);
    assert_int_equal(runs[0].end - runs[0].start, HOUR + 5 * MIN);
}

static void cheap_window_before_deadline(void **state)
{
    (void)state;
    static const ebb_time_ms at[2] = {0, 2 * HOUR};
    static const ebb_micros p[2] = {2 * P1, P1};
    struct ebb__oracle_offer o = {1.0, at, p, 2, NULL, NULL, 0};
    struct ebb__oracle_job j = job_of(3 * HOUR, 40 * MIN, 0, MIN);
    struct ebb__oracle_run runs[64];
    size_t n = 0;
    ebb_micros cost = 0;
    assert_int_equal(solve_checked(&j, &o, 1, &cost, runs, &n), 0);
    assert_int_equal(cost, 40 * 60 * 1000);
    assert_int_equal(n, 1);
    assert_true(runs[0].start >= 2 * HOUR);
}

/* Cheap [0, 30m) and [40m, 70m); between them `mid` per hour. Work 50m,
 * overhead 5m: two runs use exactly the 60 cheap minutes (3.6e6), one run
 * needs 55 minutes and crosses the whole dear gap. */
static ebb_micros gap_case(ebb_micros mid, size_t *n)
{
    static const ebb_time_ms at[3] = {0, 30 * MIN, 40 * MIN};
    ebb_micros p[3] = {P1, mid, P1};
    struct ebb__oracle_offer o = {1.0, at, p, 3, NULL, NULL, 0};
    struct ebb__oracle_job j = job_of(70 * MIN, 50 * MIN, 5 * MIN, MIN);
    struct ebb__oracle_run runs[64];
    ebb_micros cost = 0;
    assert_int_equal(solve_checked(&j, &o, 1, &cost, runs, n), 0);
    return cost;
}

static void overhead_two_runs_or_one(void **state)
{
    (void)state;
    size_t n = 0;
    /* Dear gap (10x): 45m cheap + 10m dear = 8.7e6 > 3.6e6: two runs. */
    assert_int_equal(gap_case(10 * P1, &n), 3600000);
    assert_int_equal(n, 2);
    /* Mild gap (1.2x): 2.7e6 + 0.72e6 = 3.42e6 < 3.6e6: one run. */
    assert_int_equal(gap_case(P1 * 12 / 10, &n), 3420000);
    assert_int_equal(n, 1);
}

static void faster_dearer_offer_wins(void **state)
{
    (void)state;
    static const ebb_micros slow_p[1] = {P1}, fast_p[1] = {2 * P1};
    struct ebb__oracle_offer o[2] = {flat(1.0, slow_p), flat(4.0, fast_p)};
    struct ebb__oracle_job j = job_of(5 * HOUR, 4 * HOUR, 6 * MIN, MIN);
    struct ebb__oracle_run runs[64];
    size_t n = 0;
    ebb_micros cost = 0;
    assert_int_equal(solve_checked(&j, o, 2, &cost, runs, &n), 0);
    /* 1h06m at 7.2 USD/h beats 4h06m at 3.6 USD/h. */
    assert_int_equal(cost, 66 * 60 * 2000);
    assert_int_equal(n, 1);
    assert_int_equal(runs[0].offer, 1);
}

static void availability_gap(void **state)
{
    (void)state;
    static const ebb_micros cheap[1] = {P1}, dear[1] = {2 * P1};
    static const ebb_time_ms av_at[2] = {HOUR, 2 * HOUR};
    static const int32_t av[2] = {0, 1};
    struct ebb__oracle_offer o[2] = {
        {1.0, t0, cheap, 1, av_at, av, 2},
        flat(1.0, dear),
    };
    struct ebb__oracle_job j = job_of(3 * HOUR, 3 * HOUR, 0, MIN);
    struct ebb__oracle_run runs[64];
    size_t n = 0;
    ebb_micros cost = 0;
    /* The whole window is needed: cheap, dear through the gap, cheap. */
    assert_int_equal(solve_checked(&j, o, 2, &cost, runs, &n), 0);
    assert_int_equal(cost, 3600 * 1000 * 4);
    assert_int_equal(n, 3);
    assert_int_equal(runs[1].offer, 1);
    assert_int_equal(runs[1].start, HOUR);
    assert_int_equal(runs[1].end, 2 * HOUR);
    /* Without the on-demand offer the gap makes the job infeasible. */
    assert_int_equal(ebb__oracle_solve(&j, o, 1, &cost, NULL, 0, NULL),
                     EBB_ENOTFOUND);
}

static void deadline_too_close(void **state)
{
    (void)state;
    static const ebb_micros p[1] = {P1};
    struct ebb__oracle_offer o = flat(1.0, p);
    ebb_micros cost = 0;
    struct ebb__oracle_job j = job_of(30 * MIN, HOUR, 0, MIN);
    assert_int_equal(ebb__oracle_solve(&j, &o, 1, &cost, NULL, 0, NULL),
                     EBB_ENOTFOUND);
    /* Exactly enough time, but the overhead does not fit. */
    j = job_of(HOUR, HOUR, MIN, MIN);
    assert_int_equal(ebb__oracle_solve(&j, &o, 1, &cost, NULL, 0, NULL),
                     EBB_ENOTFOUND);
    j = job_of(HOUR + MIN, HOUR, MIN, MIN);
    assert_int_equal(ebb__oracle_solve(&j, &o, 1, &cost, NULL, 0, NULL), 0);
    assert_int_equal(cost, 61 * 60 * 1000);
}

static void price_starts_late_and_partial_step(void **state)
{
    (void)state;
    /* Priced only from 1h on; the window ends 30 s after a grid point. */
    static const ebb_time_ms at[1] = {HOUR};
    static const ebb_micros p[1] = {P1};
    struct ebb__oracle_offer o = {1.0, at, p, 1, NULL, NULL, 0};
    struct ebb__oracle_job j = job_of(HOUR + 10 * MIN + 30000, 10 * MIN + 30000,
                                      0, 5 * MIN);
    struct ebb__oracle_run runs[64];
    size_t n = 0;
    ebb_micros cost = 0;
    assert_int_equal(solve_checked(&j, &o, 1, &cost, runs, &n), 0);
    assert_int_equal(cost, 630 * 1000);
    assert_int_equal(runs[0].start, HOUR);
    assert_int_equal(runs[0].end, j.deadline);
}

static void rounding_and_edges(void **state)
{
    (void)state;
    /* 3601 micro-USD/h for an hour: exact, not 3600. */
    static const ebb_micros p[1] = {3601};
    struct ebb__oracle_offer o = flat(1.0, p);
    struct ebb__oracle_job j = job_of(2 * HOUR, HOUR, 0, MIN);
    ebb_micros cost = 0;
    assert_int_equal(ebb__oracle_solve(&j, &o, 1, &cost, NULL, 0, NULL), 0);
    assert_int_equal(cost, 3601);
    /* No work costs nothing. */
    j.work = 0;
    size_t n = 9;
    struct ebb__oracle_run runs[1];
    assert_int_equal(ebb__oracle_solve(&j, &o, 1, &cost, runs, 1, &n), 0);
    assert_int_equal(cost, 0);
    assert_int_equal(n, 0);
    /* A too-small run array reports the needed length, like snprintf. */
    static const ebb_time_ms at[3] = {0, 30 * MIN, 40 * MIN};
    static const ebb_micros gp[3] = {P1, 10 * P1, P1};
    struct ebb__oracle_offer g = {1.0, at, gp, 3, NULL, NULL, 0};
    j = job_of(70 * MIN, 50 * MIN, 5 * MIN, MIN);
    assert_int_equal(ebb__oracle_solve(&j, &g, 1, &cost, runs, 1, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(runs[0].start, 0);
    assert_int_equal(runs[0].end, 30 * MIN);
}

static void invalid_input(void **state)
{
    (void)state;
    static const ebb_micros p[1] = {P1}, neg[1] = {-1};
    static const ebb_time_ms bad_at[2] = {10, 5};
    static const ebb_micros p2[2] = {1, 2};
    struct ebb__oracle_offer o = flat(1.0, p);
    struct ebb__oracle_job j = job_of(HOUR, MIN, 0, MIN);
    ebb_micros cost;
    j.step = 1500;
    assert_int_equal(ebb__oracle_solve(&j, &o, 1, &cost, NULL, 0, NULL),
                     EBB_EINVAL);
    j.step = 0;
    assert_int_equal(ebb__oracle_solve(&j, &o, 1, &cost, NULL, 0, NULL),
                     EBB_EINVAL);
    j = job_of(HOUR, MIN, 0, MIN);
    o.speed = 0;
    assert_int_equal(ebb__oracle_solve(&j, &o, 1, &cost, NULL, 0, NULL),
                     EBB_EINVAL);
    o = flat(1.0, neg);
    assert_int_equal(ebb__oracle_solve(&j, &o, 1, &cost, NULL, 0, NULL),
                     EBB_EINVAL);
    o = (struct ebb__oracle_offer){1.0, bad_at, p2, 2, NULL, NULL, 0};
    assert_int_equal(ebb__oracle_solve(&j, &o, 1, &cost, NULL, 0, NULL),
                     EBB_EINVAL);
    assert_int_equal(ebb__oracle_solve(&j, NULL, 0, &cost, NULL, 0, NULL),
                     EBB_ENOTFOUND);
}

/* ---- randomized comparison with brute force ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static int64_t rnd_in(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

struct rcase {
    struct ebb__oracle_job job;
    struct ebb__oracle_offer offers[3];
    ebb_time_ms price_at[3][6];
    ebb_micros price[3][6];
    ebb_time_ms avail_at[3][6];
    int32_t avail[3][6];
};

static void random_case(struct rcase *rc, size_t *k)
{
    static const double speeds[] = {0.25, 0.5, 0.7, 1.0, 1.0, 1.5, 2.0, 3.0};
    ebb_dur_ms step = 1000 * rnd_in(1, 3);
    *k = (size_t)rnd_in(1, 3);
    int steps = (int)rnd_in(2, *k == 1 ? 12 : *k == 2 ? 10 : 8);
    ebb_time_ms release = rnd_in(-5000, 5000);
    ebb_dur_ms window = step * steps - (rnd() % 3 == 0 ? rnd_in(0, 999) : 0);
    rc->job.release = release;
    rc->job.deadline = release + window;
    rc->job.step = step;
    rc->job.overhead = rnd() % 3 == 0 ? 0 : rnd_in(0, 2 * step);
    rc->job.work = rnd_in(1, window);
    for (size_t i = 0; i < *k; i++) {
        struct ebb__oracle_offer *o = &rc->offers[i];
        size_t np = (size_t)rnd_in(1, 6);
        ebb_time_ms x = release - rnd_in(0, 2000);
        if (rnd() % 5 == 0)
            x = release + rnd_in(0, window / 2);
        for (size_t p = 0; p < np; p++) {
            rc->price_at[i][p] = x;
            rc->price[i][p] = rnd() % 8 == 0 ? 0 : rnd_in(1, 9000000);
            x += rnd_in(1, window / 2 + 1);
        }
        *o = (struct ebb__oracle_offer){speeds[rnd() % 8], rc->price_at[i],
                                        rc->price[i], np, NULL, NULL, 0};
        if (rnd() % 2) {
            size_t na = (size_t)rnd_in(1, 6);
            x = release - rnd_in(-1000, 1000);
            for (size_t a = 0; a < na; a++) {
                rc->avail_at[i][a] = x;
                rc->avail[i][a] = rnd() % 3 != 0;
                x += rnd_in(1, window / 2 + 1);
            }
            o->avail_at = rc->avail_at[i];
            o->avail = rc->avail[i];
            o->n_avail = na;
        }
    }
}

static void random_vs_brute_force(void **state)
{
    (void)state;
    int feasible = 0, multi = 0;
    for (uint64_t seed = 1; seed <= 4000; seed++) {
        rng_state = seed;
        struct rcase rc;
        size_t k;
        random_case(&rc, &k);
        int64_t want = brute(&rc.job, rc.offers, k);
        struct ebb__oracle_run runs[64];
        size_t n = 0;
        ebb_micros cost = -1;
        int got = solve_checked(&rc.job, rc.offers, k, &cost, runs, &n);
        if (want < 0) {
            if (got != EBB_ENOTFOUND)
                fprintf(stderr, "seed %llu: expected infeasible, got %d\n",
                        (unsigned long long)seed, got);
            assert_int_equal(got, EBB_ENOTFOUND);
            continue;
        }
        if (got != 0 || cost != want / 3600)
            fprintf(stderr, "seed %llu: rc %d cost %lld, brute %lld\n",
                    (unsigned long long)seed, got, (long long)cost,
                    (long long)(want / 3600));
        assert_int_equal(got, 0);
        assert_int_equal(cost, want / 3600);
        feasible++;
        multi += n > 1;
    }
    /* The generator must exercise both outcomes and multi-run schedules. */
    assert_true(feasible > 1000);
    assert_true(multi > 100);
}

/* A plain DP over (step, work units, idle | running k with r steps behind
 * it), exact when speeds are whole numbers and the overhead a whole number
 * of steps: then every productive step adds `speed` units of `step` work.
 * Cases of 40-90 steps exercise the solver's bounds, which the tiny brute
 * force cases hardly do. Returns price-seconds or -1. */
static int64_t unit_dp(const struct ebb__oracle_job *j,
                       const struct ebb__oracle_offer *o, size_t k)
{
    int64_t n = (j->deadline - j->release) / j->step;
    int64_t q = j->overhead / j->step;
    int64_t goal = (j->work + j->step - 1) / j->step;
    size_t ns = 1 + k * (size_t)(q + 1), cells = (size_t)goal * ns;
    int64_t *v = malloc(cells * sizeof(*v)), *nv = malloc(cells * sizeof(*nv));
    int64_t best = INT64_MAX;
    assert_non_null(v);
    assert_non_null(nv);
    for (size_t i = 0; i < cells; i++)
        v[i] = INT64_MAX;
    v[0] = 0;
    for (int64_t t = 0; t < n; t++) {
        ebb_time_ms a = j->release + t * j->step, b = a + j->step;
        for (size_t i = 0; i < cells; i++)
            nv[i] = INT64_MAX;
        for (int64_t w = 0; w < goal; w++) {
            const int64_t *row = v + (size_t)w * ns;
            int64_t m = INT64_MAX;
            for (size_t x = 0; x < ns; x++)
                m = row[x] < m ? row[x] : m;
            if (m == INT64_MAX)
                continue;
            if (m < nv[(size_t)w * ns])
                nv[(size_t)w * ns] = m;
            for (size_t x = 0; x < k; x++) {
                if (!ref_avail(&o[x], a, b))
                    continue;
                int64_t c = ref_cost(&o[x], a, b), gain = (int64_t)o[x].speed;
                for (int64_t r = -1; r <= q; r++) {
                    /* r = -1: start now; else continue with r + 1 steps
                     * behind (capped at q + 1). */
                    int64_t from = r < 0 ? m
                                         : row[1 + x * (size_t)(q + 1) +
                                               (size_t)r];
                    if (from == INT64_MAX)
                        continue;
                    int64_t done = r + 1;
                    int64_t nw = w + (done >= q ? gain : 0);
                    if (nw >= goal) {
                        best = from + c < best ? from + c : best;
                        continue;
                    }
                    int64_t rr = done < q ? done : q;
                    int64_t *dst = &nv[(size_t)nw * ns + 1 +
                                       x * (size_t)(q + 1) + (size_t)rr];
                    if (from + c < *dst)
                        *dst = from + c;
                }
            }
        }
        int64_t *tmp = v;
        v = nv;
        nv = tmp;
    }
    free(v);
    free(nv);
    return best == INT64_MAX ? -1 : best;
}

static void medium_vs_unit_dp(void **state)
{
    (void)state;
    int feasible = 0;
    for (uint64_t seed = 1; seed <= 150; seed++) {
        rng_state = seed * 7919;
        size_t k = (size_t)rnd_in(1, 4);
        int64_t n = rnd_in(40, 90);
        ebb_time_ms at[4][16];
        ebb_micros pr[4][16];
        ebb_time_ms aat[4][8];
        int32_t av[4][8];
        struct ebb__oracle_offer o[4];
        struct ebb__oracle_job j = {rnd_in(0, 100000), 0, 0, 0, MIN};
        j.deadline = j.release + n * MIN;
        j.overhead = rnd_in(0, 3) * MIN;
        j.work = rnd_in(n / 4, n * 2) * MIN;
        for (size_t x = 0; x < k; x++) {
            ebb_time_ms t = j.release - rnd_in(0, 5000);
            for (size_t p = 0; p < 16; p++) {
                at[x][p] = t;
                pr[x][p] = rnd_in(100000, 3000000);
                t += rnd_in(1000, n * MIN / 6);
            }
            o[x] = (struct ebb__oracle_offer){(double)rnd_in(1, 3), at[x],
                                              pr[x], 16, NULL, NULL, 0};
            if (rnd() % 2) {
                t = j.release + rnd_in(0, n * MIN / 3);
                for (size_t p = 0; p < 8; p++) {
                    aat[x][p] = t;
                    av[x][p] = p % 2;
                    t += rnd_in(1000, n * MIN / 4);
                }
                o[x].avail_at = aat[x];
                o[x].avail = av[x];
                o[x].n_avail = 8;
            }
        }
        int64_t want = unit_dp(&j, o, k);
        struct ebb__oracle_run runs[64];
        size_t nr = 0;
        ebb_micros cost = -1;
        int got = solve_checked(&j, o, k, &cost, runs, &nr);
        if (want < 0) {
            assert_int_equal(got, EBB_ENOTFOUND);
            continue;
        }
        if (got != 0 || cost != want / 3600)
            fprintf(stderr, "seed %llu: rc %d cost %lld, dp %lld\n",
                    (unsigned long long)seed, got, (long long)cost,
                    (long long)(want / 3600));
        assert_int_equal(got, 0);
        assert_int_equal(cost, want / 3600);
        feasible++;
    }
    assert_true(feasible > 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(single_offer_flat_price),
        cmocka_unit_test(cheap_window_before_deadline),
        cmocka_unit_test(overhead_two_runs_or_one),
        cmocka_unit_test(faster_dearer_offer_wins),
        cmocka_unit_test(availability_gap),
        cmocka_unit_test(deadline_too_close),
        cmocka_unit_test(price_starts_late_and_partial_step),
        cmocka_unit_test(rounding_and_edges),
        cmocka_unit_test(invalid_input),
        cmocka_unit_test(random_vs_brute_force),
        cmocka_unit_test(medium_vs_unit_dp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
