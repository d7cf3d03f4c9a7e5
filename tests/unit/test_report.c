/* Savings reports (src/report*.c): a store filled through the store
 * functions with a small history whose every figure can be checked on
 * paper, then each figure, each grouping, the window's boundaries, the
 * reconciliation with the ledger's own sums, plan advice, and the JSON,
 * CSV and SVG outputs.
 *
 * The history (T = 2026-11-01T00:00Z; catalog: p3.2xlarge 3 USD/h on-demand;
 * spot series us-east-1a: 1 USD/h from T, 0.5 USD/h from T+2h):
 *   job j1 (team ml, submitted T), spot instance j1-a1, T+1h .. T+3h:
 *     overhead T+1h    .. T+1h6m  0.10 USD
 *     compute  T+1h6m  .. T+2h    0.90 USD
 *     compute  T+2h    .. T+3h    0.50 USD
 *     checkpointing T+2h30m .. T+2h35m, a checkpoint on the notice at
 *     T+3h (no work lost), preempted at T+3h
 *   job j2 (team cv, succeeded), on-demand instance j2-a1:
 *     compute  T+1d    .. T+1d1h  3.00 USD
 *   fees: storage 0.20 USD (team ml, T+1d), egress 1 CNY (team cv, T+1d;
 *   CNY = 0.14 USD).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <expat.h>
#include <sqlite3.h>

#include <ebb/units.h>

#include "report/report.h"
#include "report/report_format.h"
#include "store/store.h"
#include "store_peek.h"

#define MIN EBB_MS_PER_MINUTE
#define H EBB_MS_PER_HOUR
#define D EBB_MS_PER_DAY

static ebb_time_ms T;

struct fixture {
    struct ebb__store *store;
    struct ebb__catalog *catalog;
    struct ebb__currency_rate rate;
    struct ebb__report_opts opts;
};

static void job(struct ebb__store *s, const char *id, const char *team)
{
    struct ebb__job_row r = {
        .id = id, .name = id, .team = team, .spec_yaml = "{}", .spec_json = "{}",
        .state = "running", .submitted_at = T, .updated_at = T,
        .budget = -1, .currency = "USD",
    };
    assert_int_equal(ebb__store_job_insert(s, &r), 0);
}

static void instance(struct ebb__store *s, const char *token, const char *job_id,
                     const char *zone, enum ebb_market m, ebb_time_ms start,
                     ebb_time_ms end)
{
    struct ebb__instance_row r = {
        .token = token, .job_id = job_id, .provider = "aws",
        .region = "us-east-1", .zone = zone, .instance_type = "p3.2xlarge",
        .market = m, .requested_at = start, .currency = "USD",
    };
    assert_int_equal(ebb__store_instance_insert(s, &r), 0);
    assert_int_equal(ebb__store_instance_update(s, token, "terminated", "i-1",
                                                start, end, "released"), 0);
}

static void ledger(struct ebb__store *s, const char *job_id, const char *token,
                   const char *team, const char *kind, ebb_time_ms a,
                   ebb_time_ms b, ebb_micros amount, const char *cur,
                   const char *note)
{
    struct ebb__ledger_row r = {
        .job_id = job_id, .instance_token = token, .team = team,
        .provider = "aws", .kind = kind, .currency = cur, .note = note,
        .start_at = a, .end_at = b, .amount = amount,
    };
    assert_int_equal(ebb__store_ledger_add(s, &r), 0);
}

static void price(struct ebb__store *s, ebb_time_ms at, ebb_micros p)
{
    struct ebb_price pr = {
        .region = "us-east-1", .zone = "us-east-1a",
        .instance_type = "p3.2xlarge", .market = EBB_MARKET_SPOT,
        .at = at, .price_per_hour = p, .currency = "USD",
    };
    assert_int_equal(ebb__store_put_price(s, "aws", &pr), 1);
}

static int setup(void **state)
{
    assert_int_equal(ebb_parse_time("2026-11-01", &T), 0);
    struct fixture *f = calloc(1, sizeof(*f));
    char err[256];
    assert_int_equal(ebb__store_open(":memory:", &f->store, err, sizeof(err)), 0);
    struct ebb__store *s = f->store;
    job(s, "j1", "ml");
    job(s, "j2", "cv");
    instance(s, "j1-a1", "j1", "us-east-1a", EBB_MARKET_SPOT, T + H, T + 3 * H);
    instance(s, "j2-a1", "j2", "", EBB_MARKET_ON_DEMAND, T + D, T + D + H);
    price(s, T, 1000000);
    price(s, T + 2 * H, 500000);
    ledger(s, "j1", "j1-a1", "ml", "overhead", T + H, T + H + 6 * MIN, 100000,
           "USD", "p3.2xlarge");
    ledger(s, "j1", "j1-a1", "ml", "compute", T + H + 6 * MIN, T + 2 * H,
           900000, "USD", "p3.2xlarge");
    ledger(s, "j1", "j1-a1", "ml", "compute", T + 2 * H, T + 3 * H, 500000,
           "USD", "p3.2xlarge");
    ledger(s, "j2", "j2-a1", "cv", "compute", T + D, T + D + H, 3000000, "USD",
           "p3.2xlarge");
    ledger(s, NULL, NULL, "ml", "fee", T + D, T + D, 200000, "USD",
           "storage: checkpoints");
    ledger(s, NULL, NULL, "cv", "fee", T + D, T + D, 1000000, "CNY", "egress");
    assert_int_equal(ebb__store_job_event(s, "j1", T, NULL, "waiting", "new"), 0);
    assert_int_equal(ebb__store_job_event(s, "j1", T + H, "waiting", "running",
                                          "launched"), 0);
    assert_int_equal(ebb__store_job_event(s, "j1", T + 150 * MIN, "running",
                                          "checkpointing", "periodic"), 0);
    assert_int_equal(ebb__store_job_event(s, "j1", T + 155 * MIN,
                                          "checkpointing", "running", "saved"), 0);
    assert_int_equal(ebb__store_job_event(s, "j1", T + 3 * H, "running",
                                          "preempted", "reclaimed"), 0);
    assert_int_equal(ebb__store_checkpoint_add(s, "j1", "j1-a1", T + 3 * H,
                                               "/ckpt/j1/1", 2 * H, 1, 0), 0);
    assert_int_equal(ebb__store_job_update(s, "j2", "succeeded", H, 3000000,
                                           0, 0, T + D + H), 0);

    char path[] = "/tmp/ebb-test-catalog-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *c = fdopen(fd, "w");
    fputs("provider,region,instance_type,on_demand_usd_per_hour,gpus,"
          "gpu_model,vcpus,memory_gb,speed,source\n"
          "aws,us-east-1,p3.2xlarge,3.0,1,V100,8,61,1.0,test\n", c);
    assert_int_equal(fclose(c), 0);
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__catalog_load(path, &f->catalog, &d), 0);
    unlink(path);

    f->rate = (struct ebb__currency_rate){.currency = "CNY", .usd_e9 = 140000000};
    f->opts = (struct ebb__report_opts){
        .since = T, .until = T + 2 * D, .catalog = f->catalog,
        .rates = &f->rate, .n_rates = 1,
    };
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ebb__catalog_free(f->catalog);
    ebb__store_close(f->store);
    free(f);
    return 0;
}

static struct ebb__report *build(struct fixture *f)
{
    struct ebb__report *r = NULL;
    struct ebb_diag d = {{0}};
    int rc = ebb__report_build(f->store, &f->opts, &r, &d);
    if (rc != 0)
        fail_msg("report: %s", d.msg);
    return r;
}

static const struct ebb__report_figures *group(const struct ebb__report *r,
                                               const char *key)
{
    for (size_t i = 0; i < r->n_groups; i++)
        if (strcmp(r->groups[i].key, key) == 0)
            return &r->groups[i].f;
    fail_msg("no group %s", key);
    /* Not reached (fail_msg ends the test); gives the compiler a pointer
     * it can see is not NULL. */
    static const struct ebb__report_figures none;
    return &none;
}

