/* The engine's life, jobs' submission and states, price polling and the
 * planning pass. Decisions are in engine_plan.c, their execution and the
 * instance events in engine_exec.c. */
#include "engine/engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/log.h"
#include "base/str.h"

struct ebb__engine_poll {
    struct ebb__engine *engine;
    struct ebb__plugin_slot *slot;
    int in_flight;
    int again; /* a change was announced while a poll was in flight */
    struct ebb__provider_health health;
};

static const char *const state_names[] = {
#define EBB__JOB_STATE_NAME(name, text) text,
    EBB__JOB_STATES(EBB__JOB_STATE_NAME)
#undef EBB__JOB_STATE_NAME
};

const char *ebb__job_state_name(enum ebb__job_state s)
{
    return (size_t)s < sizeof(state_names) / sizeof(state_names[0])
               ? state_names[s]
               : "?";
}

int ebb__job_state_terminal(enum ebb__job_state s)
{
    return s == EBB__JOB_SUCCEEDED || s == EBB__JOB_FAILED ||
           s == EBB__JOB_CANCELLED || s == EBB__JOB_BUDGET_EXHAUSTED ||
           s == EBB__JOB_DEADLINE_MISSED;
}

/* ---- planning pass ----------------------------------------------------- */

/* A pass decides for this many jobs at most, and stops early once this
 * many provider calls wait for its commit; the rest is planned by the next
 * pass at the same instant, after the loop has served what came in. Counts,
 * not wall time, so that a virtual run stays deterministic. A decision
 * costs microseconds; a launch, with its store writes, a hundred or so. */
#define PASS_MAX_PLANS 512
#define PASS_MAX_CALLS 16

static void on_plan_timer(struct ebb__timer *t)
{
    struct ebb__engine *e = t->data;
    /* Jobs marked dirty while this pass runs wait in a new queue. */
    struct ebb__job *job = e->dirty_first, *last = e->dirty_last;
    e->dirty_first = e->dirty_last = NULL;
    ebb__engine_batch_begin(e);
    for (size_t planned = 0; job != NULL; planned++) {
        if (planned == PASS_MAX_PLANS || e->n_calls >= PASS_MAX_CALLS) {
            /* The rest goes first next time; they are still marked dirty,
             * so none of them was queued again meanwhile. */
            last->next_dirty = e->dirty_first;
            if (e->dirty_first == NULL)
                e->dirty_last = last;
            e->dirty_first = job;
            ebb__timer_start(e->opt.clock, &e->plan_timer, ebb__clock_now(e->opt.clock));
            break;
        }
        struct ebb__job *next = job->next_dirty;
        job->next_dirty = NULL;
        job->dirty = 0;
        if (!ebb__job_state_terminal(job->state))
            ebb__engine_plan_job(job);
        job = next;
    }
    ebb__engine_batch_end(e);
}

void ebb__engine_mark_dirty(struct ebb__job *job)
{
    struct ebb__engine *e = job->engine;
    if (!job->dirty) {
        job->dirty = 1;
        if (e->dirty_last != NULL)
            e->dirty_last->next_dirty = job;
        else
            e->dirty_first = job;
        e->dirty_last = job;
    }
    if (!ebb__timer_pending(&e->plan_timer))
        ebb__timer_start(e->opt.clock, &e->plan_timer, ebb__clock_now(e->opt.clock));
}

static void on_job_wake(struct ebb__timer *t)
{
    ebb__engine_mark_dirty(t->data);
}

/* ---- states ------------------------------------------------------------ */

