/* `ebb backtest`: the engine on the virtual clock against the sim market.
 *
 * It builds exactly what ebbd runs (registry with the sim provider and the
 * policies, store, engine), replays a workload's submissions at their times
 * and lets the virtual clock run until every job has ended or its deadline
 * is long past. Then it reads the results and, for each job, what the same
 * work would have cost on demand and the hindsight optimum (the oracle).
 * It runs in the CLI process, never on ebbd's loop.
 */
#ifndef EBB_BACKTEST_H
#define EBB_BACKTEST_H

#include <stdio.h>

#include <jansson.h>

#include <ebb/diag.h>

#include "jobs/jobspec.h"
#include "store/store_speeds.h"

/* A learned speed a backtest's engine starts with (docs/policies.md
 * "Learned speed"): what ebbd learned for a job family on one host, as
 * its store keeps it. */
struct ebb__backtest_speed {
    struct ebb__speed_key key; /* strings borrowed */
    long long samples;         /* rates counted in all */
    const char *rates;         /* the latest (ebb__speed_format's text) */
};

struct ebb__backtest_options {
    const char *prices;        /* required */
    const char *availability;  /* may be NULL */
    int align_availability;    /* replay it over the prices' period when
                                  the two do not overlap (the sim's
                                  align_availability); else as recorded */
    const char *catalog;       /* required */
    const char *workload;      /* required unless `job` is given */
    /* Instead of a workload file: this one job (borrowed; copied), submitted
     * at `job_submit` (`ebb plan` runs it so against each sampled future). */
    const struct ebb__job_spec *job;
    ebb_time_ms job_submit;
    const char *policy;        /* NULL: each job's own, else the default */
    const char *policy_what;   /* what names `policy` in messages; NULL:
                                  "--policy" */
    const char *policies;      /* NULL, or a YAML flow mapping for
                                  ebb.yaml's `policies` key: the policies'
                                  settings ("{renewal: {prior_up: 8h}}") */
    long long seed;            /* for the sim's random preemptions */
    double preemption_hazard;  /* sim: preemptions per spot instance-hour */
    const char *billing;       /* sim: "per-second" (NULL) or "aws-hourly" */
    int no_oracle;             /* 1: skip the hindsight optimum (its fields
                                  are null); it is the slow part of a
                                  one-job run */
    ebb_dur_ms outlook_refresh; /* the engine's (engine.h); 0: its default */
    /* Learned speeds the engine starts with (borrowed; the engine plans
     * and the sim runs each job that fast on those hosts); may be NULL. */
    const struct ebb__backtest_speed *speeds;
    size_t n_speeds;
    FILE *progress;            /* NULL: quiet */
    FILE *notes;               /* what was done to the input; NULL: quiet */
};

/* Runs a backtest. On success returns 0 and *result, the JSON document
 * `ebb backtest --json` prints (caller decrefs); with align_availability
 * and traces that do not overlap, it carries "availability_alignment"
 * (start, orig_first, period_ms, end) and the same is said on `notes`
 * when not NULL. Bad input returns EBB_EINVAL / EBB_ECONFIG with d naming
 * the file and line, and a job window a trace does not cover is such bad
 * input: prices are known from a series' first row on (each holds until
 * the next, the last to the end of the run), availability from a series'
 * first row to the trace's last. */
int ebb__backtest_run(const struct ebb__backtest_options *o, json_t **result,
                      struct ebb_diag *d);

#endif
