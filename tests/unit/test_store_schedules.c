/* Unit tests of the store's schedule side (src/store/store_schedules.c and
 * migration 3): schedules added, listed, found, removed; one run per fire
 * time, enforced by the store; a run, its link and last_fire_at committed
 * or rolled back together; the JSON reads; a version 2 file migrated.
 * Each test has its own database in its own temporary directory. */
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
#include "store/store_schedules.h"
#include "store_peek.h"

#define FIRE 1577858400000 /* 2020-01-01T06:00:00Z */
#define HALF_HOUR 1800000

struct fixture {
    char dir[PATH_MAX - 256];
    char db[PATH_MAX];
    struct ebb__store *s;
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    if (fx == NULL)
        return -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(fx->dir, sizeof(fx->dir), "%s/ebb-sched-XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    if (mkdtemp(fx->dir) == NULL) {
        free(fx);
        return -1;
    }
    snprintf(fx->db, sizeof(fx->db), "%s/ebb.db", fx->dir);
    char err[512];
    if (ebb__store_open(fx->db, &fx->s, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    ebb__store_close(fx->s);
    char path[PATH_MAX + 16];
    for (const char *const *f = (const char *const[]){"", "-wal", "-shm", NULL};
         *f != NULL; f++) {
        snprintf(path, sizeof(path), "%s%s", fx->db, *f);
        unlink(path);
    }
    int r = rmdir(fx->dir);
    free(fx);
    return r;
}

/* ---- helpers ----------------------------------------------------------- */

static struct ebb__schedule_row sched(const char *id, const char *name)
{
    return (struct ebb__schedule_row){
        .id = id, .name = name, .cron = "*/30 * * * *", .timezone = "UTC",
        .yaml = "name: x\n", .file = "x.yaml", .workdir = "/w",
        .missed = "run-once", .currency = "USD", .owner_uid = 1000,
        .window = 6 * 3600000, .budget = 5000000, .created_at = FIRE - 60000,
        .next_fire_at = FIRE,
    };
}

static void add_job(struct ebb__store *s, const char *id)
{
    struct ebb__job_row r = {
        .id = id, .name = "x", .owner_uid = 1000, .spec_yaml = "",
        .spec_json = "{}", .state = "waiting", .submitted_at = FIRE,
        .updated_at = FIRE, .work_ms = 3600000, .budget = -1,
        .currency = "USD",
    };
    assert_int_equal(ebb__store_job_insert(s, &r), 0);
}

static int64_t query_i64(struct ebb__store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(ebb_test_store_db(s), sql, -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_type(st, 0) == SQLITE_NULL
                    ? -999
                    : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

struct seen {
    char line[8][256];
    size_t n;
    size_t stop_after; /* 0: never stop */
};

static int collect(void *arg, const struct ebb__schedule_row *r)
{
    struct seen *seen = arg;
    snprintf(seen->line[seen->n++], sizeof(seen->line[0]),
             "%s %s %s %s %s %s %s %lld %lld %lld %lld %lld [%s]", r->id,
             r->name, r->cron, r->missed, r->file, r->workdir, r->yaml,
             (long long)r->owner_uid, (long long)r->budget,
             (long long)r->created_at, (long long)r->last_fire_at,
             (long long)r->next_fire_at, r->last_job_id);
    return seen->stop_after != 0 && seen->n == seen->stop_after ? 42 : 0;
}

/* ---- tests ------------------------------------------------------------- */

static void add_list_find_remove(void **state)
{
    struct fixture *fx = *state;
    struct ebb__schedule_row b = sched("s-2", "nightly"), a = sched("s-1", "hourly");
    b.budget = -1;
    b.next_fire_at = 0;
    assert_int_equal(ebb__store_schedule_insert(fx->s, &b), 0);
    assert_int_equal(ebb__store_schedule_insert(fx->s, &a), 0);

    struct seen seen = {0};
    assert_int_equal(ebb__store_schedules_each(fx->s, collect, &seen), 0);
    assert_int_equal(seen.n, 2);
    assert_string_equal(seen.line[0], "s-1 hourly */30 * * * * run-once x.yaml "
                                      "/w name: x\n 1000 5000000 1577858340000 "
                                      "0 1577858400000 []");
    assert_string_equal(seen.line[1], "s-2 nightly */30 * * * * run-once x.yaml "
                                      "/w name: x\n 1000 -1 1577858340000 0 0 []");

    char id[32];
    int64_t owner = 0;
    assert_int_equal(ebb__store_schedule_find(fx->s, "nightly", id, sizeof(id), &owner), 0);
    assert_string_equal(id, "s-2");
    assert_int_equal(owner, 1000);
    assert_int_equal(ebb__store_schedule_find(fx->s, "s-1", id, sizeof(id), NULL), 0);
    assert_string_equal(id, "s-1");
    assert_int_equal(ebb__store_schedule_find(fx->s, "nope", id, sizeof(id), NULL),
                     EBB_ENOTFOUND);

    /* Removing keeps the runs (with their link) and drops the events. */
    add_job(fx->s, "j-1");
    assert_int_equal(ebb__store_schedule_link(fx->s, "j-1", "s-2", FIRE), 0);
    assert_int_equal(ebb__store_schedule_event(fx->s, "s-2", FIRE, FIRE,
                                               "started", "j-1", "r"), 0);
    assert_int_equal(ebb__store_schedule_remove(fx->s, "s-2"), 0);
    assert_int_equal(ebb__store_schedule_remove(fx->s, "s-2"), EBB_ENOTFOUND);
    assert_int_equal(ebb__store_schedule_find(fx->s, "nightly", id, sizeof(id), NULL),
                     EBB_ENOTFOUND);
    assert_int_equal(query_i64(fx->s, "SELECT count(*) FROM schedule_events"), 0);
    assert_int_equal(query_i64(fx->s, "SELECT count(*) FROM jobs WHERE "
                                      "schedule_id = 's-2'"), 1);
    seen = (struct seen){0};
    assert_int_equal(ebb__store_schedules_each(fx->s, collect, &seen), 0);
    assert_int_equal(seen.n, 1);
}

static void ids_and_names_are_unique(void **state)
{
    struct fixture *fx = *state;
    struct ebb__schedule_row a = sched("s-1", "hourly");
    assert_int_equal(ebb__store_schedule_insert(fx->s, &a), 0);
    struct ebb__schedule_row same_name = sched("s-2", "hourly");
    assert_int_equal(ebb__store_schedule_insert(fx->s, &same_name), EBB_EEXISTS);
    struct ebb__schedule_row same_id = sched("s-1", "other");
    assert_int_equal(ebb__store_schedule_insert(fx->s, &same_id), EBB_EEXISTS);
    assert_int_equal(query_i64(fx->s, "SELECT count(*) FROM schedules"), 1);
    struct ebb__schedule_row no_cron = sched("s-3", "third");
    no_cron.cron = NULL;
    assert_int_equal(ebb__store_schedule_insert(fx->s, &no_cron), EBB_EINVAL);
}

static void a_fire_time_gets_one_run(void **state)
{
    struct fixture *fx = *state;
    struct ebb__schedule_row a = sched("s-1", "hourly");
    assert_int_equal(ebb__store_schedule_insert(fx->s, &a), 0);
    add_job(fx->s, "j-1");
    add_job(fx->s, "j-2");
    add_job(fx->s, "j-3"); /* no schedule: NULL links never collide */
    add_job(fx->s, "j-4");
    assert_int_equal(ebb__store_schedule_link(fx->s, "j-1", "s-1", FIRE), 0);
    assert_int_equal(ebb__store_schedule_link(fx->s, "j-2", "s-1", FIRE), EBB_EEXISTS);
    assert_int_equal(query_i64(fx->s, "SELECT schedule_fire_at FROM jobs "
                                      "WHERE id = 'j-2'"), -999);
    assert_int_equal(ebb__store_schedule_link(fx->s, "j-2", "s-1", FIRE + HALF_HOUR), 0);
    assert_int_equal(ebb__store_schedule_link(fx->s, "j-9", "s-1", FIRE + 2 * HALF_HOUR),
                     EBB_ENOTFOUND);
    assert_int_equal(query_i64(fx->s, "SELECT count(*) FROM jobs WHERE "
                                      "schedule_id IS NULL"), 2);
}

/* What ebbd writes when a fire time starts a run, in one transaction. */
static int start_run(struct ebb__store *s, const char *job, ebb_time_ms fire)
{
    int rc = ebb__store_begin(s);
    if (rc == 0) {
        add_job(s, job);
        rc = ebb__store_schedule_link(s, job, "s-1", fire);
    }
    if (rc == 0)
        rc = ebb__store_schedule_event(s, "s-1", fire, fire, "started", job, "r");
    if (rc == 0)
        rc = ebb__store_schedule_fired(s, "s-1", fire, fire + HALF_HOUR);
    if (rc == 0)
        return ebb__store_commit(s);
    ebb__store_rollback(s);
    return rc;
}

static void a_run_and_its_fire_commit_together(void **state)
{
    struct fixture *fx = *state;
    struct ebb__schedule_row a = sched("s-1", "hourly");
    assert_int_equal(ebb__store_schedule_insert(fx->s, &a), 0);
    assert_int_equal(ebb__store_begin(fx->s), 0);
    add_job(fx->s, "j-1");
    assert_int_equal(ebb__store_schedule_link(fx->s, "j-1", "s-1", FIRE), 0);
    assert_int_equal(ebb__store_schedule_fired(fx->s, "s-1", FIRE, FIRE + HALF_HOUR), 0);
    assert_int_equal(ebb__store_rollback(fx->s), 0);
    assert_int_equal(query_i64(fx->s, "SELECT count(*) FROM jobs"), 0);
    assert_int_equal(query_i64(fx->s, "SELECT last_fire_at FROM schedules"), -999);

    assert_int_equal(start_run(fx->s, "j-1", FIRE), 0);
    assert_int_equal(query_i64(fx->s, "SELECT last_fire_at FROM schedules"), FIRE);
    assert_int_equal(query_i64(fx->s, "SELECT next_fire_at FROM schedules"),
                     FIRE + HALF_HOUR);
    /* The same fire time again (a bug, or a replay after a crash): the
     * second job is refused and rolled back with everything else. */
    assert_int_equal(start_run(fx->s, "j-2", FIRE), EBB_EEXISTS);
    assert_int_equal(query_i64(fx->s, "SELECT count(*) FROM jobs"), 1);
    assert_int_equal(query_i64(fx->s, "SELECT count(*) FROM schedule_events"), 1);

    struct seen seen = {0};
    assert_int_equal(ebb__store_schedules_each(fx->s, collect, &seen), 0);
    assert_non_null(strstr(seen.line[0], " 1577858400000 1577860200000 [j-1]"));
    assert_int_equal(start_run(fx->s, "j-2", FIRE + HALF_HOUR), 0);
    seen = (struct seen){0};
    assert_int_equal(ebb__store_schedules_each(fx->s, collect, &seen), 0);
    assert_non_null(strstr(seen.line[0], "[j-2]"));
    assert_int_equal(ebb__store_schedule_fired(fx->s, "s-9", FIRE, 0), EBB_ENOTFOUND);
}

static void json_reads(void **state)
{
    struct fixture *fx = *state;
    struct ebb__schedule_row a = sched("s-1", "hourly");
    assert_int_equal(ebb__store_schedule_insert(fx->s, &a), 0);
    for (int i = 0; i < 4; i++) {
        char job[8];
        snprintf(job, sizeof(job), "j-%d", i);
        assert_int_equal(start_run(fx->s, job, FIRE + i * HALF_HOUR), 0);
    }
    assert_int_equal(ebb__store_schedule_event(fx->s, "s-1", FIRE, FIRE + 4 * HALF_HOUR,
                                               "skipped", NULL, "still going"), 0);
    assert_int_equal(ebb__store_schedule_event(fx->s, "s-1", FIRE, FIRE, "bogus",
                                               NULL, "x"), EBB_EDB);
    json_t *all;
    assert_int_equal(ebb__store_schedules_json(fx->s, &all), 0);
    assert_int_equal(json_array_size(all), 1);
    json_t *row = json_array_get(all, 0);
    assert_string_equal(json_string_value(json_object_get(row, "last_job_id")), "j-3");
    assert_string_equal(json_string_value(json_object_get(row, "last_job_state")), "waiting");
    assert_int_equal(json_integer_value(json_object_get(row, "budget_micros")), 5000000);
    json_decref(all);

    json_t *one;
    assert_int_equal(ebb__store_schedule_json(fx->s, "s-1", 3, &one), 0);
    assert_string_equal(json_string_value(json_object_get(one, "yaml")), "name: x\n");
    json_t *runs = json_object_get(one, "runs");
    assert_int_equal(json_array_size(runs), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(runs, 0), "id")), "j-3");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 2), "fire_at")),
                     FIRE + HALF_HOUR);
    json_t *events = json_object_get(one, "events");
    assert_int_equal(json_array_size(events), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(events, 0), "kind")),
                        "skipped");
    json_decref(one);
    assert_int_equal(ebb__store_schedule_json(fx->s, "s-9", 3, &one), EBB_ENOTFOUND);
}

