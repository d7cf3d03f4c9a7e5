/* The store: the handle, its statement cache, transactions, and the
 * queries over prices and jobs. Opening the file is in store_open.c, the
 * schema and its migrations in store_schema.c. */
#include "store.h"
#include "store_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* Every cached statement. Add a value here and its SQL in sql_text[]. */
enum stmt {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_SAVEPOINT,
    ST_RELEASE,
    ST_ROLLBACK_TO,
    ST_USER_VERSION,
    ST_PUT_PRICE,
    ST_LAST_PRICE_AT,
    ST_PUT_CURSOR,
    /* Eight variants, one per combination of filter fields, so that each
     * uses the primary key or an index for the fields it has instead of
     * one "(? IS NULL OR col = ?)" statement that can use none.
     * Bit 0: provider, bit 1: instance type, bit 2: zone. */
    ST_LATEST_PRICES,
    ST_LATEST_PRICES_END = ST_LATEST_PRICES + 7,
    /* The same eight variants for the price history of each series. */
    ST_PRICE_HISTORY,
    ST_PRICE_HISTORY_END = ST_PRICE_HISTORY + 7,
    ST_JOB_COUNTS,
    ST__COUNT
};
_Static_assert(ST__COUNT <= EBB__STORE_JOB_SLOTS,
               "store.c's statements overlap store_jobs.c's slots");

#define LATEST_PROVIDER 1
#define LATEST_TYPE 2
#define LATEST_ZONE 4

/* max(observed_at) with bare columns: SQLite takes the other columns of a
 * group from the row holding the maximum, which is exactly "the newest
 * observation of the series". Rows come out in primary key order, so the
 * GROUP BY and ORDER BY need no sort. */
#define LATEST(where)                                                       \
    "SELECT provider, region, zone, instance_type, product, market,"        \
    " max(observed_at), price_micros, currency FROM prices " where          \
    " GROUP BY provider, region, zone, instance_type, product, market"      \
    " ORDER BY provider, region, zone, instance_type, product, market"

/* Every observation in [:since, :until), series by series, oldest first:
 * the primary key's order, so no sort. */
#define HISTORY(where)                                                      \
    "SELECT provider, region, zone, instance_type, product, market,"        \
    " observed_at, price_micros, currency FROM prices"                      \
    " WHERE observed_at >= :since AND observed_at < :until" where           \
    " ORDER BY provider, region, zone, instance_type, product, market,"     \
    " observed_at"

static const char *const sql_text[ST__COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_SAVEPOINT] = "SAVEPOINT ebb",
    [ST_RELEASE] = "RELEASE ebb",
    [ST_ROLLBACK_TO] = "ROLLBACK TO ebb",
    [ST_USER_VERSION] = "PRAGMA user_version",
    /* ON CONFLICT DO NOTHING rather than INSERT OR IGNORE: OR IGNORE would
     * also silently drop a row that breaks a CHECK or NOT NULL, which must
     * be an error, not "already present". */
    [ST_PUT_PRICE] =
        "INSERT INTO prices (provider, region, zone, instance_type, product,"
        " market, observed_at, price_micros, currency)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        " ON CONFLICT DO NOTHING",
    [ST_PUT_CURSOR] =
        "INSERT INTO price_cursors (provider, region, last_at) VALUES (?1, ?2, ?3)"
        " ON CONFLICT (provider, region) DO UPDATE SET"
        " last_at = max(last_at, excluded.last_at)",
    [ST_LAST_PRICE_AT] = "SELECT last_at FROM price_cursors"
                         " WHERE provider = ?1 AND region = ?2",
    [ST_LATEST_PRICES + 0] = LATEST(""),
    [ST_LATEST_PRICES + 1] = LATEST("WHERE provider = :provider"),
    [ST_LATEST_PRICES + 2] = LATEST("WHERE instance_type = :type"),
    [ST_LATEST_PRICES + 3] =
        LATEST("WHERE provider = :provider AND instance_type = :type"),
    [ST_LATEST_PRICES + 4] = LATEST("WHERE zone = :zone"),
    [ST_LATEST_PRICES + 5] =
        LATEST("WHERE provider = :provider AND zone = :zone"),
    [ST_LATEST_PRICES + 6] =
        LATEST("WHERE instance_type = :type AND zone = :zone"),
    [ST_LATEST_PRICES + 7] = LATEST("WHERE provider = :provider"
                                    " AND instance_type = :type"
                                    " AND zone = :zone"),
    [ST_PRICE_HISTORY + 0] = HISTORY(""),
    [ST_PRICE_HISTORY + 1] = HISTORY(" AND provider = :provider"),
    [ST_PRICE_HISTORY + 2] = HISTORY(" AND instance_type = :type"),
    [ST_PRICE_HISTORY + 3] =
        HISTORY(" AND provider = :provider AND instance_type = :type"),
    [ST_PRICE_HISTORY + 4] = HISTORY(" AND zone = :zone"),
    [ST_PRICE_HISTORY + 5] =
        HISTORY(" AND provider = :provider AND zone = :zone"),
    [ST_PRICE_HISTORY + 6] =
        HISTORY(" AND instance_type = :type AND zone = :zone"),
    [ST_PRICE_HISTORY + 7] = HISTORY(" AND provider = :provider"
                                     " AND instance_type = :type AND zone = :zone"),
    [ST_JOB_COUNTS] =
        "SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state",
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

