/* bench-policies: what each policy pays, against on-demand and the
 * hindsight oracle, on the same backtests. Runs ebb__backtest_run()
 * in-process for each policy (on-demand, greedy, uniform-progress, trough,
 * deadline) and each scenario:
 *   small    examples/jobs/workload-small.yaml on the shipped AWS trace and
 *            data/availability_aws_2020-03.csv (replayed over the prices);
 *   cbl-12m  Can't-Be-Late style: 48 h of work, 52 h deadline, restart
 *   cbl-3m   overhead 12 min / 3 min, spot at a constant 0.9701 USD/h vs
 *            3.06 on demand, spot capacity from bench/scenarios/
 *            cbl-availability.csv (see bench/scenarios/README.md);
 *   market   bench/scenarios/market-workload.yaml on the GPU marketplace
 *            trace's aggregate per-gpu-hour:min series (market-prices.csv).
 * Baselines: on-demand (the same run), the result's on_demand_cost_usd and
 * oracle_cost_usd. Figures: total cost, on-demand cost, oracle cost, cost /
 * oracle, cost / uniform-progress's, deadlines missed among jobs whose
 * deadline is feasible (the oracle found a schedule). Prints figures;
 * never fails on a number. Exit 1 only when a run fails.
 *
 * Plugins come from the build tree (EBB_PLUGIN_PATH defaults to
 * EBB_BENCH_BUILD_ROOT), data from EBB_BENCH_SOURCE_ROOT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/log.h"
#include "policies_cbl.h"
#include "policies_timing.h"
#include "report/backtest.h"

#ifndef EBB_BENCH_BUILD_ROOT
#define EBB_BENCH_BUILD_ROOT "."
#endif
#ifndef EBB_BENCH_SOURCE_ROOT
#define EBB_BENCH_SOURCE_ROOT "."
#endif

struct scenario {
    const char *name;
    const char *prices, *availability, *workload;
};

static const struct scenario scenarios[] = {
    {"small", "data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv",
     "data/availability_aws_2020-03.csv", "examples/jobs/workload-small.yaml"},
    {"cbl-12m", "bench/scenarios/cbl-prices.csv",
     "bench/scenarios/cbl-availability.csv", "bench/scenarios/cbl-12m.yaml"},
    {"cbl-3m", "bench/scenarios/cbl-prices.csv",
     "bench/scenarios/cbl-availability.csv", "bench/scenarios/cbl-3m.yaml"},
    {"market", "bench/scenarios/market-prices.csv", NULL,
     "bench/scenarios/market-workload.yaml"},
};
#define N_SCEN (sizeof(scenarios) / sizeof(scenarios[0]))

static const char *const policies[] = {"on-demand", "greedy",
                                       "uniform-progress", "trough",
                                       "deadline", "renewal"};
#define N_POL (sizeof(policies) / sizeof(policies[0]))
#define UP 2 /* the named baseline for "never costlier" */

struct result {
    int ok;
    double cost, on_demand, oracle;
    size_t jobs, feasible, missed, missed_infeasible;
};

static const char *path(char *buf, size_t n, const char *rel)
{
    if (rel == NULL)
        return NULL;
    snprintf(buf, n, "%s/%s", EBB_BENCH_SOURCE_ROOT, rel);
    return buf;
}

static struct result run(const struct scenario *s, const char *policy)
{
    struct result r = {0};
    char p[4096], a[4096], c[4096], w[4096];
    struct ebb__backtest_options o = {
        .prices = path(p, sizeof(p), s->prices),
        .availability = path(a, sizeof(a), s->availability),
        /* The shipped scenario pairs prices and availability from different
         * periods; the others overlap and are played as recorded. */
        .align_availability = 1,
        .catalog = path(c, sizeof(c), "data/catalog.csv"),
        .workload = path(w, sizeof(w), s->workload),
        .policy = policy,
        .seed = 1,
    };
    json_t *res = NULL;
    struct ebb_diag d = {{0}};
    int rc = ebb__backtest_run(&o, &res, &d);
    if (rc != 0) {
        fprintf(stderr, "bench-policies: %s / %s: %s\n", s->name, policy,
                d.msg[0] ? d.msg : ebb_strerror(rc));
        return r;
    }
    r.ok = 1;
    r.cost = json_number_value(json_object_get(res, "total_cost_usd"));
    r.on_demand = json_number_value(json_object_get(res,
                                                    "total_on_demand_cost_usd"));
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(res, "jobs"), i, j) {
        r.jobs++;
        json_t *oc = json_object_get(j, "oracle_cost_usd");
        int met = json_is_true(json_object_get(j, "deadline_met"));
        if (json_is_number(oc)) {
            r.oracle += json_number_value(oc);
            r.feasible++;
            r.missed += !met;
        } else {
            r.missed_infeasible += !met;
        }
    }
    json_decref(res);
    return r;
}

