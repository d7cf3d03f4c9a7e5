/* bench-policies --timing: how much of the price-timing opportunity each
 * policy takes where prices move (docs/policies.md, "Price timing").
 *
 * Per trace family, one job is submitted every day once two weeks of
 * prices lie behind it: 8 h of work on the reference GPU, a 24 h deadline,
 * spot-fallback, spot capacity unlimited (no availability trace), so
 * policies differ only in where and when they run. run-now is greedy (the
 * cheapest offer at submission, kept to the end); the optimum is the
 * backtest's hindsight oracle per job. For each policy:
 *
 *     capture = (run-now - policy) / (run-now - optimum)
 *
 * over the family's totals: 1 takes the whole opportunity, 0 none of it,
 * below 0 pays more than running at once. Nothing here is fitted. */
#include "policies_timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <ebb/buf.h>
#include <ebb/units.h>

#include "report/backtest.h"

#ifndef EBB_BENCH_SOURCE_ROOT
#define EBB_BENCH_SOURCE_ROOT "."
#endif

struct family {
    const char *name;
    const char *prices;    /* relative to the source root */
    const char *providers; /* YAML flow list */
    const char *types;     /* YAML flow list */
    const char *first_submit, *last_submit; /* days, YYYY-MM-DD */
};

static const struct family families[] = {
    {"aws", "data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv", "[aws]",
     "[p3.2xlarge]", "2020-01-05", "2020-02-27"},
    {"azure", "data/traces/azure_lowpri_gpu_3regions_2020-02_2020-03.csv", "[azure]",
     "[NC6s v3, NC6s v2, NC6]", "2020-03-09", "2020-03-21"},
    {"market", "bench/scenarios/market-prices.csv", "[primeintellect-aggregate]",
     "[H100_80GB_SXM5, H100_80GB_PCIe, A100_80GB_SXM4, A100_80GB_PCIe]", "2025-11-02",
     "2025-11-07"},
};
#define N_FAM (sizeof(families) / sizeof(families[0]))

/* greedy first: the run-now baseline the others are measured against. */
static const char *const policies[] = {"greedy", "uniform-progress", "trough", "deadline",
                                       "renewal"};
#define N_POL (sizeof(policies) / sizeof(policies[0]))

struct totals {
    int ok;
    double cost, oracle;
    size_t jobs, missed;
};

static int parse_day(const char *s, int64_t *days)
{
    int y, m, d;
    if (sscanf(s, "%4d-%2d-%2d", &y, &m, &d) != 3)
        return -1;
    *days = ebb_days_from_civil(y, m, d);
    return 0;
}

/* The family's workload as a YAML file in $TMPDIR; returns its path
 * (static buffer) or NULL. */
static const char *write_workload(const struct family *f, size_t *n_jobs)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/ebb-timing-XXXXXX.yaml",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    int fd = mkstemps(path, 5);
    if (fd < 0)
        return NULL;
    int64_t first, last;
    if (parse_day(f->first_submit, &first) != 0 || parse_day(f->last_submit, &last) != 0) {
        close(fd);
        return NULL;
    }
    struct ebb_buf b = {0};
    ebb_buf_printf(&b, "defaults:\n  market: spot-fallback\n  restart_overhead: 5m\n"
                       "  work: 8h\n  deadline: 24h\n  run: [python3, train.py]\n"
                       "  checkpoint: {every: 1h, grace: 90s}\n"
                       "  resources:\n    providers: %s\n    instance_types: %s\njobs:\n",
                   f->providers, f->types);
    *n_jobs = 0;
    for (int64_t day = first; day <= last; day++) {
        int64_t y;
        int m, d;
        ebb_civil_from_days(day, &y, &m, &d);
        /* Submitted at a different hour each day, so that no hour of the
         * daily cycle is favoured. */
        int hour = (int)((day - first) * 7 % 24);
        ebb_buf_printf(&b, "  - {name: t%04lld-%02d-%02d, submit: %04lld-%02d-%02dT%02d:00:00Z}\n",
                       (long long)y, m, d, (long long)y, m, d, hour);
        (*n_jobs)++;
    }
    int bad = b.failed || write(fd, b.data, b.len) != (ssize_t)b.len;
    ebb_buf_free(&b);
    if (close(fd) != 0 || bad) {
        unlink(path);
        return NULL;
    }
    return path;
}

