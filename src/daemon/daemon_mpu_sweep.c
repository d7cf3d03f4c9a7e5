/* Multipart uploads no checkpoint owns (daemon_ckpt.h): an upload that
 * ebbd created but never recorded (it stopped between
 * CreateMultipartUpload and the row's update, or a create whose answer
 * was lost was sent again) is invisible to the row's own abort. So the
 * store's uploads under jobs/ are listed, at start and hourly, and each
 * is aborted unless its checkpoint is still in flight: a row preparing,
 * uploading or completing, or one with work in progress here. An upload
 * under another key (not ebb's layout) is left alone. The listing is read
 * a page at a time (struct sweep). */
#include "daemon/daemon_ckpt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "store/store_ckpt.h"

/* Pages one sweep of a store reads at most (a million uploads): a
 * listing that goes on past them is not a real one. */
#define MPU_SWEEP_PAGES 1000

/* One store's sweep: a page at a time, the next asked for once this
 * page's aborts have all answered, so a sweep holds one page and at
 * most a page of aborts however many uploads the store has. */
struct sweep {
    struct ebb__daemon *d;
    char store[256];
    char *key_marker, *upload_marker; /* of the next page; NULL: the first */
    unsigned pages;
    size_t aborting; /* this page's aborts not answered yet */
    int last;        /* the page being worked through is the last */
};

struct abortion {
    struct sweep *s;
    char *key;
};

/* The checkpoint a key names (jobs/JOB/ckpt/SEQ-NAME/...), or -1. */
static int64_t seq_of_key(const char *key)
{
    if (strncmp(key, "jobs/", 5) != 0)
        return -1;
    const char *c = strstr(key + 5, "/ckpt/");
    if (c == NULL)
        return -1;
    char *end;
    long long seq = strtoll(c + 6, &end, 10);
    return end != c + 6 && *end == '-' && seq > 0 ? seq : -1;
}

static int copy_state(void *arg, const struct ebb__ckpt_row *r)
{
    snprintf(arg, 16, "%s", r->state);
    return 0;
}

/* Whether an upload for checkpoint `seq` may still be wanted. */
static int in_flight(struct ebb__daemon *d, int64_t seq)
{
    char state[16] = "";
    if (ebb__daemon_ckpt_busy(d, seq))
        return 1;
    int rc = ebb__store_ckpt_get(d->store, seq, NULL, copy_state, state);
    if (rc == EBB_ENOTFOUND)
        return 0;
    return rc < 0 || strcmp(state, "preparing") == 0 || strcmp(state, "uploading") == 0 ||
           strcmp(state, "completing") == 0;
}

static void sweep_end(struct sweep *s)
{
    s->d->mpu_sweeps--;
    free(s->key_marker);
    free(s->upload_marker);
    free(s);
}

static void on_page(void *arg, const struct ebb__objstore_result *r);

/* Asks for the next page, or ends the sweep after the last. */
static void next_page(struct sweep *s)
{
    struct ebb__objstore *st = ebb__daemon_objstore(s->d, s->store);
    if (s->last || s->d->shutting_down || st == NULL) {
        sweep_end(s);
        return;
    }
    struct ebb__objstore_marker from = {s->key_marker, s->upload_marker};
    int rc = ebb__objstore_mpu_list_page(st, "jobs/", s->key_marker != NULL ? &from : NULL,
                                         on_page, s);
    if (rc != 0) {
        ebb__warn("store %s: cannot list its multipart uploads: %s", s->store,
                  ebb_strerror(rc));
        sweep_end(s);
    }
}

static void on_aborted(void *arg, const struct ebb__objstore_result *r)
{
    struct abortion *a = arg;
    struct sweep *s = a->s;
    if (r->status == 0 || r->status == EBB_ENOTFOUND)
        ebb__info("store %s: aborted a multipart upload of %s that no checkpoint "
                  "in flight owns", s->store, a->key);
    else if (r->status != EBB_ECANCELED)
        ebb__warn("store %s: cannot abort the multipart upload of %s (the bucket's "
                  "lifecycle rule will): %s", s->store, a->key, r->message);
    free(a->key);
    free(a);
    if (--s->aborting == 0)
        next_page(s);
}

static void abort_upload(struct sweep *s, const struct ebb__objstore_entry *e)
{
    struct ebb__objstore *st = ebb__daemon_objstore(s->d, s->store);
    struct abortion *a = calloc(1, sizeof(*a));
    if (a != NULL) {
        a->s = s;
        a->key = strdup(e->key);
    }
    if (st == NULL || a == NULL || a->key == NULL ||
        ebb__objstore_mpu_abort(st, e->key, e->upload_id, on_aborted, a) != 0) {
        ebb__warn("store %s: cannot abort the multipart upload of %s", s->store, e->key);
        if (a != NULL)
            free(a->key);
        free(a);
        return;
    }
    s->aborting++;
}

/* Keeps where the page after this one starts; a listing that does not
 * move on, or goes on past MPU_SWEEP_PAGES, ends the sweep (said once). */
static void keep_next(struct sweep *s, const struct ebb__objstore_marker *next)
{
    if (next == NULL) {
        s->last = 1;
        return;
    }
    const char *upload = next->upload_id != NULL ? next->upload_id : "";
    int same = s->key_marker != NULL && strcmp(next->key, s->key_marker) == 0 &&
               strcmp(upload, s->upload_marker != NULL ? s->upload_marker : "") == 0;
    if (same || ++s->pages >= MPU_SWEEP_PAGES) {
        ebb__warn("store %s: its listing of multipart uploads %s; the sweep stops "
                  "here and starts over in an hour", s->store,
                  same ? "does not move past its marker" : "goes on past 1000 pages");
        s->last = 1;
        return;
    }
    free(s->key_marker);
    free(s->upload_marker);
    s->key_marker = strdup(next->key);
    s->upload_marker = strdup(upload);
    if (s->key_marker == NULL || s->upload_marker == NULL)
        s->last = 1;
}

static void on_page(void *arg, const struct ebb__objstore_result *r)
{
    struct sweep *s = arg;
    if (r->status != 0 || s->d->shutting_down) {
        if (!s->d->shutting_down)
            ebb__warn("store %s: cannot list its multipart uploads: %s", s->store,
                      r->message);
        sweep_end(s);
        return;
    }
    keep_next(s, r->next);
    /* Counted as one until every abort is started, so that none that
     * answers at once asks for the next page early. */
    s->aborting = 1;
    for (size_t i = 0; i < r->n_entries; i++) {
        int64_t seq = seq_of_key(r->entries[i].key);
        if (seq > 0 && !in_flight(s->d, seq))
            abort_upload(s, &r->entries[i]);
    }
    if (--s->aborting == 0)
        next_page(s);
}

void ebb__daemon_mpu_sweep(struct ebb__daemon *d)
{
    if (d->mpu_sweeps > 0)
        return; /* the last one is still going: it takes the uploads since too */
    for (size_t i = 0; i < d->config->n_stores; i++) {
        const struct ebb__store_cfg *sc = &d->config->stores[i];
        struct ebb__objstore *st = ebb__daemon_objstore(d, sc->name);
        if (sc->kind == EBB__OBJSTORE_FILE || st == NULL)
            continue;
        struct sweep *s = calloc(1, sizeof(*s));
        if (s == NULL)
            return;
        s->d = d;
        snprintf(s->store, sizeof(s->store), "%s", sc->name);
        d->mpu_sweeps++;
        next_page(s);
    }
}