static void test_totals(void **state)
{
    struct ebb__report *r = build(*state);
    const struct ebb__report_figures *t = &r->total;
    assert_int_equal(t->rows, 6);
    assert_int_equal(t->spend, 4840000);
    assert_int_equal(t->compute, 4400000);
    assert_int_equal(t->overhead, 100000);
    assert_int_equal(t->fees, 340000);
    assert_int_equal(t->fee_storage, 200000);
    assert_int_equal(t->fee_egress, 140000);
    /* On-demand: 2h of spot at 3 USD/h, plus the on-demand row itself. */
    assert_int_equal(t->on_demand, 9000000);
    assert_int_equal(t->on_demand_basis, 4500000);
    assert_int_equal(ebb__report_saved(t->on_demand, t->on_demand_basis), 4500000);
    assert_true(fabs(ebb__report_saved_pct(t->on_demand, t->on_demand_basis) -
                     50.0) < 1e-9);
    /* Spot at once: j1's 1h54m of compute from T, all at 1 USD/h. */
    assert_int_equal(t->spot_at_once, 1900000);
    assert_int_equal(t->spot_at_once_basis, 1400000);
    assert_int_equal(t->instance_ms, 3 * H);
    assert_int_equal(t->restart_ms, 6 * MIN);
    assert_int_equal(t->checkpoint_ms, 5 * MIN);
    assert_int_equal(t->preemptions, 1);
    assert_int_equal(r->n_groups, 0);
    assert_true(isnan(ebb__report_saved_pct(0, 0)));
    ebb__report_free(r);
}

