#include "store/store_read.h"

#include "store/store_internal.h"

static json_t *column_json(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return json_integer(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
        return json_real(sqlite3_column_double(st, i));
    case SQLITE_NULL:
        return json_null();
    default:
        return json_stringn((const char *)sqlite3_column_text(st, i),
                            (size_t)sqlite3_column_bytes(st, i));
    }
}

/* Runs `sql` with `id` bound to ?1 (when not NULL) and returns its rows. */
static int query_rows(struct ebb__store *s, const char *sql, const char *id,
                      json_t **out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return ebb__store_fail(s, rc);
    if (id != NULL && sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT) != SQLITE_OK) {
        rc = ebb__store_fail(s, sqlite3_errcode(s->db));
        sqlite3_finalize(st);
        return rc;
    }
    json_t *rows = json_array();
    for (;;) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
            break;
        json_t *row = json_object();
        for (int i = 0; i < sqlite3_column_count(st); i++)
            json_object_set_new(row, sqlite3_column_name(st, i), column_json(st, i));
        json_array_append_new(rows, row);
    }
    if (rc != SQLITE_DONE) {
        rc = ebb__store_fail(s, rc);
        sqlite3_finalize(st);
        json_decref(rows);
        return rc;
    }
    sqlite3_finalize(st);
    *out = rows;
    return 0;
}

#define JOB_COLUMNS                                                          \
    "id, name, state, policy, owner_uid, team, submitted_at, deadline, "    \
    "work_ms, work_done_ms, budget_micros, currency, spent_micros, "        \
    "retries, preemptions, updated_at"

int ebb__store_jobs_json(struct ebb__store *s, int all, json_t **out)
{
    return query_rows(s,
                      all ? "SELECT " JOB_COLUMNS " FROM jobs "
                            "ORDER BY submitted_at DESC, id DESC"
                          : "SELECT " JOB_COLUMNS " FROM jobs WHERE state NOT IN "
                            "('succeeded', 'failed', 'cancelled', "
                            "'budget_exhausted', 'deadline_missed') "
                            "ORDER BY submitted_at DESC, id DESC",
                      NULL, out);
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define NEWEST " LIMIT " STR(EBB__STORE_JOB_ROWS)

static int stored_checkpoints(struct ebb__store *s, const char *id, json_t *job);

int ebb__store_job_json(struct ebb__store *s, const char *id, json_t **out)
{
    /* Each list is its newest rows, put back in time order. */
    static const struct {
        const char *key, *sql, *count;
    } parts[] = {
        {"events", "SELECT at, from_state, to_state, reason FROM (SELECT seq, at, "
                   "from_state, to_state, reason FROM job_events WHERE job_id = ?1 "
                   "ORDER BY seq DESC" NEWEST ") ORDER BY seq",
         "SELECT COUNT(*) AS n FROM job_events WHERE job_id = ?1"},
        {"instances", "SELECT * FROM (SELECT token, provider, region, zone, "
                      "instance_type, market, provider_instance_id, state, "
                      "requested_at, started_at, ended_at, end_reason, price_micros, "
                      "currency FROM instances WHERE job_id = ?1 ORDER BY "
                      "requested_at DESC, token DESC" NEWEST ") ORDER BY requested_at, token",
         "SELECT COUNT(*) AS n FROM instances WHERE job_id = ?1"},
        {"checkpoints", "SELECT at, path, work_done_ms, instance_token FROM (SELECT id, "
                        "at, path, work_done_ms, instance_token FROM checkpoints WHERE "
                        "job_id = ?1 AND complete = 1 ORDER BY id DESC" NEWEST
                        ") ORDER BY id",
         "SELECT COUNT(*) AS n FROM checkpoints WHERE job_id = ?1 AND complete = 1"},
        {"spent_by_kind", "SELECT kind, currency, SUM(amount_micros) AS amount_micros "
                          "FROM ledger WHERE job_id = ?1 GROUP BY kind, currency "
                          "ORDER BY kind", NULL},
    };
    json_t *rows;
    int rc = query_rows(s, "SELECT " JOB_COLUMNS ", spec_json, spec_yaml FROM jobs "
                        "WHERE id = ?1", id, &rows);
    if (rc != 0)
        return rc;
    json_t *job = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    if (job == NULL)
        return EBB_ENOTFOUND;
    json_t *spec = json_loads(json_string_value(json_object_get(job, "spec_json")),
                              0, NULL);
    json_object_set_new(job, "spec", spec ? spec : json_object());
    json_object_del(job, "spec_json");
    json_t *omitted = json_object();
    json_object_set_new(job, "omitted", omitted);
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        rows = NULL;
        rc = query_rows(s, parts[i].sql, id, &rows);
        json_t *count = NULL;
        if (rc == 0 && parts[i].count != NULL)
            rc = query_rows(s, parts[i].count, id, &count);
        if (rc != 0) {
            json_decref(rows);
            json_decref(job);
            return rc;
        }
        json_object_set_new(job, parts[i].key, rows);
        if (count != NULL) {
            json_int_t n = json_integer_value(
                json_object_get(json_array_get(count, 0), "n"));
            json_object_set_new(omitted, parts[i].key,
                                json_integer(n - (json_int_t)json_array_size(rows)));
            json_decref(count);
        }
    }
    rc = stored_checkpoints(s, id, job);
    if (rc != 0) {
        json_decref(job);
        return rc;
    }
    *out = job;
    return 0;
}

