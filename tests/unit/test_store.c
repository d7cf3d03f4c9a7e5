/* Unit tests of the store (src/store/store.c, src/store/store_schema.c): opening,
 * migrations, refusing files it must not touch, prices, the append-only
 * event history, and crash safety under SIGKILL. Each test runs in its own
 * temporary directory, removed at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_ckpt.h"
#include "store/store_rates.h"
#include "store/store_workdir.h"
#include "store_peek.h"

struct fixture {
    char dir[PATH_MAX - 256]; /* room for a file name after it */
    char db[PATH_MAX];
};

/* The newest price time of `provider` in `region`, any zone, type or
 * product: the cursors of the region's series, the newest of them. */
static int last_price_at(struct ebb__store *s, const char *provider,
                         const char *region, ebb_time_ms *out)
{
    const struct ebb_series_key key = {.region = region};
    return ebb__store_price_cursor(s, provider, &key, out);
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    if (fx == NULL)
        return -1;
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    snprintf(fx->dir, sizeof(fx->dir), "%s/ebb-store-XXXXXX", tmp);
    if (mkdtemp(fx->dir) == NULL) {
        free(fx);
        return -1;
    }
    snprintf(fx->db, sizeof(fx->db), "%s/ebb.db", fx->dir);
    *state = fx;
    return 0;
}

static int remove_one(const char *path, const struct stat *sb, int flag,
                      struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    int r = nftw(fx->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return r;
}

/* ---- helpers ----------------------------------------------------------- */

static struct ebb__store *open_ok(const char *path)
{
    struct ebb__store *s = NULL;
    char err[512];
    int r = ebb__store_open(path, &s, err, sizeof(err));
    if (r != 0)
        fail_msg("open %s: %d %s", path, r, err);
    assert_non_null(s);
    return s;
}

static int64_t query_i64(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW)
        fail_msg("%s: no row (%s)", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void query_text(sqlite3 *db, const char *sql, char *out, size_t len)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(out, len, "%s", t != NULL ? (const char *)t : "");
    sqlite3_finalize(st);
}

static int has_table(sqlite3 *db, const char *name)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM sqlite_master WHERE name = '%s'", name);
    return (int)query_i64(db, sql);
}

static void exec_ok(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        char copy[512];
        snprintf(copy, sizeof(copy), "%s", msg != NULL ? msg : "?");
        sqlite3_free(msg);
        fail_msg("%s: %s", sql, copy);
    }
}

static struct ebb_price price(const char *region, const char *zone,
                              const char *type, enum ebb_market market,
                              ebb_time_ms at, ebb_micros micros)
{
    struct ebb_price p = {
        .region = region,
        .zone = zone,
        .instance_type = type,
        .product = "Linux/UNIX",
        .market = market,
        .at = at,
        .price_per_hour = micros,
        .currency = "USD",
    };
    return p;
}

/* Collects latest_prices() rows as "provider/region/zone/type/market@at=price". */
struct rows {
    char line[16][128];
    int n;
};

static int collect(void *arg, const struct ebb__price_row *row)
{
    struct rows *r = arg;
    if (r->n >= 16)
        return 99;
    snprintf(r->line[r->n++], sizeof(r->line[0]), "%s/%s/%s/%s/%s@%lld=%lld",
             row->provider, row->price.region, row->price.zone,
             row->price.instance_type,
             row->price.market == EBB_MARKET_SPOT ? "spot" : "od",
             (long long)row->price.at, (long long)row->price.price_per_hour);
    return 0;
}

/* ---- opening and migrations ------------------------------------------- */

