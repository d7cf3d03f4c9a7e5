/* ebb-agent while the job runs: starting it, heartbeats, progress,
 * checkpoints, stop requests (ebbd's, the metadata notice's, a signal to
 * the agent), the grace period and the final report. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/store.h"
#include "base/log.h"
#include "base/str.h"

static int64_t now_ms(struct agent *a)
{
    return ebb__clock_now(&a->clock);
}

static void after(struct agent *a, struct ebb__timer *t, int64_t delay)
{
    ebb__timer_start(&a->clock, t, now_ms(a) + delay);
}

/* ---- checkpoints ---- */

/* `periodic`: the job goes on after it (any checkpoint before a stop was
 * asked for, also one the job took on its own); `duration_ms`: since the
 * last signal, 0 when none was sent since the previous checkpoint. */
static void report_checkpoint(struct agent *a, const struct agent_ckpt *c)
{
    char *path = agent_ckpt_path(a->doc.ckpt_dir, c->name);
    int64_t duration = a->signal_sent_at ? now_ms(a) - a->signal_sent_at : 0;
    bool periodic = !a->stopping;
    ebb__info("checkpoint complete: %s (%s, %lld ms after the signal)",
              path ? path : c->name, periodic ? "periodic" : "stop",
              (long long)duration);
    if (duration > 0)
        a->last_write_ms = duration;
    /* With a store, the commit at ebbd stands for the event: a checkpoint
     * counts once it is durable. */
    if (a->doc.has_store) {
        free(path);
        if (a->stopping && a->final_skipped)
            ebb__info("checkpoint %s is not stored: it would not fit the notice", c->name);
        else
            agent_upload_offer(a, c->name, periodic, duration);
        return;
    }
    agent_reporter_event(&a->rep, json_pack("{s:s, s:s, s:b, s:I}", "kind", "checkpoint",
                                            "path", path ? path : c->name,
                                            "periodic", periodic,
                                            "duration_ms", (json_int_t)duration));
    free(path);
    if (a->stopping)
        a->checkpointed_since_stop = true;
}

/* Reports and marks each complete checkpoint not seen before (oldest
 * first), marks the job's temporaries, then prunes the marked ones down
 * to `keep`. */
static void scan_checkpoints(struct agent *a)
{
    struct agent_ckpt_list now;
    agent_ckpt_mark_temporaries(a->ckpt_fd, a->doc.job_id);
    int rc = agent_ckpt_scan(a->ckpt_fd, &now);
    if (rc != 0) {
        ebb__warn("cannot read the checkpoint directory %s: %s", a->doc.ckpt_dir,
                  strerror(-rc));
        return;
    }
    bool any_new = false;
    for (size_t i = 0; i < now.n; i++) {
        if (!agent_ckpt_contains(&a->known, &now.items[i])) {
            report_checkpoint(a, &now.items[i]);
            rc = agent_ckpt_mark(a->ckpt_fd, now.items[i].name, a->doc.job_id);
            if (rc != 0)
                ebb__warn("cannot mark checkpoint %s as this job's (it will "
                          "not be pruned): %s", now.items[i].name, strerror(-rc));
            any_new = true;
        }
    }
    if (any_new)
        a->signal_sent_at = 0;
    if (any_new && now.n > (size_t)a->doc.keep) {
        size_t removed = 0;
        /* The objects of the checkpoint being stored are read from its
         * files until its upload ends. */
        const char *spare[] = {a->doc.has_resume && a->doc.resume[0] ? a->doc.resume : NULL,
                               agent_upload_name(a)};
        rc = agent_ckpt_prune(a->ckpt_fd, &now, (size_t)a->doc.keep, a->doc.job_id, spare, 2,
                              &removed);
        if (rc != 0)
            ebb__warn("cannot prune old checkpoints in %s: %s", a->doc.ckpt_dir,
                      strerror(-rc));
        ebb__debug("pruned %zu old checkpoint(s)", removed);
        agent_ckpt_list_free(&now);
        rc = agent_ckpt_scan(a->ckpt_fd, &now);
        if (rc != 0)
            return;
    }
    agent_ckpt_list_free(&a->known);
    a->known = now;
}

/* ---- progress ---- */