static void each_stops_when_asked(void **state)
{
    struct fixture *fx = *state;
    struct ebb__schedule_row a = sched("s-1", "a"), b = sched("s-2", "b");
    assert_int_equal(ebb__store_schedule_insert(fx->s, &a), 0);
    assert_int_equal(ebb__store_schedule_insert(fx->s, &b), 0);
    struct seen seen = {.stop_after = 1};
    assert_int_equal(ebb__store_schedules_each(fx->s, collect, &seen), 42);
    assert_int_equal(seen.n, 1);
}

static void version_2_file_migrates(void **state)
{
    struct fixture *fx = *state;
    ebb__store_close(fx->s);
    fx->s = NULL;
    char old[PATH_MAX + 8], err[512];
    snprintf(old, sizeof(old), "%s/v2.db", fx->dir);
    struct ebb__store *s = NULL;
    assert_int_equal(ebb__store_open_at_version(old, 2, &s, err, sizeof(err)), 0);
    /* A job row as version 2 knew it (the store's insert writes newer
     * columns). */
    assert_int_equal(sqlite3_exec(ebb_test_store_db(s),
        "INSERT INTO jobs (id, name, owner_uid, spec_yaml, spec_json, state,"
        " submitted_at, work_ms, currency, updated_at) VALUES ('j-old', 'x',"
        " 1000, '', '{}', 'waiting', 5, 3600000, 'USD', 5)", NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_exec(ebb_test_store_db(s),
        "INSERT INTO schedules (id, name, cron, template_yaml, created_at)"
        " VALUES ('s-old', 'old', '@daily', 'name: old', 5)", NULL, NULL, NULL),
                     SQLITE_OK);
    ebb__store_close(s);

    assert_int_equal(ebb__store_open(old, &s, err, sizeof(err)), 0);
    int v = 0;
    assert_int_equal(ebb__store_schema_version(s, &v), 0);
    assert_int_equal(v, EBB__STORE_SCHEMA_LATEST);
    assert_int_equal(query_i64(s, "SELECT count(*) FROM jobs WHERE schedule_id "
                                  "IS NULL AND schedule_fire_at IS NULL"), 1);
    struct seen seen = {0};
    assert_int_equal(ebb__store_schedules_each(s, collect, &seen), 0);
    assert_int_equal(seen.n, 1);
    assert_string_equal(seen.line[0], "s-old old @daily skip   name: old -1 -1 5 0 0 []");
    assert_int_equal(ebb__store_schedule_link(s, "j-old", "s-old", FIRE), 0);
    ebb__store_close(s);
    for (const char *const *f = (const char *const[]){"", "-wal", "-shm", NULL};
         *f != NULL; f++) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s%s", old, *f);
        unlink(path);
    }
    assert_int_equal(ebb__store_open(fx->db, &fx->s, err, sizeof(err)), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(add_list_find_remove),
        T(ids_and_names_are_unique),
        T(a_fire_time_gets_one_run),
        T(a_run_and_its_fire_commit_together),
        T(json_reads),
        T(each_stops_when_asked),
        T(version_2_file_migrates),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
