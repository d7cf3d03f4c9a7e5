/* Learned speeds (store_speeds.h). Their SQL is in store_sql.h. */
#include "store/store_speeds.h"

#include "store/store_internal.h"

int ebb__store_speed_put(struct ebb__store *s, const struct ebb__speed_key *k,
                         long long samples, const char *rates, ebb_time_ms at)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_SPEED_PUT);
    if (st == NULL)
        return EBB_EDB;
    const char *text[] = {k->family, k->gpu_model, k->provider, k->host};
    int rc = 0;
    for (int i = 0; rc == 0 && i < 4; i++)
        rc = ebb__store_bind_text(s, st, i + 1, text[i]);
    if (rc == 0)
        rc = ebb__store_bind_i64(s, st, 5, samples);
    if (rc == 0)
        rc = ebb__store_bind_text(s, st, 6, rates);
    if (rc == 0)
        rc = ebb__store_bind_i64(s, st, 7, at);
    if (rc != 0) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return rc;
    }
    return ebb__store_run(s, st);
}

struct each {
    ebb__speed_row_cb cb;
    void *arg;
};

static int speed_row(sqlite3_stmt *st, void *arg)
{
    struct each *e = arg;
    struct ebb__speed_key k = {
        .family = ebb__store_col_text(st, 0),
        .gpu_model = ebb__store_col_text(st, 1),
        .provider = ebb__store_col_text(st, 2),
        .host = ebb__store_col_text(st, 3),
    };
    return e->cb(e->arg, &k, sqlite3_column_int64(st, 4), ebb__store_col_text(st, 5));
}

int ebb__store_speed_each(struct ebb__store *s, ebb__speed_row_cb cb, void *arg)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_SPEED_ALL);
    if (st == NULL)
        return EBB_EDB;
    struct each e = {cb, arg};
    return ebb__store_each(s, st, speed_row, &e);
}
