/* Unit tests of the clock's position in the store and of the billing check
 * (src/store/store_clock.c, migration 7; #16 point 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_clock.h"
#include "store_peek.h"

#define T2020 1578268800000LL /* 2020-01-06T00:00:00Z */
#define MINUTE 60000LL

static struct ebb__store *open_memory(void)
{
    struct ebb__store *s = NULL;
    char err[256];
    if (ebb__store_open(":memory:", &s, err, sizeof(err)) != 0)
        fail_msg("open: %s", err);
    return s;
}

static void exec_ok(struct ebb__store *s, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(ebb_test_store_db(s), sql, NULL, NULL, &msg) != SQLITE_OK) {
        char copy[512];
        snprintf(copy, sizeof(copy), "%s", msg != NULL ? msg : "?");
        sqlite3_free(msg);
        fail_msg("%s: %s", sql, copy);
    }
}

static const char one_job[] =
    "INSERT INTO jobs (id, owner_uid, spec_yaml, spec_json, state,"
    " submitted_at, updated_at) VALUES ('j-1', 0, 'x', '{}', 'running', 1, 1);";

static void clock_is_kept_and_never_goes_back(void **state)
{
    (void)state;
    struct ebb__store *s = open_memory();
    struct ebb__clock_history h = {.latest = -1};
    assert_int_equal(ebb__store_clock_get(s, &h), 0);
    assert_int_equal(h.latest, 0);
    assert_int_equal(h.start_known, 0);

    assert_int_equal(ebb__store_clock_set(s, T2020, 720, T2020 + 98 * MINUTE), 0);
    assert_int_equal(ebb__store_clock_get(s, &h), 0);
    assert_int_equal(h.start_known, 1);
    assert_int_equal(h.start, T2020);
    assert_true(h.speed == 720);
    assert_int_equal(h.latest, T2020 + 98 * MINUTE);

    /* A later start with an earlier time changes the clock, not the time. */
    assert_int_equal(ebb__store_clock_set(s, 0, 1, T2020), 0);
    assert_int_equal(ebb__store_clock_get(s, &h), 0);
    assert_int_equal(h.start, 0);
    assert_true(h.speed == 1);
    assert_int_equal(h.latest, T2020 + 98 * MINUTE);
    assert_int_equal(ebb__store_clock_set(s, 0, 0, T2020), EBB_EINVAL);
    ebb__store_close(s);
}

static ebb_time_ms fake_now(void *arg)
{
    return *(ebb_time_ms *)arg;
}

/* Each commit, grouped or not, carries the clock's time with it. */
static void every_commit_records_the_time(void **state)
{
    (void)state;
    struct ebb__store *s = open_memory();
    exec_ok(s, one_job);
    assert_int_equal(ebb__store_clock_set(s, T2020, 720, T2020), 0);
    ebb_time_ms now = T2020 + 5 * MINUTE;
    ebb__store_clock_follow(s, fake_now, &now);
    struct ebb__clock_history h;

    /* Plain transactions. */
    assert_int_equal(ebb__store_begin(s), 0);
    assert_int_equal(ebb__store_job_event(s, "j-1", now, "waiting", "running", "x"), 0);
    assert_int_equal(ebb__store_commit(s), 0);
    assert_int_equal(ebb__store_clock_get(s, &h), 0);
    assert_int_equal(h.latest, T2020 + 5 * MINUTE);

    /* Group commit: savepoints inside, the time with the group's commit. */
    ebb__store_group_commit(s, 1);
    now = T2020 + 9 * MINUTE;
    assert_int_equal(ebb__store_begin(s), 0);
    assert_int_equal(ebb__store_job_event(s, "j-1", now, "running", "waiting", "y"), 0);
    assert_int_equal(ebb__store_commit(s), 0);
    assert_int_equal(ebb__store_flush(s), 0);
    assert_int_equal(ebb__store_clock_get(s, &h), 0);
    assert_int_equal(h.latest, T2020 + 9 * MINUTE);

    /* A clock that reads earlier does not lower it. */
    now = T2020;
    assert_int_equal(ebb__store_job_event(s, "j-1", now, "waiting", "running", "z"), 0);
    assert_int_equal(ebb__store_flush(s), 0);
    assert_int_equal(ebb__store_clock_get(s, &h), 0);
    assert_int_equal(h.latest, T2020 + 9 * MINUTE);
    ebb__store_clock_follow(s, NULL, NULL);
    ebb__store_close(s);
}

