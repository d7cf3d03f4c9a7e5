/* bench-policies --cbl: the Can't-Be-Late setting (Wu et al., NSDI'24) on
 * every shipped availability trace, with leave-one-trace-out.
 *
 * Pools: bench/scenarios/cbl-pools.csv (bench/scenarios/cbl_pools.py: every
 * pool of the shipped availability traces whose capacity changes; the
 * provider column names the trace, the fold). Each pool is replayed as the
 * spot capacity of one offer (relabelled aws us-east-1c p3.2xlarge, spot at
 * a constant 0.9701 USD/h, on demand 3.06 from data/catalog.csv) for one
 * job of 48 h of work submitted at the pool's first row + k * --every
 * hours (default 24) for every k with a start before the pool's last row.
 * A pool shorter than the job's window is repeated back to back from its
 * first row (the harness writes those rows itself, and says so); the rows
 * before the submission are the pool's history, which ebb's market sees
 * as it would live.
 *
 * Settings: 52 h deadline / 12 min restarts, 60 h / 3 min, 70 h / 12 min.
 * Policies: greedy, uniform-progress, deadline (the default today) and
 * renewal, each through ebb__backtest_run (the real engine and sim); the
 * oracle is the backtest's own per job.
 *
 * Leave-one-trace-out: renewal's prior (its up_* and down_* settings: a
 * two-kind mixture of up and down period lengths, rn_model.h) is fitted
 * with the policy's own fit on the pools of the other traces and set
 * through the backtest's policies settings for the pools of the held-out
 * trace, with its prior_weight chosen among 0.25, 1, 4 and 16 on the other
 * traces alone (nested: each of their windows scored with a prior fitted
 * on the traces neither held out nor scored, windows every 24 h); the
 * figures are those held-out runs. The other
 * policies have no fitted constants (their shipped defaults).
 *
 * Figures per setting and policy: mean cost / oracle over windows, the
 * worst window, deadlines missed among windows the oracle finds feasible,
 * windows costlier than uniform-progress, and the mean per trace;
 * --windows prints every window's ratios too; --only TEXT runs only the
 * pools whose zone, instance type or trace contains TEXT (the weights
 * are still chosen on every other trace).
 *
 * Then the multi-zone case (policies_zones.c), with the same held-out
 * settings for renewal; --zones runs only it (after choosing the
 * weights). */
#include "policies_cbl.h"

#include "cbl_window.h"
#include "policies_zones.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/trace.h>
#include <ebb/units.h>

#include "market/forecast.h"
#include "renewal/rn_model.h"

#ifndef EBB_BENCH_SOURCE_ROOT
#define EBB_BENCH_SOURCE_ROOT "."
#endif

#define HOUR EBB_MS_PER_HOUR

static const struct cbl_setting settings[] = {
    {"52h/12m", 52, 12},
    {"60h/3m", 60, 3},
    {"70h/12m", 70, 12},
};
#define N_SET (sizeof(settings) / sizeof(settings[0]))

static const char *const policies[] = {"greedy", "uniform-progress",
                                       "deadline", "renewal"};
#define N_POL (sizeof(policies) / sizeof(policies[0]))
#define P_UP 1
#define P_RENEWAL 3

#define MAX_FOLDS 8

/* The prior the renewal policy gets: its own fit (rn_fit, with no prior
 * weight) of the lengths of every period that ended in the pools of no
 * trace in `skip` (NULL-terminated; may be empty), counted as ebb's
 * market counts them for an offer's record (ebb__availability_record). */
struct prior {
    struct rn_mix up, down;
};

static int skipped(const char *const *skip, const char *trace)
{
    for (; *skip != NULL; skip++)
        if (strcmp(*skip, trace) == 0)
            return 1;
    return 0;
}

