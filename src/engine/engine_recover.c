/* Taking jobs back after ebbd restarts (also after SIGKILL).
 *
 * The store is the truth about what ebb meant to do: every unfinished job
 * comes back with its saved work, spend and counters, and every instance
 * row not known to have ended is *held*. Then each provider lists the
 * instances carrying ebb's tags, and each held instance is settled:
 *
 *   - still running for a job that wants it: adopted as the job's current
 *     attempt (its agent reconnects with the same token);
 *   - gone, or never launched: closed, billed up to now when it had
 *     started (a cost may be over-counted, never forgotten), and its job
 *     resumes from its checkpoint;
 *   - running but wanted by no job: terminated and billed up to now.
 *
 * Until then the held jobs are not planned, so nothing is launched twice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/gang.h>

#include "base/log.h"
#include "engine/internal.h"
#include "plugin/provider_call.h"
#include "store/store_read.h"

/* One instance row not known to have ended, copied from the store. */
struct held {
    char *token, *job_id, *provider, *market_plugin, *region, *zone, *type,
        *product, *state, *instance_id, *agent_hash, *currency;
    enum ebb_market market;
    ebb_time_ms requested_at, started_at;
    ebb_micros price;
    int settled;
};

/* One instance a provider listed, copied from its answer. */
struct listed {
    char *provider, *id, *token;
    enum ebb_instance_state state;
    int preempted;
    ebb_time_ms launched_at;
    enum ebb_billing billing;
};

struct ebb__recovery {
    struct held *held;
    size_t n_held;
    struct listed *listed;
    size_t n_listed, cap_listed;
    size_t lists_pending;
    int list_failed;   /* some provider could not list: retry later */
    int running;       /* a reconciliation is in flight */
    struct ebb__timer retry;
};

#define RETRY_AFTER (30 * EBB_MS_PER_SECOND)

static char *dup_or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? strdup(s) : NULL;
}

static void held_free(struct held *h)
{
    free(h->token);
    free(h->job_id);
    free(h->provider);
    free(h->market_plugin);
    free(h->region);
    free(h->zone);
    free(h->type);
    free(h->product);
    free(h->state);
    free(h->instance_id);
    free(h->agent_hash);
    free(h->currency);
}

static void listed_clear(struct ebb__recovery *r)
{
    for (size_t i = 0; i < r->n_listed; i++) {
        free(r->listed[i].provider);
        free(r->listed[i].id);
        free(r->listed[i].token);
    }
    r->n_listed = 0;
}

void ebb__engine_recovery_free(struct ebb__engine *e)
{
    struct ebb__recovery *r = e->recovery;
    if (r == NULL)
        return;
    ebb__timer_stop(e->opt.clock, &r->retry);
    for (size_t i = 0; i < r->n_held; i++)
        held_free(&r->held[i]);
    free(r->held);
    listed_clear(r);
    free(r->listed);
    free(r);
    e->recovery = NULL;
}

/* ---- loading ----------------------------------------------------------- */

static enum ebb__job_state state_of(const char *name)
{
    for (int s = EBB__JOB_PENDING; s <= EBB__JOB_DEADLINE_MISSED; s++)
        if (strcmp(ebb__job_state_name((enum ebb__job_state)s), name) == 0)
            return (enum ebb__job_state)s;
    return EBB__JOB_WAITING;
}

static int load_job(void *arg, const struct ebb__recover_job_row *row)
{
    struct ebb__engine *e = arg;
    struct ebb_diag d = {{0}};
    struct ebb__job_spec spec;
    json_error_t jerr;
    json_t *j = json_loads(row->spec_json, 0, &jerr);
    int rc = j ? ebb__jobspec_from_json(j, &spec, &d) : EBB_EINVAL;
    json_decref(j);
    struct ebb__job *job = NULL;
    if (rc == 0)
        rc = ebb__engine_job_new(e, &spec, row->owner_uid, row->workdir,
                                 row->submitted_at, &job, &d);
    if (rc != 0) {
        ebb__jobspec_free(&spec);
        ebb__error("job %s cannot be taken back: %s", row->id,
                   d.msg[0] ? d.msg : "its stored spec is not valid JSON");
        return 0; /* the others still can */
    }
    snprintf(job->id, sizeof(job->id), "%s", row->id);
    job->deadline = row->deadline;
    job->work_saved = row->work_done_ms;
    job->spent = row->spent;
    job->retries = (unsigned)row->retries;
    job->preemptions = (unsigned)row->preemptions;
    job->attempts = (unsigned)row->attempts;
    job->state = state_of(row->state);
    /* Its checkpoints in its store, for their storage fees and its next
     * download (their rates are measured again). */
    if (ebb__engine_transfer_recover(job) != 0)
        ebb__error("job %s: cannot read back its stored checkpoints: %s; their "
                   "storage is not billed", row->id, ebb__store_errmsg(e->opt.store));
    if (ebb__engine_job_add(e, job) != 0) {
        ebb__engine_job_free(job);
        return EBB_ENOMEM;
    }
    return 0;
}

