/* The store's schema history: one migration per version, applied in order.
 *
 * Rules for adding one:
 *   - Append a new migrations[] entry and bump EBB__STORE_SCHEMA_LATEST in
 *     store.h. Never edit a migration that has shipped: files in the field
 *     were built by it.
 *   - Each migration runs in one transaction together with its
 *     user_version bump, so a crash leaves the file at the old version or
 *     the new one, never between.
 *   - SQLite cannot ALTER a column or a CHECK; changing one means building
 *     a new table, copying, dropping and renaming (see "Making Other Kinds
 *     Of Table Schema Changes" in SQLite's ALTER TABLE page).
 *
 * Conventions: times are INTEGER ms since the epoch, UTC; money is INTEGER
 * micro-units (CHECKed to really be integers where it is summed) with a
 * three-letter `currency` next to it; "" rather than NULL for a region or
 * zone a market does not have, so that they can be part of keys; NULL for
 * "not yet" or "none" (ended_at, deadline, budget).
 *
 * jobs.state carries no CHECK on purpose: the job lifecycle will grow
 * states, and widening a CHECK would mean rebuilding the table that every
 * other table references.
 */
#include "store/store.h"
#include "store/store_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

/* A three-letter currency code. */
#define CUR(col) col " TEXT NOT NULL DEFAULT 'USD' CHECK (length(" col ") = 3)"

/* Version 1: prices, catalog, jobs and their events, instances,
 * checkpoints, the ledger. */
