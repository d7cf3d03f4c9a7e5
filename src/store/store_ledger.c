/* The ledger read back (see store_ledger.h). The SQL is in store_sql.h;
 * each walk binds its window, then ebb__store_each() hands every result
 * row to an adapter that fills the typed row and calls the caller's
 * callback. */
#include "store/store_ledger.h"

#include "store/store_internal.h"

typedef int (*window_cb)(void *arg, const struct ebb__ledger_window_row *r);
typedef int (*event_cb)(void *arg, const struct ebb__window_event_row *r);
typedef int (*run_cb)(void *arg, const struct ebb__instance_run_row *r);
typedef int (*usage_cb)(void *arg, const struct ebb__usage_row *r);

/* The caller's callback, whichever row type it takes, behind one adapter
 * signature. */
struct walk {
    union {
        window_cb window;
        event_cb event;
        run_cb run;
        usage_cb usage;
        ebb__store_sum_cb sum;
    } cb;
    void *arg;
};

typedef int (*row_fn)(sqlite3_stmt *st, void *walk);

/* The cached statement `id` with ?1 = since and ?2 = until bound; NULL on
 * failure (the message kept, the bindings cleared). */
static sqlite3_stmt *window_stmt(struct ebb__store *s, enum ebb__sql id,
                                 ebb_time_ms since, ebb_time_ms until)
{
    sqlite3_stmt *st = ebb__store_stmt(s, id);
    if (st == NULL)
        return NULL;
    int r = ebb__store_bind_i64(s, st, 1, since);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 2, until);
    if (r < 0) {
        sqlite3_clear_bindings(st);
        return NULL;
    }
    return st;
}

/* Runs the window statement `id` with the adapter `row`; `has_cb`: the
 * caller passed a callback. */
static int walk_window(struct ebb__store *s, enum ebb__sql id,
                       ebb_time_ms since, ebb_time_ms until, row_fn row,
                       int has_cb, struct walk *w)
{
    if (!has_cb)
        return ebb__store_invalid(s, "no callback");
    sqlite3_stmt *st = window_stmt(s, id, since, until);
    if (st == NULL)
        return EBB_EDB;
    return ebb__store_each(s, st, row, w);
}

static const char *text(sqlite3_stmt *st, int i)
{
    return ebb__store_col_text(st, i);
}

/* ---- ledger rows of a window ------------------------------------------- */

static int window_row(sqlite3_stmt *st, void *walk)
{
    const struct walk *w = walk;
    struct ebb__ledger_window_row r = {
        .job_id = text(st, 0), .team = text(st, 1), .provider = text(st, 2),
        .kind = text(st, 3), .currency = text(st, 7), .note = text(st, 8),
        .region = text(st, 9), .zone = text(st, 10),
        .instance_type = text(st, 11), .market = text(st, 12),
        .start_at = sqlite3_column_int64(st, 4),
        .end_at = sqlite3_column_int64(st, 5),
        .amount = sqlite3_column_int64(st, 6),
        .submitted_at = sqlite3_column_int64(st, 13),
        .prior_compute = sqlite3_column_int64(st, 14),
        .lost_ms = sqlite3_column_int64(st, 15),
    };
    return w->cb.window(w->arg, &r);
}

int ebb__store_ledger_window(
    struct ebb__store *s, ebb_time_ms since, ebb_time_ms until,
    int (*cb)(void *arg, const struct ebb__ledger_window_row *r), void *arg)
{
    struct walk w = {.cb.window = cb, .arg = arg};
    return walk_window(s, EBB__SQL_LEDGER_WINDOW, since, until,
                       window_row, cb != NULL, &w);
}

/* ---- preemptions and checkpoints ---------------------------------------- */

