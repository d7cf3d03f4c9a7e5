/* Opening ebb.db: creating the file with the right mode, making sure it is
 * a database of ours that this build understands, configuring the
 * connection, and migrating it. Nothing is written to a file before it
 * passes the identity checks, so a refused file is left as it was. */
#include "store/store.h"
#include "store/store_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

/* How long a writer waits for another connection's lock before giving up
 * with EBB_EBUSY. The CLI's reads never block ebbd (WAL), but a second
 * writer does, briefly. */
#define BUSY_TIMEOUT_MS 5000

/* Runs a PRAGMA that answers with one value; copies it as text into `out`. */
static int pragma_text(sqlite3 *db, const char *sql, char *out, size_t len)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            snprintf(out, len, "%s", ebb__store_col_text(st, 0));
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            snprintf(out, len, "%s", "");
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

static int is_file_path(const char *path)
{
    return strcmp(path, ":memory:") != 0 && strncmp(path, "file:", 5) != 0;
}

/* Checks that the file is an ebb database this build can use before
 * anything writes to it: reading the header is all that happens here, so
 * a refused file is left exactly as it was. */
static int check_identity(sqlite3 *db, const char *path, char *err,
                          size_t errlen)
{
    char app[32], ver[32], tables[32];
    int rc = pragma_text(db, "PRAGMA application_id", app, sizeof(app));
    if (rc == SQLITE_OK)
        rc = pragma_text(db, "PRAGMA user_version", ver, sizeof(ver));
    if (rc == SQLITE_OK)
        rc = pragma_text(db, "SELECT count(*) FROM sqlite_master", tables,
                         sizeof(tables));
    if ((rc & 0xff) == SQLITE_NOTADB) {
        ebb__store_setf(err, errlen,
             "%s is not a SQLite database (%s): move it aside or point ebb "
             "at another file",
             path, sqlite3_errmsg(db));
        return EBB_EDB;
    }
    if (rc != SQLITE_OK) {
        ebb__store_setf(err, errlen, "%s: cannot read the database header: %s", path,
             sqlite3_errmsg(db));
        return ebb__store_code_of(rc);
    }
    long app_id = strtol(app, NULL, 10);
    long version = strtol(ver, NULL, 10);
    long n_tables = strtol(tables, NULL, 10);
    if (app_id != EBB__STORE_APPLICATION_ID &&
        (app_id != 0 || version != 0 || n_tables != 0)) {
        ebb__store_setf(err, errlen,
             "%s is a SQLite database of another program (application id "
             "%ld, schema version %ld), not ebb's: point ebb at another file",
             path, app_id, version);
        return EBB_EDB;
    }
    if (version > EBB__STORE_SCHEMA_LATEST) {
        ebb__store_setf(err, errlen,
             "%s has schema version %ld; this ebb knows up to %d: upgrade ebb",
             path, version, EBB__STORE_SCHEMA_LATEST);
        return EBB_EDB;
    }
    return 0;
}

/* Connection settings. WAL lets the CLI read while ebbd writes.
 * synchronous=FULL because the ledger is money: in WAL mode NORMAL may
 * lose the last commits on a power cut (not on a process crash), FULL
 * syncs the WAL at every commit. */
static int configure(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    char mode[32];
    int rc = pragma_text(db, "PRAGMA journal_mode = WAL", mode, sizeof(mode));
    if (rc != SQLITE_OK) {
        ebb__store_setf(err, errlen, "%s: cannot switch to WAL mode: %s", path,
             sqlite3_errmsg(db));
        return ebb__store_code_of(rc);
    }
    /* An in-memory database answers "memory"; a file on a filesystem
     * without shared memory support keeps its old mode, and then readers
     * would block ebbd. */
    if (strcmp(mode, "wal") != 0 && is_file_path(path)) {
        ebb__store_setf(err, errlen,
             "%s: the database stays in journal mode \"%s\", not WAL (is it "
             "on a network filesystem?): put it on a local disk",
             path, mode);
        return EBB_EDB;
    }
    rc = sqlite3_exec(db,
                      "PRAGMA synchronous = FULL;"
                      "PRAGMA foreign_keys = ON;",
                      NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        ebb__store_setf(err, errlen, "%s: cannot configure the database: %s", path,
             sqlite3_errmsg(db));
        return ebb__store_code_of(rc);
    }
    return 0;
}

/* Opens `path` with SQLite, creating a missing file owner-only: it holds
 * job specs and agent token hashes, and SQLite gives the -wal and -shm
 * files the permissions of the database file.
 *
 * The file is never opened outside SQLite, not even to create it: closing
 * any descriptor of the file drops every POSIX lock this process holds on
 * it, the locks of ebbd's own connection included ("How To Corrupt An
 * SQLite Database File", section 2.2). A reader elsewhere then believes it
 * is the last connection and deletes the WAL that holds ebbd's commits.
 *
 * SQLite creates the main file with mode 0644 less the umask, so the umask
 * is 077 while it does. umask is per process, so this is done only when
 * the file does not exist yet: ebbd's first start, on its main thread
 * before any other thread runs. The connections ebbd opens in its thread
 * pool later (reads, WAL checkpoints) find the file and leave the umask
 * alone. (SQLite's `modeof` URI parameter would copy another file's mode,
 * but needs such a file; no SQLite API hands out the descriptor to
 * fchmod.) */
static int open_db(const char *path, sqlite3 **db)
{
    struct stat sb;
    int creating = is_file_path(path) && stat(path, &sb) != 0 && errno == ENOENT;
    mode_t old = creating ? umask(077) : 0;
    int rc = sqlite3_open_v2(path, db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                 SQLITE_OPEN_URI,
                             NULL);
    if (creating)
        umask(old);
    return rc;
}

int ebb__store_connect(const char *path, int version, struct sqlite3 **out,
                       char *err, size_t errlen)
{
    *out = NULL;
    sqlite3 *db = NULL;
    int rc = open_db(path, &db);
    if (rc != SQLITE_OK) {
        /* SQLite's words ("unable to open database file") say less than
         * the errno of the open() that failed. */
        int e = db != NULL ? sqlite3_system_errno(db) : 0;
        ebb__store_setf(err, errlen, "cannot open %s: %s", path,
             e != 0 ? strerror(e)
             : db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return ebb__store_code_of(rc);
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
#ifdef SQLITE_DBCONFIG_DEFENSIVE
    /* No writable_schema tricks or raw page writes through SQL. */
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
#endif

    int r = check_identity(db, path, err, errlen);
    if (r == 0)
        r = configure(db, path, err, errlen);
    if (r == 0) {
        char why[384];
        why[0] = '\0';
        r = ebb__store_migrate(db, version, why, sizeof(why));
        if (r < 0)
            ebb__store_setf(err, errlen, "%s: %s", path, why);
    }
    if (r < 0) {
        sqlite3_close(db);
        return r;
    }
    *out = db;
    return 0;
}