static const char v1[] =
    "CREATE TABLE prices ("
    " provider TEXT NOT NULL,"
    " region TEXT NOT NULL DEFAULT '',"
    " zone TEXT NOT NULL DEFAULT '',"
    " instance_type TEXT NOT NULL,"
    " product TEXT NOT NULL DEFAULT '',"
    " market TEXT NOT NULL CHECK (market IN ('spot', 'on-demand')),"
    " observed_at INTEGER NOT NULL,"
    " price_micros INTEGER NOT NULL"
    "  CHECK (typeof(price_micros) = 'integer' AND price_micros >= 0),"
    " " CUR("currency") ","
    " PRIMARY KEY (provider, region, zone, instance_type, product, market,"
    "  observed_at)"
    ") WITHOUT ROWID;"

    "CREATE TABLE catalog ("
    " provider TEXT NOT NULL,"
    " region TEXT NOT NULL DEFAULT '',"
    " instance_type TEXT NOT NULL,"
    " on_demand_micros INTEGER"
    "  CHECK (on_demand_micros IS NULL OR on_demand_micros >= 0),"
    " " CUR("currency") ","
    " gpus INTEGER NOT NULL DEFAULT 0 CHECK (gpus >= 0),"
    " gpu_model TEXT NOT NULL DEFAULT '',"
    " gpu_memory_gb REAL NOT NULL DEFAULT 0 CHECK (gpu_memory_gb >= 0),"
    " vcpus INTEGER NOT NULL DEFAULT 0 CHECK (vcpus >= 0),"
    " memory_gb REAL NOT NULL DEFAULT 0 CHECK (memory_gb >= 0),"
    " speed REAL NOT NULL DEFAULT 1.0 CHECK (speed > 0),"
    " source TEXT NOT NULL DEFAULT '',"
    " PRIMARY KEY (provider, region, instance_type)"
    ") WITHOUT ROWID;"

    "CREATE TABLE jobs ("
    " id TEXT PRIMARY KEY NOT NULL,"
    " name TEXT NOT NULL DEFAULT '',"
    " owner_uid INTEGER NOT NULL,"
    " team TEXT NOT NULL DEFAULT '',"
    " spec_yaml TEXT NOT NULL,"
    " spec_json TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state <> ''),"
    " policy TEXT NOT NULL DEFAULT '',"
    " submitted_at INTEGER NOT NULL,"
    " deadline INTEGER,"
    " work_ms INTEGER NOT NULL DEFAULT 0 CHECK (work_ms >= 0),"
    " work_done_ms INTEGER NOT NULL DEFAULT 0 CHECK (work_done_ms >= 0),"
    " budget_micros INTEGER CHECK (budget_micros IS NULL OR budget_micros >= 0),"
    " " CUR("currency") ","
    " spent_micros INTEGER NOT NULL DEFAULT 0"
    "  CHECK (typeof(spent_micros) = 'integer'),"
    " retries INTEGER NOT NULL DEFAULT 0 CHECK (retries >= 0),"
    " preemptions INTEGER NOT NULL DEFAULT 0 CHECK (preemptions >= 0),"
    " updated_at INTEGER NOT NULL"
    ");"

    /* Append-only: the history `ebb job show` prints must be the history
     * that happened. */
    "CREATE TABLE job_events ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " job_id TEXT NOT NULL REFERENCES jobs (id),"
    " at INTEGER NOT NULL,"
    " from_state TEXT," /* NULL for the first event of a job */
    " to_state TEXT NOT NULL,"
    " reason TEXT NOT NULL"
    ");"
    "CREATE TRIGGER job_events_no_update BEFORE UPDATE ON job_events"
    " BEGIN SELECT RAISE(ABORT, 'job_events is append-only'); END;"
    "CREATE TRIGGER job_events_no_delete BEFORE DELETE ON job_events"
    " BEGIN SELECT RAISE(ABORT, 'job_events is append-only'); END;"

    /* The row is committed in state 'intent' before the provider is asked
     * to launch; `token` is the idempotency token given to the provider. */
    "CREATE TABLE instances ("
    " token TEXT PRIMARY KEY NOT NULL,"
    " job_id TEXT NOT NULL REFERENCES jobs (id),"
    " provider TEXT NOT NULL,"
    " region TEXT NOT NULL DEFAULT '',"
    " zone TEXT NOT NULL DEFAULT '',"
    " instance_type TEXT NOT NULL,"
    " market TEXT NOT NULL CHECK (market IN ('spot', 'on-demand')),"
    " provider_instance_id TEXT,"
    " state TEXT NOT NULL CHECK (state IN ('intent', 'launching', 'running',"
    "  'terminating', 'terminated', 'failed')),"
    " requested_at INTEGER NOT NULL,"
    " started_at INTEGER,"
    " ended_at INTEGER,"
    " end_reason TEXT,"
    " price_micros INTEGER CHECK (price_micros IS NULL OR price_micros >= 0),"
    " " CUR("currency") ","
    " agent_token_hash TEXT"
    ");"

    "CREATE TABLE checkpoints ("
    " id INTEGER PRIMARY KEY,"
    " job_id TEXT NOT NULL REFERENCES jobs (id),"
    " instance_token TEXT REFERENCES instances (token),"
    " at INTEGER NOT NULL,"
    " path TEXT NOT NULL,"
    " work_done_ms INTEGER NOT NULL CHECK (work_done_ms >= 0),"
    " bytes INTEGER NOT NULL DEFAULT 0 CHECK (bytes >= 0),"
    " complete INTEGER NOT NULL DEFAULT 0 CHECK (complete IN (0, 1))"
    ");"

    /* Money spent. job_id is NULL for costs no job carries (a team's
     * storage fee); amounts may be negative (a provider's refund). */
    "CREATE TABLE ledger ("
    " id INTEGER PRIMARY KEY,"
    " job_id TEXT REFERENCES jobs (id),"
    " instance_token TEXT REFERENCES instances (token),"
    " team TEXT NOT NULL DEFAULT '',"
    " provider TEXT NOT NULL,"
    " kind TEXT NOT NULL CHECK (kind IN ('compute', 'overhead', 'fee')),"
    " start_at INTEGER NOT NULL,"
    " end_at INTEGER NOT NULL CHECK (end_at >= start_at),"
    " rate_micros INTEGER NOT NULL DEFAULT 0"
    "  CHECK (typeof(rate_micros) = 'integer'),"
    " amount_micros INTEGER NOT NULL"
    "  CHECK (typeof(amount_micros) = 'integer'),"
    " currency TEXT NOT NULL CHECK (length(currency) = 3),"
    " note TEXT NOT NULL DEFAULT ''"
    ");";

/* Version 2: cron schedules, monthly team budgets, and indices for the hot
 * queries. The latest price per series needs no index of its own: the
 * prices primary key is ordered by series, then time. */