static void report_progress(struct agent *a, double fraction)
{
    if (fraction == a->last_progress)
        return;
    a->last_progress = fraction;
    agent_reporter_event(&a->rep, json_pack("{s:s, s:f}", "kind", "progress",
                                            "fraction", fraction));
}

static void on_progress(void *arg, double fraction)
{
    report_progress(arg, fraction);
}

/* The progress file holds a fraction ("0.42"), rewritten by the job; it
 * is reported when its text changes. */
static void read_progress_file(struct agent *a)
{
    if (a->doc.progress_file[0] == '\0')
        return;
    char *path = a->doc.progress_file[0] == '/' || a->doc.workdir[0] == '\0'
                     ? ebb_strfmt("%s", a->doc.progress_file)
                     : ebb_strfmt("%s/%s", a->doc.workdir, a->doc.progress_file);
    FILE *f = path ? fopen(path, "r") : NULL;
    free(path);
    if (f == NULL)
        return;
    char text[sizeof(a->last_progress_file)];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    text[strcspn(text, "\r\n")] = '\0';
    if (strcmp(text, a->last_progress_file) == 0)
        return;
    ebb__strlcpy(a->last_progress_file, text, sizeof(a->last_progress_file));
    char line[sizeof(text) + 16];
    int len = snprintf(line, sizeof(line), "EBB_PROGRESS %s", text);
    double fraction;
    if (agent_progress_parse(line, (size_t)len, &fraction))
        report_progress(a, fraction);
    else
        ebb__warn("progress file %s: \"%s\" is not a fraction between 0 and 1",
                  a->doc.progress_file, text);
}

/* ---- timers ---- */

static void on_heartbeat(struct ebb__timer *t)
{
    struct agent *a = t->data;
    int gpu_util = agent_gpuwatch_take(&a->gpus);
    agent_reporter_event(&a->rep, gpu_util >= 0
                                      ? json_pack("{s:s,s:i}", "kind", "heartbeat",
                                                  "gpu_util", gpu_util)
                                      : json_pack("{s:s}", "kind", "heartbeat"));
    after(a, t, a->doc.heartbeat_ms);
}

static void send_periodic_signal(struct agent *a, const char *why)
{
    int rc = agent_job_signal(&a->job, a->doc.periodic_signal);
    if (rc != 0) {
        ebb__warn("cannot signal the job: %s", uv_strerror(rc));
        return;
    }
    ebb__info("asking the job for a checkpoint (%s, %s)", a->doc.periodic_signal_name, why);
    a->signal_sent_at = now_ms(a);
}

static void on_periodic(struct ebb__timer *t)
{
    struct agent *a = t->data;
    send_periodic_signal(a, "checkpoint.every");
    after(a, t, a->doc.every_ms);
}

static void on_scan(struct ebb__timer *t)
{
    struct agent *a = t->data;
    scan_checkpoints(a);
    read_progress_file(a);
    after(a, t, a->opt.scan_ms);
}

static void on_grace_over(struct ebb__timer *t)
{
    struct agent *a = t->data;
    if (a->exit_waiting) {
        agent_upload_cancel(a, "the grace period is over");
        return;
    }
    if (a->job.exited)
        return;
    ebb__warn("the job did not stop within its grace period; killing its process group");
    a->killed = true;
    agent_job_kill_group(&a->job);
}

/* ---- stopping ---- */

/* A final checkpoint that could not be stored before the instance goes
 * is not asked for: the last durable one stays the resume point, and the
 * job is told to end (SIGTERM, or its group killed when SIGTERM is its
 * checkpoint signal). */
static bool skip_final(struct agent *a, int64_t grace_ms)
{
    int64_t need = -1;
    if (!a->doc.has_store || agent_upload_fits(a, grace_ms, &need))
        return false;
    char why[256];
    snprintf(why, sizeof(why), "storing it would take about %lld ms (%llu bytes at the "
             "measured %.1f MB/s; the job's last checkpoint took %lld ms to write, ebbd "
             "%lld ms to complete); %lld ms are left", (long long)need,
             (unsigned long long)a->last_stored_bytes, a->upload_rate / 1000.0,
             (long long)a->last_write_ms, (long long)a->last_complete_ms, (long long)grace_ms);
    ebb__warn("not asking the job for a final checkpoint: %s", why);
    const struct agent_ckpt *last = agent_ckpt_latest(&a->known);
    agent_reporter_event(&a->rep, json_pack("{s:s, s:s, s:s}", "kind", "checkpoint_skipped",
                                            "name", last ? last->name : "", "reason", why));
    a->final_skipped = true;
    if (a->doc.signal == SIGTERM)
        agent_job_kill_group(&a->job);
    else if (agent_job_signal(&a->job, SIGTERM) != 0)
        ebb__warn("cannot signal the job");
    return true;
}

