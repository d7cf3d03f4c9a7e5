/* The spot price poll: DescribeSpotPriceHistory for every configured
 * region and instance type, one request at a time.
 *
 * Each series (region, instance type; the answer covers every zone)
 * resumes where the store's prices of that series end (host->price_cursor),
 * not where its region's do: a type added to the configuration, or one
 * whose last poll failed, is read from its own history. No read reaches
 * further back than `history`
 * (30 days by default: one request window, and what ECS keeps). The span
 * is read in windows of at most 30 days (the API's limit), each window
 * page by page: Offset starts at 0 and follows NextOffset while a page
 * brings rows and NextOffset moves forward. Every row yields the spot
 * price and OriginPrice, the pay-as-you-go price, as an on-demand price,
 * both in the Currency the answer names (CNY on the China site).
 *
 * A failing series is logged and skipped, the rest still polled, and the
 * poll completes with the first error alongside what it did read. What a
 * failed series had read in this poll is dropped (its pages may come in
 * any order), so its cursor stays and the next poll reads it again from
 * there. Refused credentials end the poll at once with EBB_EAUTH; the
 * host then stops polling.
 */
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "alibaba.h"

#define WINDOW_MS (30 * EBB_MS_PER_DAY)
#define PRODUCT "Linux/UNIX" /* os_type linux; the store's product */
#define MAX_PAGES 10000 /* per window: a guard against a server that loops */

struct row {
    size_t region, type;
    char zone[64];
    char currency[4];
    ebb_time_ms at;
    ebb_micros spot, origin;
};

struct ali_poll {
    struct ebb_op op;
    struct ali *a;
    ebb_prices_cb cb;
    void *arg;
    size_t region, type;
    size_t series_rows; /* rows[] before the current series' */
    ebb_time_ms start, window_start, now;
    long offset;
    int pages;
    int status; /* the first error met */
    struct row *rows;
    size_t n_rows, cap_rows;
    struct ali_rpc *rpc;
};

static void poll_free(struct ali_poll *p)
{
    ebb_op_remove(&p->op);
    free(p->rows);
    free(p);
}

static void poll_cancel(struct ebb_op *op)
{
    struct ali_poll *p = (struct ali_poll *)op;
    if (p->rpc != NULL)
        ali_rpc_cancel(p->rpc);
    ebb_prices_cb cb = p->cb;
    void *arg = p->arg;
    poll_free(p);
    cb(arg, EBB_ECANCELED, NULL, 0);
}

static void deliver(struct ali_poll *p, int status)
{
    struct ali *a = p->a;
    const struct ali_cfg *cfg = a->cfg;
    struct ebb_price *v = calloc(2 * p->n_rows + 1, sizeof(*v));
    struct ebb_shape *shapes = calloc(cfg->instance_types.n, sizeof(*shapes));
    int *has_shape = calloc(cfg->instance_types.n, sizeof(*has_shape));
    size_t n = 0;
    if (v == NULL || shapes == NULL || has_shape == NULL) {
        status = EBB_ENOMEM;
    } else {
        for (size_t t = 0; t < cfg->instance_types.n; t++)
            has_shape[t] = ali_shape_of(cfg->instance_types.items[t], &shapes[t]);
        for (size_t i = 0; i < p->n_rows; i++) {
            const struct row *r = &p->rows[i];
            struct ebb_price base = {
                .struct_size = sizeof(struct ebb_price),
                .region = cfg->regions.items[r->region],
                .zone = r->zone,
                .instance_type = cfg->instance_types.items[r->type],
                .product = PRODUCT,
                .at = r->at,
                .currency = r->currency,
                .capacity = -1,
                .shape = has_shape[r->type] ? &shapes[r->type] : NULL,
            };
            v[n] = base;
            v[n].market = EBB_MARKET_SPOT;
            v[n++].price_per_hour = r->spot;
            if (r->origin > 0) {
                v[n] = base;
                v[n].market = EBB_MARKET_ON_DEMAND;
                v[n++].price_per_hour = r->origin;
            }
        }
    }
    /* Off the list first (the callback may destroy the plugin); the rows
     * the prices point into live until the callback returns. */
    ebb_op_remove(&p->op);
    p->cb(p->arg, status, status == EBB_ENOMEM ? NULL : v,
          status == EBB_ENOMEM ? 0 : n);
    free(v);
    free(shapes);
    free(has_shape);
    free(p->rows);
    free(p);
}

static ebb_time_ms window_end(const struct ali_poll *p)
{
    ebb_time_ms end = p->window_start + WINDOW_MS;
    return end < p->now ? end : p->now;
}

/* Starts reading the current series: from its cursor, at most `history`
 * back. */
static void start_series(struct ali_poll *p)
{
    struct ali *a = p->a;
    const struct ebb_series_key key = {
        .struct_size = sizeof(struct ebb_series_key),
        .region = a->cfg->regions.items[p->region],
        .instance_type = a->cfg->instance_types.items[p->type],
        .product = PRODUCT,
    };
    ebb_time_ms oldest = p->now - a->cfg->history;
    ebb_time_ms last = a->host->price_cursor(a->host->ctx, &key);
    p->start = last > oldest ? last : oldest;
    if (p->start > p->now)
        p->start = p->now; /* a clock that went back: read nothing */
    /* ECS takes whole seconds. */
    p->start = p->start / EBB_MS_PER_SECOND * EBB_MS_PER_SECOND;
    p->window_start = p->start;
    p->series_rows = p->n_rows;
    p->offset = 0;
    p->pages = 0;
}

/* Moves to the next type, or the next region's first; 0 when all are
 * read. */
