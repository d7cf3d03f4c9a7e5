/* The store's prices: observations as providers report them, the cursors
 * polls resume from, and the queries over them (latest per series, the
 * history of each, one series' price steps). Their SQL is in store_sql.h. */
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

/* The filter variants of LATEST_PRICES and PRICE_HISTORY (store_sql.h):
 * the variant's number is its filter fields' bits. */
#define LATEST_PROVIDER 1
#define LATEST_TYPE 2
#define LATEST_ZONE 4
_Static_assert(EBB__SQL_LATEST_PRICES_7 - EBB__SQL_LATEST_PRICES_0 == 7 &&
                   EBB__SQL_PRICE_HISTORY_7 - EBB__SQL_PRICE_HISTORY_0 == 7,
               "store_sql.h keeps each query's eight variants in order");

static const char *market_name(enum ebb_market m)
{
    return m == EBB_MARKET_ON_DEMAND ? "on-demand" : "spot";
}

static int put_one(struct ebb__store *s, sqlite3_stmt *st,
                   const char *provider, const struct ebb_price *p)
{
    if (p == NULL || p->instance_type == NULL || p->instance_type[0] == '\0')
        return ebb__store_invalid(s, "price without an instance type");
    if (p->price_per_hour < 0)
        return ebb__store_invalid(s, "negative price");
    if (p->market != EBB_MARKET_SPOT && p->market != EBB_MARKET_ON_DEMAND)
        return ebb__store_invalid(s, "unknown market");
    const char *cur = p->currency != NULL ? p->currency : "USD";
    if (strlen(cur) != 3)
        return ebb__store_invalid(s, "currency is not a three-letter code");

    /* A price that names its market (the sim replaying "aws") is stored
     * under that name; otherwise under the reporting plugin's. */
    int r = ebb__store_bind_text(s, st, 1, p->provider != NULL ? p->provider
                                                               : provider);
    if (r == 0)
        r = ebb__store_bind_text(s, st, 2, p->region != NULL ? p->region : "");
    if (r == 0)
        r = ebb__store_bind_text(s, st, 3, p->zone != NULL ? p->zone : "");
    if (r == 0)
        r = ebb__store_bind_text(s, st, 4, p->instance_type);
    if (r == 0)
        r = ebb__store_bind_text(s, st, 5, p->product != NULL ? p->product : "");
    if (r == 0)
        r = ebb__store_bind_text(s, st, 6, market_name(p->market));
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 7, p->at);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 8, p->price_per_hour);
    if (r == 0)
        r = ebb__store_bind_text(s, st, 9, cur);
    if (r == 0)
        r = ebb__store_run(s, st);
    else
        sqlite3_clear_bindings(st);
    if (r < 0)
        return r;
    return sqlite3_changes(s->db) > 0 ? 1 : 0;
}

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

/* One series and the newest time a batch holds of it. */
struct cursor {
    const char *provider, *region, *zone, *type, *product;
    ebb_time_ms at;
};

static struct cursor cursor_of(const char *provider, const struct ebb_price *p)
{
    return (struct cursor){
        .provider = p->provider != NULL ? p->provider : provider,
        .region = or_empty(p->region),
        .zone = or_empty(p->zone),
        .type = p->instance_type,
        .product = or_empty(p->product),
        .at = p->at,
    };
}

static int same_series(const struct cursor *a, const struct cursor *b)
{
    return strcmp(a->provider, b->provider) == 0 && strcmp(a->region, b->region) == 0 &&
           strcmp(a->zone, b->zone) == 0 && strcmp(a->type, b->type) == 0 &&
           strcmp(a->product, b->product) == 0;
}

/* Where polls of the series resume: moved forward to c->at. */
static int advance_cursor(struct ebb__store *s, const struct cursor *c)
{
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_PUT_CURSOR);
    if (st == NULL)
        return EBB_EDB;
    const char *text[5] = {c->provider, c->region, c->zone, c->type, c->product};
    int r = 0;
    for (int i = 0; r == 0 && i < 5; i++)
        r = ebb__store_bind_text(s, st, i + 1, text[i]);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 6, c->at);
    if (r == 0)
        return ebb__store_run(s, st);
    sqlite3_clear_bindings(st);
    return r;
}

int ebb__store_put_price(struct ebb__store *s, const char *provider,
                         const struct ebb_price *p)
{
    if (provider == NULL || provider[0] == '\0')
        return ebb__store_invalid(s, "price without a provider");
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_PUT_PRICE);
    if (st == NULL)
        return EBB_EDB;
    int own = !ebb__store_in_transaction(s);
    int r = own ? ebb__store_begin(s) : 0;
    int inserted = r == 0 ? put_one(s, st, provider, p) : r;
    struct cursor c = inserted >= 0 ? cursor_of(provider, p) : (struct cursor){0};
    r = inserted < 0 ? inserted : advance_cursor(s, &c);
    if (own) {
        if (r == 0)
            r = ebb__store_commit(s);
        if (r != 0)
            ebb__store_rollback(s);
    }
    return r < 0 ? r : inserted;
}

