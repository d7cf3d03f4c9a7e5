/* ebbd's schedules (docs/cron.md): runs started at cron fire times, and
 * the API methods schedule_add, schedules, schedule and schedule_remove.
 *
 * ebbd keeps every schedule in memory (parsed) and one clock timer armed
 * for the earliest next fire time. What to do with the fire times due is
 * ebb__schedule_due()'s decision; this file asks it and acts on the
 * answer: it submits the run through the engine, and records what became
 * of each fire time in the store.
 *
 * Never twice: a run's job row, its link to the schedule and fire time,
 * and the schedule's new last_fire_at are written in one transaction
 * (ebb__engine_submit_also()), and a unique index on the link refuses a
 * second run of one fire time. A skipped, missed or failed fire time is a
 * schedule_events row written with the new last_fire_at.
 *
 * Teams: a schedule's runs count against a team as a submit's job does
 * (ebb__daemon_settle_job_team), checked when it is added and again at every
 * fire, so an owner who has left the team since gets the fire refused: a
 * failed fire time, logged and shown by `ebb schedule show`, and the next
 * fire time is checked afresh.
 *
 * "The previous run is still going" asks the engine. That holds across
 * restarts too: ebbd takes its unfinished jobs back before the schedules
 * start (ebb__engine_recover(), engine_recover.c), so a run an earlier
 * ebbd left unfinished is found, and holds the next one back, like any
 * other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/list.h>
#include <ebb/units.h>

#include "base/log.h"
#include "base/str.h"
#include "daemon/daemon.h"
#include "daemon/daemon_ckpt.h"
#include "daemon/daemon_notify.h"
#include "jobs/schedule.h"
#include "store/store_schedules.h"

/* How many runs and events `schedule` shows, and how many fire times. */
#define RECENT_ROWS 20
#define NEXT_FIRES 5

struct sched {
    struct ebb_list node; /* in the schedules' list */
    char id[32];
    struct ebb__schedule s;
    char *yaml;              /* the file as added; each run re-reads it */
    char *workdir;           /* "" unknown */
    int64_t owner_uid;
    ebb_time_ms since;       /* every fire time up to here is dealt with */
    int has_next;
    ebb_time_ms next_fire;
    char last_job[48];       /* the job of its latest run; "" none */
};

struct ebb__daemon_schedules {
    struct ebb__daemon *d;
    struct ebb_list list;
    struct ebb__timer timer;
    /* The first timer run after start deals with fire times that passed
     * while ebbd was down. */
    int catching_up;
    uint64_t id_seq;
};

static void sched_free(struct sched *sc)
{
    ebb__schedule_free(&sc->s);
    free(sc->yaml);
    free(sc->workdir);
    free(sc);
}

/* Takes ownership of *s (zeroed on return, also on failure). */
static struct sched *sched_new(const char *id, struct ebb__schedule *s,
                               const char *yaml, const char *workdir,
                               int64_t owner_uid)
{
    struct sched *sc = calloc(1, sizeof(*sc));
    if (sc == NULL) {
        ebb__schedule_free(s);
        return NULL;
    }
    sc->s = *s;
    *s = (struct ebb__schedule){0};
    sc->yaml = strdup(yaml);
    sc->workdir = strdup(workdir);
    if (sc->yaml == NULL || sc->workdir == NULL) {
        sched_free(sc);
        return NULL;
    }
    snprintf(sc->id, sizeof(sc->id), "%s", id);
    sc->owner_uid = owner_uid;
    return sc;
}

static struct sched *sched_by_id(struct ebb__daemon_schedules *sch,
                                 const char *id)
{
    struct ebb_list *pos;
    ebb_list_foreach(pos, &sch->list) {
        struct sched *sc = ebb_list_entry(pos, struct sched, node);
        if (strcmp(sc->id, id) == 0)
            return sc;
    }
    return NULL;
}

