/* Schedules in the store (see store_schedules.h). */
#include "store/store_schedules.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store/store_internal.h"
#include "store/store_read.h"

/* Prepares `sql` and binds the values a format describes: 't' text
 * (const char *, NULL binds NULL), 'i' int64. NULL on failure, with the
 * message kept. */
static sqlite3_stmt *prepare(struct ebb__store *s, const char *sql,
                             const char *fmt, ...)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        ebb__store_fail(s, rc);
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    for (int i = 0; fmt[i] != '\0' && rc == SQLITE_OK; i++) {
        if (fmt[i] == 't') {
            const char *v = va_arg(ap, const char *);
            rc = v != NULL ? sqlite3_bind_text(st, i + 1, v, -1, SQLITE_TRANSIENT)
                           : sqlite3_bind_null(st, i + 1);
        } else {
            rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
        }
    }
    va_end(ap);
    if (rc != SQLITE_OK) {
        ebb__store_fail(s, rc);
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* Steps a prepared statement that returns no rows and finalizes it.
 * Returns 0, EBB_EEXISTS for a unique or primary key conflict (the
 * message kept), or another EBB_E* code. *changes (may be NULL): rows
 * changed. */
static int finish(struct ebb__store *s, sqlite3_stmt *st, int *changes)
{
    if (st == NULL)
        return EBB_EDB;
    int rc = sqlite3_step(st);
    int code = rc != SQLITE_DONE ? ebb__store_fail(s, rc) : 0;
    if (changes != NULL)
        *changes = sqlite3_changes(s->db);
    sqlite3_finalize(st);
    return code;
}

int ebb__store_schedule_insert(struct ebb__store *s,
                               const struct ebb__schedule_row *r)
{
    if (r->id == NULL || r->name == NULL || r->cron == NULL ||
        r->yaml == NULL || r->missed == NULL)
        return EBB_EINVAL;
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO schedules (id, name, cron, timezone, template_yaml,"
        " window_ms, budget_micros, currency, missed, next_fire_at,"
        " created_at, owner_uid, file, workdir) VALUES (?1, ?2, ?3, ?4, ?5,"
        " ?6, CASE WHEN ?7 < 0 THEN NULL ELSE ?7 END, ?8, ?9, nullif(?10, 0),"
        " ?11, ?12, ?13, ?14)",
        "tttttiittiiitt", r->id, r->name, r->cron,
        r->timezone ? r->timezone : "UTC", r->yaml, (int64_t)r->window,
        (int64_t)r->budget, r->currency ? r->currency : "USD", r->missed,
        (int64_t)r->next_fire_at, (int64_t)r->created_at,
        (int64_t)r->owner_uid, r->file ? r->file : "",
        r->workdir ? r->workdir : "");
    return finish(s, st, NULL);
}

int ebb__store_schedules_each(struct ebb__store *s,
                              int (*cb)(void *arg,
                                        const struct ebb__schedule_row *r),
                              void *arg)
{
    sqlite3_stmt *st = prepare(s,
        "SELECT id, name, cron, timezone, template_yaml, file, workdir,"
        " missed, currency, owner_uid, window_ms, coalesce(budget_micros, -1),"
        " created_at, coalesce(last_fire_at, 0), coalesce(next_fire_at, 0),"
        " coalesce((SELECT j.id FROM jobs j WHERE j.schedule_id = s.id"
        "  ORDER BY j.schedule_fire_at DESC LIMIT 1), '')"
        " FROM schedules s ORDER BY name", "");
    if (st == NULL)
        return EBB_EDB;
    int rc = SQLITE_DONE, stop = 0;
    while (stop == 0) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
            break;
        struct ebb__schedule_row r = {
            .id = ebb__store_col_text(st, 0),
            .name = ebb__store_col_text(st, 1),
            .cron = ebb__store_col_text(st, 2),
            .timezone = ebb__store_col_text(st, 3),
            .yaml = ebb__store_col_text(st, 4),
            .file = ebb__store_col_text(st, 5),
            .workdir = ebb__store_col_text(st, 6),
            .missed = ebb__store_col_text(st, 7),
            .currency = ebb__store_col_text(st, 8),
            .owner_uid = sqlite3_column_int64(st, 9),
            .window = sqlite3_column_int64(st, 10),
            .budget = sqlite3_column_int64(st, 11),
            .created_at = sqlite3_column_int64(st, 12),
            .last_fire_at = sqlite3_column_int64(st, 13),
            .next_fire_at = sqlite3_column_int64(st, 14),
            .last_job_id = ebb__store_col_text(st, 15),
        };
        stop = cb(arg, &r);
    }
    int code = stop;
    if (stop == 0 && rc != SQLITE_DONE)
        code = ebb__store_fail(s, rc);
    sqlite3_finalize(st);
    return code;
}

