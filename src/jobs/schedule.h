/* Schedules: a job run by a cron expression, at the cheapest time within a
 * window after each fire (docs/cron.md; examples/nightly.yaml):
 *
 *   name: nightly-eval
 *   cron: "30 1 * * *"
 *   timezone: Asia/Shanghai   # IANA name; default UTC
 *   window: 6h                # each run: released at the fire time,
 *                             # deadline fire + window
 *   budget: 20 USD            # per run; optional
 *   missed: skip              # or run-once; default skip
 *   job:                      # a job spec without name, deadline, budget
 *     run: [python, eval.py]
 *     work: 2h
 *
 * The file is read like a job spec (the `job:` mapping by the job spec
 * reader itself), and every problem is reported once as "file:line: what".
 *
 * ebb__schedule_due() is the pure decision of what to start now; ebbd
 * calls it with what its store says and acts on the answer.
 */
#ifndef EBB_SCHEDULE_H
#define EBB_SCHEDULE_H

#include <ebb/common.h>
#include <ebb/diag.h>

#include "base/tz.h"
#include "jobs/cron.h"
#include "jobs/jobspec.h"

/* What to do with fire times that passed while ebbd was not running. */
enum ebb__missed {
    EBB__MISSED_SKIP,     /* none of them: wait for the next fire time */
    EBB__MISSED_RUN_ONCE, /* one run, for the most recent of them */
};

/* A fire time noticed later than this after it passed counts as missed
 * (ebbd was down, or asleep), not as due now. */
#define EBB__SCHEDULE_LATE_OK EBB_MS_PER_MINUTE

struct ebb__schedule {
    char *name;      /* a job name (ebb__job_name_valid()) */
    char *cron_text; /* as written */
    struct ebb__cron cron;
    char *timezone;  /* as written; "UTC" when not given */
    struct ebb__tz *tz;
    ebb_dur_ms window; /* > work + restart overhead of the job */
    int has_budget;    /* 0: no cap */
    struct ebb_money budget; /* per run */
    enum ebb__missed missed;
    /* The job each run submits: the schedule's name, the schedule's budget,
     * and a deadline of `window` after submission (deadline_is_relative),
     * so ebb__jobspec_deadline(&job, release) is release + window. */
    struct ebb__job_spec job;
    char *file;
    int line;
};

/* Reads the schedule file at `path` (the path is the name in messages).
 * On success fills *out, which the caller frees with
 * ebb__schedule_free(), and returns 0. Returns EBB_ECONFIG for bad
 * content (an unknown time zone included), EBB_ENOTFOUND / EBB_EIO when
 * the file cannot be read, EBB_ENOMEM; then *out is zeroed, nothing leaks
 * and d says "file:line: what". */
int ebb__schedule_load_file(const char *path, struct ebb__schedule *out,
                            struct ebb_diag *d);

/* As ebb__schedule_load_file() for `len` bytes at `buf`; `name` (copied)
 * is the file name shown in messages. This is how ebbd reads what users
 * send, so it holds the text to ebb__ylimits_spec (base/yaml_doc.h: 256 KiB,
 * 20000 nodes, 1000 keys per mapping or items per list, 16 levels;
 * EBB_ECONFIG beyond). */
int ebb__schedule_load_buffer(const char *name, const char *buf, size_t len,
                              struct ebb__schedule *out, struct ebb_diag *d);

/* Frees what the schedule owns and zeroes it. Zeroed and NULL allowed. */
void ebb__schedule_free(struct ebb__schedule *s);

/* "skip" or "run-once". Static. */
const char *ebb__missed_name(enum ebb__missed m);

/* What ebbd knows of a schedule when it asks what to start. */
struct ebb__schedule_state {
    /* Every fire time up to and including `since` has been dealt with
     * (started or skipped): the `last_fire` of the previous decision, or
     * the time the schedule was added when it has never fired. */
    ebb_time_ms since;
    int running; /* a run of this schedule has not finished yet */
};

/* Why a fire time was not started. */
enum ebb__skip_reason {
    EBB__SKIP_NONE,
    EBB__SKIP_RUNNING, /* the previous run is still going */
};

struct ebb__schedule_decision {
    /* Start one run now, for fire time `fire`: release it at `release`
     * and give it the deadline `deadline`. An on-time run is released at
     * its fire time and due `window` later; a late run (missed: run-once)
     * is released now and gets a whole window from now, since the one
     * after its fire time may already be over. */
    int start;
    ebb_time_ms fire, release, deadline;
    /* The fire time that would have started but was not, and why; record
     * it (job event or log) with ebb__skip_reason_text(). */
    enum ebb__skip_reason skip;
    ebb_time_ms skipped_fire;
    /* Fire times that passed while ebbd was not running and get no run of
     * their own: the first and the last (has_missed 0: none). */
    int has_missed;
    ebb_time_ms missed_first, missed_last;
    /* Store this as the new `since`: the latest fire time dealt with
     * (unchanged when nothing was due), so none is dealt with twice. */
    ebb_time_ms last_fire;
    /* When to ask again: the first fire time after now (has_next 0: the
     * expression fires no more, e.g. past the year 9999). */
    int has_next;
    ebb_time_ms next_fire;
};

/* A phrase for a skip reason ("the previous run is still going"). */
const char *ebb__skip_reason_text(enum ebb__skip_reason r);

/* Decides which fire time, if any, to start at `now`. The fire times due
 * are those in (st->since, now]. The latest of them is on time when it is
 * at most EBB__SCHEDULE_LATE_OK old; every other one passed while ebbd
 * was down and follows s->missed: skip starts none of them, run-once
 * starts one run for the most recent (unless the on-time one runs). At
 * most one run starts per call, and none while st->running: that fire is
 * skipped (d->skip says so). Pure: no clock, no I/O. */
void ebb__schedule_due(const struct ebb__schedule *s,
                       const struct ebb__schedule_state *st, ebb_time_ms now,
                       struct ebb__schedule_decision *out);

#endif
