/* The API methods about jobs: submit, jobs, job, cancel, logs.
 *
 * Who may do what (daemon_access.c): anyone who can reach the socket may
 * submit and list; a job's owner, an admin of its team, root, ebbd's own
 * user or a configured admin see it in full, everyone else its summary;
 * only the owner or an admin may see its logs or cancel it (a refused
 * request says why). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/daemon_ckpt.h"
#include "jobs/jobspec.h"
#include "market/billing.h"
#include "market/speed_est.h"
#include "report/plan.h"
#include "store/store_read.h"
#include "store/store_workdir.h"

/* The largest chunk of a log one `logs` call returns, and the largest
 * offset a call may ask for (1 TiB; offset plus a chunk stays far inside
 * off_t and JSON's exact integers). */
#define LOG_CHUNK (256 * 1024)
#define LOG_OFFSET_MAX ((json_int_t)1 << 40)

/* A job counts against its team's budget: the shared rule
 * (ebb__daemon_settle_job_team) says which, or answers why not and
 * returns 0. */
static int settle_team(struct ebb__daemon *d, struct ebb__api_call *call,
                       struct ebb__job_spec *spec)
{
    struct ebb_diag why = {{0}};
    int rc = ebb__daemon_settle_job_team(d, (int64_t)call->uid, spec, &why);
    if (rc != 0)
        ebb__api_fail(call, ebb__daemon_team_code(rc), "%s", why.msg);
    return rc == 0;
}

/* Answers and returns 0 unless the caller may act on job `id`. */
static int may_touch(struct ebb__daemon *d, struct ebb__api_call *call,
                     const char *id, const char *what)
{
    int64_t owner = -1;
    int rc = ebb__store_job_owner(d->store, id, &owner);
    if (rc == EBB_ENOTFOUND) {
        ebb__api_fail(call, "not_found", "no job %s (see ebb jobs --all)", id);
        return 0;
    }
    if (rc != 0) {
        ebb__api_fail(call, "internal", "cannot read the store: %s",
                      ebb__store_errmsg(d->store));
        return 0;
    }
    if (owner == (int64_t)call->uid || ebb__daemon_is_admin(d, call->uid))
        return 1;
    ebb__warn("refused %s of job %s to uid %ld: not its owner (uid %lld)", what,
              id, (long)call->uid, (long long)owner);
    ebb__api_fail(call, "forbidden", "job %s belongs to uid %lld; only its "
                  "owner or an admin (admins: in ebb.yaml) may %s it", id,
                  (long long)owner, what);
    return 0;
}

static const char *param_string(struct ebb__api_call *call, const char *key)
{
    const char *v = json_string_value(json_object_get(call->params, key));
    if (v == NULL)
        ebb__api_fail(call, "bad_request", "\"%s\" (a string) is required", key);
    return v;
}

static int write_job_workdir(void *arg, struct ebb__store *s, const char *job_id)
{
    return ebb__store_job_workdir_put(s, job_id, arg);
}

/* The rest of a submission once every check has passed: warnings, the
 * packed workdir, the engine, the answer. `spec` stays the caller's. */
