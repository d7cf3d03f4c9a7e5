#include "market/store_prices.h"

#include <stdlib.h>
#include <string.h>

#include <ebb/trace.h>

#include "base/csv.h"

__extension__ typedef unsigned __int128 wide;

#define HEADER                                                            \
    "cloud,region,storage_usd_per_gb_month,hours_per_month,"              \
    "egress_internet_usd_per_gb,egress_region_usd_per_gb,source"

static const char *const columns[] = {
    "cloud", "region", "storage_usd_per_gb_month", "hours_per_month",
    "egress_internet_usd_per_gb", "egress_region_usd_per_gb", "source",
};
enum { N_COLUMNS = 7 };

static void row_free(struct ebb__store_price_row *r)
{
    free(r->cloud);
    free(r->region);
    free(r->source);
}

void ebb__store_prices_free(struct ebb__store_prices *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n_row; i++)
        row_free(&p->row[i]);
    free(p->row);
    free(p);
}

static int check_header(struct ebb__csv *c, struct ebb_diag *d)
{
    int ok = c->n_field == N_COLUMNS;
    for (size_t i = 0; ok && i < N_COLUMNS; i++)
        ok = strcmp(c->field[i], columns[i]) == 0;
    if (!ok)
        ebb_diag_set(d, c->name, c->line, "a store price file starts with "
                     "the line " HEADER);
    return ok ? 0 : EBB_EINVAL;
}

static int price(struct ebb__csv *c, size_t i, ebb_micros *out,
                 struct ebb_diag *d)
{
    const char *why = NULL;
    if (ebb_parse_decimal_micros(c->field[i], out, &why) != 0 || *out < 0) {
        ebb_diag_set(d, c->name, c->line, "%s: %s", columns[i],
                     why ? why : "must not be negative");
        return EBB_EINVAL;
    }
    return 0;
}

static int read_row(struct ebb__csv *c, const struct ebb__store_prices *p,
                    struct ebb__store_price_row *r, struct ebb_diag *d)
{
    char **f = c->field;
    memset(r, 0, sizeof(*r));
    if (c->n_field != N_COLUMNS) {
        ebb_diag_set(d, c->name, c->line, "%zu fields, expected %d as in the "
                     "header", c->n_field, N_COLUMNS);
        return EBB_EINVAL;
    }
    if (f[0][0] == '\0' || f[1][0] == '\0') {
        ebb_diag_set(d, c->name, c->line, "%s is empty",
                     f[0][0] == '\0' ? "cloud" : "region");
        return EBB_EINVAL;
    }
    char *end = NULL;
    long hours = strtol(f[3], &end, 10);
    if (end == f[3] || *end != '\0' || hours < 1 || hours > 744) {
        ebb_diag_set(d, c->name, c->line, "hours_per_month: expected a whole "
                     "number of hours from 1 to 744");
        return EBB_EINVAL;
    }
    r->hours_per_month = (int)hours;
    int rc = price(c, 2, &r->storage, d);
    if (rc == 0)
        rc = price(c, 4, &r->egress_internet, d);
    if (rc == 0)
        rc = price(c, 5, &r->egress_region, d);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < p->n_row; i++)
        if (strcmp(p->row[i].cloud, f[0]) == 0 &&
            strcmp(p->row[i].region, f[1]) == 0) {
            ebb_diag_set(d, c->name, c->line, "%s %s has a row already (line "
                         "%d)", f[0], f[1], p->row[i].line);
            return EBB_EINVAL;
        }
    r->line = c->line;
    r->cloud = strdup(f[0]);
    r->region = strdup(f[1]);
    r->source = strdup(f[6]);
    if (r->cloud == NULL || r->region == NULL || r->source == NULL) {
        row_free(r);
        return EBB_ENOMEM;
    }
    return 0;
}

