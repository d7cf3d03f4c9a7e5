/* Multipart uploads no checkpoint owns (daemon_ckpt.h): an upload that
 * ebbd created but never recorded (it stopped between
 * CreateMultipartUpload and the row's update, or a create whose answer
 * was lost was sent again) is invisible to the row's own abort. So the
 * store's uploads under jobs/ are listed, at start and hourly, and each
 * is aborted unless its checkpoint is still in flight: a row preparing,
 * uploading or completing, or one with work in progress here. An upload
 * under another key (not ebb's layout) is left alone. */
#include "daemon/daemon_ckpt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "store/store_ckpt.h"

/* Uploads one listing takes: more are left to the next sweep's. */
#define MPU_LIST_MAX 10000

struct listing {
    struct ebb__daemon *d;
    char store[256];
};

struct abortion {
    char store[256];
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

static void on_aborted(void *arg, const struct ebb__objstore_result *r)
{
    struct abortion *a = arg;
    if (r->status == 0 || r->status == EBB_ENOTFOUND)
        ebb__info("store %s: aborted a multipart upload of %s that no checkpoint "
                  "in flight owns", a->store, a->key);
    else
        ebb__warn("store %s: cannot abort the multipart upload of %s (the bucket's "
                  "lifecycle rule will): %s", a->store, a->key, r->message);
    free(a->key);
    free(a);
}

static void abort_upload(struct ebb__daemon *d, const char *store,
                         const struct ebb__objstore_entry *e)
{
    struct ebb__objstore *st = ebb__daemon_objstore(d, store);
    struct abortion *a = calloc(1, sizeof(*a));
    if (a != NULL) {
        snprintf(a->store, sizeof(a->store), "%s", store);
        a->key = strdup(e->key);
    }
    if (st == NULL || a == NULL || a->key == NULL ||
        ebb__objstore_mpu_abort(st, e->key, e->upload_id, on_aborted, a) != 0) {
        ebb__warn("store %s: cannot abort the multipart upload of %s", store, e->key);
        if (a != NULL)
            free(a->key);
        free(a);
    }
}

static void on_listed(void *arg, const struct ebb__objstore_result *r)
{
    struct listing *l = arg;
    if (r->status != 0) {
        if (!l->d->shutting_down)
            ebb__warn("store %s: cannot list its multipart uploads: %s", l->store,
                      r->message);
    } else if (!l->d->shutting_down) {
        for (size_t i = 0; i < r->n_entries; i++) {
            int64_t seq = seq_of_key(r->entries[i].key);
            if (seq > 0 && !in_flight(l->d, seq))
                abort_upload(l->d, l->store, &r->entries[i]);
        }
    }
    free(l);
}

void ebb__daemon_mpu_sweep(struct ebb__daemon *d)
{
    for (size_t i = 0; i < d->config->n_stores; i++) {
        const struct ebb__store_cfg *sc = &d->config->stores[i];
        struct ebb__objstore *st = ebb__daemon_objstore(d, sc->name);
        if (sc->kind == EBB__OBJSTORE_FILE || st == NULL)
            continue;
        struct listing *l = calloc(1, sizeof(*l));
        if (l == NULL)
            return;
        l->d = d;
        snprintf(l->store, sizeof(l->store), "%s", sc->name);
        if (ebb__objstore_mpu_list(st, "jobs/", MPU_LIST_MAX, on_listed, l) != 0) {
            ebb__warn("store %s: cannot list its multipart uploads", sc->name);
            free(l);
        }
    }
}