static void report_exit(struct agent *a, int64_t status, int sig, const char *error);

void agent_run_stop(struct agent *a, int64_t grace_ms, const char *reason)
{
    if (a->state != AGENT_RUNNING || a->stopping || a->job.exited)
        return;
    a->stopping = true;
    if (a->job.pid == 0) {
        /* Still bringing a stored checkpoint back: nothing runs yet, and
         * nothing is signalled (a pid of 0 would be the agent's own
         * group). ebbd hears a stopped run, resumed later. */
        ebb__info("stopping (%s) before the job started", reason);
        agent_resume_free(a);
        a->exit_code = AGENT_EXIT_RELEASED;
        report_exit(a, -1, 0, NULL);
        return;
    }
    ebb__timer_stop(&a->clock, &a->periodic_timer);
    if (skip_final(a, grace_ms)) {
        after(a, &a->grace_timer, grace_ms);
        return;
    }
    ebb__info("stopping the job (%s): %s, then %lld ms to checkpoint and exit", reason,
              a->doc.signal_name, (long long)grace_ms);
    int rc = agent_job_signal(&a->job, a->doc.signal);
    if (rc != 0)
        ebb__warn("cannot signal the job: %s", uv_strerror(rc));
    a->signal_sent_at = now_ms(a);
    after(a, &a->grace_timer, grace_ms);
}

static void on_notice(void *arg, int64_t deadline, const char *source, const char *action)
{
    struct agent *a = arg;
    agent_reporter_event(&a->rep, json_pack("{s:s, s:I, s:s, s:s}", "kind", "notice",
                                            "deadline_ms", (json_int_t)deadline,
                                            "source", source, "action", action));
    /* The instance goes away at the deadline: the grace cannot outlast it.
     * A deadline already past (clock skew, no time given) leaves the
     * job's grace as it is. */
    int64_t grace = a->doc.grace_ms;
    int64_t left = deadline - now_ms(a);
    if (deadline > 0 && left > 0 && left < grace)
        grace = left;
    agent_run_stop(a, grace, "termination notice");
}

void agent_run_command(struct agent *a, const char *kind, json_t *reply)
{
    const char *cmd = json_string_value(json_object_get(reply, "command"));
    const char *reason = json_string_value(json_object_get(reply, "reason"));
    if (cmd == NULL || strcmp(cmd, "none") == 0)
        return;
    if (strcmp(cmd, "stop") == 0 || strcmp(cmd, "release") == 0) {
        json_t *g = json_object_get(reply, "grace_ms");
        int64_t grace = json_is_integer(g) && json_integer_value(g) >= 0
                            ? json_integer_value(g) : a->doc.grace_ms;
        char why[256];
        snprintf(why, sizeof(why), "ebbd says %s: %s", cmd, reason ? reason : "no reason given");
        agent_run_stop(a, grace, why);
    } else if (strcmp(cmd, "checkpoint") == 0) {
        if (!a->stopping && !a->job.exited)
            send_periodic_signal(a, "ebbd asked");
    } else {
        ebb__warn("ebbd answered the \"%s\" event with an unknown command \"%s\"; "
                  "ignoring it", kind, cmd);
    }
}

/* ---- the job ---- */

static void on_output(void *arg, enum agent_stream stream, const char *data, size_t len)
{
    struct agent *a = arg;
    agent_reporter_log(&a->rep, stream, data, len);
}