static int event_row(sqlite3_stmt *st, void *walk)
{
    const struct walk *w = walk;
    int has_next = sqlite3_column_type(st, 4) != SQLITE_NULL;
    struct ebb__window_event_row r = {
        .job_id = text(st, 0), .team = text(st, 1), .to_state = text(st, 2),
        .provider = text(st, 5), .instance_type = text(st, 6),
        .instance_token = text(st, 7),
        .at = sqlite3_column_int64(st, 3),
        .has_next = has_next,
        .next_at = has_next ? sqlite3_column_int64(st, 4) : 0,
    };
    return w->cb.event(w->arg, &r);
}

int ebb__store_window_events(
    struct ebb__store *s, ebb_time_ms since, ebb_time_ms until,
    int (*cb)(void *arg, const struct ebb__window_event_row *r), void *arg)
{
    struct walk w = {.cb.event = cb, .arg = arg};
    return walk_window(s, EBB__SQL_WINDOW_EVENTS, since, until,
                       event_row, cb != NULL, &w);
}

/* ---- instance runs ------------------------------------------------------ */

static int run_row(sqlite3_stmt *st, void *walk)
{
    const struct walk *w = walk;
    struct ebb__instance_run_row r = {
        .instance_token = text(st, 0), .job_id = text(st, 1),
        .provider = text(st, 2), .region = text(st, 3), .zone = text(st, 4),
        .instance_type = text(st, 5), .market = text(st, 6),
        .start_at = sqlite3_column_int64(st, 7),
        .end_at = sqlite3_column_int64(st, 8),
    };
    return w->cb.run(w->arg, &r);
}

int ebb__store_instance_runs(
    struct ebb__store *s, ebb_time_ms since, ebb_time_ms until,
    int (*cb)(void *arg, const struct ebb__instance_run_row *r), void *arg)
{
    struct walk w = {.cb.run = cb, .arg = arg};
    return walk_window(s, EBB__SQL_INSTANCE_RUNS, since, until,
                       run_row, cb != NULL, &w);
}

/* ---- plan usage --------------------------------------------------------- */

static int usage_row(sqlite3_stmt *st, void *walk)
{
    const struct walk *w = walk;
    struct ebb__usage_row r = {
        .team = text(st, 0), .currency = text(st, 4),
        .start_at = sqlite3_column_int64(st, 1),
        .end_at = sqlite3_column_int64(st, 2),
        .amount = sqlite3_column_int64(st, 3),
    };
    return w->cb.usage(w->arg, &r);
}

int ebb__store_plan_usage(struct ebb__store *s,
                          const struct ebb__usage_filter *f,
                          ebb_time_ms since, ebb_time_ms until,
                          int (*cb)(void *arg, const struct ebb__usage_row *r),
                          void *arg)
{
    if (cb == NULL || f == NULL || f->provider == NULL)
        return ebb__store_invalid(s, "no provider or no callback");
    sqlite3_stmt *st = window_stmt(s, EBB__SQL_PLAN_USAGE, since, until);
    if (st == NULL)
        return EBB_EDB;
    /* NULL region and type bind NULL: any. */
    int r = ebb__store_bind_text(s, st, 3, f->provider);
    if (r == 0)
        r = ebb__store_bind_text(s, st, 4, f->region);
    if (r == 0)
        r = ebb__store_bind_text(s, st, 5, f->instance_type);
    if (r < 0) {
        sqlite3_clear_bindings(st);
        return r;
    }
    struct walk w = {.cb.usage = cb, .arg = arg};
    return ebb__store_each(s, st, usage_row, &w);
}

/* ---- sums --------------------------------------------------------------- */

static int sum_row(sqlite3_stmt *st, void *walk)
{
    const struct walk *w = walk;
    return w->cb.sum(w->arg, text(st, 0),
                                      sqlite3_column_int64(st, 1));
}

int ebb__store_ledger_sums(struct ebb__store *s, ebb__store_sum_cb cb,
                           void *arg)
{
    if (cb == NULL)
        return ebb__store_invalid(s, "no callback");
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_LEDGER_SUMS);
    if (st == NULL)
        return EBB_EDB;
    struct walk w = {.cb.sum = cb, .arg = arg};
    return ebb__store_each(s, st, sum_row, &w);
}