static void fresh_open_is_latest_and_wal(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = open_ok(fx->db);
    int v = -1;
    assert_int_equal(ebb__store_schema_version(s, &v), 0);
    assert_int_equal(v, EBB__STORE_SCHEMA_LATEST);

    sqlite3 *db = ebb_test_store_db(s);
    char mode[16];
    query_text(db, "PRAGMA journal_mode", mode, sizeof(mode));
    assert_string_equal(mode, "wal");
    assert_int_equal(query_i64(db, "PRAGMA synchronous"), 2); /* FULL */
    assert_int_equal(query_i64(db, "PRAGMA foreign_keys"), 1);
    assert_int_equal(query_i64(db, "PRAGMA application_id"),
                     EBB__STORE_APPLICATION_ID);
    int64_t cookie = query_i64(db, "PRAGMA schema_version");
    ebb__store_close(s);

    struct stat sb;
    assert_int_equal(stat(fx->db, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);

    /* Reopening migrates nothing: the schema cookie, bumped by any schema
     * change, stays the same. */
    s = open_ok(fx->db);
    assert_int_equal(ebb__store_schema_version(s, &v), 0);
    assert_int_equal(v, EBB__STORE_SCHEMA_LATEST);
    assert_int_equal(query_i64(ebb_test_store_db(s), "PRAGMA schema_version"),
                     cookie);
    char err[256];
    assert_int_equal(ebb__store_integrity_check(s, err, sizeof(err)), 0);
    ebb__store_close(s);
}

static void version_1_file_migrates_keeping_rows(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = NULL;
    char err[512];
    assert_int_equal(ebb__store_open_at_version(fx->db, 1, &s, err,
                                                sizeof(err)),
                     0);
    int v = -1;
    assert_int_equal(ebb__store_schema_version(s, &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(has_table(ebb_test_store_db(s), "schedules"), 0);
    /* A row as version 1 wrote it (the store's insert writes newer tables). */
    exec_ok(ebb_test_store_db(s),
            "INSERT INTO prices (provider, region, zone, instance_type, product,"
            " market, observed_at, price_micros, currency) VALUES ('aws',"
            " 'us-east-1', 'us-east-1a', 'p3.2xlarge', 'Linux/UNIX', 'spot',"
            " 1700000000000, 918000, 'USD')");
    ebb__store_close(s);

    s = open_ok(fx->db);
    assert_int_equal(ebb__store_schema_version(s, &v), 0);
    assert_int_equal(v, EBB__STORE_SCHEMA_LATEST);
    sqlite3 *db = ebb_test_store_db(s);
    assert_int_equal(has_table(db, "schedules"), 1);
    assert_int_equal(has_table(db, "budgets"), 1);
    assert_int_equal(has_table(db, "jobs_by_state"), 1);
    /* Version 5 keeps poll cursors in a table, not an index on prices. */
    assert_int_equal(has_table(db, "prices_by_region_time"), 0);
    assert_int_equal(has_table(db, "price_cursors"), 1);
    ebb_time_ms last = 0;
    assert_int_equal(last_price_at(s, "aws", "us-east-1", &last), 0);
    assert_int_equal(last, 1700000000000);

    struct rows r = {0};
    assert_int_equal(ebb__store_latest_prices(s, NULL, collect, &r), 0);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.line[0], "aws/us-east-1/us-east-1a/p3.2xlarge/"
                                   "spot@1700000000000=918000");
    /* Version 11: jobs stored before priorities are normal; the column
     * takes 0 to 1000 only. */
    exec_ok(db, "INSERT INTO jobs (id, owner_uid, spec_yaml, spec_json, state,"
                " submitted_at, updated_at) VALUES ('j-old', 1000, 'x', '{}',"
                " 'waiting', 1, 1)");
    assert_int_equal(query_i64(db, "SELECT priority FROM jobs WHERE id = 'j-old'"), 500);
    exec_ok(db, "UPDATE jobs SET priority = 1000 WHERE id = 'j-old'");
    assert_int_not_equal(sqlite3_exec(db, "UPDATE jobs SET priority = 1001 WHERE id"
                                          " = 'j-old'", NULL, NULL, NULL),
                         SQLITE_OK);
    struct ebb__job_row row = {.id = "j-new", .name = "n", .spec_yaml = "x",
                               .spec_json = "{}", .state = "waiting",
                               .currency = "USD", .budget = -1, .priority = 750};
    assert_int_equal(ebb__store_job_insert(s, &row), 0);
    assert_int_equal(query_i64(db, "SELECT priority FROM jobs WHERE id = 'j-new'"), 750);
    /* The new tables take rows and enforce their checks. */
    exec_ok(db, "INSERT INTO budgets (team, period, cap_micros, currency)"
                " VALUES ('ml', '2026-11', 5000000000, 'USD')");
    assert_int_not_equal(sqlite3_exec(db,
                                      "INSERT INTO budgets (team, period,"
                                      " cap_micros) VALUES ('ml', 'Nov',"
                                      " 1)",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
    ebb__store_close(s);
}

static void too_new_file_is_refused_untouched(void **state)
{
    struct fixture *fx = *state;
    ebb__store_close(open_ok(fx->db));

    sqlite3 *raw = NULL;
    assert_int_equal(sqlite3_open(fx->db, &raw), SQLITE_OK);
    /* One version past what this build knows. */
    const int newer = EBB__STORE_SCHEMA_LATEST + 1;
    char bump[48];
    snprintf(bump, sizeof(bump), "PRAGMA user_version = %d", newer);
    exec_ok(raw, bump);
    sqlite3_close(raw);

    struct ebb__store *s = (struct ebb__store *)&s; /* must become NULL */
    char err[512];
    assert_int_equal(ebb__store_open(fx->db, &s, err, sizeof(err)),
                     EBB_EDB);
    assert_null(s);
    char want[96];
    snprintf(want, sizeof(want), "has schema version %d; this ebb knows up to "
             "%d: upgrade ebb", newer, EBB__STORE_SCHEMA_LATEST);
    assert_non_null(strstr(err, want));

    assert_int_equal(sqlite3_open(fx->db, &raw), SQLITE_OK);
    assert_int_equal(query_i64(raw, "PRAGMA user_version"), newer);
    sqlite3_close(raw);
}

static void garbage_and_foreign_files_are_refused(void **state)
{
    struct fixture *fx = *state;
    static const char junk[] = "this is a job spec, not a database\n"
                               "name: resnet\nbudget: 40 USD\n";
    FILE *f = fopen(fx->db, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(junk, 1, sizeof(junk) - 1, f), sizeof(junk) - 1);
    fclose(f);

    struct ebb__store *s = NULL;
    char err[512];
    assert_int_equal(ebb__store_open(fx->db, &s, err, sizeof(err)),
                     EBB_EDB);
    assert_null(s);
    assert_non_null(strstr(err, "is not a SQLite database"));
    assert_non_null(strstr(err, "move it aside"));

    /* Left exactly as it was. */
    char back[256] = {0};
    f = fopen(fx->db, "r");
    assert_non_null(f);
    size_t n = fread(back, 1, sizeof(back) - 1, f);
    fclose(f);
    assert_int_equal(n, sizeof(junk) - 1);
    assert_memory_equal(back, junk, n);

    /* Another program's SQLite file is not adopted. */
    char other[PATH_MAX];
    snprintf(other, sizeof(other), "%s/other.db", fx->dir);
    sqlite3 *raw = NULL;
    assert_int_equal(sqlite3_open(other, &raw), SQLITE_OK);
    exec_ok(raw, "CREATE TABLE photos (id INTEGER PRIMARY KEY)");
    sqlite3_close(raw);
    assert_int_equal(ebb__store_open(other, &s, err, sizeof(err)), EBB_EDB);
    assert_null(s);
    assert_non_null(strstr(err, "another program"));
}

/* ---- prices ------------------------------------------------------------ */

static void put_price_twice_is_a_no_op(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = open_ok(fx->db);
    struct ebb_price p = price("us-east-1", "us-east-1a", "p3.2xlarge",
                               EBB_MARKET_SPOT, 1000, 918000);
    assert_int_equal(ebb__store_put_price(s, "aws", &p), 1);
    assert_int_equal(ebb__store_put_price(s, "aws", &p), 0);
    /* The same observation with another price is still the same key: the
     * first one observed stays. */
    p.price_per_hour = 1;
    assert_int_equal(ebb__store_put_price(s, "aws", &p), 0);
    p.at = 2000;
    assert_int_equal(ebb__store_put_price(s, "aws", &p), 1);

    struct ebb_price batch[3] = {
        price("us-east-1", "us-east-1a", "p3.2xlarge", EBB_MARKET_SPOT,
              2000, 5), /* already there */
        price("us-east-1", "us-east-1a", "p3.2xlarge", EBB_MARKET_SPOT,
              3000, 920000),
        price("us-west-2", "us-west-2b", "g5.xlarge", EBB_MARKET_ON_DEMAND,
              500, 1006000),
    };
    size_t inserted = 99;
    assert_int_equal(ebb__store_put_prices(s, "aws", batch, 3, &inserted), 0);
    assert_int_equal(inserted, 2);
    assert_int_equal(ebb__store_in_transaction(s), 0);

    /* A bad row in a batch keeps none of it. */
    struct ebb_price bad[2] = {
        price("eu-west-1", "eu-west-1a", "m5.large", EBB_MARKET_SPOT, 10, 1),
        price("eu-west-1", "eu-west-1a", "m5.large", EBB_MARKET_SPOT, 20, -1),
    };
    assert_int_equal(ebb__store_put_prices(s, "aws", bad, 2, &inserted),
                     EBB_EINVAL);
    assert_non_null(strstr(ebb__store_errmsg(s), "negative"));
    ebb_time_ms at = -1;
    assert_int_equal(last_price_at(s, "aws", "eu-west-1", &at), 0);
    assert_int_equal(at, 0);

    assert_int_equal(last_price_at(s, "aws", "us-east-1", &at), 0);
    assert_int_equal(at, 3000);
    assert_int_equal(last_price_at(s, "aws", "us-west-2", &at), 0);
    assert_int_equal(at, 500);
    assert_int_equal(last_price_at(s, "gcp", "us-east-1", &at), 0);
    assert_int_equal(at, 0);

    p.currency = "DOLLARS";
    assert_int_equal(ebb__store_put_price(s, "aws", &p), EBB_EINVAL);
    assert_int_equal(ebb__store_put_price(s, "", &p), EBB_EINVAL);
    ebb__store_close(s);
}

static void latest_prices_newest_per_series_with_filter(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = open_ok(fx->db);
    struct ebb_price v[] = {
        price("us-east-1", "us-east-1b", "p3.2xlarge", EBB_MARKET_SPOT, 100,
              11),
        price("us-east-1", "us-east-1a", "p3.2xlarge", EBB_MARKET_SPOT, 300,
              13),
        price("us-east-1", "us-east-1a", "p3.2xlarge", EBB_MARKET_SPOT, 100,
              12),
        price("us-east-1", "us-east-1a", "p3.2xlarge", EBB_MARKET_SPOT, 200,
              14),
        price("us-east-1", "us-east-1a", "g5.xlarge", EBB_MARKET_ON_DEMAND,
              50, 15),
        price("us-east-1", "us-east-1a", "g5.xlarge", EBB_MARKET_SPOT, 60,
              16),
    };
    assert_int_equal(ebb__store_put_prices(s, "aws", v, 6, NULL), 0);
    struct ebb_price h100[] = {
        price("", "", "H100_80GB", EBB_MARKET_SPOT, 400, 2100000),
        price("", "", "H100_80GB", EBB_MARKET_SPOT, 500, 1900000),
    };
    assert_int_equal(ebb__store_put_prices(s, "vastai", h100, 2, NULL), 0);

    struct rows r = {0};
    assert_int_equal(ebb__store_latest_prices(s, NULL, collect, &r), 0);
    assert_int_equal(r.n, 5);
    assert_string_equal(r.line[0], "aws/us-east-1/us-east-1a/g5.xlarge/od@50=15");
    assert_string_equal(r.line[1],
                        "aws/us-east-1/us-east-1a/g5.xlarge/spot@60=16");
    assert_string_equal(r.line[2],
                        "aws/us-east-1/us-east-1a/p3.2xlarge/spot@300=13");
    assert_string_equal(r.line[3],
                        "aws/us-east-1/us-east-1b/p3.2xlarge/spot@100=11");
    assert_string_equal(r.line[4], "vastai///H100_80GB/spot@500=1900000");

    struct ebb__price_filter f = {.provider = "vastai"};
    memset(&r, 0, sizeof(r));
    assert_int_equal(ebb__store_latest_prices(s, &f, collect, &r), 0);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.line[0], "vastai///H100_80GB/spot@500=1900000");

    f = (struct ebb__price_filter){.instance_type = "p3.2xlarge"};
    memset(&r, 0, sizeof(r));
    assert_int_equal(ebb__store_latest_prices(s, &f, collect, &r), 0);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.line[0],
                        "aws/us-east-1/us-east-1a/p3.2xlarge/spot@300=13");

    f = (struct ebb__price_filter){.provider = "aws", .zone = "us-east-1a",
                                   .instance_type = "p3.2xlarge"};
    memset(&r, 0, sizeof(r));
    assert_int_equal(ebb__store_latest_prices(s, &f, collect, &r), 0);
    assert_int_equal(r.n, 1);

    f = (struct ebb__price_filter){.zone = "us-east-1a"};
    memset(&r, 0, sizeof(r));
    assert_int_equal(ebb__store_latest_prices(s, &f, collect, &r), 0);
    assert_int_equal(r.n, 3);

    f = (struct ebb__price_filter){.provider = "gcp"};
    memset(&r, 0, sizeof(r));
    assert_int_equal(ebb__store_latest_prices(s, &f, collect, &r), 0);
    assert_int_equal(r.n, 0);

    /* A callback's non-zero answer stops the walk and is returned; the
     * statement is reset, so the next call starts afresh. */
    r.n = 16;
    assert_int_equal(ebb__store_latest_prices(s, NULL, collect, &r), 99);
    memset(&r, 0, sizeof(r));
    assert_int_equal(ebb__store_latest_prices(s, NULL, collect, &r), 0);
    assert_int_equal(r.n, 5);
    ebb__store_close(s);
}

/* ---- jobs, events, transactions --------------------------------------- */

static const char insert_job[] =
    "INSERT INTO jobs (id, owner_uid, spec_yaml, spec_json, state,"
    " submitted_at, updated_at) VALUES ('%s', 1000, 'x', '{}', '%s', 1, 1)";

static void add_job(sqlite3 *db, const char *id, const char *state)
{
    char sql[256];
    snprintf(sql, sizeof(sql), insert_job, id, state);
    exec_ok(db, sql);
}

struct counts {
    char text[256];
};

static void count_cb(void *arg, const char *state, int64_t n)
{
    struct counts *c = arg;
    size_t used = strlen(c->text);
    snprintf(c->text + used, sizeof(c->text) - used, "%s=%lld;", state,
             (long long)n);
}

/* Every series keeps its own cursor: a type with older prices is not
 * moved on by its region's newest; a key with NULL fields asks for the
 * newest among the series it matches. */
static void cursors_are_per_series(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = open_ok(fx->db);
    struct ebb_price p[4] = {
        price("cn-hangzhou", "cn-hangzhou-h", "gn6v", EBB_MARKET_SPOT, 9000, 1),
        price("cn-hangzhou", "cn-hangzhou-i", "gn6v", EBB_MARKET_SPOT, 7000, 1),
        price("cn-hangzhou", "cn-hangzhou-h", "gn6i", EBB_MARKET_SPOT, 2000, 1),
        price("cn-hangzhou", "cn-hangzhou-h", "gn6i", EBB_MARKET_ON_DEMAND, 3000, 1),
    };
    size_t inserted;
    assert_int_equal(ebb__store_put_prices(s, "alibaba", p, 4, &inserted), 0);
    ebb_time_ms at = -1;
    const struct ebb_series_key gn6v = {.region = "cn-hangzhou", .instance_type = "gn6v"};
    const struct ebb_series_key gn6i = {.region = "cn-hangzhou", .instance_type = "gn6i"};
    const struct ebb_series_key zone_i = {sizeof(zone_i),
                                          "cn-hangzhou", "cn-hangzhou-i", "gn6v",
                                          "Linux/UNIX"};
    const struct ebb_series_key other = {.region = "cn-hangzhou", .instance_type = "gn7i"};
    assert_int_equal(ebb__store_price_cursor(s, "alibaba", &gn6v, &at), 0);
    assert_int_equal(at, 9000);
    assert_int_equal(ebb__store_price_cursor(s, "alibaba", &gn6i, &at), 0);
    assert_int_equal(at, 3000); /* both markets of a series advance it */
    assert_int_equal(ebb__store_price_cursor(s, "alibaba", &zone_i, &at), 0);
    assert_int_equal(at, 7000);
    assert_int_equal(ebb__store_price_cursor(s, "alibaba", &other, &at), 0);
    assert_int_equal(at, 0);
    assert_int_equal(ebb__store_price_cursor(s, "alibaba", NULL, &at), 0);
    assert_int_equal(at, 9000);
    /* Only forward. */
    struct ebb_price old = price("cn-hangzhou", "cn-hangzhou-h", "gn6v",
                                 EBB_MARKET_SPOT, 100, 1);
    assert_int_equal(ebb__store_put_price(s, "alibaba", &old), 1);
    assert_int_equal(ebb__store_price_cursor(s, "alibaba", &gn6v, &at), 0);
    assert_int_equal(at, 9000);
    ebb__store_close(s);
}

/* A version 5 file (cursors per region) gets one cursor per series from
 * the prices it holds. */
static void version_5_cursors_become_per_series(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = NULL;
    char err[512];
    assert_int_equal(ebb__store_open_at_version(fx->db, 5, &s, err, sizeof(err)), 0);
    exec_ok(ebb_test_store_db(s),
            "INSERT INTO prices (provider, region, zone, instance_type, product,"
            " market, observed_at, price_micros, currency) VALUES"
            " ('alibaba', 'r', 'z', 'a', 'Linux/UNIX', 'spot', 5000, 1, 'USD'),"
            " ('alibaba', 'r', 'z', 'b', 'Linux/UNIX', 'spot', 1000, 1, 'USD');"
            "INSERT INTO price_cursors VALUES ('alibaba', 'r', 5000)");
    ebb__store_close(s);
    s = open_ok(fx->db);
    const struct ebb_series_key b = {.region = "r", .instance_type = "b"};
    ebb_time_ms at = -1;
    assert_int_equal(ebb__store_price_cursor(s, "alibaba", &b, &at), 0);
    assert_int_equal(at, 1000);
    ebb__store_close(s);
}

static void job_events_are_append_only(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = open_ok(fx->db);
    sqlite3 *db = ebb_test_store_db(s);
    add_job(db, "j1", "running");
    add_job(db, "j2", "pending");
    add_job(db, "j3", "running");
    exec_ok(db, "INSERT INTO job_events (job_id, at, from_state, to_state,"
                " reason) VALUES ('j1', 5, NULL, 'pending', 'submitted')");

    char *msg = NULL;
    assert_int_not_equal(sqlite3_exec(db,
                                      "UPDATE job_events SET reason = 'x'",
                                      NULL, NULL, &msg),
                         SQLITE_OK);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "append-only"));
    sqlite3_free(msg);
    msg = NULL;
    assert_int_not_equal(sqlite3_exec(db, "DELETE FROM job_events", NULL,
                                      NULL, &msg),
                         SQLITE_OK);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "append-only"));
    sqlite3_free(msg);
    assert_int_equal(query_i64(db, "SELECT count(*) FROM job_events"), 1);

    /* Foreign keys are on: no event for a job that does not exist. */
    assert_int_not_equal(sqlite3_exec(db,
                                      "INSERT INTO job_events (job_id, at,"
                                      " to_state, reason) VALUES ('nope',"
                                      " 1, 'x', 'y')",
                                      NULL, NULL, NULL),
                         SQLITE_OK);

    struct counts c = {{0}};
    assert_int_equal(ebb__store_job_counts(s, count_cb, &c), 0);
    assert_string_equal(c.text, "pending=1;running=2;");
    ebb__store_close(s);
}