/* The natives are the ledger's own sums, per currency, over the window. */
static void check_reconciles(struct fixture *f, const struct ebb__report *r)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(
        ebb_test_store_db(f->store),
        "SELECT currency, sum(amount_micros), count(*) FROM ledger"
        " WHERE start_at >= ?1 AND start_at < ?2 GROUP BY currency"
        " ORDER BY currency", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, f->opts.since);
    sqlite3_bind_int64(st, 2, f->opts.until);
    size_t i = 0;
    int64_t rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        assert_true(i < r->n_natives);
        assert_string_equal(r->natives[i].currency,
                            (const char *)sqlite3_column_text(st, 0));
        assert_int_equal(r->natives[i].amount, sqlite3_column_int64(st, 1));
        assert_int_equal(r->natives[i].rows, sqlite3_column_int64(st, 2));
        rows += r->natives[i].rows;
        i++;
    }
    sqlite3_finalize(st);
    assert_int_equal(i, r->n_natives);
    assert_int_equal(rows, r->total.rows);
}

/* Every figure of the groups adds up to the total's. */
static void check_groups_add_up(const struct ebb__report *r)
{
    struct ebb__report_figures s = {0};
    for (size_t i = 0; i < r->n_groups; i++) {
        const struct ebb__report_figures *g = &r->groups[i].f;
        s.rows += g->rows;
        s.spend += g->spend;
        s.compute += g->compute;
        s.overhead += g->overhead;
        s.fees += g->fees;
        s.on_demand += g->on_demand;
        s.on_demand_basis += g->on_demand_basis;
        s.spot_at_once += g->spot_at_once;
        s.instance_ms += g->instance_ms;
        s.restart_ms += g->restart_ms;
        s.lost_ms += g->lost_ms;
        s.checkpoint_ms += g->checkpoint_ms;
        s.preemptions += g->preemptions;
    }
    const struct ebb__report_figures *t = &r->total;
    assert_int_equal(s.rows, t->rows);
    assert_int_equal(s.spend, t->spend);
    assert_int_equal(s.compute, t->compute);
    assert_int_equal(s.overhead, t->overhead);
    assert_int_equal(s.fees, t->fees);
    assert_int_equal(s.on_demand, t->on_demand);
    assert_int_equal(s.on_demand_basis, t->on_demand_basis);
    assert_int_equal(s.spot_at_once, t->spot_at_once);
    assert_int_equal(s.instance_ms, t->instance_ms);
    assert_int_equal(s.restart_ms, t->restart_ms);
    assert_int_equal(s.checkpoint_ms, t->checkpoint_ms);
    assert_int_equal(s.preemptions, t->preemptions);
}

static void test_reconciles(void **state)
{
    struct fixture *f = *state;
    struct ebb__report *r = build(f);
    assert_int_equal(r->n_natives, 2);
    assert_int_equal(r->natives[0].amount, 1000000); /* CNY */
    assert_int_equal(r->natives[1].amount, 3700000 + 1000000); /* USD */
    check_reconciles(f, r);
    ebb__report_free(r);
    /* With only USD rows the total is exactly the ledger's sum. */
    f->opts.until = T + D;
    r = build(f);
    check_reconciles(f, r);
    assert_int_equal(r->n_natives, 1);
    assert_int_equal(r->total.spend, r->natives[0].amount);
    ebb__report_free(r);
}