/* A job with a store lists its stored checkpoints instead, newest first
 * (store_read.h). */
static int stored_checkpoints(struct ebb__store *s, const char *id, json_t *job)
{
    json_t *rows = NULL, *count = NULL;
    int rc = query_rows(s, "SELECT COUNT(*) AS n FROM stored_checkpoints WHERE job_id = ?1",
                        id, &count);
    json_int_t n = json_integer_value(json_object_get(json_array_get(count, 0), "n"));
    json_decref(count);
    if (rc != 0 || n == 0)
        return rc;
    rc = query_rows(s, "SELECT seq AS id, name, state, state = 'durable' AS durable, bytes,"
                    " upload_ms / 1000.0 AS upload_seconds, created_at AS created, store,"
                    " durable_at, reason, rank FROM stored_checkpoints WHERE job_id = ?1"
                    " ORDER BY seq DESC" NEWEST, id, &rows);
    if (rc != 0)
        return rc;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        json_object_set_new(row, "durable", json_boolean(json_integer_value(
                                                json_object_get(row, "durable"))));
    }
    json_object_set_new(job, "checkpoints", rows);
    json_object_set_new(json_object_get(job, "omitted"), "checkpoints",
                        json_integer(n - (json_int_t)json_array_size(rows)));
    return 0;
}

int ebb__store_job_owner(struct ebb__store *s, const char *id, int64_t *uid)
{
    json_t *rows;
    int rc = query_rows(s, "SELECT owner_uid FROM jobs WHERE id = ?1", id, &rows);
    if (rc != 0)
        return rc;
    json_t *row = json_array_get(rows, 0);
    rc = row ? 0 : EBB_ENOTFOUND;
    if (row)
        *uid = json_integer_value(json_object_get(row, "owner_uid"));
    json_decref(rows);
    return rc;
}

static const char *col(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

/* Steps `sql` and hands each row to `row` (a per-kind adapter). */
static int each_row(struct ebb__store *s, const char *sql,
                    int (*row)(sqlite3_stmt *st, void *arg), void *arg)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return ebb__store_fail(s, rc);
    int cb_rc = 0;
    for (;;) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
            break;
        cb_rc = row(st, arg);
        if (cb_rc != 0)
            break;
    }
    if (cb_rc == 0 && rc != SQLITE_DONE)
        cb_rc = ebb__store_fail(s, rc);
    sqlite3_finalize(st);
    return cb_rc;
}