static void rearm(struct ebb__daemon_schedules *sch)
{
    ebb_time_ms due = INT64_MAX;
    struct ebb_list *pos;
    ebb_list_foreach(pos, &sch->list) {
        const struct sched *sc = ebb_list_entry(pos, struct sched, node);
        if (sc->has_next && sc->next_fire < due)
            due = sc->next_fire;
    }
    struct ebb__clock *clock = &sch->d->clock;
    if (sch->catching_up)
        due = ebb__clock_now(clock);
    if (due == INT64_MAX)
        ebb__timer_stop(clock, &sch->timer);
    else if (ebb__timer_start(clock, &sch->timer, due) != 0)
        ebb__error("schedules: cannot arm the timer; no run starts until "
                   "ebbd restarts");
}

static int run_going(struct ebb__daemon *d, const struct sched *sc)
{
    struct ebb__job *job =
        sc->last_job[0] ? ebb__engine_job(d->engine, sc->last_job) : NULL;
    return job != NULL && !ebb__job_state_terminal(ebb__engine_job_state(job));
}

/* What one decision leaves in the store, written in one transaction: the
 * events of the fire times dealt with and the new last_fire_at. */
struct outcome {
    struct ebb__daemon *d;
    struct sched *sc;
    const struct ebb__schedule_decision *dec;
    ebb_time_ms now;
    const char *failure; /* the run could not start: why */
};

/* A fire time's event for notifications (docs/notify.md), once per
 * schedule, fire time and kind: its key names all three. */
static int note_fire(const struct outcome *o, const char *type, const char *kind,
                     ebb_time_ms fire, const char *job_id, const char *why)
{
    char key[96];
    snprintf(key, sizeof(key), "schedule:%s:%s:%lld", o->sc->id, kind,
             (long long)fire);
    struct ebb__engine_note n = {
        .type = type, .key = key, .spec = &o->sc->s.job, .job_id = job_id,
        .reason = why, .at = o->now,
    };
    return ebb__daemon_notify_event(o->d, &n);
}

static int write_outcome(struct ebb__store *s, const struct outcome *o,
                         const char *job_id)
{
    const struct ebb__schedule_decision *dec = o->dec;
    const char *id = o->sc->id;
    char a[40], b[40], why[512];
    int rc = 0;
    if (dec->has_missed) {
        snprintf(why, sizeof(why), "fire times %s to %s passed while ebbd was "
                 "not running and get no run of their own (missed: %s)",
                 ebb_format_time(dec->missed_first, a, sizeof(a)),
                 ebb_format_time(dec->missed_last, b, sizeof(b)),
                 ebb__missed_name(o->sc->s.missed));
        rc = ebb__store_schedule_event(s, id, o->now, dec->missed_first,
                                       "missed", NULL, why);
        if (rc == 0)
            rc = note_fire(o, "schedule.missed", "missed", dec->missed_first,
                           NULL, why);
    }
    if (rc == 0 && dec->skip != EBB__SKIP_NONE) {
        snprintf(why, sizeof(why), "%s (job %s)",
                 ebb__skip_reason_text(dec->skip), o->sc->last_job);
        rc = ebb__store_schedule_event(s, id, o->now, dec->skipped_fire,
                                       "skipped", NULL, why);
    }
    if (rc == 0 && job_id != NULL) {
        snprintf(why, sizeof(why), "released %s, due %s",
                 ebb_format_time(dec->release, a, sizeof(a)),
                 ebb_format_time(dec->deadline, b, sizeof(b)));
        rc = ebb__store_schedule_link(s, job_id, id, dec->fire);
        if (rc == 0)
            rc = ebb__store_schedule_event(s, id, o->now, dec->fire, "started",
                                           job_id, why);
        if (rc == 0)
            rc = note_fire(o, "schedule.fired", "fired", dec->fire, job_id, why);
    }
    if (rc == 0 && o->failure != NULL)
        rc = ebb__store_schedule_event(s, id, o->now, dec->fire, "failed",
                                       NULL, o->failure);
    if (rc == 0 && o->failure != NULL)
        rc = note_fire(o, "schedule.failed", "failed", dec->fire, NULL,
                       o->failure);
    if (rc == 0)
        rc = ebb__store_schedule_fired(s, id, dec->last_fire,
                                       dec->has_next ? dec->next_fire : 0);
    return rc;
}