static void test_by_each(void **state)
{
    struct fixture *f = *state;
    static const char *const names[] = {"job", "team", "provider",
                                        "instance-type", "day"};
    static const size_t n_groups[] = {3, 2, 1, 2, 2};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(ebb__report_by_parse(names[i], &f->opts.by), 0);
        assert_string_equal(ebb__report_by_name(f->opts.by), names[i]);
        struct ebb__report *r = build(f);
        assert_int_equal(r->n_groups, n_groups[i]);
        check_groups_add_up(r);
        check_reconciles(f, r);
        if (f->opts.by == EBB__REPORT_BY_TEAM) {
            assert_int_equal(group(r, "ml")->spend, 1700000);
            assert_int_equal(group(r, "ml")->preemptions, 1);
            assert_int_equal(group(r, "ml")->checkpoint_ms, 5 * MIN);
            assert_int_equal(group(r, "cv")->spend, 3140000);
            assert_int_equal(group(r, "cv")->fee_egress, 140000);
        } else if (f->opts.by == EBB__REPORT_BY_DAY) {
            assert_int_equal(group(r, "2026-11-01")->spend, 1500000);
            assert_int_equal(group(r, "2026-11-02")->spend, 3340000);
        } else if (f->opts.by == EBB__REPORT_BY_JOB) {
            assert_int_equal(group(r, "j1")->spot_at_once, 1900000);
            assert_int_equal(group(r, "j2")->on_demand, 3000000);
            assert_int_equal(group(r, "(no job)")->fees, 340000);
        } else if (f->opts.by == EBB__REPORT_BY_INSTANCE_TYPE) {
            assert_int_equal(group(r, "(none)")->spend, 340000);
            assert_int_equal(group(r, "p3.2xlarge")->preemptions, 1);
        }
        ebb__report_free(r);
    }
    assert_int_equal(ebb__report_by_parse("week", &f->opts.by), EBB_EINVAL);
}

/* [since, until): a row starting at `since` is in, one at `until` is out;
 * the spot-at-once timeline still counts compute before the window. */
static void test_window(void **state)
{
    struct fixture *f = *state;
    f->opts.since = T + 2 * H;
    f->opts.until = T + D;
    struct ebb__report *r = build(f);
    assert_int_equal(r->total.rows, 1);
    assert_int_equal(r->total.spend, 500000);
    assert_int_equal(r->total.spot_at_once, 1000000);
    assert_int_equal(r->total.checkpoint_ms, 5 * MIN);
    assert_int_equal(r->total.preemptions, 1);
    check_reconciles(f, r);
    ebb__report_free(r);

    /* A checkpoint still running at the end counts up to the end. */
    f->opts.since = T;
    f->opts.until = T + 152 * MIN;
    r = build(f);
    assert_int_equal(r->total.checkpoint_ms, 2 * MIN);
    assert_int_equal(r->total.preemptions, 0);
    ebb__report_free(r);

    struct ebb__report *none = NULL;
    struct ebb_diag d = {{0}};
    f->opts.since = f->opts.until;
    assert_int_equal(ebb__report_build(f->store, &f->opts,
                                       &none, &d), EBB_EINVAL);
    assert_non_null(strstr(d.msg, "--since before --until"));
    assert_null(none);
}

/* A provider's observed on-demand price comes before the catalog's list
 * price, and follows its changes. */
static void test_on_demand_observed(void **state)
{
    struct fixture *f = *state;
    struct ebb_price od = {
        .region = "us-east-1", .zone = "", .instance_type = "p3.2xlarge",
        .market = EBB_MARKET_ON_DEMAND, .at = T - D, .price_per_hour = 2400000,
        .currency = "USD",
    };
    assert_int_equal(ebb__store_put_price(f->store, "aws", &od), 1);
    od.at = T + 2 * H;
    od.price_per_hour = 1200000;
    assert_int_equal(ebb__store_put_price(f->store, "aws", &od), 1);
    struct ebb__report *r = build(f);
    /* j1: 1h at 2.4 then 1h at 1.2; j2's on-demand row is its own. */
    assert_int_equal(r->total.on_demand, 2400000 + 1200000 + 3000000);
    assert_int_equal(r->total.on_demand_basis, 4500000);
    ebb__report_free(r);
    /* Without any on-demand price, spot rows have no reference. */
    f->opts.catalog = NULL;
    sqlite3_exec(ebb_test_store_db(f->store),
                 "DELETE FROM prices WHERE market = 'on-demand'", NULL, NULL,
                 NULL);
    r = build(f);
    assert_int_equal(r->total.on_demand, 3000000);
    assert_int_equal(r->total.on_demand_basis, 3000000);
    ebb__report_free(r);
}

/* Time lost to a preemption is not part of the same work on on-demand
 * (#16 point 9). Job j3 (team ml) runs on spot at 0.5 USD/h:
 *   j3-a1 T+4h .. T+6h: overhead 6m, compute to T+6h; its last
 *         checkpoint is at T+5h, then it is preempted: 1h of work lost;
 *   j3-a2 T+7h .. T+8h: overhead 6m (a restart: lost), compute 54m, and
 *         the job succeeds on it.
 * Useful: a1's overhead and 54m of compute, a2's 54m: 1h54m, 5.70 USD at
 * the 3 USD/h list price; lost: 1h6m. The spot before T+2h is 1 USD/h. */