static void transactions_commit_and_roll_back(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = open_ok(fx->db);
    struct ebb_price p = price("r", "z", "t", EBB_MARKET_SPOT, 1, 1);

    assert_int_equal(ebb__store_begin(s), 0);
    assert_int_equal(ebb__store_in_transaction(s), 1);
    assert_int_equal(ebb__store_put_price(s, "x", &p), 1);
    assert_int_equal(ebb__store_begin(s), EBB_EDB); /* no nesting */
    assert_non_null(strstr(ebb__store_errmsg(s), "within a transaction"));
    assert_int_equal(ebb__store_rollback(s), 0);
    assert_int_equal(ebb__store_rollback(s), 0); /* nothing open: no-op */
    ebb_time_ms at = -1;
    assert_int_equal(last_price_at(s, "x", "r", &at), 0);
    assert_int_equal(at, 0);

    assert_int_equal(ebb__store_begin(s), 0);
    /* put_prices joins the caller's transaction. */
    assert_int_equal(ebb__store_put_prices(s, "x", &p, 1, NULL), 0);
    assert_int_equal(ebb__store_in_transaction(s), 1);
    assert_int_equal(ebb__store_commit(s), 0);
    assert_int_equal(last_price_at(s, "x", "r", &at), 0);
    assert_int_equal(at, 1);

    /* A second writer waits, then gets EBB_EBUSY, not a hang. The busy
     * timeout is shortened here to keep the test fast. */
    sqlite3 *other = NULL;
    assert_int_equal(sqlite3_open(fx->db, &other), SQLITE_OK);
    exec_ok(other, "BEGIN IMMEDIATE");
    sqlite3_busy_timeout(ebb_test_store_db(s), 50);
    assert_int_equal(ebb__store_begin(s), EBB_EBUSY);
    exec_ok(other, "ROLLBACK");
    sqlite3_close(other);
    ebb__store_close(s);
}