static struct totals run(const struct family *f, const char *workload, const char *policy)
{
    struct totals t = {0};
    char prices[4096], catalog[4096];
    snprintf(prices, sizeof(prices), "%s/%s", EBB_BENCH_SOURCE_ROOT, f->prices);
    snprintf(catalog, sizeof(catalog), "%s/data/catalog.csv", EBB_BENCH_SOURCE_ROOT);
    struct ebb__backtest_options o = {
        .prices = prices, .catalog = catalog, .workload = workload,
        .policy = policy, .seed = 1,
    };
    json_t *res = NULL;
    struct ebb_diag d = {{0}};
    int rc = ebb__backtest_run(&o, &res, &d);
    if (rc != 0) {
        fprintf(stderr, "bench-policies --timing: %s / %s: %s\n", f->name, policy,
                d.msg[0] ? d.msg : ebb_strerror(rc));
        return t;
    }
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(res, "jobs"), i, j) {
        json_t *oc = json_object_get(j, "oracle_cost_usd");
        if (!json_is_number(oc))
            continue; /* no feasible schedule: not part of the opportunity */
        t.jobs++;
        t.cost += json_number_value(json_object_get(j, "cost_usd"));
        t.oracle += json_number_value(oc);
        t.missed += !json_is_true(json_object_get(j, "deadline_met"));
    }
    json_decref(res);
    t.ok = 1;
    return t;
}

int bench_timing_main(int argc, char **argv)
{
    (void)argv;
    if (argc > 0) {
        fprintf(stderr, "usage: bench-policies --timing\n");
        return 2;
    }
    printf("bench-policies --timing: one job a day per trace family (8 h of work, "
           "24 h deadline, unlimited spot capacity); run-now = greedy; "
           "capture = (run-now - policy) / (run-now - oracle)\n\n");
    printf("%-7s %-16s %5s %10s %10s %10s %8s %8s %7s\n", "FAMILY", "POLICY", "JOBS",
           "COST $", "RUN-NOW $", "ORACLE $", "xORACLE", "CAPTURE", "MISSED");
    int failed = 0;
    for (size_t fi = 0; fi < N_FAM; fi++) {
        const struct family *f = &families[fi];
        size_t n_jobs = 0;
        const char *workload = write_workload(f, &n_jobs);
        if (workload == NULL) {
            fprintf(stderr, "bench-policies --timing: cannot write the %s workload\n",
                    f->name);
            return 1;
        }
        struct totals t[N_POL];
        for (size_t p = 0; p < N_POL; p++) {
            t[p] = run(f, workload, policies[p]);
            failed |= !t[p].ok;
        }
        unlink(workload);
        double gap = t[0].ok ? t[0].cost - t[0].oracle : 0;
        for (size_t p = 0; p < N_POL; p++) {
            if (!t[p].ok) {
                printf("%-7s %-16s FAILED\n", f->name, policies[p]);
                continue;
            }
            char capture[16] = "-";
            if (t[0].ok && gap > 1e-9)
                snprintf(capture, sizeof(capture), "%.3f", (t[0].cost - t[p].cost) / gap);
            printf("%-7s %-16s %5zu %10.2f %10.2f %10.2f %8.4f %8s %7zu\n", f->name,
                   policies[p], t[p].jobs, t[p].cost, t[0].ok ? t[0].cost : 0.0, t[p].oracle,
                   t[p].oracle > 0 ? t[p].cost / t[p].oracle : 0.0, capture, t[p].missed);
        }
        if (t[0].ok)
            printf("%-7s opportunity: run-now costs %.2f%% more than the oracle over %zu "
                   "jobs\n", f->name, t[0].oracle > 0 ? 100 * gap / t[0].oracle : 0.0,
                   t[0].jobs);
        fflush(stdout);
    }
    return failed ? 1 : 0;
}