static int invalid(struct ebb__store *s, const char *what)
{
    ebb__store_setf(s->errmsg, sizeof(s->errmsg), "%s", what);
    return EBB_EINVAL;
}

const char *ebb__store_errmsg(const struct ebb__store *s)
{
    return s != NULL ? s->errmsg : "no store";
}

/* ---- statements -------------------------------------------------------- */

sqlite3_stmt *ebb__store_stmt(struct ebb__store *s, int slot, const char *sql)
{
    sqlite3_stmt *st = s->stmt[slot];
    if (st == NULL) {
        int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                                    &st, NULL);
        if (rc != SQLITE_OK) {
            ebb__store_fail(s, rc);
            sqlite3_finalize(st);
            return NULL;
        }
        s->stmt[slot] = st;
    }
    return st;
}

static sqlite3_stmt *stmt(struct ebb__store *s, enum stmt id)
{
    return ebb__store_stmt(s, (int)id, sql_text[id]);
}

/* Runs a statement that returns no rows to its end and resets it. */
static int open_group(struct ebb__store *s);

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

const char * ebb__store_col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t != NULL ? (const char *)t : "";
}

struct sqlite3 *ebb__store_sqlite(struct ebb__store *s)
{
    return s->db;
}

/* ---- open and close ---------------------------------------------------- */
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
    for (size_t i = 0; i < EBB__STORE_SLOTS; i++)
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
    sqlite3_stmt *st = stmt(s, ST_USER_VERSION);
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
static int exec_cached(struct ebb__store *s, enum stmt id)
{
    sqlite3_stmt *st = stmt(s, id);
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
    return sqlite3_get_autocommit(s->db) ? exec_cached(s, ST_BEGIN) : 0;
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

int ebb__store_flush(struct ebb__store *s)
{
    if (!s->grouping || s->depth > 0 || sqlite3_get_autocommit(s->db))
        return 0;
    return exec_cached(s, ST_COMMIT);
}

int ebb__store_begin(struct ebb__store *s)
{
    if (!s->grouping)
        return exec_cached(s, ST_BEGIN);
    int r = open_group(s);
    if (r == 0)
        r = exec_cached(s, ST_SAVEPOINT);
    if (r == 0)
        s->depth++;
    return r;
}

int ebb__store_commit(struct ebb__store *s)
{
    if (!s->grouping || s->depth == 0)
        return exec_cached(s, ST_COMMIT);
    s->depth--;
    return exec_cached(s, ST_RELEASE);
}

int ebb__store_rollback(struct ebb__store *s)
{
    if (sqlite3_get_autocommit(s->db))
        return 0;
    if (!s->grouping || s->depth == 0)
        return exec_cached(s, ST_ROLLBACK);
    s->depth--;
    int r = exec_cached(s, ST_ROLLBACK_TO);
    int r2 = sqlite3_get_autocommit(s->db) ? 0 : exec_cached(s, ST_RELEASE);
    return r != 0 ? r : r2;
}

int ebb__store_in_transaction(struct ebb__store *s)
{
    return s->grouping ? s->depth > 0 : !sqlite3_get_autocommit(s->db);
}

/* ---- prices ------------------------------------------------------------ */

static const char *market_name(enum ebb_market m)
{
    return m == EBB_MARKET_ON_DEMAND ? "on-demand" : "spot";
}

static int put_one(struct ebb__store *s, sqlite3_stmt *st,
                   const char *provider, const struct ebb_price *p)
{
    if (p == NULL || p->instance_type == NULL || p->instance_type[0] == '\0')
        return invalid(s, "price without an instance type");
    if (p->price_per_hour < 0)
        return invalid(s, "negative price");
    if (p->market != EBB_MARKET_SPOT && p->market != EBB_MARKET_ON_DEMAND)
        return invalid(s, "unknown market");
    const char *cur = p->currency != NULL ? p->currency : "USD";
    if (strlen(cur) != 3)
        return invalid(s, "currency is not a three-letter code");

    /* A price that names its market (the sim replaying "aws") is stored
     * under that name; otherwise under the reporting plugin's. */
    int r = ebb__store_bind_text(s, st, 1, p->provider != NULL ? p->provider
                                                               : provider);
    if (r == 0)
        r = ebb__store_bind_text(s, st, 2, p->region != NULL ? p->region : "");
    if (r == 0)
        r = ebb__store_bind_text(s, st, 3, p->zone != NULL ? p->zone : "");
    if (r == 0)
        r = ebb__store_bind_text(s, st, 4, p->instance_type);
    if (r == 0)
        r = ebb__store_bind_text(s, st, 5, p->product != NULL ? p->product : "");
    if (r == 0)
        r = ebb__store_bind_text(s, st, 6, market_name(p->market));
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 7, p->at);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 8, p->price_per_hour);
    if (r == 0)
        r = ebb__store_bind_text(s, st, 9, cur);
    if (r == 0)
        r = ebb__store_run(s, st);
    else
        sqlite3_clear_bindings(st);
    if (r < 0)
        return r;
    return sqlite3_changes(s->db) > 0 ? 1 : 0;
}

