/* Checkpoint transfer rates (store_rates.h). Their SQL is in store_sql.h. */
#include "store/store_rates.h"

#include "store/store_internal.h"

int ebb__store_rates_put(struct ebb__store *s, const char *job_id,
                         const struct ebb__transfer_rates *r, ebb_time_ms at)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_RATES_PUT);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "tiiii", job_id, r->up_bytes_per_s, r->down_bytes_per_s,
                             (int64_t)r->last_write, (int64_t)at);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

static int rates_row(sqlite3_stmt *st, void *arg)
{
    struct ebb__transfer_rates *r = arg;
    *r = (struct ebb__transfer_rates){
        .up_bytes_per_s = sqlite3_column_int64(st, 0),
        .down_bytes_per_s = sqlite3_column_int64(st, 1),
        .last_write = sqlite3_column_int64(st, 2),
    };
    return 1;
}

int ebb__store_rates_get(struct ebb__store *s, const char *job_id,
                         struct ebb__transfer_rates *r)
{
    *r = (struct ebb__transfer_rates){0};
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_RATES_GET);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "t", job_id);
    if (rc == 0)
        rc = ebb__store_each(s, st, rates_row, r);
    return rc < 0 ? rc : rc == 1 ? 0 : EBB_ENOTFOUND;
}
