/* bench-policies --cbl, the multi-zone case (SkyNomad's setting, one
 * region): a job that may run in any of several zones whose spot capacity
 * are real pools recorded at the same time.
 *
 * Groups: the pools of one trace with one GPU configuration (the instance
 * type without a GCP log's "-instanceN" collector suffix) in two or more
 * zones (bench/scenarios/cbl-pools.csv has 17 such groups). Each pool is
 * the spot capacity of p3.2xlarge in a zone of its own (cbl_window.h),
 * spot 0.9701 USD/h in every zone, on-demand 3.06 USD/h. A window is one
 * job of 48 h of work submitted when every pool of the group has begun
 * (its latest first row) + k * every_h while every pool still has rows; a
 * pool shorter than the window repeats from its own start.
 *
 * Per window: greedy, uniform-progress, deadline and renewal (the prior of
 * the held-out trace, as in the single-zone figures) on all the group's
 * zones, the oracle on all of them, and uniform-progress on each zone
 * alone: "best zone's UP" is the cheapest of those per window, a
 * hindsight choice of zone that no online policy can make; the issue asks
 * the default to cost at least 10% less than it. */
#include "policies_zones.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#define HOUR EBB_MS_PER_HOUR

static const char *const policies[] = {"greedy", "uniform-progress", "deadline",
                                       "renewal"};
#define N_POL (sizeof(policies) / sizeof(policies[0]))
#define P_RENEWAL 3

/* The GPU configuration a pool records: its instance type up to a GCP
 * keep-alive log's "-instance" suffix, in buf. */
static const char *config_of(const struct ebb_avail_series *a, char *buf, size_t n)
{
    const char *cut = strstr(a->instance_type, "-instance");
    size_t len = cut != NULL ? (size_t)(cut - a->instance_type) : strlen(a->instance_type);
    snprintf(buf, n, "%.*s", (int)len, a->instance_type);
    return buf;
}

struct group {
    const struct ebb_avail_series *pools[CBL_MAX_ZONES];
    size_t n;
    int fold;
    ebb_time_ms first, last; /* the latest first row, the earliest last row */
};

/* Gathers pool s into the group of its trace and configuration (a new one
 * when none holds it yet, and not when that group already has its zone).
 * Returns the number of groups. */
static size_t add_pool(struct group *g, size_t n_groups, size_t cap,
                       const struct ebb_avail_series *a, int fold)
{
    char want[128], have[128];
    config_of(a, want, sizeof(want));
    size_t k = 0;
    for (; k < n_groups; k++)
        if (strcmp(g[k].pools[0]->provider, a->provider) == 0 &&
            strcmp(config_of(g[k].pools[0], have, sizeof(have)), want) == 0)
            break;
    if (k == n_groups) {
        if (n_groups == cap)
            return n_groups;
        g[k] = (struct group){.fold = fold, .first = a->at[0], .last = a->at[a->n - 1]};
        n_groups++;
    }
    for (size_t i = 0; i < g[k].n; i++)
        if (strcmp(g[k].pools[i]->zone, a->zone) == 0)
            return n_groups;
    if (g[k].n == CBL_MAX_ZONES)
        return n_groups;
    g[k].pools[g[k].n++] = a;
    if (a->at[0] > g[k].first)
        g[k].first = a->at[0];
    if (a->at[a->n - 1] < g[k].last)
        g[k].last = a->at[a->n - 1];
    return n_groups;
}

int cbl_fold_of(const struct cbl_fold *folds, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(folds[i].name, name) == 0)
            return (int)i;
    return -1;
}

struct zone_tally {
    double sum, worst, vs_best_up;
    size_t n, missed, dearer_than_best_up;
};

/* One window of group *g: every policy on all zones, uniform-progress on
 * each zone alone. Returns 0, or -1 when a run failed. */
static int run_window(const struct cbl_files *f, const struct group *g,
                      const struct cbl_fold *fold, ebb_time_ms submit,
                      const struct cbl_setting *st, struct cbl_outcome r[N_POL],
                      double *best_up)
{
    if (cbl_write_window(f, g->pools, g->n, submit, st) != 0)
        return -1;
    for (size_t p = 0; p < N_POL; p++) {
        r[p] = cbl_run(f, policies[p], p == P_RENEWAL ? fold->yaml : NULL);
        if (!r[p].ok)
            return -1;
    }
    *best_up = -1;
    for (size_t z = 0; z < g->n; z++) {
        if (cbl_write_window(f, &g->pools[z], 1, submit, st) != 0)
            return -1;
        struct cbl_outcome up = cbl_run(f, "uniform-progress", NULL);
        if (!up.ok)
            return -1;
        if (*best_up < 0 || up.cost < *best_up)
            *best_up = up.cost;
    }
    return 0;
}