/* Where polls of (provider, region) resume: moved forward to `at`. */
static int advance_cursor(struct ebb__store *s, const char *provider,
                          const char *region, ebb_time_ms at)
{
    sqlite3_stmt *st = stmt(s, ST_PUT_CURSOR);
    if (st == NULL)
        return EBB_EDB;
    int r = ebb__store_bind_text(s, st, 1, provider);
    if (r == 0)
        r = ebb__store_bind_text(s, st, 2, region != NULL ? region : "");
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 3, at);
    if (r == 0)
        return ebb__store_run(s, st);
    sqlite3_clear_bindings(st);
    return r;
}

static const char *stored_provider(const char *provider, const struct ebb_price *p)
{
    return p->provider != NULL ? p->provider : provider;
}

int ebb__store_put_price(struct ebb__store *s, const char *provider,
                         const struct ebb_price *p)
{
    if (provider == NULL || provider[0] == '\0')
        return invalid(s, "price without a provider");
    sqlite3_stmt *st = stmt(s, ST_PUT_PRICE);
    if (st == NULL)
        return EBB_EDB;
    int own = !ebb__store_in_transaction(s);
    int r = own ? ebb__store_begin(s) : 0;
    int inserted = r == 0 ? put_one(s, st, provider, p) : r;
    r = inserted < 0 ? inserted
                     : advance_cursor(s, stored_provider(provider, p), p->region, p->at);
    if (own) {
        if (r == 0)
            r = ebb__store_commit(s);
        if (r != 0)
            ebb__store_rollback(s);
    }
    return r < 0 ? r : inserted;
}