/* The engine calls this inside the transaction that stores the run. */
static int write_started(void *arg, struct ebb__store *s, const char *job_id)
{
    return write_outcome(s, arg, job_id);
}

static void write_alone(struct ebb__daemon *d, const struct outcome *o)
{
    struct ebb__store *s = d->store;
    int rc = ebb__store_begin(s);
    if (rc == 0)
        rc = write_outcome(s, o, NULL);
    if (rc == 0)
        rc = ebb__store_commit(s);
    if (rc != 0) {
        ebb__store_rollback(s);
        ebb__error("schedule %s: cannot record its fire times: %s",
                   o->sc->s.name, ebb__store_errmsg(s));
    }
}

/* The team a schedule's runs count against today, for who may see it:
 * the one its job names, or its owner's only team (NULL: none). */
static const char *sched_team(struct ebb__daemon *d, const struct sched *sc)
{
    const char *team = NULL;
    struct ebb_diag ignored = {{0}};
    if (sc == NULL)
        return NULL;
    if (sc->s.job.team != NULL)
        return sc->s.job.team;
    ebb__daemon_settle_team(d, sc->owner_uid, NULL, 0, NULL, &team, &ignored);
    return team;
}

/* Submits the run of dec->fire: the job from a fresh read of the file
 * (the engine takes the spec), due at dec->deadline. Returns 0 or an
 * EBB_E* code with `why` filled. */
static int submit_run(struct ebb__daemon *d, struct outcome *o,
                      struct ebb__job **job, struct ebb_diag *why)
{
    struct sched *sc = o->sc;
    struct ebb__schedule fresh;
    int rc = ebb__schedule_load_buffer(sc->s.file, sc->yaml, strlen(sc->yaml),
                                       &fresh, why);
    if (rc == 0)
        rc = ebb__daemon_settle_job_team(d, sc->owner_uid, &fresh.job, why);
    /* Checked again at each fire: the owner may no longer be an admin,
     * ebb.yaml's stores may have changed. */
    char run_as_why[512];
    if (rc == 0) {
        rc = ebb__daemon_check_run_as(d, (uid_t)sc->owner_uid, &fresh.job,
                                      run_as_why, sizeof(run_as_why));
        if (rc == 0)
            rc = ebb__daemon_ckpt_spec_check(d, &fresh.job, run_as_why,
                                             sizeof(run_as_why));
        if (rc != 0)
            ebb_diag_set(why, NULL, 0, "%s", run_as_why);
    }
    if (rc == 0) {
        fresh.job.deadline_is_relative = 0;
        fresh.job.deadline_at = o->dec->deadline;
        struct ebb__submit_also also = {write_started, o};
        rc = ebb__engine_submit_also(d->engine, &fresh.job, sc->yaml, sc->owner_uid,
                                     sc->workdir[0] == '/' ? sc->workdir : NULL,
                                     &also, job, why);
    }
    ebb__schedule_free(&fresh);
    if (rc != 0 && why->msg[0] == '\0')
        ebb_diag_set(why, NULL, 0, "%s", ebb_strerror(rc));
    return rc;
}

static void log_decision(const struct sched *sc,
                         const struct ebb__schedule_decision *dec)
{
    char a[40], b[40];
    if (dec->has_missed)
        ebb__info("schedule %s: fire times %s to %s passed while ebbd was not "
                  "running (missed: %s)", sc->s.name,
                  ebb_format_time(dec->missed_first, a, sizeof(a)),
                  ebb_format_time(dec->missed_last, b, sizeof(b)),
                  ebb__missed_name(sc->s.missed));
    if (dec->skip != EBB__SKIP_NONE)
        ebb__warn("schedule %s: fire time %s skipped: %s (job %s)", sc->s.name,
                  ebb_format_time(dec->skipped_fire, a, sizeof(a)),
                  ebb__skip_reason_text(dec->skip), sc->last_job);
}

