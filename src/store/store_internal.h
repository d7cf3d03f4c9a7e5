/* Shared by the store_*.c files only: the handle and the statement cache.
 * The cached statements are declared by name in store_sql.h. */
#ifndef EBB_STORE_INTERNAL_H
#define EBB_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_sql.h"

/* One cache slot per statement of store_sql.h: EBB__SQL_BEGIN, ... */
enum ebb__sql {
#define EBB__SQL_ENUM(name, sql) EBB__SQL_##name,
    EBB__STORE_STATEMENTS(EBB__SQL_ENUM)
#undef EBB__SQL_ENUM
    EBB__SQL__COUNT
};

struct ebb__store {
    sqlite3 *db;
    sqlite3_stmt *stmt[EBB__SQL__COUNT];
    char errmsg[512];
    /* Group commit (ebb__store_group_commit): writes join one transaction
     * until ebb__store_flush(); begin/commit/rollback become savepoints. */
    int grouping;
    int depth;   /* savepoints open inside the group's transaction */
    /* Checkpoints left to another connection: the WAL's size in pages
     * after the latest commit (ebb__store_checkpoint_elsewhere). */
    int wal_pages;
    /* Every commit records the time clock_now reads (store_clock.h). */
    ebb_time_ms (*clock_now)(void *arg);
    void *clock_arg;
};

/* The cached statement `id`, prepared from its SQL in store_sql.h on first
 * use. NULL on failure, with the message kept. */
sqlite3_stmt *ebb__store_stmt(struct ebb__store *s, enum ebb__sql id);

/* The EBB_E* code for an SQLite result code (busy and locked: EBB_EBUSY). */
int ebb__store_code_of(int rc);

/* snprintf into buf when buf is not NULL. */
void ebb__store_setf(char *buf, size_t len, const char *fmt, ...)
    EBB_PRINTF(3, 4);

/* Keeps `what` as the message and returns EBB_EINVAL. */
int ebb__store_invalid(struct ebb__store *s, const char *what);

/* Keeps SQLite's message for `rc` and maps it to an EBB_E* code: a unique
 * or primary key conflict is EBB_EEXISTS. */
int ebb__store_fail(struct ebb__store *s, int rc);

/* Runs a statement that returns no rows, then resets and unbinds it. */
int ebb__store_run(struct ebb__store *s, sqlite3_stmt *st);

/* Ends a row-returning statement after its loop; `rc` is the last step's
 * result. */
int ebb__store_finish(struct ebb__store *s, sqlite3_stmt *st, int rc);

/* Steps the bound statement `st`, calling `row(st, arg)` for each result
 * row until one returns non-zero, then resets it and clears its bindings
 * (so that `row` may run other statements, not this one). Returns 0,
 * row's non-zero value, or a negative EBB_E* code with the message kept. */
int ebb__store_each(struct ebb__store *s, sqlite3_stmt *st,
                    int (*row)(sqlite3_stmt *st, void *arg), void *arg);

int ebb__store_bind_text(struct ebb__store *s, sqlite3_stmt *st, int i,
                         const char *v);
int ebb__store_bind_i64(struct ebb__store *s, sqlite3_stmt *st, int i,
                        int64_t v);
/* Binds the arguments after `fmt` to ?1, ?2, ...: 't' a string (NULL left
 * unbound: SQL NULL), 'i' an int64_t. On failure the statement is reset
 * and unbound, and the code returned. */
int ebb__store_bind(struct ebb__store *s, sqlite3_stmt *st, const char *fmt, ...);
/* Column text, "" for NULL. */
const char *ebb__store_col_text(sqlite3_stmt *st, int i);

/* Implemented in store_clock.c: raises the clock's recorded position to
 * clock_now() inside the transaction about to commit (nothing when no
 * clock is followed). Returns 0 or a negative EBB_E* code. */
int ebb__store_clock_stamp(struct ebb__store *s);

/* Implemented in store_read.c: the rows of `sql`, with `id` (may be NULL)
 * bound to ?1, as a new JSON array of objects (column name: value) in
 * *out. For the store's reads that answer in JSON. */
struct json_t;
int ebb__store_query_json(struct ebb__store *s, const char *sql,
                          const char *id, struct json_t **out);

/* Implemented in store_open.c: opens the file at `path` (creating it with
 * mode 0600), refuses a file that is not an ebb database or is newer than
 * this build, configures the connection (WAL, synchronous=FULL, foreign
 * keys, busy timeout) and migrates it up to `version`. On success *out is
 * the connection, owned by the caller (sqlite3_close). On failure *out is
 * NULL and `err` says why. Returns 0 or a negative EBB_E* code. */
int ebb__store_connect(const char *path, int version, sqlite3 **out,
                       char *err, size_t errlen);

/* Implemented in store_schema.c: moves the open database `db` forward from
 * its current user_version to `target`, one transaction per version.
 * Returns 0, or EBB_EBUSY / EBB_EDB with a message in `err`. */
int ebb__store_migrate(sqlite3 *db, int target, char *err, size_t errlen);

#endif