/* ---- crash safety ------------------------------------------------------ */

/* The child: writes prices, a job, its event and its ledger row in one
 * short transaction after another until it is killed, and after each
 * commit tells the parent the ledger row's id through `wfd`. */
static void crash_child(const char *path, int wfd)
{
    struct ebb__store *s = NULL;
    if (ebb__store_open(path, &s, NULL, 0) != 0)
        _exit(2);
    sqlite3 *db = ebb_test_store_db(s);
    sqlite3_stmt *job = NULL, *ev = NULL, *led = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO jobs (id, owner_uid, team, spec_yaml,"
                           " spec_json, state, submitted_at, spent_micros,"
                           " updated_at) VALUES (?1, 1000, 'crash', 'x',"
                           " '{}', 'running', ?2, ?3, ?2)",
                           -1, &job, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO job_events (job_id, at, from_state,"
                           " to_state, reason) VALUES (?1, ?2, 'launching',"
                           " 'running', 'instance up')",
                           -1, &ev, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO ledger (job_id, team, provider, kind,"
                           " start_at, end_at, rate_micros, amount_micros,"
                           " currency, note) VALUES (?1, 'crash', 'sim',"
                           " 'compute', ?2, ?3, ?4, ?5, 'USD', ?1)",
                           -1, &led, NULL) != SQLITE_OK)
        _exit(3);

    int64_t base = (int64_t)getpid() * 1000000;
    for (int64_t i = 0;; i++) {
        char id[64];
        snprintf(id, sizeof(id), "job-%d-%lld", (int)getpid(), (long long)i);
        int64_t start = base + i * 1000;
        int64_t end = start + 1000 * (i % 3600 + 1);
        int64_t rate = 1000000 + i * 7;
        int64_t amount = rate * (end - start) / EBB_MS_PER_HOUR;

        if (ebb__store_begin(s) != 0)
            _exit(4);
        struct ebb_price p = price("r1", "z1", "t", EBB_MARKET_SPOT,
                                   start, rate);
        if (ebb__store_put_price(s, "crash", &p) < 0)
            _exit(5);
        /* Now and then a bigger transaction, so that kills also land in
         * the middle of longer writes. */
        if (i % 8 == 0) {
            struct ebb_price batch[64];
            for (int k = 0; k < 64; k++)
                batch[k] = price("r2", "z2", "u", EBB_MARKET_ON_DEMAND,
                                 start + k, rate + k);
            if (ebb__store_put_prices(s, "crash", batch, 64, NULL) != 0)
                _exit(6);
        }
        sqlite3_bind_text(job, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(job, 2, start);
        sqlite3_bind_int64(job, 3, amount);
        sqlite3_bind_text(ev, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(ev, 2, start);
        sqlite3_bind_text(led, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(led, 2, start);
        sqlite3_bind_int64(led, 3, end);
        sqlite3_bind_int64(led, 4, rate);
        sqlite3_bind_int64(led, 5, amount);
        if (sqlite3_step(job) != SQLITE_DONE || sqlite3_step(ev) != SQLITE_DONE
            || sqlite3_step(led) != SQLITE_DONE)
            _exit(7);
        int64_t row = sqlite3_last_insert_rowid(db);
        sqlite3_reset(job);
        sqlite3_reset(ev);
        sqlite3_reset(led);
        if (ebb__store_commit(s) != 0)
            _exit(8);
        if (write(wfd, &row, sizeof(row)) != (ssize_t)sizeof(row))
            _exit(9);
    }
}

/* Every ledger row is whole and came with its job and event (the three
 * were one transaction), and every row the child saw committed is there. */
static void check_after_crash(const char *path, const int64_t *ids, size_t n)
{
    struct ebb__store *s = open_ok(path);
    char err[512];
    int r = ebb__store_integrity_check(s, err, sizeof(err));
    if (r != 0)
        fail_msg("integrity check: %s", err);
    sqlite3 *db = ebb_test_store_db(s);
    assert_int_equal(
        query_i64(db,
                  "SELECT count(*) FROM ledger l WHERE NOT ("
                  " l.kind = 'compute' AND l.currency = 'USD'"
                  " AND l.team = 'crash' AND l.note = l.job_id"
                  " AND l.amount_micros ="
                  "  l.rate_micros * (l.end_at - l.start_at) / 3600000"
                  " AND (SELECT spent_micros FROM jobs j WHERE j.id = l.job_id)"
                  "  = l.amount_micros"
                  " AND (SELECT count(*) FROM job_events e"
                  "  WHERE e.job_id = l.job_id) = 1"
                  " AND (SELECT count(*) FROM prices p WHERE p.provider ="
                  "  'crash' AND p.zone = 'z1' AND p.observed_at = l.start_at"
                  "  AND p.price_micros = l.rate_micros) = 1)"),
        0);
    assert_int_equal(query_i64(db, "SELECT count(*) FROM jobs WHERE id NOT IN"
                                   " (SELECT job_id FROM ledger)"),
                     0);
    assert_int_equal(query_i64(db, "SELECT count(*) FROM job_events WHERE"
                                   " job_id NOT IN (SELECT job_id FROM ledger)"),
                     0);

    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT count(*) FROM ledger"
                                        " WHERE id = ?1",
                                        -1, &st, NULL),
                     SQLITE_OK);
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_int64(st, 1, ids[i]);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        if (sqlite3_column_int64(st, 0) != 1)
            fail_msg("committed ledger row %lld is missing",
                     (long long)ids[i]);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    ebb__store_close(s);
}

static void survives_sigkill_at_random_moments(void **state)
{
    struct fixture *fx = *state;
    ebb__store_close(open_ok(fx->db));

    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    const char *env = getenv("EBB_TEST_SEED");
    if (env != NULL && env[0] != '\0')
        seed = (unsigned)strtoul(env, NULL, 10);
    print_message("crash test seed %u (EBB_TEST_SEED reproduces it)\n", seed);

    enum { ROUNDS = 24, MAX_IDS = 65536 / sizeof(int64_t) + 16 };
    static int64_t ids[MAX_IDS];
    size_t total = 0;
    for (int round = 0; round < ROUNDS; round++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            crash_child(fx->db, fds[1]);
            _exit(1);
        }
        close(fds[1]);

        size_t n = 0;
        /* Half the rounds wait for a first commit, so that kills land
         * mid-stream; the others may kill the child while it opens. */
        if (round % 2 == 0) {
            ssize_t got = read(fds[0], &ids[n], sizeof(ids[0]));
            if (got != (ssize_t)sizeof(ids[0]))
                fail_msg("child committed nothing (read %zd)", got);
            n++;
        }
        usleep((useconds_t)(rand_r(&seed) % 25000));
        assert_int_equal(kill(pid, SIGKILL), 0);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFSIGNALED(status))
            fail_msg("child exited with %d before the kill",
                     WEXITSTATUS(status));

        for (;;) {
            ssize_t got = read(fds[0], &ids[n], sizeof(ids[0]));
            if (got <= 0)
                break;
            assert_int_equal(got, sizeof(ids[0]));
            n++;
            assert_true(n < MAX_IDS);
        }
        close(fds[0]);
        check_after_crash(fx->db, ids, n);
        total += n;
    }
    assert_true(total > 0);
    print_message("%zu transactions committed across %d kills\n", total,
                  ROUNDS);
}

