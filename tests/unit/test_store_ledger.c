/* The store's typed reads for reports and metrics (store_ledger.h and
 * ebb__store_price_steps()): each row as documented (joins, running sums,
 * missing values), the walks' order and windows, filters, a callback that
 * stops a walk, and a statement that is reused after it was stopped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "store/store.h"
#include "store/store_ledger.h"
#include "store/store_read.h"

#define MIN EBB_MS_PER_MINUTE
#define H EBB_MS_PER_HOUR

/* 2026-11-01T00:00:00Z */
#define T ((ebb_time_ms)1793491200000)

static void job(struct ebb__store *s, const char *id, const char *team,
                ebb_time_ms submitted)
{
    struct ebb__job_row r = {
        .id = id, .name = id, .team = team, .spec_yaml = "{}",
        .spec_json = "{}", .state = "running", .submitted_at = submitted,
        .updated_at = submitted, .budget = -1, .currency = "USD",
    };
    assert_int_equal(ebb__store_job_insert(s, &r), 0);
}

static void instance(struct ebb__store *s, const char *token,
                     const char *job_id, const char *type, ebb_time_ms start)
{
    struct ebb__instance_row r = {
        .token = token, .job_id = job_id, .provider = "aws",
        .region = "us-east-1", .zone = "us-east-1a", .instance_type = type,
        .market = EBB_MARKET_SPOT, .requested_at = start, .currency = "USD",
    };
    assert_int_equal(ebb__store_instance_insert(s, &r), 0);
    assert_int_equal(ebb__store_instance_update(s, token, "running", "i-1",
                                                start, 0, NULL), 0);
}

static void ledger(struct ebb__store *s, const char *job_id,
                   const char *token, const char *kind, ebb_time_ms a,
                   ebb_time_ms b, ebb_micros amount, const char *cur)
{
    struct ebb__ledger_row r = {
        .job_id = job_id, .instance_token = token, .team = "ml",
        .provider = "aws", .kind = kind, .currency = cur, .note = "n",
        .start_at = a, .end_at = b, .amount = amount,
    };
    assert_int_equal(ebb__store_ledger_add(s, &r), 0);
}

/* j1 (submitted at T - 3h) ran an hour before the window [T, T + 10h) and
 * then, on instance a1: 6 min of restart, an hour of compute, an hour
 * more; a fee row without a job or instance; j1 checkpointed at T + 30m
 * (running again at T + 35m) and was preempted at T + 3h (its last
 * event). */
static int setup(void **state)
{
    struct ebb__store *s = NULL;
    char err[256];
    assert_int_equal(ebb__store_open(":memory:", &s, err, sizeof(err)), 0);
    job(s, "j1", "ml", T - 3 * H);
    instance(s, "a0", "j1", "p3.2xlarge", T - 2 * H);
    instance(s, "a1", "j1", "p3.2xlarge", T);
    ledger(s, "j1", "a0", "compute", T - 2 * H, T - H, 1000000, "USD");
    ledger(s, "j1", "a1", "overhead", T, T + 6 * MIN, 100000, "USD");
    ledger(s, "j1", "a1", "compute", T + 6 * MIN, T + H + 6 * MIN, 900000,
           "USD");
    ledger(s, "j1", "a1", "compute", T + H + 6 * MIN, T + 2 * H + 6 * MIN,
           800000, "USD");
    ledger(s, NULL, NULL, "fee", T + 4 * H, T + 4 * H, 200000, "CNY");
    assert_int_equal(ebb__store_job_event(s, "j1", T - 3 * H, NULL, "waiting",
                                          "new"), 0);
    assert_int_equal(ebb__store_job_event(s, "j1", T + 30 * MIN, "running",
                                          "checkpointing", "periodic"), 0);
    assert_int_equal(ebb__store_job_event(s, "j1", T + 35 * MIN,
                                          "checkpointing", "running", "done"), 0);
    assert_int_equal(ebb__store_job_event(s, "j1", T + 3 * H, "running",
                                          "preempted", "notice"), 0);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    ebb__store_close(*state);
    return 0;
}

/* Rows flattened to text, one line each, for comparing whole walks. */
struct lines {
    char text[2048];
    size_t used;
    int stop_after; /* stop the walk with 7 after this many rows (0: never) */
    int rows;
};

