/* Every statement the store keeps prepared, by name, in one list.
 *
 * EBB__STORE_STATEMENTS(X) calls X(NAME, SQL) once per statement.
 * store_internal.h turns the list into `enum ebb__sql` (EBB__SQL_NAME, one
 * cache slot each) and store.c into the table of SQL text, so a statement
 * added anywhere in the list gets a slot of its own and moves no other.
 * Adding a query: add its line here, then a function in the store_*.c file
 * of its table that calls ebb__store_stmt(s, EBB__SQL_NAME).
 *
 * Statements that run once per call (the CLI's reads in store_read.c, the
 * schedules in store_schedules.c), the PRAGMAs of opening a file
 * (store_open.c) and the migrations (store_schema.c) are not cached and
 * keep their SQL in their own files.
 *
 * Included by store_internal.h only. */
#ifndef EBB_STORE_SQL_H
#define EBB_STORE_SQL_H

/* ---- transactions (store.c) --------------------------------------------- */

#define EBB__STORE_TXN_STATEMENTS(X)                                           \
    X(BEGIN, "BEGIN IMMEDIATE")                                                \
    X(COMMIT, "COMMIT")                                                        \
    X(ROLLBACK, "ROLLBACK")                                                    \
    X(SAVEPOINT, "SAVEPOINT ebb")                                              \
    X(RELEASE, "RELEASE ebb")                                                  \
    X(ROLLBACK_TO, "ROLLBACK TO ebb")                                          \
    X(USER_VERSION, "PRAGMA user_version")

/* ---- prices (store_prices.c) -------------------------------------------- */

/* max(observed_at) with bare columns: SQLite takes the other columns of a
 * group from the row holding the maximum, which is exactly "the newest
 * observation of the series". Rows come out in primary key order, so the
 * GROUP BY and ORDER BY need no sort. */
#define EBB__SQL_LATEST(where)                                                 \
    "SELECT provider, region, zone, instance_type, product, market,"           \
    " max(observed_at), price_micros, currency FROM prices " where             \
    " GROUP BY provider, region, zone, instance_type, product, market"         \
    " ORDER BY provider, region, zone, instance_type, product, market"

/* Every observation in [:since, :until), series by series, oldest first:
 * the primary key's order, so no sort. */
#define EBB__SQL_HISTORY(where)                                                \
    "SELECT provider, region, zone, instance_type, product, market,"           \
    " observed_at, price_micros, currency FROM prices"                         \
    " WHERE observed_at >= :since AND observed_at < :until" where              \
    " ORDER BY provider, region, zone, instance_type, product, market,"        \
    " observed_at"

/* ON CONFLICT DO NOTHING rather than INSERT OR IGNORE: OR IGNORE would also
 * silently drop a row that breaks a CHECK or NOT NULL, which must be an
 * error, not "already present".
 *
 * LATEST_PRICES_<n> and PRICE_HISTORY_<n>: eight variants each, one per
 * combination of filter fields (n's bit 0: provider, bit 1: instance type,
 * bit 2: zone), so that each uses the primary key or an index for the
 * fields it has instead of one "(? IS NULL OR col = ?)" statement that can
 * use none. They stay in this order: store_prices.c adds n to _0.
 *
 * PRICE_CURSOR, by contrast, is one statement with "IS NULL OR" for the
 * series key's optional fields: the cursor table holds one row per series,
 * so its provider prefix of the primary key narrows it enough.
 *
 * PRICE_STEPS: one point per observation time of a series before ?6; a
 * market with several products (say Linux and Windows) under the same type
 * keeps its lowest price. */
