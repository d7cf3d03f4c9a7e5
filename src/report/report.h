/* Savings reports: what was spent in a time window, against what the same
 * work (the instance time not lost to preemptions and restarts) would have
 * cost on-demand and started at once on spot, with preemptions, time lost,
 * time checkpointing, and fees.
 *
 * Everything is read from the store (ledger, instances, jobs, job_events,
 * prices) as typed rows (store_ledger.h, ebb__store_price_steps()) through
 * a handle the report only reads; the on-demand reference comes from the
 * instance catalog, as it does for the engine. Building a report may take
 * a while on a large ledger: ebbd runs it off the loop (daemon_api.c's
 * store-read worker, daemon_metrics.c's money snapshot); `ebb report` only
 * formats what ebbd answers. docs/report.md defines every figure.
 *
 * Money is int64 micro-units. Each ledger row is converted to the report
 * currency on its own (configured rates, USD base), so the groups add up
 * exactly to the total, and the total of each native currency is kept
 * unconverted (`natives`) to reconcile with the ledger's own sums.
 *
 * Files: report.c (walk the ledger and aggregate), report_refs.c (the
 * on-demand and spot-at-once references, price series, currency
 * conversion), report_chart.c (the chart's data), report_format.c (JSON,
 * table cells, CSV), report_svg.c (the chart), report_advice.c (plans and
 * advice).
 */
#ifndef EBB_REPORT_H
#define EBB_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>
#include <ebb/diag.h>
#include <ebb/types.h>

#include "config/config_file.h"
#include "config/plans.h"
#include "market/catalog.h"
#include "store/store.h"

enum ebb__report_by {
    EBB__REPORT_BY_NONE,
    EBB__REPORT_BY_JOB,
    EBB__REPORT_BY_TEAM,
    EBB__REPORT_BY_PROVIDER,
    EBB__REPORT_BY_INSTANCE_TYPE,
    EBB__REPORT_BY_DAY,
};

/* "job", "team", "provider", "instance-type", "day" (and "" or "none").
 * Returns 0 or EBB_EINVAL. */
int ebb__report_by_parse(const char *s, enum ebb__report_by *out);
const char *ebb__report_by_name(enum ebb__report_by by);

/* A report boundary as users write it: a duration back from `now` ("30d",
 * "12h") when `ago` is set, or a date ("2026-11-01", midnight UTC) or an
 * ISO-8601 time. Returns 0, or EBB_EINVAL with *why set to a static
 * sentence saying what is accepted. */
int ebb__report_parse_when(const char *s, ebb_time_ms now, int ago,
                           ebb_time_ms *out, const char **why);

struct ebb__report_opts {
    ebb_time_ms since, until;          /* ledger rows starting in [since, until) */
    enum ebb__report_by by;
    const char *currency;              /* report currency; NULL: "USD" */
    const struct ebb__currency_rate *rates; /* USD per unit; may be NULL */
    size_t n_rates;
    const struct ebb__catalog *catalog; /* on-demand prices; may be NULL */
    const struct ebb__plan *plans;      /* may be NULL */
    size_t n_plans;
    int chart;                          /* gather what report_svg.c draws */
};

/* One group's figures, in micro-units of the report currency. */
struct ebb__report_figures {
    int64_t rows;                 /* ledger rows */
    ebb_micros spend;             /* compute + overhead + fees */
    ebb_micros compute, overhead, fees;
    ebb_micros fee_storage, fee_egress; /* parts of fees, by the row's note */
    /* The useful instance time (not lost) of the rows whose on-demand
     * price is known, priced on-demand, and what those rows actually
     * cost. */
    ebb_micros on_demand, on_demand_basis;
    /* The jobs' productive spot time laid back to back from submission on
     * the spot series each ran on, and what those rows actually cost. */
    ebb_micros spot_at_once, spot_at_once_basis;
    ebb_dur_ms instance_ms;       /* billed instance time */
    ebb_dur_ms restart_ms;        /* of which restart overhead */
    /* Of instance_ms, the time lost: restart overhead after each job's
     * first instance and compute redone from an earlier checkpoint
     * (store_ledger.h, lost_ms). The on-demand reference leaves it out:
     * the same work on on-demand is the time that was not lost. */
    ebb_dur_ms lost_ms;
    ebb_dur_ms checkpoint_ms;     /* time jobs spent checkpointing */
    int64_t preemptions;
};