static int hold_instance(void *arg, const struct ebb__open_instance_row *row)
{
    struct ebb__engine *e = arg;
    struct ebb__recovery *r = e->recovery;
    struct held *grown = realloc(r->held, (r->n_held + 1) * sizeof(*grown));
    if (grown == NULL)
        return EBB_ENOMEM;
    r->held = grown;
    struct held *h = &r->held[r->n_held++];
    *h = (struct held){
        .token = strdup(row->token),
        .job_id = strdup(row->job_id),
        .provider = strdup(row->provider),
        .market_plugin = strdup(row->market_plugin[0] ? row->market_plugin
                                                      : row->provider),
        .region = strdup(row->region),
        .zone = strdup(row->zone),
        .type = strdup(row->instance_type),
        .product = strdup(row->product),
        .state = strdup(row->state),
        .instance_id = dup_or_null(row->provider_instance_id),
        .agent_hash = dup_or_null(row->agent_token_hash),
        .currency = strdup(row->currency),
        .market = strcmp(row->market, "spot") == 0 ? EBB_MARKET_SPOT
                                                   : EBB_MARKET_ON_DEMAND,
        .requested_at = row->requested_at,
        .started_at = row->started_at,
        .price = row->price,
    };
    if (!h->token || !h->job_id || !h->provider || !h->market_plugin ||
        !h->region || !h->zone || !h->type || !h->product || !h->state ||
        !h->currency)
        return EBB_ENOMEM;
    struct ebb__job *job = ebb__engine_job(e, row->job_id);
    if (job != NULL)
        job->held = 1;
    return 0;
}

static void on_retry(struct ebb__timer *t)
{
    ebb__engine_reconcile(t->data);
}

int ebb__engine_recover(struct ebb__engine *e)
{
    struct ebb__store *s = e->opt.store;
    e->recovery = calloc(1, sizeof(*e->recovery));
    if (e->recovery == NULL)
        return EBB_ENOMEM;
    ebb__timer_init(&e->recovery->retry, on_retry, e);
    int rc = ebb__engine_speed_load(e);
    if (rc == 0)
        rc = ebb__store_unfinished_jobs(s, load_job, e);
    if (rc == 0)
        rc = ebb__store_open_instances(s, hold_instance, e);
    if (rc != 0) {
        ebb__error("cannot take jobs back from the store: %s",
                   rc == EBB_ENOMEM ? "out of memory" : ebb__store_errmsg(s));
        return rc;
    }
    size_t n = 0;
    struct ebb_list *node;
    ebb_list_foreach(node, &e->jobs) {
        struct ebb__job *job = ebb_list_entry(node, struct ebb__job, node);
        n++;
        /* A job without an instance that may run simply plans again. */
        if (!job->held)
            ebb__engine_mark_dirty(job);
    }
    if (n > 0 || e->recovery->n_held > 0)
        ebb__info("took back %zu unfinished jobs; %zu instances to reconcile "
                  "with their providers", n, e->recovery->n_held);
    if (e->recovery->n_held == 0) {
        ebb__engine_recovery_free(e);
        return 0;
    }
    /* Reconciled once every provider answered its first price poll (so the
     * offers exist), or after a while at the latest. */
    ebb__timer_start(e->opt.clock, &e->recovery->retry,
                     ebb__clock_now(e->opt.clock) +
                         ebb__clock_from_real_ms(e->opt.clock, 10 * EBB_MS_PER_SECOND));
    return 0;
}

/* ---- settling ----------------------------------------------------------- */