#define EBB__STORE_PRICE_STATEMENTS(X)                                         \
    X(PUT_PRICE,                                                               \
      "INSERT INTO prices (provider, region, zone, instance_type, product,"    \
      " market, observed_at, price_micros, currency)"                          \
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"                           \
      " ON CONFLICT DO NOTHING")                                               \
    X(PUT_CURSOR,                                                              \
      "INSERT INTO price_cursors (provider, region, zone, instance_type,"      \
      " product, last_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"                     \
      " ON CONFLICT (provider, region, zone, instance_type, product)"          \
      " DO UPDATE SET last_at = max(last_at, excluded.last_at)")               \
    X(PRICE_CURSOR, "SELECT max(last_at) FROM price_cursors"                   \
                    " WHERE provider = ?1 AND (?2 IS NULL OR region = ?2)"     \
                    " AND (?3 IS NULL OR zone = ?3)"                           \
                    " AND (?4 IS NULL OR instance_type = ?4)"                  \
                    " AND (?5 IS NULL OR product = ?5)")                       \
    X(LATEST_PRICES_0, EBB__SQL_LATEST(""))                                    \
    X(LATEST_PRICES_1, EBB__SQL_LATEST("WHERE provider = :provider"))          \
    X(LATEST_PRICES_2, EBB__SQL_LATEST("WHERE instance_type = :type"))         \
    X(LATEST_PRICES_3, EBB__SQL_LATEST("WHERE provider = :provider"            \
                                       " AND instance_type = :type"))          \
    X(LATEST_PRICES_4, EBB__SQL_LATEST("WHERE zone = :zone"))                  \
    X(LATEST_PRICES_5, EBB__SQL_LATEST("WHERE provider = :provider"            \
                                       " AND zone = :zone"))                   \
    X(LATEST_PRICES_6, EBB__SQL_LATEST("WHERE instance_type = :type"           \
                                       " AND zone = :zone"))                   \
    X(LATEST_PRICES_7, EBB__SQL_LATEST("WHERE provider = :provider"            \
                                       " AND instance_type = :type"            \
                                       " AND zone = :zone"))                   \
    X(PRICE_HISTORY_0, EBB__SQL_HISTORY(""))                                   \
    X(PRICE_HISTORY_1, EBB__SQL_HISTORY(" AND provider = :provider"))          \
    X(PRICE_HISTORY_2, EBB__SQL_HISTORY(" AND instance_type = :type"))         \
    X(PRICE_HISTORY_3, EBB__SQL_HISTORY(" AND provider = :provider"            \
                                        " AND instance_type = :type"))         \
    X(PRICE_HISTORY_4, EBB__SQL_HISTORY(" AND zone = :zone"))                  \
    X(PRICE_HISTORY_5, EBB__SQL_HISTORY(" AND provider = :provider"            \
                                        " AND zone = :zone"))                  \
    X(PRICE_HISTORY_6, EBB__SQL_HISTORY(" AND instance_type = :type"           \
                                        " AND zone = :zone"))                  \
    X(PRICE_HISTORY_7, EBB__SQL_HISTORY(" AND provider = :provider"            \
                                        " AND instance_type = :type"           \
                                        " AND zone = :zone"))                  \
    X(PRICE_STEPS,                                                             \
      "SELECT observed_at, min(price_micros), currency FROM prices"            \
      " WHERE provider = ?1 AND region = ?2 AND zone = ?3"                     \
      " AND instance_type = ?4 AND market = ?5 AND observed_at < ?6"           \
      " GROUP BY observed_at ORDER BY observed_at")

/* ---- jobs, instances, checkpoints, ledger writes (store_jobs.c) --------- */

#define EBB__STORE_JOB_STATEMENTS(X)                                           \
    X(JOB_INSERT,                                                              \
      "INSERT INTO jobs (id, name, owner_uid, team, spec_yaml, spec_json,"     \
      " state, policy, submitted_at, deadline, work_ms, work_done_ms,"         \
      " budget_micros, currency, spent_micros, retries, preemptions,"          \
      " updated_at, workdir, priority) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"    \
      " ?8, ?9, nullif(?10, 0), ?11, ?12,"                                     \
      " CASE WHEN ?13 < 0 THEN NULL ELSE ?13 END,"                             \
      " ?14, ?15, ?16, ?17, ?18, ?19, ?20)")                                   \
    X(JOB_UPDATE,                                                              \
      "UPDATE jobs SET state = ?2, work_done_ms = ?3, spent_micros = ?4,"      \
      " retries = ?5, preemptions = ?6, updated_at = ?7 WHERE id = ?1")        \
    X(JOB_EVENT,                                                               \
      "INSERT INTO job_events (job_id, at, from_state, to_state, reason)"      \
      " VALUES (?1, ?2, ?3, ?4, ?5)")                                          \
    X(JOB_COUNTS,                                                              \
      "SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state")        \
    X(INSTANCE_INSERT,                                                         \
      "INSERT INTO instances (token, job_id, provider, region, zone,"          \
      " instance_type, market, state, requested_at, price_micros, currency,"   \
      " market_plugin, product, agent_token_hash)"                             \
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'intent', ?8, ?9, ?10, ?11,"       \
      " ?12, ?13)")                                                            \
    X(INSTANCE_UPDATE,                                                         \
      "UPDATE instances SET state = ?2,"                                       \
      " provider_instance_id = coalesce(?3, provider_instance_id),"            \
      " started_at = coalesce(nullif(?4, 0), started_at),"                     \
      " ended_at = coalesce(nullif(?5, 0), ended_at),"                         \
      " end_reason = coalesce(?6, end_reason) WHERE token = ?1")               \
    X(INSTANCE_SHADOW, "UPDATE instances SET shadow_id = ?2 WHERE token = ?1") \
    X(INSTANCE_AGENT_HASH,                                                     \
      "UPDATE instances SET agent_token_hash = ?2 WHERE token = ?1")           \
    X(CHECKPOINT_ADD,                                                          \
      "INSERT INTO checkpoints (job_id, instance_token, at, path,"             \
      " work_done_ms, complete, bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")   \
    X(CHECKPOINT_LATEST,                                                       \
      "SELECT path FROM checkpoints WHERE job_id = ?1 AND complete = 1"        \
      " ORDER BY at DESC, id DESC LIMIT 1")                                    \
    X(CHECKPOINTS_STORED,                                                      \
      "SELECT at, bytes FROM checkpoints WHERE job_id = ?1 AND bytes > 0"      \
      " ORDER BY at DESC, id DESC LIMIT ?2")                                   \
    X(LEDGER_ADD,                                                              \
      "INSERT INTO ledger (job_id, instance_token, team, provider, kind,"      \
      " start_at, end_at, rate_micros, amount_micros, currency, note)"         \
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)")                \
    X(LEDGER_JOB_TOTAL, "SELECT coalesce(sum(amount_micros), 0) FROM ledger"   \
                        " WHERE job_id = ?1")                                  \
    X(LEDGER_TEAM_SUMS,                                                        \
      "SELECT currency, sum(amount_micros) FROM ledger WHERE team = ?1"        \
      " AND end_at >= ?2 AND end_at < ?3 GROUP BY currency")                \
    X(LEDGER_OWNER_SUMS,                                                       \
      "SELECT l.currency, sum(l.amount_micros) FROM ledger l"                  \
      " JOIN jobs j ON j.id = l.job_id WHERE l.team = ?1"                      \
      " AND l.end_at >= ?2 AND l.end_at < ?3 AND j.owner_uid = ?4"             \
      " GROUP BY l.currency")

/* ---- the ledger read back (store_ledger.c) -------------------------------
 *
 * LEDGER_WINDOW: the rows starting in [?1, ?2), each with the part of it
 * whose time was lost (the last column, ms) and its job's productive time
 * before it, which places the row on the spot-at-once timeline: the
 * compute time not lost of the job's earlier rows, those before the
 * window included (read through ledger_by_job). Lost time is the
 * restart overhead of every instance but the job's first, and the compute
 * time after an ended instance's last complete checkpoint when the job did
 * not finish on that instance (a later instance redid that work from the
 * checkpoint, or the job ended otherwise); all of an instance's compute
 * time when it wrote no checkpoint.
 *
 * WINDOW_EVENTS: preemptions and checkpoints in [?1, ?2), each with the
 * instance the job held then (the latest started at or before the event)
 * and the time of the job's next event (how long a checkpoint took).
 *
 * INSTANCE_RUNS: each instance with instance time starting in [?1, ?2),
 * from its first billed second to its last.
 *
 * PLAN_USAGE: compute and overhead rows starting in [?1, ?2) on provider
 * ?3, in region ?4 and of type ?5 where those are not NULL, team by team.
 *
 * LEDGER_SUMS: the whole ledger's sum per currency. */
#define EBB__STORE_LEDGER_STATEMENTS(X)                                        \
    X(LEDGER_WINDOW,                                                           \
      "WITH w AS MATERIALIZED (SELECT DISTINCT job_id FROM ledger"             \
      "  WHERE start_at >= ?1 AND start_at < ?2 AND job_id IS NOT NULL),"      \
      " r AS (SELECT l.id, l.job_id, l.team, l.provider, l.kind, l.start_at,"  \
      " l.end_at, l.amount_micros, l.currency, l.note,"                        \
      " coalesce(i.region, '') AS region, coalesce(i.zone, '') AS zone,"       \
      " coalesce(i.instance_type, '') AS instance_type,"                       \
      " coalesce(i.market, '') AS market,"                                     \
      " coalesce(j.submitted_at, l.start_at) AS submitted_at,"                 \
      " coalesce(l.end_at - max(l.start_at, min(l.end_at,"                     \
      "  CASE WHEN l.instance_token IS NULL OR i.token IS NULL THEN NULL"      \
      "  WHEN l.kind = 'overhead' THEN CASE WHEN l.instance_token ="           \
      "   (SELECT f.instance_token FROM ledger f WHERE f.job_id = l.job_id"    \
      "   AND f.kind <> 'fee' ORDER BY f.start_at, f.id LIMIT 1)"              \
      "   THEN NULL ELSE l.start_at END"                                       \
      "  WHEN l.kind = 'compute' AND i.ended_at IS NOT NULL"                    \
      "  AND (j.state IS NOT 'succeeded' OR EXISTS"                            \
      "   (SELECT 1 FROM instances n WHERE n.job_id = l.job_id"                \
      "   AND n.started_at > i.started_at))"                                   \
      "  THEN coalesce((SELECT max(c.at) FROM checkpoints c"                   \
      "   WHERE c.job_id = l.job_id AND c.instance_token = l.instance_token"   \
      "   AND c.complete = 1), l.start_at) END)), 0) AS lost"                  \
      " FROM ledger l LEFT JOIN instances i ON i.token = l.instance_token"     \
      " LEFT JOIN jobs j ON j.id = l.job_id"                                   \
      " WHERE l.start_at < ?2 AND (l.start_at >= ?1"                           \
      "  OR l.job_id IN (SELECT job_id FROM w))),"                             \
      " x AS (SELECT r.*, coalesce(sum(CASE WHEN kind = 'compute'"             \
      "  THEN end_at - start_at - lost END) OVER (PARTITION BY job_id"         \
      "  ORDER BY start_at, id"                                                \
      "  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS prior"       \
      " FROM r)"                                                               \
      " SELECT job_id, team, provider, kind, start_at, end_at, amount_micros," \
      " currency, note, region, zone, instance_type, market, submitted_at,"    \
      " prior, lost FROM x WHERE start_at >= ?1 ORDER BY start_at, id")        \
    X(WINDOW_EVENTS,                                                           \
      "SELECT x.job_id, x.team, x.to_state, x.at, x.next_at,"                  \
      " coalesce((SELECT provider FROM ledger WHERE job_id = x.job_id"         \
      "  AND instance_token = i.token LIMIT 1), i.provider, ''),"              \
      " coalesce(i.instance_type, ''),"                                        \
      " coalesce(i.token, '')"                                                 \
      " FROM (SELECT e.job_id, j.team, e.to_state, e.at, lead(e.at)"           \
      "  OVER (PARTITION BY e.job_id ORDER BY e.seq) AS next_at"               \
      "  FROM job_events e JOIN jobs j ON j.id = e.job_id"                     \
      "  WHERE e.job_id IN (SELECT DISTINCT job_id FROM job_events"            \
      " WHERE at >= ?1"                                                        \
      "   AND at < ?2 AND to_state IN ('preempted', 'checkpointing'))) x"      \
      " LEFT JOIN instances i ON i.token = (SELECT token FROM instances"       \
      "  WHERE job_id = x.job_id AND started_at <= x.at"                       \
      "  ORDER BY started_at DESC LIMIT 1)"                                    \
      " WHERE x.at >= ?1 AND x.at < ?2"                                        \
      " AND x.to_state IN ('preempted', 'checkpointing')"                      \
      " ORDER BY x.at")                                                        \
    X(INSTANCE_RUNS,                                                           \
      "SELECT l.instance_token, l.job_id, l.provider,"                         \
      " coalesce(i.region, ''), coalesce(i.zone, ''),"                         \
      " coalesce(i.instance_type, ''), coalesce(i.market, ''),"                \
      " min(l.start_at), max(l.end_at)"                                        \
      " FROM ledger l JOIN instances i ON i.token = l.instance_token"          \
      " WHERE l.start_at >= ?1 AND l.start_at < ?2 AND l.kind <> 'fee'"        \
      " GROUP BY l.instance_token ORDER BY 8, 1")                              \
    X(PLAN_USAGE,                                                              \
      "SELECT l.team, l.start_at, l.end_at, l.amount_micros, l.currency"       \
      " FROM ledger l JOIN instances i ON i.token = l.instance_token"          \
      " WHERE l.kind IN ('compute', 'overhead') AND l.start_at >= ?1"          \
      " AND l.start_at < ?2 AND l.provider = ?3"                               \
      " AND (?4 IS NULL OR i.region = ?4)"                                     \
      " AND (?5 IS NULL OR i.instance_type = ?5)"                              \
      " ORDER BY l.team")                                                      \
    X(LEDGER_SUMS, "SELECT currency, SUM(amount_micros) FROM ledger"           \
                   " GROUP BY currency ORDER BY currency")

/* ---- the clock's position (store_clock.c) ------------------------------- */

#define EBB__STORE_CLOCK_STATEMENTS(X)                                         \
    X(CLOCK_GET, "SELECT start_at, speed, now_at FROM clock WHERE id = 1")     \
    X(CLOCK_SET,                                                               \
      "INSERT INTO clock (id, start_at, speed, now_at) VALUES (1, ?1, ?2, ?3)" \
      " ON CONFLICT (id) DO UPDATE SET start_at = ?1, speed = ?2,"             \
      " now_at = max(now_at, ?3)")                                             \
    X(CLOCK_STAMP, "UPDATE clock SET now_at = max(now_at, ?1) WHERE id = 1")

/* ---- the notification outbox (store_outbox.c) --------------------------
 *
 * OUTBOX_NEXT_DUE: ?1 to ?8 are rows in flight (EBB__OUTBOX_SKIP_MAX), -1
 * for none.
 *
 * OUTBOX_TRIM: the oldest pending rows beyond ?1 turn dead; the pending
 * count is read through the (status, next_at) index. */
#define EBB__STORE_OUTBOX_STATEMENTS(X)                                        \
    X(OUTBOX_ADD,                                                              \
      "INSERT INTO notify_outbox (event_id, channel, type, job_id,"           \
      " created_at, body, next_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?5)"        \
      " ON CONFLICT (event_id, channel) DO NOTHING")                           \
    X(OUTBOX_TRIM,                                                             \
      "UPDATE notify_outbox SET status = 'dead', last_error = 'outbox full',"  \
      " done_at = ?2 WHERE seq IN (SELECT seq FROM notify_outbox"              \
      " WHERE status = 'pending' ORDER BY seq LIMIT max(0, (SELECT count(*)"   \
      " FROM notify_outbox WHERE status = 'pending') - ?1))")                  \
    X(OUTBOX_DUE,                                                              \
      "SELECT seq, event_id, channel, type, body, attempts FROM notify_outbox" \
      " WHERE status = 'pending' AND next_at <= ?1 ORDER BY seq")              \
    X(OUTBOX_NEXT_DUE,                                                         \
      "SELECT coalesce(min(next_at), 0) FROM notify_outbox"                    \
      " WHERE status = 'pending'"                                              \
      " AND seq NOT IN (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")                      \
    X(OUTBOX_DELIVERED,                                                        \
      "UPDATE notify_outbox SET status = 'delivered', attempts = ?2,"          \
      " done_at = ?3, last_error = NULL WHERE seq = ?1")                       \
    X(OUTBOX_FAILED,                                                           \
      "UPDATE notify_outbox SET attempts = ?2, last_error = substr(?3, 1, 300),"\
      " next_at = ?4, status = CASE WHEN ?5 THEN 'dead' ELSE 'pending' END,"   \
      " done_at = CASE WHEN ?5 THEN ?6 END WHERE seq = ?1")                    \
    X(OUTBOX_PRUNE,                                                            \
      "DELETE FROM notify_outbox WHERE status <> 'pending' AND seq NOT IN"     \
      " (SELECT seq FROM notify_outbox WHERE status <> 'pending'"              \
      " ORDER BY seq DESC LIMIT ?1)")

/* ---- checkpoints in object stores (store_ckpt.c) ------------------------ */

#define EBB__SQL_CKPT_COLUMNS                                                  \
    "seq, job_id, instance_token, store, name, kind, state, files, encrypt,"   \
    " bytes, coalesce(upload_ms, 0), coalesce(duration_ms, 0), periodic,"      \
    " created_at, coalesce(durable_at, 0), updated_at, coalesce(reason, ''),"  \
    " rank"

#define EBB__STORE_CKPT_STATEMENTS(X)                                          \
    X(CKPT_KEY_GET,                                                            \
      "SELECT key_hex, version FROM ckpt_keys WHERE job_id = ?1")              \
    X(CKPT_KEY_PUT,                                                            \
      "INSERT INTO ckpt_keys (job_id, key_hex, version, created_at)"           \
      " VALUES (?1, ?2, 1, ?3)")                                               \
    X(CKPT_INSERT,                                                             \
      "INSERT INTO stored_checkpoints (job_id, instance_token, store, name,"   \
      " kind, state, files, encrypt, bytes, created_at, updated_at, rank)"     \
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11)")           \
    X(CKPT_UPDATE,                                                             \
      "UPDATE stored_checkpoints SET state = ?2, files = coalesce(?3, files)," \
      " reason = coalesce(?4, reason), updated_at = ?5,"                       \
      " durable_at = CASE WHEN ?6 > 0 THEN ?6 ELSE durable_at END,"            \
      " upload_ms = CASE WHEN ?7 >= 0 THEN ?7 ELSE upload_ms END,"             \
      " duration_ms = CASE WHEN ?8 >= 0 THEN ?8 ELSE duration_ms END,"         \
      " periodic = CASE WHEN ?9 >= 0 THEN ?9 ELSE periodic END WHERE seq = ?1")\
    X(CKPT_GET, "SELECT " EBB__SQL_CKPT_COLUMNS " FROM stored_checkpoints"     \
                " WHERE seq = ?1 AND (?2 IS NULL OR job_id = ?2)")             \
    X(CKPT_OF_JOB, "SELECT " EBB__SQL_CKPT_COLUMNS " FROM stored_checkpoints"  \
                   " WHERE job_id = ?1 AND (?2 IS NULL OR state = ?2)"         \
                   " AND (?3 < 0 OR rank = ?3) ORDER BY seq DESC")             \
    X(CKPT_INSTANCE_ENDED,                                                     \
      "SELECT coalesce((SELECT state IN ('terminated', 'failed')"              \
      " FROM instances WHERE token = ?1), 1)")                                 \
    X(CKPT_OPEN, "SELECT " EBB__SQL_CKPT_COLUMNS " FROM stored_checkpoints c"  \
                 " WHERE state IN ('preparing', 'uploading', 'completing')"    \
                 " OR (?1 AND state = 'durable' AND (SELECT state FROM jobs"   \
                 " WHERE id = c.job_id) IN ('succeeded', 'failed', 'cancelled',"\
                 " 'budget_exhausted', 'deadline_missed')) ORDER BY seq")

/* ---- packed workdirs in object stores (store_workdir.c) ---------------- */

#define EBB__STORE_WORKDIR_STATEMENTS(X)                                       \
    X(WORKDIR_SECRET_GET, "SELECT secret_hex FROM workdir_secret WHERE id = 1")\
    X(WORKDIR_SECRET_PUT,                                                      \
      "INSERT INTO workdir_secret (id, secret_hex, created_at)"                \
      " VALUES (1, ?1, ?2)")                                                   \
    X(WORKDIR_STORED_GET,                                                      \
      "SELECT size, stored_size FROM stored_workdirs"                          \
      " WHERE store = ?1 AND sha256 = ?2")                                     \
    X(WORKDIR_STORED_PUT,                                                      \
      "INSERT OR REPLACE INTO stored_workdirs (store, sha256, size,"           \
      " stored_size, used_at) VALUES (?1, ?2, ?3, ?4, ?5)")                    \
    X(WORKDIR_STORED_TOUCH,                                                    \
      "UPDATE stored_workdirs SET used_at = max(used_at, ?3)"                  \
      " WHERE store = ?1 AND sha256 = ?2")                                     \
    X(WORKDIR_STORED_DELETE,                                                   \
      "DELETE FROM stored_workdirs WHERE store = ?1 AND sha256 = ?2")          \
    X(WORKDIR_UNUSED,                                                          \
      "SELECT store, sha256 FROM stored_workdirs w WHERE used_at < ?1"         \
      " AND NOT EXISTS (SELECT 1 FROM job_workdirs j JOIN jobs ON"             \
      " jobs.id = j.job_id WHERE j.store = w.store AND j.sha256 = w.sha256"    \
      " AND jobs.state NOT IN ('succeeded', 'failed', 'cancelled',"            \
      " 'budget_exhausted', 'deadline_missed')) ORDER BY used_at LIMIT ?2")    \
    X(WORKDIR_JOB_PUT,                                                         \
      "INSERT INTO job_workdirs (job_id, store, sha256, size, stored_size)"    \
      " VALUES (?1, ?2, ?3, ?4, ?5)")                                          \
    X(WORKDIR_JOB_GET,                                                         \
      "SELECT store, sha256, size, stored_size FROM job_workdirs"              \
      " WHERE job_id = ?1")

/* ---- learned speeds (store_speeds.c) ------------------------------------ */

#define EBB__STORE_SPEED_STATEMENTS(X)                                         \
    X(SPEED_PUT,                                                               \
      "INSERT OR REPLACE INTO speeds (family, gpu_model, provider, host,"      \
      " samples, rates, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")      \
    X(SPEED_ALL,                                                               \
      "SELECT family, gpu_model, provider, host, samples, rates FROM speeds"   \
      " ORDER BY family, gpu_model, provider, host")

/* ---- checkpoint transfer rates (store_rates.c) -------------------------- */

#define EBB__STORE_RATES_STATEMENTS(X)                                         \
    X(RATES_PUT,                                                               \
      "INSERT OR REPLACE INTO transfer_rates (job_id, up_bytes_per_s,"         \
      " down_bytes_per_s, last_write_ms, updated_at)"                          \
      " VALUES (?1, ?2, ?3, ?4, ?5)")                                          \
    X(RATES_GET,                                                               \
      "SELECT up_bytes_per_s, down_bytes_per_s, last_write_ms"                 \
      " FROM transfer_rates WHERE job_id = ?1")

#define EBB__STORE_STATEMENTS(X)                                               \
    EBB__STORE_TXN_STATEMENTS(X)                                               \
    EBB__STORE_CLOCK_STATEMENTS(X)                                             \
    EBB__STORE_PRICE_STATEMENTS(X)                                             \
    EBB__STORE_JOB_STATEMENTS(X)                                               \
    EBB__STORE_LEDGER_STATEMENTS(X)                                            \
    EBB__STORE_OUTBOX_STATEMENTS(X)                                            \
    EBB__STORE_CKPT_STATEMENTS(X)                                              \
    EBB__STORE_WORKDIR_STATEMENTS(X)                                           \
    EBB__STORE_SPEED_STATEMENTS(X)                                             \
    EBB__STORE_RATES_STATEMENTS(X)

#endif
