/* Fuzz target: EC2's XML answers as the aws provider reads them
 * (providers/aws/aws_ec2.c over base/xml.c and expat): spot price history
 * pages, instances (RunInstances, DescribeInstances) and error documents,
 * and EC2's decimal prices. Every input goes to all four.
 *
 * Invariants: a page is taken whole or not at all (a failure leaves the
 * set as it was and says why), and reading it twice gives twice the
 * prices, the second copy equal to the first with interned strings shared;
 * every price is a spot price of the given region in USD with its fields
 * set; instances are taken whole or not at all; an error document fills
 * both of its strings; every output string is NUL-terminated within its
 * buffer; a price that parses formats back to the same micro-units. */
#include <stdio.h>

#include <ebb/units.h>

#include "fuzz.h"
#include "providers/aws/aws_ec2.h"

static void check_price(const struct ebb_price *p)
{
    FUZZ_CHECK(p->market == EBB_MARKET_SPOT);
    FUZZ_CHECK(strcmp(p->region, "us-east-1") == 0);
    FUZZ_CHECK(strcmp(p->currency, "USD") == 0);
    FUZZ_CHECK(p->zone != NULL && p->instance_type != NULL &&
               p->product != NULL);
    FUZZ_CHECK(p->price_per_hour >= 0);
}

static void check_prices(const uint8_t *data, size_t size)
{
    struct aws_price_set set = {0};
    char token[256], why[256];
    int rc = aws_parse_price_page((const char *)data, size, "us-east-1", &set,
                                  token, sizeof(token), why, sizeof(why));
    FUZZ_CHECK(memchr(token, '\0', sizeof(token)) != NULL);
    if (rc != 0) {
        FUZZ_CHECK(set.n == 0 && why[0] != '\0' && token[0] == '\0');
        aws_price_set_free(&set);
        return;
    }
    size_t n = set.n;
    FUZZ_CHECK(aws_parse_price_page((const char *)data, size, "us-east-1",
                                    &set, token, sizeof(token), why,
                                    sizeof(why)) == 0);
    FUZZ_CHECK(set.n == 2 * n);
    for (size_t i = 0; i < n; i++) {
        const struct ebb_price *a = &set.v[i], *b = &set.v[n + i];
        check_price(a);
        FUZZ_CHECK(a->zone == b->zone && a->instance_type == b->instance_type &&
                   a->product == b->product);
        FUZZ_CHECK(a->at == b->at && a->price_per_hour == b->price_per_hour);
    }
    aws_price_set_free(&set);
}

static void check_instances(const uint8_t *data, size_t size)
{
    struct aws_instance_set set = {0};
    char token[256];
    token[0] = '\0';
    if (aws_parse_instances((const char *)data, size, &set, token,
                            sizeof(token)) != 0) {
        FUZZ_CHECK(set.n == 0);
    }
    FUZZ_CHECK(memchr(token, '\0', sizeof(token)) != NULL);
    for (size_t i = 0; i < set.n; i++) {
        const struct aws_ec2_instance *in = &set.v[i];
        FUZZ_CHECK(memchr(in->id, '\0', sizeof(in->id)) != NULL);
        FUZZ_CHECK(memchr(in->state, '\0', sizeof(in->state)) != NULL);
        FUZZ_CHECK(memchr(in->job_id, '\0', sizeof(in->job_id)) != NULL);
        FUZZ_CHECK(memchr(in->token, '\0', sizeof(in->token)) != NULL);
    }
    free(set.v);
}

static void check_error(const uint8_t *data, size_t size)
{
    char code[64], message[256];
    if (aws_parse_error((const char *)data, size, code, sizeof(code), message,
                        sizeof(message)) != 0)
        return;
    FUZZ_CHECK(memchr(code, '\0', sizeof(code)) != NULL);
    FUZZ_CHECK(memchr(message, '\0', sizeof(message)) != NULL);
}

/* aws_parse_price() and ebb_format_money() agree on what a decimal is. */
static void check_decimal(const uint8_t *data, size_t size)
{
    if (size > 40)
        return;
    char *s = fuzz_cstr(data, size);
    ebb_micros m, again;
    if (aws_parse_price(s, &m) == 0) {
        FUZZ_CHECK(m >= 0);
        char buf[EBB_MONEY_BUFSZ];
        snprintf(buf, sizeof(buf), "%lld.%06lld", (long long)(m / 1000000),
                 (long long)(m % 1000000));
        FUZZ_CHECK(aws_parse_price(buf, &again) == 0 && again == m);
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_prices(data, size);
    check_instances(data, size);
    check_error(data, size);
    check_decimal(data, size);
    return 0;
}
