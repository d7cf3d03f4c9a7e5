/* Simulated instances: their life on the replayed market, the job each one
 * runs as a model, and their preemptions.
 *
 * Each instance has one host timer, armed for its next event. When it
 * fires, every event due at that instant is handled in a fixed order: the
 * job's own step first (RUNNING, end of the restart overhead, a checkpoint
 * starting or ending, completion, a requested stop), then a preemption
 * notice, then the loss. So a checkpoint that ends exactly at the deadline
 * counts, and a job never makes progress after its instance is gone.
 * Emitting an event may re-enter the provider (the engine may stop the job
 * or terminate the instance from its handler); the state is updated before
 * each event and the loop re-reads it after each one.
 *
 * A gang's members are instances of their own, each preempted on its own;
 * its job runs on its lead (rank 0) and stops when any member ends.
 *
 * Preemptions are planned ahead, because the sim knows the future of its
 * traces: whenever the set of spot instances on one availability series
 * changes (a launch, a termination), the plan for that series is redone by
 * walking its future capacity changes. At a change to capacity c with n
 * instances still there, the n - c newest (by launch, i.e. by number) go.
 * A notice, once given, is never taken back.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static const char sim_reason_capacity[] = "spot capacity reclaimed";
static const char sim_reason_hazard[] = "random preemption (hazard model)";

static char *dup_or_empty(const char *s)
{
    return strdup(s != NULL ? s : "");
}

struct sim_instance *sim_instance_new(struct sim *s, const struct ebb_launch *req,
                                      const struct ebb_job_model *model,
                                      const struct sim_offer *o,
                                      struct sim_instance *lead, unsigned rank,
                                      unsigned nth)
{
    struct sim_instance *in = calloc(1, sizeof(*in));
    if (in == NULL)
        return NULL;
    char id[32];
    in->sim = s;
    in->lead = lead != NULL ? lead : in;
    in->rank = rank;
    in->size = 1;
    in->n = (unsigned long long)s->n_inst + 1 + nth;
    snprintf(id, sizeof(id), "sim-%llu", in->n);
    in->id = strdup(id);
    const char *token = req->token, *job = req->job_id, *provider = req->provider,
               *region = req->region, *zone = req->zone, *type = req->instance_type;
    in->market = req->market;
    in->avail = -1;
    if (lead != NULL) {
        token = lead->token;
        job = lead->job_id;
        provider = lead->provider;
        region = lead->region;
        zone = lead->zone;
        type = lead->instance_type;
        in->market = lead->market;
        in->avail = lead->avail;
    } else if (o != NULL) {
        provider = o->ps->provider;
        region = o->ps->region;
        zone = o->ps->zone;
        type = o->ps->instance_type;
        in->avail = o->avail;
    }
    in->token = dup_or_empty(token);
    in->job_id = dup_or_empty(job);
    in->provider = dup_or_empty(provider);
    in->region = dup_or_empty(region);
    in->zone = dup_or_empty(zone);
    in->instance_type = dup_or_empty(type);
    if (in->id == NULL || in->token == NULL || in->job_id == NULL ||
        in->provider == NULL || in->region == NULL || in->zone == NULL ||
        in->instance_type == NULL) {
        sim_instance_free(s, in);
        return NULL;
    }
    in->launched_at = sim_now(s);
    in->run_at = in->launched_at + s->cfg->launch_latency;
    /* A gang's other members run no job of their own. */
    in->phase = in->lead == in ? SIM_BOOT : SIM_IDLE;
    in->work_total = model->work_remaining > 0 ? model->work_remaining : 0;
    in->speed = model->speed > 0 && isfinite(model->speed) ? model->speed : 1.0;
    in->overhead = model->restart_overhead > 0 ? model->restart_overhead : 0;
    in->every = model->checkpoint_every > 0 ? model->checkpoint_every : 0;
    in->hazard_at = INT64_MAX;
    in->doom_at = INT64_MAX;
    in->notice_at = INT64_MAX;
    return in;
}

void sim_instance_disarm(struct sim *s, struct sim_instance *in)
{
    if (in->timer != 0)
        s->host->timer_stop(s->host->ctx, in->timer);
    in->timer = 0;
}

void sim_instance_free(struct sim *s, struct sim_instance *in)
{
    if (in == NULL)
        return;
    sim_instance_disarm(s, in);
    free(in->id);
    free(in->token);
    free(in->job_id);
    free(in->provider);
    free(in->region);
    free(in->zone);
    free(in->instance_type);
    free(in->members);
    free(in->gang_id);
    free(in->live_id);
    free(in);
}

