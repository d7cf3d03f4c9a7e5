/* A running job's outlook: the quote of its rest (daemon_plan.c's quotes)
 * with what it has spent, for `ebb job show` (docs/plan.md "A running
 * job's outlook").
 *
 * `job` with outlook: true waits for a fresh one. Without it, an
 * unfinished job's answer carries the last one computed (its `at` says
 * when), and the call starts a new one in the background when that is
 * older than OUTLOOK_MAX_AGE of market time, so that looking at a job
 * keeps its outlook current without waiting for it. Background quotes are
 * ebbd's own: one at a time, on one CPU, within api.max_store_readers,
 * none in a user's busy count, and after each one none for
 * OUTLOOK_IDLE_SHARE times as long as it took, so that scripts polling
 * `ebb job show` (or a sim clock run fast, on which outlooks age in
 * seconds) keep them to a tenth of a CPU. Outlooks of jobs that ended are
 * dropped when the next background one starts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/list.h>
#include <ebb/units.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "engine/engine.h"
#include "jobs/jobspec.h"

/* The samples an outlook takes: half of a plan's, so that `ebb job show
 * --outlook` answers in a few seconds. */
#define OUTLOOK_SAMPLES 100
/* A kept outlook is refreshed once it is this old on the market's clock. */
#define OUTLOOK_MAX_AGE (10 * EBB_MS_PER_MINUTE)
/* After a background quote, none for this many times its duration. */
#define OUTLOOK_IDLE_SHARE 9

struct ebb__daemon_outlook {
    struct ebb_list node;   /* in d->outlooks.kept */
    char *job_id;
    ebb_time_ms at;         /* market time it was computed for */
    json_t *outlook;        /* what `job` answers; NULL while the first runs */
};

/* One quote of a job's rest, for a call or for the cache. */
struct outlook_req {
    struct ebb__api_call *call; /* NULL: a background refresh */
    json_t *job;                /* the answer being built (owned), or NULL */
    char *job_id;
    ebb_time_ms at;
    ebb_micros spent;           /* USD, billed and accrued */
    ebb_dur_ms work_left;
};

static void req_free(struct outlook_req *o)
{
    free(o->job_id);
    free(o);
}

static struct ebb__daemon_outlook *find(struct ebb__daemon *d, const char *id)
{
    struct ebb_list *n;
    ebb_list_foreach(n, &d->outlooks.kept) {
        struct ebb__daemon_outlook *c = ebb_list_entry(n, struct ebb__daemon_outlook, node);
        if (strcmp(c->job_id, id) == 0)
            return c;
    }
    return NULL;
}

/* Job `id`'s entry, made when it has none; NULL when out of memory. */
static struct ebb__daemon_outlook *entry(struct ebb__daemon *d, const char *id)
{
    struct ebb__daemon_outlook *c = find(d, id);
    if (c != NULL)
        return c;
    c = calloc(1, sizeof(*c));
    if (c != NULL && (c->job_id = strdup(id)) == NULL) {
        free(c);
        return NULL;
    }
    if (c != NULL)
        ebb_list_insert_head(&d->outlooks.kept, &c->node);
    return c;
}

static void cached_free(struct ebb__daemon_outlook *c)
{
    ebb_list_remove(&c->node);
    json_decref(c->outlook);
    free(c->job_id);
    free(c);
}

/* Drops the outlooks of jobs that ended (or left the engine). */
static void prune(struct ebb__daemon *d)
{
    struct ebb_list *n = d->outlooks.kept.next;
    while (n != &d->outlooks.kept) {
        struct ebb__daemon_outlook *c = ebb_list_entry(n, struct ebb__daemon_outlook, node);
        n = n->next;
        const struct ebb__job *job = ebb__engine_job(d->engine, c->job_id);
        if (job == NULL || ebb__job_state_terminal(ebb__engine_job_state(job)))
            cached_free(c);
    }
}

void ebb__daemon_outlooks_free(struct ebb__daemon *d)
{
    while (!ebb_list_empty(&d->outlooks.kept))
        cached_free(ebb_list_entry(d->outlooks.kept.next, struct ebb__daemon_outlook, node));
}

