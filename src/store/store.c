/* The store: the handle, its statement cache, errors and transactions.
 * Opening the file is in store_open.c, the schema and its migrations in
 * store_schema.c, the cached statements' SQL in store_sql.h, the queries
 * in store_prices.c, store_jobs.c, store_ledger.c, store_read.c and
 * store_schedules.c. */
#include "store/store.h"
#include "store/store_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* The SQL of every cached statement, by its slot (store_sql.h). */
static const char *const sql_text[EBB__SQL__COUNT] = {
#define EBB__SQL_TEXT(name, sql) [EBB__SQL_##name] = sql,
    EBB__STORE_STATEMENTS(EBB__SQL_TEXT)
#undef EBB__SQL_TEXT
};

/* ---- errors ------------------------------------------------------------ */

int ebb__store_code_of(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return EBB_EBUSY;
    case SQLITE_NOMEM:
        return EBB_ENOMEM;
    case SQLITE_CANTOPEN:
        return EBB_EIO;
    default:
        return EBB_EDB;
    }
}

void ebb__store_setf(char *buf, size_t len, const char *fmt, ...)
{
    if (buf == NULL || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Keeps SQLite's words for the failure `rc` and maps it to an EBB_E* code.
 * The words are copied now because the next call on the connection (the
 * reset that follows) may replace them. */
int ebb__store_fail(struct ebb__store *s, int rc)
{
    ebb__store_setf(s->errmsg, sizeof(s->errmsg), "%s", sqlite3_errmsg(s->db));
    int ext = sqlite3_extended_errcode(s->db);
    if (ext == SQLITE_CONSTRAINT_UNIQUE || ext == SQLITE_CONSTRAINT_PRIMARYKEY)
        return EBB_EEXISTS;
    return ebb__store_code_of(rc);
}

int ebb__store_invalid(struct ebb__store *s, const char *what)
{
    ebb__store_setf(s->errmsg, sizeof(s->errmsg), "%s", what);
    return EBB_EINVAL;
}

const char *ebb__store_errmsg(const struct ebb__store *s)
{
    return s != NULL ? s->errmsg : "no store";
}

/* ---- statements -------------------------------------------------------- */

sqlite3_stmt *ebb__store_stmt(struct ebb__store *s, enum ebb__sql id)
{
    sqlite3_stmt *st = s->stmt[id];
    if (st == NULL) {
        int rc = sqlite3_prepare_v3(s->db, sql_text[id], -1,
                                    SQLITE_PREPARE_PERSISTENT, &st, NULL);
        if (rc != SQLITE_OK) {
            ebb__store_fail(s, rc);
            sqlite3_finalize(st);
            return NULL;
        }
        s->stmt[id] = st;
    }
    return st;
}

static int open_group(struct ebb__store *s);

/* Runs a statement that returns no rows to its end and resets it. */
int ebb__store_run(struct ebb__store *s, sqlite3_stmt *st)
{
    /* Under group commit a write outside any transaction joins the group's. */
    if (s->grouping && sqlite3_get_autocommit(s->db) && !sqlite3_stmt_readonly(st)) {
        int r = open_group(s);
        if (r != 0) {
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            return r;
        }
    }
    int rc = sqlite3_step(st);
    int r = rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : ebb__store_fail(s, rc);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return r;
}

/* Ends a row-returning statement after its loop: `rc` is the last step's
 * result. */
int ebb__store_finish(struct ebb__store *s, sqlite3_stmt *st, int rc)
{
    int r = rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : ebb__store_fail(s, rc);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return r;
}

int ebb__store_each(struct ebb__store *s, sqlite3_stmt *st,
                    int (*row)(sqlite3_stmt *st, void *arg), void *arg)
{
    int rc;
    for (;;) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
            break;
        int stop = row(st, arg);
        if (stop != 0) {
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            return stop;
        }
    }
    return ebb__store_finish(s, st, rc);
}

int ebb__store_bind_text(struct ebb__store *s, sqlite3_stmt *st, int i,
                     const char *v)
{
    int rc = sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    return rc == SQLITE_OK ? 0 : ebb__store_fail(s, rc);
}

int ebb__store_bind_i64(struct ebb__store *s, sqlite3_stmt *st, int i, int64_t v)
{
    int rc = sqlite3_bind_int64(st, i, v);
    return rc == SQLITE_OK ? 0 : ebb__store_fail(s, rc);
}

int ebb__store_bind(struct ebb__store *s, sqlite3_stmt *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = 0;
    for (int i = 0; fmt[i] != '\0' && rc == 0; i++) {
        if (fmt[i] == 't') {
            const char *v = va_arg(ap, const char *);
            rc = v != NULL ? ebb__store_bind_text(s, st, i + 1, v) : 0;
        } else {
            rc = ebb__store_bind_i64(s, st, i + 1, va_arg(ap, int64_t));
        }
    }
    va_end(ap);
    if (rc != 0) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    return rc;
}

const char * ebb__store_col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t != NULL ? (const char *)t : "";
}