/* `error`: why the job could not be started (NULL: it ran). */
static void report_exit(struct agent *a, int64_t status, int sig, const char *error)
{
    /* What the job wrote last before it ended, which the next scan would
     * have seen, comes before its exit. */
    if (error == NULL)
        read_progress_file(a);
    agent_imds_stop(&a->imds);
    ebb__timer_stop(&a->clock, &a->heartbeat_timer);
    ebb__timer_stop(&a->clock, &a->periodic_timer);
    ebb__timer_stop(&a->clock, &a->scan_timer);
    ebb__timer_stop(&a->clock, &a->grace_timer);
    json_t *ev = json_pack("{s:s, s:I, s:i, s:b, s:b}", "kind", "exited",
                           "status", (json_int_t)(sig ? -1 : status),
                           "signal", sig, "stopped", a->stopping,
                           "checkpointed", a->checkpointed_since_stop);
    if (ev != NULL && error != NULL)
        json_object_set_new(ev, "error", json_string(error));
    agent_reporter_event(&a->rep, ev);
    a->state = AGENT_FINISHING;
    ebb__timer_start(&a->clock, &a->give_up_timer, now_ms(a) + a->opt.exit_wait_ms);
    agent_check_done(a);
}

static void on_exited(void *arg, int64_t status, int sig)
{
    struct agent *a = arg;
    scan_checkpoints(a);
    if (sig != 0)
        ebb__info("the job ended by signal %d (%s)%s", sig, strsignal(sig),
                  a->killed ? " after its grace period" : "");
    else
        ebb__info("the job exited with status %lld", (long long)status);
    a->exit_code = sig ? 128 + sig : (int)status;
    if (agent_upload_busy(a)) {
        /* `exited` says whether a durable checkpoint was made: it waits
         * for the upload, within the grace period when stopping. */
        a->exit_waiting = true;
        a->exit_status = status;
        a->exit_signal = sig;
        ebb__info("waiting for the last checkpoint to be stored before reporting the exit");
        if (a->stopping && !ebb__timer_pending(&a->grace_timer))
            agent_upload_cancel(a, "the grace period is over");
        return;
    }
    report_exit(a, status, sig, NULL);
}

void agent_upload_idle(struct agent *a)
{
    if (!a->exit_waiting || a->state != AGENT_RUNNING)
        return;
    a->exit_waiting = false;
    report_exit(a, a->exit_status, a->exit_signal, NULL);
}

/* The job's own env, then ebbd's from its answer to `host` (a gang's
 * MASTER_ADDR and the like), then the EBB_* variables, so the later win. */
static int build_env(struct agent *a)
{
    size_t n_doc = 0, n_gang = 0;
    while (a->doc.env[n_doc] != NULL)
        n_doc++;
    while (a->gang_env != NULL && a->gang_env[n_gang] != NULL)
        n_gang++;
    const size_t n_ebb = 6;
    a->job_extra_env = calloc(n_doc + n_gang + n_ebb + 1, sizeof(char *));
    if (a->job_extra_env == NULL)
        return EBB_ENOMEM;
    memcpy(a->job_extra_env, a->doc.env, n_doc * sizeof(char *));
    if (n_gang > 0)
        memcpy(a->job_extra_env + n_doc, a->gang_env, n_gang * sizeof(char *));
    a->job_env_borrowed = n_doc + n_gang;
    char **e = a->job_extra_env + a->job_env_borrowed;
    e[0] = ebb_strfmt("EBB_JOB_ID=%s", a->doc.job_id);
    e[1] = ebb_strfmt("EBB_CHECKPOINT_DIR=%s", a->doc.ckpt_dir);
    e[2] = ebb_strfmt("EBB_RESUME_FROM=%s", a->resume_from);
    e[3] = ebb_strfmt("EBB_SIGNAL=%s", a->doc.signal_name);
    e[4] = ebb_strfmt("EBB_PERIODIC_SIGNAL=%s", a->doc.periodic_signal_name);
    e[5] = ebb_strfmt("EBB_PROGRESS_FILE=%s", a->doc.progress_file);
    for (size_t i = 0; i < n_ebb; i++)
        if (e[i] == NULL)
            return EBB_ENOMEM;
    a->job_envp = agent_job_environ(a->job_extra_env, a->job_env_borrowed + n_ebb);
    return a->job_envp ? 0 : EBB_ENOMEM;
}

/* argv as given, or /bin/sh -c ARGV0 sh ARGV1... for `shell: true` (the
 * remaining elements become $1, $2, ...). */
