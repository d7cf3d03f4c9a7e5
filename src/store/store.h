/* The store: ebbd's durable state in one SQLite file (ebb.db).
 *
 * Prices, the instance catalog, jobs and their event history, instances
 * (with the idempotency token committed before any launch), checkpoints,
 * the money ledger, schedules and budgets. Times are int64 ms since the
 * epoch (UTC); money is int64 micro-units with a currency next to it.
 *
 * The file is opened in WAL mode with synchronous=FULL (a committed ledger
 * row survives a power cut, not only a crash), foreign keys on and a 5 s
 * busy timeout, so the CLI may read while ebbd writes. The schema is
 * migrated forward on open, one transaction per version (PRAGMA
 * user_version); a file newer than this build is refused, never touched.
 *
 * A store handle belongs to one thread at a time (ebbd's loop thread; work
 * queued off the loop opens its own handle). Writes are short
 * transactions. The statements of store_sql.h are prepared once, on first
 * use, and cached in the handle; the rare reads (store_read.c,
 * store_schedules.c) prepare theirs per call.
 *
 * Errors: functions return 0 (or a documented count) or a negative EBB_E*
 * code: EBB_EBUSY when the database stayed locked past the busy timeout,
 * EBB_EDB for other SQLite failures, EBB_EINVAL for bad arguments. The
 * words of the last failure are kept: ebb__store_errmsg().
 *
 * The store owns every SQL statement ebb runs: other code asks it for
 * typed rows (this header, store_ledger.h, store_read.h,
 * store_schedules.h) and never sees the SQLite connection.
 *
 * Files: store.c (handle, statement cache, errors, transactions),
 * store_open.c (opening and checking the file), store_schema.c (schema
 * history), store_sql.h (every cached statement, by name), store_clock.c
 * (the clock's position, the billing check: store_clock.h), and the queries
 * by table: store_prices.c (prices and poll cursors), store_jobs.c (jobs,
 * instances, checkpoints, ledger writes, job counts), store_ledger.c (the
 * ledger read back for reports and metrics), store_read.c (the CLI's job
 * reads, recovery), store_schedules.c (schedules), store_ckpt.c (checkpoint
 * keys and checkpoints in object stores: store_ckpt.h). Adding a query: add its
 * name and SQL to store_sql.h, then a function to the header of its file.
 */
#ifndef EBB_STORE_H
#define EBB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>
#include <ebb/types.h>

struct ebb__store;

/* The newest schema version this build knows. Bumped by every migration
 * added to store_schema.c (a static assertion there keeps them in step). */
#define EBB__STORE_SCHEMA_LATEST 14

/* PRAGMA application_id of an ebb database ("ebb!"), set by migration 1 so
 * that another program's SQLite file is never mistaken for ours. */
#define EBB__STORE_APPLICATION_ID 0x65626221

/* Opens (creating it with mode 0600 if missing) the database at `path`,
 * configures it and migrates it to EBB__STORE_SCHEMA_LATEST.
 * `path`: a file name (borrowed); ":memory:" gives a private in-memory
 * database (no WAL). On success *out is a new handle for
 * ebb__store_close(). On failure *out is NULL and `err` (may be NULL,
 * `errlen` bytes) says what went wrong and what to do, e.g. "ebb.db has
 * schema version 7; this ebb knows up to 2: upgrade ebb".
 * Returns 0, EBB_EINVAL, EBB_EIO (cannot create the file), EBB_EBUSY,
 * EBB_EDB (not a database, not ours, too new, migration failed) or
 * EBB_ENOMEM. */
int ebb__store_open(const char *path, struct ebb__store **out, char *err,
                    size_t errlen);

/* For tests of migrations only: like ebb__store_open() but migrates no
 * further than `version` (0 .. EBB__STORE_SCHEMA_LATEST; 0 leaves a new
 * file empty). A file already at or past `version` (and not past
 * EBB__STORE_SCHEMA_LATEST) is opened as it is. The daemon and the CLI
 * always use ebb__store_open(). */
int ebb__store_open_at_version(const char *path, int version,
                               struct ebb__store **out, char *err,
                               size_t errlen);

/* Finalizes every cached statement and closes the database. A transaction
 * still open is rolled back. NULL is ignored. */