/* The outlook object from the rest's quote (NULL: `msg` says why none). */
static json_t *outlook_json(const struct outlook_req *o, json_t *quote, const char *msg)
{
    if (quote == NULL)
        return json_pack("{s:s}", "error", msg);
    double spent = (double)o->spent / EBB_MICROS_PER_UNIT;
    const json_t *c = json_object_get(quote, "cost_usd");
    const json_t *f = json_object_get(quote, "finish");
    return json_pack("{s:O,s:I,s:f,s:O,s:O,s:f,s:f,s:O,s:O}",
                     "at", json_object_get(quote, "at"),
                     "work_left_ms", (json_int_t)o->work_left,
                     "spent_usd", spent,
                     "eta", json_object_get(f, "p50"),
                     "finish", f,
                     "expected_cost_usd",
                     spent + json_number_value(json_object_get(quote, "cost_mean_usd")),
                     "p90_cost_usd", spent + json_number_value(json_object_get(c, "p90")),
                     "p_deadline", json_object_get(quote, "p_deadline"),
                     "samples", json_object_get(quote, "samples"));
}

/* Keeps `outlook` (a reference taken) as the job's latest, unless the
 * job has ended meanwhile, or ebbd is shutting down (its engine gone:
 * the quotes still out are cancelled then). */
static void keep(struct ebb__daemon *d, const struct outlook_req *o, json_t *outlook)
{
    if (d->engine == NULL) {
        json_decref(outlook);
        return;
    }
    const struct ebb__job *job = ebb__engine_job(d->engine, o->job_id);
    struct ebb__daemon_outlook *c = job != NULL &&
                                            !ebb__job_state_terminal(ebb__engine_job_state(job))
                                        ? entry(d, o->job_id)
                                        : NULL;
    if (c == NULL || (c->outlook != NULL && c->at > o->at)) {
        json_decref(outlook);
        return;
    }
    json_decref(c->outlook);
    c->outlook = outlook;
    c->at = o->at;
}

static void answered(struct ebb__daemon *d, struct ebb__api_call *call,
                     struct ebb__job_spec *spec, json_t *quote, const char *code,
                     const char *msg, void *arg)
{
    (void)spec;
    (void)code;
    struct outlook_req *o = arg;
    json_t *v = outlook_json(o, quote, msg);
    if (v != NULL)
        keep(d, o, json_incref(v));
    if (call != NULL) {
        json_object_set_new(o->job, "outlook", v);
        ebb__api_reply(call, o->job);
    } else {
        struct ebb__daemon_outlooks *all = &d->outlooks;
        uint64_t done = uv_now(&d->loop);
        all->refreshing = 0;
        all->next_at = done + OUTLOOK_IDLE_SHARE * (done - all->started_at);
        json_decref(v);
    }
    req_free(o);
}

/* The rest of the job as a job of its own: the work it has not saved, its
 * deadline as a time (dropped when the rest no longer fits before it:
 * the quote then says when it would finish), what is left of its budget;
 * no checkpoint store and no notifications (the backtest has neither).
 * The rest starts on a new instance: the instance it runs on now is not
 * kept, so it pays one restart overhead more than staying would. */
static int rest_of(const struct ebb__job *job, ebb_time_ms now, struct ebb__job_spec *out,
                   struct outlook_req *o, struct ebb_diag *d)
{
    struct ebb__job_info ji;
    ebb__engine_job_info(job, &ji);
    struct ebb__budget_usage u;
    if (ebb__engine_job_budget(job, now, &u) != 0) {
        ebb_diag_set(d, NULL, 0, "the job's spend cannot be read in USD");
        return EBB_ENOTFOUND;
    }
    json_t *j = ebb__jobspec_to_json(ji.spec);
    int rc = j != NULL ? ebb__jobspec_from_json(j, out, d) : EBB_ENOMEM;
    json_decref(j);
    if (rc != 0)
        return rc;
    o->spent = u.spent;
    o->work_left = ji.work_total - ji.work_saved;
    if (o->work_left < EBB_MS_PER_SECOND)
        o->work_left = EBB_MS_PER_SECOND;
    out->work = o->work_left;
    out->has_deadline = ji.deadline > now + o->work_left + out->restart_overhead;
    out->deadline_is_relative = 0;
    out->deadline_at = out->has_deadline ? ji.deadline : 0;
    if (u.has_cap) {
        out->has_budget = 1;
        out->budget.amount = u.cap - u.spent > 0 ? u.cap - u.spent : 1;
        snprintf(out->budget.currency, sizeof(out->budget.currency), "USD");
    }
    free(out->checkpoint.store);
    out->checkpoint.store = NULL;
    return 0;
}