/* Group commit: writes wait for the flush (another connection sees none
 * before), a rolled-back savepoint undoes only its own writes, and
 * closing commits what the group gathered. */
static void group_commit_batches_and_scopes_rollbacks(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = open_ok(fx->db);
    struct ebb__store *reader = open_ok(fx->db);
    sqlite3 *rdb = ebb_test_store_db(reader);
    ebb__store_group_commit(s, 1);

    struct ebb_price a = price("us-east-1", "us-east-1a", "p3.2xlarge",
                               EBB_MARKET_SPOT, 1000, 900000);
    struct ebb_price b = price("us-east-1", "us-east-1b", "p3.2xlarge",
                               EBB_MARKET_SPOT, 1000, 910000);
    assert_int_equal(ebb__store_put_price(s, "aws", &a), 1);
    assert_int_equal(query_i64(rdb, "SELECT count(*) FROM prices"), 0);

    assert_int_equal(ebb__store_begin(s), 0);
    assert_true(ebb__store_in_transaction(s));
    assert_int_equal(ebb__store_put_price(s, "aws", &b), 1);
    assert_int_equal(ebb__store_rollback(s), 0);
    assert_false(ebb__store_in_transaction(s));
    /* The group's own write survives the savepoint's rollback. */
    assert_int_equal(query_i64(ebb_test_store_db(s), "SELECT count(*) FROM prices"), 1);
    assert_int_equal(ebb__store_flush(s), 0);
    assert_int_equal(query_i64(rdb, "SELECT count(*) FROM prices"), 1);

    assert_int_equal(ebb__store_begin(s), 0);
    assert_int_equal(ebb__store_put_price(s, "aws", &b), 1);
    /* A flush inside a savepoint waits for it. */
    assert_int_equal(ebb__store_flush(s), 0);
    assert_int_equal(query_i64(rdb, "SELECT count(*) FROM prices"), 1);
    assert_int_equal(ebb__store_commit(s), 0);
    assert_int_equal(ebb__store_flush(s), 0);
    assert_int_equal(query_i64(rdb, "SELECT count(*) FROM prices"), 2);

    struct ebb_price c = price("us-west-2", "us-west-2a", "p3.2xlarge",
                               EBB_MARKET_SPOT, 2000, 920000);
    assert_int_equal(ebb__store_put_price(s, "aws", &c), 1);
    ebb__store_close(s);
    assert_int_equal(query_i64(rdb, "SELECT count(*) FROM prices"), 3);
    ebb__store_close(reader);
}