/* ---- open and close ---------------------------------------------------- */

int ebb__store_open_at_version(const char *path, int version,
                               struct ebb__store **out, char *err,
                               size_t errlen)
{
    if (out != NULL)
        *out = NULL;
    ebb__store_setf(err, errlen, "%s", "");
    if (path == NULL || out == NULL || version < 0 ||
        version > EBB__STORE_SCHEMA_LATEST) {
        ebb__store_setf(err, errlen, "%s", "ebb__store_open: invalid arguments");
        return EBB_EINVAL;
    }
    struct ebb__store *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        ebb__store_setf(err, errlen, "%s", "out of memory");
        return EBB_ENOMEM;
    }
    int r = ebb__store_connect(path, version, &s->db, err, errlen);
    if (r < 0) {
        free(s);
        return r;
    }
    *out = s;
    return 0;
}

int ebb__store_open(const char *path, struct ebb__store **out, char *err,
                    size_t errlen)
{
    return ebb__store_open_at_version(path, EBB__STORE_SCHEMA_LATEST, out,
                                      err, errlen);
}

void ebb__store_close(struct ebb__store *s)
{
    if (s == NULL)
        return;
    /* What a group gathered is committed; a transaction left open by a
     * caller is not. */
    if (s->grouping && s->depth == 0 && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    for (size_t i = 0; i < EBB__SQL__COUNT; i++)
        sqlite3_finalize(s->stmt[i]);
    if (!sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    /* Keeps the query planner's statistics fresh; cheap when nothing
     * changed (SQLite's advice is to run it before closing). */
    sqlite3_exec(s->db, "PRAGMA optimize", NULL, NULL, NULL);
    sqlite3_close(s->db);
    free(s);
}

int ebb__store_schema_version(struct ebb__store *s, int *out)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_USER_VERSION);
    if (st == NULL)
        return EBB_EDB;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int(st, 0);
    return ebb__store_finish(s, st, rc);
}

int ebb__store_integrity_check(struct ebb__store *s, char *err, size_t errlen)
{
    ebb__store_setf(err, errlen, "%s", "");
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA integrity_check(20)", -1, &st,
                                NULL);
    if (rc != SQLITE_OK) {
        int r = ebb__store_fail(s, rc);
        ebb__store_setf(err, errlen, "%s", s->errmsg);
        return r;
    }
    int ok = 0, rows = 0;
    size_t used = 0;
    for (;;) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
            break;
        const char *line = ebb__store_col_text(st, 0);
        if (rows++ == 0 && strcmp(line, "ok") == 0) {
            ok = 1;
            continue;
        }
        ok = 0;
        if (err != NULL && used + 1 < errlen) {
            int n = snprintf(err + used, errlen - used, "%s%s",
                             used > 0 ? "; " : "", line);
            if (n > 0)
                used += (size_t)n;
        }
    }
    int r = rc == SQLITE_DONE ? 0 : ebb__store_fail(s, rc);
    sqlite3_finalize(st);
    if (r < 0) {
        ebb__store_setf(err, errlen, "%s", s->errmsg);
        return r;
    }
    if (!ok) {
        ebb__store_setf(s->errmsg, sizeof(s->errmsg), "integrity check failed: %s",
             err != NULL ? err : "");
        return EBB_EDB;
    }
    return 0;
}