static void submit_accepted(struct ebb__daemon *d, struct ebb__api_call *call,
                            struct ebb__job_spec *spec)
{
    const char *file = json_string_value(json_object_get(call->params, "file"));
    const char *yaml = json_string_value(json_object_get(call->params, "yaml"));
    const char *workdir = json_string_value(json_object_get(call->params, "workdir"));
    json_t *warnings = json_array();
    int bad = warnings == NULL || ebb__daemon_spot_warning(d, spec, warnings) != 0;
    if (bad)
        ebb__api_fail(call, "internal", "out of memory");
    struct ebb__job_workdir stored;
    if (bad ||
        ebb__daemon_workdir_submit(d, call, spec, workdir, warnings, &stored) != 0) {
        json_decref(warnings);
        return;
    }
    /* The job's row in job_workdirs commits with the job or not at all. */
    struct ebb__submit_also also = {.write = write_job_workdir, .arg = &stored};
    struct ebb__job *job = NULL;
    struct ebb_diag diag = {{0}};
    int rc = ebb__engine_submit_also(d->engine, spec, yaml, (int64_t)call->uid,
                                     workdir != NULL && workdir[0] == '/' ? workdir : NULL,
                                     stored.store[0] != '\0' ? &also : NULL, &job, &diag);
    if (rc != 0) {
        json_decref(warnings);
        ebb__api_fail(call, rc == EBB_EINVAL ? "invalid" : "internal", "%s",
                      diag.msg[0] ? diag.msg : ebb_strerror(rc));
        return;
    }
    const char *job_id = ebb__engine_job_id(job);
    ebb__info("job %s submitted by uid %ld from %s", job_id, (long)call->uid, file);
    ebb__api_reply_after_commit(call, json_pack("{s:s,s:s,s:o}", "id", job_id, "state",
                                   ebb__job_state_name(ebb__engine_job_state(job)),
                                   "warnings", warnings));
}

/* A team's `admission: p90` (docs/budgets.md "Admission"): the quote
 * against what is left of the team's cap this month (spent and what its
 * running jobs committed), then the submission goes on or is refused
 * with the quote in the message. */
static void admission_done(struct ebb__daemon *d, struct ebb__api_call *call,
                           struct ebb__job_spec *spec, json_t *quote,
                           const char *code, const char *msg, void *arg)
{
    (void)arg;
    const char *file = json_string_value(json_object_get(call->params, "file"));
    const struct ebb__team *t = ebb__config_team(d->config, spec->team);
    if (quote == NULL || t == NULL) {
        ebb__api_fail(call, quote == NULL ? code : "internal", "%s: team %s admits "
                      "jobs by their quote (teams.%s.admission: p90), and none "
                      "could be made: %s", file, spec->team, spec->team,
                      quote == NULL ? msg : "the team is gone");
        return;
    }
    struct ebb__budget_usage u;
    if (ebb__engine_team_budget(d->engine, t, ebb__clock_now(&d->clock), &u) != 0 ||
        !u.has_cap) {
        ebb__api_fail(call, "internal", "%s: team %s's budget cannot be read", file,
                      t->name);
        return;
    }
    const json_t *c = json_object_get(quote, "cost_usd");
    double p10 = json_number_value(json_object_get(c, "p10"));
    double p50 = json_number_value(json_object_get(c, "p50"));
    double p90 = json_number_value(json_object_get(c, "p90"));
    ebb_micros left = u.cap - u.spent - u.committed;
    if (left < 0)
        left = 0;
    if (p90 * EBB_MICROS_PER_UNIT > (double)left) {
        ebb__info("refused a job from %s for team %s: p90 cost %.2f USD, %.2f USD "
                  "left", file, t->name, p90, (double)left / EBB_MICROS_PER_UNIT);
        ebb__api_fail(call, "invalid", "%s: team %s admits a job only when its p90 "
                      "cost fits what is left of the team's budget (teams.%s."
                      "admission: p90): its quote is %.2f / %.2f / %.2f USD "
                      "(p10 / p50 / p90 of %lld samples), and %.2f USD of the "
                      "team's %.2f USD this month is left (spent %.2f, committed "
                      "by running jobs %.2f)", file, t->name, t->name, p10, p50,
                      p90, (long long)json_integer_value(json_object_get(quote, "samples")),
                      (double)left / EBB_MICROS_PER_UNIT,
                      (double)u.cap / EBB_MICROS_PER_UNIT,
                      (double)u.spent / EBB_MICROS_PER_UNIT,
                      (double)u.committed / EBB_MICROS_PER_UNIT);
        return;
    }
    submit_accepted(d, call, spec);
}

/* The samples an admission quote takes: ebb plan's default. */
#define ADMISSION_SAMPLES EBB__PLAN_SAMPLES_DEFAULT