static int add_line(struct lines *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->text + l->used, sizeof(l->text) - l->used, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof(l->text) - l->used);
    l->used += (size_t)n;
    l->rows++;
    return l->stop_after > 0 && l->rows == l->stop_after ? 7 : 0;
}

#define REL(t) ((long long)(((t) - T) / MIN))

static int window_line(void *arg, const struct ebb__ledger_window_row *r)
{
    return add_line(arg, "%s|%s|%s|%s|%lld|%lld|%lld|%s|%s|%s|%s|%s|%lld|%lld\n",
                    r->job_id, r->team, r->provider, r->kind,
                    REL(r->start_at), REL(r->end_at), (long long)r->amount,
                    r->currency, r->region, r->zone, r->instance_type,
                    r->market, REL(r->submitted_at),
                    (long long)(r->prior_compute / MIN));
}

static void ledger_window_rows(void **state)
{
    struct lines l = {.used = 0};
    assert_int_equal(ebb__store_ledger_window(*state, T, T + 10 * H,
                                              window_line, &l), 0);
    /* By start; prior compute counts compute rows only, the hour before
     * the window included; the fee has no job, so it starts its own
     * timeline, and no instance. */
    assert_string_equal(l.text,
        "j1|ml|aws|overhead|0|6|100000|USD|us-east-1|us-east-1a|p3.2xlarge|spot|-180|60\n"
        "j1|ml|aws|compute|6|66|900000|USD|us-east-1|us-east-1a|p3.2xlarge|spot|-180|60\n"
        "j1|ml|aws|compute|66|126|800000|USD|us-east-1|us-east-1a|p3.2xlarge|spot|-180|120\n"
        "|ml|aws|fee|240|240|200000|CNY|||||240|0\n");
    /* The window is half open, by start. */
    l = (struct lines){.used = 0};
    assert_int_equal(ebb__store_ledger_window(*state, T + 6 * MIN, T + 66 * MIN,
                                              window_line, &l), 0);
    assert_string_equal(l.text,
        "j1|ml|aws|compute|6|66|900000|USD|us-east-1|us-east-1a|p3.2xlarge|spot|-180|60\n");
}

static int event_line(void *arg, const struct ebb__window_event_row *r)
{
    return add_line(arg, "%s|%s|%s|%s|%s|%s|%lld|%d|%lld\n", r->job_id,
                    r->team, r->to_state, r->provider, r->instance_type,
                    r->instance_token, REL(r->at), r->has_next,
                    r->has_next ? REL(r->next_at) : -1LL);
}

static void window_events_rows(void **state)
{
    struct lines l = {.used = 0};
    assert_int_equal(ebb__store_window_events(*state, T, T + 10 * H,
                                              event_line, &l), 0);
    assert_string_equal(l.text,
        "j1|ml|checkpointing|aws|p3.2xlarge|a1|30|1|35\n"
        "j1|ml|preempted|aws|p3.2xlarge|a1|180|0|-1\n");
}

static int run_line(void *arg, const struct ebb__instance_run_row *r)
{
    return add_line(arg, "%s|%s|%s|%s|%s|%s|%s|%lld|%lld\n", r->instance_token,
                    r->job_id, r->provider, r->region, r->zone,
                    r->instance_type, r->market, REL(r->start_at),
                    REL(r->end_at));
}

static void instance_runs_rows(void **state)
{
    struct lines l = {.used = 0};
    assert_int_equal(ebb__store_instance_runs(*state, T - 10 * H, T + 10 * H,
                                              run_line, &l), 0);
    assert_string_equal(l.text,
        "a0|j1|aws|us-east-1|us-east-1a|p3.2xlarge|spot|-120|-60\n"
        "a1|j1|aws|us-east-1|us-east-1a|p3.2xlarge|spot|0|126\n");
}

static int usage_line(void *arg, const struct ebb__usage_row *r)
{
    return add_line(arg, "%s|%lld|%lld|%lld|%s\n", r->team, REL(r->start_at),
                    REL(r->end_at), (long long)r->amount, r->currency);
}

