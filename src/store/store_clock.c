/* The clock's position in the store and the billing check (store_clock.h). */
#include "store/store_clock.h"

#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "store/store_internal.h"

int ebb__store_clock_get(struct ebb__store *s, struct ebb__clock_history *out)
{
    *out = (struct ebb__clock_history){0};
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CLOCK_GET);
    if (st == NULL)
        return EBB_EDB;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->start_known = sqlite3_column_type(st, 0) != SQLITE_NULL;
        out->start = sqlite3_column_int64(st, 0);
        out->speed = sqlite3_column_double(st, 1);
        out->latest = sqlite3_column_int64(st, 2);
    }
    return ebb__store_finish(s, st, rc);
}

int ebb__store_clock_set(struct ebb__store *s, ebb_time_ms start, double speed,
                         ebb_time_ms now)
{
    if (start < 0 || now < 0 || !(speed > 0))
        return ebb__store_invalid(s, "clock: a negative time or a speed not above 0");
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CLOCK_SET);
    if (st == NULL)
        return EBB_EDB;
    int r = ebb__store_bind_i64(s, st, 1, start);
    if (r == 0 && sqlite3_bind_double(st, 2, speed) != SQLITE_OK)
        r = ebb__store_fail(s, sqlite3_errcode(s->db));
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 3, now);
    if (r != 0) {
        sqlite3_clear_bindings(st);
        return r;
    }
    return ebb__store_run(s, st);
}

void ebb__store_clock_follow(struct ebb__store *s,
                             ebb_time_ms (*now)(void *arg), void *arg)
{
    s->clock_now = now;
    s->clock_arg = arg;
}

int ebb__store_clock_stamp(struct ebb__store *s)
{
    if (s->clock_now == NULL)
        return 0;
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CLOCK_STAMP);
    if (st == NULL)
        return EBB_EDB;
    int r = ebb__store_bind_i64(s, st, 1, s->clock_now(s->clock_arg));
    return r != 0 ? r : ebb__store_run(s, st);
}

/* ---- the billing check ------------------------------------------------- */

/* One row per instance that breaks a rule, with what it is. An instance's
 * compute and overhead rows must tile its run: the first starts when it
 * started, the last ends no earlier than its end and less than a second
 * later (billing counts started seconds), and their lengths add up to the
 * span they cover (a gap or a second bill would not). */
static const char check_sql[] =
    "SELECT token, state, requested_at, started_at, ended_at, n, first, last,"
    " billed FROM ("
    " SELECT i.token, i.state, i.requested_at, i.started_at, i.ended_at,"
    "  count(l.id) AS n, min(l.start_at) AS first, max(l.end_at) AS last,"
    "  coalesce(sum(l.end_at - l.start_at), 0) AS billed,"
    "  i.state IN ('terminated', 'failed') AS ended"
    " FROM instances i LEFT JOIN ledger l ON l.instance_token = i.token"
    "  AND l.kind IN ('compute', 'overhead')"
    " GROUP BY i.token)"
    " WHERE ended_at < requested_at OR ended_at < started_at"
    "  OR (ended AND ended_at IS NULL)"
    "  OR (NOT ended AND n > 0)"
    "  OR (ended AND started_at IS NOT NULL AND ended_at > started_at"
    "   AND (n = 0 OR first <> started_at OR last < ended_at"
    "    OR last >= ended_at + 1000 OR billed <> last - first))"
    "  OR (ended AND (started_at IS NULL OR ended_at <= started_at) AND n > 0)"
    " ORDER BY token";

/* Column `col` as a time in buf ("never" for NULL). */
static void when(sqlite3_stmt *st, int col, char *buf, size_t len)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        snprintf(buf, len, "never");
    else
        ebb_format_time(sqlite3_column_int64(st, col), buf, len);
}

/* What is wrong with one row of check_sql, in words. */
static void describe(sqlite3_stmt *st, char *out, size_t len)
{
    char req[40], start[40], end[40], first[40], last[40];
    const char *token = ebb__store_col_text(st, 0);
    const char *state = ebb__store_col_text(st, 1);
    int ended = strcmp(state, "terminated") == 0 || strcmp(state, "failed") == 0;
    int64_t n = sqlite3_column_int64(st, 5);
    int has_start = sqlite3_column_type(st, 3) != SQLITE_NULL;
    int has_end = sqlite3_column_type(st, 4) != SQLITE_NULL;
    int64_t s = sqlite3_column_int64(st, 3), e = sqlite3_column_int64(st, 4);
    when(st, 2, req, sizeof(req));
    when(st, 3, start, sizeof(start));
    when(st, 4, end, sizeof(end));
    when(st, 6, first, sizeof(first));
    when(st, 7, last, sizeof(last));
    if (has_end && (e < sqlite3_column_int64(st, 2) || (has_start && e < s)))
        snprintf(out, len, "instance %s ends (%s) before it was requested (%s) "
                 "or started (%s)", token, end, req, start);
    else if (ended && !has_end)
        snprintf(out, len, "instance %s is %s but has no end time", token, state);
    else if (!ended)
        snprintf(out, len, "instance %s is still %s and already has %lld ledger "
                 "rows", token, state, (long long)n);
    else if (!has_start || e <= s)
        snprintf(out, len, "instance %s never ran (started %s, ended %s) but has "
                 "%lld ledger rows", token, start, end, (long long)n);
    else if (n == 0)
        snprintf(out, len, "instance %s ran from %s to %s and has no ledger row",
                 token, start, end);
    else
        snprintf(out, len, "instance %s ran from %s to %s; its %lld ledger rows "
                 "bill %lld ms from %s to %s", token, start, end, (long long)n,
                 (long long)sqlite3_column_int64(st, 8), first, last);
}

int ebb__store_check_billing(struct ebb__store *s, char *err, size_t errlen)
{
    ebb__store_setf(err, errlen, "%s", "");
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, check_sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return ebb__store_fail(s, rc);
    /* The first few in words, all of them counted. */
    char first[3][320];
    size_t n = 0;
    for (;;) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
            break;
        if (n < sizeof(first) / sizeof(first[0]))
            describe(st, first[n], sizeof(first[n]));
        n++;
    }
    int r = rc == SQLITE_DONE ? 0 : ebb__store_fail(s, rc);
    sqlite3_finalize(st);
    if (r != 0 || n == 0)
        return r;
    ebb__store_setf(s->errmsg, sizeof(s->errmsg),
                    "%zu instance%s not billed exactly once: %s%s%s%s%s%s", n,
                    n == 1 ? "" : "s", first[0], n > 1 ? "; " : "",
                    n > 1 ? first[1] : "", n > 2 ? "; " : "", n > 2 ? first[2] : "",
                    n > 3 ? "; ..." : "");
    ebb__store_setf(err, errlen, "%s", s->errmsg);
    return EBB_EDB;
}