void ebb__api_submit(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    const char *file = param_string(call, "file");
    const char *yaml = file ? param_string(call, "yaml") : NULL;
    if (yaml == NULL)
        return;
    struct ebb__job_spec spec;
    struct ebb_diag diag = {{0}};
    int rc = ebb__jobspec_load_buffer(file, yaml, strlen(yaml), &spec, &diag);
    if (rc != 0) {
        ebb__api_fail(call, "invalid", "%s", diag.msg);
        return;
    }
    char why[512];
    rc = ebb__daemon_check_run_as(d, call->uid, &spec, why, sizeof(why));
    if (rc != 0) {
        ebb__api_fail(call, rc == EBB_EPERM ? "forbidden" : "invalid", "%s: %s",
                      file, why);
        ebb__jobspec_free(&spec);
        return;
    }
    if (!settle_team(d, call, &spec)) {
        ebb__jobspec_free(&spec);
        return;
    }
    struct ebb_diag why_notify = {{0}};
    if (ebb__config_notify_check(d->config, file, &spec.notify, &why_notify) != 0) {
        ebb__api_fail(call, "invalid", "%s", why_notify.msg);
        ebb__jobspec_free(&spec);
        return;
    }
    if (ebb__daemon_ckpt_spec_check(d, &spec, why, sizeof(why)) != 0) {
        ebb__api_fail(call, "invalid", "%s", why);
        ebb__jobspec_free(&spec);
        return;
    }
    const struct ebb__team *t = spec.team ? ebb__config_team(d->config, spec.team)
                                          : NULL;
    if (t != NULL && t->admission_p90) {
        /* The quote takes seconds: it runs off the loop, and the
         * submission goes on when it is back (the spec goes with it). */
        ebb__daemon_quote(d, call, &spec, ADMISSION_SAMPLES, 1, admission_done, NULL);
        return;
    }
    submit_accepted(d, call, &spec);
    ebb__jobspec_free(&spec);
}

/* Whether the caller sees job row `job` (owner_uid, team) in full. */
static int may_see_job(struct ebb__daemon *d, struct ebb__api_call *call,
                       json_t *job)
{
    return ebb__daemon_may_see(
        d, call->uid, json_integer_value(json_object_get(job, "owner_uid")),
        json_string_value(json_object_get(job, "team")));
}

/* Why the job in row `row` waits, from the engine (null when it does not
 * wait). Added before a row is redacted, which drops it: a reason may
 * name instances, like the job's events. */
static void add_waiting_reason(struct ebb__daemon *d, json_t *row)
{
    const char *id = json_string_value(json_object_get(row, "id"));
    struct ebb__job *job = id ? ebb__engine_job(d->engine, id) : NULL;
    struct ebb__job_info info = {0};
    if (job != NULL)
        ebb__engine_job_info(job, &info);
    json_object_set_new(row, "waiting_reason", info.waiting_reason
                                                   ? json_string(info.waiting_reason)
                                                   : json_null());
}

void ebb__api_jobs(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    int all = json_is_true(json_object_get(call->params, "all"));
    json_t *rows;
    if (ebb__store_jobs_json(d->store, all, &rows) != 0) {
        ebb__api_fail(call, "internal", "cannot read the store: %s",
                      ebb__store_errmsg(d->store));
        return;
    }
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        add_waiting_reason(d, row);
        if (!may_see_job(d, call, row))
            ebb__daemon_redact_job(row);
    }
    ebb__api_reply(call, json_pack("{s:o}", "jobs", rows));
}

