/* bench-backtest: how fast `ebb backtest` replays a workload, and how much
 * memory it takes. Runs ebb__backtest_run() in-process, each case in a
 * forked child (so each peak RSS is that run's own), on:
 *   small  examples/jobs/workload-small.yaml (10 jobs), the baseline;
 *   large  the generated 1,000-job, 90-day workload (bench/gen_workload.py
 *          --jobs 1000 --days 90 --seed 1, built next to this program);
 * for each policy (on-demand, greedy, uniform-progress), with the sim's
 * random preemption hazard 0 and 0.05 per spot instance-hour.
 *
 * Figures per run: wall and CPU time (CLOCK_PROCESS_CPUTIME_ID), jobs/s,
 * policy decisions/s (the result's "decisions"), simulated events/s (the
 * timers the virtual clock ran: the sum of ebb__clock_run_until()'s
 * returns), the oracle's CPU time (ebb__oracle_solve(), timed around each
 * call) and peak RSS (getrusage ru_maxrss of the child). Ratios: time per
 * job against the small workload run the same way, the oracle's share of
 * the run, and peak RSS against the bare process (the baseline).
 *
 * The two counters come from linker wraps (-Wl,--wrap, see meson.build):
 * libebb is static, so backtest.c's calls land here first. With the oracle
 * off (the default for large runs but one, see --oracle) the wrap answers
 * EBB_ENOTFOUND at once: the run is then the engine alone and the result's
 * oracle costs are null.
 *
 * Plugins are loaded from the build tree: EBB_PLUGIN_PATH is set to
 * EBB_BENCH_BUILD_ROOT (meson.project_build_root(), a compile-time define)
 * unless the environment already sets it. Data files are read from
 * EBB_BENCH_SOURCE_ROOT unless given.
 *
 * Prints figures; never fails on a number. Exit 1 only when a run fails. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/log.h"
#include "io/clock.h"
#include "report/backtest.h"
#include "report/oracle.h"

#ifndef EBB_BENCH_BUILD_ROOT
#define EBB_BENCH_BUILD_ROOT "."
#endif
#ifndef EBB_BENCH_SOURCE_ROOT
#define EBB_BENCH_SOURCE_ROOT "."
#endif
#ifndef EBB_BENCH_WORKLOAD
#define EBB_BENCH_WORKLOAD "workload-1000-90d.yaml"
#endif

#define PRICES "data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv"
#define AVAIL "data/availability_aws_2020-03.csv"
#define CATALOG "data/catalog.csv"
#define SMALL "examples/jobs/workload-small.yaml"

/* ---- the wraps ------------------------------------------------------------ */

static struct {
    uint64_t events;          /* timers run by the virtual clock */
    double clock_cpu;         /* CPU seconds inside ebb__clock_run_until */
    uint64_t oracle_calls, oracle_failed;
    int oracle_last_rc;
    double oracle_cpu;        /* CPU seconds inside ebb__oracle_solve */
    int oracle_off;
    ebb_dur_ms oracle_step;   /* > 0: solve on this grid instead */
    size_t n_slow;            /* keep the n_slow slowest calls */
} counters;

/* One oracle call, for --slowest. */
struct slow {
    double ms;
    size_t offers;
    double window_h, work_h, overhead_m;
    int rc;
};
static struct slow slowest[64];