static int build_argv(struct agent *a)
{
    size_t n = 0;
    while (a->doc.argv[n] != NULL)
        n++;
    a->job_argv = calloc(n + 4, sizeof(char *));
    if (a->job_argv == NULL)
        return EBB_ENOMEM;
    char **v = a->job_argv;
    if (a->doc.shell) {
        static char sh[] = "/bin/sh", dash_c[] = "-c", zero[] = "sh";
        *v++ = sh;
        *v++ = dash_c;
        *v++ = a->doc.argv[0];
        *v++ = zero;
        memcpy(v, a->doc.argv + 1, (n - 1) * sizeof(char *));
    } else {
        memcpy(v, a->doc.argv, n * sizeof(char *));
    }
    return 0;
}

/* The job could not be started: ebbd hears it as an exit with status 127
 * (a shell's "cannot run") and the reason in `error`, and fails the job at
 * once: starting it again would fail the same way. Not -1: that is how a
 * job stopped on request reads (EBB_EXIT_STOPPED), which ebbd would resume
 * again and again. The reason also goes into the job's log, where its
 * owner looks first (`ebb logs`). */
void agent_run_fail_start(struct agent *a, const char *why)
{
    char error[768];
    snprintf(error, sizeof(error), "cannot start the job: %s", why);
    ebb__error("%s", error);
    char line[sizeof(error) + 16];
    int len = snprintf(line, sizeof(line), "ebb-agent: %s\n", error);
    if (len > 0)
        agent_reporter_log(&a->rep, AGENT_STDERR, line,
                           (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
    a->exit_code = 127;
    report_exit(a, 127, 0, error);
}

static void fail_start(struct agent *a, const char *what, const char *why)
{
    char error[700];
    snprintf(error, sizeof(error), "%s: %s", what, why);
    agent_run_fail_start(a, error);
}

/* Why exec'ing `prog` in `workdir` ("": the agent's) failed with libuv
 * error `rc`, naming what is missing: a bare name is looked for on PATH,
 * and exec says ENOENT also for a file whose #! interpreter is gone. */
static void spawn_error(const char *prog, const char *workdir, int rc, char *why,
                        size_t len)
{
    char *path = prog[0] == '/' || workdir[0] == '\0'
                     ? ebb_strfmt("%s", prog)
                     : ebb_strfmt("%s/%s", workdir, prog);
    if (rc == UV_ENOENT && strchr(prog, '/') == NULL)
        snprintf(why, len, "no such program on PATH");
    else if (rc == UV_ENOENT && path != NULL && access(path, F_OK) == 0)
        snprintf(why, len, "the interpreter its #! line names does not exist");
    else
        snprintf(why, len, "%s", uv_strerror(rc));
    free(path);
}

/* Opens the checkpoint directory (created when missing; it must be the
 * job's user's and not a link), removes what a killed run of this job
 * left half-written, and finds the checkpoint to resume from. Returns 0
 * or a negative errno with `why` set. */
static int prepare_checkpoints(struct agent *a, char *why, size_t len)
{
    if (a->doc.has_store && a->doc.store.key_hex[0] != '\0' &&
        ebb__ckpt_key_from_hex(a->doc.store.key_hex, &a->key) != 0) {
        snprintf(why, len, "store.key is not a key");
        return -EINVAL;
    }
    if (a->doc.ckpt_dir[0] == '\0' && !a->opt.disk_given &&
        a->doc.ckpt_default_dir[0] != '\0') {
        /* No disk of the instance's own: where ebbd says (its state
         * directory, or the job's user's home). */
        char *dir = ebb_strfmt("%s", a->doc.ckpt_default_dir);
        if (dir == NULL) {
            snprintf(why, len, "out of memory");
            return -ENOMEM;
        }
        free(a->doc.ckpt_dir);
        a->doc.ckpt_dir = dir;
    }
    if (a->doc.ckpt_dir[0] == '\0') {
        /* No directory of the job's own: the instance's disk, where a
         * checkpoint dies with the instance unless it went to a store. */
        const char *id = a->doc.job_id;
        if (a->opt.disk == NULL) {
            snprintf(why, len, "no directory given and no --disk (nor HOME) to put one on");
            return -EINVAL;
        }
        if (id[0] == '\0' || id[0] == '.' || strchr(id, '/') != NULL) {
            snprintf(why, len, "job id \"%.64s\" cannot name a directory", id);
            return -EINVAL;
        }
        char *dir = ebb_strfmt("%s/checkpoints/%s", a->opt.disk, id);
        if (dir == NULL) {
            snprintf(why, len, "out of memory");
            return -ENOMEM;
        }
        free(a->doc.ckpt_dir);
        a->doc.ckpt_dir = dir;
    }
    int rc = agent_ckpt_mkdir(a->doc.ckpt_dir);
    if (rc != 0) {
        snprintf(why, len, "%s: %s", a->doc.ckpt_dir, strerror(-rc));
        return rc;
    }
    a->ckpt_fd = agent_dir_open_owned(a->doc.ckpt_dir, why, len);
    if (a->ckpt_fd < 0)
        return a->ckpt_fd;
    size_t removed = 0;
    rc = agent_ckpt_remove_temporaries(a->ckpt_fd, a->doc.job_id, &removed);
    if (removed > 0)
        ebb__info("removed %zu unfinished checkpoint(s) from %s", removed, a->doc.ckpt_dir);
    if (rc != 0)
        ebb__warn("cannot remove every unfinished checkpoint in %s: %s", a->doc.ckpt_dir,
                  strerror(-rc));
    rc = agent_ckpt_scan(a->ckpt_fd, &a->known);
    if (rc != 0) {
        snprintf(why, len, "%s: %s", a->doc.ckpt_dir, strerror(-rc));
        return rc;
    }
    const struct agent_ckpt *latest = agent_ckpt_latest(&a->known);
    a->resume_from = latest ? agent_ckpt_path(a->doc.ckpt_dir, latest->name)
                            : ebb_strfmt("%s", "");
    if (a->resume_from == NULL)
        snprintf(why, len, "out of memory");
    return a->resume_from ? 0 : -ENOMEM;
}

/* The job's working directory must be its user's own, and not a link. */
static int check_workdir(struct agent *a, char *why, size_t len)
{
    if (a->doc.workdir[0] == '\0')
        return 0;
    int fd = agent_dir_open_owned(a->doc.workdir, why, len);
    if (fd < 0)
        return fd;
    close(fd);
    return 0;
}

void agent_run_init(struct agent *a)
{
    ebb__timer_init(&a->heartbeat_timer, on_heartbeat, a);
    ebb__timer_init(&a->periodic_timer, on_periodic, a);
    ebb__timer_init(&a->scan_timer, on_scan, a);
    ebb__timer_init(&a->grace_timer, on_grace_over, a);
    a->last_progress = -1.0;
    a->ckpt_fd = -1;
}

static void spawn_job(struct agent *a);

/* The stored checkpoint is back (or none could be): the next upload
 * never sends what was downloaded. */
static void on_resumed(struct agent *a)
{
    agent_ckpt_list_free(&a->known);
    if (agent_ckpt_scan(a->ckpt_fd, &a->known) != 0)
        ebb__warn("cannot read the checkpoint directory %s", a->doc.ckpt_dir);
    if (a->resume_id == 0 && a->resume_from[0] == '\0')
        ebb__info("no checkpoint to resume from: the job starts from the beginning");
    spawn_job(a);
}

static void start_job(struct agent *a, const char *workdir_failed)
{
    if (workdir_failed != NULL) {
        fail_start(a, "workdir", workdir_failed);
        return;
    }
    char why[512];
    int rc = check_workdir(a, why, sizeof(why));
    if (rc != 0) {
        fail_start(a, "workdir", why);
        return;
    }
    rc = prepare_checkpoints(a, why, sizeof(why));
    if (rc != 0) {
        fail_start(a, "checkpoint.dir", why);
        return;
    }
    /* A gang member told to start afresh brings nothing back. */
    if (a->doc.has_store && !(a->doc.has_resume && a->doc.resume[0] == '\0'))
        agent_resume_start(a, on_resumed);
    else
        spawn_job(a);
}

/* A gang member resumes from exactly the checkpoint ebbd names, the
 * gang's newest complete one (every rank resumes the same step), never
 * from this node's newest; "" starts afresh. The named one must be a
 * complete checkpoint of this job's here. Returns false when the start
 * failed for it. */
static bool named_resume(struct agent *a)
{
    if (!a->doc.has_resume)
        return true;
    const char *name = a->doc.resume;
    bool here = false;
    for (size_t i = 0; i < a->known.n && !here; i++)
        here = strcmp(a->known.items[i].name, name) == 0;
    here = here && agent_ckpt_is_marked(a->ckpt_fd, name, a->doc.job_id);
    free(a->resume_from);
    a->resume_from = here ? agent_ckpt_path(a->doc.ckpt_dir, name) : ebb_strfmt("%s", "");
    if (a->resume_from == NULL) {
        fail_start(a, a->doc.argv[0], "out of memory");
        return false;
    }
    if (name[0] != '\0' && !here) {
        char why[400];
        snprintf(why, sizeof(why), "checkpoint %s is not on this node", name);
        agent_run_fail_start(a, why);
        return false;
    }
    ebb__info("ebbd names the checkpoint to resume from: %s", name[0] ? name : "none");
    return true;
}

static void spawn_job(struct agent *a)
{
    char why[512];
    int rc;
    if (!named_resume(a))
        return;
    if (build_env(a) != 0 || build_argv(a) != 0) {
        fail_start(a, a->doc.argv[0], "out of memory");
        return;
    }
    struct agent_job_cbs cbs = {
        .output = on_output, .progress = on_progress, .exited = on_exited, .arg = a,
    };
    rc = agent_job_start(&a->job, &a->loop, a->job_argv, a->job_envp, a->doc.workdir, &cbs);
    if (rc != 0) {
        spawn_error(a->job_argv[0], a->doc.workdir, rc, why, sizeof(why));
        fail_start(a, a->job_argv[0], why);
        return;
    }
    ebb__info("started the job (pid %d)%s%s", a->job.pid,
              a->resume_from[0] ? ", resuming from " : "", a->resume_from);
    json_t *started = json_pack("{s:s, s:i, s:s}", "kind", "started", "pid", a->job.pid,
                                "resume_from", a->resume_from);
    if (started != NULL && a->doc.has_store) {
        if (a->resume_id > 0)
            json_object_set_new(started, "resume_id", json_integer(a->resume_id));
        json_object_set_new(started, "download_bytes", json_integer(a->download_bytes));
        json_object_set_new(started, "download_ms", json_integer(a->download_ms));
    }
    agent_reporter_event(&a->rep, started);
    after(a, &a->heartbeat_timer, a->doc.heartbeat_ms);
    after(a, &a->scan_timer, a->opt.scan_ms);
    if (a->doc.every_ms > 0)
        after(a, &a->periodic_timer, a->doc.every_ms);
    /* ebbd's own metadata endpoint (local instances) lives under its URL
     * and wants the agent's token; a cloud's never gets it. */
    const char *ebbd = a->rep.base_url;
    bool at_ebbd = a->opt.metadata_url != NULL &&
                   strncmp(a->opt.metadata_url, ebbd, strlen(ebbd)) == 0 &&
                   a->opt.metadata_url[strlen(ebbd)] == '/';
    rc = agent_imds_start(&a->imds, a->http, &a->clock, a->opt.metadata_kind,
                          a->opt.metadata_url, at_ebbd ? a->rep.auth_header : NULL,
                          a->opt.metadata_interval_ms, on_notice, a);
    if (rc != 0)
        ebb__error("cannot watch the metadata endpoint: %s", ebb_strerror(rc));
}

/* The one way into a job's start: its workdir first (workdir.c). */
void agent_run_start(struct agent *a)
{
    agent_workdir_prepare(a, start_job);
}

void agent_run_free(struct agent *a)
{
    agent_upload_free(a);
    agent_resume_free(a);
    ebb__ckpt_key_wipe(&a->key);
    ebb__timer_stop(&a->clock, &a->heartbeat_timer);
    ebb__timer_stop(&a->clock, &a->periodic_timer);
    ebb__timer_stop(&a->clock, &a->scan_timer);
    ebb__timer_stop(&a->clock, &a->grace_timer);
    agent_ckpt_list_free(&a->known);
    if (a->ckpt_fd >= 0)
        close(a->ckpt_fd);
    a->ckpt_fd = -1;
    if (a->job_extra_env != NULL)
        for (char **e = a->job_extra_env + a->job_env_borrowed; *e != NULL; e++)
            free(*e);
    free(a->job_extra_env);
    agent_strv_free(a->gang_env);
    a->gang_env = NULL;
    free(a->job_envp);
    free(a->job_argv);
    free(a->resume_from);
    a->job_extra_env = a->job_envp = a->job_argv = NULL;
    a->resume_from = NULL;
}