void ebb__store_close(struct ebb__store *s);

/* The words of the last failure on this handle ("" when none). The string
 * belongs to the handle and is overwritten by the next failure. */
const char *ebb__store_errmsg(const struct ebb__store *s);

/* Stores the file's schema version (PRAGMA user_version) in *out.
 * Returns 0 or an EBB_E* code. */
int ebb__store_schema_version(struct ebb__store *s, int *out);

/* Runs PRAGMA integrity_check. Returns 0 when SQLite answers "ok";
 * otherwise EBB_EDB with its first complaints in `err` (may be NULL). */
int ebb__store_integrity_check(struct ebb__store *s, char *err,
                               size_t errlen);

/* Transactions. begin() takes the write lock at once (BEGIN IMMEDIATE) so
 * that a busy database fails at the start (after the busy timeout) rather
 * than half way through. Transactions do not nest: begin() inside one
 * fails with EBB_EDB. rollback() outside a transaction does nothing and
 * returns 0 (SQLite may already have rolled back after an error). */
/* Group commit, for ebbd's loop: every write joins one transaction that
 * ebb__store_flush() commits (ebbd flushes once per loop turn, and before
 * any call that must follow a durable write, such as a provider's launch),
 * so a burst of events costs one fsync instead of one each. Inside a
 * group, begin/commit/rollback are savepoints: a rollback undoes only its
 * own writes. Off by default. */
void ebb__store_group_commit(struct ebb__store *s, int on);
/* Checkpoints off the writer: SQLite's automatic checkpoint (every 1000
 * WAL pages, in the committing thread, with an fsync of the database) is
 * turned off on `s`, which only counts the WAL's pages after each commit;
 * the caller runs ebb__store_checkpoint on a connection of its own, in
 * another thread, when ebb__store_wal_pages says so. */
void ebb__store_checkpoint_elsewhere(struct ebb__store *s);
int ebb__store_wal_pages(const struct ebb__store *s);
/* Copies what the WAL holds into the database as far as no reader needs
 * it (a passive checkpoint: never waits for the writer). Returns 0 or an
 * EBB_E* code. */
int ebb__store_checkpoint(struct ebb__store *s);
/* Commits the group's transaction when no savepoint is open. Returns 0 or
 * a negative EBB_E* code. A no-op without group commit. */
int ebb__store_flush(struct ebb__store *s);

int ebb__store_begin(struct ebb__store *s);
int ebb__store_commit(struct ebb__store *s);
int ebb__store_rollback(struct ebb__store *s);

/* 1 while a transaction is open on this handle, else 0. */
int ebb__store_in_transaction(struct ebb__store *s);

/* ---- prices ------------------------------------------------------------ */

/* Records one observed price of `provider` (borrowed, e.g. "aws"), or of
 * p->provider when the price names its market itself.
 * NULL region, zone or product are stored as "" and a NULL currency as
 * "USD". Observations are keyed by provider, region, zone, instance type,
 * product, market and time, so storing the same one again changes nothing.
 * Returns 1 when inserted, 0 when it was already present, or a negative
 * EBB_E* code (EBB_EINVAL for a missing type, a negative price or a
 * currency that is not three letters). */
int ebb__store_put_price(struct ebb__store *s, const char *provider,
                         const struct ebb_price *p);

/* Records `n` prices as ebb__store_put_price() does, in one transaction
 * (much faster than one each) unless the caller already holds one, in
 * which case they join it. On failure nothing of the batch is kept when
 * this call opened the transaction; inside the caller's transaction the
 * caller should roll back. `inserted` (may be NULL) receives how many were
 * new. Returns 0 or a negative EBB_E* code. */
int ebb__store_put_prices(struct ebb__store *s, const char *provider,
                          const struct ebb_price *p, size_t n,
                          size_t *inserted);

/* Stores in *out the newest observation time of the prices of `provider`
 * in the series `key` matches (NULL fields match any value; NULL `key`:
 * every series of the provider), or 0 when there is none. Every series
 * (provider, region, zone, instance type, product) keeps its own cursor,
 * advanced by ebb__store_put_price(s), so that a poll resumes each series
 * where its own prices end. Returns 0 or a negative EBB_E* code. */