static const char v2[] =
    "CREATE TABLE schedules ("
    " id TEXT PRIMARY KEY NOT NULL,"
    " name TEXT NOT NULL DEFAULT '',"
    " cron TEXT NOT NULL,"
    " timezone TEXT NOT NULL DEFAULT 'UTC',"
    " template_yaml TEXT NOT NULL,"
    " window_ms INTEGER NOT NULL DEFAULT 0 CHECK (window_ms >= 0),"
    " budget_micros INTEGER CHECK (budget_micros IS NULL OR budget_micros >= 0),"
    " " CUR("currency") ","
    " missed TEXT NOT NULL DEFAULT 'skip' CHECK (missed IN ('skip', 'run-once')),"
    " last_fire_at INTEGER,"
    " next_fire_at INTEGER,"
    " created_at INTEGER NOT NULL"
    ");"
    "CREATE INDEX schedules_by_next_fire ON schedules (next_fire_at);"

    "CREATE TABLE budgets ("
    " team TEXT NOT NULL,"
    " period TEXT NOT NULL"
    "  CHECK (period GLOB '[0-9][0-9][0-9][0-9]-[01][0-9]'),"
    " cap_micros INTEGER NOT NULL"
    "  CHECK (typeof(cap_micros) = 'integer' AND cap_micros >= 0),"
    " " CUR("currency") ","
    " PRIMARY KEY (team, period)"
    ") WITHOUT ROWID;"

    "CREATE INDEX jobs_by_state ON jobs (state);"
    "CREATE INDEX job_events_by_job ON job_events (job_id, seq);"
    "CREATE INDEX ledger_by_job ON ledger (job_id, start_at);"
    "CREATE INDEX ledger_by_time ON ledger (start_at);"
    "CREATE INDEX ledger_by_team ON ledger (team, start_at);"
    "CREATE INDEX instances_by_job ON instances (job_id, state);"
    "CREATE INDEX instances_by_state ON instances (state);"
    "CREATE INDEX checkpoints_by_job ON checkpoints (job_id, at);"
    /* The per-region poll cursor of versions 1 to 5: the newest time per
     * provider and region without walking every series of the region. */
    "CREATE INDEX prices_by_region_time ON prices (provider, region,"
    " observed_at);";

/* Version 3: what ebbd needs to take its jobs back after a crash: where a
 * job runs locally, and each instance's market offer (the market plugin and
 * product; region, zone and type are there already), its market's shadow
 * instance (run_on) and the agent token's hash. */
static const char v3[] =
    "ALTER TABLE jobs ADD COLUMN workdir TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE instances ADD COLUMN market_plugin TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE instances ADD COLUMN product TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE instances ADD COLUMN shadow_id TEXT;";

/* Version 4: a schedule's runs. A job started by a schedule names it and
 * its fire time; the unique index makes a second run of one fire time
 * impossible, even after a crash (NULLs, the jobs no schedule started,
 * never collide). Schedules get their owner, the file name and directory
 * they were added from, unique names, and schedule_events: fire times
 * started, skipped (and why), missed while ebbd was down, or failed. */
static const char v4[] =
    "ALTER TABLE jobs ADD COLUMN schedule_id TEXT;"
    "ALTER TABLE jobs ADD COLUMN schedule_fire_at INTEGER;"
    "CREATE UNIQUE INDEX jobs_by_schedule_fire ON jobs (schedule_id,"
    " schedule_fire_at);"
    "ALTER TABLE schedules ADD COLUMN owner_uid INTEGER NOT NULL DEFAULT -1;"
    "ALTER TABLE schedules ADD COLUMN file TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE schedules ADD COLUMN workdir TEXT NOT NULL DEFAULT '';"
    "CREATE UNIQUE INDEX schedules_by_name ON schedules (name);"
    "CREATE TABLE schedule_events ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " schedule_id TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,"
    " at INTEGER NOT NULL,"
    " fire_at INTEGER NOT NULL,"
    " kind TEXT NOT NULL"
    "  CHECK (kind IN ('started', 'skipped', 'missed', 'failed')),"
    " job_id TEXT," /* the run, for 'started' */
    " reason TEXT NOT NULL"
    ");"
    "CREATE INDEX schedule_events_by_schedule ON schedule_events"
    " (schedule_id, seq);";