int cbl_zones(const struct ebb_avail_trace *t, const struct cbl_fold *folds,
              size_t n_folds, const struct cbl_setting *settings, size_t n_settings,
              double every_h, int verbose, const struct cbl_files *f)
{
    struct group *groups = calloc(t->n_series, sizeof(*groups));
    if (groups == NULL)
        return 1;
    size_t n_groups = 0;
    for (size_t s = 0; s < t->n_series; s++) {
        int fold = cbl_fold_of(folds, n_folds, t->series[s].provider);
        if (fold >= 0)
            n_groups = add_pool(groups, n_groups, t->n_series, &t->series[s], fold);
    }
    size_t multi = 0;
    for (size_t k = 0; k < n_groups; k++)
        multi += groups[k].n > 1;
    printf("\nmulti-zone: %zu groups of 2-%d zones (one trace, one GPU configuration "
           "each); per window the policies on all zones, and uniform-progress on "
           "each zone alone (the best of those: \"best zone's UP\")\n",
           multi, CBL_MAX_ZONES);
    int failed = 0;
    for (size_t si = 0; si < n_settings && !failed; si++) {
        const struct cbl_setting *st = &settings[si];
        struct zone_tally tl[N_POL] = {{0}};
        double best_up_sum = 0, oracle_sum = 0;
        size_t windows = 0;
        for (size_t k = 0; k < n_groups && !failed; k++) {
            const struct group *g = &groups[k];
            if (g->n < 2)
                continue;
            for (ebb_time_ms sub = g->first; sub < g->last && !failed;
                 sub += (ebb_time_ms)(every_h * (double)HOUR)) {
                struct cbl_outcome r[N_POL];
                double best_up;
                if (run_window(f, g, &folds[g->fold], sub, st, r, &best_up) != 0) {
                    failed = 1;
                    break;
                }
                if (!r[0].feasible || !(r[0].oracle > 0) || !(best_up > 0))
                    continue;
                windows++;
                oracle_sum += r[0].oracle;
                best_up_sum += best_up / r[0].oracle;
                if (verbose) {
                    char when[EBB_TIME_BUFSZ], cfg[128];
                    printf("%s zones %s %s x%zu %s oracle %.2f best-zone-UP %.4f",
                           st->name, g->pools[0]->provider,
                           config_of(g->pools[0], cfg, sizeof(cfg)), g->n,
                           ebb_format_time(sub, when, sizeof(when)), r[0].oracle,
                           best_up / r[0].oracle);
                    for (size_t p = 0; p < N_POL; p++)
                        printf(" %s %.4f%s", policies[p], r[p].cost / r[0].oracle,
                               r[p].met ? "" : "!");
                    printf("\n");
                }
                for (size_t p = 0; p < N_POL; p++) {
                    struct zone_tally *y = &tl[p];
                    double x = r[p].cost / r[0].oracle;
                    y->sum += x;
                    y->n++;
                    y->vs_best_up += r[p].cost / best_up;
                    y->missed += !r[p].met;
                    y->dearer_than_best_up += r[p].cost > best_up * 1.0000001;
                    if (x > y->worst)
                        y->worst = x;
                }
            }
        }
        printf("\n%s, multi-zone: %zu feasible windows; mean oracle %.2f USD; best "
               "zone's UP %.4f x the oracle\n", st->name, windows,
               windows ? oracle_sum / (double)windows : 0.0,
               windows ? best_up_sum / (double)windows : 0.0);
        printf("  %-17s %9s %9s %7s %14s %10s\n", "POLICY", "xORACLE", "WORST", "MISSED",
               "xBEST-ZONE-UP", ">BEST WIN");
        for (size_t p = 0; p < N_POL; p++) {
            const struct zone_tally *y = &tl[p];
            double n = y->n ? (double)y->n : 1.0;
            printf("  %-17s %9.4f %9.4f %7zu %14.4f %10zu\n", policies[p], y->sum / n,
                   y->worst, y->missed, y->vs_best_up / n, y->dearer_than_best_up);
        }
        fflush(stdout);
    }
    free(groups);
    return failed;
}