static void test_lost_time(void **state)
{
    struct fixture *f = *state;
    struct ebb__store *s = f->store;
    job(s, "j3", "ml");
    instance(s, "j3-a1", "j3", "us-east-1a", EBB_MARKET_SPOT, T + 4 * H, T + 6 * H);
    instance(s, "j3-a2", "j3", "us-east-1a", EBB_MARKET_SPOT, T + 7 * H, T + 8 * H);
    ledger(s, "j3", "j3-a1", "ml", "overhead", T + 4 * H, T + 4 * H + 6 * MIN,
           50000, "USD", "p3.2xlarge");
    ledger(s, "j3", "j3-a1", "ml", "compute", T + 4 * H + 6 * MIN, T + 6 * H,
           950000, "USD", "p3.2xlarge");
    ledger(s, "j3", "j3-a2", "ml", "overhead", T + 7 * H, T + 7 * H + 6 * MIN,
           50000, "USD", "p3.2xlarge");
    ledger(s, "j3", "j3-a2", "ml", "compute", T + 7 * H + 6 * MIN, T + 8 * H,
           450000, "USD", "p3.2xlarge");
    assert_int_equal(ebb__store_checkpoint_add(s, "j3", "j3-a1", T + 5 * H,
                                               "/ckpt/j3/1", 54 * MIN, 1, 0), 0);
    /* A checkpoint left half-written does not save the work after it. */
    assert_int_equal(ebb__store_checkpoint_add(s, "j3", "j3-a1", T + 5 * H + 30 * MIN,
                                               "/ckpt/j3/.2", 84 * MIN, 0, 0), 0);
    assert_int_equal(ebb__store_job_update(s, "j3", "succeeded", 2 * H, 1500000,
                                           0, 1, T + 8 * H), 0);
    f->opts.by = EBB__REPORT_BY_JOB;
    struct ebb__report *r = build(f);
    const struct ebb__report_figures *j3 = group(r, "j3");
    assert_int_equal(j3->instance_ms, 3 * H);
    assert_int_equal(j3->lost_ms, 66 * MIN);
    assert_int_equal(j3->on_demand, 5700000);
    assert_int_equal(j3->on_demand_basis, 1500000);
    /* Spot at once, too, is the productive time: 54m and 54m laid back to
     * back from T at 1 USD/h, against what those compute rows cost. */
    assert_int_equal(j3->spot_at_once, 1800000);
    assert_int_equal(j3->spot_at_once_basis, 1400000);
    /* j1 checkpointed on its notice and j2 finished: nothing lost. */
    assert_int_equal(group(r, "j1")->lost_ms, 0);
    assert_int_equal(group(r, "j2")->lost_ms, 0);
    assert_int_equal(r->total.lost_ms, 66 * MIN);
    check_groups_add_up(r);
    json_t *j = ebb__report_json(r);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(j, "total"), "lost_ms")), 66 * MIN);
    json_decref(j);
    ebb__report_free(r);
}

static void test_parse_when(void **state)
{
    (void)state;
    assert_int_equal(ebb_parse_time("2026-11-01", &T), 0);
    ebb_time_ms t;
    const char *why = NULL;
    assert_int_equal(ebb__report_parse_when("30d", 40 * D, 1, &t, &why), 0);
    assert_int_equal(t, 10 * D);
    assert_int_equal(ebb__report_parse_when("2026-11-01", 0, 1, &t, &why), 0);
    assert_int_equal(t, T);
    assert_int_equal(ebb__report_parse_when("2026-11-01T06:00:00Z", 0, 0, &t,
                                            &why), 0);
    assert_int_equal(t, T + 6 * H);
    static const char *const bad[] = {"2026-13-01", "yesterday", "30x", "",
                                      "2026-11-31"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        assert_int_equal(ebb__report_parse_when(bad[i], 0, 1, &t, &why),
                         EBB_EINVAL);
        assert_non_null(strstr(why, "e.g. 2026-11-01"));
    }
    /* An end is a point in time, never a duration. */
    assert_int_equal(ebb__report_parse_when("30d", 40 * D, 0, &t, &why),
                     EBB_EINVAL);
}

static void test_currency(void **state)
{
    struct fixture *f = *state;
    /* The report in CNY: each row converted on its own. */
    f->opts.currency = "CNY";
    struct ebb__report *r = build(f);
    assert_string_equal(r->currency, "CNY");
    assert_int_equal(r->total.fee_egress, 1000000);
    assert_int_equal(r->total.compute, 31428571); /* 4.4 / 0.14 */
    ebb__report_free(r);

    f->opts.currency = "EUR";
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__report_build(f->store, &f->opts,
                                       &r, &d), EBB_EINVAL);
    assert_non_null(strstr(d.msg, "currency_rates:"));
}