/* Starts the quote of job `id`'s rest for `call` (NULL: the background),
 * answered into `o`. Returns 0 when started; -1 when the rest cannot be
 * made (*why says why); -2 when the quote did not start (it answered
 * `call` then). On failure `o` stays the caller's to free. */
static int start(struct ebb__daemon *d, struct ebb__api_call *call, const char *id,
                 const struct ebb__job *job, struct outlook_req *o, struct ebb_diag *why)
{
    struct ebb__job_spec rest = {0};
    o->call = call;
    o->at = ebb__clock_now(&d->clock);
    o->job_id = strdup(id);
    int rc = o->job_id != NULL ? rest_of(job, o->at, &rest, o, why) : EBB_ENOMEM;
    if (rc != 0) {
        if (why->msg[0] == '\0')
            ebb_diag_set(why, NULL, 0, "out of memory");
        ebb__jobspec_free(&rest);
        return -1;
    }
    /* On failure the quote answered `call` (busy, internal). */
    if (ebb__daemon_quote(d, call, &rest, OUTLOOK_SAMPLES, 1, answered, o) != 0) {
        ebb_diag_set(why, NULL, 0, "the quote did not start");
        return -2;
    }
    return 0;
}

void ebb__daemon_job_outlook(struct ebb__daemon *d, struct ebb__api_call *call,
                             json_t *answer, const char *id, const struct ebb__job *job)
{
    struct outlook_req *o = calloc(1, sizeof(*o));
    struct ebb_diag why = {{0}};
    int rc = o != NULL ? start(d, call, id, job, o, &why) : -1;
    if (rc == 0) {
        o->job = answer;
        return;
    }
    if (o != NULL)
        req_free(o);
    if (rc == -2) {
        json_decref(answer);
        return;
    }
    json_object_set_new(answer, "outlook", json_pack("{s:s}", "error",
                        why.msg[0] ? why.msg : "out of memory"));
    ebb__api_reply(call, answer);
}

/* Starts a background refresh of job `id`'s outlook when none runs. */
static void refresh(struct ebb__daemon *d, struct ebb__daemon_outlook *c,
                    const struct ebb__job *job)
{
    struct ebb__daemon_outlooks *all = &d->outlooks;
    if (all->refreshing || uv_now(&d->loop) < all->next_at)
        return;
    prune(d);
    struct outlook_req *o = calloc(1, sizeof(*o));
    struct ebb_diag why = {{0}};
    if (o == NULL || start(d, NULL, c->job_id, job, o, &why) != 0) {
        if (o != NULL)
            req_free(o);
        ebb__debug("job %s: outlook not refreshed: %s", c->job_id, why.msg);
        return;
    }
    all->refreshing = 1;
    all->started_at = uv_now(&d->loop);
}

void ebb__daemon_job_kept_outlook(struct ebb__daemon *d, json_t *answer, const char *id,
                                  const struct ebb__job *job)
{
    struct ebb__daemon_outlook *c = entry(d, id);
    json_object_set_new(answer, "outlook",
                        c != NULL && c->outlook != NULL ? json_incref(c->outlook)
                                                        : json_null());
    if (c == NULL)
        return;
    if (c->outlook == NULL || ebb__clock_now(&d->clock) - c->at >= OUTLOOK_MAX_AGE)
        refresh(d, c, job);
}
