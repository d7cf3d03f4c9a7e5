/* The store's job side: jobs, their append-only events, instances (the
 * intent rows that make launches idempotent), checkpoints, ledger rows
 * with the sums budgets read, and the job counts. Their SQL is in
 * store_sql.h. */
#include <stdio.h>
#include <string.h>

#include "store/store_internal.h"

static const char *market_name(enum ebb_market m)
{
    return m == EBB_MARKET_SPOT ? "spot" : "on-demand";
}

int ebb__store_job_insert(struct ebb__store *s, const struct ebb__job_row *r)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_JOB_INSERT);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "ttitttttiiiiitiiiiti", r->id, r->name,
                  (int64_t)r->owner_uid, r->team ? r->team : "", r->spec_yaml,
                  r->spec_json, r->state, r->policy ? r->policy : "",
                  (int64_t)r->submitted_at, (int64_t)r->deadline,
                  (int64_t)r->work_ms, (int64_t)r->work_done_ms,
                  (int64_t)r->budget, r->currency, (int64_t)r->spent,
                  (int64_t)r->retries, (int64_t)r->preemptions,
                  (int64_t)r->updated_at, r->workdir ? r->workdir : "",
                  (int64_t)r->priority);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

int ebb__store_job_update(struct ebb__store *s, const char *id,
                          const char *state, ebb_dur_ms work_done_ms,
                          ebb_micros spent, int retries, int preemptions,
                          ebb_time_ms updated_at)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_JOB_UPDATE);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "ttiiiii", id, state, (int64_t)work_done_ms,
                  (int64_t)spent, (int64_t)retries, (int64_t)preemptions,
                  (int64_t)updated_at);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

int ebb__store_job_event(struct ebb__store *s, const char *job_id,
                         ebb_time_ms at, const char *from_state,
                         const char *to_state, const char *reason)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_JOB_EVENT);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "tittt", job_id, (int64_t)at, from_state, to_state,
                  reason);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

int ebb__store_instance_insert(struct ebb__store *s,
                               const struct ebb__instance_row *r)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_INSTANCE_INSERT);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "tttttttiitttt", r->token, r->job_id, r->provider,
                  r->region, r->zone, r->instance_type, market_name(r->market),
                  (int64_t)r->requested_at, (int64_t)r->price, r->currency,
                  r->market_plugin ? r->market_plugin : "",
                  r->product ? r->product : "", r->agent_token_hash);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

int ebb__store_instance_update(struct ebb__store *s, const char *token,
                               const char *state,
                               const char *provider_instance_id,
                               ebb_time_ms started_at, ebb_time_ms ended_at,
                               const char *end_reason)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_INSTANCE_UPDATE);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "tttiit", token, state, provider_instance_id,
                  (int64_t)started_at, (int64_t)ended_at, end_reason);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

int ebb__store_checkpoint_add(struct ebb__store *s, const char *job_id,
                              const char *instance_token, ebb_time_ms at,
                              const char *path, ebb_dur_ms work_done_ms,
                              int complete, int64_t bytes)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CHECKPOINT_ADD);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "ttitiii", job_id, instance_token, (int64_t)at,
                  path ? path : "", (int64_t)work_done_ms, (int64_t)complete,
                  bytes > 0 ? bytes : 0);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

struct stored_walk {
    int (*cb)(void *arg, ebb_time_ms at, int64_t bytes);
    void *arg;
};

static int stored_row(sqlite3_stmt *st, void *arg)
{
    struct stored_walk *w = arg;
    return w->cb(w->arg, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
}

int ebb__store_checkpoints_stored(struct ebb__store *s, const char *job_id,
                                  size_t most,
                                  int (*cb)(void *arg, ebb_time_ms at,
                                            int64_t bytes),
                                  void *arg)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CHECKPOINTS_STORED);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "ti", job_id, (int64_t)most);
    struct stored_walk w = {cb, arg};
    return rc != 0 ? rc : ebb__store_each(s, st, stored_row, &w);
}

struct path_out {
    char *buf;
    size_t len;
};

static int latest_row(sqlite3_stmt *st, void *arg)
{
    struct path_out *p = arg;
    const unsigned char *path = sqlite3_column_text(st, 0);
    snprintf(p->buf, p->len, "%s", path != NULL ? (const char *)path : "");
    return 1;
}

int ebb__store_checkpoint_latest(struct ebb__store *s, const char *job_id, char *path,
                                 size_t len)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_CHECKPOINT_LATEST);
    if (st == NULL)
        return EBB_EDB;
    path[0] = '\0';
    struct path_out p = {path, len};
    int rc = ebb__store_bind(s, st, "t", job_id);
    if (rc == 0)
        rc = ebb__store_each(s, st, latest_row, &p);
    return rc < 0 ? rc : rc == 1 ? 0 : EBB_ENOTFOUND;
}

int ebb__store_ledger_add(struct ebb__store *s, const struct ebb__ledger_row *r)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_LEDGER_ADD);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "tttttiiiitt", r->job_id, r->instance_token,
                  r->team ? r->team : "", r->provider, r->kind,
                  (int64_t)r->start_at, (int64_t)r->end_at, (int64_t)r->rate,
                  (int64_t)r->amount, r->currency, r->note ? r->note : "");
    return rc != 0 ? rc : ebb__store_run(s, st);
}

int ebb__store_ledger_job_total(struct ebb__store *s, const char *job_id,
                                ebb_micros *total)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_LEDGER_JOB_TOTAL);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "t", job_id);
    if (rc != 0)
        return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *total = sqlite3_column_int64(st, 0);
    return ebb__store_finish(s, st, rc);
}

int ebb__store_instance_shadow(struct ebb__store *s, const char *token,
                               const char *shadow_id)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_INSTANCE_SHADOW);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "tt", token, shadow_id);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

int ebb__store_instance_agent_hash(struct ebb__store *s, const char *token,
                                   const char *hash)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_INSTANCE_AGENT_HASH);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "tt", token, hash);
    return rc != 0 ? rc : ebb__store_run(s, st);
}

/* Calls cb per (currency, sum) row of the bound statement `st`. */
static int each_sum(struct ebb__store *s, sqlite3_stmt *st,
                    ebb__store_sum_cb cb, void *arg)
{
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
        stop = cb(arg, (const char *)sqlite3_column_text(st, 0),
                  sqlite3_column_int64(st, 1));
    if (stop)
        rc = SQLITE_DONE;
    return ebb__store_finish(s, st, rc);
}

int ebb__store_ledger_team_sums(struct ebb__store *s, const char *team,
                                ebb_time_ms from, ebb_time_ms to,
                                ebb__store_sum_cb cb, void *arg)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_LEDGER_TEAM_SUMS);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "tii", team, (int64_t)from, (int64_t)to);
    return rc != 0 ? rc : each_sum(s, st, cb, arg);
}

int ebb__store_ledger_owner_sums(struct ebb__store *s, const char *team,
                                 int64_t owner_uid, ebb_time_ms from,
                                 ebb_time_ms to, ebb__store_sum_cb cb, void *arg)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_LEDGER_OWNER_SUMS);
    if (st == NULL)
        return EBB_EDB;
    int rc = ebb__store_bind(s, st, "tiii", team, (int64_t)from, (int64_t)to, owner_uid);
    return rc != 0 ? rc : each_sum(s, st, cb, arg);
}

int ebb__store_job_counts(struct ebb__store *s,
                          void (*cb)(void *arg, const char *state,
                                     int64_t count),
                          void *arg)
{
    if (cb == NULL)
        return ebb__store_invalid(s, "no callback");
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_JOB_COUNTS);
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