/* Version 5: where each provider's price polls resume, kept per region in
 * a small table written once per batch, instead of an index on every
 * price row (which halved the insert rate of a large ingest). */
static const char v5[] =
    "CREATE TABLE price_cursors ("
    " provider TEXT NOT NULL,"
    " region TEXT NOT NULL,"
    " last_at INTEGER NOT NULL,"
    " PRIMARY KEY (provider, region)"
    ") WITHOUT ROWID;"
    "INSERT INTO price_cursors SELECT provider, region, max(observed_at)"
    " FROM prices GROUP BY provider, region;"
    "DROP INDEX prices_by_region_time;";

/* Version 6: one poll cursor per price series (provider, region, zone,
 * instance type, product) instead of one per region, so that a series
 * added to the configuration, or one whose poll failed, resumes from its
 * own newest price rather than its region's. */
static const char v6[] =
    "DROP TABLE price_cursors;"
    "CREATE TABLE price_cursors ("
    " provider TEXT NOT NULL,"
    " region TEXT NOT NULL,"
    " zone TEXT NOT NULL,"
    " instance_type TEXT NOT NULL,"
    " product TEXT NOT NULL,"
    " last_at INTEGER NOT NULL,"
    " PRIMARY KEY (provider, region, zone, instance_type, product)"
    ") WITHOUT ROWID;"
    "INSERT INTO price_cursors SELECT provider, region, zone, instance_type,"
    " product, max(observed_at) FROM prices"
    " GROUP BY provider, region, zone, instance_type, product;";

/* Version 7: the clock's position (#16 point 1). One row: the latest time
 * any commit recorded (every commit of ebbd's writer raises it), and the
 * clock.start and speed of the ebbd that last ran, so that a restart on an
 * accelerated clock resumes from there instead of going back to
 * clock.start. A file written before this version gets the latest time its
 * rows carry, with the clock it ran on unknown (NULL). An index finds an
 * instance's ledger rows. */
static const char v7[] =
    "CREATE TABLE clock ("
    " id INTEGER PRIMARY KEY CHECK (id = 1),"
    " start_at INTEGER CHECK (start_at IS NULL OR start_at >= 0),"
    " speed REAL CHECK (speed IS NULL OR speed > 0),"
    " now_at INTEGER NOT NULL CHECK (now_at >= 0)"
    ");"
    "INSERT INTO clock (id, start_at, speed, now_at)"
    " SELECT 1, NULL, NULL, latest FROM (SELECT max("
    "  coalesce((SELECT max(at) FROM job_events), 0),"
    "  coalesce((SELECT max(updated_at) FROM jobs), 0),"
    "  coalesce((SELECT max(max(requested_at, coalesce(started_at, 0),"
    "   coalesce(ended_at, 0))) FROM instances), 0),"
    "  coalesce((SELECT max(end_at) FROM ledger), 0),"
    "  coalesce((SELECT max(at) FROM checkpoints), 0),"
    "  coalesce((SELECT max(at) FROM schedule_events), 0)) AS latest)"
    " WHERE latest > 0;"
    /* The billing check (ebb__store_check_billing) finds each instance's
     * ledger rows. */
    "CREATE INDEX ledger_by_instance ON ledger (instance_token);";

/* Version 8: the notification outbox (store_outbox.h). One row per event
 * and channel, written in the transaction of the change that caused the
 * event; ebbd delivers pending rows after the commit and marks each
 * delivered or, past its channel's attempts, dead. (event_id, channel) is
 * unique, so an event that must be sent once (a budget threshold) is
 * inserted with an id derived from what it says and cannot repeat. */
static const char v8[] =
    "CREATE TABLE notify_outbox ("
    " seq INTEGER PRIMARY KEY,"
    " event_id TEXT NOT NULL,"
    " channel TEXT NOT NULL,"
    " type TEXT NOT NULL,"
    " job_id TEXT,"
    " created_at INTEGER NOT NULL,"
    " body TEXT NOT NULL,"
    " status TEXT NOT NULL DEFAULT 'pending'"
    "  CHECK (status IN ('pending', 'delivered', 'dead')),"
    " attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),"
    " next_at INTEGER NOT NULL,"
    " last_error TEXT,"
    " done_at INTEGER,"
    " UNIQUE (event_id, channel)"
    ");"
    "CREATE INDEX notify_outbox_due ON notify_outbox (status, next_at);";