/* A gang's nodes, rank order (docs/gangs.md). */
static json_t *nodes_json(const struct ebb__job *job, unsigned n)
{
    json_t *arr = json_array();
    for (unsigned r = 0; arr != NULL && r < n; r++) {
        struct ebb__node_info ni;
        char id[256];
        if (ebb__engine_job_node(job, r, &ni, id, sizeof(id)) != 0)
            continue;
        json_array_append_new(arr, json_pack(
            "{s:I,s:s,s:s,s:i,s:s,s:s,s:s,s:I,s:b,s:b}", "rank", (json_int_t)r,
            "instance_id", ni.instance_id, "addr", ni.addr, "port", ni.port,
            "gpu_model", ni.gpu_model, "driver_version", ni.driver,
            "cuda_version", ni.cuda, "link_mbps", (json_int_t)ni.link_mbps,
            "started", ni.started, "exited", ni.exited));
    }
    return arr;
}

/* The GPU guard's fields of `current` (docs/agent.md "Stall guard"). */
static void gpu_guard_json(struct ebb__job *job, json_t *cur)
{
    struct ebb__job_info ji;
    ebb__engine_job_info(job, &ji);
    unsigned reports;
    int latest;
    ebb_dur_ms window = ebb__engine_gpu_window(job, &reports, &latest);
    const char *guard = window <= 0  ? "off: the job's spec sets no min_gpu_util"
                        : reports == 0 ? "off: no GPU utilisation reported on this instance "
                                         "yet (no nvidia-smi there, or in its restart "
                                         "overhead)"
                                       : "on";
    json_object_set_new(cur, "gpu_guard", json_string(guard));
    json_object_set_new(cur, "gpu_window_ms", window > 0 ? json_integer(window) : json_null());
    json_object_set_new(cur, "min_gpu_util", window > 0 ? json_integer(ji.spec->min_gpu_util)
                                                        : json_null());
    json_object_set_new(cur, "gpu_util", reports > 0 ? json_integer(latest) : json_null());
}

/* Where the job runs now, from the engine (the store has the history),
 * with what the instance has cost so far: the ledger bills it only when
 * it ends, and a running job is not free meanwhile. */
static json_t *current_json(struct ebb__daemon *d, const char *id)
{
    struct ebb__job *job = ebb__engine_job(d->engine, id);
    struct ebb__attempt_info a;
    if (job == NULL || ebb__engine_job_attempt(job, &a) != 0)
        return json_null();
    const struct ebb__offer *o = &ebb__engine_market(d->engine)->offers[a.offer];
    ebb_micros accrued = a.launched ? ebb__bill(o, a.billing, a.launched_at,
                                                ebb__clock_now(&d->clock), NULL, NULL)
                                    : 0;
    ebb_dur_ms stall_after = ebb__engine_stall_after(job);
    accrued *= a.nodes; /* a gang bills each node */
    json_t *cur = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s*,s:b,s:I,s:s,s:f,s:s,s:I,s:o,s:s}",
                     "token", a.token, "provider", a.provider,
                     "market_provider", o->provider, "region", o->region,
                     "zone", o->zone, "instance_type", o->instance_type,
                     "instance_id", a.instance_id, "notice", a.notice,
                     "accrued_micros", (json_int_t)accrued, "currency", o->currency,
                     "speed", a.speed, "speed_source", ebb__speed_source(a.speed_samples),
                     "speed_samples", (json_int_t)a.speed_samples,
                     "stall_after_ms", stall_after > 0 ? json_integer(stall_after)
                                                         : json_null(),
                     "stall_guard", stall_after > 0
                                        ? "on"
                                        : "off: the job has reported no progress "
                                          "(EBB_PROGRESS) on this instance");
    if (cur != NULL && a.nodes > 1)
        json_object_set_new(cur, "nodes", nodes_json(job, a.nodes));
    if (cur != NULL)
        gpu_guard_json(job, cur);
    return cur;
}

