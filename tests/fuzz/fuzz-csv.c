/* Fuzz target: CSV files (base/csv.c) and the three readers built on it
 * that take files from users: price and availability traces (base/
 * trace.c; `ebb backtest`, `ebb forecast` and the sim provider's market
 * load them) and the instance catalog (market/catalog.c). The readers
 * take a path, so the input is written to a memfd once per run and each
 * loads it by its /proc/self/fd name; the header decides which of them
 * accepts it.
 *
 * Invariants: every error says where; the CSV reader's records come in
 * line order and have at least one field; a loaded trace has at least one
 * row per series, rows strictly increasing in time, series sorted so that
 * each is found under its own key, and first_at/last_at bounding them all;
 * every catalog entry is what a lookup under its own key returns. */
#include <sys/mman.h>
#include <unistd.h>

#include <ebb/trace.h>

#include "base/csv.h"
#include "fuzz.h"
#include "market/catalog.h"

static void check_csv(const uint8_t *data, size_t size)
{
    struct ebb__csv c;
    if (ebb__csv_open_mem(&c, "fuzz.csv", (const char *)data, size) != 0)
        return;
    int last_line = 0;
    for (;;) {
        struct ebb_diag d;
        ebb_diag_clear(&d);
        int rc = ebb__csv_next(&c, &d);
        if (rc <= 0) {
            FUZZ_CHECK(rc == 0 || d.msg[0] != '\0');
            break;
        }
        FUZZ_CHECK(c.n_field >= 1 && c.line > last_line);
        last_line = c.line;
    }
    ebb__csv_close(&c);
}

static void check_price(const char *path)
{
    struct ebb_price_trace *t = NULL;
    struct ebb_diag d;
    ebb_diag_clear(&d);
    if (ebb_price_trace_load(path, &t, &d) != 0) {
        FUZZ_CHECK(t == NULL && d.msg[0] != '\0');
        return;
    }
    FUZZ_CHECK(t->n_series >= 1 && t->first_at <= t->last_at);
    for (size_t i = 0; i < t->n_series; i++) {
        const struct ebb_price_series *s = &t->series[i];
        FUZZ_CHECK(s->n >= 1);
        FUZZ_CHECK(s->at[0] >= t->first_at && s->at[s->n - 1] <= t->last_at);
        for (size_t j = 1; j < s->n; j++)
            FUZZ_CHECK(s->at[j] > s->at[j - 1]);
        FUZZ_CHECK(ebb_price_trace_find(t, s->provider, s->region, s->zone,
                                        s->instance_type, s->product) ==
                   (ssize_t)i);
        ebb_micros p;
        FUZZ_CHECK(ebb_price_series_at(s, s->at[s->n - 1], &p) == 0 &&
                   p == s->price[s->n - 1]);
        FUZZ_CHECK(ebb_price_series_next_change(s, s->at[0]) ==
                   (s->n > 1 ? s->at[1] : INT64_MAX));
    }
    ebb_price_trace_free(t);
}

static void check_avail(const char *path)
{
    struct ebb_avail_trace *t = NULL;
    struct ebb_diag d;
    ebb_diag_clear(&d);
    if (ebb_avail_trace_load(path, &t, &d) != 0) {
        FUZZ_CHECK(t == NULL && d.msg[0] != '\0');
        return;
    }
    FUZZ_CHECK(t->n_series >= 1 && t->first_at <= t->last_at);
    for (size_t i = 0; i < t->n_series; i++) {
        const struct ebb_avail_series *s = &t->series[i];
        FUZZ_CHECK(s->n >= 1);
        for (size_t j = 0; j < s->n; j++) {
            FUZZ_CHECK(s->available[j] >= 0);
            FUZZ_CHECK(j == 0 || s->at[j] > s->at[j - 1]);
        }
        FUZZ_CHECK(ebb_avail_trace_find(t, s->provider, s->zone,
                                        s->instance_type) == (ssize_t)i);
    }
    ebb_avail_trace_free(t);
}

static void check_catalog(const char *path)
{
    struct ebb__catalog *c = NULL;
    struct ebb_diag d;
    ebb_diag_clear(&d);
    if (ebb__catalog_load(path, &c, &d) != 0) {
        FUZZ_CHECK(c == NULL && d.msg[0] != '\0');
        return;
    }
    for (size_t i = 0; i < c->n_entry; i++) {
        const struct ebb__catalog_entry *e = &c->entry[i];
        FUZZ_CHECK(e->speed > 0);
        FUZZ_CHECK(ebb__catalog_find(c, e->provider, e->region,
                                     e->instance_type) == e);
    }
    ebb__catalog_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_csv(data, size);
    static int fd = -1;
    if (fd < 0)
        fd = memfd_create("fuzz-csv", 0);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(ftruncate(fd, 0) == 0);
    FUZZ_CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    check_price(path);
    check_avail(path);
    check_catalog(path);
    return 0;
}
