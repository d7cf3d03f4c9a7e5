/* The engine's core that every other engine file uses and that uses none
 * of them: job states and the job_events row each change writes, the
 * dirty queue the planning pass takes jobs from, the job list and the
 * table of jobs by id (and so by attempt token), and the read-only views
 * of a job engine.h hands out. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/gang.h>
#include <ebb/runas.h>

#include "base/log.h"
#include "base/pathname.h"
#include "engine/internal.h"

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

/* ---- the dirty queue ----------------------------------------------------- */

/* The planning pass itself is engine.c's: the plan timer it set up runs
 * it, so this file only starts the timer. */
void ebb__engine_mark_dirty(struct ebb__job *job)
{
    struct ebb__engine *e = job->engine;
    if (!ebb_list_linked(&job->dirty))
        ebb_list_insert_tail(&e->dirty, &job->dirty);
    if (!ebb__timer_pending(&e->plan_timer))
        ebb__timer_start(e->opt.clock, &e->plan_timer, ebb__clock_now(e->opt.clock));
}

static void on_job_wake(struct ebb__timer *t)
{
    ebb__engine_mark_dirty(t->data);
}

/* ---- states -------------------------------------------------------------- */

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
    ebb__engine_note_waiting(job, reason);
    ebb__engine_wait_kind(job, EBB__WAIT_PLANNING);
    int ends = ebb__job_state_terminal(to) && !ebb__job_state_terminal(from);
    if (ends) {
        e->n_active--;
        job->finished_at = now;
        ebb__timer_stop(e->opt.clock, &job->wake);
    }
    /* The state and its event commit together, so job_events always
     * explains the state a job is in; so do the fees its end brings. */
    struct ebb__store *s = e->opt.store;
    int rc = ebb__store_begin(s);
    if (rc == 0)
        rc = ebb__store_job_event(s, job->id, now, ebb__job_state_name(from),
                                  ebb__job_state_name(to), reason);
    if (rc == 0 && ends && e->job_end != NULL)
        rc = e->job_end(job, now);
    if (rc == 0)
        rc = ebb__store_job_update(s, job->id, ebb__job_state_name(to),
                                   job->work_saved, job->spent,
                                   (int)job->retries, (int)job->preemptions, now);
    if (rc == 0)
        ebb__engine_note(job, to == EBB__JOB_PREEMPTED ? "job.preempted"
                                                        : "job.state",
                         NULL, reason);
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

const char *ebb__wait_kind_name(enum ebb__wait_kind k)
{
    static const char *const names[] = {
#define EBB__WAIT_KIND_NAME(name, text) text,
        EBB__WAIT_KINDS(EBB__WAIT_KIND_NAME)
#undef EBB__WAIT_KIND_NAME
    };
    return (size_t)k < sizeof(names) / sizeof(names[0]) ? names[k] : "";
}

void ebb__engine_wait_kind(struct ebb__job *job, enum ebb__wait_kind kind)
{
    int waits = job->state == EBB__JOB_PENDING || job->state == EBB__JOB_WAITING ||
                job->state == EBB__JOB_PAUSED || job->state == EBB__JOB_PREEMPTED;
    job->waiting_kind = waits ? kind : EBB__WAIT_NONE;
}

int ebb__job_waits(const struct ebb__job *job)
{
    return job->current == NULL &&
           (job->state == EBB__JOB_PENDING || job->state == EBB__JOB_WAITING ||
            job->state == EBB__JOB_PAUSED || job->state == EBB__JOB_PREEMPTED);
}

void ebb__engine_note_waiting(struct ebb__job *job, const char *reason)
{
    int waits = job->state == EBB__JOB_PENDING || job->state == EBB__JOB_WAITING ||
                job->state == EBB__JOB_PAUSED || job->state == EBB__JOB_PREEMPTED;
    snprintf(job->waiting_reason, sizeof(job->waiting_reason), "%s",
             waits && reason != NULL ? reason : "");
}

void ebb__engine_job_note(struct ebb__job *job, const char *type, const char *reason)
{
    ebb__engine_note(job, type, NULL, reason);
}

