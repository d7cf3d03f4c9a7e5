/* Packed workdirs in object stores (store_workdir.h). Their SQL is in
 * store_sql.h. */
#include "store/store_workdir.h"

#include <stdio.h>
#include <string.h>

#include "store/store_internal.h"

/* Binds `text` to ?1.. then `nums` after them; resets on failure. */
static int bind_all(struct ebb__store *s, sqlite3_stmt *st, const char *const *text,
                    int n_text, const int64_t *nums, int n_nums)
{
    int rc = 0;
    for (int i = 0; rc == 0 && i < n_text; i++)
        rc = ebb__store_bind_text(s, st, i + 1, text[i]);
    for (int i = 0; rc == 0 && i < n_nums; i++)
        rc = ebb__store_bind_i64(s, st, n_text + i + 1, nums[i]);
    if (rc != 0) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    return rc;
}

int ebb__store_workdir_secret_get(struct ebb__store *s, char hex[65])
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_WORKDIR_SECRET_GET);
    if (st == NULL)
        return EBB_EDB;
    int step = sqlite3_step(st), rc = EBB_ENOTFOUND;
    if (step == SQLITE_ROW) {
        const char *k = ebb__store_col_text(st, 0);
        rc = strlen(k) == 64 ? 0 : ebb__store_invalid(s, "the workdir secret is not 64 "
                                                         "hex digits");
        if (rc == 0)
            memcpy(hex, k, 65);
        step = SQLITE_DONE;
    }
    int end = ebb__store_finish(s, st, step);
    return end != 0 ? end : rc;
}

int ebb__store_workdir_secret_put(struct ebb__store *s, const char *hex, ebb_time_ms at)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_WORKDIR_SECRET_PUT);
    if (st == NULL)
        return EBB_EDB;
    const char *text[] = {hex};
    int64_t nums[] = {at};
    int rc = bind_all(s, st, text, 1, nums, 1);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

int ebb__store_workdir_stored(struct ebb__store *s, const char *store, const char *sha256,
                              int64_t *size, int64_t *stored_size)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_WORKDIR_STORED_GET);
    if (st == NULL)
        return EBB_EDB;
    const char *text[] = {store, sha256};
    int rc = bind_all(s, st, text, 2, NULL, 0);
    if (rc != 0)
        return rc;
    int step = sqlite3_step(st);
    rc = EBB_ENOTFOUND;
    if (step == SQLITE_ROW) {
        *size = sqlite3_column_int64(st, 0);
        *stored_size = sqlite3_column_int64(st, 1);
        rc = 0;
        step = SQLITE_DONE;
    }
    int end = ebb__store_finish(s, st, step);
    return end != 0 ? end : rc;
}

int ebb__store_workdir_stored_put(struct ebb__store *s, const char *store,
                                  const char *sha256, int64_t size, int64_t stored_size,
                                  ebb_time_ms at)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_WORKDIR_STORED_PUT);
    if (st == NULL)
        return EBB_EDB;
    const char *text[] = {store, sha256};
    int64_t nums[] = {size, stored_size, at};
    int rc = bind_all(s, st, text, 2, nums, 3);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

int ebb__store_job_workdir_put(struct ebb__store *s, const char *job_id,
                               const struct ebb__job_workdir *w)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_WORKDIR_JOB_PUT);
    if (st == NULL)
        return EBB_EDB;
    const char *text[] = {job_id, w->store, w->sha256};
    int64_t nums[] = {w->size, w->stored_size};
    int rc = bind_all(s, st, text, 3, nums, 2);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

int ebb__store_job_workdir_get(struct ebb__store *s, const char *job_id,
                               struct ebb__job_workdir *w)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_WORKDIR_JOB_GET);
    if (st == NULL)
        return EBB_EDB;
    const char *text[] = {job_id};
    int rc = bind_all(s, st, text, 1, NULL, 0);
    if (rc != 0)
        return rc;
    int step = sqlite3_step(st);
    rc = EBB_ENOTFOUND;
    if (step == SQLITE_ROW) {
        const char *store = ebb__store_col_text(st, 0), *sha = ebb__store_col_text(st, 1);
        rc = strlen(store) < sizeof(w->store) && strlen(sha) == 64
                 ? 0 : ebb__store_invalid(s, "a job's workdir row is not well formed");
        if (rc == 0) {
            snprintf(w->store, sizeof(w->store), "%s", store);
            memcpy(w->sha256, sha, 65);
            w->size = sqlite3_column_int64(st, 2);
            w->stored_size = sqlite3_column_int64(st, 3);
        }
        step = SQLITE_DONE;
    }
    int end = ebb__store_finish(s, st, step);
    return end != 0 ? end : rc;
}

int ebb__store_workdir_touch(struct ebb__store *s, const char *store, const char *sha256,
                             ebb_time_ms at)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_WORKDIR_STORED_TOUCH);
    if (st == NULL)
        return EBB_EDB;
    const char *text[] = {store, sha256};
    int64_t nums[] = {at};
    int rc = bind_all(s, st, text, 2, nums, 1);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

int ebb__store_workdir_forget(struct ebb__store *s, const char *store, const char *sha256)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_WORKDIR_STORED_DELETE);
    if (st == NULL)
        return EBB_EDB;
    const char *text[] = {store, sha256};
    int rc = bind_all(s, st, text, 2, NULL, 0);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

struct unused {
    ebb__workdir_row_cb cb;
    void *arg;
};

static int unused_row(sqlite3_stmt *st, void *arg)
{
    struct unused *u = arg;
    return u->cb(u->arg, ebb__store_col_text(st, 0), ebb__store_col_text(st, 1));
}

int ebb__store_workdir_unused(struct ebb__store *s, ebb_time_ms before, int max,
                              ebb__workdir_row_cb cb, void *arg)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_WORKDIR_UNUSED);
    if (st == NULL)
        return EBB_EDB;
    int64_t nums[] = {before, max};
    int rc = bind_all(s, st, NULL, 0, nums, 2);
    if (rc != 0)
        return rc;
    struct unused u = {cb, arg};
    return ebb__store_each(s, st, unused_row, &u);
}