static void keep_slow(const struct slow *x)
{
    size_t n = counters.n_slow;
    if (n == 0 || x->ms <= slowest[n - 1].ms)
        return;
    size_t i = n - 1;
    while (i > 0 && slowest[i - 1].ms < x->ms) {
        slowest[i] = slowest[i - 1];
        i--;
    }
    slowest[i] = *x;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t __real_ebb__clock_run_until(struct ebb__clock *clock, ebb_time_ms until);
uint64_t __wrap_ebb__clock_run_until(struct ebb__clock *clock, ebb_time_ms until);
int __real_ebb__oracle_solve(const struct ebb__oracle_job *job,
                             const struct ebb__oracle_offer *offers,
                             size_t n_offers, ebb_micros *cost,
                             struct ebb__oracle_run *runs, size_t max_runs,
                             size_t *n_runs);
int __wrap_ebb__oracle_solve(const struct ebb__oracle_job *job,
                             const struct ebb__oracle_offer *offers,
                             size_t n_offers, ebb_micros *cost,
                             struct ebb__oracle_run *runs, size_t max_runs,
                             size_t *n_runs);

uint64_t __wrap_ebb__clock_run_until(struct ebb__clock *clock, ebb_time_ms until)
{
    double t0 = cpu_now();
    uint64_t n = __real_ebb__clock_run_until(clock, until);
    counters.clock_cpu += cpu_now() - t0;
    counters.events += n;
    return n;
}

int __wrap_ebb__oracle_solve(const struct ebb__oracle_job *job,
                             const struct ebb__oracle_offer *offers,
                             size_t n_offers, ebb_micros *cost,
                             struct ebb__oracle_run *runs, size_t max_runs,
                             size_t *n_runs)
{
    if (counters.oracle_off)
        return EBB_ENOTFOUND;
    struct ebb__oracle_job what_if;
    if (counters.oracle_step > 0 && job != NULL) {
        what_if = *job;
        what_if.step = counters.oracle_step;
        job = &what_if;
    }
    double t0 = cpu_now();
    int rc = __real_ebb__oracle_solve(job, offers, n_offers, cost, runs,
                                      max_runs, n_runs);
    double dt = cpu_now() - t0;
    counters.oracle_cpu += dt;
    if (job != NULL) {
        struct slow x = {dt * 1e3, n_offers,
                         (double)(job->deadline - job->release) / 3600e3,
                         (double)job->work / 3600e3,
                         (double)job->overhead / 60e3, rc};
        keep_slow(&x);
    }
    counters.oracle_calls++;
    if (rc != 0) {
        counters.oracle_failed++;
        counters.oracle_last_rc = rc;
    }
    return rc;
}

/* ---- one run, in a child -------------------------------------------------- */

struct bcase {
    const char *workload_name;  /* "small" / "large" */
    const char *workload;       /* path */
    const char *policy;
    double hazard;
    int oracle;
};

struct result {
    int rc;
    char err[1024];
    double wall, cpu;
    double clock_cpu, oracle_cpu;
    uint64_t events, oracle_calls, oracle_failed;
    int oracle_last_rc;
    long long decisions;
    size_t jobs, succeeded, met;
    double cost, on_demand, oracle; /* oracle < 0: not computed */
    double oracle_sum;      /* over the jobs that have an oracle cost */
    size_t oracle_jobs;
    long maxrss_kb;
    struct slow slow[64];   /* the slowest oracle calls, slowest first */
};

static const char *prices, *avail, *catalog;
static ebb_dur_ms oracle_step;
static const char *dump_dir;
static size_t n_slowest;

static void run_case(const struct bcase *c, struct result *r)
{
    memset(r, 0, sizeof(*r));
    memset(&counters, 0, sizeof(counters));
    counters.oracle_off = !c->oracle;
    counters.oracle_step = oracle_step;
    counters.n_slow = c->oracle ? n_slowest : 0;
    memset(slowest, 0, sizeof(slowest));
    ebb__log_set_level(EBB_LOG_WARN);
    struct ebb__backtest_options o = {
        .prices = prices,
        .availability = avail,
        .align_availability = 1, /* the shipped traces' periods differ */
        .catalog = catalog,
        .workload = c->workload,
        .policy = c->policy,
        .seed = 1,
        .preemption_hazard = c->hazard,
    };
    json_t *res = NULL;
    struct ebb_diag d = {{0}};
    if (c->workload == NULL) { /* the baseline: nothing */
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        r->maxrss_kb = ru.ru_maxrss;
        return;
    }
    double w0 = wall_now(), c0 = cpu_now();
    r->rc = ebb__backtest_run(&o, &res, &d);
    r->cpu = cpu_now() - c0;
    r->wall = wall_now() - w0;
    r->clock_cpu = counters.clock_cpu;
    r->oracle_cpu = counters.oracle_cpu;
    r->events = counters.events;
    r->oracle_calls = counters.oracle_calls;
    r->oracle_failed = counters.oracle_failed;
    r->oracle_last_rc = counters.oracle_last_rc;
    memcpy(r->slow, slowest, sizeof(r->slow));
    if (r->rc != 0) {
        snprintf(r->err, sizeof(r->err), "%s",
                 d.msg[0] ? d.msg : ebb_strerror(r->rc));
    } else {
        r->decisions = (long long)json_integer_value(json_object_get(res, "decisions"));
        r->cost = json_number_value(json_object_get(res, "total_cost_usd"));
        r->on_demand = json_number_value(json_object_get(res, "total_on_demand_cost_usd"));
        json_t *oc = json_object_get(res, "total_oracle_cost_usd");
        r->oracle = json_is_number(oc) ? json_number_value(oc) : -1;
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(res, "jobs"), i, j) {
            r->jobs++;
            const char *st = json_string_value(json_object_get(j, "state"));
            r->succeeded += st != NULL && strcmp(st, "succeeded") == 0;
            r->met += json_is_true(json_object_get(j, "deadline_met"));
            json_t *jo = json_object_get(j, "oracle_cost_usd");
            if (json_is_number(jo)) {
                r->oracle_sum += json_number_value(jo);
                r->oracle_jobs++;
            }
        }
    }
    if (res != NULL && dump_dir != NULL) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s-%s-%g-%s.json", dump_dir,
                 c->workload_name, c->policy, c->hazard,
                 c->oracle ? "oracle" : "engine");
        if (json_dump_file(res, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0)
            fprintf(stderr, "bench-backtest: cannot write %s\n", path);
    }
    json_decref(res);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r->maxrss_kb = ru.ru_maxrss;
}