static void test_advice(void **state)
{
    struct fixture *f = *state;
    struct ebb__plan plans[] = {
        /* 1 USD a day for a p3.2xlarge always on: ml paid 1.5 on day 1. */
        {.name = "daily", .provider = "aws", .instance_type = "p3.2xlarge",
         .price = {1000000, "USD"}, .period = D, .covers = D},
        /* 0.10 USD a day for 1h; ml's other hour (of 2) at its own
         * rate: 0.10 + 1.50 / 2 = 0.85. */
        {.name = "hour", .provider = "aws", .price = {100000, "USD"},
         .period = D, .covers = H},
        /* Dearer than what anyone paid. */
        {.name = "dear", .provider = "aws", .price = {2000000, "USD"},
         .period = D, .covers = D},
        {.name = "other", .provider = "gcp", .price = {1, "USD"}, .period = D,
         .covers = D},
    };
    f->opts.plans = plans;
    f->opts.n_plans = 4;
    f->opts.until = T + D;
    struct ebb__report *r = build(f);
    assert_int_equal(r->n_advice, 2);
    assert_string_equal(r->advice[0].team, "ml");
    assert_string_equal(r->advice[0].plan, "daily");
    assert_int_equal(r->advice[0].periods, 1);
    assert_int_equal(r->advice[0].spend, 1500000);
    assert_int_equal(r->advice[0].with_plan, 1000000);
    assert_int_equal(r->advice[0].used_ms, 2 * H);
    assert_string_equal(r->advice[1].plan, "hour");
    assert_int_equal(r->advice[1].with_plan, 850000);
    ebb__report_free(r);
    /* Over two days ml used nothing on the second: not steady, no advice;
     * cv used nothing on the first. */
    f->opts.until = T + 2 * D;
    r = build(f);
    assert_int_equal(r->n_advice, 0);
    ebb__report_free(r);
    /* Shorter than a period: no advice. */
    f->opts.until = T + 12 * H;
    r = build(f);
    assert_int_equal(r->n_advice, 0);
    ebb__report_free(r);
}

static void test_plans_config(void **state)
{
    (void)state;
    static const char good[] =
        "plans:\n"
        "  reserved-p3:\n"
        "    provider: aws\n"
        "    instance_type: p3.2xlarge\n"
        "    price: 1500 USD\n"
        "  cn-monthly:\n"
        "    provider: alibaba\n"
        "    price: 9000 CNY\n"
        "    period: 7d\n"
        "    covers: 100h\n";
    struct ebb__config *cfg = NULL;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__config_load_buffer("ebb.yaml", good, sizeof(good) - 1,
                                             &cfg, &d), 0);
    assert_int_equal(cfg->n_plans, 2);
    assert_string_equal(cfg->plans[0].name, "reserved-p3");
    assert_int_equal(cfg->plans[0].period, 30 * D);
    assert_int_equal(cfg->plans[0].covers, 30 * D);
    assert_null(cfg->plans[0].region);
    assert_int_equal(cfg->plans[0].price.amount, 1500000000);
    assert_string_equal(cfg->plans[1].price.currency, "CNY");
    assert_int_equal(cfg->plans[1].covers, 100 * H);
    ebb__config_free(cfg);

    static const char *const bad[][2] = {
        {"plans:\n  p:\n    provider: aws\n", "ebb.yaml:2: plans.p: price is required"},
        {"plans:\n  p:\n    price: 1 USD\n", "ebb.yaml:2: plans.p: provider is required"},
        {"plans:\n  p:\n    provider: aws\n    price: 1 USD\n    period: 5m\n",
         "period must be at least 1h"},
        {"plans:\n  p:\n    provider: aws\n    price: 1 USD\n    prise: 2\n",
         "unknown key"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cfg = NULL;
        assert_int_equal(ebb__config_load_buffer("ebb.yaml", bad[i][0],
                                                 strlen(bad[i][0]), &cfg, &d),
                         EBB_ECONFIG);
        if (strstr(d.msg, bad[i][1]) == NULL)
            fail_msg("wanted \"%s\" in \"%s\"", bad[i][1], d.msg);
        assert_null(cfg);
    }
}