/* With checkpoints left elsewhere the writer never checkpoints: its WAL
 * grows past SQLite's 1000-page default, page by page as the hook counts
 * them; a passive checkpoint on another connection copies it into the
 * database, and the writer's next commit starts the WAL over. */
static void checkpoints_run_on_another_connection(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = open_ok(fx->db);
    ebb__store_checkpoint_elsewhere(s);
    assert_int_equal(ebb__store_wal_pages(s), 0);
    int last = 0;
    for (int i = 0; ebb__store_wal_pages(s) <= 1100; i++) {
        assert_true(i < 5000);
        char zone[32];
        snprintf(zone, sizeof(zone), "us-east-1-%d", i);
        struct ebb_price p = price("us-east-1", zone, "p3.2xlarge",
                                   EBB_MARKET_SPOT, 1000 + i, 900000);
        assert_int_equal(ebb__store_put_price(s, "aws", &p), 1);
        assert_true(ebb__store_wal_pages(s) >= last); /* never reset */
        last = ebb__store_wal_pages(s);
    }
    struct ebb__store *other = open_ok(fx->db);
    assert_int_equal(ebb__store_checkpoint(other), 0);
    int64_t rows = query_i64(ebb_test_store_db(other), "SELECT count(*) FROM prices");
    ebb__store_close(other);
    struct ebb_price p = price("us-east-1", "us-east-1-x", "p3.2xlarge",
                               EBB_MARKET_SPOT, 1, 900000);
    assert_int_equal(ebb__store_put_price(s, "aws", &p), 1);
    assert_true(ebb__store_wal_pages(s) < 10);
    assert_int_equal(query_i64(ebb_test_store_db(s), "SELECT count(*) FROM prices"),
                     rows + 1);
    ebb__store_close(s);
}

/* ---- checkpoints in object stores (store_ckpt.h) ------------------------ */

struct ck_seen {
    int64_t seq[8];
    unsigned rank[8];
    char state[8][16], files[8][128], reason[8][64];
    int64_t upload_ms[8], durable_at[8];
    int n;
};

static int ck_collect(void *arg, const struct ebb__ckpt_row *r)
{
    struct ck_seen *c = arg;
    if (c->n == 8)
        return 99;
    c->seq[c->n] = r->seq;
    c->rank[c->n] = r->rank;
    snprintf(c->state[c->n], sizeof(c->state[0]), "%s", r->state);
    snprintf(c->files[c->n], sizeof(c->files[0]), "%s", r->files);
    snprintf(c->reason[c->n], sizeof(c->reason[0]), "%s", r->reason);
    c->upload_ms[c->n] = r->upload_ms;
    c->durable_at[c->n] = r->durable_at;
    c->n++;
    return 0;
}