size_t sim_instance_count(const struct sim *s, ssize_t a)
{
    ebb_time_ms now = sim_now(s);
    size_t n = 0;
    for (size_t i = 0; i < s->n_inst; i++) {
        const struct sim_instance *in = s->inst[i];
        if (!in->dead && in->market == EBB_MARKET_SPOT && in->avail == a &&
            in->doom_at > now)
            n++;
    }
    return n;
}

/* ---- the job model ---- */

/* The work the job aims at next: the next multiple of checkpoint_every
 * (where a periodic checkpoint starts), or the end of the job. */
static double next_target(const struct sim_instance *in)
{
    double total = (double)in->work_total;
    if (in->every <= 0)
        return total;
    double every = (double)in->every;
    double t = (floor(in->work_base / every) + 1.0) * every;
    return t < total ? t : total;
}

static ebb_time_ms add_ms(ebb_time_ms t, double ms)
{
    const double cap = (double)(INT64_MAX / 4);
    if (!(ms < cap) || t > INT64_MAX / 2)
        return INT64_MAX / 2;
    return t + (ebb_time_ms)ceil(ms);
}

static ebb_time_ms job_next(const struct sim_instance *in)
{
    switch (in->phase) {
    case SIM_BOOT:
        return in->run_at;
    case SIM_WORK:
        return add_ms(in->phase_start, (next_target(in) - in->work_base) / in->speed);
    case SIM_OVERHEAD:
    case SIM_CKPT:
    case SIM_STOPPING:
        return in->phase_end;
    case SIM_IDLE:
        break;
    }
    return INT64_MAX;
}

/* Work done at `t` (the phase's own clock: no progress outside SIM_WORK). */
static double work_at(const struct sim_instance *in, ebb_time_ms t)
{
    if (in->phase != SIM_WORK || t <= in->phase_start)
        return in->work_base;
    double w = in->work_base + (double)(t - in->phase_start) * in->speed;
    double target = next_target(in);
    return w < target ? w : target;
}

/* An event of `in`: a gang's name the gang, and its notices and losses
 * the member's rank. */
static void emit(struct sim *s, struct sim_instance *in,
                 enum ebb_instance_event_kind kind, ebb_time_ms at,
                 double work, int exit_status, const char *reason)
{
    int member = in->lead->size > 1 &&
                 (kind == EBB_EVENT_NOTICE || kind == EBB_EVENT_LOST);
    struct ebb_instance_event ev = {
        .struct_size = sizeof(struct ebb_instance_event),
        .kind = kind,
        .instance_id = sim_unit_id(in),
        .token = in->token,
        .at = at,
        .deadline = kind == EBB_EVENT_NOTICE || kind == EBB_EVENT_LOST ? in->doom_at : 0,
        .exit_status = exit_status,
        .work_done = (ebb_dur_ms)floor(work),
        .reason = reason,
        .rank = member ? (int32_t)in->rank : -1,
    };
    s->host->instance_event(s->host->ctx, &ev);
}

static void job_step(struct sim *s, struct sim_instance *in, ebb_time_ms at)
{
    switch (in->phase) {
    case SIM_BOOT:
        in->phase = SIM_OVERHEAD;
        in->phase_start = at;
        in->phase_end = at + in->overhead;
        emit(s, in, EBB_EVENT_RUNNING, at, 0, 0, "instance running");
        return;
    case SIM_OVERHEAD:
        in->phase = SIM_WORK;
        in->phase_start = at;
        emit(s, in, EBB_EVENT_PROGRESS, at, in->work_base, 0, "restart overhead over");
        return;
    case SIM_WORK:
        in->work_base = next_target(in);
        in->phase_start = at;
        if (in->work_base >= (double)in->work_total) {
            in->phase = SIM_IDLE;
            emit(s, in, EBB_EVENT_EXITED, at, in->work_base, 0, "job completed");
            return;
        }
        in->phase = SIM_CKPT;
        in->phase_end = at + s->cfg->checkpoint_time;
        in->ckpt_work = (ebb_dur_ms)floor(in->work_base);
        return;
    case SIM_CKPT:
        in->phase = SIM_WORK;
        in->phase_start = at;
        emit(s, in, EBB_EVENT_CHECKPOINT, at, (double)in->ckpt_work, 0,
             "checkpoint written");
        if (!in->dead && in->phase == SIM_WORK)
            emit(s, in, EBB_EVENT_PROGRESS, at, in->work_base, 0, "after checkpoint");
        return;
    case SIM_STOPPING:
        in->phase = SIM_IDLE;
        if (in->stop_ckpt)
            emit(s, in, EBB_EVENT_CHECKPOINT, at, (double)in->ckpt_work, 0,
                 "checkpoint written on stop");
        if (!in->dead)
            emit(s, in, EBB_EVENT_EXITED, at, in->work_base, EBB_EXIT_STOPPED,
                 "job stopped on request");
        return;
    case SIM_IDLE:
        return;
    }
}