/* Version 9: checkpoints in object stores (store_ckpt.h). ckpt_keys holds
 * each job's checkpoint key (hex; never logged, never in a store);
 * stored_checkpoints one row per checkpoint an agent offered, its seq the
 * object keys' <seq>, its files the JSON list ebbd keeps upload ids in. */
static const char v9[] =
    "CREATE TABLE ckpt_keys ("
    " job_id TEXT PRIMARY KEY REFERENCES jobs (id),"
    " key_hex TEXT NOT NULL CHECK (length(key_hex) = 64),"
    " version INTEGER NOT NULL CHECK (version >= 1),"
    " created_at INTEGER NOT NULL"
    ");"
    "CREATE TABLE stored_checkpoints ("
    " seq INTEGER PRIMARY KEY,"
    " job_id TEXT NOT NULL REFERENCES jobs (id),"
    " instance_token TEXT NOT NULL,"
    " store TEXT NOT NULL,"
    " name TEXT NOT NULL,"
    " kind TEXT NOT NULL CHECK (kind IN ('file', 'directory')),"
    " state TEXT NOT NULL CHECK (state IN ('preparing', 'uploading',"
    "  'completing', 'durable', 'failed', 'deleted')),"
    " files TEXT NOT NULL,"
    " encrypt INTEGER NOT NULL CHECK (encrypt IN (0, 1)),"
    " bytes INTEGER NOT NULL CHECK (bytes >= 0),"
    " upload_ms INTEGER,"
    " duration_ms INTEGER,"
    " periodic INTEGER NOT NULL DEFAULT 0,"
    " created_at INTEGER NOT NULL,"
    " durable_at INTEGER,"
    " updated_at INTEGER NOT NULL,"
    " reason TEXT"
    ");"
    "CREATE INDEX stored_checkpoints_by_job ON stored_checkpoints (job_id, seq);"
    "CREATE INDEX stored_checkpoints_by_state ON stored_checkpoints (state);";

/* Version 10: packed workdirs in object stores (store_workdir.h).
 * workdir_secret holds ebbd's one workdir secret (hex; never logged, never
 * in a store), from which each tar's key is derived; stored_workdirs one
 * row per tar ebbd has put into a store (content-addressed: shared by
 * every job that submits the same tar; used_at: when it was stored or a
 * submit last found it there); job_workdirs the tar each job runs,
 * written with the job. */
static const char v10[] =
    "CREATE TABLE workdir_secret ("
    " id INTEGER PRIMARY KEY CHECK (id = 1),"
    " secret_hex TEXT NOT NULL CHECK (length(secret_hex) = 64),"
    " created_at INTEGER NOT NULL"
    ");"
    "CREATE TABLE stored_workdirs ("
    " store TEXT NOT NULL,"
    " sha256 TEXT NOT NULL CHECK (length(sha256) = 64),"
    " size INTEGER NOT NULL CHECK (size > 0),"
    " stored_size INTEGER NOT NULL CHECK (stored_size >= size),"
    " used_at INTEGER NOT NULL,"
    " PRIMARY KEY (store, sha256)"
    ");"
    "CREATE TABLE job_workdirs ("
    " job_id TEXT PRIMARY KEY REFERENCES jobs (id),"
    " store TEXT NOT NULL,"
    " sha256 TEXT NOT NULL CHECK (length(sha256) = 64),"
    " size INTEGER NOT NULL CHECK (size > 0),"
    " stored_size INTEGER NOT NULL CHECK (stored_size >= size)"
    ");";

/* Version 11: each job's priority (0 to 1000, jobs/jobspec.h), for the
 * queue's order (`ebb queue`); jobs stored before it are normal (500). */
static const char v11[] =
    "ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 500"
    " CHECK (priority BETWEEN 0 AND 1000);";

