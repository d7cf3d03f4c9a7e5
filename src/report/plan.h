/* `ebb plan`: a quote of what a job will cost and when it will finish,
 * with the odds, before anything is submitted.
 *
 * It runs the job through the backtest (report/backtest.h: the live engine
 * and the job's policy on the virtual clock, the sim market) once per
 * sampled future: spot prices from `now` on drawn from the forecaster's
 * distribution (market/forecast.h, one AR(1) path per series,
 * report/plan_sample.h) and spot outages drawn from the preemption hazard
 * and the outage lengths of the availability history. Nothing is stored
 * anywhere but a temporary directory, removed before it returns. Seeded:
 * the same inputs and seed give the same quote. It runs off any loop (in
 * the CLI process, or on a worker thread of ebbd).
 */
#ifndef EBB_REPORT_PLAN_H
#define EBB_REPORT_PLAN_H

#include <stdint.h>

#include <jansson.h>

#include <ebb/buf.h>
#include <ebb/diag.h>
#include <ebb/trace.h>

#include "jobs/jobspec.h"
#include "report/backtest.h"

/* The bounds of --samples, and its default. */
#define EBB__PLAN_SAMPLES_MIN 1
#define EBB__PLAN_SAMPLES_MAX 10000
#define EBB__PLAN_SAMPLES_DEFAULT 200

struct ebb__plan_options {
    /* The spot price history (borrowed); rows at or after `now` are never
     * read. Series the job's resources exclude by provider, region, zone
     * or instance type are left out of every sample. */
    const struct ebb_price_trace *prices;
    /* The availability history (borrowed, may be NULL: no outages). Its
     * rows before `now` give each (provider, zone, instance_type) its
     * hazard and mean outage; with `availability_replayed` (a trace from
     * another period, replayed over the prices) its whole record does. */
    const struct ebb_avail_trace *availability;
    int availability_replayed;
    const char *catalog;                /* path of data/catalog.csv */
    const struct ebb__job_spec *job;    /* borrowed; `submit:` ignored */
    const char *policy;                 /* NULL: the job's own, else the
                                           default policy */
    const char *policies;               /* NULL, or ebb.yaml's `policies`
                                           as a YAML flow mapping */
    ebb_time_ms now;                    /* when the job would be submitted */
    unsigned samples;                   /* EBB__PLAN_SAMPLES_MIN..MAX */
    uint64_t seed;
    unsigned threads;                   /* workers; 0: one per CPU, at
                                           most 8. The quote is the same
                                           whatever the number. */
    /* What ebbd learned of the job's family (borrowed, may be NULL):
     * every sample's engine starts with it. */
    const struct ebb__backtest_speed *speeds;
    size_t n_speeds;
};

/* Quotes the job. On success returns 0 and *result (caller decrefs):
 * {job, policy, at, deadline, budget_usd, samples, seed,
 *  cost_usd: {p10, p50, p90}, cost_mean_usd, finish: {p10, p50, p90}, p_deadline,
 *  p_budget, cheapest_deadline, budget_95, unfinished}
 * (docs/plan.md says what each means). Bad input (samples out of range,
 * an unknown policy, a job the market cannot run, no history before now)
 * returns EBB_EINVAL or EBB_ECONFIG with d saying what; EBB_EIO when the
 * temporary files cannot be written; EBB_ENOMEM. */
int ebb__plan_run(const struct ebb__plan_options *o, json_t **result,
                  struct ebb_diag *d);

/* The traces a quote reads and writes, as text (data/README.md's
 * formats): the two headers and one row of each, appended to `b`. Times
 * keep their milliseconds; prices are exact. */
#define EBB__PLAN_PRICES_HEADER \
    "timestamp_utc,provider,region,zone,instance_type,product,price_usd_per_hour\n"
#define EBB__PLAN_AVAIL_HEADER "timestamp_utc,provider,zone,instance_type,available\n"
void ebb__plan_price_row(struct ebb_buf *b, ebb_time_ms at, const char *provider,
                         const char *region, const char *zone,
                         const char *instance_type, const char *product,
                         ebb_micros price);
void ebb__plan_avail_row(struct ebb_buf *b, ebb_time_ms at, const char *provider,
                         const char *zone, const char *instance_type,
                         int32_t available);

/* Where a quote's traces go: a new directory $TMPDIR/NAME-XXXXXX (/tmp
 * without TMPDIR), mode 0700, its path in dir[0..size). Returns 0, or
 * EBB_EIO with d saying why. The caller removes it. */
int ebb__plan_tmpdir(const char *name, char *dir, size_t size, struct ebb_diag *d);

/* Writes `a` then `b` (may be NULL) to a new file at `path`. Returns 0, or
 * EBB_EIO with d saying why. */
int ebb__plan_write_text(const char *path, const char *a, const char *b,
                         struct ebb_diag *d);

#endif