/* The simulated agent answers a notice like ebb-agent does: it has the job
 * write a checkpoint when one fits before the deadline. Nothing new is
 * saved while the job is still booting or restoring, or when a checkpoint
 * or a stop is already under way. After the checkpoint the job goes on
 * working until the instance is taken. */
static void arm(struct sim *s, struct sim_instance *in);
static void dispatch(struct sim *s, struct sim_instance *in, ebb_time_ms now);

/* A notice on any member of a gang is one for the gang's job, which runs
 * on its lead. */
static void give_notice(struct sim *s, struct sim_instance *in, ebb_time_ms now)
{
    struct sim_instance *job = in->lead;
    in->noticed = 1;
    if (!job->dead && job->phase == SIM_WORK &&
        now + s->cfg->checkpoint_time <= in->doom_at) {
        job->work_base = work_at(job, now);
        job->phase = SIM_CKPT;
        job->phase_start = now;
        job->phase_end = now + s->cfg->checkpoint_time;
        job->ckpt_work = (ebb_dur_ms)floor(job->work_base);
    }
    if (job != in)
        arm(s, job);
    emit(s, in, EBB_EVENT_NOTICE, now, work_at(job, now), 0, in->doom_reason);
}

/* A gang with a member gone runs its job no more: the others cannot go
 * on without it (what the gang does next is the engine's to say). */
static void halt_gang_job(struct sim *s, struct sim_instance *in, ebb_time_ms now)
{
    struct sim_instance *job = in->lead;
    if (job->size < 2 || job->dead || job->phase == SIM_IDLE)
        return;
    job->work_base = work_at(job, now);
    job->phase = SIM_IDLE;
    job->halted = 1;
    arm(s, job);
}

static void lose(struct sim *s, struct sim_instance *in, ebb_time_ms now)
{
    /* The gang job's own events due now come first, as on a single
     * instance: a checkpoint ending at the deadline counts. */
    if (in->lead != in && !in->lead->dispatching)
        dispatch(s, in->lead, now);
    if (in->dead)
        return; /* terminated from an event's handler */
    in->dead = 1;
    in->preempted = 1;
    in->ended_at = now;
    sim_gang_member_ended(in);
    halt_gang_job(s, in, now);
    emit(s, in, EBB_EVENT_LOST, now, work_at(in->lead, now), 0, in->doom_reason);
}

/* Handles one event due at `now`; returns 0 when none is due. */
static int step(struct sim *s, struct sim_instance *in, ebb_time_ms now)
{
    ebb_time_ms jt = job_next(in);
    if (jt <= now && jt <= in->doom_at) {
        job_step(s, in, jt);
        return 1;
    }
    if (!in->noticed && in->notice_at <= now) {
        give_notice(s, in, now);
        return 1;
    }
    if (in->doom_at <= now) {
        lose(s, in, now);
        return 1;
    }
    return 0;
}

/* Handles every event of `in` due at `now`, then arms its timer. */
static void dispatch(struct sim *s, struct sim_instance *in, ebb_time_ms now)
{
    in->dispatching = 1;
    while (!in->dead && step(s, in, now)) {
    }
    in->dispatching = 0;
    arm(s, in);
}

static void on_instance_timer(void *arg)
{
    struct sim_instance *in = arg;
    in->timer = 0;
    dispatch(in->sim, in, sim_now(in->sim));
}

static void arm(struct sim *s, struct sim_instance *in)
{
    if (in->dispatching)
        return;
    sim_instance_disarm(s, in);
    if (in->dead)
        return;
    ebb_time_ms next = job_next(in);
    if (next > in->doom_at)
        next = in->doom_at;
    if (!in->noticed && in->notice_at < next)
        next = in->notice_at;
    if (next == INT64_MAX)
        return;
    int64_t id = s->host->timer_start(s->host->ctx, next, on_instance_timer, in);
    if (id < 0) {
        s->host->log(s->host->ctx, EBB_LOG_ERROR, "%s: cannot start a timer: %s",
                     in->id, ebb_strerror((int)id));
        return;
    }
    in->timer = id;
}

/* ---- preemption planning ---- */

static void set_notice(struct sim *s, struct sim_instance *in, ebb_time_ms now)
{
    if (in->doom_at == INT64_MAX) {
        in->notice_at = INT64_MAX;
        return;
    }
    ebb_time_ms n = in->doom_at - s->cfg->notice_lead;
    if (n < in->launched_at)
        n = in->launched_at;
    in->notice_at = n > now ? n : now;
}

/* An instance whose notice was given, or whose loss is due now, keeps its
 * plan; the others are planned again from their hazard and the capacity. */