/* The newest time of a batch per (provider, region): a batch holds few. */
struct cursor {
    const char *provider, *region;
    ebb_time_ms at;
};

static int note_cursor(struct cursor **c, size_t *n, size_t *cap, const char *provider,
                       const char *region, ebb_time_ms at)
{
    region = region != NULL ? region : "";
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*c)[i].provider, provider) == 0 && strcmp((*c)[i].region, region) == 0) {
            if (at > (*c)[i].at)
                (*c)[i].at = at;
            return 0;
        }
    }
    if (*n == *cap) {
        size_t grown_cap = *cap ? *cap * 2 : 8;
        struct cursor *grown = realloc(*c, grown_cap * sizeof(*grown));
        if (grown == NULL)
            return EBB_ENOMEM;
        *c = grown;
        *cap = grown_cap;
    }
    (*c)[(*n)++] = (struct cursor){provider, region, at};
    return 0;
}

int ebb__store_put_prices(struct ebb__store *s, const char *provider,
                          const struct ebb_price *p, size_t n,
                          size_t *inserted)
{
    if (inserted != NULL)
        *inserted = 0;
    if (provider == NULL || provider[0] == '\0')
        return invalid(s, "price without a provider");
    if (n == 0)
        return 0;
    if (p == NULL)
        return invalid(s, "no prices");
    sqlite3_stmt *st = stmt(s, ST_PUT_PRICE);
    if (st == NULL)
        return EBB_EDB;

    int own = !ebb__store_in_transaction(s);
    int r = own ? ebb__store_begin(s) : 0;
    size_t count = 0;
    struct cursor *cursors = NULL;
    size_t n_cursors = 0, cap_cursors = 0;
    for (size_t i = 0; r == 0 && i < n; i++) {
        int one = put_one(s, st, provider, &p[i]);
        if (one < 0)
            r = one;
        else
            count += (size_t)one;
        if (r == 0)
            r = note_cursor(&cursors, &n_cursors, &cap_cursors,
                            stored_provider(provider, &p[i]), p[i].region, p[i].at);
    }
    for (size_t i = 0; r == 0 && i < n_cursors; i++)
        r = advance_cursor(s, cursors[i].provider, cursors[i].region, cursors[i].at);
    free(cursors);
    if (own) {
        if (r == 0)
            r = ebb__store_commit(s);
        if (r < 0) {
            /* Keep the first failure's words, not the rollback's. */
            char why[sizeof(s->errmsg)];
            memcpy(why, s->errmsg, sizeof(why));
            ebb__store_rollback(s);
            memcpy(s->errmsg, why, sizeof(why));
        }
    }
    if (r == 0 && inserted != NULL)
        *inserted = count;
    return r;
}