/* Forks, runs the case in the child and reads its result back. */
static void run_forked(const struct bcase *c, struct result *r)
{
    int fd[2];
    memset(r, 0, sizeof(*r));
    if (pipe(fd) != 0) {
        r->rc = -1;
        snprintf(r->err, sizeof(r->err), "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        r->rc = -1;
        snprintf(r->err, sizeof(r->err), "fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return;
    }
    if (pid == 0) {
        close(fd[0]);
        struct result mine;
        run_case(c, &mine);

        const char *p = (const char *)&mine;
        size_t left = sizeof(mine);
        while (left > 0) {
            ssize_t n = write(fd[1], p, left);
            if (n <= 0)
                _exit(1);
            p += n;
            left -= (size_t)n;
        }
        _exit(0);
    }
    close(fd[1]);
    char *p = (char *)r;
    size_t got = 0;
    while (got < sizeof(*r)) {
        ssize_t n = read(fd[0], p + got, sizeof(*r) - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got != sizeof(*r)) {
        memset(r, 0, sizeof(*r));
        r->rc = -1;
        snprintf(r->err, sizeof(r->err), "child died (status %d)", status);
    }
}

/* ---- the table ------------------------------------------------------------ */

static const char *const policies[] = {"on-demand", "greedy", "uniform-progress"};
static const double hazards[] = {0.0, 0.05};
#define N_POL 3
#define N_HAZ 2

static void print_header(void)
{
    printf("%-5s %-16s %5s %6s %5s %8s %8s %8s %9s %9s %10s %7s %6s %7s %7s\n",
           "LOAD", "POLICY", "HAZ", "ORACLE", "JOBS", "WALL s", "CPU s",
           "JOBS/s", "DECIS/s", "EVENTS", "EVENTS/s", "ORA %", "MET",
           "RSS MB", "xJOB");
}

static void print_row(const struct bcase *c, const struct result *r,
                      double per_job_small)
{
    if (r->rc != 0) {
        printf("%-5s %-16s %5.2f %6s  FAILED: %s\n", c->workload_name, c->policy,
               c->hazard, c->oracle ? "on" : "off", r->err);
        return;
    }
    double cpu = r->cpu > 0 ? r->cpu : 1e-9;
    double per_job = r->jobs ? r->cpu / (double)r->jobs : 0;
    char xjob[16] = "-";
    if (per_job_small > 0)
        snprintf(xjob, sizeof(xjob), "%.2f", per_job / per_job_small);
    char met[16];
    snprintf(met, sizeof(met), "%zu", r->met);
    printf("%-5s %-16s %5.2f %6s %5zu %8.3f %8.3f %8.1f %9.0f %9llu %10.0f "
           "%6.1f%% %6s %7.1f %7s\n",
           c->workload_name, c->policy, c->hazard, c->oracle ? "on" : "off",
           r->jobs, r->wall, r->cpu, (double)r->jobs / cpu,
           (double)r->decisions / cpu, (unsigned long long)r->events,
           (double)r->events / cpu, 100.0 * r->oracle_cpu / cpu, met,
           (double)r->maxrss_kb / 1024.0, xjob);
}

static const char usage[] =
    "Usage: bench-backtest [--oracle none|once|all] [--large W.yaml]\n"
    "                      [--small W.yaml] [--policy NAME] [--no-large]\n"
    "  --oracle once   (default) large runs without the oracle, plus one large\n"
    "                  greedy run with it; small runs both ways\n"
    "  --oracle all    every run with the oracle (slow: minutes per large run)\n"
    "  --oracle none   no run with the oracle\n"
    "  --policy NAME   only this policy\n"
    "  --no-large      only the small workload\n"
    "  --oracle-step MS  what-if: solve the oracle on this grid (a multiple\n"
    "                  of 1000) instead of backtest.c's one minute\n"
    "  --slowest N     print the N (<= 64) slowest oracle calls of each run\n"
    "  --dump DIR      write each run's result JSON (as ebb backtest --json)\n"
    "                  to DIR/<load>-<policy>-<hazard>-<oracle|engine>.json\n";

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"oracle", required_argument, NULL, 'o'},
        {"large", required_argument, NULL, 'l'},
        {"small", required_argument, NULL, 's'},
        {"policy", required_argument, NULL, 'p'},
        {"no-large", no_argument, NULL, 'n'},
        {"oracle-step", required_argument, NULL, 'S'},
        {"slowest", required_argument, NULL, 'N'},
        {"dump", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *oracle_mode = "once", *only_policy = NULL;
    const char *large = EBB_BENCH_WORKLOAD, *small = NULL;
    int no_large = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "", options, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'o': oracle_mode = optarg; break;
        case 'l': large = optarg; break;
        case 's': small = optarg; break;
        case 'p': only_policy = optarg; break;
        case 'n': no_large = 1; break;
        case 'd': dump_dir = optarg; break;
        case 'S':
        case 'N': {
            char *end = NULL;
            long long v = strtoll(optarg, &end, 10);
            if (end == optarg || *end != '\0' || v < 0 ||
                (c == 'S' && v % 1000 != 0) || (c == 'N' && v > 64)) {
                fputs(usage, stderr);
                return 2;
            }
            if (c == 'S')
                oracle_step = (ebb_dur_ms)v;
            else
                n_slowest = (size_t)v;
            break;
        }
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    int o_all = strcmp(oracle_mode, "all") == 0;
    int o_none = strcmp(oracle_mode, "none") == 0;
    if (!o_all && !o_none && strcmp(oracle_mode, "once") != 0) {
        fputs(usage, stderr);
        return 2;
    }
    if (setenv("EBB_PLUGIN_PATH", EBB_BENCH_BUILD_ROOT, 0) != 0)
        return 1;
    static char p_buf[4096], a_buf[4096], c_buf[4096], s_buf[4096];
    snprintf(p_buf, sizeof(p_buf), "%s/%s", EBB_BENCH_SOURCE_ROOT, PRICES);
    snprintf(a_buf, sizeof(a_buf), "%s/%s", EBB_BENCH_SOURCE_ROOT, AVAIL);
    snprintf(c_buf, sizeof(c_buf), "%s/%s", EBB_BENCH_SOURCE_ROOT, CATALOG);
    snprintf(s_buf, sizeof(s_buf), "%s/%s", EBB_BENCH_SOURCE_ROOT, SMALL);
    prices = p_buf;
    avail = a_buf;
    catalog = c_buf;
    if (small == NULL)
        small = s_buf;

    /* The memory baseline: a forked child that runs nothing. */
    struct bcase none = {"none", NULL, "-", 0, 0};
    struct result base;
    run_forked(&none, &base);
    long base_rss = base.maxrss_kb;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench-backtest: ebb backtest in-process, one forked child per run, "
           "single-threaded; %ld CPU(s) online, nothing pinned\n", cores);
    printf("prices %s\navailability %s\ncatalog %s\nsmall %s\nlarge %s\n"
           "EBB_PLUGIN_PATH=%s\n\n", prices, avail, catalog, small,
           no_large ? "(skipped)" : large, getenv("EBB_PLUGIN_PATH"));
    printf("ORACLE: on = hindsight optimum solved per job; off = engine alone.\n"
           "EVENTS: timers run by the virtual clock; ORA %%: oracle share of "
           "CPU; xJOB: CPU per job / the small workload's (same policy, "
           "hazard, oracle).\n"
           "Baseline: the small workload; memory baseline: a forked child "
           "that runs nothing, %.1f MB peak RSS.\n", (double)base_rss / 1024.0);
    if (oracle_step > 0)
        printf("What-if: the oracle solves on a %lld ms grid (backtest.c "
               "uses 60000).\n", (long long)oracle_step);
    printf("\n");
    print_header();
    fflush(stdout);

    int failed = 0;
    /* Small: per (policy, hazard, oracle) CPU per job, the baseline. */
    double small_per_job[N_POL][N_HAZ][2] = {{{0}}};
    struct result large_engine[N_POL][N_HAZ];
    int have_large_engine[N_POL][N_HAZ] = {{0}};
    double large_oracle_total = 0, large_total = 0;
    for (int pass = 0; pass < 2; pass++) {
        int is_large = pass == 1;
        if (is_large && no_large)
            break;
        for (size_t p = 0; p < N_POL; p++) {
            if (only_policy != NULL && strcmp(only_policy, policies[p]) != 0)
                continue;
            for (size_t h = 0; h < N_HAZ; h++) {
                for (int orc = 0; orc < 2; orc++) {
                    int want = orc ? !o_none : !o_all;
                    if (is_large && orc && !o_all)
                        want = !o_none && p == 1 && h == 0;
                    if (!want)
                        continue;
                    struct bcase c = {is_large ? "large" : "small",
                                      is_large ? large : small,
                                      policies[p], hazards[h], orc};
                    struct result r;
                    run_forked(&c, &r);
                    failed |= r.rc != 0;
                    double per_small = small_per_job[p][h][orc];
                    if (!is_large && r.rc == 0 && r.jobs > 0)
                        small_per_job[p][h][orc] = r.cpu / (double)r.jobs;
                    print_row(&c, &r, is_large ? per_small : 0);
                    if (r.rc == 0 && orc)
                        printf("      total cost %.2f USD, on-demand %.2f USD, "
                               "oracle %.2f USD over %zu jobs; oracle %.2f ms "
                               "per job\n", r.cost, r.on_demand, r.oracle_sum,
                               r.oracle_jobs, r.oracle_calls ? 1e3 *
                                   r.oracle_cpu / (double)r.oracle_calls : 0.0);
                    if (r.rc == 0 && r.oracle_failed > 0)
                        printf("      (oracle: %llu of %llu jobs without a "
                               "result, last error %s)\n",
                               (unsigned long long)r.oracle_failed,
                               (unsigned long long)r.oracle_calls,
                               ebb_strerror(r.oracle_last_rc));
                    for (size_t i = 0; i < n_slowest && r.slow[i].ms > 0; i++)
                        printf("      slow oracle call: %8.1f ms  %3zu offers"
                               "  window %6.1f h  work %5.1f h  overhead "
                               "%4.1f m  rc %d\n", r.slow[i].ms,
                               r.slow[i].offers, r.slow[i].window_h,
                               r.slow[i].work_h, r.slow[i].overhead_m,
                               r.slow[i].rc);
                    if (is_large && r.rc == 0 && !orc) {
                        large_engine[p][h] = r;
                        have_large_engine[p][h] = 1;
                    }
                    if (is_large && r.rc == 0 && orc) {
                        large_oracle_total += r.oracle_cpu;
                        large_total += r.cpu;
                        if (have_large_engine[p][h])
                            printf("      vs the same run without the oracle: "
                                   "%.2fx CPU (%.3f s engine alone, %.3f s "
                                   "oracle, %.2f ms per job)\n",
                                   r.cpu / large_engine[p][h].cpu,
                                   large_engine[p][h].cpu, r.oracle_cpu,
                                   r.oracle_calls ? 1e3 * r.oracle_cpu /
                                       (double)r.oracle_calls : 0.0);
                    }
                    fflush(stdout);
                }
            }
        }
    }
    printf("\n");
    for (size_t p = 0; p < N_POL; p++) {
        for (size_t h = 0; h < N_HAZ; h++) {
            if (!have_large_engine[p][h])
                continue;
            const struct result *r = &large_engine[p][h];
            printf("large %-16s hazard %.2f: engine alone %.3f s CPU "
                   "(clock loop %.3f s, %.0f events/s of clock loop), "
                   "peak RSS %.1f MB = %.1fx the bare process\n",
                   policies[p], hazards[h], r->cpu, r->clock_cpu,
                   r->clock_cpu > 0 ? (double)r->events / r->clock_cpu : 0.0,
                   (double)r->maxrss_kb / 1024.0,
                   base_rss > 0 ? (double)r->maxrss_kb / (double)base_rss : 0.0);
        }
    }
    if (large_total > 0)
        printf("large runs with the oracle: %.3f s CPU, of which the oracle "
               "%.3f s (%.1f%%)\n", large_total, large_oracle_total,
               100.0 * large_oracle_total / large_total);
    return failed ? 1 : 0;
}
