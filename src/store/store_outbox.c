/* The notification outbox's rows (store_outbox.h). */
#include "store/store_outbox.h"
#include "store/store_internal.h"

#include <stdio.h>
#include <string.h>

int ebb__store_outbox_add(struct ebb__store *s, const struct ebb__outbox_event *ev,
                          const char *const *channels, size_t n)
{
    if (ev == NULL || ev->event_id == NULL || ev->type == NULL ||
        ev->body == NULL || (n > 0 && channels == NULL))
        return ebb__store_invalid(s, "outbox: an event needs an id, a type "
                                     "and a body");
    if (strlen(ev->body) > EBB__OUTBOX_BODY_MAX)
        return ebb__store_invalid(s, "outbox: the event is larger than "
                                     "8192 bytes");
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_OUTBOX_ADD);
    if (st == NULL)
        return EBB_EDB;
    int added = 0;
    for (size_t i = 0; i < n; i++) {
        int r = ebb__store_bind_text(s, st, 1, ev->event_id);
        if (r == 0)
            r = ebb__store_bind_text(s, st, 2, channels[i]);
        if (r == 0)
            r = ebb__store_bind_text(s, st, 3, ev->type);
        if (r == 0)
            r = ebb__store_bind_text(s, st, 4, ev->job_id);
        if (r == 0)
            r = ebb__store_bind_i64(s, st, 5, ev->created_at);
        if (r == 0)
            r = ebb__store_bind_text(s, st, 6, ev->body);
        if (r == 0)
            r = ebb__store_run(s, st);
        if (r != 0) {
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            return r;
        }
        added += sqlite3_changes(s->db);
    }
    if (added == 0)
        return 0;
    st = ebb__store_stmt(s, EBB__SQL_OUTBOX_TRIM);
    if (st == NULL)
        return EBB_EDB;
    int r = ebb__store_bind_i64(s, st, 1, EBB__OUTBOX_MAX_PENDING);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 2, ev->created_at);
    if (r == 0)
        r = ebb__store_run(s, st);
    return r != 0 ? r : added;
}

struct due_ctx {
    size_t limit, seen;
    const int64_t *skip;
    size_t n_skip;
    ebb__outbox_row_cb cb;
    void *arg;
};

static int due_row(sqlite3_stmt *st, void *arg)
{
    struct due_ctx *c = arg;
    struct ebb__outbox_row row = {
        .seq = sqlite3_column_int64(st, 0),
        .event_id = ebb__store_col_text(st, 1),
        .channel = ebb__store_col_text(st, 2),
        .type = ebb__store_col_text(st, 3),
        .body = ebb__store_col_text(st, 4),
        .attempts = sqlite3_column_int(st, 5),
    };
    for (size_t i = 0; i < c->n_skip; i++)
        if (c->skip[i] == row.seq)
            return 0;
    int r = c->cb(c->arg, &row);
    if (r != 0)
        return r;
    /* Stops the scan once `limit` rows went out: 1 is no EBB_E* code and
     * is turned back into 0 below. */
    return ++c->seen >= c->limit ? 1 : 0;
}

int ebb__store_outbox_due(struct ebb__store *s, ebb_time_ms now, size_t limit,
                          const int64_t *skip, size_t n_skip,
                          ebb__outbox_row_cb cb, void *arg)
{
    if (cb == NULL)
        return ebb__store_invalid(s, "outbox: no callback");
    if (limit == 0)
        return 0;
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_OUTBOX_DUE);
    if (st == NULL)
        return EBB_EDB;
    int r = ebb__store_bind_i64(s, st, 1, now);
    if (r != 0)
        return r;
    struct due_ctx c = {limit, 0, skip, n_skip, cb, arg};
    r = ebb__store_each(s, st, due_row, &c);
    return r == 1 && c.seen >= c.limit ? 0 : r;
}

int ebb__store_outbox_next_due(struct ebb__store *s, const int64_t *skip,
                               size_t n_skip, ebb_time_ms *at)
{
    *at = 0;
    if (n_skip > EBB__OUTBOX_SKIP_MAX)
        return ebb__store_invalid(s, "outbox: too many rows to leave out");
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_OUTBOX_NEXT_DUE);
    if (st == NULL)
        return EBB_EDB;
    for (size_t i = 0; i < EBB__OUTBOX_SKIP_MAX; i++) {
        int r = ebb__store_bind_i64(s, st, (int)i + 1, i < n_skip ? skip[i] : -1);
        if (r != 0)
            return r;
    }
    int rc = sqlite3_step(st);
    *at = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    return ebb__store_finish(s, st, rc);
}

int ebb__store_outbox_delivered(struct ebb__store *s, int64_t seq, int attempts,
                                ebb_time_ms now)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_OUTBOX_DELIVERED);
    if (st == NULL)
        return EBB_EDB;
    int r = ebb__store_bind_i64(s, st, 1, seq);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 2, attempts);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 3, now);
    return r != 0 ? r : ebb__store_run(s, st);
}

int ebb__store_outbox_failed(struct ebb__store *s, int64_t seq, int attempts,
                             const char *error, ebb_time_ms next_at, int dead,
                             ebb_time_ms now)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_OUTBOX_FAILED);
    if (st == NULL)
        return EBB_EDB;
    int r = ebb__store_bind_i64(s, st, 1, seq);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 2, attempts);
    if (r == 0)
        r = ebb__store_bind_text(s, st, 3, error != NULL ? error : "");
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 4, next_at);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 5, dead ? 1 : 0);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 6, now);
    return r != 0 ? r : ebb__store_run(s, st);
}

int ebb__store_outbox_prune(struct ebb__store *s, int64_t keep)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_OUTBOX_PRUNE);
    if (st == NULL)
        return EBB_EDB;
    int r = ebb__store_bind_i64(s, st, 1, keep < 0 ? 0 : keep);
    if (r == 0)
        r = ebb__store_run(s, st);
    return r != 0 ? r : sqlite3_changes(s->db);
}

int ebb__store_outbox_json(struct ebb__store *s, int failed_only, int64_t limit,
                           struct json_t **out)
{
    /* ebb__store_query_json binds one text parameter: the filter, "1" or
     * "0"; the limit is a number this function formats itself. */
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT seq, event_id, channel, type, job_id, created_at, status,"
             " attempts, next_at, last_error, done_at FROM notify_outbox"
             " WHERE (?1 = '0' OR status = 'dead') ORDER BY seq DESC"
             " LIMIT %lld", (long long)(limit > 0 ? limit : 1));
    return ebb__store_query_json(s, sql, failed_only ? "1" : "0", out);
}
