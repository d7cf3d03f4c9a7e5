/* Money between currencies, with the rates configured under
 * currency_rates: in ebb.yaml (USD for one unit of each currency). */
#ifndef EBB_CURRENCY_H
#define EBB_CURRENCY_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>

/* USD per one unit of `currency`, in billionths: CNY 0.14 -> 140000000. */
struct ebb__currency_rate {
    char currency[4];
    int line;
    int64_t usd_e9;
};

/* Which way a converted amount that falls between two micro-units goes:
 * costs round up and caps down, so that a conversion never lets a cap be
 * passed; reports round to the nearest (half away from zero). */
enum ebb__rounding {
    EBB__ROUND_NEAREST,
    EBB__ROUND_UP,
    EBB__ROUND_DOWN,
};

/* Converts `amount` of `from` into `to`. A currency converts to itself
 * exactly, with or without rates. Returns 0, EBB_ENOTFOUND when a currency
 * other than USD has no rate, EBB_EINVAL when the result overflows. */
int ebb__currency_convert(ebb_micros amount, const char *from, const char *to,
                          const struct ebb__currency_rate *rates, size_t n_rates,
                          enum ebb__rounding how, ebb_micros *out);

/* How many decimals people read, one rule for every table and message:
 * amounts (spend, budgets, costs) to the cent, prices per hour to a
 * hundredth of a cent (spot prices differ in the fourth decimal). Exact
 * figures are in the JSON, in micro-units. */
#define EBB__AMOUNT_DECIMALS 2
#define EBB__RATE_DECIMALS 4

/* Writes `amount` (micro-units) rounded half away from zero to `decimals`
 * (0 to 6) decimals, then " currency" unless `currency` is NULL or "":
 * "0.39 USD", "1250.5000". Returns buf. */
const char *ebb__format_amount(ebb_micros amount, int decimals,
                               const char *currency, char *buf, size_t size);

#endif