static const struct listed *find_listed(const struct ebb__recovery *r,
                                        const char *provider, const char *token)
{
    for (size_t i = 0; i < r->n_listed; i++)
        if (r->listed[i].token != NULL && strcmp(r->listed[i].token, token) == 0 &&
            strcmp(r->listed[i].provider, provider) == 0)
            return &r->listed[i];
    return NULL;
}

static int alive(const struct listed *l)
{
    return l != NULL && !l->preempted && (l->state == EBB_INSTANCE_RUNNING ||
                                          l->state == EBB_INSTANCE_PENDING);
}

static size_t find_offer(const struct ebb__engine *e, const struct held *h)
{
    for (size_t i = 0; i < e->market.n_offers; i++) {
        const struct ebb__offer *o = &e->market.offers[i];
        if (o->market == h->market && strcmp(o->plugin, h->market_plugin) == 0 &&
            strcmp(o->region, h->region) == 0 && strcmp(o->zone, h->zone) == 0 &&
            strcmp(o->instance_type, h->type) == 0 &&
            strcmp(o->product, h->product) == 0)
            return i;
    }
    return SIZE_MAX;
}

/* Closes a held instance nobody runs any more, billing the time it may
 * have run at the price it was launched at. */
static void close_held(struct ebb__engine *e, const struct held *h, const char *why)
{
    struct ebb__store *s = e->opt.store;
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    int started = h->instance_id != NULL && h->started_at > 0 && now > h->started_at;
    ebb_micros amount = started ? (ebb_micros)((double)h->price *
                                               (double)(now - h->started_at) /
                                               EBB_MS_PER_HOUR + 0.5)
                                : 0;
    struct ebb__job *job = ebb__engine_job(e, h->job_id);
    /* A gang bills each of its nodes: a row each, as its attempts do. */
    size_t nodes = h->instance_id != NULL ? ebb_gang_size(h->instance_id) : 1;
    nodes = nodes > 0 ? nodes : 1;
    struct ebb__ledger_row row = {
        .job_id = h->job_id, .instance_token = h->token,
        .team = job ? job->spec.team : NULL, .provider = h->provider,
        .kind = "compute", .currency = h->currency, .note = h->type,
        .start_at = h->started_at, .end_at = now, .rate = h->price,
        .amount = amount,
    };
    int rc = ebb__store_begin(s);
    for (size_t r = 0; rc == 0 && started && r < nodes; r++)
        rc = ebb__store_ledger_add(s, &row);
    if (rc == 0)
        rc = ebb__store_instance_update(s, h->token, started ? "terminated" : "failed",
                                        NULL, 0, now, why);
    if (rc == 0)
        rc = ebb__store_commit(s);
    if (rc != 0) {
        ebb__store_rollback(s);
        ebb__error("instance %s: cannot record its end: %s", h->token,
                   ebb__store_errmsg(s));
    }
    if (job != NULL)
        ebb__engine_add_spend(job, amount * (ebb_micros)nodes, h->currency);
}

static void adopt(struct ebb__engine *e, struct ebb__job *job, const struct held *h,
                  const struct listed *runner, const struct listed *shadow,
                  size_t offer)
{
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    struct ebb__attempt *a = calloc(1, sizeof(*a));
    unsigned nodes = (unsigned)ebb__job_nodes(job);
    if (a == NULL || ebb__gang_nodes_alloc(a, nodes) != 0) {
        free(a);
        return;
    }
    snprintf(a->token, sizeof(a->token), "%s", h->token);
    if (ebb__gang_hashes_parse(a, h->agent_hash) != 0)
        ebb__warn("job %s: %s: its agents' hashes do not match its %u nodes; they "
                  "must enrol again", job->id, h->token, nodes);
    a->offer = offer;
    a->provider = ebb__registry_provider(e->opt.registry, h->provider);
    a->market = strcmp(h->market_plugin, h->provider) != 0
                    ? ebb__registry_provider(e->opt.registry, h->market_plugin)
                    : NULL;
    a->instance_id = strdup(runner->id);
    a->launched = 1;
    a->billing = runner->billing;
    a->requested_at = h->requested_at;
    a->launched_at = h->started_at > 0 ? h->started_at
                     : runner->launched_at > 0 ? runner->launched_at
                                               : h->requested_at;
    a->running_at = a->launched_at;
    a->work_base = job->work_saved;
    /* Its agents have a heartbeat timeout to report again; a gang's had
     * all passed their checks (it ran). */
    a->agent_seen = now;
    for (unsigned r = 0; r < nodes; r++) {
        a->nodes[r].seen = now;
        a->nodes[r].billed_from = a->launched_at;
    }
    a->formed = 1;
    ebb__engine_attempt_init(job, a);
    job->current = a;
    job->held = 0;
    e->market.offers[offer].n_running += nodes;
    e->market.version++;
    if (a->market != NULL) {
        if (alive(shadow))
            a->shadow_id = strdup(shadow->id);
        else
            ebb__engine_relaunch_shadow(job);
    }
    if (job->state != EBB__JOB_RUNNING)
        ebb__engine_set_state(job, EBB__JOB_RUNNING, "taken back after ebbd "
                              "restarted: %s still runs", runner->id);
    ebb__info("job %s: adopted %s on %s", job->id, runner->id, h->provider);
}