/* Deals with the fire times of `sc` due at `at` (the decision's time; see
 * on_timer); `now` is the clock's. */
static void tick(struct ebb__daemon_schedules *sch, struct sched *sc,
                 ebb_time_ms at, ebb_time_ms now)
{
    struct ebb__daemon *d = sch->d;
    struct ebb__schedule_state st = {.since = sc->since,
                                     .running = run_going(d, sc)};
    struct ebb__schedule_decision dec;
    ebb__schedule_due(&sc->s, &st, at, &dec);
    struct outcome o = {.d = d, .sc = sc, .dec = &dec, .now = now};
    log_decision(sc, &dec);
    char a[40];
    struct ebb_diag why = {{0}};
    if (dec.start) {
        struct ebb__job *job = NULL;
        if (submit_run(d, &o, &job, &why) == 0) {
            snprintf(sc->last_job, sizeof(sc->last_job), "%s", ebb__engine_job_id(job));
            ebb__info("schedule %s: fire time %s started job %s", sc->s.name,
                      ebb_format_time(dec.fire, a, sizeof(a)), ebb__engine_job_id(job));
        } else {
            ebb__error("schedule %s: fire time %s: the run could not start: %s",
                       sc->s.name, ebb_format_time(dec.fire, a, sizeof(a)),
                       why.msg);
            o.failure = why.msg;
            write_alone(d, &o);
        }
    } else if (dec.last_fire != sc->since || dec.has_next != sc->has_next ||
               dec.next_fire != sc->next_fire) {
        write_alone(d, &o);
    }
    /* Also when the store failed: the unique index, not this, is what
     * keeps a fire time from starting twice. */
    sc->since = dec.last_fire;
    sc->has_next = dec.has_next;
    sc->next_fire = dec.next_fire;
}

/* A timer that runs late because the loop was busy is not ebbd being
 * down: a fire time noticed within a wall-clock minute is decided as of
 * itself, so an accelerated clock (where a minute of clock time may be
 * milliseconds) does not turn it into a missed one. Catching up after a
 * start decides as of now. */
static void on_timer(struct ebb__timer *t)
{
    struct ebb__daemon_schedules *sch = t->data;
    struct ebb__clock *clock = &sch->d->clock;
    ebb_time_ms now = ebb__clock_now(clock);
    ebb_dur_ms late_ok = ebb__clock_from_real_ms(clock, EBB__SCHEDULE_LATE_OK);
    int catching_up = sch->catching_up;
    sch->catching_up = 0;
    struct ebb_list *pos;
    ebb_list_foreach(pos, &sch->list) {
        struct sched *sc = ebb_list_entry(pos, struct sched, node);
        if (catching_up)
            tick(sch, sc, now, now);
        else if (sc->has_next && sc->next_fire <= now)
            tick(sch, sc, now - sc->next_fire <= late_ok ? sc->next_fire : now,
                 now);
    }
    rearm(sch);
}

/* ---- start and stop ---------------------------------------------------- */

static int load_one(void *arg, const struct ebb__schedule_row *r)
{
    struct ebb__daemon_schedules *sch = arg;
    struct ebb__schedule s;
    struct ebb_diag diag = {{0}};
    int rc = ebb__schedule_load_buffer(r->file, r->yaml, strlen(r->yaml), &s,
                                       &diag);
    if (rc == EBB_ENOMEM)
        return rc;
    if (rc != 0) {
        /* E.g. its time zone's file is gone: the others still run. */
        ebb__error("schedule %s (%s) does not run: %s (fix it, then remove "
                   "it and add it again)", r->name, r->id, diag.msg);
        return 0;
    }
    struct sched *sc = sched_new(r->id, &s, r->yaml, r->workdir, r->owner_uid);
    if (sc == NULL)
        return EBB_ENOMEM;
    sc->since = r->last_fire_at ? r->last_fire_at : r->created_at;
    snprintf(sc->last_job, sizeof(sc->last_job), "%s", r->last_job_id);
    ebb_list_insert_head(&sch->list, &sc->node);
    return 0;
}

