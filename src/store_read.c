#include "store_read.h"

#include "store_internal.h"

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
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
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

int ebb__store_job_json(struct ebb__store *s, const char *id, json_t **out)
{
    static const struct {
        const char *key, *sql;
    } parts[] = {
        {"events", "SELECT at, from_state, to_state, reason FROM job_events "
                   "WHERE job_id = ?1 ORDER BY seq"},
        {"instances", "SELECT token, provider, region, zone, instance_type, "
                      "market, provider_instance_id, state, requested_at, "
                      "started_at, ended_at, end_reason, price_micros, currency "
                      "FROM instances WHERE job_id = ?1 ORDER BY requested_at, token"},
        {"checkpoints", "SELECT at, path, work_done_ms, instance_token FROM "
                        "checkpoints WHERE job_id = ?1 AND complete = 1 ORDER BY id"},
        {"spent_by_kind", "SELECT kind, currency, SUM(amount_micros) AS amount_micros "
                          "FROM ledger WHERE job_id = ?1 GROUP BY kind, currency "
                          "ORDER BY kind"},
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
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        rc = query_rows(s, parts[i].sql, id, &rows);
        if (rc != 0) {
            json_decref(job);
            return rc;
        }
        json_object_set_new(job, parts[i].key, rows);
    }
    *out = job;
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

int ebb__store_query_json(struct ebb__store *s, const char *sql, const char *id,
                          json_t **out)
{
    return query_rows(s, sql, id, out);
}