int ebb__store_last_price_at(struct ebb__store *s, const char *provider,
                             const char *region, ebb_time_ms *out)
{
    *out = 0;
    if (provider == NULL)
        return invalid(s, "no provider");
    sqlite3_stmt *st = stmt(s, ST_LAST_PRICE_AT);
    if (st == NULL)
        return EBB_EDB;
    int r = ebb__store_bind_text(s, st, 1, provider);
    if (r == 0)
        r = ebb__store_bind_text(s, st, 2, region != NULL ? region : "");
    if (r < 0) {
        sqlite3_clear_bindings(st);
        return r;
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        *out = sqlite3_column_int64(st, 0);
    return ebb__store_finish(s, st, rc);
}

/* Binds `v` to the named parameter if this variant has it. */
static int bind_named(struct ebb__store *s, sqlite3_stmt *st,
                      const char *name, const char *v)
{
    int i = sqlite3_bind_parameter_index(st, name);
    return i > 0 ? ebb__store_bind_text(s, st, i, v) : 0;
}

/* Prepares the variant of `base` (ST_LATEST_PRICES or ST_PRICE_HISTORY)
 * for the fields `f` has and binds them. NULL on failure, with the
 * bindings cleared. */
static sqlite3_stmt *filtered_stmt(struct ebb__store *s, enum stmt base,
                                   const struct ebb__price_filter *f)
{
    int variant = 0;
    if (f != NULL && f->provider != NULL)
        variant |= LATEST_PROVIDER;
    if (f != NULL && f->instance_type != NULL)
        variant |= LATEST_TYPE;
    if (f != NULL && f->zone != NULL)
        variant |= LATEST_ZONE;
    sqlite3_stmt *st = stmt(s, (enum stmt)(base + variant));
    if (st == NULL)
        return NULL;
    int r = 0;
    if (f != NULL) {
        r = bind_named(s, st, ":provider", f->provider);
        if (r == 0)
            r = bind_named(s, st, ":type", f->instance_type);
        if (r == 0)
            r = bind_named(s, st, ":zone", f->zone);
    }
    if (r < 0) {
        sqlite3_clear_bindings(st);
        return NULL;
    }
    return st;
}

/* Steps a statement whose columns are provider, region, zone, instance
 * type, product, market, time, price, currency, calling `cb` per row. */
static int price_rows(struct ebb__store *s, sqlite3_stmt *st,
                      ebb__price_row_cb cb, void *arg)
{
    int rc;
    for (;;) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
            break;
        struct ebb__price_row row = {
            .provider = ebb__store_col_text(st, 0),
            .price =
                {
                    .region = ebb__store_col_text(st, 1),
                    .zone = ebb__store_col_text(st, 2),
                    .instance_type = ebb__store_col_text(st, 3),
                    .product = ebb__store_col_text(st, 4),
                    .market = strcmp(ebb__store_col_text(st, 5), "on-demand") == 0
                                  ? EBB_MARKET_ON_DEMAND
                                  : EBB_MARKET_SPOT,
                    .at = sqlite3_column_int64(st, 6),
                    .price_per_hour = sqlite3_column_int64(st, 7),
                    .currency = ebb__store_col_text(st, 8),
                },
        };
        int stop = cb(arg, &row);
        if (stop != 0) {
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            return stop;
        }
    }
    return ebb__store_finish(s, st, rc);
}

int ebb__store_latest_prices(struct ebb__store *s,
                             const struct ebb__price_filter *f,
                             ebb__price_row_cb cb, void *arg)
{
    if (cb == NULL)
        return invalid(s, "no callback");
    sqlite3_stmt *st = filtered_stmt(s, ST_LATEST_PRICES, f);
    if (st == NULL)
        return EBB_EDB;
    return price_rows(s, st, cb, arg);
}

int ebb__store_price_history(struct ebb__store *s,
                             const struct ebb__price_filter *f,
                             ebb_time_ms since, ebb_time_ms until,
                             ebb__price_row_cb cb, void *arg)
{
    if (cb == NULL)
        return invalid(s, "no callback");
    if (since > until)
        return invalid(s, "price history window ends before it starts");
    sqlite3_stmt *st = filtered_stmt(s, ST_PRICE_HISTORY, f);
    if (st == NULL)
        return EBB_EDB;
    int r = ebb__store_bind_i64(s, st, sqlite3_bind_parameter_index(st, ":since"), since);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, sqlite3_bind_parameter_index(st, ":until"), until);
    if (r < 0) {
        sqlite3_clear_bindings(st);
        return r;
    }
    return price_rows(s, st, cb, arg);
}

/* ---- jobs -------------------------------------------------------------- */

int ebb__store_job_counts(struct ebb__store *s,
                          void (*cb)(void *arg, const char *state,
                                     int64_t count),
                          void *arg)
{
    if (cb == NULL)
        return invalid(s, "no callback");
    sqlite3_stmt *st = stmt(s, ST_JOB_COUNTS);
    if (st == NULL)
        return EBB_EDB;
    int rc;
    for (;;) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
            break;
        cb(arg, ebb__store_col_text(st, 0), sqlite3_column_int64(st, 1));
    }
    return ebb__store_finish(s, st, rc);
}
