/* Price polls: DescribeSpotPriceHistory for each configured region, from
 * the newest stored observation (or `history` back on a first run), page
 * after page until EC2 sends no nextToken. Every page is parsed as it
 * arrives into one set, and the set is delivered only when all regions are
 * complete: a malformed page or a failed call fails the whole poll and
 * delivers nothing.
 *
 * A region's StartTime is the oldest of its series' cursors
 * (host->price_cursor per instance type: the newest stored price of that
 * type in the region, any zone), so a type added to the configuration, or
 * one a failed poll left behind, is read from `history` back rather than
 * from its neighbours' newest price; the other types' repeated rows are
 * dropped by the store as duplicates.
 *
 * The host decides when to poll (create() declares poll_interval), backs
 * off failing polls and stops polling after an authentication failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "aws.h"
#include "aws_ec2.h"

#define AWS_PAGE_SIZE "1000"

struct aws_poll {
    struct aws *a;
    ebb_prices_cb cb;
    void *arg;
    size_t region;
    size_t pages;
    ebb_time_ms from; /* StartTime of the region's pages */
    char next_token[4096];
    struct aws_price_set set;
};

static void finish(struct aws_poll *p, int status)
{
    p->a->poll = NULL;
    if (status == 0)
        p->cb(p->arg, 0, p->set.v, p->set.n);
    else
        p->cb(p->arg, status, NULL, 0);
    aws_price_set_free(&p->set);
    free(p);
}

static int request_page(struct aws_poll *p);

static void on_page(void *arg, const struct aws_reply *r)
{
    struct aws_poll *p = arg;
    struct aws *a = p->a;
    if (r->status == EBB_ECANCELED) {
        finish(p, EBB_ECANCELED);
        return;
    }
    const char *region = a->cfg->regions.items[p->region];
    if (r->status != 0) {
        if (r->status == EBB_EAUTH)
            a->host->log(a->host->ctx, EBB_LOG_ERROR,
                         "%s: DescribeSpotPriceHistory refused: %s: %s "
                         "(credentials from %s)",
                         region, r->code, r->message, a->creds.source);
        else
            a->host->log(a->host->ctx, EBB_LOG_WARN,
                         "%s: DescribeSpotPriceHistory failed: %s%s%s",
                         region, r->code[0] ? r->code : ebb_strerror(r->status),
                         r->message[0] ? ": " : "", r->message);
        finish(p, r->status);
        return;
    }
    char why[256];
    int rc = aws_parse_price_page(r->body, r->body_len, region, &p->set,
                                  p->next_token, sizeof(p->next_token), why,
                                  sizeof(why));
    p->pages++;
    if (rc != 0) {
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "%s: DescribeSpotPriceHistory page %zu is malformed (%s); "
                     "nothing of this poll is kept", region, p->pages, why);
        finish(p, rc);
        return;
    }
    if (p->next_token[0] == '\0') {
        p->region++;
        if (p->region == a->cfg->regions.n) {
            finish(p, 0);
            return;
        }
    }
    rc = request_page(p);
    if (rc != 0)
        finish(p, rc);
}

/* Where a region's poll starts: the oldest cursor of its series, or
 * `history` back when a series has none. */
static ebb_time_ms region_start(struct aws *a, const char *region)
{
    const struct aws_cfg *cfg = a->cfg;
    ebb_time_ms oldest = a->host->now(a->host->ctx) - cfg->history;
    ebb_time_ms from = 0;
    for (size_t i = 0; i < cfg->instance_types.n; i++) {
        const struct ebb_series_key key = {
            .struct_size = sizeof(struct ebb_series_key),
            .region = region,
            .instance_type = cfg->instance_types.items[i],
            .product = cfg->product,
        };
        ebb_time_ms at = a->host->price_cursor(a->host->ctx, &key);
        if (at <= 0)
            return oldest;
        if (from == 0 || at < from)
            from = at;
    }
    return from;
}

static int request_page(struct aws_poll *p)
{
    struct aws *a = p->a;
    const struct aws_cfg *cfg = a->cfg;
    const char *region = cfg->regions.items[p->region];
    struct ebb_buf params = {0};
    for (size_t i = 0; i < cfg->instance_types.n; i++)
        aws_paramf(&params, cfg->instance_types.items[i], "InstanceType.%zu", i + 1);
    aws_param(&params, "ProductDescription.1", cfg->product);
    /* A region's first page fixes StartTime; the next pages repeat it, as
     * a NextToken is only good for the same request. */
    if (p->next_token[0] == '\0') {
        p->from = region_start(a, region);
        p->from = p->from / EBB_MS_PER_SECOND * EBB_MS_PER_SECOND;
    }
    char when[EBB_TIME_BUFSZ];
    aws_param(&params, "StartTime", ebb_format_time(p->from, when, sizeof(when)));
    aws_param(&params, "MaxResults", AWS_PAGE_SIZE);
    if (p->next_token[0] != '\0')
        aws_param(&params, "NextToken", p->next_token);
    int rc = params.failed ? EBB_ENOMEM
                           : aws_call(a, region, "DescribeSpotPriceHistory",
                                      params.data, on_page, p);
    ebb_buf_free(&params);
    return rc;
}

int aws_poll_prices(void *self, ebb_prices_cb cb, void *arg)
{
    struct aws *a = self;
    if (a->poll != NULL)
        return EBB_EBUSY;
    if (!a->have_creds)
        return EBB_EAUTH;
    struct aws_poll *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return EBB_ENOMEM;
    *p = (struct aws_poll){.a = a, .cb = cb, .arg = arg};
    int rc = request_page(p);
    if (rc != 0) {
        free(p);
        return rc;
    }
    a->poll = p;
    return 0;
}
