/* Price polls: DescribeSpotPriceHistory for each configured region, from
 * the newest stored observation (or `history` back on a first run), page
 * after page until EC2 sends no nextToken. Every page is parsed as it
 * arrives into one set, and the set is delivered only when all regions are
 * complete: a malformed page or a failed call fails the whole poll and
 * delivers nothing.
 *
 * After each poll the provider arms a host timer; when it fires it calls
 * market_changed() and the core polls again. Failing polls double the
 * interval (up to AWS_POLL_BACKOFF_CAP); an authentication failure stops
 * the timer for good, since retrying the same credentials cannot help. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "aws.h"
#include "aws_ec2.h"

#define AWS_POLL_BACKOFF_CAP EBB_MS_PER_HOUR
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

static void on_poll_timer(void *arg)
{
    struct aws *a = arg;
    a->poll_timer = 0;
    a->host->market_changed(a->host->ctx);
}

static void arm_timer(struct aws *a, ebb_dur_ms after)
{
    if (a->poll_timer > 0)
        a->host->timer_stop(a->host->ctx, a->poll_timer);
    a->poll_timer = 0;
    int64_t id = a->host->timer_start(a->host->ctx,
                                      a->host->now(a->host->ctx) + after,
                                      on_poll_timer, a);
    if (id > 0)
        a->poll_timer = id;
    else
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "cannot arm the price poll timer: %s", ebb_strerror((int)id));
}

/* Decides when the next poll happens, after one completed with `status`. */
static void schedule_next(struct aws *a, int status)
{
    ebb_dur_ms interval = a->cfg->poll_interval;
    if (status == 0) {
        a->poll_backoff = 0;
        arm_timer(a, interval);
        return;
    }
    if (status == EBB_EAUTH) {
        a->auth_failed = 1;
        return;
    }
    ebb_dur_ms cap = interval > AWS_POLL_BACKOFF_CAP ? interval : AWS_POLL_BACKOFF_CAP;
    ebb_dur_ms next = a->poll_backoff > 0 ? a->poll_backoff * 2 : interval * 2;
    a->poll_backoff = next < cap ? next : cap;
    arm_timer(a, a->poll_backoff);
}

static void finish(struct aws_poll *p, int status)
{
    struct aws *a = p->a;
    a->poll = NULL;
    if (status != EBB_ECANCELED)
        schedule_next(a, status);
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
                         "(credentials from %s); price polling stopped until "
                         "ebbd restarts with working credentials",
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
        p->from = a->host->last_price_at(a->host->ctx, region);
        if (p->from <= 0)
            p->from = a->host->now(a->host->ctx) - cfg->history;
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
    /* The credentials were refused once; they cannot have changed. */
    if (a->auth_failed || !a->have_creds)
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

void aws_poll_cancel(struct aws *a)
{
    if (a->poll_timer > 0)
        a->host->timer_stop(a->host->ctx, a->poll_timer);
    a->poll_timer = 0;
}