static struct prior fit_prior(const struct ebb_avail_trace *t,
                              const char *const *skip)
{
    unsigned up[EBB_PERIOD_BUCKETS] = {0}, down[EBB_PERIOD_BUCKETS] = {0};
    for (size_t s = 0; s < t->n_series; s++) {
        const struct ebb_avail_series *a = &t->series[s];
        if (skipped(skip, a->provider))
            continue;
        struct ebb__capacity_history h = {a->at, a->available, a->n};
        struct ebb__avail_record rec;
        ebb__availability_record(&h, a->at[a->n - 1] + 1, &rec);
        for (size_t b = 0; b < EBB_PERIOD_BUCKETS; b++) {
            up[b] += rec.up[b];
            down[b] += rec.down[b];
        }
    }
    /* EM's start: a short and a long kind, half and half. */
    const struct rn_mix start = {0.5, 0.25, 8};
    struct prior p;
    rn_fit(up, &start, 0, &p.up);
    rn_fit(down, &start, 0, &p.down);
    return p;
}

static void print_mix(const char *what, const struct rn_mix *m)
{
    printf("%s %.0f%% short of %.2f h, long %.2f h", what,
           100 * m->p_short, m->short_h, m->long_h);
}

/* renewal's settings for the backtest: the prior and its weight. */
static void prior_yaml(char *buf, size_t n, const struct prior *p,
                       double weight)
{
    snprintf(buf, n,
             "{renewal: {up_short: %llds, up_long: %llds, "
             "up_short_share: %.4f, down_short: %llds, down_long: %llds, "
             "down_short_share: %.4f, prior_weight: %g}}",
             (long long)llround(p->up.short_h * 3600),
             (long long)llround(p->up.long_h * 3600), p->up.p_short,
             (long long)llround(p->down.short_h * 3600),
             (long long)llround(p->down.long_h * 3600), p->down.p_short,
             weight);
}

/* The first window of each pool every INNER_EVERY_H hours: where the
 * prior's weight is chosen (coarser than the figures' windows, to keep the
 * nested runs few). */
#define INNER_EVERY_H 24
static const double weights[] = {0.25, 1, 4, 16};
#define N_WEIGHTS (sizeof(weights) / sizeof(weights[0]))

/* renewal's prior_weight for held-out trace `held`, chosen on the others
 * alone: the candidate with the least mean cost / oracle over their
 * windows in every setting, each window's trace itself left out of the
 * prior as in the outer runs (the prior is fitted on the traces that are
 * neither held out nor scored). Ties: the first. */
static double select_weight(const struct ebb_avail_trace *t,
                            const struct cbl_fold *folds, size_t held,
                            const struct cbl_files *f, int *failed)
{
    double sum[N_WEIGHTS] = {0};
    size_t n = 0;
    for (size_t si = 0; si < N_SET && !*failed; si++) {
        for (size_t s = 0; s < t->n_series && !*failed; s++) {
            const struct ebb_avail_series *a = &t->series[s];
            if (strcmp(a->provider, folds[held].name) == 0)
                continue;
            const char *skip[] = {folds[held].name, a->provider, NULL};
            struct prior p = fit_prior(t, skip);
            ebb_time_ms last = a->at[a->n - 1];
            for (ebb_time_ms sub = a->at[0]; sub < last && !*failed;
                 sub += INNER_EVERY_H * HOUR) {
                if (cbl_write_window(f, &a, 1, sub, &settings[si]) != 0) {
                    *failed = 1;
                    break;
                }
                struct cbl_outcome r[N_WEIGHTS];
                for (size_t w = 0; w < N_WEIGHTS; w++) {
                    char yaml[320];
                    prior_yaml(yaml, sizeof(yaml), &p, weights[w]);
                    r[w] = cbl_run(f, "renewal", yaml);
                    *failed |= !r[w].ok;
                }
                if (*failed || !r[0].feasible || !(r[0].oracle > 0))
                    continue;
                for (size_t w = 0; w < N_WEIGHTS; w++)
                    sum[w] += r[w].cost / r[0].oracle;
                n++;
            }
        }
    }
    size_t best = 0;
    for (size_t w = 1; w < N_WEIGHTS; w++)
        if (sum[w] < sum[best])
            best = w;
    printf("  held out %-10s inner mean cost / oracle over %zu windows:",
           folds[held].name, n);
    for (size_t w = 0; w < N_WEIGHTS; w++)
        printf(" weight %g %.4f", weights[w], n ? sum[w] / (double)n : 0.0);
    printf("\n");
    return weights[best];
}