int ebb__store_schedule_find(struct ebb__store *s, const char *id_or_name,
                             char *id, size_t idlen, int64_t *owner_uid)
{
    /* An id wins over a name that looks like one. */
    sqlite3_stmt *st = prepare(s,
        "SELECT id, owner_uid FROM schedules WHERE id = ?1 OR name = ?1"
        " ORDER BY id = ?1 DESC LIMIT 1", "t", id_or_name);
    if (st == NULL)
        return EBB_EDB;
    int rc = sqlite3_step(st);
    int code = 0;
    if (rc == SQLITE_ROW) {
        snprintf(id, idlen, "%s", ebb__store_col_text(st, 0));
        if (owner_uid != NULL)
            *owner_uid = sqlite3_column_int64(st, 1);
    } else {
        code = rc == SQLITE_DONE ? EBB_ENOTFOUND : ebb__store_fail(s, rc);
    }
    sqlite3_finalize(st);
    return code;
}

int ebb__store_schedule_remove(struct ebb__store *s, const char *id)
{
    int changes = 0;
    int rc = finish(s, prepare(s, "DELETE FROM schedules WHERE id = ?1", "t", id),
                    &changes);
    return rc == 0 && changes == 0 ? EBB_ENOTFOUND : rc;
}

int ebb__store_schedule_fired(struct ebb__store *s, const char *id,
                              ebb_time_ms last_fire_at,
                              ebb_time_ms next_fire_at)
{
    int changes = 0;
    int rc = finish(s, prepare(s,
        "UPDATE schedules SET last_fire_at = ?2, next_fire_at = nullif(?3, 0)"
        " WHERE id = ?1", "tii", id, (int64_t)last_fire_at,
        (int64_t)next_fire_at), &changes);
    return rc == 0 && changes == 0 ? EBB_ENOTFOUND : rc;
}

int ebb__store_schedule_link(struct ebb__store *s, const char *job_id,
                             const char *schedule_id, ebb_time_ms fire_at)
{
    int changes = 0;
    int rc = finish(s, prepare(s,
        "UPDATE jobs SET schedule_id = ?2, schedule_fire_at = ?3 WHERE id = ?1",
        "tti", job_id, schedule_id, (int64_t)fire_at), &changes);
    return rc == 0 && changes == 0 ? EBB_ENOTFOUND : rc;
}

int ebb__store_schedule_event(struct ebb__store *s, const char *schedule_id,
                              ebb_time_ms at, ebb_time_ms fire_at,
                              const char *kind, const char *job_id,
                              const char *reason)
{
    return finish(s, prepare(s,
        "INSERT INTO schedule_events (schedule_id, at, fire_at, kind, job_id,"
        " reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", "tiittt", schedule_id,
        (int64_t)at, (int64_t)fire_at, kind, job_id, reason ? reason : ""),
        NULL);
}

#define SCHEDULE_COLUMNS                                                     \
    "s.id, s.name, s.cron, s.timezone, s.window_ms, s.budget_micros, "      \
    "s.currency, s.missed, s.owner_uid, s.file, s.created_at, "             \
    "s.last_fire_at, s.next_fire_at, "                                      \
    "(SELECT j.id FROM jobs j WHERE j.schedule_id = s.id "                  \
    " ORDER BY j.schedule_fire_at DESC LIMIT 1) AS last_job_id, "           \
    "(SELECT j.state FROM jobs j WHERE j.schedule_id = s.id "               \
    " ORDER BY j.schedule_fire_at DESC LIMIT 1) AS last_job_state"

int ebb__store_schedules_json(struct ebb__store *s, json_t **out)
{
    return ebb__store_query_json(
        s, "SELECT " SCHEDULE_COLUMNS " FROM schedules s ORDER BY s.name", NULL,
        out);
}

int ebb__store_schedule_json(struct ebb__store *s, const char *id,
                             int max_rows, json_t **out)
{
    json_t *rows;
    int rc = ebb__store_query_json(
        s, "SELECT " SCHEDULE_COLUMNS ", s.template_yaml AS yaml, s.workdir "
           "FROM schedules s WHERE s.id = ?1", id, &rows);
    if (rc != 0)
        return rc;
    json_t *sched = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    if (sched == NULL)
        return EBB_ENOTFOUND;
    char runs[256], events[256];
    snprintf(runs, sizeof(runs),
             "SELECT id, state, schedule_fire_at AS fire_at, submitted_at, "
             "deadline, spent_micros, currency FROM jobs WHERE schedule_id = ?1 "
             "ORDER BY schedule_fire_at DESC LIMIT %d", max_rows);
    snprintf(events, sizeof(events),
             "SELECT at, fire_at, kind, job_id, reason FROM schedule_events "
             "WHERE schedule_id = ?1 ORDER BY seq DESC LIMIT %d", max_rows);
    const char *const parts[][2] = {{"runs", runs}, {"events", events}};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        rc = ebb__store_query_json(s, parts[i][1], id, &rows);
        if (rc != 0) {
            json_decref(sched);
            return rc;
        }
        json_object_set_new(sched, parts[i][0], rows);
    }
    *out = sched;
    return 0;
}
