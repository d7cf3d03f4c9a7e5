/* Which stored checkpoints need work (daemon_ckpt.h): the durable ones
 * past a job's `keep`, and on each sweep (at start and every
 * EBB__CKPT_SWEEP_MS) every open row: a finished job's checkpoints are
 * deleted, a row ebbd was completing when it stopped is completed again,
 * one still preparing is failed, and one whose instance ended or that
 * waited past EBB__CKPT_ABANDON_MS for its commit is aborted. The work
 * itself is daemon_ckpt_store.c's tasks. */
#include "daemon/daemon_ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/daemon_notify.h"
#include "store/store_ckpt.h"

/* Rows one sweep looks at. */
#define SWEEP_ROWS 256

struct seqs {
    int64_t seq[SWEEP_ROWS];
    size_t n, skip;
};

static int collect_seq(void *arg, const struct ebb__ckpt_row *r)
{
    struct seqs *s = arg;
    if (s->skip > 0) {
        s->skip--;
        return 0;
    }
    if (s->n == SWEEP_ROWS)
        return 1;
    s->seq[s->n++] = r->seq;
    return 0;
}

void ebb__daemon_ckpt_prune(struct ebb__daemon *d, const char *job_id, int keep)
{
    struct seqs s = {.skip = keep > 0 ? (size_t)keep : 1};
    int rc = ebb__store_ckpt_of_job(d->store, job_id, "durable", collect_seq, &s);
    if (rc < 0) {
        ebb__error("job %s: cannot list its checkpoints: %s", job_id,
                   ebb__store_errmsg(d->store));
        return;
    }
    char why[64];
    snprintf(why, sizeof(why), "older than the newest %d", keep);
    for (size_t i = 0; i < s.n; i++)
        ebb__daemon_ckpt_delete(d, s.seq[i], why);
}

struct swept {
    int64_t seq;
    char state[16];
    char *job_id, *token;
    ebb_time_ms created_at;
};

struct sweep_rows {
    struct swept rows[SWEEP_ROWS];
    size_t n;
};

static int collect_row(void *arg, const struct ebb__ckpt_row *r)
{
    struct sweep_rows *s = arg;
    if (s->n == SWEEP_ROWS)
        return 1;
    struct swept *w = &s->rows[s->n];
    w->seq = r->seq;
    snprintf(w->state, sizeof(w->state), "%s", r->state);
    w->job_id = strdup(r->job_id);
    w->token = strdup(r->instance_token);
    w->created_at = r->created_at;
    if (w->job_id == NULL || w->token == NULL) {
        free(w->job_id);
        free(w->token);
        return EBB_ENOMEM;
    }
    s->n++;
    return 0;
}

/* Whether the instance that offered a row may still run: its row in the
 * store says so (the engine's own view waits, after a restart, until the
 * providers have listed their instances). */
static int instance_live(struct ebb__daemon *d, const char *token)
{
    return ebb__store_ckpt_instance_ended(d->store, token) == 0;
}

void ebb__daemon_ckpt_sweep(struct ebb__daemon *d, int first)
{
    struct sweep_rows *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return;
    int rc = ebb__store_ckpt_open(d->store, 1, collect_row, s);
    if (rc < 0)
        ebb__error("cannot sweep the checkpoints: %s", ebb__store_errmsg(d->store));
    ebb_time_ms now = ebb__daemon_wall_ms();
    for (size_t i = 0; i < s->n; i++) {
        struct swept *w = &s->rows[i];
        if (ebb__daemon_ckpt_busy(d, w->seq))
            ;
        else if (strcmp(w->state, "durable") == 0)
            ebb__daemon_ckpt_delete(d, w->seq, "its job ended");
        else if (strcmp(w->state, "completing") == 0)
            ebb__daemon_ckpt_complete(d, w->seq, -1); /* ebbd restarted in it */
        else if (strcmp(w->state, "preparing") == 0)
            ebb__daemon_ckpt_abort(d, w->seq, first ? "ebbd restarted while it "
                                   "prepared the uploads" : "its uploads were not "
                                   "prepared");
        else if (!instance_live(d, w->token))
            ebb__daemon_ckpt_abort(d, w->seq, "its instance ended before the commit");
        else if (now - w->created_at > EBB__CKPT_ABANDON_MS)
            ebb__daemon_ckpt_abort(d, w->seq, "abandoned: not committed within 6 h");
        free(w->job_id);
        free(w->token);
    }
    free(s);
}
