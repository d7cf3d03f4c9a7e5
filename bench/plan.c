/* bench-plan: how long one planning pass takes with many active jobs.
 *
 * Builds the engine as `ebb backtest` does (sim market over the shipped AWS
 * trace, the real policies, an in-memory store), submits N jobs (default
 * 10,000) that may use every offer, lets them launch, then wakes every job
 * at once, as a price change on an offer they all may use would, and times
 * the planning pass that follows. Baseline: the same pass with 1/10 of the
 * jobs, to show how it scales. Prints figures; never passes or fails.
 *
 * The jobs are alike (20 h of work, a 60 h deadline, 6 min restarts), or
 * with --varied of many shapes, drawn from a fixed seed: work 5-44 h,
 * deadline 50-86 h, restart overhead 3-12 min, each in whole units.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ebb/units.h>

#include "engine/engine.h"
#include "engine/internal.h" /* the planning pass over every job */
#include "engine/vengine.h"
#include "jobs/jobspec.h"
#include "market/catalog.h"

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct rig {
    struct ebb__catalog *catalog;
    struct ebb__vengine v;
};

static int rig_open(struct rig *r, const char *policy, ebb_time_ms start)
{
    struct ebb_diag d = {{0}};
    char yaml[1024];
    snprintf(yaml, sizeof(yaml),
             "providers:\n  sim:\n    prices: \"%s/data/traces/"
             "aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv\"\n"
             "default_policy: %s\n", EBB_BENCH_SOURCE_ROOT, policy);
    if (ebb__catalog_load(EBB_BENCH_SOURCE_ROOT "/data/catalog.csv", &r->catalog, &d) ||
        ebb__vengine_open(&r->v, "(bench)", yaml, r->catalog, start, &d)) {
        fprintf(stderr, "bench-plan: %s\n", d.msg);
        return 1;
    }
    ebb__clock_run_until(&r->v.clock, start);
    return 0;
}

static void rig_close(struct rig *r)
{
    ebb__vengine_close(&r->v);
    ebb__catalog_free(r->catalog);
}

/* splitmix64: the varied shapes' draws, the same on every machine. */
static uint64_t draw(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static unsigned draw_in(uint64_t *state, unsigned lo, unsigned hi)
{
    return lo + (unsigned)(draw(state) % (hi - lo + 1));
}

/* The spec of job i: bench-plan's one shape, or (varied) one drawn. */
static size_t job_spec(int varied, uint64_t *seed, char *buf, size_t size)
{
    unsigned work = 20, deadline = 60, overhead = 6;
    if (varied) {
        work = draw_in(seed, 5, 44);
        deadline = draw_in(seed, 50, 86);
        overhead = draw_in(seed, 3, 12);
    }
    int n = snprintf(buf, size,
                     "name: job\nrun: [train]\nwork: %uh\ndeadline: %uh\n"
                     "restart_overhead: %um\ncheckpoint: {every: 30m}\n",
                     work, deadline, overhead);
    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* One run: submit, launch, then time a pass where every job re-plans. */
static int run(const char *policy, size_t n_jobs, int varied, double *submit_s,
               double *pass_s, uint64_t *decisions)
{
    ebb_time_ms start;
    ebb_parse_time("2020-01-15T00:00:00Z", &start);
    struct rig r = {0};
    if (rig_open(&r, policy, start) != 0) {
        rig_close(&r);
        return 1;
    }
    uint64_t seed = 1;
    double t0 = cpu_seconds();
    for (size_t i = 0; i < n_jobs; i++) {
        struct ebb__job_spec spec;
        struct ebb_diag d = {{0}};
        char spec_text[256];
        size_t len = job_spec(varied, &seed, spec_text, sizeof(spec_text));
        if (ebb__jobspec_load_buffer("(bench)", spec_text, len, &spec, &d) != 0 ||
            ebb__engine_submit(r.v.engine, &spec, "", 0, NULL, NULL, &d) != 0) {
            fprintf(stderr, "bench-plan: %s\n", d.msg);
            rig_close(&r);
            return 1;
        }
    }
    ebb__clock_run_until(&r.v.clock, start); /* plans and launches */
    ebb__clock_run_until(&r.v.clock, start + 60000); /* instances running */
    *submit_s = cpu_seconds() - t0;

    struct ebb__engine_stats st;
    ebb__engine_stats(r.v.engine, &st);
    uint64_t before = st.decisions;
    ebb_time_ms now = ebb__clock_now(&r.v.clock);
    t0 = cpu_seconds();
    ebb__engine_wake_offer(r.v.engine, SIZE_MAX, NULL);
    ebb__clock_run_until(&r.v.clock, now);
    *pass_s = cpu_seconds() - t0;
    ebb__engine_stats(r.v.engine, &st);
    *decisions = st.decisions - before;
    rig_close(&r);
    return 0;
}

int main(int argc, char **argv)
{
    int varied = argc > 1 && strcmp(argv[1], "--varied") == 0;
    if (varied) {
        argc--;
        argv++;
    }
    size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 10000;
    if (getenv("EBB_PLUGIN_PATH") == NULL)
        setenv("EBB_PLUGIN_PATH", EBB_BENCH_BUILD_ROOT, 1);
    static const char *const policies[] = {"greedy", "uniform-progress", "on-demand",
                                           "deadline", "trough", "renewal"};
    printf("bench-plan: one planning pass in which every active job re-plans,\n"
           "as after a price change on an offer all of them may use; CPU time;\n"
           "%s\n\n", varied ? "jobs of varied shapes (work 5-44 h, deadline 50-86 h, "
                               "restart 3-12 min, seed 1)"
                             : "alike jobs (work 20 h, deadline 60 h, restart 6 min)");
    printf("%-18s %8s %12s %12s %12s %10s\n", "POLICY", "JOBS", "SUBMIT s",
           "PASS ms", "us/DECISION", "xBASE");
    const char *only = argc > 2 ? argv[2] : NULL;
    for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
        if (only != NULL && strcmp(only, policies[p]) != 0)
            continue;
        double base_submit, base_pass, submit, pass;
        uint64_t base_dec, dec;
        if (run(policies[p], n / 10, varied, &base_submit, &base_pass, &base_dec) != 0 ||
            run(policies[p], n, varied, &submit, &pass, &dec) != 0)
            return 1;
        printf("%-18s %8zu %12.3f %12.2f %12.2f %10s\n", policies[p], n / 10,
               base_submit, base_pass * 1e3,
               base_dec ? base_pass * 1e6 / (double)base_dec : 0.0, "1.0");
        printf("%-18s %8zu %12.3f %12.2f %12.2f %9.1fx\n", policies[p], n,
               submit, pass * 1e3, dec ? pass * 1e6 / (double)dec : 0.0,
               base_pass > 0 ? pass / base_pass : 0.0);
    }
    return 0;
}