/* The newest time of a batch per series. A batch holds few series and
 * usually lists each one's prices together, so the last series found is
 * tried first and the rest searched in order. */
static int note_cursor(struct cursor **c, size_t *n, size_t *cap, size_t *last,
                       const struct cursor *one)
{
    size_t i = *last;
    if (i >= *n || !same_series(&(*c)[i], one)) {
        i = 0;
        while (i < *n && !same_series(&(*c)[i], one))
            i++;
    }
    if (i < *n) {
        if (one->at > (*c)[i].at)
            (*c)[i].at = one->at;
        *last = i;
        return 0;
    }
    if (*n == *cap) {
        size_t grown_cap = *cap ? *cap * 2 : 8;
        struct cursor *grown = realloc(*c, grown_cap * sizeof(*grown));
        if (grown == NULL)
            return EBB_ENOMEM;
        *c = grown;
        *cap = grown_cap;
    }
    *last = *n;
    (*c)[(*n)++] = *one;
    return 0;
}

int ebb__store_put_prices(struct ebb__store *s, const char *provider,
                          const struct ebb_price *p, size_t n,
                          size_t *inserted)
{
    if (inserted != NULL)
        *inserted = 0;
    if (provider == NULL || provider[0] == '\0')
        return ebb__store_invalid(s, "price without a provider");
    if (n == 0)
        return 0;
    if (p == NULL)
        return ebb__store_invalid(s, "no prices");
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_PUT_PRICE);
    if (st == NULL)
        return EBB_EDB;

    int own = !ebb__store_in_transaction(s);
    int r = own ? ebb__store_begin(s) : 0;
    size_t count = 0;
    struct cursor *cursors = NULL;
    size_t n_cursors = 0, cap_cursors = 0, last = 0;
    for (size_t i = 0; r == 0 && i < n; i++) {
        int one = put_one(s, st, provider, &p[i]);
        if (one < 0)
            r = one;
        else
            count += (size_t)one;
        struct cursor c = r == 0 ? cursor_of(provider, &p[i]) : (struct cursor){0};
        if (r == 0)
            r = note_cursor(&cursors, &n_cursors, &cap_cursors, &last, &c);
    }
    for (size_t i = 0; r == 0 && i < n_cursors; i++)
        r = advance_cursor(s, &cursors[i]);
    free(cursors);
    if (own) {
        if (r == 0)
            r = ebb__store_commit(s);
        if (r < 0) {
            /* Keep the first failure's words, not the rollback's. */
            char why[sizeof(s->errmsg)];
            memcpy(why, s->errmsg, sizeof(why));
            ebb__store_rollback(s);
            memcpy(s->errmsg, why, sizeof(why));
        }
    }
    if (r == 0 && inserted != NULL)
        *inserted = count;
    return r;
}

/* Binds `v`, or NULL (which the cursor query reads as "any"). */
static int bind_or_null(struct ebb__store *s, sqlite3_stmt *st, int i, const char *v)
{
    if (v != NULL)
        return ebb__store_bind_text(s, st, i, v);
    int rc = sqlite3_bind_null(st, i);
    return rc == SQLITE_OK ? 0 : ebb__store_fail(s, rc);
}

int ebb__store_price_cursor(struct ebb__store *s, const char *provider,
                            const struct ebb_series_key *key, ebb_time_ms *out)
{
    *out = 0;
    if (provider == NULL)
        return ebb__store_invalid(s, "no provider");
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_PRICE_CURSOR);
    if (st == NULL)
        return EBB_EDB;
    const struct ebb_series_key any = {0};
    if (key == NULL)
        key = &any;
    const char *v[4] = {key->region, key->zone, key->instance_type, key->product};
    int r = ebb__store_bind_text(s, st, 1, provider);
    for (int i = 0; r == 0 && i < 4; i++)
        r = bind_or_null(s, st, i + 2, v[i]);
    if (r < 0) {
        sqlite3_clear_bindings(st);
        return r;
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        *out = sqlite3_column_int64(st, 0);
    return ebb__store_finish(s, st, rc);
}

/* Binds `v` to the named parameter if this variant has it. */
static int bind_named(struct ebb__store *s, sqlite3_stmt *st,
                      const char *name, const char *v)
{
    int i = sqlite3_bind_parameter_index(st, name);
    return i > 0 ? ebb__store_bind_text(s, st, i, v) : 0;
}

/* Prepares the variant of `base` (LATEST_PRICES_0 or PRICE_HISTORY_0)
 * for the fields `f` has and binds them. NULL on failure, with the
 * bindings cleared. */