int ebb__daemon_schedules_start(struct ebb__daemon *d)
{
    struct ebb__daemon_schedules *sch = calloc(1, sizeof(*sch));
    if (sch == NULL) {
        ebb__error("out of memory loading schedules");
        return 1;
    }
    sch->d = d;
    ebb_list_init(&sch->list);
    d->schedules = sch;
    ebb__timer_init(&sch->timer, on_timer, sch);
    int rc = ebb__store_schedules_each(d->store, load_one, sch);
    if (rc != 0) {
        ebb__error("cannot load schedules: %s", rc == EBB_ENOMEM
                   ? "out of memory" : ebb__store_errmsg(d->store));
        return 1;
    }
    size_t n = 0;
    struct ebb_list *pos;
    ebb_list_foreach(pos, &sch->list)
        n++;
    if (n > 0)
        ebb__info("%zu schedules loaded", n);
    sch->catching_up = 1;
    rearm(sch);
    return 0;
}

void ebb__daemon_schedules_stop(struct ebb__daemon *d)
{
    struct ebb__daemon_schedules *sch = d->schedules;
    if (sch == NULL)
        return;
    ebb__timer_stop(&d->clock, &sch->timer);
    while (!ebb_list_empty(&sch->list)) {
        struct sched *sc =
            ebb_list_entry(ebb_list_first(&sch->list), struct sched, node);
        ebb_list_remove(&sc->node);
        sched_free(sc);
    }
    free(sch);
    d->schedules = NULL;
}

/* ---- API methods ------------------------------------------------------- */

static const char *param_string(struct ebb__api_call *call, const char *key)
{
    const char *v = json_string_value(json_object_get(call->params, key));
    if (v == NULL)
        ebb__api_fail(call, "bad_request", "\"%s\" (a string) is required", key);
    return v;
}

static void fail_store(struct ebb__daemon *d, struct ebb__api_call *call)
{
    ebb__api_fail(call, "internal", "cannot read or write the store: %s",
                  ebb__store_errmsg(d->store));
}

static void make_id(struct ebb__daemon_schedules *sch, const char *name,
                    ebb_time_ms at, char *out, size_t len)
{
    ebb__short_id("s", name, at, ++sch->id_seq, out, len);
}

/* Stores a new schedule under a fresh id (another try when the id is
 * taken). Returns 0, EBB_EEXISTS when the name is taken, or an EBB_E*
 * code. */
static int insert(struct ebb__daemon_schedules *sch, struct ebb__schedule_row *r,
                  char *id, size_t idlen)
{
    struct ebb__store *store = sch->d->store;
    char other[32];
    int rc = ebb__store_schedule_find(store, r->name, other, sizeof(other), NULL);
    if (rc != EBB_ENOTFOUND)
        return rc == 0 ? EBB_EEXISTS : rc;
    for (int tries = 0; tries < 4; tries++) {
        make_id(sch, r->name, r->created_at, id, idlen);
        r->id = id;
        rc = ebb__store_schedule_insert(store, r);
        if (rc != EBB_EEXISTS)
            break;
    }
    return rc;
}