/* A file from before version 7 gets the latest time its rows carry, with
 * the clock it ran on unknown; an empty one gets nothing. */
static void migration_7_finds_the_latest_time(void **state)
{
    (void)state;
    char dir[] = "/tmp/ebb-store-clock-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[PATH_MAX], empty[PATH_MAX];
    snprintf(path, sizeof(path), "%s/ebb.db", dir);
    snprintf(empty, sizeof(empty), "%s/empty.db", dir);
    struct ebb__store *s = NULL;
    char err[256];
    assert_int_equal(ebb__store_open_at_version(path, 6, &s, err, sizeof(err)), 0);
    exec_ok(s, one_job);
    exec_ok(s, "INSERT INTO job_events (job_id, at, to_state, reason)"
               " VALUES ('j-1', 1578270000000, 'running', 'x');"
               "INSERT INTO instances (token, job_id, provider, instance_type,"
               " market, state, requested_at, started_at, ended_at) VALUES"
               " ('j-1-a1', 'j-1', 'sim', 't', 'spot', 'terminated',"
               "  1578269000000, 1578274680000, 1578271725000);"
               "INSERT INTO ledger (job_id, instance_token, provider, kind,"
               " start_at, end_at, amount_micros, currency) VALUES"
               " ('j-1', 'j-1-a1', 'sim', 'compute', 1578269000000,"
               "  1578273000000, 5, 'USD')");
    ebb__store_close(s);
    assert_int_equal(ebb__store_open_at_version(empty, 6, &s, err, sizeof(err)), 0);
    ebb__store_close(s);

    struct ebb__clock_history h;
    assert_int_equal(ebb__store_open(path, &s, err, sizeof(err)), 0);
    assert_int_equal(ebb__store_clock_get(s, &h), 0);
    assert_int_equal(h.latest, 1578274680000); /* the instance's start */
    assert_int_equal(h.start_known, 0);
    ebb__store_close(s);
    assert_int_equal(ebb__store_open(empty, &s, err, sizeof(err)), 0);
    assert_int_equal(ebb__store_clock_get(s, &h), 0);
    assert_int_equal(h.latest, 0);
    ebb__store_close(s);
    unlink(path);
    unlink(empty);
    char side[PATH_MAX + 8];
    for (int i = 0; i < 2; i++) {
        snprintf(side, sizeof(side), "%s%s", i ? empty : path, "-wal");
        unlink(side);
        snprintf(side, sizeof(side), "%s%s", i ? empty : path, "-shm");
        unlink(side);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* ---- the billing check ---- */

/* An instance (state, requested, started, ended; -1: NULL) and its ledger
 * rows (start, end pairs; 0 ends the list). */
struct inst_case {
    const char *name;
    const char *state;
    int64_t requested, started, ended;
    int64_t rows[4][2];
    const char *complaint; /* NULL: nothing wrong */
};

static void add_case(struct ebb__store *s, const struct inst_case *c)
{
    char sql[1024], v[3][24];
    const int64_t t[3] = {c->requested, c->started, c->ended};
    for (int i = 0; i < 3; i++) {
        if (t[i] < 0)
            snprintf(v[i], sizeof(v[i]), "NULL");
        else
            snprintf(v[i], sizeof(v[i]), "%lld", (long long)(T2020 + t[i]));
    }
    snprintf(sql, sizeof(sql),
             "INSERT INTO instances (token, job_id, provider, instance_type,"
             " market, state, requested_at, started_at, ended_at) VALUES"
             " ('%s', 'j-1', 'sim', 't', 'spot', '%s', %s, %s, %s)",
             c->name, c->state, v[0], v[1], v[2]);
    exec_ok(s, sql);
    for (int i = 0; i < 4 && c->rows[i][1] != 0; i++) {
        snprintf(sql, sizeof(sql),
                 "INSERT INTO ledger (job_id, instance_token, provider, kind,"
                 " start_at, end_at, amount_micros, currency) VALUES"
                 " ('j-1', '%s', 'sim', '%s', %lld, %lld, 1, 'USD')",
                 c->name, i == 0 ? "overhead" : "compute",
                 (long long)(T2020 + c->rows[i][0]),
                 (long long)(T2020 + c->rows[i][1]));
        exec_ok(s, sql);
    }
}

static const struct inst_case good[] = {
    /* billed per second: the last row ends up to a second after the end */
    {"ok-ran", "terminated", 0, 1000, 5000, {{1000, 3000}, {3000, 5400}}, NULL},
    {"ok-one-row", "terminated", 0, 1000, 9000, {{1000, 9000}}, NULL},
    {"ok-never-launched", "failed", 0, -1, 2000, {{0, 0}}, NULL},
    {"ok-running", "running", 0, 1000, -1, {{0, 0}}, NULL},
    {"ok-intent", "intent", 0, -1, -1, {{0, 0}}, NULL},
};

static const struct inst_case bad[] = {
    /* the row: adopted after a restart that rewound the clock */
    {"rewound", "terminated", 0, 98 * MINUTE, 48 * MINUTE + 45000, {{0, 0}},
     "instance rewound ends (2020-01-06T00:48:45Z) before it was requested "
     "(2020-01-06T00:00:00Z) or started (2020-01-06T01:38:00Z)"},
    {"unbilled", "terminated", 0, 1000, 5000, {{0, 0}},
     "instance unbilled ran from 2020-01-06T00:00:01Z to 2020-01-06T00:00:05Z "
     "and has no ledger row"},
    {"twice", "terminated", 0, 1000, 5000, {{1000, 5000}, {1000, 5000}},
     "its 2 ledger rows bill 8000 ms from 2020-01-06T00:00:01Z to "
     "2020-01-06T00:00:05Z"},
    {"gap", "terminated", 0, 1000, 5000, {{1000, 2000}, {3000, 5000}},
     "its 2 ledger rows bill 3000 ms"},
    {"short", "terminated", 0, 1000, 5000, {{1000, 4000}}, "bill 3000 ms"},
    {"late-start", "terminated", 0, 1000, 5000, {{2000, 5000}}, "bill 3000 ms"},
    {"past-end", "terminated", 0, 1000, 5000, {{1000, 6000}}, "bill 5000 ms"},
    {"billed-early", "running", 0, 1000, -1, {{1000, 5000}},
     "instance billed-early is still running and already has 1 ledger rows"},
    {"no-end", "terminated", 0, 1000, -1, {{0, 0}},
     "instance no-end is terminated but has no end time"},
    {"never-ran", "failed", 0, -1, 2000, {{0, 2000}},
     "instance never-ran never ran (started never, ended "
     "2020-01-06T00:00:02Z) but has 1 ledger rows"},
};

static void a_good_store_passes(void **state)
{
    (void)state;
    struct ebb__store *s = open_memory();
    exec_ok(s, one_job);
    char err[1024] = "x";
    assert_int_equal(ebb__store_check_billing(s, err, sizeof(err)), 0);
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        add_case(s, &good[i]);
    int rc = ebb__store_check_billing(s, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s", err);
    assert_string_equal(err, "");
    ebb__store_close(s);
}

static void each_broken_instance_is_named(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ebb__store *s = open_memory();
        exec_ok(s, one_job);
        for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++)
            add_case(s, &good[k]);
        add_case(s, &bad[i]);
        char err[1024] = "";
        assert_int_equal(ebb__store_check_billing(s, err, sizeof(err)), EBB_EDB);
        if (strstr(err, bad[i].complaint) == NULL ||
            strncmp(err, "1 instance not billed exactly once: ", 36) != 0)
            fail_msg("%s: got \"%s\"", bad[i].name, err);
        assert_string_equal(ebb__store_errmsg(s), err);
        ebb__store_close(s);
    }
    /* All of them at once: counted, the first three in words. */
    struct ebb__store *s = open_memory();
    exec_ok(s, one_job);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        add_case(s, &bad[i]);
    char err[1024] = "";
    assert_int_equal(ebb__store_check_billing(s, err, sizeof(err)), EBB_EDB);
    assert_non_null(strstr(err, "10 instances not billed exactly once: "));
    assert_non_null(strstr(err, "; ..."));
    ebb__store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clock_is_kept_and_never_goes_back),
        cmocka_unit_test(every_commit_records_the_time),
        cmocka_unit_test(migration_7_finds_the_latest_time),
        cmocka_unit_test(a_good_store_passes),
        cmocka_unit_test(each_broken_instance_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