static void plan_usage_filters(void **state)
{
    const char *all =
        "ml|0|6|100000|USD\n"
        "ml|6|66|900000|USD\n"
        "ml|66|126|800000|USD\n";
    struct ebb__usage_filter f = {.provider = "aws"};
    struct lines l = {.used = 0};
    assert_int_equal(ebb__store_plan_usage(*state, &f, T, T + 10 * H,
                                           usage_line, &l), 0);
    assert_string_equal(l.text, all);
    f = (struct ebb__usage_filter){"aws", "us-east-1", "p3.2xlarge"};
    l = (struct lines){.used = 0};
    assert_int_equal(ebb__store_plan_usage(*state, &f, T, T + 10 * H,
                                           usage_line, &l), 0);
    assert_string_equal(l.text, all);
    f = (struct ebb__usage_filter){"aws", NULL, "g5.xlarge"};
    l = (struct lines){.used = 0};
    assert_int_equal(ebb__store_plan_usage(*state, &f, T, T + 10 * H,
                                           usage_line, &l), 0);
    assert_string_equal(l.text, "");
    f = (struct ebb__usage_filter){"alibaba", NULL, NULL};
    assert_int_equal(ebb__store_plan_usage(*state, &f, T, T + 10 * H,
                                           usage_line, &l), 0);
    assert_int_equal(l.rows, 0);
}

static int sum_line(void *arg, const char *currency, ebb_micros total)
{
    return add_line(arg, "%s=%lld\n", currency, (long long)total);
}

static void ledger_sums_per_currency(void **state)
{
    struct lines l = {.used = 0};
    assert_int_equal(ebb__store_ledger_sums(*state, sum_line, &l), 0);
    assert_string_equal(l.text, "CNY=200000\nUSD=2800000\n");
}

static int step_line(void *arg, const struct ebb__price_step *p)
{
    return add_line(arg, "%lld|%lld|%s\n", REL(p->at), (long long)p->price,
                    p->currency);
}

static void put(struct ebb__store *s, const char *product, ebb_time_ms at,
                ebb_micros p)
{
    struct ebb_price pr = {
        .region = "us-east-1", .zone = "us-east-1a",
        .instance_type = "p3.2xlarge", .product = product,
        .market = EBB_MARKET_SPOT, .at = at, .price_per_hour = p,
        .currency = "USD",
    };
    assert_int_equal(ebb__store_put_price(s, "aws", &pr), 1);
}

static void price_steps_lowest_product_before_until(void **state)
{
    struct ebb__store *s = *state;
    put(s, "Linux", T, 900000);
    put(s, "Windows", T, 1500000);
    put(s, "Windows", T + H, 400000);
    put(s, "Linux", T + H, 800000);
    put(s, "Linux", T + 2 * H, 700000);
    struct ebb__price_series series = {"aws", "us-east-1", "us-east-1a",
                                       "p3.2xlarge", EBB_MARKET_SPOT};
    struct lines l = {.used = 0};
    assert_int_equal(ebb__store_price_steps(s, &series, T + 2 * H, step_line,
                                            &l), 0);
    assert_string_equal(l.text, "0|900000|USD\n60|400000|USD\n");
    /* Another market of the same type has no steps. */
    series.market = EBB_MARKET_ON_DEMAND;
    l = (struct lines){.used = 0};
    assert_int_equal(ebb__store_price_steps(s, &series, T + 3 * H, step_line,
                                            &l), 0);
    assert_int_equal(l.rows, 0);
}

static void a_callback_stops_the_walk_and_the_next_walk_starts_over(void **state)
{
    struct lines l = {.used = 0, .stop_after = 2};
    assert_int_equal(ebb__store_ledger_window(*state, T, T + 10 * H,
                                              window_line, &l), 7);
    assert_int_equal(l.rows, 2);
    l = (struct lines){.used = 0};
    assert_int_equal(ebb__store_ledger_window(*state, T, T + 10 * H,
                                              window_line, &l), 0);
    assert_int_equal(l.rows, 4);
    l = (struct lines){.used = 0, .stop_after = 1};
    assert_int_equal(ebb__store_ledger_sums(*state, sum_line, &l), 7);
    assert_string_equal(l.text, "CNY=200000\n");
}

static void no_callback_is_refused(void **state)
{
    struct ebb__store *s = *state;
    struct ebb__usage_filter f = {.provider = "aws"};
    struct ebb__price_series series = {"aws", "", "", "p3.2xlarge",
                                       EBB_MARKET_SPOT};
    assert_int_equal(ebb__store_ledger_window(s, T, T + H, NULL, NULL), EBB_EINVAL);
    assert_int_equal(ebb__store_window_events(s, T, T + H, NULL, NULL), EBB_EINVAL);
    assert_int_equal(ebb__store_instance_runs(s, T, T + H, NULL, NULL), EBB_EINVAL);
    assert_int_equal(ebb__store_plan_usage(s, &f, T, T + H, NULL, NULL), EBB_EINVAL);
    assert_int_equal(ebb__store_ledger_sums(s, NULL, NULL), EBB_EINVAL);
    assert_int_equal(ebb__store_price_steps(s, &series, T, NULL, NULL), EBB_EINVAL);
    assert_string_equal(ebb__store_errmsg(s), "no series or no callback");
}

