/* bench-ingest [POINTS]: the aws provider ingests POINTS spot prices
 * (default 1,000,000) from fake EC2 on 127.0.0.1, which runs on a thread
 * of its own as the cloud would, paged like EC2 (1,000 a page, two
 * regions), and the engine's path stores them with
 * ebb__store_put_prices(). Prints wall and CPU time and points/s for the
 * poll (HTTP, SigV4, expat), the store, and end to end, then for a plain
 * SQLite insert loop of the same rows (one prepared INSERT, one
 * transaction, a WAL file like the store's) into a table with the store's
 * primary key and into one without a key, and the ratios. Figures only;
 * nothing passes or fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>
#include <uv.h>

#include "aws_fixture.h"
#include "store/store.h"

static const char *const yaml =
    "regions: [us-east-1, us-west-2]\n"
    "instance_types: [p3.2xlarge, g5.xlarge]\n"
    "endpoint: @URL\n";

/* Seconds of CPU this thread used: ebb's side only (fake EC2 runs on a
 * thread of its own, as the cloud would). On a shared, loaded machine wall
 * time mostly measures the wait for a core, so both are printed. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct run {
    int done, status;
    struct ebb__store *store;
    struct ebb_price *copy; /* for the baseline: the same rows */
    size_t n;
    uint64_t t_poll_end, t_store_end;
    double cpu_poll_end, cpu_store_end;
    size_t inserted;
};

static void on_prices(void *arg, int status, const struct ebb_price *p, size_t n)
{
    struct run *r = arg;
    r->t_poll_end = uv_hrtime();
    r->cpu_poll_end = cpu_now();
    r->status = status;
    r->n = n;
    if (status == 0 &&
        ebb__store_put_prices(r->store, "aws", p, n, &r->inserted) != 0)
        r->status = EBB_EDB;
    r->t_store_end = uv_hrtime();
    r->cpu_store_end = cpu_now();
    /* Keep the rows for the plain insert loop; their strings belong to
     * the poll (and "USD" to the module, unloaded before the loop runs). */
    r->copy = malloc((n ? n : 1) * sizeof(*r->copy));
    for (size_t i = 0; r->copy != NULL && i < n; i++) {
        r->copy[i] = p[i];
        r->copy[i].region = strdup(p[i].region);
        r->copy[i].zone = strdup(p[i].zone);
        r->copy[i].instance_type = strdup(p[i].instance_type);
        r->copy[i].product = strdup(p[i].product);
        r->copy[i].currency = strdup(p[i].currency);
    }
    r->done = 1;
}

/* The two baselines: the store's own table shape (its primary key, the
 * key that dedupes observations), and a table with no key at all. */
static const char *const keyed_table =
    "CREATE TABLE prices (provider TEXT NOT NULL, region TEXT NOT NULL,"
    " zone TEXT NOT NULL, instance_type TEXT NOT NULL, product TEXT NOT NULL,"
    " market TEXT NOT NULL, observed_at INTEGER NOT NULL,"
    " price_micros INTEGER NOT NULL, currency TEXT NOT NULL,"
    " PRIMARY KEY (provider, region, zone, instance_type, product, market,"
    "  observed_at)) WITHOUT ROWID";
static const char *const keyless_table =
    "CREATE TABLE prices (provider TEXT, region TEXT, zone TEXT,"
    " instance_type TEXT, product TEXT, market TEXT,"
    " observed_at INTEGER, price_micros INTEGER, currency TEXT)";

struct timing {
    double wall, cpu;
};

static struct timing plain_insert(const char *path, const char *table,
                                  const struct ebb_price *p, size_t n)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    unlink(path);
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, table, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO prices VALUES (?,?,?,?,?,?,?,?,?)", -1,
                           &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "baseline: %s\n", sqlite3_errmsg(db));
        exit(1);
    }
    uint64_t t0 = uv_hrtime();
    double c0 = cpu_now();
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_text(st, 1, "aws", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, p[i].region, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, p[i].zone, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, p[i].instance_type, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, p[i].product, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, "spot", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, p[i].at);
        sqlite3_bind_int64(st, 8, p[i].price_per_hour);
        sqlite3_bind_text(st, 9, p[i].currency, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) {
            fprintf(stderr, "baseline: %s\n", sqlite3_errmsg(db));
            exit(1);
        }
        sqlite3_reset(st);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    struct timing t = {(double)(uv_hrtime() - t0) / 1e9, cpu_now() - c0};
    sqlite3_finalize(st);
    sqlite3_close(db);
    return t;
}