/* A launch that completed just before ebbd stopped may not have reached
 * its row (the row commits with the loop turn): what the provider lists
 * is kept in the row and in `h`, so that the instance is billed from its
 * start when it ends, and never left unbilled. */
static void learn_launch(struct ebb__engine *e, struct held *h,
                         const struct listed *runner)
{
    if (h->started_at > 0 || runner->launched_at <= 0)
        return;
    char *id = h->instance_id != NULL ? h->instance_id : dup_or_null(runner->id);
    if (id == NULL)
        return;
    h->instance_id = id;
    h->started_at = runner->launched_at;
    const char *state = strcmp(h->state, "intent") == 0 ? "launching" : h->state;
    if (ebb__store_instance_update(e->opt.store, h->token, state, id,
                                   h->started_at, 0, NULL) != 0)
        ebb__error("instance %s: cannot record its launch: %s", h->token,
                   ebb__store_errmsg(e->opt.store));
}

static void settle(struct ebb__engine *e, struct held *h)
{
    struct ebb__recovery *r = e->recovery;
    struct ebb__job *job = ebb__engine_job(e, h->job_id);
    const struct listed *runner = find_listed(r, h->provider, h->token);
    const struct listed *shadow = strcmp(h->market_plugin, h->provider) != 0
                                      ? find_listed(r, h->market_plugin, h->token)
                                      : NULL;
    size_t offer = find_offer(e, h);
    /* A gang is taken back whole or not at all: one that lost a node
     * while ebbd was down is released, and resumes from its checkpoint. */
    int whole = runner == NULL || job == NULL ||
                ebb_gang_size(runner->id) == (size_t)ebb__job_nodes(job);
    int wanted = job != NULL && !ebb__job_state_terminal(job->state) &&
                 job->current == NULL && whole;
    h->settled = 1;
    if (alive(runner))
        learn_launch(e, h, runner);
    if (alive(runner) && wanted && offer != SIZE_MAX) {
        adopt(e, job, h, runner, shadow, offer);
        return;
    }
    if (alive(runner)) {
        ebb__warn("terminating %s on %s: no job wants it any more", runner->id,
                  h->provider);
        ebb__engine_release_aside(e, ebb__registry_provider(e->opt.registry, h->provider),
                                  runner->id);
    }
    if (alive(shadow))
        ebb__engine_release_aside(e, ebb__registry_provider(e->opt.registry,
                                                         h->market_plugin),
                                  shadow->id);
    close_held(e, h, alive(runner) ? "released after ebbd restarted"
                                   : "gone while ebbd was down");
    if (job != NULL && !ebb__job_state_terminal(job->state)) {
        job->held = 0;
        if (h->instance_id != NULL)
            job->preemptions++;
        ebb__engine_set_state(job, EBB__JOB_WAITING, "its instance %s ended while "
                              "ebbd was down; resuming from the latest checkpoint",
                              h->instance_id ? h->instance_id : h->token);
        ebb__engine_mark_dirty(job);
    }
}

/* Instances carrying ebb's tags that no held row and no current attempt
 * accounts for: a launch whose row says it ended, or another ebbd's. */