void ebb__api_schedule_add(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    struct ebb__daemon_schedules *sch = d->schedules;
    const char *file = param_string(call, "file");
    const char *yaml = file ? param_string(call, "yaml") : NULL;
    if (yaml == NULL)
        return;
    const char *workdir = json_string_value(json_object_get(call->params, "workdir"));
    struct ebb__schedule s;
    struct ebb_diag diag = {{0}};
    int rc = ebb__schedule_load_buffer(file, yaml, strlen(yaml), &s, &diag);
    if (rc != 0) {
        ebb__api_fail(call, rc == EBB_ECONFIG ? "invalid" : "internal", "%s",
                      diag.msg);
        return;
    }
    rc = ebb__daemon_settle_job_team(d, (int64_t)call->uid, &s.job, &diag);
    if (rc != 0) {
        ebb__warn("refused schedule %s to uid %ld: %s", s.name, (long)call->uid,
                  diag.msg);
        ebb__api_fail(call, ebb__daemon_team_code(rc), "%s", diag.msg);
        ebb__schedule_free(&s);
        return;
    }
    char ckpt_why[512];
    if (ebb__daemon_ckpt_spec_check(d, &s.job, ckpt_why, sizeof(ckpt_why)) != 0) {
        ebb__api_fail(call, "invalid", "%s", ckpt_why);
        ebb__schedule_free(&s);
        return;
    }
    if (s.job.policy != NULL && ebb__registry_policy(&d->registry, s.job.policy) == NULL) {
        ebb__api_fail(call, "invalid", "%s:%d: job.policy: no policy named \"%s\" "
                      "is installed (see ebb policies)", s.job.file,
                      s.job.policy_line ? s.job.policy_line : s.job.line,
                      s.job.policy);
        ebb__schedule_free(&s);
        return;
    }
    char why[512];
    rc = ebb__daemon_check_run_as(d, call->uid, &s.job, why, sizeof(why));
    if (rc != 0) {
        ebb__api_fail(call, rc == EBB_EPERM ? "forbidden" : "invalid", "%s: %s",
                      file, why);
        ebb__schedule_free(&s);
        return;
    }
    ebb_time_ms now = ebb__clock_now(&d->clock);
    ebb_time_ms next = 0;
    ebb__cron_next(&s.cron, s.tz, now, &next);
    struct ebb__schedule_row row = {
        .name = s.name, .cron = s.cron_text, .timezone = s.timezone,
        .yaml = yaml, .file = file, .workdir = workdir ? workdir : "",
        .missed = ebb__missed_name(s.missed),
        .currency = s.has_budget ? s.budget.currency : "USD",
        .owner_uid = (int64_t)call->uid, .window = s.window,
        .budget = s.has_budget ? s.budget.amount : -1,
        .created_at = now, .next_fire_at = next,
    };
    char id[32];
    rc = insert(sch, &row, id, sizeof(id));
    if (rc == EBB_EEXISTS) {
        ebb__api_fail(call, "conflict", "%s:%d: a schedule named %s exists "
                      "already; remove it first (ebb schedule remove %s)",
                      file, s.line, s.name, s.name);
        ebb__schedule_free(&s);
        return;
    }
    if (rc != 0) {
        ebb__schedule_free(&s);
        fail_store(d, call);
        return;
    }
    struct sched *sc = sched_new(id, &s, yaml, row.workdir, row.owner_uid);
    if (sc == NULL) {
        /* Stored: it runs from the next start of ebbd. */
        ebb__api_fail(call, "internal", "out of memory; schedule %s runs "
                      "after ebbd restarts", id);
        return;
    }
    sc->since = now;
    sc->has_next = next != 0;
    sc->next_fire = next;
    ebb_list_insert_head(&sch->list, &sc->node);
    rearm(sch);
    char at[40];
    ebb__info("schedule %s (%s) added by uid %ld from %s; next fire time %s",
              sc->s.name, id, (long)call->uid, file,
              next ? ebb_format_time(next, at, sizeof(at)) : "none");
    ebb__api_reply_after_commit(call, json_pack("{s:s,s:s,s:I}", "id", id, "name", sc->s.name,
                                   "next_fire_at", (json_int_t)next));
}

