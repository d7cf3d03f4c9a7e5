/* Which stored checkpoints need work (daemon_ckpt.h): the durable ones
 * past a job's `keep` (a gang's: whole checkpoints, one part per rank
 * under one name), and on each sweep (at start and every
 * EBB__CKPT_SWEEP_MS) every open row: a finished job's checkpoints are
 * deleted, a row ebbd was completing when it stopped is completed again,
 * one still preparing is failed, and one whose instance ended or that
 * waited past EBB__CKPT_ABANDON_MS for its commit is aborted. The work
 * itself is daemon_ckpt_store.c's tasks. */
#include "daemon/daemon_ckpt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/daemon_notify.h"
#include "store/store_ckpt.h"

/* Rows one sweep looks at. */
#define SWEEP_ROWS 256

/* A job's durable rows, newest first. */
struct part {
    int64_t seq, bytes;
    unsigned rank;
    char *name;
};

struct parts {
    struct part *row;
    size_t n, cap;
};

static int collect_part(void *arg, const struct ebb__ckpt_row *r)
{
    struct parts *p = arg;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct part *row = realloc(p->row, cap * sizeof(*row));
        if (row == NULL)
            return EBB_ENOMEM;
        p->row = row;
        p->cap = cap;
    }
    struct part *w = &p->row[p->n];
    *w = (struct part){.seq = r->seq, .bytes = r->bytes, .rank = r->rank,
                       .name = strdup(r->name)};
    if (w->name == NULL)
        return EBB_ENOMEM;
    p->n++;
    return 0;
}

static void parts_free(struct parts *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->row[i].name);
    free(p->row);
}

static int load_parts(struct ebb__daemon *d, const char *job_id, struct parts *p)
{
    memset(p, 0, sizeof(*p));
    int rc = ebb__store_ckpt_of_job(d->store, job_id, "durable", -1, collect_part, p);
    if (rc < 0) {
        ebb__error("job %s: cannot list its checkpoints: %s", job_id,
                   ebb__store_errmsg(d->store));
        parts_free(p);
    }
    return rc;
}

/* The ranks (a bit each) with a part named `name` among p's rows, and in
 * *bytes (when not NULL) those parts' bytes, each rank's newest once. */
static uint64_t ranks_of(const struct parts *p, const char *name, int64_t *bytes)
{
    uint64_t seen = 0;
    if (bytes != NULL)
        *bytes = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct part *w = &p->row[i];
        uint64_t bit = w->rank < 64 ? UINT64_C(1) << w->rank : 0;
        if (bit == 0 || (seen & bit) || strcmp(w->name, name) != 0)
            continue;
        seen |= bit;
        if (bytes != NULL)
            *bytes += w->bytes;
    }
    return seen;
}

static uint64_t all_ranks(int nodes)
{
    return nodes >= 64 ? UINT64_MAX : (UINT64_C(1) << (nodes > 0 ? nodes : 1)) - 1;
}

int ebb__daemon_ckpt_parts(struct ebb__daemon *d, const char *job_id, const char *name,
                           int nodes, int64_t *bytes)
{
    struct parts p;
    int rc = load_parts(d, job_id, &p);
    if (rc < 0)
        return rc;
    int whole = ranks_of(&p, name, bytes) == all_ranks(nodes);
    parts_free(&p);
    return whole;
}

/* Whether row i is the first (newest) row of its name. */
static int first_of_name(const struct parts *p, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (strcmp(p->row[j].name, p->row[i].name) == 0)
            return 0;
    return 1;
}

void ebb__daemon_ckpt_prune(struct ebb__daemon *d, const char *job_id, int keep,
                            int nodes)
{
    struct parts p;
    if (load_parts(d, job_id, &p) < 0)
        return;
    int want = keep > 0 ? keep : 1, kept = 0;
    uint64_t all = all_ranks(nodes);
    /* Names in the order of their newest part: the first `want` whole
     * ones are kept, and any name before the last of those (a newer one
     * whose parts are not all stored yet); every part of a later name
     * goes. */
    char **keep_names = calloc(p.n ? p.n : 1, sizeof(*keep_names));
    size_t n_keep = 0, cut = p.n;
    for (size_t i = 0; keep_names != NULL && i < p.n && kept < want; i++) {
        if (!first_of_name(&p, i))
            continue;
        keep_names[n_keep++] = p.row[i].name;
        if (ranks_of(&p, p.row[i].name, NULL) == all && ++kept == want)
            cut = i;
    }
    char why[64];
    snprintf(why, sizeof(why), "older than the newest %d", keep);
    for (size_t i = cut + 1; keep_names != NULL && i < p.n; i++) {
        int kept_name = 0;
        for (size_t k = 0; k < n_keep && !kept_name; k++)
            kept_name = strcmp(keep_names[k], p.row[i].name) == 0;
        if (!kept_name)
            ebb__daemon_ckpt_delete(d, p.row[i].seq, why);
    }
    if (keep_names == NULL)
        ebb__error("job %s: cannot prune its checkpoints: out of memory", job_id);
    free(keep_names);
    parts_free(&p);
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