void ebb__engine_set_state(struct ebb__job *job, enum ebb__job_state to,
                           const char *fmt, ...)
{
    struct ebb__engine *e = job->engine;
    char reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    enum ebb__job_state from = job->state;
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    job->state = to;
    if (ebb__job_state_terminal(to) && !ebb__job_state_terminal(from)) {
        e->n_active--;
        job->finished_at = now;
        ebb__timer_stop(e->opt.clock, &job->wake);
    }
    /* The state and its event commit together, so job_events always
     * explains the state a job is in. */
    struct ebb__store *s = e->opt.store;
    int rc = ebb__store_begin(s);
    if (rc == 0)
        rc = ebb__store_job_event(s, job->id, now, ebb__job_state_name(from),
                                  ebb__job_state_name(to), reason);
    if (rc == 0)
        rc = ebb__store_job_update(s, job->id, ebb__job_state_name(to),
                                   job->work_saved, job->spent,
                                   (int)job->retries, (int)job->preemptions, now);
    if (rc == 0)
        rc = ebb__store_commit(s);
    if (rc != 0) {
        ebb__store_rollback(s);
        ebb__error("job %s: cannot record %s -> %s: %s", job->id,
                   ebb__job_state_name(from), ebb__job_state_name(to),
                   ebb__store_errmsg(s));
    }
    ebb__debug("job %s: %s -> %s: %s", job->id, ebb__job_state_name(from),
               ebb__job_state_name(to), reason);
}

ebb_dur_ms ebb__job_work_done(const struct ebb__job *job, ebb_time_ms now)
{
    const struct ebb__attempt *a = job->current;
    if (a == NULL || a->running_at == 0)
        return job->work_saved;
    const struct ebb__offer *o = &job->engine->market.offers[a->offer];
    ebb_time_ms productive_from = a->running_at + job->spec.restart_overhead;
    ebb_dur_ms done = a->reported_work;
    ebb_time_ms since = a->reported_at > productive_from ? a->reported_at
                                                         : productive_from;
    if (now > since)
        done += (ebb_dur_ms)((double)(now - since) * o->speed);
    ebb_dur_ms total = a->work_base + done;
    if (total < job->work_saved)
        total = job->work_saved;
    return total < job->work_total ? total : job->work_total;
}

/* ---- prices ------------------------------------------------------------ */

int ebb__engine_update_allowed(struct ebb__job *job)
{
    struct ebb__engine *e = job->engine;
    for (; job->offers_examined < e->market.n_offers; job->offers_examined++) {
        size_t k = job->offers_examined;
        if (!ebb__engine_offer_allowed(e, job, k))
            continue;
        if (job->n_allowed == job->cap_allowed) {
            size_t cap = job->cap_allowed ? job->cap_allowed * 2 : 16;
            size_t *allowed = realloc(job->allowed, cap * sizeof(*allowed));
            if (allowed == NULL)
                return EBB_ENOMEM;
            job->allowed = allowed;
            job->cap_allowed = cap;
        }
        job->allowed[job->n_allowed++] = k;
    }
    return 0;
}