/* Per setting and policy. */
struct tally {
    double sum, worst;
    size_t n, missed, costlier_up;
    char worst_at[160];
    double fold_sum[MAX_FOLDS];
    size_t fold_n[MAX_FOLDS];
};

int bench_cbl_main(int argc, char **argv)
{
    double every_h = 24;
    int verbose = 0, zones_only = 0;
    const char *only = NULL;
    const char *pools = EBB_BENCH_SOURCE_ROOT "/bench/scenarios/cbl-pools.csv";
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--every") == 0 && i + 1 < argc)
            every_h = atof(argv[++i]);
        else if (strcmp(argv[i], "--pools") == 0 && i + 1 < argc)
            pools = argv[++i];
        else if (strcmp(argv[i], "--windows") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--zones") == 0)
            zones_only = 1;
        else {
            fprintf(stderr, "usage: bench-policies --cbl [--every HOURS] "
                            "[--pools FILE] [--windows] "
                            "[--only TEXT] [--zones]\n");
            return 2;
        }
    }
    if (!(every_h >= 0.5)) {
        fprintf(stderr, "bench-policies --cbl: --every must be >= 0.5\n");
        return 2;
    }
    struct ebb_avail_trace *t = NULL;
    struct ebb_diag d = {{0}};
    if (ebb_avail_trace_load(pools, &t, &d) != 0) {
        fprintf(stderr, "bench-policies --cbl: %s\n", d.msg);
        return 1;
    }
    struct cbl_fold folds[MAX_FOLDS];
    size_t n_folds = 0;
    int *fold_at = calloc(t->n_series, sizeof(*fold_at)); /* by pool */
    if (fold_at == NULL) {
        ebb_avail_trace_free(t);
        return 1;
    }
    for (size_t s = 0; s < t->n_series; s++) {
        int k = cbl_fold_of(folds, n_folds, t->series[s].provider);
        if (k < 0 && n_folds < MAX_FOLDS) {
            snprintf(folds[n_folds].name, sizeof(folds[0].name), "%s",
                     t->series[s].provider);
            k = (int)n_folds++;
        }
        fold_at[s] = k;
    }
    const char *none[] = {NULL};
    struct prior all = fit_prior(t, none);
    printf("bench-policies --cbl: %zu pools from %zu traces (%s); windows "
           "every %.1f h\n  prior fitted on all:", t->n_series, n_folds, pools,
           every_h);
    print_mix(" up", &all.up);
    print_mix("; down", &all.down);
    printf("\n");
    struct prior held_prior[MAX_FOLDS];
    for (size_t f = 0; f < n_folds; f++) {
        const char *skip[] = {folds[f].name, NULL};
        held_prior[f] = fit_prior(t, skip);
        printf("  held out %-10s prior from the others:", folds[f].name);
        print_mix(" up", &held_prior[f].up);
        print_mix("; down", &held_prior[f].down);
        printf("\n");
    }
    struct cbl_files f;
    if (cbl_files_open(&f) != 0) {
        perror("bench-policies --cbl: mkdtemp");
        free(fold_at);
        ebb_avail_trace_free(t);
        return 1;
    }
    int failed = 0;
    for (size_t k = 0; k < n_folds && !failed; k++) {
        double w = select_weight(t, folds, k, &f, &failed);
        prior_yaml(folds[k].yaml, sizeof(folds[k].yaml), &held_prior[k], w);
        printf("  held out %-10s prior_weight %g (chosen on the others)\n",
               folds[k].name, w);
    }
    static struct tally tl[N_SET][N_POL];
    memset(tl, 0, sizeof(tl));
    size_t repeated[N_SET] = {0}, windows[N_SET] = {0}, oracle_n[N_SET] = {0};
    double oracle_sum[N_SET] = {0};
    for (size_t si = 0; si < N_SET && !failed && !zones_only; si++) {
        const struct cbl_setting *st = &settings[si];
        for (size_t s = 0; s < t->n_series && !failed; s++) {
            const struct ebb_avail_series *a = &t->series[s];
            int fold = fold_at[s];
            if (fold < 0) /* past MAX_FOLDS traces */
                continue;
            if (only != NULL && strstr(a->instance_type, only) == NULL &&
                strstr(a->zone, only) == NULL && strstr(a->provider, only) == NULL)
                continue;
            ebb_time_ms last = a->at[a->n - 1];
            for (ebb_time_ms sub = a->at[0]; sub < last && !failed;
                 sub += (ebb_time_ms)(every_h * (double)HOUR)) {
                windows[si]++;
                repeated[si] += sub + (ebb_time_ms)st->deadline_h * HOUR > last;
                if (cbl_write_window(&f, &a, 1, sub, st) != 0) {
                    perror("bench-policies --cbl: writing a window");
                    failed = 1;
                    break;
                }
                struct cbl_outcome r[N_POL];
                for (size_t p = 0; p < N_POL; p++) {
                    r[p] = cbl_run(&f, policies[p],
                                   p == P_RENEWAL ? folds[fold].yaml : NULL);
                    failed |= !r[p].ok;
                }
                if (failed || !r[0].feasible || !(r[0].oracle > 0))
                    continue;
                oracle_sum[si] += r[0].oracle;
                oracle_n[si]++;
                if (verbose) {
                    char when[EBB_TIME_BUFSZ];
                    printf("%s %s %s %s %s oracle %.2f", st->name,
                           a->provider, a->zone, a->instance_type,
                           ebb_format_time(sub, when, sizeof(when)),
                           r[0].oracle);
                    for (size_t p = 0; p < N_POL; p++)
                        printf(" %s %.4f%s", policies[p],
                               r[p].cost / r[0].oracle, r[p].met ? "" : "!");
                    printf("\n");
                }
                for (size_t p = 0; p < N_POL; p++) {
                    struct tally *y = &tl[si][p];
                    double x = r[p].cost / r[0].oracle;
                    y->sum += x;
                    y->n++;
                    y->fold_sum[fold] += x;
                    y->fold_n[fold]++;
                    y->missed += !r[p].met;
                    y->costlier_up += r[p].cost > r[P_UP].cost * 1.0000001;
                    if (x > y->worst) {
                        char when[EBB_TIME_BUFSZ];
                        y->worst = x;
                        snprintf(y->worst_at, sizeof(y->worst_at),
                                 "%s %s %s from %s", a->provider, a->zone,
                                 a->instance_type,
                                 ebb_format_time(sub, when, sizeof(when)));
                    }
                }
            }
        }
        printf("\n%s: %zu windows (%zu run past their pool's end and repeat "
               "it), %zu feasible; mean oracle %.2f USD\n", st->name,
               windows[si], repeated[si], oracle_n[si],
               oracle_n[si] ? oracle_sum[si] / (double)oracle_n[si] : 0.0);
        printf("  %-17s %9s %9s %7s %8s", "POLICY", "xORACLE", "WORST",
               "MISSED", ">UP WIN");
        for (size_t k = 0; k < n_folds; k++)
            printf(" %10.10s", folds[k].name);
        printf("  WORST WINDOW\n");
        for (size_t p = 0; p < N_POL; p++) {
            const struct tally *y = &tl[si][p];
            printf("  %-17s %9.4f %9.4f %7zu %8zu",
                   policies[p], y->n ? y->sum / (double)y->n : 0.0, y->worst,
                   y->missed, y->costlier_up);
            for (size_t k = 0; k < n_folds; k++)
                printf(" %10.4f", y->fold_n[k] ? y->fold_sum[k] /
                                                     (double)y->fold_n[k]
                                               : 0.0);
            printf("  %s\n", y->worst_at);
        }
        fflush(stdout);
    }
    if (!failed)
        failed = cbl_zones(t, folds, n_folds, settings, N_SET, every_h,
                           verbose, &f);
    cbl_files_close(&f);
    free(fold_at);
    ebb_avail_trace_free(t);
    return failed;
}
