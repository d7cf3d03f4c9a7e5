/* Opening ebb.db: creating the file with the right mode, making sure it is
 * a database of ours that this build understands, configuring the
 * connection, and migrating it. Nothing is written to a file before it
 * passes the identity checks, so a refused file is left as it was. */
#include "store/store.h"
#include "store/store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int ebb__store_connect(const char *path, int version, struct sqlite3 **out,
                       char *err, size_t errlen)
{
    *out = NULL;
    /* Create the file ourselves so that it is born 0600: it holds job
     * specs and agent token hashes. SQLite gives the -wal and -shm files
     * the permissions of the database file. */
    if (is_file_path(path)) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) {
            int e = errno;
            ebb__store_setf(err, errlen, "cannot open %s: %s", path, strerror(e));
            return e == ENOMEM                ? EBB_ENOMEM
                   : e == EACCES || e == EPERM ? EBB_EPERM
                                               : EBB_EIO;
        }
        close(fd);
    }

    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                 SQLITE_OPEN_URI,
                             NULL);
    if (rc != SQLITE_OK) {
        ebb__store_setf(err, errlen, "cannot open %s: %s", path,
             db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
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
