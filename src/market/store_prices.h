/* What keeping and moving checkpoints costs: the default prices of the
 * object stores (data/store_prices.csv) and the rates a configured store
 * charges, its own `price_per_gb_month` / `egress_per_gb` first.
 *
 * The file is CSV with the header
 *   cloud,region,storage_usd_per_gb_month,hours_per_month,
 *   egress_internet_usd_per_gb,egress_region_usd_per_gb,source
 * one row per (cloud, region): `cloud` is the market that runs the store
 * (`aws` for s3://, `alibaba` for oss://), hours_per_month how the cloud
 * turns a GB-month into GB-hours (AWS 730, OSS 720), egress_internet what
 * a GB read from another cloud (or the internet) costs, egress_region what
 * a GB read from another region of the same cloud costs. A GB is 2^30
 * bytes, as both clouds bill. Errors are "file:line: message". */
#ifndef EBB_MARKET_STORE_PRICES_H
#define EBB_MARKET_STORE_PRICES_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>
#include <ebb/diag.h>

#include "config/stores.h"

#define EBB__GB_BYTES ((int64_t)1 << 30)
/* A GB-month in hours where neither the file nor the cloud says (file://
 * stores, a price set for an S3-compatible server). */
#define EBB__HOURS_PER_MONTH 730

struct ebb__store_price_row {
    char *cloud, *region, *source;
    ebb_micros storage;      /* USD per GB-month */
    int hours_per_month;
    ebb_micros egress_internet, egress_region; /* USD per GB */
    int line;
};

struct ebb__store_prices {
    struct ebb__store_price_row *row;
    size_t n_row;
};

/* Loads the file at `path` into a new *out (ebb__store_prices_free).
 * Returns 0, or EBB_EINVAL / EBB_EIO / EBB_ENOMEM with "file:line: ..."
 * in `d`. Two rows of one (cloud, region) are an error. */
int ebb__store_prices_load(const char *path, struct ebb__store_prices **out,
                           struct ebb_diag *d);
void ebb__store_prices_free(struct ebb__store_prices *p);

/* The cloud a store's data lives in: "aws" (s3:// at AWS's own endpoint),
 * "alibaba" (oss://), NULL for file:// and for an S3-compatible server
 * at an endpoint of its own (no cloud ebb knows the prices of). */
const char *ebb__store_cloud(const struct ebb__store_cfg *s);

/* What store `s` charges: `storage` per GB-month (a GB-month being
 * `hours_per_month` hours) in storage_currency, `egress_region` /
 * `egress_cloud` per GB read from another region of its cloud / from
 * outside its cloud in egress_currency (defaults are USD). The
 * store's own settings win; the defaults of `p` (may be NULL) fill what
 * it leaves unset, by its cloud and region; a file:// store moves no bytes
 * across a network (egress 0). Where neither says, 0. */
struct ebb__store_rates {
    char storage_currency[4], egress_currency[4];
    ebb_micros storage;
    int hours_per_month;
    ebb_micros egress_region, egress_cloud;
};
void ebb__store_rates(const struct ebb__store_prices *p,
                      const struct ebb__store_cfg *s,
                      struct ebb__store_rates *out);

/* What reading `bytes` from store `s` to an instance of `provider`'s
 * market in `region` costs at `r` (in r->egress_currency): nothing in the store's
 * own cloud and region, or from a file:// store; egress_region from
 * another region of its cloud; egress_cloud from elsewhere. Rounded up to
 * a micro-unit. */
ebb_micros ebb__store_egress_cost(const struct ebb__store_cfg *s,
                                  const struct ebb__store_rates *r,
                                  const char *provider, const char *region,
                                  int64_t bytes);

/* What holding `bytes` for `ms` costs at `r` (in r->storage_currency): bytes x ms x storage /
 * (2^30 x hours_per_month x 3,600,000), exact, rounded up to a micro-unit
 * (0 for nothing held). */
ebb_micros ebb__store_storage_cost(const struct ebb__store_rates *r,
                                   int64_t bytes, ebb_dur_ms ms);

#endif
