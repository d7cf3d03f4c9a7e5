/* See cbl_window.h. */
#include "cbl_window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <ebb/units.h>

#include "report/backtest.h"

#ifndef EBB_BENCH_SOURCE_ROOT
#define EBB_BENCH_SOURCE_ROOT "."
#endif

#define HOUR EBB_MS_PER_HOUR

/* Zone i of a window; the first is the single-zone harness's own. */
static const char *const zones[CBL_MAX_ZONES] = {
    "us-east-1c", "us-east-1a", "us-east-1b", "us-east-1d", "us-east-1e", "us-east-1f",
};

int cbl_files_open(struct cbl_files *f)
{
    snprintf(f->dir, sizeof(f->dir), "/tmp/ebb-cbl-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->prices, sizeof(f->prices), "%s/prices.csv", f->dir);
    snprintf(f->avail, sizeof(f->avail), "%s/availability.csv", f->dir);
    snprintf(f->workload, sizeof(f->workload), "%s/job.yaml", f->dir);
    return 0;
}

void cbl_files_close(struct cbl_files *f)
{
    unlink(f->prices);
    unlink(f->avail);
    unlink(f->workload);
    rmdir(f->dir);
}

/* The pool's capacity at t, the pool repeated from its first row. */
static int32_t cycled(const struct ebb_avail_series *a, ebb_time_ms t)
{
    ebb_time_ms period = a->at[a->n - 1] - a->at[0];
    ebb_time_ms off = period > 0 ? (t - a->at[0]) % period : 0;
    int32_t v = 0;
    ebb_avail_series_at(a, a->at[0] + off, &v);
    return v;
}

/* Pool `a`'s rows as zone `zone` up to `end`. */
static void write_pool(FILE *v, const struct ebb_avail_series *a, const char *zone,
                       ebb_time_ms end)
{
    char ts[EBB_TIME_BUFSZ];
    /* Rows of cycle c at at[k] + c * period; the last row of a cycle is the
     * first of the next, so each cycle writes rows 0..n-2, and the pool's
     * own last row only where no cycle follows within the window. */
    ebb_time_ms period = a->at[a->n - 1] - a->at[0], last_at = 0;
    int last = 0;
    for (int c = 0; c < 64; c++) {
        ebb_time_ms base = (ebb_time_ms)c * period;
        int more = period > 0 && a->at[0] + base + period <= end;
        size_t n = more ? a->n - 1 : a->n;
        for (size_t k = 0; k < n && a->at[k] + base <= end; k++) {
            last_at = a->at[k] + base;
            last = (int)cycled(a, last_at);
            fprintf(v, "%s,aws,%s,p3.2xlarge,%d\n",
                    ebb_format_time(last_at, ts, sizeof(ts)), zone, last);
        }
        if (!more)
            break;
    }
    /* The value in effect at the deadline, written there: a backtest uses
     * availability as recorded, and the window must be covered to its end. */
    if (last_at < end)
        fprintf(v, "%s,aws,%s,p3.2xlarge,%d\n", ebb_format_time(end, ts, sizeof(ts)),
                zone, last);
}

int cbl_write_window(const struct cbl_files *f,
                     const struct ebb_avail_series *const *pools, size_t n,
                     ebb_time_ms submit, const struct cbl_setting *st)
{
    if (n == 0 || n > CBL_MAX_ZONES)
        return -1;
    char t0[EBB_TIME_BUFSZ], t1[EBB_TIME_BUFSZ], ts[EBB_TIME_BUFSZ];
    ebb_time_ms end = submit + (ebb_time_ms)st->deadline_h * HOUR;
    ebb_time_ms start = pools[0]->at[0];
    for (size_t i = 1; i < n; i++)
        if (pools[i]->at[0] < start)
            start = pools[i]->at[0];
    FILE *p = fopen(f->prices, "w");
    if (p == NULL)
        return -1;
    fprintf(p, "timestamp_utc,provider,region,zone,instance_type,product,"
               "price_usd_per_hour\n");
    ebb_format_time(start, t0, sizeof(t0));
    ebb_format_time(end + 2 * HOUR, t1, sizeof(t1));
    for (size_t i = 0; i < n; i++)
        fprintf(p, "%s,aws,us-east-1,%s,p3.2xlarge,Linux/UNIX,0.9701\n"
                   "%s,aws,us-east-1,%s,p3.2xlarge,Linux/UNIX,0.9701\n",
                t0, zones[i], t1, zones[i]);
    fclose(p);
    FILE *v = fopen(f->avail, "w");
    if (v == NULL)
        return -1;
    fprintf(v, "timestamp_utc,provider,zone,instance_type,available\n");
    for (size_t i = 0; i < n; i++)
        write_pool(v, pools[i], zones[i], end);
    fclose(v);
    FILE *w = fopen(f->workload, "w");
    if (w == NULL)
        return -1;
    fprintf(w, "defaults:\n  market: spot-fallback\n  resources:\n"
               "    providers: [aws]\n    regions: [us-east-1]\n"
               "    instance_types: [p3.2xlarge]\n"
               "jobs:\n  - name: cbl\n    submit: %s\n"
               "    run: [python, train.py]\n    work: 48h\n"
               "    deadline: %dh\n    restart_overhead: %dm\n",
            ebb_format_time(submit, ts, sizeof(ts)), st->deadline_h,
            st->overhead_min);
    fclose(w);
    return 0;
}

struct cbl_outcome cbl_run(const struct cbl_files *f, const char *policy,
                           const char *settings_yaml)
{
    struct cbl_outcome r = {0};
    struct ebb__backtest_options o = {
        .prices = f->prices,
        .availability = f->avail,
        .catalog = EBB_BENCH_SOURCE_ROOT "/data/catalog.csv",
        .workload = f->workload,
        .policy = policy,
        .policies = settings_yaml,
        .seed = 1,
    };
    json_t *res = NULL;
    struct ebb_diag d = {{0}};
    if (ebb__backtest_run(&o, &res, &d) != 0) {
        fprintf(stderr, "bench-policies --cbl: %s: %s\n", policy,
                d.msg[0] ? d.msg : "failed");
        return r;
    }
    json_t *job = json_array_get(json_object_get(res, "jobs"), 0);
    json_t *oc = json_object_get(job, "oracle_cost_usd");
    r.ok = job != NULL;
    r.cost = json_number_value(json_object_get(res, "total_cost_usd"));
    r.feasible = json_is_number(oc);
    r.oracle = json_number_value(oc);
    r.met = json_is_true(json_object_get(job, "deadline_met"));
    json_decref(res);
    return r;
}
