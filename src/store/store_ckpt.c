/* Checkpoint keys and checkpoints in object stores (store_ckpt.h). Their
 * SQL is in store_sql.h. */
#include "store/store_ckpt.h"

#include <string.h>

#include "store/store_internal.h"

int ebb__store_ckpt_key_get(struct ebb__store *s, const char *job_id,
                            char hex[65], int *version)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CKPT_KEY_GET);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind_text(s, st, 1, job_id);
    if (rc != 0) {
        sqlite3_clear_bindings(st);
        return rc;
    }
    int step = sqlite3_step(st);
    rc = EBB_ENOTFOUND;
    if (step == SQLITE_ROW) {
        const char *k = ebb__store_col_text(st, 0);
        rc = strlen(k) == 64 ? 0 : ebb__store_invalid(s, "a checkpoint key is not 64 hex digits");
        if (rc == 0) {
            memcpy(hex, k, 65);
            *version = sqlite3_column_int(st, 1);
        }
        step = SQLITE_DONE;
    }
    int end = ebb__store_finish(s, st, step);
    return end != 0 ? end : rc;
}

int ebb__store_ckpt_key_put(struct ebb__store *s, const char *job_id,
                            const char *hex, ebb_time_ms at)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CKPT_KEY_PUT);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind_text(s, st, 1, job_id);
    if (rc == 0)
        rc = ebb__store_bind_text(s, st, 2, hex);
    if (rc == 0)
        rc = ebb__store_bind_i64(s, st, 3, at);
    if (rc != 0) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return rc;
    }
    return ebb__store_run(s, st);
}

int ebb__store_ckpt_insert(struct ebb__store *s, const struct ebb__ckpt_row *r,
                           int64_t *seq)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CKPT_INSERT);
    if (st == NULL)
        return EBB_EDB;
    const char *text[] = {r->job_id, r->instance_token, r->store, r->name,
                          r->kind, r->state, r->files};
    int rc = 0;
    for (int i = 0; i < 7 && rc == 0; i++)
        rc = ebb__store_bind_text(s, st, i + 1, text[i]);
    if (rc == 0)
        rc = ebb__store_bind_i64(s, st, 8, r->encrypt ? 1 : 0);
    if (rc == 0)
        rc = ebb__store_bind_i64(s, st, 9, r->bytes);
    if (rc == 0)
        rc = ebb__store_bind_i64(s, st, 10, r->created_at);
    if (rc == 0)
        rc = ebb__store_bind_i64(s, st, 11, r->rank);
    if (rc != 0) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return rc;
    }
    rc = ebb__store_run(s, st);
    if (rc == 0)
        *seq = sqlite3_last_insert_rowid(s->db);
    return rc;
}

int ebb__store_ckpt_update(struct ebb__store *s, int64_t seq, const char *state,
                           const char *files, const char *reason,
                           ebb_time_ms updated_at, ebb_time_ms durable_at,
                           ebb_dur_ms upload_ms, ebb_dur_ms duration_ms,
                           int periodic)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CKPT_UPDATE);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind_i64(s, st, 1, seq);
    if (rc == 0)
        rc = ebb__store_bind_text(s, st, 2, state);
    if (rc == 0 && files != NULL)
        rc = ebb__store_bind_text(s, st, 3, files);
    if (rc == 0 && reason != NULL)
        rc = ebb__store_bind_text(s, st, 4, reason);
    const int64_t nums[] = {updated_at, durable_at, upload_ms, duration_ms,
                            periodic};
    for (int i = 0; i < 5 && rc == 0; i++)
        rc = ebb__store_bind_i64(s, st, i + 5, nums[i]);
    if (rc != 0) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return rc;
    }
    rc = ebb__store_run(s, st);
    if (rc == 0 && sqlite3_changes(s->db) == 0)
        return EBB_ENOTFOUND;
    return rc;
}

struct row_cb {
    ebb__ckpt_row_cb cb;
    void *arg;
    int seen;
};

static int row(sqlite3_stmt *st, void *arg)
{
    struct row_cb *c = arg;
    struct ebb__ckpt_row r = {
        .seq = sqlite3_column_int64(st, 0),
        .job_id = ebb__store_col_text(st, 1),
        .instance_token = ebb__store_col_text(st, 2),
        .store = ebb__store_col_text(st, 3),
        .name = ebb__store_col_text(st, 4),
        .kind = ebb__store_col_text(st, 5),
        .state = ebb__store_col_text(st, 6),
        .files = ebb__store_col_text(st, 7),
        .encrypt = sqlite3_column_int(st, 8),
        .bytes = sqlite3_column_int64(st, 9),
        .upload_ms = sqlite3_column_int64(st, 10),
        .duration_ms = sqlite3_column_int64(st, 11),
        .periodic = sqlite3_column_int(st, 12),
        .created_at = sqlite3_column_int64(st, 13),
        .durable_at = sqlite3_column_int64(st, 14),
        .updated_at = sqlite3_column_int64(st, 15),
        .reason = ebb__store_col_text(st, 16),
        .rank = (unsigned)sqlite3_column_int(st, 17),
    };
    c->seen = 1;
    return c->cb(c->arg, &r);
}

int ebb__store_ckpt_get(struct ebb__store *s, int64_t seq, const char *job_id,
                        ebb__ckpt_row_cb cb, void *arg)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CKPT_GET);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind_i64(s, st, 1, seq);
    if (rc == 0 && job_id != NULL)
        rc = ebb__store_bind_text(s, st, 2, job_id);
    if (rc != 0) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return rc;
    }
    struct row_cb c = {cb, arg, 0};
    rc = ebb__store_each(s, st, row, &c);
    return rc != 0 ? rc : c.seen ? 0 : EBB_ENOTFOUND;
}

int ebb__store_ckpt_of_job(struct ebb__store *s, const char *job_id,
                           const char *state, int rank, ebb__ckpt_row_cb cb, void *arg)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CKPT_OF_JOB);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind_text(s, st, 1, job_id);
    if (rc == 0 && state != NULL)
        rc = ebb__store_bind_text(s, st, 2, state);
    if (rc == 0)
        rc = ebb__store_bind_i64(s, st, 3, rank);
    if (rc != 0) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return rc;
    }
    struct row_cb c = {cb, arg, 0};
    return ebb__store_each(s, st, row, &c);
}

int ebb__store_ckpt_open(struct ebb__store *s, int durable_of_ended,
                         ebb__ckpt_row_cb cb, void *arg)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CKPT_OPEN);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind_i64(s, st, 1, durable_of_ended ? 1 : 0);
    if (rc != 0) {
        sqlite3_clear_bindings(st);
        return rc;
    }
    struct row_cb c = {cb, arg, 0};
    return ebb__store_each(s, st, row, &c);
}

int ebb__store_ckpt_instance_ended(struct ebb__store *s, const char *token)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CKPT_INSTANCE_ENDED);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind_text(s, st, 1, token);
    if (rc != 0) {
        sqlite3_clear_bindings(st);
        return rc;
    }
    int step = sqlite3_step(st);
    int ended = step == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    rc = ebb__store_finish(s, st, step == SQLITE_ROW ? SQLITE_DONE : step);
    return rc != 0 ? rc : ended;
}