static int next_series(struct ali_poll *p)
{
    struct ali *a = p->a;
    if (++p->type == a->cfg->instance_types.n) {
        p->type = 0;
        if (++p->region == a->cfg->regions.n)
            return 0;
    }
    start_series(p);
    return 1;
}

static int request_page(struct ali_poll *p);

/* Requests the next page, or delivers what was read when it cannot. */
static void continue_with(struct ali_poll *p)
{
    int rc = request_page(p);
    if (rc != 0)
        deliver(p, p->status != 0 ? p->status : rc);
}

/* Moves to the next window or series; delivers when all are done. */
static void advance(struct ali_poll *p)
{
    p->offset = 0;
    p->pages = 0;
    if (window_end(p) < p->now) {
        p->window_start = window_end(p);
    } else if (!next_series(p)) {
        deliver(p, p->status);
        return;
    }
    continue_with(p);
}

/* The current series failed with `status`: what it read is dropped and
 * the next series read. */
static void series_failed(struct ali_poll *p, int status)
{
    if (p->status == 0)
        p->status = status;
    p->n_rows = p->series_rows;
    if (!next_series(p)) {
        deliver(p, p->status);
        return;
    }
    continue_with(p);
}

static int add_row(struct ali_poll *p, json_t *item, const char *currency)
{
    int ok_spot, ok_origin;
    struct row r = {.region = p->region, .type = p->type};
    r.spot = ali_json_micros(item, "SpotPrice", &ok_spot);
    r.origin = ali_json_micros(item, "OriginPrice", &ok_origin);
    if (!ok_origin)
        r.origin = 0;
    const char *zone = ali_json_str(item, "ZoneId");
    if (!ok_spot || ebb_parse_time(ali_json_str(item, "Timestamp"), &r.at) != 0 ||
        strlen(zone) >= sizeof(r.zone))
        return EBB_EPROTO;
    memcpy(r.zone, zone, strlen(zone) + 1);
    memcpy(r.currency, currency, 4);
    if (p->n_rows == p->cap_rows) {
        size_t cap = p->cap_rows ? p->cap_rows * 2 : 256;
        struct row *v = realloc(p->rows, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        p->rows = v;
        p->cap_rows = cap;
    }
    p->rows[p->n_rows++] = r;
    return 0;
}

/* The answer's Currency; when absent, what the site charges in: CNY for
 * mainland China regions, USD elsewhere. */
static void currency_of(json_t *body, const char *region, char out[4])
{
    const char *c = ali_json_str(body, "Currency");
    if (strlen(c) != 3)
        c = strncmp(region, "cn-", 3) == 0 ? "CNY" : "USD";
    memcpy(out, c, 4);
}

static void on_page(void *arg, int status, json_t *body, const char *code)
{
    struct ali_poll *p = arg;
    struct ali *a = p->a;
    p->rpc = NULL;
    if (status == EBB_EAUTH) {
        deliver(p, EBB_EAUTH);
        return;
    }
    json_t *items = json_object_get(json_object_get(body, "SpotPrices"),
                                    "SpotPriceType");
    if (status == 0 && !json_is_array(items))
        status = EBB_EPROTO;
    if (status != 0) {
        series_failed(p, status);
        return;
    }
    char currency[4];
    currency_of(body, a->cfg->regions.items[p->region], currency);
    memcpy(a->currency[p->region], currency, 4);
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item)
    {
        int rc = add_row(p, item, currency);
        if (rc == EBB_ENOMEM) {
            deliver(p, rc);
            return;
        }
        if (rc != 0 && p->status == 0) {
            a->host->log(a->host->ctx, EBB_LOG_WARN,
                         "DescribeSpotPriceHistory in %s: skipping a malformed "
                         "row",
                         a->cfg->regions.items[p->region]);
            p->status = rc;
        }
    }
    json_t *next = json_object_get(body, "NextOffset");
    long next_offset = json_is_integer(next) ? (long)json_integer_value(next) : 0;
    if (json_array_size(items) > 0 && next_offset > p->offset &&
        ++p->pages < MAX_PAGES) {
        p->offset = next_offset;
        continue_with(p);
    } else {
        advance(p);
    }
    (void)code;
}

static int request_page(struct ali_poll *p)
{
    struct ali *a = p->a;
    const char *region = a->cfg->regions.items[p->region];
    char from[EBB_TIME_BUFSZ], to[EBB_TIME_BUFSZ];
    ebb_format_time(p->window_start, from, sizeof(from));
    ebb_format_time(window_end(p), to, sizeof(to));
    struct ali_params q = {0};
    ali_params_add(&q, "InstanceType", a->cfg->instance_types.items[p->type]);
    ali_params_add(&q, "NetworkType", a->cfg->network_type);
    ali_params_add(&q, "OSType", a->cfg->os_type);
    ali_params_add(&q, "StartTime", from);
    ali_params_add(&q, "EndTime", to);
    ali_params_addf(&q, "Offset", "%ld", p->offset);
    p->rpc = ali_rpc_start(a, region, "DescribeSpotPriceHistory", &q, on_page, p);
    return p->rpc != NULL ? 0 : EBB_ENOMEM;
}

int ali_poll_prices(struct ali *a, ebb_prices_cb cb, void *arg)
{
    struct ali_poll *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return EBB_ENOMEM;
    p->cb = cb;
    p->arg = arg;
    p->now = ali_now(a) / EBB_MS_PER_SECOND * EBB_MS_PER_SECOND;
    p->a = a;
    ebb_op_add(&a->ops, &p->op, poll_cancel);
    start_series(p);
    int rc = request_page(p);
    if (rc != 0)
        poll_free(p);
    return rc;
}