static int allows(const struct ebb__job *job, size_t k)
{
    size_t lo = 0, hi = job->n_allowed;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (job->allowed[mid] == k)
            return 1;
        if (job->allowed[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

void ebb__engine_wake_offer(struct ebb__engine *e, size_t offer,
                            const struct ebb__job *except)
{
    for (struct ebb__job *job = e->jobs; job != NULL; job = job->next) {
        if (job == except || ebb__job_state_terminal(job->state))
            continue;
        if (ebb__engine_update_allowed(job) != 0 || offer == SIZE_MAX ||
            allows(job, offer))
            ebb__engine_mark_dirty(job);
    }
}

static void poll_one(struct ebb__engine_poll *p);

/* Every provider has answered a price poll (or stopped polling). */
static int all_polled(const struct ebb__engine *e)
{
    for (size_t i = 0; i < e->opt.registry->n_providers; i++)
        if (e->polls[i].health.polls == 0 && !e->polls[i].health.stopped)
            return 0;
    return 1;
}

static void on_prices(void *arg, int status, const struct ebb_price *prices,
                      size_t n)
{
    struct ebb__engine_poll *p = arg;
    struct ebb__engine *e = p->engine;
    p->in_flight = 0;
    if (status == EBB_ECANCELED)
        return;
    p->health.polls++;
    p->health.last_status = status;
    p->health.last_at = ebb__clock_now(e->opt.clock);
    if (status != 0) {
        p->health.errors++;
        ebb__warn("%s: price poll failed: %s", p->slot->plugin->name,
                  ebb_strerror(status));
    }
    /* Bad credentials do not heal by retrying: one error, no retry storm. */
    if (status == EBB_EAUTH || status == EBB_EPERM) {
        p->health.stopped = 1;
        ebb__error("%s: %s; price polling stopped until ebbd restarts (fix the "
                   "credentials first)", p->slot->plugin->name, ebb_strerror(status));
    }
    /* Wake only the jobs that may use an offer that changed. A batch that
     * changes many offers (a first poll's history) wakes everyone once. */
    size_t n_offers_before = e->market.n_offers;
    size_t changed = SIZE_MAX, n_changed = 0;
    for (size_t i = 0; i < n; i++) {
        size_t offer;
        if (ebb__market_observe(&e->market, p->slot->plugin->name, &prices[i],
                                &offer) != 0) {
            ebb__error("out of memory recording prices");
            break;
        }
        if (offer != SIZE_MAX && offer != changed) {
            changed = offer;
            n_changed++;
        }
    }
    if (e->opt.store_prices && n > 0) {
        size_t inserted = 0;
        if (ebb__store_put_prices(e->opt.store, p->slot->plugin->name, prices, n,
                                  &inserted) != 0)
            ebb__error("cannot store prices: %s", ebb__store_errmsg(e->opt.store));
    }
    if (n_changed == 1 && e->market.n_offers == n_offers_before)
        ebb__engine_wake_offer(e, changed, NULL);
    else if (n_changed > 0)
        ebb__engine_wake_offer(e, SIZE_MAX, NULL);
    if (p->again) {
        p->again = 0;
        poll_one(p);
    }
    if (e->recovery != NULL && all_polled(e))
        ebb__engine_reconcile(e);
}

static void poll_one(struct ebb__engine_poll *p)
{
    if (p->health.stopped)
        return;
    if (p->in_flight) {
        p->again = 1;
        return;
    }
    const struct ebb_provider *prov = p->slot->plugin->provider;
    p->in_flight = 1;
    int rc = prov->poll_prices(p->slot->self, on_prices, p);
    if (rc != 0) {
        p->in_flight = 0;
        ebb__warn("%s: cannot poll prices: %s", p->slot->plugin->name,
                  ebb_strerror(rc));
    }
}

const struct ebb__provider_health *
ebb__engine_provider_health(const struct ebb__engine *e, const char *provider)
{
    for (size_t i = 0; i < e->opt.registry->n_providers; i++)
        if (strcmp(e->polls[i].slot->plugin->name, provider) == 0)
            return &e->polls[i].health;
    return NULL;
}

void ebb__engine_poll_prices(struct ebb__engine *e)
{
    for (size_t i = 0; i < e->opt.registry->n_providers; i++)
        poll_one(&e->polls[i]);
}

static void on_market_changed(void *sink, const char *provider)
{
    struct ebb__engine *e = sink;
    for (size_t i = 0; i < e->opt.registry->n_providers; i++)
        if (strcmp(e->polls[i].slot->plugin->name, provider) == 0)
            poll_one(&e->polls[i]);
}

static ebb_time_ms last_price_at(void *sink, const char *provider,
                                 const char *region)
{
    struct ebb__engine *e = sink;
    ebb_time_ms at = 0;
    if (e->opt.store_prices &&
        ebb__store_last_price_at(e->opt.store, provider, region, &at) != 0)
        ebb__error("%s: %s", provider, ebb__store_errmsg(e->opt.store));
    return at;
}

void ebb__engine_host_env(struct ebb__engine *e, struct ebb__host_env *env)
{
    env->sink = e;
    env->instance_event = ebb__engine_instance_event;
    env->market_changed = on_market_changed;
    env->last_price_at = last_price_at;
}

/* ---- life -------------------------------------------------------------- */

int ebb__engine_init(struct ebb__engine *e, const struct ebb__engine_options *o)
{
    *e = (struct ebb__engine){.opt = *o};
    e->jobs_tail = &e->jobs;
    ebb__market_init(&e->market, o->catalog);
    ebb__timer_init(&e->plan_timer, on_plan_timer, e);
    ebb__timer_init(&e->agent_sweep, NULL, e);
    size_t n = o->registry->n_providers;
    e->polls = calloc(n ? n : 1, sizeof(*e->polls));
    if (e->polls == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < n; i++)
        e->polls[i] = (struct ebb__engine_poll){.engine = e,
                                                .slot = &o->registry->providers[i]};
    return 0;
}

void ebb__engine_fini(struct ebb__engine *e)
{
    ebb__timer_stop(e->opt.clock, &e->plan_timer);
    ebb__timer_stop(e->opt.clock, &e->agent_sweep);
    ebb__engine_recovery_free(e);
    struct ebb__job *job = e->jobs;
    while (job != NULL) {
        struct ebb__job *next = job->next;
        ebb__timer_stop(e->opt.clock, &job->wake);
        if (job->current != NULL)
            ebb__engine_attempt_free(e, job->current);
        ebb__engine_job_free(job);
        job = next;
    }
    free(e->polls);
    free(e->by_id);
    free(e->view_offers);
    free(e->view_map);
    free(e->view_allowed);
    free(e->view_fc);
    free(e->calls);
    ebb__engine_releases_free(e);
    ebb__market_free(&e->market);
    *e = (struct ebb__engine){0};
}

/* ---- jobs by id --------------------------------------------------------- */

static size_t id_hash(const char *id, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len && id[i] != '\0'; i++)
        h = (h ^ (unsigned char)id[i]) * 1099511628211ULL;
    return (size_t)h;
}

static void by_id_put(struct ebb__job **table, size_t cap, struct ebb__job *job)
{
    size_t i = id_hash(job->id, sizeof(job->id)) & (cap - 1);
    while (table[i] != NULL)
        i = (i + 1) & (cap - 1);
    table[i] = job;
}

static int by_id_add(struct ebb__engine *e, struct ebb__job *job)
{
    if ((e->n_jobs + 1) * 2 > e->by_id_cap) {
        size_t cap = e->by_id_cap ? e->by_id_cap * 2 : 64;
        struct ebb__job **table = calloc(cap, sizeof(*table));
        if (table == NULL)
            return EBB_ENOMEM;
        for (size_t i = 0; i < e->by_id_cap; i++)
            if (e->by_id[i] != NULL)
                by_id_put(table, cap, e->by_id[i]);
        free(e->by_id);
        e->by_id = table;
        e->by_id_cap = cap;
    }
    by_id_put(e->by_id, e->by_id_cap, job);
    return 0;
}

struct ebb__job *ebb__engine_job(const struct ebb__engine *e, const char *id)
{
    if (e->by_id_cap == 0 || id == NULL)
        return NULL;
    size_t len = strlen(id);
    for (size_t i = id_hash(id, len) & (e->by_id_cap - 1); e->by_id[i] != NULL;
         i = (i + 1) & (e->by_id_cap - 1))
        if (strcmp(e->by_id[i]->id, id) == 0)
            return e->by_id[i];
    return NULL;
}

/* ---- submission -------------------------------------------------------- */

/* Job ids are short and stable (the same backtest always names its jobs
 * the same way); unique within the store, see ebb__engine_submit_also. */
static void make_id(struct ebb__engine *e, const char *name, ebb_time_ms at,
                    char *out, size_t len)
{
    ebb__short_id("j", name, at, ++e->id_seq, out, len);
}

int ebb__engine_job_new(struct ebb__engine *e, struct ebb__job_spec *spec,
                        int64_t owner_uid, const char *workdir,
                        ebb_time_ms submitted_at, struct ebb__job **out,
                        struct ebb_diag *d)
{
    const char *policy_name = spec->policy ? spec->policy : e->opt.default_policy;
    struct ebb__plugin_slot *policy =
        policy_name ? ebb__registry_policy(e->opt.registry, policy_name) : NULL;
    if (policy == NULL) {
        ebb_diag_set(d, spec->file, spec->line, "%s: no policy named \"%s\" is "
                      "installed (see ebb policies)", spec->name,
                      policy_name ? policy_name : "(none)");
        return EBB_EINVAL;
    }
    struct ebb__job *job = calloc(1, sizeof(*job));
    if (job == NULL) {
        ebb_diag_set(d, NULL, 0, "out of memory");
        return EBB_ENOMEM;
    }
    job->engine = e;
    job->spec = *spec;
    *spec = (struct ebb__job_spec){0};
    job->policy = policy;
    job->owner_uid = owner_uid;
    job->workdir = workdir && workdir[0] ? strdup(workdir) : NULL;
    job->submitted_at = submitted_at;
    job->deadline = ebb__jobspec_deadline(&job->spec, submitted_at);
    job->work_total = job->spec.work;
    job->budget = job->spec.has_budget ? job->spec.budget.amount : -1;
    snprintf(job->currency, sizeof(job->currency), "%s",
             job->spec.has_budget ? job->spec.budget.currency : "USD");
    job->launch_next = SIZE_MAX;
    job->after_release = EBB__JOB_WAITING;
    job->state = EBB__JOB_PENDING;
    ebb__timer_init(&job->wake, on_job_wake, job);
    *out = job;
    return 0;
}

int ebb__engine_job_add(struct ebb__engine *e, struct ebb__job *job)
{
    if (by_id_add(e, job) != 0)
        return EBB_ENOMEM;
    *e->jobs_tail = job;
    e->jobs_tail = &job->next;
    e->n_jobs++;
    if (!ebb__job_state_terminal(job->state))
        e->n_active++;
    return 0;
}

void ebb__engine_job_free(struct ebb__job *job)
{
    ebb__jobspec_free(&job->spec);
    free(job->workdir);
    free(job->allowed);
    free(job);
}

int ebb__engine_submit(struct ebb__engine *e, struct ebb__job_spec *spec,
                       const char *spec_yaml, int64_t owner_uid,
                       const char *workdir, struct ebb__job **out,
                       struct ebb_diag *d)
{
    return ebb__engine_submit_also(e, spec, spec_yaml, owner_uid, workdir, NULL,
                                   out, d);
}

int ebb__engine_submit_also(struct ebb__engine *e, struct ebb__job_spec *spec,
                            const char *spec_yaml, int64_t owner_uid,
                            const char *workdir, const struct ebb__submit_also *also,
                            struct ebb__job **out, struct ebb_diag *d)
{
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    struct ebb__job *job = NULL;
    int rc = ebb__engine_job_new(e, spec, owner_uid, workdir, now, &job, d);
    if (rc != 0)
        return rc;
    const struct ebb__plugin_slot *policy = job->policy;
    make_id(e, job->spec.name, now, job->id, sizeof(job->id));

    json_t *j = ebb__jobspec_to_json(&job->spec);
    char *spec_json = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(j);
    struct ebb__job_row row = {
        .id = job->id,
        .name = job->spec.name,
        .team = job->spec.team,
        .spec_yaml = spec_yaml ? spec_yaml : "",
        .spec_json = spec_json ? spec_json : "{}",
        .state = ebb__job_state_name(EBB__JOB_PENDING),
        .policy = policy->plugin->name,
        .owner_uid = owner_uid,
        .submitted_at = now,
        .deadline = job->deadline,
        .updated_at = now,
        .work_ms = job->work_total,
        .budget = job->budget,
        .currency = job->currency,
        .workdir = job->workdir,
    };
    struct ebb__store *s = e->opt.store;
    rc = ebb__store_begin(s);
    /* Ids are short: with many thousands of jobs two may hash alike. */
    for (int tries = 0; rc == 0; tries++) {
        rc = ebb__store_job_insert(s, &row);
        if (rc != EBB_EEXISTS || tries == 8)
            break;
        make_id(e, job->spec.name, now, job->id, sizeof(job->id));
        rc = 0;
    }
    if (rc == 0)
        rc = ebb__store_job_event(s, job->id, now, NULL, "pending", "submitted");
    if (rc == 0 && also != NULL)
        rc = also->write(also->arg, s, job->id);
    if (rc == 0)
        rc = ebb__store_commit(s);
    free(spec_json);
    if (rc != 0) {
        ebb__store_rollback(s);
        ebb_diag_set(d, NULL, 0, "cannot store job %s: %s", job->spec.name,
                      ebb__store_errmsg(s));
        ebb__engine_job_free(job);
        return rc;
    }
    if (ebb__engine_job_add(e, job) != 0) {
        ebb_diag_set(d, NULL, 0, "out of memory");
        ebb__engine_job_free(job);
        return EBB_ENOMEM;
    }
    ebb__engine_set_state(job, EBB__JOB_WAITING, "policy %s will decide when "
                          "and where to run", policy->plugin->name);
    ebb__engine_mark_dirty(job);
    if (out != NULL)
        *out = job;
    return 0;
}