/* Version 12: learned speeds (store_speeds.h, docs/policies.md "Learned
 * speed"): per job family, GPU model, provider and host, the rates ever
 * counted and the latest ones (space-separated, oldest first). */
static const char v12[] =
    "CREATE TABLE speeds ("
    " family TEXT NOT NULL,"
    " gpu_model TEXT NOT NULL,"
    " provider TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " samples INTEGER NOT NULL CHECK (samples >= 1),"
    " rates TEXT NOT NULL,"
    " updated_at INTEGER NOT NULL,"
    " PRIMARY KEY (family, gpu_model, provider, host)"
    ");";

/* Version 13: the rank of the gang member that stored each checkpoint
 * (docs/gangs.md "Checkpoints: one per gang"): a gang's checkpoint is one
 * part per rank under one name; a single instance's rows are rank 0. */
static const char v13[] =
    "ALTER TABLE stored_checkpoints ADD COLUMN rank INTEGER NOT NULL DEFAULT 0"
    " CHECK (rank >= 0);";

/* Version 14: each job's checkpoint transfer rates (store_rates.h,
 * docs/stores.md "Fees and timing"), so that a restart plans with what
 * its agents measured; jobs stored before it start from the defaults. */
static const char v14[] =
    "CREATE TABLE transfer_rates ("
    " job_id TEXT PRIMARY KEY REFERENCES jobs (id),"
    " up_bytes_per_s INTEGER NOT NULL CHECK (up_bytes_per_s >= 0),"
    " down_bytes_per_s INTEGER NOT NULL CHECK (down_bytes_per_s >= 0),"
    " last_write_ms INTEGER NOT NULL CHECK (last_write_ms >= 0),"
    " updated_at INTEGER NOT NULL"
    ");";

/* migrations[i] moves a file from version i to version i + 1. */
static const char *const migrations[] = {v1, v2, v3, v4, v5, v6, v7, v8, v9, v10,
                                         v11, v12, v13, v14};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) ==
                   EBB__STORE_SCHEMA_LATEST,
               "EBB__STORE_SCHEMA_LATEST must match the migrations");

static int code_of(int rc)
{
    rc &= 0xff;
    return rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? EBB_EBUSY : EBB_EDB;
}

static void say(char *err, size_t errlen, const char *fmt, ...)
    EBB_PRINTF(3, 4);

/* One formatted message into a buffer that may be absent. */
static void say(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int read_version(sqlite3 *db, int *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* Applies migrations[from] and the version bump in one IMMEDIATE
 * transaction. The version is read again under the write lock: another
 * process (a second ebbd, the CLI) may have migrated the file meanwhile. */
static int step_once(sqlite3 *db, int from, char *err, size_t errlen)
{
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        say(err, errlen,
            "cannot lock the database to migrate it to schema version %d: %s",
            from + 1, sqlite3_errmsg(db));
        return code_of(rc);
    }
    int now = 0;
    rc = read_version(db, &now);
    if (rc == SQLITE_OK && now == from) {
        rc = sqlite3_exec(db, migrations[from], NULL, NULL, NULL);
        if (rc == SQLITE_OK && from == 0) {
            char sql[64];
            snprintf(sql, sizeof(sql), "PRAGMA application_id = %d",
                     EBB__STORE_APPLICATION_ID);
            rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
        }
        if (rc == SQLITE_OK) {
            char sql[48];
            snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", from + 1);
            rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
        }
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        say(err, errlen, "migration to schema version %d failed: %s",
            from + 1, sqlite3_errmsg(db));
        if (!sqlite3_get_autocommit(db))
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return code_of(rc);
    }
    return 0;
}

int ebb__store_migrate(sqlite3 *db, int target, char *err, size_t errlen)
{
    if (target < 0 || target > EBB__STORE_SCHEMA_LATEST)
        return EBB_EINVAL;
    for (;;) {
        int version = 0;
        int rc = read_version(db, &version);
        if (rc != SQLITE_OK) {
            say(err, errlen, "cannot read the schema version: %s",
                sqlite3_errmsg(db));
            return code_of(rc);
        }
        if (version >= target)
            return 0;
        int r = step_once(db, version, err, errlen);
        if (r < 0)
            return r;
    }
}
