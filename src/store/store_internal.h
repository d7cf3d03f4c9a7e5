/* Shared by the store_*.c files only: the handle and the statement cache.
 * Each file owns a range of cache slots and its own SQL. */
#ifndef EBB_STORE_INTERNAL_H
#define EBB_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store/store.h"

/* Slots: store.c [0, EBB__STORE_PRICE_SLOTS), store_prices.c up to
 * EBB__STORE_JOB_SLOTS, store_jobs.c the rest. */
#define EBB__STORE_PRICE_SLOTS 8
#define EBB__STORE_JOB_SLOTS 32
#define EBB__STORE_SLOTS 64

struct ebb__store {
    sqlite3 *db;
    sqlite3_stmt *stmt[EBB__STORE_SLOTS];
    char errmsg[512];
    /* Group commit (ebb__store_group_commit): writes join one transaction
     * until ebb__store_flush(); begin/commit/rollback become savepoints. */
    int grouping;
    int depth;   /* savepoints open inside the group's transaction */
    /* Checkpoints left to another connection: the WAL's size in pages
     * after the latest commit (ebb__store_checkpoint_elsewhere). */
    int wal_pages;
};

/* The statement in `slot`, prepared from `sql` on first use (the same slot
 * must always get the same SQL). NULL on failure, with the message kept. */
sqlite3_stmt *ebb__store_stmt(struct ebb__store *s, int slot, const char *sql);

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

int ebb__store_bind_text(struct ebb__store *s, sqlite3_stmt *st, int i,
                         const char *v);
int ebb__store_bind_i64(struct ebb__store *s, sqlite3_stmt *st, int i,
                        int64_t v);
/* Column text, "" for NULL. */
const char *ebb__store_col_text(sqlite3_stmt *st, int i);

#endif