static void checkpoint_keys_and_rows(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = open_ok(fx->db);
    sqlite3 *db = ebb_test_store_db(s);
    add_job(db, "j1", "running");
    add_job(db, "j2", "succeeded");
    char hex[65];
    int version = 0;
    assert_int_equal(ebb__store_ckpt_key_get(s, "j1", hex, &version), EBB_ENOTFOUND);
    const char *key = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    assert_int_equal(ebb__store_ckpt_key_put(s, "j1", key, 7), 0);
    assert_int_equal(ebb__store_ckpt_key_put(s, "j1", key, 8), EBB_EEXISTS);
    assert_int_equal(ebb__store_ckpt_key_put(s, "j2", "abc", 8), EBB_EDB); /* not 64 */
    assert_int_equal(ebb__store_ckpt_key_get(s, "j1", hex, &version), 0);
    assert_string_equal(hex, key);
    assert_int_equal(version, 1);

    struct ebb__ckpt_row r = {.job_id = "j1", .instance_token = "j1-a1", .store = "ckpt",
                              .name = "step-1", .kind = "directory", .state = "preparing",
                              .files = "[{\"path\":\"a\"}]", .encrypt = 1, .bytes = 10,
                              .created_at = 100};
    int64_t a = 0, b = 0, c = 0;
    assert_int_equal(ebb__store_ckpt_insert(s, &r, &a), 0);
    r.name = "step-2";
    assert_int_equal(ebb__store_ckpt_insert(s, &r, &b), 0);
    r.job_id = "j2";
    assert_int_equal(ebb__store_ckpt_insert(s, &r, &c), 0);
    assert_true(a > 0 && b > a && c > b);
    r.state = "nonsense";
    int64_t d = 0;
    assert_int_equal(ebb__store_ckpt_insert(s, &r, &d), EBB_EDB); /* CHECK */

    /* An update keeps what it is not given; durable_at sets the time. */
    assert_int_equal(ebb__store_ckpt_update(s, a, "completing", "[1]", NULL, 200, 0,
                                            1500, 700, 1), 0);
    assert_int_equal(ebb__store_ckpt_update(s, a, "durable", NULL, NULL, 300, 300,
                                            -1, -1, -1), 0);
    assert_int_equal(ebb__store_ckpt_update(s, c, "durable", NULL, NULL, 300, 300,
                                            -1, -1, -1), 0);
    assert_int_equal(ebb__store_ckpt_update(s, b, "failed", NULL, "too short", 300, 0,
                                            -1, -1, -1), 0);
    assert_int_equal(ebb__store_ckpt_update(s, 999, "failed", NULL, NULL, 1, 0, -1, -1,
                                            -1), EBB_ENOTFOUND);
    struct ck_seen seen = {0};
    assert_int_equal(ebb__store_ckpt_get(s, a, "j1", ck_collect, &seen), 0);
    assert_string_equal(seen.state[0], "durable");
    assert_string_equal(seen.files[0], "[1]");
    assert_int_equal(seen.upload_ms[0], 1500);
    assert_int_equal(seen.durable_at[0], 300);
    /* Another job's row is not found through this one. */
    assert_int_equal(ebb__store_ckpt_get(s, c, "j1", ck_collect, &seen), EBB_ENOTFOUND);

    memset(&seen, 0, sizeof(seen));
    assert_int_equal(ebb__store_ckpt_of_job(s, "j1", NULL, -1, ck_collect, &seen), 0);
    assert_int_equal(seen.n, 2);
    assert_int_equal(seen.seq[0], b); /* newest first */
    assert_string_equal(seen.reason[0], "too short");
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(ebb__store_ckpt_of_job(s, "j1", "durable", -1, ck_collect, &seen), 0);
    assert_int_equal(seen.n, 1);

    /* In flight: none now; with durable_of_ended, j2's durable one. */
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(ebb__store_ckpt_open(s, 0, ck_collect, &seen), 0);
    assert_int_equal(seen.n, 0);
    assert_int_equal(ebb__store_ckpt_open(s, 1, ck_collect, &seen), 0);
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.seq[0], c);

    /* An instance may run until its row says it ended; an unknown one
     * has ended. */
    exec_ok(db, "INSERT INTO instances (token, job_id, provider, region, zone,"
                " instance_type, market, state, requested_at) VALUES ('j1-a1', 'j1',"
                " 'local', 'r', 'z', 't', 'spot', 'running', 1)");
    assert_int_equal(ebb__store_ckpt_instance_ended(s, "j1-a1"), 0);
    exec_ok(db, "UPDATE instances SET state = 'terminated' WHERE token = 'j1-a1'");
    assert_int_equal(ebb__store_ckpt_instance_ended(s, "j1-a1"), 1);
    assert_int_equal(ebb__store_ckpt_instance_ended(s, "nosuch"), 1);
    ebb__store_close(s);
}

/* A gang's ranks each store their part of a checkpoint under one name:
 * each row keeps its rank, and a read by rank sees that rank's rows only. */
static void checkpoint_rows_keep_their_rank(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = open_ok(fx->db);
    add_job(ebb_test_store_db(s), "g1", "running");
    struct ebb__ckpt_row r = {.job_id = "g1", .instance_token = "g1-a1", .store = "ckpt",
                              .name = "step-1", .kind = "directory", .state = "durable",
                              .files = "[]", .encrypt = 0, .bytes = 10,
                              .created_at = 100};
    int64_t r0 = 0, r1 = 0, r1b = 0;
    assert_int_equal(ebb__store_ckpt_insert(s, &r, &r0), 0);
    r.rank = 1;
    assert_int_equal(ebb__store_ckpt_insert(s, &r, &r1), 0);
    r.name = "step-2";
    assert_int_equal(ebb__store_ckpt_insert(s, &r, &r1b), 0);

    struct ck_seen seen = {0};
    assert_int_equal(ebb__store_ckpt_get(s, r1, "g1", ck_collect, &seen), 0);
    assert_int_equal(seen.rank[0], 1);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(ebb__store_ckpt_of_job(s, "g1", "durable", 1, ck_collect, &seen), 0);
    assert_int_equal(seen.n, 2);
    assert_int_equal(seen.seq[0], r1b);
    assert_int_equal(seen.seq[1], r1);
    assert_int_equal(seen.rank[0] + seen.rank[1], 2);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(ebb__store_ckpt_of_job(s, "g1", "durable", 0, ck_collect, &seen), 0);
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.seq[0], r0);
    assert_int_equal(seen.rank[0], 0);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(ebb__store_ckpt_of_job(s, "g1", "durable", 2, ck_collect, &seen), 0);
    assert_int_equal(seen.n, 0);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(ebb__store_ckpt_of_job(s, "g1", NULL, -1, ck_collect, &seen), 0);
    assert_int_equal(seen.n, 3);
    ebb__store_close(s);
}

/* Version 14 keeps jobs' checkpoint transfer rates: a job stored before it
 * has none (the engine's defaults), one put is read back, replaced by the
 * next, and a negative rate is refused. */
static void version_13_jobs_have_no_rates(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = NULL;
    char err[512];
    assert_int_equal(ebb__store_open_at_version(fx->db, 13, &s, err, sizeof(err)), 0);
    add_job(ebb_test_store_db(s), "j-old", "running");
    ebb__store_close(s);

    s = open_ok(fx->db);
    struct ebb__transfer_rates r = {.up_bytes_per_s = 7};
    assert_int_equal(ebb__store_rates_get(s, "j-old", &r), EBB_ENOTFOUND);
    assert_int_equal(r.up_bytes_per_s, 0);
    const struct ebb__transfer_rates a = {100000000, 0, 20000}, b = {90000000, 5, 0};
    assert_int_equal(ebb__store_rates_put(s, "j-old", &a, 10), 0);
    assert_int_equal(ebb__store_rates_get(s, "j-old", &r), 0);
    assert_memory_equal(&r, &a, sizeof(r));
    assert_int_equal(ebb__store_rates_put(s, "j-old", &b, 20), 0);
    assert_int_equal(ebb__store_rates_get(s, "j-old", &r), 0);
    assert_memory_equal(&r, &b, sizeof(r));
    const struct ebb__transfer_rates bad = {-1, 0, 0};
    assert_true(ebb__store_rates_put(s, "j-old", &bad, 30) < 0);
    assert_int_equal(ebb__store_rates_get(s, "j-old", &r), 0);
    assert_memory_equal(&r, &b, sizeof(r));
    ebb__store_close(s);
}