struct job_cb {
    int (*cb)(void *arg, const struct ebb__recover_job_row *r);
    void *arg;
};

static int job_row(sqlite3_stmt *st, void *arg)
{
    struct job_cb *c = arg;
    struct ebb__recover_job_row r = {
        .id = col(st, 0), .spec_json = col(st, 1), .spec_yaml = col(st, 2),
        .state = col(st, 3), .workdir = col(st, 4),
        .owner_uid = sqlite3_column_int64(st, 5),
        .submitted_at = sqlite3_column_int64(st, 6),
        .deadline = sqlite3_column_int64(st, 7),
        .work_done_ms = sqlite3_column_int64(st, 8),
        .spent = sqlite3_column_int64(st, 9),
        .retries = sqlite3_column_int(st, 10),
        .preemptions = sqlite3_column_int(st, 11),
        .attempts = sqlite3_column_int(st, 12),
    };
    return c->cb(c->arg, &r);
}

int ebb__store_unfinished_jobs(struct ebb__store *s,
                               int (*cb)(void *arg, const struct ebb__recover_job_row *r),
                               void *arg)
{
    struct job_cb c = {cb, arg};
    return each_row(s,
                    "SELECT id, spec_json, spec_yaml, state, workdir, owner_uid,"
                    " submitted_at, coalesce(deadline, 0), work_done_ms,"
                    /* The ledger, not the job row, is the truth about spend:
                     * a crash may fall between a bill and the row's update. */
                    " coalesce((SELECT sum(amount_micros) FROM ledger l"
                    "  WHERE l.job_id = j.id), 0),"
                    " retries, preemptions,"
                    " (SELECT count(*) FROM instances i WHERE i.job_id = j.id)"
                    " FROM jobs j WHERE state NOT IN ('succeeded', 'failed',"
                    " 'cancelled', 'budget_exhausted', 'deadline_missed')"
                    " ORDER BY submitted_at, rowid",
                    job_row, &c);
}

struct inst_cb {
    int (*cb)(void *arg, const struct ebb__open_instance_row *r);
    void *arg;
};

static int inst_row(sqlite3_stmt *st, void *arg)
{
    struct inst_cb *c = arg;
    struct ebb__open_instance_row r = {
        .token = col(st, 0), .job_id = col(st, 1), .provider = col(st, 2),
        .market_plugin = col(st, 3), .region = col(st, 4), .zone = col(st, 5),
        .instance_type = col(st, 6), .product = col(st, 7), .market = col(st, 8),
        .state = col(st, 9), .provider_instance_id = col(st, 10),
        .shadow_id = col(st, 11), .agent_token_hash = col(st, 12),
        .currency = col(st, 13),
        .requested_at = sqlite3_column_int64(st, 14),
        .started_at = sqlite3_column_int64(st, 15),
        .price = sqlite3_column_int64(st, 16),
    };
    return c->cb(c->arg, &r);
}

int ebb__store_open_instances(struct ebb__store *s,
                              int (*cb)(void *arg, const struct ebb__open_instance_row *r),
                              void *arg)
{
    struct inst_cb c = {cb, arg};
    return each_row(s,
                    "SELECT token, job_id, provider, market_plugin, region, zone,"
                    " instance_type, product, market, state, provider_instance_id,"
                    " shadow_id, agent_token_hash, currency, requested_at,"
                    " coalesce(started_at, 0), coalesce(price_micros, 0)"
                    " FROM instances WHERE state IN ('intent', 'launching',"
                    " 'running', 'terminating') ORDER BY requested_at, token",
                    inst_row, &c);
}

int ebb__store_query_json(struct ebb__store *s, const char *sql, const char *id,
                          json_t **out)
{
    return query_rows(s, sql, id, out);
}