static sqlite3_stmt *filtered_stmt(struct ebb__store *s, enum ebb__sql base,
                                   const struct ebb__price_filter *f)
{
    int variant = 0;
    if (f != NULL && f->provider != NULL)
        variant |= LATEST_PROVIDER;
    if (f != NULL && f->instance_type != NULL)
        variant |= LATEST_TYPE;
    if (f != NULL && f->zone != NULL)
        variant |= LATEST_ZONE;
    sqlite3_stmt *st = ebb__store_stmt(s, (enum ebb__sql)(base + variant));
    if (st == NULL)
        return NULL;
    int r = 0;
    if (f != NULL) {
        r = bind_named(s, st, ":provider", f->provider);
        if (r == 0)
            r = bind_named(s, st, ":type", f->instance_type);
        if (r == 0)
            r = bind_named(s, st, ":zone", f->zone);
    }
    if (r < 0) {
        sqlite3_clear_bindings(st);
        return NULL;
    }
    return st;
}

/* The caller's callback and its argument, for the adapters below. */
struct price_walk {
    union {
        ebb__price_row_cb rows;
        ebb__price_step_cb steps;
    } cb;
    void *arg;
};

/* A row whose columns are provider, region, zone, instance type, product,
 * market, time, price, currency, to the caller as a price row. */
static int price_row(sqlite3_stmt *st, void *walk)
{
    const struct price_walk *w = walk;
    struct ebb__price_row row = {
        .provider = ebb__store_col_text(st, 0),
        .price =
            {
                .region = ebb__store_col_text(st, 1),
                .zone = ebb__store_col_text(st, 2),
                .instance_type = ebb__store_col_text(st, 3),
                .product = ebb__store_col_text(st, 4),
                .market = strcmp(ebb__store_col_text(st, 5), "on-demand") == 0
                              ? EBB_MARKET_ON_DEMAND
                              : EBB_MARKET_SPOT,
                .at = sqlite3_column_int64(st, 6),
                .price_per_hour = sqlite3_column_int64(st, 7),
                .currency = ebb__store_col_text(st, 8),
            },
    };
    return w->cb.rows(w->arg, &row);
}

int ebb__store_latest_prices(struct ebb__store *s,
                             const struct ebb__price_filter *f,
                             ebb__price_row_cb cb, void *arg)
{
    if (cb == NULL)
        return ebb__store_invalid(s, "no callback");
    sqlite3_stmt *st = filtered_stmt(s, EBB__SQL_LATEST_PRICES_0, f);
    if (st == NULL)
        return EBB_EDB;
    struct price_walk w = {.cb.rows = cb, .arg = arg};
    return ebb__store_each(s, st, price_row, &w);
}

int ebb__store_price_history(struct ebb__store *s,
                             const struct ebb__price_filter *f,
                             ebb_time_ms since, ebb_time_ms until,
                             ebb__price_row_cb cb, void *arg)
{
    if (cb == NULL)
        return ebb__store_invalid(s, "no callback");
    if (since > until)
        return ebb__store_invalid(s, "price history window ends before it starts");
    sqlite3_stmt *st = filtered_stmt(s, EBB__SQL_PRICE_HISTORY_0, f);
    if (st == NULL)
        return EBB_EDB;
    int r = ebb__store_bind_i64(s, st, sqlite3_bind_parameter_index(st, ":since"), since);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, sqlite3_bind_parameter_index(st, ":until"), until);
    if (r < 0) {
        sqlite3_clear_bindings(st);
        return r;
    }
    struct price_walk w = {.cb.rows = cb, .arg = arg};
    return ebb__store_each(s, st, price_row, &w);
}

/* A row of PRICE_STEPS (time, lowest price, currency), to the caller. */
static int price_step(sqlite3_stmt *st, void *walk)
{
    const struct price_walk *w = walk;
    struct ebb__price_step step = {
        .at = sqlite3_column_int64(st, 0),
        .price = sqlite3_column_int64(st, 1),
        .currency = ebb__store_col_text(st, 2),
    };
    return w->cb.steps(w->arg, &step);
}

int ebb__store_price_steps(struct ebb__store *s,
                           const struct ebb__price_series *series,
                           ebb_time_ms until, ebb__price_step_cb cb, void *arg)
{
    if (cb == NULL || series == NULL)
        return ebb__store_invalid(s, "no series or no callback");
    sqlite3_stmt *st = ebb__store_stmt(s, EBB__SQL_PRICE_STEPS);
    if (st == NULL)
        return EBB_EDB;
    const char *texts[] = {series->provider, series->region, series->zone,
                           series->instance_type, market_name(series->market)};
    int r = 0;
    for (int i = 0; r == 0 && i < 5; i++)
        r = ebb__store_bind_text(s, st, i + 1, texts[i]);
    if (r == 0)
        r = ebb__store_bind_i64(s, st, 6, until);
    if (r < 0) {
        sqlite3_clear_bindings(st);
        return r;
    }
    struct price_walk w = {.cb.steps = cb, .arg = arg};
    return ebb__store_each(s, st, price_step, &w);
}
