/* Checkpoint stores in money and time (docs/stores.md, "Fees and
 * timing"): the storage and egress fees a job's store charges, as ledger
 * rows; the restart overhead a download adds; the periodic checkpoint
 * interval its agent is told (chosen in engine_interval.c); and what
 * moving a job's checkpoint to another offer costs.
 *
 * Storage is billed per checkpoint, once, when it leaves the store: a row
 * [durable, deleted) of kind fee, note "storage", for bytes x time. A
 * checkpoint leaves when a newer one makes it the (keep + 1)th (ebbd
 * deletes it then) or when the job ends (ebbd deletes them all). Both
 * rows are written in the transaction that records what deletes it (the
 * newer checkpoint's row, the job's terminal state), so a crash either
 * keeps both or neither: the fee is never written twice nor lost. After a
 * restart the checkpoints still held are read back from the store's
 * checkpoint rows (their bytes), and the time ebbd was down is billed too,
 * as the store kept them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/log.h"
#include "engine/internal.h"
#include "market/store_prices.h"
#include "store/store_rates.h"

static int keep_of(const struct ebb__job *job)
{
    return job->spec.checkpoint.keep > 0 ? job->spec.checkpoint.keep
                                         : EBB__CKPT_KEEP_DEFAULT;
}

/* The job's transfer facts, made on first need; NULL without memory. */
static struct ebb__job_transfer *xfer(struct ebb__job *job)
{
    if (job->xfer == NULL) {
        job->xfer = calloc(1, sizeof(*job->xfer));
        if (job->xfer != NULL)
            job->xfer->held = calloc((size_t)keep_of(job) + 1,
                                     sizeof(*job->xfer->held));
        if (job->xfer != NULL && job->xfer->held == NULL) {
            free(job->xfer);
            job->xfer = NULL;
        }
    }
    return job->xfer;
}

/* A fee row of the job (no instance for storage) and its spend. */
static int fee_row(struct ebb__job *job, const struct ebb__store_cfg *s,
                   const char *token, const char *note, ebb_time_ms start,
                   ebb_time_ms end, ebb_micros rate, ebb_micros amount,
                   const char *currency)
{
    const char *cloud = ebb__store_cloud(s);
    struct ebb__ledger_row row = {
        .job_id = job->id,
        .instance_token = token,
        .team = job->spec.team,
        .provider = cloud != NULL ? cloud
                    : s->kind == EBB__OBJSTORE_FILE ? "file" : "s3",
        .kind = "fee",
        .currency = currency,
        .note = note,
        .start_at = start,
        .end_at = end,
        .rate = rate,
        .amount = amount,
    };
    int rc = ebb__store_ledger_add(job->engine->opt.store, &row);
    if (rc == 0)
        ebb__engine_add_spend(job, amount, currency);
    return rc;
}

/* Bills held checkpoint `i` up to `end` and drops it. */
static int bill_held(struct ebb__job *job, const struct ebb__store_cfg *s,
                     size_t i, ebb_time_ms end)
{
    struct ebb__job_transfer *x = job->xfer;
    struct ebb__held_ckpt h = x->held[i];
    memmove(&x->held[i], &x->held[i + 1], (x->n_held - i - 1) * sizeof(*x->held));
    x->n_held--;
    if (s == NULL || end <= h.at)
        return 0;
    struct ebb__store_rates r;
    ebb__store_rates(job->engine->opt.store_fees, s, &r);
    ebb_micros amount = ebb__store_storage_cost(&r, h.bytes, end - h.at);
    return fee_row(job, s, NULL, "storage", h.at, end, r.storage, amount,
                   r.storage_currency);
}

/* Keeps the job's measured rates and latest write in the store, so that a
 * restart plans with them (ebb__engine_transfer_recover). */
static void keep_rates(struct ebb__job *job, ebb_time_ms at)
{
    const struct ebb__job_transfer *x = job->xfer;
    const struct ebb__transfer_rates r = {
        .up_bytes_per_s = llround(x->up_rate * 1000),
        .down_bytes_per_s = llround(x->down_rate * 1000),
        .last_write = x->last_duration,
    };
    if (ebb__store_rates_put(job->engine->opt.store, job->id, &r, at) != 0)
        ebb__error("job %s: cannot record its checkpoint transfer rates: %s", job->id,
                   ebb__store_errmsg(job->engine->opt.store));
}

int ebb__engine_transfer_checkpoint(struct ebb__job *job, ebb_time_ms at,
                                    const struct ebb__agent_report *r)
{
    if (job->spec.checkpoint.store == NULL)
        return 0; /* bytes without a store: nothing is kept, nothing billed */
    struct ebb__job_transfer *x = xfer(job);
    if (x == NULL)
        return EBB_ENOMEM;
    x->last_bytes = r->bytes;
    x->last_duration = r->duration > 0 ? r->duration : 0;
    if (r->upload_ms > 0)
        x->up_rate = (double)r->bytes / (double)r->upload_ms;
    keep_rates(job, at);
    x->held[x->n_held++] = (struct ebb__held_ckpt){at, r->bytes};
    const struct ebb__store_cfg *s = ebb__engine_job_store(job);
    int rc = 0;
    while (rc == 0 && x->n_held > (size_t)keep_of(job))
        rc = bill_held(job, s, 0, at);
    return rc;
}