struct ebb__report_group {
    char *key;
    struct ebb__report_figures f;
};

/* The ledger rows of one currency, unconverted. */
struct ebb__report_native {
    char currency[4];
    ebb_micros amount;
    int64_t rows;
};

/* The chart's data (opts.chart). Prices are per hour, converted. */
struct ebb__report_point {
    ebb_time_ms at;
    ebb_micros value;
};

struct ebb__report_series {
    char *provider, *region, *zone, *instance_type;
    enum ebb_market market;
    ebb_micros spend;                 /* on this series in the window */
    struct ebb__report_point *points; /* price steps, time order */
    size_t n_points;
};

struct ebb__report_run {
    char *job_id;
    size_t series;   /* index into series; SIZE_MAX when not drawn */
    ebb_time_ms start, end;
    int preempted;
};

struct ebb__report_cumulative {
    ebb_time_ms at;
    ebb_micros spend, on_demand; /* on_demand: the reference, or the spend
                                  * itself for rows without one */
};

struct ebb__report_advice {
    char *team;
    char *plan;
    int periods;          /* whole plan periods in the window */
    ebb_dur_ms period;
    ebb_dur_ms used_ms;   /* matching instance time in those periods */
    ebb_micros spend;     /* what that usage cost */
    ebb_micros with_plan; /* what it would have cost on the plan */
};

struct ebb__report {
    ebb_time_ms since, until;
    enum ebb__report_by by;
    char currency[4];
    struct ebb__report_figures total;
    struct ebb__report_group *groups; /* sorted by key */
    size_t n_groups;
    struct ebb__report_native *natives; /* sorted by currency */
    size_t n_natives;
    struct ebb__report_series *series;  /* the most spent on first */
    size_t n_series;
    struct ebb__report_run *runs;       /* by start */
    size_t n_runs;
    size_t runs_left_out;               /* past the chart's limit */
    struct ebb__report_cumulative *cumulative; /* by time */
    size_t n_cumulative;
    struct ebb__report_advice *advice;
    size_t n_advice;
};

/* Builds the report of `o` from `store`, which it only reads: a handle of
 * the caller's own, off ebbd's loop (a report may take a while). On success
 * *out is a new report for ebb__report_free(). Returns 0, EBB_EINVAL for
 * bad options or a currency without a configured rate (d says which and
 * what to add to ebb.yaml), EBB_EDB, EBB_ENOMEM. */
int ebb__report_build(struct ebb__store *store,
                      const struct ebb__report_opts *o,
                      struct ebb__report **out, struct ebb_diag *d);
void ebb__report_free(struct ebb__report *r);

/* Savings against a reference: reference - basis. The percentage is of the
 * reference; it is NAN when the reference is 0. */
ebb_micros ebb__report_saved(ebb_micros reference, ebb_micros basis);
double ebb__report_saved_pct(ebb_micros reference, ebb_micros basis);

/* ---- report_refs.c ----------------------------------------------------- */

/* `amount` rounded to hundredths of a unit (half away from zero), for
 * display: tables and the chart show cents, JSON and CSV keep micro-units. */
ebb_micros ebb__report_round_cents(ebb_micros amount);

/* What [start, end) costs on price steps `p` (n > 0, time order; before
 * the first step the first price applies), per second as billing does. */
ebb_micros ebb__report_cost_on(const struct ebb__report_point *p, size_t n,
                               ebb_time_ms start, ebb_time_ms end);

/* ---- report_advice.c ---------------------------------------------------- */

/* Appends to r->advice every (team, plan) whose plan would have cost less
 * than the team's matching usage in each whole plan period of the window.
 * Returns 0, EBB_EINVAL (no rate for a plan's currency; d says which),
 * EBB_EDB or EBB_ENOMEM. */
int ebb__report_advise(struct ebb__store *store,
                       const struct ebb__report_opts *o, struct ebb__report *r,
                       struct ebb_diag *d);

#endif
