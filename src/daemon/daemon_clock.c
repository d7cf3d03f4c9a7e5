/* ebbd's clock across restarts (#16 point 1). The built-in configuration
 * and most demos set clock.start, and each start used to put the clock
 * back there: an instance adopted after a restart then ended before it
 * started and was never billed. Now the store keeps the clock's position
 * (store/store_clock.h): a clock that is not the wall clock resumes from
 * it, one that would run backwards is refused, and every commit moves the
 * position on. Once the clock is settled, the store's billing check runs
 * and says what it finds: it only reads, on a connection of its own in
 * libuv's thread pool (it reads every instance and its ledger rows: most
 * of a second for a hundred thousand instances), so that ebbd does not
 * wait for it. Whatever snapshot it reads is one that must pass: an
 * instance's end and its ledger rows are committed together. */
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "base/paths.h"
#include "daemon/daemon.h"
#include "store/store_clock.h"

#include <ebb/units.h>

struct check_work {
    uv_work_t req;
    char *db_path;
    int rc;
    char err[1024];
};

static void check_run(uv_work_t *req)
{
    struct check_work *w = req->data;
    struct ebb__store *s = NULL;
    w->rc = ebb__store_open(w->db_path, &s, w->err, sizeof(w->err));
    if (w->rc == 0)
        w->rc = ebb__store_check_billing(s, w->err, sizeof(w->err));
    if (w->rc != 0 && w->err[0] == '\0' && s != NULL)
        snprintf(w->err, sizeof(w->err), "%s", ebb__store_errmsg(s));
    ebb__store_close(s);
}

static void check_done(uv_work_t *req, int status)
{
    struct check_work *w = req->data;
    if (status == 0 && w->rc == EBB_EDB)
        ebb__warn("store check: %s", w->err);
    else if (status == 0 && w->rc != 0)
        ebb__warn("store check could not run: %s",
                  w->err[0] ? w->err : ebb_strerror(w->rc));
    free(w->db_path);
    free(w);
}

/* Queues the billing check; a check that cannot start is only skipped. */
static void start_check(struct ebb__daemon *d)
{
    struct check_work *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return;
    w->req.data = w;
    w->db_path = ebb__path_join(d->state_dir, "ebb.db");
    if (w->db_path == NULL ||
        uv_queue_work(&d->loop, &w->req, check_run, check_done) != 0) {
        ebb__warn("store check: cannot start it");
        free(w->db_path);
        free(w);
    }
}

static ebb_time_ms clock_now(void *arg)
{
    return ebb__clock_now(arg);
}

int ebb__daemon_clock_start(struct ebb__daemon *d)
{
    struct ebb__clock_history h;
    char err[640] = "";
    int rc = ebb__store_clock_get(d->store, &h);
    if (rc != 0) {
        ebb__error("cannot read the clock's position from the store: %s",
                   ebb__store_errmsg(d->store));
        return 1;
    }
    rc = ebb__clock_resume(&d->clock, d->config->clock_start, &h, err, sizeof(err));
    if (rc < 0) {
        /* 1, like the state directory's other refusals: the configuration
         * itself is valid, and exit 2 promises that nothing was touched
         * (the store may have just been migrated). */
        ebb__error("%s/ebb.db: %s", d->state_dir, err);
        return 1;
    }
    ebb_time_ms now = ebb__clock_now(&d->clock);
    d->started_at = now;
    if (rc == 1) {
        char at[40];
        ebb__info("the clock resumes at %s, where ebbd's last run got to",
                  ebb_format_time(now, at, sizeof(at)));
    }
    if (ebb__store_clock_set(d->store, d->config->clock_start, d->clock_speed, now) != 0) {
        ebb__error("cannot record the clock in the store: %s",
                   ebb__store_errmsg(d->store));
        return 1;
    }
    ebb__store_clock_follow(d->store, clock_now, &d->clock);
    start_check(d);
    return 0;
}