void ebb__engine_durable_checkpoint(struct ebb__job *job,
                                    const struct ebb__agent_report *r)
{
    if (r->bytes <= 0 || job->spec.checkpoint.store == NULL ||
        ebb__job_state_terminal(job->state))
        return;
    struct ebb__store *s = job->engine->opt.store;
    ebb_time_ms now = ebb__clock_now(job->engine->opt.clock);
    /* No instance and no progress: only the holding, for its fee. */
    int rc = ebb__store_begin(s);
    if (rc == 0)
        rc = ebb__store_checkpoint_add(s, job->id, NULL, now, r->path,
                                       job->work_saved, 0, r->bytes);
    if (rc == 0)
        rc = ebb__engine_transfer_checkpoint(job, now, r);
    if (rc == 0)
        rc = ebb__store_commit(s);
    if (rc != 0) {
        ebb__store_rollback(s);
        ebb__error("job %s: cannot record a stored checkpoint: %s", job->id,
                   ebb__store_errmsg(s));
        if (ebb__engine_transfer_recover(job) != 0)
            ebb__error("job %s: cannot read back its stored checkpoints", job->id);
    }
}

int ebb__engine_transfer_job_end(struct ebb__job *job, ebb_time_ms now)
{
    if (job->xfer == NULL)
        return 0;
    const struct ebb__store_cfg *s = ebb__engine_job_store(job);
    int rc = 0;
    while (rc == 0 && job->xfer->n_held > 0)
        rc = bill_held(job, s, 0, now);
    return rc;
}

static int recover_one(void *arg, ebb_time_ms at, int64_t bytes)
{
    struct ebb__job *job = arg;
    struct ebb__job_transfer *x = job->xfer;
    /* Newest first: the first is the latest; each one goes in front. */
    if (x->n_held == 0)
        x->last_bytes = bytes;
    memmove(&x->held[1], &x->held[0], x->n_held * sizeof(*x->held));
    x->held[0] = (struct ebb__held_ckpt){at, bytes};
    x->n_held++;
    return 0;
}

int ebb__engine_transfer_recover(struct ebb__job *job)
{
    if (job->spec.checkpoint.store == NULL)
        return 0;
    if (xfer(job) == NULL)
        return EBB_ENOMEM;
    struct ebb__job_transfer *x = job->xfer;
    x->n_held = 0;
    struct ebb__transfer_rates r;
    int rc = ebb__store_rates_get(job->engine->opt.store, job->id, &r);
    if (rc != 0 && rc != EBB_ENOTFOUND)
        return rc;
    x->up_rate = (double)r.up_bytes_per_s / 1000;
    x->down_rate = (double)r.down_bytes_per_s / 1000;
    x->last_duration = r.last_write;
    return ebb__store_checkpoints_stored(job->engine->opt.store, job->id,
                                         (size_t)keep_of(job), recover_one, job);
}

void ebb__engine_transfer_download(struct ebb__job *job,
                                   const struct ebb__agent_report *r)
{
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    if (job->spec.checkpoint.store == NULL || r->download_bytes <= 0 ||
        a->download_billed)
        return;
    struct ebb__job_transfer *x = xfer(job);
    if (x == NULL)
        return;
    a->download_billed = 1; /* once per instance, whatever the agent says */
    if (r->download_ms > 0) {
        x->down_rate = (double)r->download_bytes / (double)r->download_ms;
        keep_rates(job, ebb__clock_now(e->opt.clock));
    }
    const struct ebb__store_cfg *s = ebb__engine_job_store(job);
    if (s == NULL)
        return;
    const struct ebb__offer *o = &e->market.offers[a->offer];
    struct ebb__store_rates rates;
    ebb__store_rates(e->opt.store_fees, s, &rates);
    ebb_micros amount = ebb__store_egress_cost(s, &rates, o->provider, o->region,
                                               r->download_bytes);
    if (amount <= 0)
        return; /* same region, or a file:// store: nothing to bill */
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    ebb_micros rate = strcmp(ebb__store_cloud(s) ? ebb__store_cloud(s) : "",
                             o->provider) == 0 ? rates.egress_region
                                               : rates.egress_cloud;
    if (fee_row(job, s, a->token, "egress", now, now, rate, amount,
                rates.egress_currency) != 0)
        ebb__error("job %s: cannot record the egress fee of %lld bytes: %s",
                   job->id, (long long)r->download_bytes,
                   ebb__store_errmsg(e->opt.store));
}

/* ---- timing ---------------------------------------------------------------- */

ebb_dur_ms ebb__engine_restart_overhead(const struct ebb__job *job)
{
    const struct ebb__job_transfer *x = job->xfer;
    ebb_dur_ms base = job->spec.restart_overhead > 0 ? job->spec.restart_overhead : 0;
    if (x == NULL || job->spec.checkpoint.store == NULL)
        return base;
    return base + ebb__engine_transfer_ms(job->engine, x->last_bytes, x->down_rate);
}

ebb_dur_ms ebb__engine_job_checkpoint_every(const struct ebb__job *job)
{
    if (job->current == NULL)
        return job->spec.checkpoint.every;
    return ebb__engine_every_on(job, job->current->offer);
}

ebb_micros ebb__engine_transfer_cost(const struct ebb__job *job, size_t offer)
{
    const struct ebb__job_transfer *x = job->xfer;
    const struct ebb__engine *e = job->engine;
    if (x == NULL || x->last_bytes <= 0 || offer >= e->market.n_offers ||
        (job->current != NULL && job->current->offer == offer))
        return 0;
    const struct ebb__store_cfg *s = ebb__engine_job_store(job);
    if (s == NULL)
        return 0;
    const struct ebb__offer *o = &e->market.offers[offer];
    struct ebb__store_rates r;
    ebb__store_rates(e->opt.store_fees, s, &r);
    ebb_micros cost = ebb__store_egress_cost(s, &r, o->provider, o->region,
                                             x->last_bytes);
    ebb_micros out = 0;
    if (cost > 0 && ebb__engine_convert(e, cost, r.egress_currency, job->currency,
                                        EBB__ROUND_UP, &out) != 0)
        return 0; /* no rate: unpriced, as the market's own foreign offers */
    return out;
}
