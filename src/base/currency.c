/* Money between currencies (currency.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/currency.h"

/* Products of an amount and a rate overflow int64. */
__extension__ typedef __int128 wide;

/* USD per unit of USD, in billionths. */
#define USD_E9 INT64_C(1000000000)

static int rate_of(const char *cur, const struct ebb__currency_rate *rates,
                   size_t n, int64_t *out)
{
    if (strcmp(cur, "USD") == 0) {
        *out = USD_E9;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rates[i].currency, cur) == 0 && rates[i].usd_e9 > 0) {
            *out = rates[i].usd_e9;
            return 0;
        }
    }
    return EBB_ENOTFOUND;
}

/* num / den (den > 0) rounded as `how` says. */
static wide divide(wide num, wide den, enum ebb__rounding how)
{
    wide q = num / den, rem = num % den; /* q truncated toward zero */
    if (rem == 0)
        return q;
    switch (how) {
    case EBB__ROUND_UP:
        return num > 0 ? q + 1 : q;
    case EBB__ROUND_DOWN:
        return num < 0 ? q - 1 : q;
    case EBB__ROUND_NEAREST:
        break;
    }
    if (rem < 0)
        rem = -rem;
    if (2 * rem >= den)
        q += num < 0 ? -1 : 1;
    return q;
}

int ebb__currency_convert(ebb_micros amount, const char *from, const char *to,
                          const struct ebb__currency_rate *rates, size_t n_rates,
                          enum ebb__rounding how, ebb_micros *out)
{
    if (strcmp(from, to) == 0) {
        *out = amount;
        return 0;
    }
    int64_t rf, rt;
    if (rate_of(from, rates, n_rates, &rf) != 0 ||
        rate_of(to, rates, n_rates, &rt) != 0)
        return EBB_ENOTFOUND;
    /* amount * rf fits in 128 bits for any int64 amount and rate. */
    wide q = divide((wide)amount * rf, rt, how);
    if (q > INT64_MAX || q < INT64_MIN)
        return EBB_EINVAL;
    *out = (ebb_micros)q;
    return 0;
}

const char *ebb__format_amount(ebb_micros amount, int decimals,
                               const char *currency, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    if (decimals < 0)
        decimals = 0;
    if (decimals > 6)
        decimals = 6;
    uint64_t unit = 1;
    for (int i = decimals; i < 6; i++)
        unit *= 10;
    /* On the magnitude, so that halves round away from zero both ways and
     * INT64_MIN has a magnitude. */
    uint64_t mag = amount < 0 ? 0 - (uint64_t)amount : (uint64_t)amount;
    uint64_t q = mag / unit + (mag % unit >= (unit + 1) / 2 && unit > 1);
    uint64_t scale = 1000000 / unit;
    int has_cur = currency != NULL && currency[0] != '\0';
    if (decimals == 0)
        snprintf(buf, size, "%s%" PRIu64 "%s%s", amount < 0 && q ? "-" : "", q,
                 has_cur ? " " : "", has_cur ? currency : "");
    else
        snprintf(buf, size, "%s%" PRIu64 ".%0*" PRIu64 "%s%s",
                 amount < 0 && q ? "-" : "", q / scale, decimals, q % scale,
                 has_cur ? " " : "", has_cur ? currency : "");
    return buf;
}