/* ---- transactions ------------------------------------------------------ */

/* Transaction control statements step directly: ebb__store_run would
 * open the group's transaction for them. */
static int exec_cached(struct ebb__store *s, enum ebb__sql id)
{
    sqlite3_stmt *st = ebb__store_stmt(s, id);
    if (st == NULL)
        return EBB_EDB;
    int rc = sqlite3_step(st);
    int r = rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : ebb__store_fail(s, rc);
    sqlite3_reset(st);
    if (sqlite3_get_autocommit(s->db))
        s->depth = 0; /* an error may end the transaction */
    return r;
}

static int open_group(struct ebb__store *s)
{
    return sqlite3_get_autocommit(s->db) ? exec_cached(s, EBB__SQL_BEGIN) : 0;
}

void ebb__store_group_commit(struct ebb__store *s, int on)
{
    if (!on)
        ebb__store_flush(s);
    s->grouping = on;
}

static int count_wal_pages(void *arg, sqlite3 *db, const char *name, int pages)
{
    (void)db;
    (void)name;
    ((struct ebb__store *)arg)->wal_pages = pages;
    return SQLITE_OK;
}

void ebb__store_checkpoint_elsewhere(struct ebb__store *s)
{
    /* A WAL hook replaces the automatic checkpoint, which is one. */
    sqlite3_wal_hook(s->db, count_wal_pages, s);
}

int ebb__store_wal_pages(const struct ebb__store *s)
{
    return s->wal_pages;
}

int ebb__store_checkpoint(struct ebb__store *s)
{
    int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
                                       NULL, NULL);
    return rc == SQLITE_OK ? 0 : ebb__store_fail(s, rc);
}

/* Commits the outermost transaction, with the clock's position in it. */
static int commit_outer(struct ebb__store *s)
{
    int r = sqlite3_get_autocommit(s->db) ? 0 : ebb__store_clock_stamp(s);
    return r != 0 ? r : exec_cached(s, EBB__SQL_COMMIT);
}

int ebb__store_flush(struct ebb__store *s)
{
    if (!s->grouping || s->depth > 0 || sqlite3_get_autocommit(s->db))
        return 0;
    return commit_outer(s);
}

int ebb__store_begin(struct ebb__store *s)
{
    if (!s->grouping)
        return exec_cached(s, EBB__SQL_BEGIN);
    int r = open_group(s);
    if (r == 0)
        r = exec_cached(s, EBB__SQL_SAVEPOINT);
    if (r == 0)
        s->depth++;
    return r;
}

int ebb__store_commit(struct ebb__store *s)
{
    if (!s->grouping || s->depth == 0)
        return commit_outer(s);
    s->depth--;
    return exec_cached(s, EBB__SQL_RELEASE);
}

int ebb__store_rollback(struct ebb__store *s)
{
    if (sqlite3_get_autocommit(s->db))
        return 0;
    if (!s->grouping || s->depth == 0)
        return exec_cached(s, EBB__SQL_ROLLBACK);
    s->depth--;
    int r = exec_cached(s, EBB__SQL_ROLLBACK_TO);
    int r2 = sqlite3_get_autocommit(s->db) ? 0 : exec_cached(s, EBB__SQL_RELEASE);
    return r != 0 ? r : r2;
}

int ebb__store_in_transaction(struct ebb__store *s)
{
    return s->grouping ? s->depth > 0 : !sqlite3_get_autocommit(s->db);
}
