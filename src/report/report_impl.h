/* Shared by report.c, report_refs.c, report_chart.c and report_advice.c
 * only: the state of a report being built. */
#ifndef EBB_REPORT_IMPL_H
#define EBB_REPORT_IMPL_H

#include "report/report.h"
#include "store/store.h"

/* Products of money and time or of two rates overflow int64. */
__extension__ typedef __int128 ebb__i128;

/* What a ledger row or a job event is grouped by. Strings borrowed. */
struct fact {
    const char *job_id, *team, *provider, *region, *zone, *instance_type;
    const char *market; /* "spot", "on-demand" or "" (no instance) */
    ebb_time_ms at;
};

/* A compute or overhead ledger row to price against its references. */
struct ref_row {
    const struct fact *f;
    ebb_time_ms start, end;
    ebb_micros amount;          /* converted */
    ebb_time_ms submitted_at;   /* the job's */
    ebb_dur_ms prior_compute;   /* the job's productive (not lost) compute
                                 * time before this row */
    ebb_dur_ms lost;            /* of [start, end), the time lost, at its end */
};

/* A price series an instance ran on, with its history up to the report's
 * end, loaded on first use. */
struct series_cache {
    char *provider, *region, *zone, *instance_type;
    enum ebb_market market;
    char currency[4];
    struct ebb__report_point *p;
    size_t n;
    int loaded;
    ebb_micros spend;
};

struct report_build {
    struct ebb__store *store; /* read only */
    const struct ebb__report_opts *o;
    struct ebb__report *r;
    struct ebb_diag *d;
    size_t cap_groups;
    struct series_cache *series;
    size_t n_series, cap_series;
    size_t cap_cumulative;
    char **preempted; /* instance tokens, for the chart */
    size_t n_preempted;
    int stop;         /* why a row callback stopped the store's walk */
};

/* What a row callback returns to the store's walk: `rc`, also kept in
 * b->stop so that ebb__report_walked() can tell the report's own failures
 * from the store's. */
int ebb__report_stop(struct report_build *b, int rc);

/* The result of a store walk whose callbacks used ebb__report_stop(): 0,
 * the callback's failure, or for a failure of the store EBB_EDB (EBB_ENOMEM
 * when out of memory) with "<what>: <the store's words>" in b->d. */
int ebb__report_walked(struct report_build *b, int rc, const char *what);

/* Converts into the report currency; EBB_EINVAL with a message in b->d. */
int ebb__report_to_currency(struct report_build *b, ebb_micros amount,
                            const char *from, ebb_micros *out);

/* report_refs.c: fills add->on_demand(_basis) and, for a productive spot
 * row (`compute`), add->spot_at_once(_basis). */
int ebb__report_price_refs(struct report_build *b, const struct ref_row *row,
                           int compute, struct ebb__report_figures *add);

/* The cached series of (provider, region, zone, type, market), added when
 * new; NULL when out of memory. */
struct series_cache *ebb__report_series(struct report_build *b,
                                        const struct fact *f);

/* Loads a series' price history (market prices, or the catalog's list
 * price for an on-demand series without any). Returns 0 or EBB_EDB. */
int ebb__report_series_load(struct report_build *b, struct series_cache *s);

/* report_chart.c: what the chart draws. */
int ebb__report_cumulate(struct report_build *b, ebb_time_ms at,
                         ebb_micros spend, ebb_micros on_demand);
int ebb__report_mark_preempted(struct report_build *b, const char *token);
int ebb__report_chart(struct report_build *b);

/* Frees what the build held besides the report. */
void ebb__report_build_free(struct report_build *b);

#endif