void ebb__api_job(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    const char *id = param_string(call, "id");
    if (id == NULL)
        return;
    json_t *job;
    int rc = ebb__store_job_json(d->store, id, &job);
    if (rc == EBB_ENOTFOUND) {
        ebb__api_fail(call, "not_found", "no job %s (see ebb jobs --all)", id);
        return;
    }
    if (rc != 0) {
        ebb__api_fail(call, "internal", "cannot read the store: %s",
                      ebb__store_errmsg(d->store));
        return;
    }
    add_waiting_reason(d, job);
    int full = may_see_job(d, call, job);
    if (full)
        json_object_set_new(job, "current", current_json(d, id));
    else
        ebb__daemon_redact_job(job);
    /* An unfinished job's outlook: with outlook: true a fresh one (seconds,
     * off the loop; the answer waits for it), else the latest kept. */
    const struct ebb__job *live = ebb__engine_job(d->engine, id);
    if (full && live != NULL && !ebb__job_state_terminal(ebb__engine_job_state(live))) {
        if (json_is_true(json_object_get(call->params, "outlook"))) {
            ebb__daemon_job_outlook(d, call, job, id, live);
            return;
        }
        ebb__daemon_job_kept_outlook(d, job, id, live);
    }
    ebb__api_reply(call, job);
}

void ebb__api_cancel(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    const char *id = param_string(call, "id");
    if (id == NULL || !may_touch(d, call, id, "cancel"))
        return;
    struct ebb__job *job = ebb__engine_job(d->engine, id);
    if (job == NULL || ebb__engine_cancel(job, "cancelled by the user") != 0) {
        ebb__api_fail(call, "conflict", "job %s has already ended", id);
        return;
    }
    ebb__info("job %s cancelled by uid %ld", id, (long)call->uid);
    ebb__api_reply_after_commit(call, json_pack("{s:s,s:s}", "id", id, "state",
                                   ebb__job_state_name(ebb__engine_job_state(job))));
}

/* Bytes as a JSON string: invalid UTF-8 becomes U+FFFD, so a job printing
 * binary garbage cannot break the answer. */
static json_t *text_json(const char *buf, size_t len)
{
    json_t *s = json_stringn(buf, len);
    if (s != NULL)
        return s;
    char *clean = malloc(len * 3 + 1);
    size_t n = 0;
    for (size_t i = 0; clean != NULL && i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c < 0x80) {
            clean[n++] = (char)c;
        } else {
            clean[n++] = (char)0xEF;
            clean[n++] = (char)0xBF;
            clean[n++] = (char)0xBD;
        }
    }
    s = clean ? json_stringn(clean, n) : NULL;
    free(clean);
    return s ? s : json_string("");
}

void ebb__api_logs(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    const char *id = param_string(call, "id");
    if (id == NULL || !may_touch(d, call, id, "read the logs of"))
        return;
    json_t *at = json_object_get(call->params, "offset");
    json_int_t offset = json_integer_value(at);
    if (at != NULL && (!json_is_integer(at) || offset < 0 || offset > LOG_OFFSET_MAX)) {
        ebb__api_fail(call, "bad_request", "offset: expected a byte offset "
                      "from 0 to %lld", (long long)LOG_OFFSET_MAX);
        return;
    }
    char *path = ebb__agent_log_path(d->logs_dir, id);
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0 && errno != ENOENT) {
        ebb__api_fail(call, "internal", "cannot read %s: %s", path, strerror(errno));
        free(path);
        return;
    }
    free(path);
    char *buf = malloc(LOG_CHUNK);
    ssize_t n = 0;
    if (fd >= 0 && buf != NULL)
        n = pread(fd, buf, LOG_CHUNK, offset < 0 ? 0 : (off_t)offset);
    if (fd >= 0)
        close(fd);
    if (n < 0)
        n = 0;
    struct ebb__job *job = ebb__engine_job(d->engine, id);
    int ended = job == NULL || ebb__job_state_terminal(ebb__engine_job_state(job));
    ebb__api_reply(call, json_pack("{s:o,s:I,s:b}", "data",
                                   text_json(buf ? buf : "", (size_t)n),
                                   "next", (json_int_t)(offset + n), "ended", ended));
    free(buf);
}
