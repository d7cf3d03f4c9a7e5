/* One window of the Can't-Be-Late harness (bench/policies_cbl.c and its
 * multi-zone part, bench/policies_zones.c): the trace files of one job
 * written from availability pools, and one backtest of them. */
#ifndef EBB_BENCH_CBL_WINDOW_H
#define EBB_BENCH_CBL_WINDOW_H

#include <stddef.h>

#include <ebb/trace.h>

struct cbl_setting {
    const char *name;
    int deadline_h, overhead_min;
};

/* Where a window's files go: a scratch directory of the harness's own. */
struct cbl_files {
    char dir[64];
    char prices[128], avail[128], workload[128];
};

/* Makes the scratch directory. Returns 0, or -1 (errno set). */
int cbl_files_open(struct cbl_files *f);
/* Removes it and what the windows wrote there. */
void cbl_files_close(struct cbl_files *f);

/* The most pools one window replays: one zone each. */
#define CBL_MAX_ZONES 6

/* Writes the window of one job submitted at `submit` under *st: pools[i]
 * (n of them, 1..CBL_MAX_ZONES) is the spot capacity of p3.2xlarge in
 * zone i of us-east-1 (the first is us-east-1c), priced at a constant
 * 0.9701 USD/h from the earliest pool's first row to past the deadline,
 * each pool repeated back to back from its own first row where the window
 * outlasts it and its last value written at the deadline; the job (48 h
 * of work, spot-fallback) may use any of the zones. Returns 0 or -1. */
int cbl_write_window(const struct cbl_files *f,
                     const struct ebb_avail_series *const *pools, size_t n,
                     ebb_time_ms submit, const struct cbl_setting *st);

struct cbl_outcome {
    int ok, feasible, met;
    double cost, oracle;
};

/* One backtest of the window's files with `policy` (settings_yaml: the
 * backtest's policies settings, or NULL), seed 1, with the oracle. ok is
 * 0 when it failed (said on stderr). */
struct cbl_outcome cbl_run(const struct cbl_files *f, const char *policy,
                           const char *settings_yaml);

#endif