/* Adds "team" to a schedule's answer `o`, and cuts it down to the
 * summary unless the caller may see it in full. */
static void team_and_view(struct ebb__daemon *d, struct ebb__api_call *call,
                          json_t *o)
{
    const char *id = json_string_value(json_object_get(o, "id"));
    const struct sched *sc = id != NULL ? sched_by_id(d->schedules, id) : NULL;
    const char *team = sched_team(d, sc);
    json_object_set_new(o, "team", team ? json_string(team) : json_null());
    int64_t owner = json_integer_value(json_object_get(o, "owner_uid"));
    if (!ebb__daemon_may_see(d, call->uid, owner, team))
        ebb__daemon_redact_schedule(o);
}

void ebb__api_schedules(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    json_t *rows;
    if (ebb__store_schedules_json(d->store, &rows) != 0) {
        fail_store(d, call);
        return;
    }
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
        team_and_view(d, call, row);
    ebb__api_reply(call, json_pack("{s:o}", "schedules", rows));
}

/* Looks up params.id (an id or a name); answers and returns 0 when there
 * is none. */
static int find(struct ebb__daemon *d, struct ebb__api_call *call, char *id,
                size_t idlen, int64_t *owner)
{
    const char *key = param_string(call, "id");
    if (key == NULL)
        return 0;
    int rc = ebb__store_schedule_find(d->store, key, id, idlen, owner);
    if (rc == EBB_ENOTFOUND)
        ebb__api_fail(call, "not_found", "no schedule %s (see ebb schedule "
                      "list)", key);
    else if (rc != 0)
        fail_store(d, call);
    return rc == 0;
}

void ebb__api_schedule(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    char id[32];
    json_t *o;
    if (!find(d, call, id, sizeof(id), NULL))
        return;
    if (ebb__store_schedule_json(d->store, id, RECENT_ROWS, &o) != 0) {
        fail_store(d, call);
        return;
    }
    json_t *fires = json_array();
    struct sched *sc = sched_by_id(d->schedules, id);
    ebb_time_ms now = ebb__clock_now(&d->clock);
    ebb_time_ms t = sc && sc->since > now ? sc->since : now;
    for (int i = 0; sc != NULL && i < NEXT_FIRES; i++) {
        if (ebb__cron_next(&sc->s.cron, sc->s.tz, t, &t) != 0)
            break;
        json_array_append_new(fires, json_integer(t));
    }
    json_object_set_new(o, "next_fires", fires);
    json_object_set_new(o, "running", json_boolean(sc && run_going(d, sc)));
    json_object_set_new(o, "loaded", json_boolean(sc != NULL));
    team_and_view(d, call, o);
    ebb__api_reply(call, o);
}

void ebb__api_schedule_remove(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    struct ebb__daemon_schedules *sch = d->schedules;
    char id[32];
    int64_t owner = -1;
    if (!find(d, call, id, sizeof(id), &owner))
        return;
    if (owner != (int64_t)call->uid && !ebb__daemon_is_admin(d, call->uid)) {
        ebb__warn("refused removal of schedule %s to uid %ld: not its owner "
                  "(uid %lld)", id, (long)call->uid, (long long)owner);
        ebb__api_fail(call, "forbidden", "schedule %s belongs to uid %lld; "
                      "only its owner or an admin (admins: in ebb.yaml) may "
                      "remove it", id, (long long)owner);
        return;
    }
    if (ebb__store_schedule_remove(d->store, id) != 0) {
        fail_store(d, call);
        return;
    }
    struct sched *gone = sched_by_id(sch, id);
    if (gone != NULL) {
        ebb_list_remove(&gone->node);
        sched_free(gone);
    }
    rearm(sch);
    ebb__info("schedule %s removed by uid %ld; runs already started go on", id,
              (long)call->uid);
    ebb__api_reply_after_commit(call, json_pack("{s:s,s:b}", "id", id, "removed", 1));
}