/* A job's answer holds its newest EBB__STORE_JOB_ROWS events, instances
 * and checkpoints, oldest first, and says how many older ones it left
 * out: a job relaunched for hours once made a 21.7 MB answer, over the
 * API's 16 MiB (#16 point 11). Its spend still counts every row. */
static void a_jobs_answer_holds_its_newest_rows(void **state)
{
    struct ebb__store *s = *state;
    const size_t n_ev = EBB__STORE_JOB_ROWS + 500, n_in = EBB__STORE_JOB_ROWS + 200,
                 n_ck = EBB__STORE_JOB_ROWS + 100;
    job(s, "big", "ml", T);
    assert_int_equal(ebb__store_begin(s), 0);
    char name[64];
    for (size_t i = 0; i < n_ev; i++) {
        snprintf(name, sizeof(name), "event %zu", i);
        assert_int_equal(ebb__store_job_event(s, "big", T + (ebb_time_ms)i, "waiting",
                                              "launching", name), 0);
    }
    for (size_t i = 0; i < n_in; i++) {
        snprintf(name, sizeof(name), "t%05zu", i);
        instance(s, name, "big", "p3.2xlarge", T + (ebb_time_ms)i * MIN);
        ledger(s, "big", name, "compute", T, T + MIN, 1000, "USD");
    }
    for (size_t i = 0; i < n_ck; i++) {
        snprintf(name, sizeof(name), "/ckpt/%zu", i);
        assert_int_equal(ebb__store_checkpoint_add(s, "big", "t00000", T + (ebb_time_ms)i,
                                                   name, (ebb_dur_ms)i, 1, 0), 0);
    }
    assert_int_equal(ebb__store_commit(s), 0);
    json_t *j;
    assert_int_equal(ebb__store_job_json(s, "big", &j), 0);
    json_t *ev = json_object_get(j, "events"), *in = json_object_get(j, "instances"),
           *ck = json_object_get(j, "checkpoints"), *om = json_object_get(j, "omitted");
    assert_int_equal(json_array_size(ev), EBB__STORE_JOB_ROWS);
    assert_int_equal(json_array_size(in), EBB__STORE_JOB_ROWS);
    assert_int_equal(json_array_size(ck), EBB__STORE_JOB_ROWS);
    assert_int_equal(json_integer_value(json_object_get(om, "events")), 500);
    assert_int_equal(json_integer_value(json_object_get(om, "instances")), 200);
    assert_int_equal(json_integer_value(json_object_get(om, "checkpoints")), 100);
    /* The newest ones, in time order. */
    assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 0), "reason")),
                        "event 500");
    snprintf(name, sizeof(name), "event %zu", n_ev - 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(ev, EBB__STORE_JOB_ROWS - 1), "reason")), name);
    assert_string_equal(json_string_value(json_object_get(json_array_get(in, 0), "token")),
                        "t00200");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ck, 0), "path")),
                        "/ckpt/100");
    json_t *spent = json_array_get(json_object_get(j, "spent_by_kind"), 0);
    assert_int_equal(json_integer_value(json_object_get(spent, "amount_micros")),
                     (json_int_t)n_in * 1000);
    json_decref(j);

    /* A job with few rows of each: all of them, nothing omitted. */
    assert_int_equal(ebb__store_job_json(s, "j1", &j), 0);
    om = json_object_get(j, "omitted");
    assert_int_equal(json_integer_value(json_object_get(om, "instances")), 0);
    assert_int_equal(json_array_size(json_object_get(j, "instances")), 2);
    json_decref(j);
}

int main(void)
{
#define TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        TEST(ledger_window_rows),
        TEST(window_events_rows),
        TEST(instance_runs_rows),
        TEST(plan_usage_filters),
        TEST(ledger_sums_per_currency),
        TEST(price_steps_lowest_product_before_until),
        TEST(a_callback_stops_the_walk_and_the_next_walk_starts_over),
        TEST(no_callback_is_refused),
        TEST(a_jobs_answer_holds_its_newest_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
