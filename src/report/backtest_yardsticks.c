/* What a backtest judges a job's cost against (backtest_yardsticks.h). */
#include "report/backtest_yardsticks.h"

#include <stdlib.h>

#include <ebb/units.h>

#include "jobs/jobspec.h"
#include "market/billing.h"
#include "market/market.h"
#include "report/oracle.h"

/* The oracle's grid: whole minutes, at most ORACLE_MAX_STEPS of them over
 * a job's window (1 minute up to 6 hours, 5 minutes for 30 hours). The
 * exact solver's cost grows steeply with the number of grid points: on the
 * bench's 1,000 jobs, 720 points cost 15.6 s and 360 cost 6.8 s, for a
 * total oracle 0.14% higher. */
#define ORACLE_MAX_STEPS 360

static ebb_dur_ms oracle_step(ebb_dur_ms window)
{
    ebb_dur_ms minutes = (window / ORACLE_MAX_STEPS + EBB_MS_PER_MINUTE - 1) /
                         EBB_MS_PER_MINUTE;
    return (minutes > 1 ? minutes : 1) * EBB_MS_PER_MINUTE;
}

ebb_micros ebb__backtest_on_demand_cost(struct ebb__engine *e, const struct ebb__job *job)
{
    /* What the same work costs started at once on the cheapest on-demand
     * offer the job's resources allow, whatever its market setting, for
     * each of a gang's nodes. */
    struct ebb__job_info ji;
    ebb__engine_job_info(job, &ji);
    ebb_micros best = -1;
    const struct ebb__market *m = ebb__engine_market(e);
    for (size_t k = 0; k < m->n_offers; k++) {
        if (!ebb__engine_offer_allowed(e, job, k, EBB_JOB_ON_DEMAND))
            continue;
        const struct ebb__offer *o = &m->offers[k];
        /* A job submitted before the trace starts has no market at its
         * submission; an on-demand offer's price is the catalog's list
         * price, the same before the trace as at its first step. */
        const struct ebb__market_step *s = ebb__offer_at(o, ji.submitted_at);
        if (s == NULL && o->n_steps > 0 && ji.submitted_at < o->steps[0].at)
            s = &o->steps[0];
        if (s == NULL || o->speed <= 0)
            continue;
        ebb_dur_ms wall = ji.spec->restart_overhead +
                          (ebb_dur_ms)((double)ji.work_total / o->speed);
        ebb_micros c = ebb__job_nodes(job) * ebb__cost_of(s->price, wall);
        if (best < 0 || c < best)
            best = c;
    }
    return best;
}

/* Arrays the oracle reads, built from the market's history of one offer:
 * for a gang of N nodes, N times its price, and up only while its spot
 * capacity (unlimited when unknown) holds all N. */
struct oracle_arrays {
    ebb_time_ms *price_at, *avail_at;
    ebb_micros *price;
    int32_t *avail;
};

int ebb__backtest_oracle_cost(struct ebb__engine *e, const struct ebb__job *job,
                              ebb_time_ms end, ebb_micros *cost)
{
    struct ebb__job_info ji;
    ebb__engine_job_info(job, &ji);
    int nodes = ebb__job_nodes(job);
    const struct ebb__market *m = ebb__engine_market(e);
    struct ebb__oracle_offer *offers = calloc(m->n_offers + 1, sizeof(*offers));
    struct oracle_arrays *arr = calloc(m->n_offers + 1, sizeof(*arr));
    size_t n = 0;
    int rc = offers && arr ? 0 : EBB_ENOMEM;
    for (size_t k = 0; k < m->n_offers && rc == 0; k++) {
        const struct ebb__offer *o = &m->offers[k];
        if (o->n_steps == 0 ||
            !ebb__engine_offer_allowed(e, job, k, ji.spec->market))
            continue;
        struct oracle_arrays *a = &arr[n];
        a->price_at = malloc(o->n_steps * sizeof(*a->price_at));
        a->price = malloc(o->n_steps * sizeof(*a->price));
        int spot = o->market == EBB_MARKET_SPOT;
        if (spot) {
            a->avail_at = malloc(o->n_steps * sizeof(*a->avail_at));
            a->avail = malloc(o->n_steps * sizeof(*a->avail));
        }
        if (!a->price_at || !a->price || (spot && (!a->avail_at || !a->avail))) {
            rc = EBB_ENOMEM;
            n++;
            break;
        }
        for (size_t i = 0; i < o->n_steps; i++) {
            a->price_at[i] = o->steps[i].at;
            a->price[i] = nodes * o->steps[i].price;
            if (spot) {
                int32_t capacity = o->steps[i].capacity;
                a->avail_at[i] = o->steps[i].at;
                a->avail[i] = capacity < 0 || capacity >= nodes;
            }
        }
        offers[n] = (struct ebb__oracle_offer){
            .speed = o->speed,
            .price_at = a->price_at,
            .price = a->price,
            .n_price = o->n_steps,
            .avail_at = spot ? a->avail_at : NULL,
            .avail = spot ? a->avail : NULL,
            .n_avail = spot ? o->n_steps : 0,
        };
        n++;
    }
    if (rc == 0) {
        ebb_time_ms deadline = ji.deadline > 0 ? ji.deadline : end;
        struct ebb__oracle_job oj = {
            .release = ji.submitted_at,
            .deadline = deadline,
            .work = ji.work_total,
            .overhead = ji.spec->restart_overhead,
            .step = oracle_step(deadline - ji.submitted_at),
        };
        rc = ebb__oracle_solve(&oj, offers, n, cost, NULL, 0, NULL);
    }
    for (size_t i = 0; arr != NULL && i < n; i++) {
        free(arr[i].price_at);
        free(arr[i].price);
        free(arr[i].avail_at);
        free(arr[i].avail);
    }
    free(arr);
    free(offers);
    return rc;
}