static int plan_fixed(const struct sim_instance *in, ebb_time_ms now)
{
    return in->noticed || in->doom_at <= now;
}

static void replan(struct sim *s, ssize_t a)
{
    ebb_time_ms now = sim_now(s);
    size_t live = 0;
    for (size_t i = 0; i < s->n_inst; i++) {
        struct sim_instance *in = s->inst[i];
        if (in->dead || in->market != EBB_MARKET_SPOT || in->avail != a)
            continue;
        live++;
        if (!plan_fixed(in, now)) {
            in->doom_at = in->hazard_at;
            in->doom_reason = in->hazard_at != INT64_MAX ? sim_reason_hazard : NULL;
        }
    }
    for (ebb_time_ms t = now; live > 0 && a >= 0;) {
        ebb_time_ms c = sim_market_next_capacity_change(&s->market, a, t);
        if (c == INT64_MAX)
            break;
        t = c;
        int32_t cap = sim_market_capacity(&s->market, a, c);
        if (cap < 0)
            continue;
        size_t alive = 0;
        for (size_t i = 0; i < s->n_inst; i++) {
            const struct sim_instance *in = s->inst[i];
            if (!in->dead && in->market == EBB_MARKET_SPOT && in->avail == a &&
                in->doom_at > c)
                alive++;
        }
        if (alive == 0)
            break;
        size_t excess = alive > (size_t)cap ? alive - (size_t)cap : 0;
        for (size_t i = s->n_inst; i-- > 0 && excess > 0;) {
            struct sim_instance *in = s->inst[i];
            if (in->dead || in->market != EBB_MARKET_SPOT || in->avail != a ||
                in->doom_at <= c || plan_fixed(in, now))
                continue;
            in->doom_at = c;
            in->doom_reason = sim_reason_capacity;
            excess--;
        }
    }
    for (size_t i = 0; i < s->n_inst; i++) {
        struct sim_instance *in = s->inst[i];
        if (in->dead || in->market != EBB_MARKET_SPOT || in->avail != a)
            continue;
        if (!plan_fixed(in, now))
            set_notice(s, in, now);
        arm(s, in);
    }
}

void sim_instance_start(struct sim *s, struct sim_instance *in)
{
    if (in->market == EBB_MARKET_SPOT && s->cfg->preemption_hazard > 0) {
        ebb_dur_ms life = sim_rng_exponential_ms(&s->rng, s->cfg->preemption_hazard);
        in->hazard_at = in->launched_at + life;
    }
    /* A fixed lifetime (demos, end-to-end tests): preempted for certain;
     * of a gang only its last member, so that one preemption takes one
     * node. */
    if (in->market == EBB_MARKET_SPOT && s->cfg->preempt_after > 0 &&
        in->rank + 1 == in->lead->size &&
        in->launched_at + s->cfg->preempt_after < in->hazard_at)
        in->hazard_at = in->launched_at + s->cfg->preempt_after;
    if (in->market == EBB_MARKET_SPOT && in->avail >= 0) {
        replan(s, in->avail);
        return;
    }
    in->doom_at = in->hazard_at;
    in->doom_reason = in->hazard_at != INT64_MAX ? sim_reason_hazard : NULL;
    set_notice(s, in, sim_now(s));
    arm(s, in);
}

void sim_instance_end(struct sim *s, struct sim_instance *in)
{
    if (in->dead)
        return;
    in->dead = 1;
    in->ended_at = sim_now(s);
    sim_instance_disarm(s, in);
    sim_gang_member_ended(in);
    halt_gang_job(s, in, in->ended_at);
    if (in->market == EBB_MARKET_SPOT && in->avail >= 0)
        replan(s, in->avail);
}

/* The simulated agent checkpoints at once and the job exits when the
 * checkpoint is written; a checkpoint that does not fit in the grace
 * period is not attempted and the job is killed when the grace ends. A job
 * that has not started yet exits at once without one. */
void sim_instance_stop_job(struct sim *s, struct sim_instance *in,
                           ebb_dur_ms grace)
{
    ebb_time_ms now = sim_now(s);
    if (in->dead || in->phase == SIM_IDLE || in->phase == SIM_STOPPING)
        return;
    if (grace < 0)
        grace = 0;
    in->stop_ckpt = 0;
    if (in->phase == SIM_BOOT) {
        in->phase_end = now;
    } else if (s->cfg->checkpoint_time <= grace) {
        in->work_base = work_at(in, now);
        in->stop_ckpt = 1;
        in->ckpt_work = (ebb_dur_ms)floor(in->work_base);
        in->phase_end = now + s->cfg->checkpoint_time;
    } else {
        in->work_base = work_at(in, now);
        in->phase_end = now + grace;
    }
    in->phase = SIM_STOPPING;
    in->phase_start = now;
    arm(s, in);
}