int main(int argc, char **argv)
{
    size_t points = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    if (points < 2) {
        fprintf(stderr, "usage: bench-ingest [POINTS >= 2]\n");
        return 2;
    }
    if (getenv("EBB_PLUGIN_PATH") == NULL)
        setenv("EBB_PLUGIN_PATH", EBB_BENCH_BUILD_ROOT, 1);
    setenv("AWS_ACCESS_KEY_ID", FX_AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", FX_SECRET, 1);
    unsetenv("AWS_SESSION_TOKEN");

    char dir[] = "/tmp/ebb-bench-ingest-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    char store_path[128], plain_path[128];
    snprintf(store_path, sizeof(store_path), "%s/ebb.db", dir);
    snprintf(plain_path, sizeof(plain_path), "%s/plain.db", dir);

    struct aws_fx f;
    if (aws_fx_open_threaded(&f, FX_SECRET, NULL, yaml) != 0) {
        fprintf(stderr, "cannot create the aws provider\n");
        return 1;
    }
    /* Half the points in each region, one a minute per series, ending now. */
    ebb_time_ms now = f.lent.now(f.lent.ctx);
    size_t per_region = points / 2;
    ebb_dur_ms span = (ebb_dur_ms)(per_region / 6 + 1) * EBB_MS_PER_MINUTE;
    fake_ec2_set_prices(f.ec2, per_region, now - span, EBB_MS_PER_MINUTE);
    f.last_price_at = now - span;
    aws_fx_start_fake_thread(&f);

    struct run r = {0};
    char err[256];
    if (ebb__store_open(store_path, &r.store, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    uint64_t t0 = uv_hrtime();
    double c0 = cpu_now();
    if (f.p->poll_prices(f.self, on_prices, &r) != 0 || !aws_fx_run(&f, &r.done, 600000) ||
        r.status != 0) {
        fprintf(stderr, "poll failed: %s\n", ebb_strerror(r.status));
        return 1;
    }
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    aws_fx_close(&f);
    ebb__store_close(r.store);

    struct timing poll = {(double)(r.t_poll_end - t0) / 1e9, r.cpu_poll_end - c0};
    struct timing store = {(double)(r.t_store_end - r.t_poll_end) / 1e9,
                           r.cpu_store_end - r.cpu_poll_end};
    struct timing total = {(double)(r.t_store_end - t0) / 1e9, r.cpu_store_end - c0};
    struct timing keyed = plain_insert(plain_path, keyed_table, r.copy, r.n);
    struct timing plain = plain_insert(plain_path, keyless_table, r.copy, r.n);
    double n = (double)r.n;
    printf("bench-ingest: %zu points (%zu new), %llu pages of up to 1000, 2 regions\n",
           r.n, r.inserted, (unsigned long long)st.price_pages);
    printf("  %-34s %9s %12s %9s %12s\n", "", "wall s", "points/s", "cpu s",
           "points/cpu-s");
    const struct {
        const char *name;
        struct timing t;
    } rows[] = {
        {"poll (HTTP, SigV4, XML)", poll},
        {"store (ebb__store_put_prices)", store},
        {"end to end", total},
        {"plain insert, store's key", keyed},
        {"plain insert, no key", plain},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        printf("  %-34s %9.3f %12.0f %9.3f %12.0f\n", rows[i].name, rows[i].t.wall,
               n / rows[i].t.wall, rows[i].t.cpu, n / rows[i].t.cpu);
    printf("  end to end / plain (store's key)   %9.2f %12s %9.2f\n",
           keyed.wall / total.wall, "", keyed.cpu / total.cpu);
    printf("  end to end / plain (no key)        %9.2f %12s %9.2f\n",
           plain.wall / total.wall, "", plain.cpu / total.cpu);

    for (size_t i = 0; i < r.n; i++) {
        free((char *)r.copy[i].region);
        free((char *)r.copy[i].zone);
        free((char *)r.copy[i].instance_type);
        free((char *)r.copy[i].product);
        free((char *)r.copy[i].currency);
    }
    free(r.copy);
    unlink(store_path);
    unlink(plain_path);
    char wal[160];
    snprintf(wal, sizeof(wal), "%s-wal", store_path);
    unlink(wal);
    snprintf(wal, sizeof(wal), "%s-shm", store_path);
    unlink(wal);
    snprintf(wal, sizeof(wal), "%s-wal", plain_path);
    unlink(wal);
    snprintf(wal, sizeof(wal), "%s-shm", plain_path);
    unlink(wal);
    rmdir(dir);
    return 0;
}