int main(int argc, char **argv)
{
    if (setenv("EBB_PLUGIN_PATH", EBB_BENCH_BUILD_ROOT, 0) != 0)
        return 1;
    ebb__log_set_level(EBB_LOG_ERROR);
    if (argc > 1 && strcmp(argv[1], "--cbl") == 0)
        return bench_cbl_main(argc - 2, argv + 2);
    if (argc > 1 && strcmp(argv[1], "--timing") == 0)
        return bench_timing_main(argc - 2, argv + 2);
    if (argc > 1) {
        fprintf(stderr, "usage: bench-policies [--cbl [--every HOURS] "
                        "[--pools FILE]] | [--timing]\n");
        return 2;
    }
    printf("bench-policies: ebb backtest in-process, seed 1, no random "
           "hazard; baselines: on-demand, the oracle (hindsight optimum per "
           "job), uniform-progress (xUP)\n\n");
    printf("%-8s %-16s %10s %10s %10s %8s %7s %5s %12s\n", "SCENARIO",
           "POLICY", "COST $", "ON-DEM $", "ORACLE $", "xORACLE", "xUP",
           "JOBS", "MISSED/FEAS");
    int failed = 0;
    double ratio_sum[N_POL] = {0};
    size_t ratio_n[N_POL] = {0}, missed[N_POL] = {0}, worse_up[N_POL] = {0};
    for (size_t s = 0; s < N_SCEN; s++) {
        struct result r[N_POL];
        for (size_t p = 0; p < N_POL; p++) {
            r[p] = run(&scenarios[s], policies[p]);
            failed |= !r[p].ok;
        }
        for (size_t p = 0; p < N_POL; p++) {
            if (!r[p].ok) {
                printf("%-8s %-16s FAILED\n", scenarios[s].name, policies[p]);
                continue;
            }
            double xo = r[p].oracle > 0 ? r[p].cost / r[p].oracle : 0;
            double xu = r[UP].ok && r[UP].cost > 0 ? r[p].cost / r[UP].cost
                                                   : 0;
            char miss[32];
            snprintf(miss, sizeof(miss), "%zu/%zu", r[p].missed,
                     r[p].feasible);
            printf("%-8s %-16s %10.2f %10.2f %10.2f %8.3f %7.3f %5zu %12s\n",
                   scenarios[s].name, policies[p], r[p].cost, r[p].on_demand,
                   r[p].oracle, xo, xu, r[p].jobs, miss);
            if (r[p].missed_infeasible > 0)
                printf("         (%zu more job(s) without a feasible "
                       "schedule missed their deadline)\n",
                       r[p].missed_infeasible);
            if (xo > 0) {
                ratio_sum[p] += xo;
                ratio_n[p]++;
            }
            missed[p] += r[p].missed;
            worse_up[p] += r[UP].ok && r[p].cost > r[UP].cost * 1.0000001;
        }
        fflush(stdout);
    }
    printf("\n%-16s %14s %16s %22s\n", "POLICY", "MEAN xORACLE",
           "MISSED (FEAS.)", "SCENARIOS COSTLIER/UP");
    for (size_t p = 0; p < N_POL; p++)
        printf("%-16s %14.3f %16zu %22zu\n", policies[p],
               ratio_n[p] ? ratio_sum[p] / (double)ratio_n[p] : 0.0,
               missed[p], worse_up[p]);
    return failed ? 1 : 0;
}