static void release_strays(struct ebb__engine *e)
{
    struct ebb__recovery *r = e->recovery;
    for (size_t i = 0; i < r->n_listed; i++) {
        const struct listed *l = &r->listed[i];
        if (!alive(l) || l->token == NULL)
            continue;
        struct ebb__job *job = ebb__engine_job_of_token(e, l->token);
        int known = job != NULL;
        for (size_t k = 0; !known && k < r->n_held; k++)
            known = strcmp(r->held[k].token, l->token) == 0;
        if (known)
            continue;
        ebb__warn("terminating %s on %s (token %s): no job of this ebbd wants it",
                  l->id, l->provider, l->token);
        ebb__engine_release_aside(e, ebb__registry_provider(e->opt.registry, l->provider),
                                  l->id);
    }
}

static void finish(struct ebb__engine *e)
{
    struct ebb__recovery *r = e->recovery;
    r->running = 0;
    if (r->list_failed) {
        /* An absence proves nothing when a list failed: ask again later. */
        listed_clear(r);
        r->list_failed = 0;
        ebb__warn("a provider could not list its instances; reconciling again "
                  "in %lld s", (long long)(RETRY_AFTER / 1000));
        ebb__timer_start(e->opt.clock, &r->retry,
                         ebb__clock_now(e->opt.clock) + RETRY_AFTER);
        return;
    }
    /* One commit for every instance settled, then their provider calls
     * (shadows launched again for adopted runners). */
    ebb__engine_batch_begin(e);
    for (size_t i = 0; i < r->n_held; i++)
        if (!r->held[i].settled)
            settle(e, &r->held[i]);
    ebb__engine_batch_end(e);
    release_strays(e);
    /* Jobs that run again are planned first: their budget checks renew
     * what they commit of their team's cap before any waiting job of the
     * team may launch against it (the planner takes jobs in this order). */
    for (int running = 1; running >= 0; running--) {
        struct ebb_list *node;
        ebb_list_foreach(node, &e->jobs) {
            struct ebb__job *job = ebb_list_entry(node, struct ebb__job, node);
            job->held = 0;
            if (!ebb__job_state_terminal(job->state) &&
                (job->current != NULL) == running)
                ebb__engine_mark_dirty(job);
        }
    }
    ebb__info("reconciled %zu instances with their providers", r->n_held);
    ebb__engine_recovery_free(e);
}

struct list_ctx {
    struct ebb__engine *e;
    const char *provider;
};

static void on_listed(void *arg, int status, const struct ebb_instance *list, size_t n)
{
    struct list_ctx *c = arg;
    struct ebb__engine *e = c->e;
    struct ebb__recovery *r = e->recovery;
    if (status == EBB_ECANCELED || r == NULL) {
        free(c);
        return;
    }
    if (status != 0) {
        ebb__warn("%s: cannot list instances: %s", c->provider, ebb_strerror(status));
        r->list_failed = 1;
    }
    for (size_t i = 0; status == 0 && i < n; i++) {
        if (r->n_listed == r->cap_listed) {
            size_t cap = r->cap_listed ? 2 * r->cap_listed : 16;
            struct listed *grown = realloc(r->listed, cap * sizeof(*grown));
            if (grown == NULL) {
                r->list_failed = 1;
                break;
            }
            r->listed = grown;
            r->cap_listed = cap;
        }
        r->listed[r->n_listed++] = (struct listed){
            .provider = strdup(c->provider),
            .id = strdup(list[i].id ? list[i].id : ""),
            .token = list[i].token ? strdup(list[i].token) : NULL,
            .state = list[i].state,
            .preempted = list[i].preempted,
            .launched_at = list[i].launched_at,
            .billing = list[i].billing,
        };
    }
    free(c);
    if (--r->lists_pending == 0)
        finish(e);
}

void ebb__engine_reconcile(struct ebb__engine *e)
{
    struct ebb__recovery *r = e->recovery;
    if (r == NULL || r->running)
        return;
    r->running = 1;
    size_t n = e->opt.registry->n_providers;
    r->lists_pending = n + 1; /* +1: held until every call is made */
    for (size_t i = 0; i < n; i++) {
        struct ebb__plugin_slot *slot = &e->opt.registry->providers[i];
        struct list_ctx *c = calloc(1, sizeof(*c));
        if (c == NULL) {
            r->list_failed = 1;
            r->lists_pending--;
            continue;
        }
        *c = (struct list_ctx){e, slot->plugin->name};
        int rc = ebb__provider_list_instances(slot->plugin->name, slot->plugin->provider,
                                              slot->self, on_listed, c);
        if (rc != 0)
            on_listed(c, rc, NULL, 0);
    }
    if (--r->lists_pending == 0)
        finish(e);
}