void ebb__engine_note(struct ebb__job *job, const char *type, const char *key,
                      const char *reason)
{
    struct ebb__engine *e = job->engine;
    if (e->opt.note == NULL)
        return;
    struct ebb__engine_note n = {
        .type = type, .key = key, .spec = &job->spec, .job_id = job->id,
        .state = ebb__job_state_name(job->state), .reason = reason,
        .currency = job->currency, .spent = job->spent,
        .at = ebb__clock_now(e->opt.clock),
    };
    e->opt.note(e->opt.note_arg, &n);
}

int ebb__job_nodes(const struct ebb__job *job)
{
    return job->spec.nodes > 1 ? job->spec.nodes : 1;
}

ebb_dur_ms ebb__job_work_done(const struct ebb__job *job, ebb_time_ms now)
{
    const struct ebb__attempt *a = job->current;
    if (a == NULL || a->running_at == 0)
        return job->work_saved;
    ebb_time_ms productive_from = a->running_at + job->spec.restart_overhead;
    ebb_dur_ms done = a->reported_work;
    ebb_time_ms since = a->reported_at > productive_from ? a->reported_at
                                                         : productive_from;
    if (now > since)
        done += (ebb_dur_ms)((double)(now - since) * ebb__engine_speed(job, a->offer, NULL));
    ebb_dur_ms total = a->work_base + done;
    if (total < job->work_saved)
        total = job->work_saved;
    return total < job->work_total ? total : job->work_total;
}

/* ---- jobs by id ---------------------------------------------------------- */

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

/* Tokens are "<job id>-a<attempt>" (ebb__engine_launch), so the job is
 * found by its id; the token must still be its current attempt's. */
struct ebb__job *ebb__engine_job_of_token(struct ebb__engine *e, const char *token)
{
    const char *cut = token != NULL ? strrchr(token, '-') : NULL;
    char id[sizeof(((struct ebb__job *)0)->id)];
    if (cut == NULL || (size_t)(cut - token) >= sizeof(id))
        return NULL;
    memcpy(id, token, (size_t)(cut - token));
    id[cut - token] = '\0';
    struct ebb__job *job = ebb__engine_job(e, id);
    if (job == NULL || job->current == NULL ||
        strcmp(job->current->token, token) != 0)
        return NULL;
    return job;
}

/* ---- the job list -------------------------------------------------------- */

int ebb__engine_job_new(struct ebb__engine *e, struct ebb__job_spec *spec,
                        int64_t owner_uid, const char *workdir,
                        ebb_time_ms submitted_at, struct ebb__job **out,
                        struct ebb_diag *d)
{
    const char *policy_name = spec->policy ? spec->policy : e->opt.default_policy;
    struct ebb__plugin_slot *policy =
        policy_name ? ebb__registry_policy(e->opt.registry, policy_name) : NULL;
    if (policy == NULL) {
        ebb_diag_set(d, spec->file, spec->policy_line ? spec->policy_line : spec->line,
                     "%s: no policy named \"%s\" is "
                      "installed (see ebb policies)", spec->name,
                      policy_name ? policy_name : "(none)");
        return EBB_EINVAL;
    }
    /* A relative checkpoint dir is the job's: below its working directory,
     * where the job runs and looks for it, never where ebbd or the agent
     * happen to run. Resolved here, for submits and restored jobs alike,
     * so that the agent, the checkpoint rows and `ebb job show` all see
     * one absolute path. */
    char *ckpt_dir = NULL;
    int rc = spec->checkpoint.dir != NULL
                 ? ebb__path_resolve(workdir, spec->checkpoint.dir, &ckpt_dir)
                 : 0;
    if (rc != 0) {
        if (rc == EBB_ENOMEM)
            ebb_diag_set(d, NULL, 0, "out of memory");
        else
            ebb_diag_set(d, spec->file, 0, "%s: checkpoint.dir \"%s\" climbs out of "
                         "its directory with \"..\"", spec->name, spec->checkpoint.dir);
        return rc;
    }
    struct ebb__job *job = calloc(1, sizeof(*job));
    if (job == NULL) {
        free(ckpt_dir);
        ebb_diag_set(d, NULL, 0, "out of memory");
        return EBB_ENOMEM;
    }
    if (ckpt_dir != NULL) {
        free(spec->checkpoint.dir);
        spec->checkpoint.dir = ckpt_dir;
    }
    job->engine = e;
    ebb_list_init(&job->node);
    ebb_list_init(&job->dirty);
    job->spec = *spec;
    *spec = (struct ebb__job_spec){0};
    job->policy = policy;
    job->owner_uid = owner_uid;
    /* The user name ebbd knows the owner by (daemon_access.c), for the
     * limits ebb.yaml gives users by name; looked up once. */
    if (ebb_runas_user(owner_uid, job->owner_name, NULL, sizeof(job->owner_name)) != 0)
        job->owner_name[0] = '\0';
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
    ebb_list_insert_tail(&e->jobs, &job->node);
    job->seq = e->n_jobs++;
    if (!ebb__job_state_terminal(job->state))
        e->n_active++;
    return 0;
}