static void test_json_csv(void **state)
{
    struct fixture *f = *state;
    f->opts.by = EBB__REPORT_BY_TEAM;
    struct ebb__report *r = build(f);
    json_t *j = ebb__report_json(r);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "by")), "team");
    assert_string_equal(json_string_value(json_object_get(j, "since")),
                        "2026-11-01T00:00:00Z");
    json_t *t = json_object_get(j, "total");
    assert_int_equal(json_integer_value(json_object_get(t, "spend_micros")),
                     4840000);
    assert_int_equal(json_integer_value(json_object_get(t, "savings_micros")),
                     4500000);
    assert_true(fabs(json_real_value(json_object_get(t, "savings_pct")) - 50.0) <
                1e-9);
    assert_int_equal(json_array_size(json_object_get(j, "groups")), 2);
    assert_int_equal(json_array_size(json_object_get(j, "ledger")), 2);
    assert_null(json_object_get(j, "chart"));
    /* A group without an on-demand reference has no percentage. */
    json_t *cv = json_array_get(json_object_get(j, "groups"), 0);
    assert_string_equal(json_string_value(json_object_get(cv, "key")), "cv");
    assert_true(json_is_null(json_object_get(cv, "savings_vs_spot_at_once_pct")));

    const char *cells[EBB__REPORT_TABLE_COLS];
    char buf[512];
    assert_int_equal(ebb__report_table_row(t, "TOTAL", cells, buf, sizeof(buf)), 0);
    assert_string_equal(cells[0], "TOTAL");
    assert_string_equal(cells[1], "4.84");
    assert_string_equal(cells[3], "4.50");
    assert_string_equal(cells[4], "50.0%");
    assert_string_equal(cells[6], "1");
    assert_string_equal(cells[7], "6m");  /* RESTARTS */
    assert_string_equal(cells[8], "0s");  /* LOST */
    /* Durations to the second, as every time in a table: no "400ms". */
    json_object_set_new(t, "checkpoint_ms", json_integer(71400));
    assert_int_equal(ebb__report_table_row(t, "TOTAL", cells, buf, sizeof(buf)), 0);
    assert_string_equal(cells[9], "1m11s");
    json_t *empty = json_object();
    assert_int_equal(ebb__report_table_row(empty, "x", cells, buf, sizeof(buf)),
                     EBB_EINVAL);
    json_decref(empty);

    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_int_equal(ebb__report_write_csv(j, out), 0);
    fclose(out);
    assert_true(strncmp(text, "group,currency,rows,spend,", 26) == 0);
    int lines = 0;
    for (char *p = text; (p = strstr(p, "\r\n")) != NULL; p += 2)
        lines++;
    assert_int_equal(lines, 4); /* header, cv, ml, TOTAL */
    assert_non_null(strstr(text, "\r\ncv,USD,2,3.14,"));
    assert_non_null(strstr(text, "\r\nTOTAL,USD,6,4.84,"));
    free(text);

    /* A group name with a comma or quote is quoted. */
    json_t *g = json_pack("{s:s,s:o,s:[],s:o}", "currency", "USD", "total",
                          json_deep_copy(t), "groups", "x", json_null());
    json_array_append_new(json_object_get(g, "groups"), json_deep_copy(t));
    json_object_set_new(json_array_get(json_object_get(g, "groups"), 0), "key",
                        json_string("a,\"b\""));
    out = open_memstream(&text, &len);
    assert_int_equal(ebb__report_write_csv(g, out), 0);
    fclose(out);
    assert_non_null(strstr(text, "\r\n\"a,\"\"b\"\"\",USD,"));
    free(text);
    json_decref(g);
    json_decref(j);
    ebb__report_free(r);
}

/* The SVG is well-formed XML with the three panels drawn. */
struct svg_count {
    int paths, rects, texts, depth, max_depth;
};

static void XMLCALL svg_start(void *arg, const XML_Char *name,
                              const XML_Char **attrs)
{
    (void)attrs;
    struct svg_count *c = arg;
    c->paths += strcmp(name, "path") == 0;
    c->rects += strcmp(name, "rect") == 0;
    c->texts += strcmp(name, "text") == 0;
    if (++c->depth > c->max_depth)
        c->max_depth = c->depth;
}

static void XMLCALL svg_end(void *arg, const XML_Char *name)
{
    (void)name;
    ((struct svg_count *)arg)->depth--;
}