int ebb__store_price_cursor(struct ebb__store *s, const char *provider,
                            const struct ebb_series_key *key, ebb_time_ms *out);

/* Which series ebb__store_latest_prices() reports; a NULL field matches
 * anything. */
struct ebb__price_filter {
    const char *provider;
    const char *instance_type;
    const char *zone;
};

/* One price as stored, with its provider. Strings are valid during the
 * callback only. */
struct ebb__price_row {
    const char *provider;
    struct ebb_price price;
};

/* Called once per row; return 0 to go on, anything else to stop (that
 * value is then returned by the function that called it). */
typedef int (*ebb__price_row_cb)(void *arg, const struct ebb__price_row *row);

/* Calls `cb` with the newest observation of every series (provider,
 * region, zone, instance type, product, market) matching `f` (NULL: all),
 * ordered by provider, region, zone, instance type, product, market.
 * `cb` may call other store functions but not this one.
 * Returns 0, the callback's non-zero value, or a negative EBB_E* code. */
int ebb__store_latest_prices(struct ebb__store *s,
                             const struct ebb__price_filter *f,
                             ebb__price_row_cb cb, void *arg);

/* Calls `cb` with every observation of every series matching `f` (NULL:
 * all) observed in [since, until), ordered by provider, region, zone,
 * instance type, product, market and then time: the rows of one series
 * come together, oldest first. The price history forecasts read; a series
 * with no row in the window is not reported (pass a window that the
 * providers' usual observation interval fills). `cb` may call other store
 * functions but not this one. Returns 0, the callback's non-zero value, or
 * a negative EBB_E* code (EBB_EINVAL for since > until or no callback). */
int ebb__store_price_history(struct ebb__store *s,
                             const struct ebb__price_filter *f,
                             ebb_time_ms since, ebb_time_ms until,
                             ebb__price_row_cb cb, void *arg);

/* One price series, as the ledger's instances name it. Strings borrowed. */
struct ebb__price_series {
    const char *provider, *region, *zone, *instance_type;
    enum ebb_market market;
};

/* One step of a series' price: from `at` on, `price` per hour in
 * `currency` (valid during the callback only). */
struct ebb__price_step {
    ebb_time_ms at;
    ebb_micros price;
    const char *currency;
};

/* Called once per step; non-zero stops, as ebb__price_row_cb. */
typedef int (*ebb__price_step_cb)(void *arg, const struct ebb__price_step *step);

/* Calls `cb` with the price steps of `series` observed before `until`,
 * oldest first: one per observation time, the lowest price when several
 * products of the instance type were observed then (say Linux and
 * Windows). What a report prices instance time on. `cb` may call other
 * store functions but not this one. Returns 0, the callback's non-zero
 * value, or a negative EBB_E* code. */
int ebb__store_price_steps(struct ebb__store *s,
                           const struct ebb__price_series *series,
                           ebb_time_ms until, ebb__price_step_cb cb, void *arg);

/* ---- jobs -------------------------------------------------------------- */

/* Calls `cb` once per job state present, in state name order, with the
 * number of jobs in it. `state` is valid during the call only.
 * Returns 0 or a negative EBB_E* code. */
int ebb__store_job_counts(struct ebb__store *s,
                          void (*cb)(void *arg, const char *state,
                                     int64_t count),
                          void *arg);

/* ---- jobs, instances, checkpoints, ledger (store_jobs.c) ---------------
 * Each call is one statement; group related writes with begin/commit. */

/* A job as stored. Strings borrowed. deadline 0 and budget < 0 mean none. */
struct ebb__job_row {
    const char *id, *name, *team, *spec_yaml, *spec_json, *state, *policy;
    int64_t owner_uid;
    ebb_time_ms submitted_at, deadline, updated_at;
    ebb_dur_ms work_ms, work_done_ms;
    ebb_micros budget, spent;
    const char *currency;
    int retries, preemptions;
    const char *workdir;    /* "" or NULL: none */
    int priority;           /* 0 to 1000 (jobs/jobspec.h) */
};

/* Returns 0, EBB_EEXISTS when the id is taken, or another EBB_E* code. */
int ebb__store_job_insert(struct ebb__store *s, const struct ebb__job_row *r);

