/* WAL checkpoints off ebbd's loop. SQLite's automatic checkpoint runs in
 * the thread that commits: every 1000 WAL pages one commit also copies the
 * WAL into the database and fsyncs it, tens of milliseconds with
 * thousands of jobs, on the loop. ebbd turns it off on its writer
 * (ebb__store_checkpoint_elsewhere) and, after a loop turn's commit has
 * grown the WAL past the same threshold, runs a passive checkpoint on a
 * connection of its own in libuv's thread pool, one at a time. */
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "base/paths.h"
#include "daemon/daemon.h"

/* SQLite's own default for the automatic checkpoint. */
#define CHECKPOINT_PAGES 1000

struct checkpoint_work {
    uv_work_t req;
    struct ebb__daemon *d;
    char *db_path;
    int rc;
    char err[256];
};

static void checkpoint_run(uv_work_t *req)
{
    struct checkpoint_work *w = req->data;
    struct ebb__store *s = NULL;
    w->rc = ebb__store_open(w->db_path, &s, w->err, sizeof(w->err));
    if (w->rc == 0) {
        w->rc = ebb__store_checkpoint(s);
        if (w->rc != 0)
            snprintf(w->err, sizeof(w->err), "%s", ebb__store_errmsg(s));
        ebb__store_close(s);
    }
}

static void checkpoint_done(uv_work_t *req, int status)
{
    struct checkpoint_work *w = req->data;
    w->d->checkpointing = 0;
    /* A busy database (a reader in the middle of a long read) is tried
     * again after the next commit; anything else is worth a line. */
    if (status == 0 && w->rc != 0 && w->rc != EBB_EBUSY)
        ebb__warn("WAL checkpoint: %s", w->err[0] ? w->err : ebb_strerror(w->rc));
    free(w->db_path);
    free(w);
}

void ebb__daemon_checkpoint_maybe(struct ebb__daemon *d)
{
    if (d->checkpointing || ebb__store_wal_pages(d->store) < CHECKPOINT_PAGES)
        return;
    struct checkpoint_work *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return;
    w->req.data = w;
    w->d = d;
    w->db_path = ebb__path_join(d->state_dir, "ebb.db");
    if (w->db_path == NULL ||
        uv_queue_work(&d->loop, &w->req, checkpoint_run, checkpoint_done) != 0) {
        free(w->db_path);
        free(w);
        return;
    }
    d->checkpointing = 1;
}