static void test_svg(void **state)
{
    struct fixture *f = *state;
    f->opts.chart = 1;
    struct ebb__report *r = build(f);
    assert_int_equal(r->n_series, 2);
    assert_string_equal(r->series[0].zone, ""); /* on-demand: most spent */
    assert_int_equal(r->series[1].n_points, 2);
    assert_int_equal(r->n_runs, 2);
    assert_int_equal(r->runs[0].preempted, 1);
    assert_int_equal(r->runs[1].preempted, 0);
    assert_int_equal(r->runs[0].series, 1);
    assert_true(r->n_cumulative >= 2);
    assert_int_equal(r->cumulative[r->n_cumulative - 1].spend, r->total.spend);
    /* The on-demand line ends at the reference plus what has none. */
    assert_int_equal(r->cumulative[r->n_cumulative - 1].on_demand,
                     r->total.on_demand + r->total.spend -
                         r->total.on_demand_basis);
    json_t *j = ebb__report_json(r);
    ebb__report_free(r);

    char *svg = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&svg, &len);
    assert_int_equal(ebb__report_write_svg(j, 0, out), 0);
    fclose(out);
    XML_Parser p = XML_ParserCreate("UTF-8");
    struct svg_count c = {0};
    XML_SetUserData(p, &c);
    XML_SetElementHandler(p, svg_start, svg_end);
    if (XML_Parse(p, svg, (int)len, 1) != XML_STATUS_OK)
        fail_msg("SVG is not well-formed: %s at line %lu",
                 XML_ErrorString(XML_GetErrorCode(p)),
                 (unsigned long)XML_GetCurrentLineNumber(p));
    XML_ParserFree(p);
    assert_int_equal(c.depth, 0);
    assert_true(c.paths >= 5); /* two price lines, savings, two cumulative */
    assert_true(c.rects >= 5);
    assert_true(c.texts >= 10);
    assert_non_null(strstr(svg, "saved 4.50 USD (50.0%)"));
    assert_non_null(strstr(svg, "Nov 02")); /* a tick label */
    assert_non_null(strstr(svg, "#D00000")); /* the preemption mark */
    free(svg);

    /* In a 30-day window (ebb report's default), the day the jobs ran is a
     * sliver of the axis; fitted to the data, the axis spans the runs, in
     * hours (#16, the demo's chart). */
    f->opts.since = T - 30 * D;
    r = build(f);
    json_t *wide = ebb__report_json(r);
    ebb__report_free(r);
    for (int fit = 0; fit <= 1; fit++) {
        out = open_memstream(&svg, &len);
        assert_int_equal(ebb__report_write_svg(wide, fit, out), 0);
        fclose(out);
        if (fit)
            assert_non_null(strstr(svg, "Nov 01 06:00"));
        else
            assert_null(strstr(svg, "Nov 01 06:00"));
        free(svg);
    }
    json_decref(wide);

    /* Without chart data there is nothing to draw. */
    json_object_del(j, "chart");
    out = open_memstream(&svg, &len);
    assert_int_equal(ebb__report_write_svg(j, 0, out), EBB_EINVAL);
    fclose(out);
    free(svg);
    json_decref(j);
}

/* A series observed every 30 s for two days is thinned for the chart, but
 * its spike and its first point (at `since`) stay. */
static void test_chart_thinning(void **state)
{
    struct fixture *f = *state;
    size_t n = 2 * D / (30 * EBB_MS_PER_SECOND);
    struct ebb_price *p = calloc(n, sizeof(*p));
    for (size_t i = 0; i < n; i++)
        p[i] = (struct ebb_price){
            .region = "us-east-1", .zone = "us-east-1a",
            .instance_type = "p3.2xlarge", .market = EBB_MARKET_SPOT,
            .at = T + 1 + (ebb_time_ms)i * 30 * EBB_MS_PER_SECOND,
            .price_per_hour = i == 4321 ? 9000000 : 1000000 + (ebb_micros)(i % 7),
            .currency = "USD",
        };
    size_t added = 0;
    assert_int_equal(ebb__store_put_prices(f->store, "aws", p, n, &added), 0);
    assert_int_equal(added, n);
    free(p);
    f->opts.chart = 1;
    struct ebb__report *r = build(f);
    const struct ebb__report_series *s = &r->series[1];
    assert_string_equal(s->zone, "us-east-1a");
    assert_true(s->n_points <= 3000);
    assert_true(s->n_points >= 1000);
    assert_int_equal(s->points[0].at, T);
    ebb_micros top = 0;
    for (size_t i = 0; i < s->n_points; i++) {
        top = s->points[i].value > top ? s->points[i].value : top;
        if (i > 0)
            assert_true(s->points[i].at > s->points[i - 1].at);
    }
    assert_int_equal(top, 9000000);
    ebb__report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_totals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconciles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_by_each, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_on_demand_observed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lost_time, setup, teardown),
        cmocka_unit_test(test_parse_when),
        cmocka_unit_test_setup_teardown(test_currency, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice, setup, teardown),
        cmocka_unit_test(test_plans_config),
        cmocka_unit_test_setup_teardown(test_json_csv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_svg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chart_thinning, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