/* Updates what changes as a job runs. */
int ebb__store_job_update(struct ebb__store *s, const char *id,
                          const char *state, ebb_dur_ms work_done_ms,
                          ebb_micros spent, int retries, int preemptions,
                          ebb_time_ms updated_at);

/* Appends to job_events; `from_state` is NULL for a job's first event. */
int ebb__store_job_event(struct ebb__store *s, const char *job_id,
                         ebb_time_ms at, const char *from_state,
                         const char *to_state, const char *reason);

/* An instance row, written in state "intent" before the launch call. */
struct ebb__instance_row {
    const char *token, *job_id, *provider, *region, *zone, *instance_type;
    enum ebb_market market;
    ebb_time_ms requested_at;
    ebb_micros price;
    const char *currency;
    const char *market_plugin; /* the offer's plugin (differs under run_on) */
    const char *product;
    const char *agent_token_hash; /* hex SHA-256 of the agent's secret; may be NULL */
};

int ebb__store_instance_insert(struct ebb__store *s,
                               const struct ebb__instance_row *r);

/* Replaces the hash an instance's agent authenticates with (its
 * enrolment token's, then its session secret's). */
int ebb__store_instance_agent_hash(struct ebb__store *s, const char *token,
                                   const char *hash);

/* Records the market's shadow instance of an instance run elsewhere. */
int ebb__store_instance_shadow(struct ebb__store *s, const char *token,
                               const char *shadow_id);

/* Moves an instance to `state` ("launching", "running", "terminating",
 * "terminated", "failed"); NULL strings and 0 times leave fields as they
 * are. */
int ebb__store_instance_update(struct ebb__store *s, const char *token,
                               const char *state,
                               const char *provider_instance_id,
                               ebb_time_ms started_at, ebb_time_ms ended_at,
                               const char *end_reason);

int ebb__store_checkpoint_add(struct ebb__store *s, const char *job_id,
                              const char *instance_token, ebb_time_ms at,
                              const char *path, ebb_dur_ms work_done_ms,
                              int complete, int64_t bytes);

/* The path of the job's newest complete checkpoint into path[len]. Returns
 * 0, EBB_ENOTFOUND (none: path is "") or a negative code. */
int ebb__store_checkpoint_latest(struct ebb__store *s, const char *job_id, char *path,
                                 size_t len);

/* A job's checkpoints kept in a checkpoint store (bytes > 0: the plaintext
 * bytes of a durable one), newest first, at most `most` of them: `cb`
 * with each one's time and bytes; non-zero from it stops the walk, which
 * returns it. Otherwise 0 or a negative code. */
int ebb__store_checkpoints_stored(struct ebb__store *s, const char *job_id,
                                  size_t most,
                                  int (*cb)(void *arg, ebb_time_ms at,
                                            int64_t bytes),
                                  void *arg);

struct ebb__ledger_row {
    const char *job_id, *instance_token, *team, *provider, *kind, *currency,
        *note;
    ebb_time_ms start_at, end_at;
    ebb_micros rate, amount;
};

int ebb__store_ledger_add(struct ebb__store *s, const struct ebb__ledger_row *r);

/* Sum of a job's ledger amounts (micro-units of its currency). */
int ebb__store_ledger_job_total(struct ebb__store *s, const char *job_id,
                                ebb_micros *total);

/* Called per currency with the sum of its amounts; non-zero stops. */
typedef int (*ebb__store_sum_cb)(void *arg, const char *currency,
                                 ebb_micros total);
/* Sums team `team`'s ledger rows that start in [from, to), per currency.
 * Returns 0 or a negative code. */
int ebb__store_ledger_team_sums(struct ebb__store *s, const char *team,
                                ebb_time_ms from, ebb_time_ms to,
                                ebb__store_sum_cb cb, void *arg);
/* As ebb__store_ledger_team_sums(), the rows of jobs `owner_uid` owns
 * only (a user's spend in the team, docs/budgets.md "Quotas"). */
int ebb__store_ledger_owner_sums(struct ebb__store *s, const char *team,
                                 int64_t owner_uid, ebb_time_ms from,
                                 ebb_time_ms to, ebb__store_sum_cb cb, void *arg);

#endif