void ebb__engine_job_free(struct ebb__job *job)
{
    ebb__jobspec_free(&job->spec);
    free(job->workdir);
    free(job->allowed);
    if (job->xfer != NULL)
        free(job->xfer->held);
    free(job->xfer);
    free(job);
}

struct ebb__job *ebb__engine_job_next(const struct ebb__engine *e,
                                      const struct ebb__job *job)
{
    const struct ebb_list *node = job != NULL ? job->node.next : e->jobs.next;
    return node != &e->jobs ? ebb_list_entry(node, struct ebb__job, node) : NULL;
}

/* ---- what outsiders read ------------------------------------------------- */

const char *ebb__engine_job_id(const struct ebb__job *job)
{
    return job->id;
}

enum ebb__job_state ebb__engine_job_state(const struct ebb__job *job)
{
    return job->state;
}

int64_t ebb__engine_job_run_uid(const struct ebb__job *job)
{
    int64_t uid = -1;
    if (job->spec.run_as == NULL)
        return job->owner_uid;
    return ebb_runas_lookup(job->spec.run_as, &uid) == 0 ? uid : -1;
}

void ebb__engine_job_info(const struct ebb__job *job, struct ebb__job_info *out)
{
    *out = (struct ebb__job_info){
        .id = job->id,
        .spec = &job->spec,
        .policy = job->policy->plugin->name,
        .state = job->state,
        .submitted_at = job->submitted_at,
        .deadline = job->deadline,
        .finished_at = job->finished_at,
        .work_total = job->work_total,
        .work_saved = job->work_saved,
        .budget = job->budget,
        .spent = job->spent,
        .currency = job->currency,
        .attempts = job->attempts,
        .preemptions = job->preemptions,
        .restarts = job->restarts,
        .retries = job->retries,
        .owner_uid = job->owner_uid,
        .workdir = job->workdir,
        .has_instance = job->current != NULL,
        .waiting_reason = job->waiting_reason[0] ? job->waiting_reason : NULL,
        .waiting_kind = job->waiting_reason[0] ? job->waiting_kind : EBB__WAIT_NONE,
    };
}

int ebb__engine_job_attempt(const struct ebb__job *job,
                            struct ebb__attempt_info *out)
{
    const struct ebb__attempt *a = job->current;
    if (a == NULL)
        return EBB_ENOTFOUND;
    *out = (struct ebb__attempt_info){
        .token = a->token,
        .provider = a->provider->plugin->name,
        .offer = a->offer,
        .instance_id = a->instance_id,
        .launched = a->launched,
        .billing = a->billing,
        .launched_at = a->launched_at,
        .notice = a->notice,
        .notice_deadline = a->notice_deadline,
        .imds_token = a->imds_token,
    };
    out->speed = ebb__engine_speed(job, a->offer, &out->speed_samples);
    out->nodes = a->n_nodes;
    return 0;
}

int ebb__engine_job_node(const struct ebb__job *job, unsigned rank,
                         struct ebb__node_info *out, char *id_buf, size_t id_len)
{
    const struct ebb__attempt *a = job->current;
    if (a == NULL || rank >= a->n_nodes)
        return EBB_ENOTFOUND;
    const struct ebb__node *n = &a->nodes[rank];
    id_buf[0] = '\0';
    if (a->instance_id != NULL && ebb_gang_member(a->instance_id, rank, id_buf, id_len) != 0)
        id_buf[0] = '\0';
    *out = (struct ebb__node_info){
        .rank = rank, .instance_id = id_buf, .addr = n->addr, .port = n->port,
        .gpu_model = n->gpu_model, .driver = n->driver, .cuda = n->cuda,
        .link_mbps = n->link_mbps, .seen = n->seen, .started = n->started,
        .exited = n->exited,
    };
    return 0;
}