/* Version 13 gives stored_checkpoints a rank: rows stored before it are
 * rank 0 (a single instance's), and a rank is never negative. */
static void version_12_checkpoints_migrate_to_rank_0(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = NULL;
    char err[512];
    assert_int_equal(ebb__store_open_at_version(fx->db, 12, &s, err, sizeof(err)), 0);
    sqlite3 *db = ebb_test_store_db(s);
    add_job(db, "j-old", "running");
    exec_ok(db, "INSERT INTO stored_checkpoints (job_id, instance_token, store, name,"
                " kind, state, files, encrypt, bytes, created_at, updated_at) VALUES"
                " ('j-old', 't', 'ckpt', 'step-1', 'file', 'durable', '[]', 0, 5, 1, 1)");
    assert_int_not_equal(sqlite3_exec(db, "SELECT rank FROM stored_checkpoints", NULL,
                                      NULL, NULL),
                         SQLITE_OK);
    ebb__store_close(s);

    s = open_ok(fx->db);
    int v = -1;
    assert_int_equal(ebb__store_schema_version(s, &v), 0);
    assert_int_equal(v, EBB__STORE_SCHEMA_LATEST);
    db = ebb_test_store_db(s);
    assert_int_equal(query_i64(db, "SELECT rank FROM stored_checkpoints"), 0);
    struct ck_seen seen = {0};
    assert_int_equal(ebb__store_ckpt_of_job(s, "j-old", "durable", 0, ck_collect, &seen),
                     0);
    assert_int_equal(seen.n, 1);
    assert_int_not_equal(sqlite3_exec(db, "UPDATE stored_checkpoints SET rank = -1",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
    ebb__store_close(s);
}

struct wd_seen {
    char sha[4][65];
    int n;
};

static int wd_collect(void *arg, const char *store, const char *sha)
{
    struct wd_seen *w = arg;
    assert_string_equal(store, "ckpt");
    snprintf(w->sha[w->n], sizeof(w->sha[0]), "%s", sha);
    return ++w->n == 4;
}

/* Schema 10: the workdir secret, stored tars, each job's tar, and which
 * tars no job that has not ended names. */
static void workdir_rows(void **state)
{
    struct fixture *fx = *state;
    struct ebb__store *s = open_ok(fx->db);
    sqlite3 *db = ebb_test_store_db(s);
    add_job(db, "j1", "running");
    add_job(db, "j2", "succeeded");
    char hex[65];
    const char *secret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    assert_int_equal(ebb__store_workdir_secret_get(s, hex), EBB_ENOTFOUND);
    assert_int_equal(ebb__store_workdir_secret_put(s, secret, 5), 0);
    assert_int_not_equal(ebb__store_workdir_secret_put(s, secret, 6), 0); /* one only */
    assert_int_equal(ebb__store_workdir_secret_get(s, hex), 0);
    assert_string_equal(hex, secret);

    const char *a = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const char *b = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    const char *c = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc";
    int64_t size = 0, stored = 0;
    assert_int_equal(ebb__store_workdir_stored(s, "ckpt", a, &size, &stored), EBB_ENOTFOUND);
    assert_int_equal(ebb__store_workdir_stored_put(s, "ckpt", a, 100, 196, 10), 0);
    assert_int_equal(ebb__store_workdir_stored_put(s, "ckpt", b, 100, 196, 10), 0);
    assert_int_equal(ebb__store_workdir_stored_put(s, "ckpt", c, 100, 196, 10), 0);
    assert_int_equal(ebb__store_workdir_stored_put(s, "ckpt", c, 100, 50, 10), EBB_EDB);
    assert_int_equal(ebb__store_workdir_stored(s, "ckpt", a, &size, &stored), 0);
    assert_int_equal(size, 100);
    assert_int_equal(stored, 196);
    assert_int_equal(ebb__store_workdir_stored(s, "other", a, &size, &stored),
                     EBB_ENOTFOUND);

    struct ebb__job_workdir w = {.store = "ckpt", .size = 100, .stored_size = 196};
    snprintf(w.sha256, sizeof(w.sha256), "%s", a);
    assert_int_equal(ebb__store_job_workdir_put(s, "j1", &w), 0);
    snprintf(w.sha256, sizeof(w.sha256), "%s", b);
    assert_int_equal(ebb__store_job_workdir_put(s, "j2", &w), 0);
    struct ebb__job_workdir got;
    assert_int_equal(ebb__store_job_workdir_get(s, "j1", &got), 0);
    assert_string_equal(got.store, "ckpt");
    assert_string_equal(got.sha256, a);
    assert_int_equal(got.stored_size, 196);
    assert_int_equal(ebb__store_job_workdir_get(s, "j3", &got), EBB_ENOTFOUND);

    /* a: named by running j1, kept; b: only by ended j2; c: by none but
     * used lately. */
    assert_int_equal(ebb__store_workdir_touch(s, "ckpt", c, 50), 0);
    struct wd_seen seen = {0};
    assert_int_equal(ebb__store_workdir_unused(s, 20, 10, wd_collect, &seen), 0);
    assert_int_equal(seen.n, 1);
    assert_string_equal(seen.sha[0], b);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(ebb__store_workdir_unused(s, 60, 10, wd_collect, &seen), 0);
    assert_int_equal(seen.n, 2);
    assert_string_equal(seen.sha[0], b); /* least lately used first */
    assert_string_equal(seen.sha[1], c);
    assert_int_equal(ebb__store_workdir_forget(s, "ckpt", b), 0);
    assert_int_equal(ebb__store_workdir_stored(s, "ckpt", b, &size, &stored), EBB_ENOTFOUND);
    ebb__store_close(s);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(fresh_open_is_latest_and_wal),
        T(version_1_file_migrates_keeping_rows),
        T(too_new_file_is_refused_untouched),
        T(garbage_and_foreign_files_are_refused),
        T(put_price_twice_is_a_no_op),
        T(latest_prices_newest_per_series_with_filter),
        T(cursors_are_per_series),
        T(version_5_cursors_become_per_series),
        T(job_events_are_append_only),
        T(transactions_commit_and_roll_back),
        T(survives_sigkill_at_random_moments),
        T(group_commit_batches_and_scopes_rollbacks),
        T(checkpoints_run_on_another_connection),
        T(checkpoint_keys_and_rows),
        T(checkpoint_rows_keep_their_rank),
        T(version_12_checkpoints_migrate_to_rank_0),
        T(version_13_jobs_have_no_rates),
        T(workdir_rows),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
