/* bench-oracle: milliseconds per job for the hindsight oracle on synthetic
 * markets, and the ratio against a naive time x work x offer x phase DP on
 * sizes where that DP is exact (equal speeds, overhead a whole number of
 * steps). Prints figures; never fails on a number. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report/oracle.h"

#define MIN INT64_C(60000)
#define HOUR INT64_C(3600000)
#define MAXK 40
#define MAXCH 4096

static uint64_t rng = 42;

static uint64_t rnd(void)
{
    uint64_t z = (rng += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double unif(double lo, double hi)
{
    return lo + (hi - lo) * (double)(rnd() >> 11) / 9007199254740992.0;
}

struct market {
    struct ebb__oracle_offer o[MAXK];
    ebb_time_ms pat[MAXK][MAXCH], aat[MAXK][MAXCH];
    ebb_micros p[MAXK][MAXCH];
    int32_t a[MAXK][MAXCH];
};

/* K offers over [0, span): the last is on-demand (flat, always up); the
 * others are spot offers whose price changes every `every` ms on average
 * and which go away for ~40 min every ~6 h. */
static void make_market(struct market *m, size_t k, ebb_dur_ms span,
                        ebb_dur_ms every, int equal_speed)
{
    static const double speeds[] = {0.5, 1.0, 1.0, 2.0, 4.0};
    for (size_t i = 0; i < k; i++) {
        double s = equal_speed ? 1.0 : speeds[rnd() % 5];
        double base = 2e6 * s * unif(0.8, 1.2);
        struct ebb__oracle_offer *o = &m->o[i];
        size_t np = 0, na = 0;
        if (i + 1 == k) {
            m->pat[i][0] = 0;
            m->p[i][0] = (ebb_micros)(base * 1.5);
            *o = (struct ebb__oracle_offer){s, m->pat[i], m->p[i], 1,
                                            NULL, NULL, 0};
            continue;
        }
        for (ebb_time_ms x = 0; x < span && np < MAXCH;
             x += (ebb_time_ms)unif(0.2, 1.8) * every / 1000 * 1000 + 1000) {
            m->pat[i][np] = x;
            m->p[i][np++] = (ebb_micros)(base * unif(0.3, 1.0));
        }
        int up = 1;
        for (ebb_time_ms x = 0; x < span && na < MAXCH;) {
            m->aat[i][na] = x;
            m->a[i][na++] = up;
            double mean = up ? 6.0 * HOUR : 40.0 * MIN;
            x += (ebb_time_ms)(-mean * log(unif(1e-9, 1.0))) / 1000 * 1000 +
                 1000;
            up = !up;
        }
        *o = (struct ebb__oracle_offer){s, m->pat[i], m->p[i], np,
                                        m->aat[i], m->a[i], na};
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The naive DP: per step, for every work count and every state (idle, or
 * running k with r = min(steps run, q) behind it). Exact only with equal
 * speeds 1.0, overhead = q steps, window a whole number of steps. */
/* Step costs and usability for the naive DP (not timed). */
static void naive_tables(const struct ebb__oracle_job *j,
                         const struct ebb__oracle_offer *o, size_t k,
                         int64_t *sc, int *ok)
{
    int64_t n = (j->deadline - j->release) / j->step;
    for (int64_t t = 0; t < n; t++) {
        ebb_time_ms a = j->release + t * j->step, b = a + j->step;
        for (size_t x = 0; x < k; x++) {
            const struct ebb__oracle_offer *f = &o[x];
            int good = a >= f->price_at[0];
            int64_t c = 0;
            for (ebb_time_ms s = a; good && s < b; s += 1000) {
                size_t p = 0;
                while (p + 1 < f->n_price && f->price_at[p + 1] <= s)
                    p++;
                c += f->price[p];
                if (f->avail) {
                    size_t y = 0;
                    int up = 1;
                    while (y < f->n_avail && f->avail_at[y] <= s)
                        up = f->avail[y++];
                    good = up;
                }
            }
            ok[(size_t)t * k + x] = good;
            sc[(size_t)t * k + x] = c;
        }
    }
}

/* The naive DP: per step, for every work count and every state (idle, or
 * running k with r = min(steps run, q) behind it). Exact only with equal
 * speeds 1.0, overhead = q steps, window a whole number of steps. */
static int naive(const struct ebb__oracle_job *j, size_t k,
                 const int64_t *sct, const int *okt, int64_t *best)
{
    int64_t n = (j->deadline - j->release) / j->step;
    int64_t q = j->overhead / j->step;
    int64_t wu = (j->work + j->step - 1) / j->step;
    size_t ns = 1 + k * (size_t)(q + 1);
    size_t cells = (size_t)(wu + 1) * ns;
    int64_t *v = malloc(cells * sizeof(*v)), *nv = malloc(cells * sizeof(*nv));
    if (!v || !nv)
        return -1;
    for (size_t i = 0; i < cells; i++)
        v[i] = INT64_MAX;
    v[0] = 0;
    *best = INT64_MAX;
    for (int64_t t = 0; t < n; t++) {
        const int64_t *sc = sct + (size_t)t * k;
        const int *ok = okt + (size_t)t * k;
        for (size_t i = 0; i < cells; i++)
            nv[i] = INT64_MAX;
        for (int64_t w = 0; w < wu; w++) {
            const int64_t *row = v + (size_t)w * ns;
            int64_t m = INT64_MAX;
            for (size_t s = 0; s < ns; s++)
                if (row[s] < m)
                    m = row[s];
            if (m == INT64_MAX)
                continue;
            if (m < nv[(size_t)w * ns])
                nv[(size_t)w * ns] = m;
            for (size_t x = 0; x < k; x++) {
                if (!ok[x])
                    continue;
                for (int64_t r = -1; r <= q; r++) {
                    /* r = -1: start now from any state; else continue. */
                    int64_t from = r < 0 ? m : row[1 + x * (size_t)(q + 1) +
                                                    (size_t)r];
                    if (from == INT64_MAX)
                        continue;
                    int64_t done = r < 0 ? 0 : r + 1; /* steps before */
                    int64_t after = done + 1;
                    int64_t nw = w + (done >= q ? 1 : 0);
                    int64_t c = from + sc[x];
                    if (nw >= wu) {
                        if (c < *best)
                            *best = c;
                        continue;
                    }
                    int64_t rr = after - 1 < q ? after - 1 : q;
                    int64_t *dst = &nv[(size_t)nw * ns + 1 +
                                       x * (size_t)(q + 1) + (size_t)rr];
                    if (c < *dst)
                        *dst = c;
                }
            }
        }
        int64_t *tmp = v;
        v = nv;
        nv = tmp;
    }
    free(v);
    free(nv);
    return *best == INT64_MAX ? 1 : 0;
}

struct size {
    const char *name;
    ebb_dur_ms work_lo, work_hi;
    double win_lo, win_hi;
    size_t k_lo, k_hi;
    ebb_dur_ms every, step_lo, step_hi;
    int jobs;
};

static struct market mk;

static void run_size(const struct size *z)
{
    double total = 0, worst = 0;
    int solved = 0, infeasible = 0;
    size_t runs_total = 0;
    struct ebb__oracle_run runs[256];
    for (int i = 0; i < z->jobs; i++) {
        ebb_dur_ms work = z->work_lo +
            (ebb_dur_ms)(unif(0, 1) * (double)(z->work_hi - z->work_lo)) /
            MIN * MIN;
        ebb_dur_ms window = (ebb_dur_ms)(unif(z->win_lo, z->win_hi) *
                                         (double)work) / MIN * MIN;
        size_t k = z->k_lo + (size_t)(rnd() % (z->k_hi - z->k_lo + 1));
        ebb_dur_ms step = z->step_lo + (ebb_dur_ms)(rnd() %
            (uint64_t)((z->step_hi - z->step_lo) / MIN + 1)) * MIN;
        make_market(&mk, k, window + HOUR, z->every, 0);
        struct ebb__oracle_job j = {0, window, work,
                                    (ebb_dur_ms)(rnd() % 11) * MIN, step};
        ebb_micros cost;
        size_t n = 0;
        double t = now_ms();
        int rc = ebb__oracle_solve(&j, mk.o, k, &cost, runs, 256, &n);
        t = now_ms() - t;
        total += t;
        if (t > worst)
            worst = t;
        solved += rc == 0;
        infeasible += rc == EBB_ENOTFOUND;
        runs_total += rc == 0 ? n : 0;
    }
    printf("%-34s %5d jobs  %8.3f ms/job  worst %8.3f ms  "
           "(%d solved, %d infeasible, %.1f runs/job)\n",
           z->name, z->jobs, total / z->jobs, worst, solved, infeasible,
           solved ? (double)runs_total / solved : 0.0);
}

static void vs_naive(const char *name, ebb_dur_ms work, ebb_dur_ms window,
                     size_t k, ebb_dur_ms step, ebb_dur_ms overhead, int reps)
{
    double tn = 0, to = 0;
    int agree = 0;
    for (int i = 0; i < reps; i++) {
        make_market(&mk, k, window + HOUR, 30 * MIN, 1);
        struct ebb__oracle_job j = {0, window, work, overhead, step};
        ebb_micros cost = -1;
        int64_t nb = -1;
        size_t cells = (size_t)(window / step) * k;
        int64_t *sc = malloc(cells * sizeof(*sc));
        int *ok = malloc(cells * sizeof(*ok));
        if (!sc || !ok)
            return;
        naive_tables(&j, mk.o, k, sc, ok);
        double t = now_ms();
        int rc = ebb__oracle_solve(&j, mk.o, k, &cost, NULL, 0, NULL);
        to += now_ms() - t;
        t = now_ms();
        int nrc = naive(&j, k, sc, ok, &nb);
        tn += now_ms() - t;
        free(sc);
        free(ok);
        agree += (rc == 0 && nrc == 0 && cost == nb / 3600) ||
                 (rc == EBB_ENOTFOUND && nrc == 1);
    }
    printf("%-34s %5d jobs  oracle %8.3f ms/job  naive DP %9.3f ms/job  "
           "ratio %6.1fx  (agree %d/%d)\n",
           name, reps, to / reps, tn / reps, tn / (to > 0 ? to : 1e-9), agree,
           reps);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    static const struct size sizes[] = {
        {"small: 2h, 5 offers, step 5m", 2 * HOUR, 2 * HOUR, 1.5, 1.5, 5, 5,
         30 * MIN, 5 * MIN, 5 * MIN, 200},
        {"mid: 8h, 20 offers, step 2m", 8 * HOUR, 8 * HOUR, 2.0, 2.0, 20, 20,
         30 * MIN, 2 * MIN, 2 * MIN, 100},
        {"large: 24h x3, 40 offers, step 1m", 24 * HOUR, 24 * HOUR, 3.0, 3.0,
         40, 40, 30 * MIN, MIN, MIN, 20},
        {"backtest mix (prices ~30 min)", 2 * HOUR, 24 * HOUR, 1.2, 3.0, 5,
         40, 30 * MIN, MIN, 5 * MIN, 1000},
        {"backtest mix (prices ~6 h)", 2 * HOUR, 24 * HOUR, 1.2, 3.0, 5, 40,
         6 * HOUR, MIN, 5 * MIN, 1000},
    };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        run_size(&sizes[i]);
    vs_naive("vs naive: 2h in 3h, 5 offers, 5m", 2 * HOUR, 3 * HOUR, 5,
             5 * MIN, 10 * MIN, 50);
    vs_naive("vs naive: 8h in 16h, 20 offers, 2m", 8 * HOUR, 16 * HOUR, 20,
             2 * MIN, 6 * MIN, 5);
    return 0;
}