int ebb__store_prices_load(const char *path, struct ebb__store_prices **out,
                           struct ebb_diag *d)
{
    struct ebb__csv c;
    int rc = ebb__csv_open(&c, path, d);
    if (rc != 0)
        return rc;
    struct ebb__store_prices *p = calloc(1, sizeof(*p));
    rc = p == NULL ? EBB_ENOMEM : ebb__csv_next(&c, d);
    if (rc == 0) {
        ebb_diag_set(d, c.name, 0, "file is empty; a store price file "
                     "starts with the line " HEADER);
        rc = EBB_EINVAL;
    } else if (rc > 0) {
        rc = check_header(&c, d);
    }
    while (rc == 0) {
        int more = ebb__csv_next(&c, d);
        if (more <= 0) {
            rc = more;
            break;
        }
        struct ebb__store_price_row *grown =
            realloc(p->row, (p->n_row + 1) * sizeof(*grown));
        if (grown == NULL) {
            rc = EBB_ENOMEM;
            break;
        }
        p->row = grown;
        rc = read_row(&c, p, &p->row[p->n_row], d);
        if (rc == 0)
            p->n_row++;
    }
    ebb__csv_close(&c);
    if (rc != 0) {
        ebb__store_prices_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

const char *ebb__store_cloud(const struct ebb__store_cfg *s)
{
    if (s->kind == EBB__OBJSTORE_OSS)
        return "alibaba";
    if (s->kind == EBB__OBJSTORE_S3 &&
        (s->endpoint == NULL || strstr(s->endpoint, ".amazonaws.com") != NULL))
        return "aws";
    return NULL;
}

static const struct ebb__store_price_row *
find_row(const struct ebb__store_prices *p, const struct ebb__store_cfg *s)
{
    const char *cloud = ebb__store_cloud(s);
    for (size_t i = 0; p != NULL && cloud != NULL && s->region != NULL &&
                       i < p->n_row; i++)
        if (strcmp(p->row[i].cloud, cloud) == 0 &&
            strcmp(p->row[i].region, s->region) == 0)
            return &p->row[i];
    return NULL;
}

void ebb__store_rates(const struct ebb__store_prices *p,
                      const struct ebb__store_cfg *s,
                      struct ebb__store_rates *out)
{
    const struct ebb__store_price_row *row = find_row(p, s);
    *out = (struct ebb__store_rates){
        .storage_currency = "USD",
        .egress_currency = "USD",
        .hours_per_month = row ? row->hours_per_month : EBB__HOURS_PER_MONTH,
        .storage = row ? row->storage : 0,
        .egress_region = row ? row->egress_region : 0,
        .egress_cloud = row ? row->egress_internet : 0,
    };
    if (s->has_price) {
        out->storage = s->price_per_gb_month.amount;
        memcpy(out->storage_currency, s->price_per_gb_month.currency, 4);
    }
    if (s->has_egress) {
        out->egress_region = out->egress_cloud = s->egress_per_gb.amount;
        memcpy(out->egress_currency, s->egress_per_gb.currency, 4);
    }
    if (s->kind == EBB__OBJSTORE_FILE)
        out->egress_region = out->egress_cloud = 0;
}

/* a x b / div rounded up, saturated at INT64_MAX; 0 for a or b <= 0. */
static ebb_micros mul_div_up(int64_t a, int64_t b, int64_t c, wide div)
{
    if (a <= 0 || b <= 0 || c <= 0)
        return 0;
    wide n = (wide)a * (wide)b;
    /* a, b < 2^63 each: n < 2^126; times c < 2^63 would overflow, so the
     * product is split: (n / div) x c + (n % div) x c / div. */
    wide q = n / div, r = n % div;
    wide hi = q * (wide)c;
    if (q != 0 && hi / q != (wide)c)
        return INT64_MAX;
    wide lo = (r * (wide)c + div - 1) / div;
    wide sum = hi + lo;
    return sum > (wide)INT64_MAX ? INT64_MAX : (ebb_micros)sum;
}

ebb_micros ebb__store_storage_cost(const struct ebb__store_rates *r,
                                   int64_t bytes, ebb_dur_ms ms)
{
    int hours = r->hours_per_month > 0 ? r->hours_per_month : EBB__HOURS_PER_MONTH;
    wide div = (wide)EBB__GB_BYTES * (wide)hours * (wide)3600000;
    return mul_div_up(bytes, ms, r->storage, div);
}

ebb_micros ebb__store_egress_cost(const struct ebb__store_cfg *s,
                                  const struct ebb__store_rates *r,
                                  const char *provider, const char *region,
                                  int64_t bytes)
{
    if (s->kind == EBB__OBJSTORE_FILE || bytes <= 0)
        return 0;
    const char *cloud = ebb__store_cloud(s);
    int same_cloud = cloud != NULL && provider != NULL && strcmp(cloud, provider) == 0;
    if (same_cloud && region != NULL && s->region != NULL &&
        strcmp(region, s->region) == 0)
        return 0;
    ebb_micros rate = same_cloud ? r->egress_region : r->egress_cloud;
    return mul_div_up(bytes, 1, rate, (wide)EBB__GB_BYTES);
}
