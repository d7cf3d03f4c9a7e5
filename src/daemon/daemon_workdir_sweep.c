/* The sweep of packed workdirs no one uses (daemon_workdir.h): a tar that
 * no job that has not ended names, and that no submit found in its store
 * for EBB__WORKDIR_UNUSED_MS, is forgotten (its row first, so no later
 * submit is accepted on it) and its object deleted. A tar ebbd is sealing
 * now is left alone. A delete that fails leaves the object to the
 * bucket's lifecycle rule (docs/stores.md). */
#include "daemon/daemon_workdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/str.h"
#include "daemon/daemon.h"
#include "daemon/daemon_ckpt.h"
#include "daemon/daemon_notify.h"
#include "store/store_workdir.h"

struct ebb__workdir_sweep {
    uv_timer_t timer;
    int ready;
};

struct unused {
    struct ebb__daemon *d;
    char store[EBB__WORKDIR_SWEEP_ROWS][256];
    char sha[EBB__WORKDIR_SWEEP_ROWS][65];
    int n;
};

static int collect(void *arg, const char *store, const char *sha)
{
    struct unused *u = arg;
    if (strlen(store) >= sizeof(u->store[0]) || strlen(sha) != 64 ||
        ebb__daemon_workdir_sealing(u->d, store, sha))
        return 0;
    snprintf(u->store[u->n], sizeof(u->store[0]), "%s", store);
    snprintf(u->sha[u->n], sizeof(u->sha[0]), "%s", sha);
    return ++u->n == EBB__WORKDIR_SWEEP_ROWS;
}

struct deletion {
    char store[256];
    char sha[65];
};

static void on_deleted(void *arg, const struct ebb__objstore_result *r)
{
    struct deletion *del = arg;
    if (r->status == 0)
        ebb__info("workdir %s deleted from store %s: no job used it for 7 days",
                  del->sha, del->store);
    else
        ebb__warn("workdir %s: cannot delete it from store %s (its lifecycle rule "
                  "will): %s%s%s", del->sha, del->store, ebb_strerror(r->status),
                  r->message[0] ? ": " : "", r->message);
    free(del);
}

static void sweep(struct ebb__daemon *d)
{
    struct unused *u = calloc(1, sizeof(*u));
    if (u == NULL)
        return;
    u->d = d;
    ebb_time_ms before = ebb__daemon_wall_ms() - EBB__WORKDIR_UNUSED_MS;
    int rc = ebb__store_workdir_unused(d->store, before, EBB__WORKDIR_SWEEP_ROWS, collect, u);
    if (rc < 0)
        ebb__warn("cannot look for unused workdirs: %s", ebb__store_errmsg(d->store));
    for (int i = 0; rc >= 0 && i < u->n; i++) {
        struct ebb__objstore *st = ebb__daemon_objstore(d, u->store[i]);
        if (st == NULL) /* a store no longer configured: its rows stay */
            continue;
        if (ebb__store_workdir_forget(d->store, u->store[i], u->sha[i]) != 0 ||
            ebb__store_flush(d->store) != 0) {
            ebb__warn("workdir %s: cannot forget it: %s", u->sha[i],
                      ebb__store_errmsg(d->store));
            break;
        }
        struct deletion *del = malloc(sizeof(*del));
        char *key = ebb_strfmt("workdirs/%s", u->sha[i]);
        if (del != NULL) {
            snprintf(del->store, sizeof(del->store), "%s", u->store[i]);
            snprintf(del->sha, sizeof(del->sha), "%s", u->sha[i]);
        }
        int started = del != NULL && key != NULL &&
                      ebb__objstore_delete(st, key, on_deleted, del) == 0;
        free(key);
        if (!started) {
            ebb__warn("workdir %s: cannot delete it from store %s (its lifecycle rule "
                      "will)", u->sha[i], u->store[i]);
            free(del);
        }
    }
    free(u);
}

static void on_timer(uv_timer_t *timer)
{
    struct ebb__daemon *d = timer->data;
    if (!d->shutting_down)
        sweep(d);
}

int ebb__daemon_workdir_sweep_start(struct ebb__daemon *d)
{
    if (d->config->n_stores == 0)
        return 0;
    d->workdir_sweep = calloc(1, sizeof(*d->workdir_sweep));
    if (d->workdir_sweep == NULL)
        return 1;
    uv_timer_init(&d->loop, &d->workdir_sweep->timer);
    d->workdir_sweep->timer.data = d;
    d->workdir_sweep->ready = 1;
    uv_timer_start(&d->workdir_sweep->timer, on_timer, EBB__WORKDIR_SWEEP_MS,
                   EBB__WORKDIR_SWEEP_MS);
    sweep(d);
    return 0;
}

/* The timer is the sweep's first member: the handle is the struct. */
static void on_closed(uv_handle_t *h)
{
    free(h);
}

void ebb__daemon_workdir_sweep_stop(struct ebb__daemon *d)
{
    struct ebb__workdir_sweep *w = d->workdir_sweep;
    if (w == NULL || !w->ready)
        return;
    w->ready = 0;
    d->workdir_sweep = NULL;
    uv_close((uv_handle_t *)&w->timer, on_closed);
}
