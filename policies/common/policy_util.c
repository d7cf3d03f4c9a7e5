/* policy_util — see policy_util.h. Pure arithmetic: no I/O, no clock. */
#include "policy_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int pu_begin(struct pu_ctx *c, const struct ebb_job_view *job,
             const struct ebb_market_view *market, ebb_time_ms now,
             struct ebb_decision *out)
{
    if (out != NULL) {
        memset(out, 0, sizeof(*out));
        out->offer = PU_NONE;
    }
    if (c == NULL || job == NULL || market == NULL || out == NULL ||
        job->struct_size < EBB_POLICY_JOB_SIZE_V1 ||
        market->struct_size < EBB_POLICY_MARKET_SIZE_V1)
        return EBB_EINVAL;
    memset(c, 0, sizeof(*c));
    c->job = job;
    /* An offer table the engine forgot to fill is treated as empty rather
     * than dereferenced. */
    c->offers = market->n_offers > 0 ? market->offers : NULL;
    c->n = c->offers != NULL ? market->n_offers : 0;
    if (c->n > 0) {
        c->stride = c->offers[0].struct_size;
        if (c->stride < EBB_POLICY_OFFER_SIZE_V1 ||
            c->stride % _Alignof(struct ebb_offer) != 0)
            return EBB_EINVAL;
    }
    if (EBB_POLICY_HAS(struct ebb_market_view, market, generation))
        c->generation = market->generation;
    if (EBB_POLICY_HAS(struct ebb_market_view, market, fill_ctx)) {
        c->fill_forecast = market->fill_forecast;
        c->fill_ctx = market->fill_ctx;
    }
    c->now = now;
    double left = (double)job->work_total - (double)job->work_done;
    c->remaining = left > 0 ? left : 0;
    c->running = job->running_offer < c->n ? job->running_offer : PU_NONE;
    return 0;
}

const struct ebb_offer *pu_offer_fc(const struct pu_ctx *c, size_t k)
{
    if (c->fill_forecast != NULL)
        (void)c->fill_forecast(c->fill_ctx, k); /* failed: no forecast */
    return pu_offer(c, k);
}

const double *pu_hazard_by_hour(const struct pu_ctx *c, size_t k)
{
    const struct ebb_offer *o = pu_offer(c, k);
    return EBB_POLICY_HAS(struct ebb_offer, o, preemption_by_hour)
               ? o->preemption_by_hour
               : NULL;
}

double pu_transfer_cost(const struct pu_ctx *c, size_t k)
{
    const struct ebb_offer *o = pu_offer(c, k);
    if (!EBB_POLICY_HAS(struct ebb_offer, o, transfer_cost) || o->transfer_cost <= 0)
        return 0;
    return (double)o->transfer_cost;
}

int pu_usable(const struct ebb_offer *o)
{
    return isfinite(o->speed) && o->speed > 0 && o->price_per_hour >= 0;
}

int pu_ready(const struct pu_ctx *c, size_t k)
{
    if (k >= c->n || !pu_usable(pu_offer(c, k)))
        return 0;
    return pu_offer(c, k)->available != 0 || k == c->running;
}

int pu_allowed(const struct pu_ctx *c, size_t k)
{
    if (k >= c->n)
        return 0;
    switch (c->job->market) {
    case EBB_JOB_SPOT:
        return pu_offer(c, k)->market == EBB_MARKET_SPOT;
    case EBB_JOB_ON_DEMAND:
        return pu_offer(c, k)->market == EBB_MARKET_ON_DEMAND;
    case EBB_JOB_SPOT_FALLBACK:
    default:
        return 1;
    }
}

double pu_wall_ms(const struct pu_ctx *c, size_t k)
{
    if (k >= c->n || !pu_usable(pu_offer(c, k)))
        return INFINITY;
    return c->remaining / pu_offer(c, k)->speed;
}

int pu_has_deadline(const struct pu_ctx *c)
{
    return c->job->deadline > 0;
}

double pu_restart_ms(const struct pu_ctx *c)
{
    return c->job->restart_overhead > 0 ? (double)c->job->restart_overhead : 0;
}

double pu_slack_fresh(const struct pu_ctx *c, size_t k)
{
    if (!pu_has_deadline(c))
        return INFINITY;
    return (double)c->job->deadline - (double)c->now - pu_wall_ms(c, k) -
           pu_restart_ms(c);
}

double pu_slack(const struct pu_ctx *c, size_t k)
{
    if (!pu_has_deadline(c))
        return INFINITY;
    double start = k == c->running ? 0 : pu_restart_ms(c);
    return (double)c->job->deadline - (double)c->now - pu_wall_ms(c, k) - start;
}

/* Price per unit of work compared without dividing: a/sa < b/sb. */
static int cheaper(const struct ebb_offer *a, const struct ebb_offer *b)
{
    double lhs = (double)a->price_per_hour * b->speed;
    double rhs = (double)b->price_per_hour * a->speed;
    if (lhs != rhs)
        return lhs < rhs;
    return a->speed > b->speed;
}

size_t pu_cheapest_spot(const struct pu_ctx *c)
{
    size_t best = PU_NONE;
    for (size_t k = 0; k < c->n; k++) {
        if (pu_offer(c, k)->market != EBB_MARKET_SPOT || !pu_ready(c, k))
            continue;
        if (best == PU_NONE || cheaper(pu_offer(c, k), pu_offer(c, best)))
            best = k;
    }
    return best;
}

size_t pu_od_choice(const struct pu_ctx *c)
{
    /* With a memo only the on-demand offers are visited, in the same
     * order. */
    size_t best = PU_NONE, fastest = PU_NONE;
    size_t n = c->memo != NULL ? c->memo->n_od : c->n;
    for (size_t i = 0; i < n; i++) {
        size_t k = c->memo != NULL ? c->memo->od[i] : i;
        if (pu_offer(c, k)->market != EBB_MARKET_ON_DEMAND || !pu_ready(c, k))
            continue;
        const struct ebb_offer *o = pu_offer(c, k);
        if (fastest == PU_NONE || o->speed > pu_offer(c, fastest)->speed ||
            (o->speed == pu_offer(c, fastest)->speed &&
             cheaper(o, pu_offer(c, fastest))))
            fastest = k;
        if (pu_slack(c, k) < 0)
            continue;
        if (best == PU_NONE || cheaper(o, pu_offer(c, best)))
            best = k;
    }
    return best != PU_NONE ? best : fastest;
}

ebb_time_ms pu_after(ebb_time_ms now, double delta_ms)
{
    if (!isfinite(delta_ms))
        return 0;
    double d = ceil(delta_ms);
    if (d < 1)
        d = 1;
    /* 2^62 ms is about 146 million years: anything beyond means "never". */
    if (d > 4611686018427387904.0 || now > INT64_MAX - (ebb_time_ms)d)
        return 0;
    return now + (ebb_time_ms)d;
}

/* Fills a whole decision; every pu_* decision maker goes through here. */
static void decide_v(struct ebb_decision *out, enum ebb_decision_kind kind,
                     ebb_time_ms until, size_t offer, const char *fmt,
                     va_list ap) EBB_PRINTF(5, 0);

static void decide_v(struct ebb_decision *out, enum ebb_decision_kind kind,
                     ebb_time_ms until, size_t offer, const char *fmt,
                     va_list ap)
{
    out->kind = kind;
    out->until = until;
    out->offer = offer;
    int n = vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
    if (n < 0)
        snprintf(out->reason, sizeof(out->reason), "(no reason)");
}

void pu_wait(struct ebb_decision *out, ebb_time_ms until, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    decide_v(out, EBB_DECIDE_WAIT, until, PU_NONE, fmt, ap);
    va_end(ap);
}

void pu_keep(struct ebb_decision *out, ebb_time_ms until, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    decide_v(out, EBB_DECIDE_KEEP, until, PU_NONE, fmt, ap);
    va_end(ap);
}

void pu_launch(struct ebb_decision *out, size_t offer, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    decide_v(out, EBB_DECIDE_LAUNCH, 0, offer, fmt, ap);
    va_end(ap);
}

void pu_stop(struct ebb_decision *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    decide_v(out, EBB_DECIDE_STOP, 0, PU_NONE, fmt, ap);
    va_end(ap);
}

static double money(ebb_micros m)
{
    return (double)m / (double)EBB_MICROS_PER_UNIT;
}

/* Appends to a text of `size` bytes (so far `*len`), cutting it short as
 * snprintf would. Reasons are formatted for every decision, and snprintf
 * was a third of a deadline decision's time. */
static void put(char *buf, size_t size, size_t *len, const char *s)
{
    while (*s != '\0' && *len + 1 < size)
        buf[(*len)++] = *s++;
    buf[*len] = '\0';
}

/* Appends v >= 0 in decimal, at least `width` digits. */
static void put_int(char *buf, size_t size, size_t *len, long long v,
                    int width)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 || n < width);
    char text[24];
    for (int i = 0; i < n; i++)
        text[i] = digits[n - 1 - i];
    text[n] = '\0';
    put(buf, size, len, text);
}

const char *pu_dur_text(double ms, char buf[PU_DUR_TEXT])
{
    size_t len = 0;
    buf[0] = '\0';
    if (isnan(ms) || isinf(ms)) {
        put(buf, PU_DUR_TEXT, &len, ms < 0 ? "-unlimited" : "unlimited");
        return buf;
    }
    put(buf, PU_DUR_TEXT, &len, ms < 0 ? "-" : "");
    double a = fabs(ms) / 1000.0;
    if (a >= 1e15) {
        put(buf, PU_DUR_TEXT, &len, "unlimited");
        return buf;
    }
    long long s = (long long)a;
    long long h = s / 3600, m = s / 60 % 60, sec = s % 60;
    /* "1h12m", "1h", "7m30s", "7m", "45s". */
    if (h > 0) {
        put_int(buf, PU_DUR_TEXT, &len, h, 1);
        put(buf, PU_DUR_TEXT, &len, "h");
        if (m > 0) {
            put_int(buf, PU_DUR_TEXT, &len, m, 2);
            put(buf, PU_DUR_TEXT, &len, "m");
        }
    } else if (m > 0) {
        put_int(buf, PU_DUR_TEXT, &len, m, 1);
        put(buf, PU_DUR_TEXT, &len, "m");
        if (sec > 0) {
            put_int(buf, PU_DUR_TEXT, &len, sec, 2);
            put(buf, PU_DUR_TEXT, &len, "s");
        }
    } else {
        put_int(buf, PU_DUR_TEXT, &len, sec, 1);
        put(buf, PU_DUR_TEXT, &len, "s");
    }
    return buf;
}

int pu_fixed2(double x, char *buf, size_t size)
{
    if (signbit(x) || !(x < 1e12))
        return 0;
    /* c is x * 100 to the nearest whole number when x * 100, computed
     * exactly (fma rounds once, keeping the sign), lies strictly between
     * c - 1/2 and c + 1/2: then printf's "%.2f" prints c / 100. */
    double c = nearbyint(x * 100);
    if (!(fma(x, 100, -(c - 0.5)) > 0 && fma(x, 100, -(c + 0.5)) < 0))
        return 0;
    long long v = (long long)c;
    size_t len = 0;
    buf[0] = '\0';
    put_int(buf, size, &len, v / 100, 1);
    put(buf, size, &len, ".");
    put_int(buf, size, &len, v % 100, 2);
    return 1;
}

static const char *text(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : NULL;
}

static const char *offer_text(const struct pu_ctx *c, size_t k,
                              char buf[PU_OFFER_TEXT]);

/* The text depends on the offer alone: with a memo it is formatted once
 * per view and offer (reasons name the same offers job after job). */
const char *pu_offer_text(const struct pu_ctx *c, size_t k,
                          char buf[PU_OFFER_TEXT])
{
    struct pu_memo *m = c->memo;
    if (m == NULL || k >= c->n)
        return offer_text(c, k, buf);
    if (!m->has_text[k]) {
        offer_text(c, k, m->text[k]);
        m->has_text[k] = 1;
    }
    memcpy(buf, m->text[k], PU_OFFER_TEXT);
    return buf;
}

static const char *offer_text(const struct pu_ctx *c, size_t k,
                              char buf[PU_OFFER_TEXT])
{
    if (k >= c->n) {
        snprintf(buf, PU_OFFER_TEXT, "no offer");
        return buf;
    }
    const struct ebb_offer *o = pu_offer(c, k);
    const char *type = text(o->instance_type);
    const char *where = text(o->zone);
    if (where == NULL)
        where = text(o->region);
    if (where == NULL)
        where = text(o->provider);
    char speed[24] = "";
    if (o->speed != 1.0)
        snprintf(speed, sizeof(speed), " speed %.2f", o->speed);
    /* Prices in the job's currency, with the four decimals every table
     * and message gives a price per hour. */
    const char *cur = text(c->job->currency);
    snprintf(buf, PU_OFFER_TEXT, "%s %s%s%s at %.4f %s/h%s",
             o->market == EBB_MARKET_SPOT ? "spot" : "on-demand",
             type != NULL ? type : "instance", where != NULL ? " " : "",
             where != NULL ? where : "", money(o->price_per_hour),
             cur != NULL ? cur : "USD", speed);
    return buf;
}

void pu_budget_note(const struct pu_ctx *c, size_t k, struct ebb_decision *out)
{
    const struct ebb_job_view *job = c->job;
    if (job->budget <= 0 || k >= c->n)
        return;
    double hours = (pu_wall_ms(c, k) + (k == c->running ? 0 : pu_restart_ms(c))) /
                   (double)EBB_MS_PER_HOUR;
    double need = hours * money(pu_offer(c, k)->price_per_hour);
    double left = money(job->budget) - money(job->spent);
    if (!(need > left))
        return;
    /* Appended only when it fits whole: a cut-off note would mislead. */
    char note[80];
    int n = snprintf(note, sizeof(note), " (budget left %.2f, about %.2f "
                     "needed)", left, need);
    size_t len = strlen(out->reason);
    if (n > 0 && (size_t)n < sizeof(note) &&
        len + (size_t)n < sizeof(out->reason))
        memcpy(out->reason + len, note, (size_t)n + 1);
}

int pu_settled(const struct pu_ctx *c, struct ebb_decision *out)
{
    const struct ebb_job_view *job = c->job;
    int running = c->running != PU_NONE;
    if (job->budget > 0 && job->spent >= job->budget) {
        if (running)
            pu_stop(out, "budget of %.2f is spent (%.2f): releasing the "
                    "instance", money(job->budget), money(job->spent));
        else
            pu_wait(out, 0, "budget of %.2f is spent (%.2f): not starting "
                    "again", money(job->budget), money(job->spent));
        return 1;
    }
    if (c->remaining <= 0) {
        if (running)
            pu_keep(out, 0, "all work is done; keeping the instance while "
                    "the job exits");
        else
            pu_wait(out, 0, "all work is done; nothing to run");
        return 1;
    }
    for (size_t k = 0; k < c->n; k++) {
        if (pu_allowed(c, k) && pu_usable(pu_offer(c, k)))
            return 0;
    }
    if (running)
        pu_keep(out, 0, "no usable offer in the market view; keeping the "
                "running instance");
    else
        pu_wait(out, 0, "no usable %s offer in the market view; waiting for "
                "one", job->market == EBB_JOB_SPOT        ? "spot"
                       : job->market == EBB_JOB_ON_DEMAND ? "on-demand"
                                                          : "spot or on-demand");
    return 1;
}

void pu_run_market(const struct pu_ctx *c, enum ebb_market market,
                   struct ebb_decision *out)
{
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT];
    const char *word = market == EBB_MARKET_SPOT ? "spot" : "on-demand";
    if (c->running != PU_NONE && pu_offer(c, c->running)->market == market) {
        pu_keep(out, 0, "running on %s; keeping it",
                pu_offer_text(c, c->running, what));
        return;
    }
    size_t k = market == EBB_MARKET_SPOT ? pu_cheapest_spot(c)
                                         : pu_od_choice(c);
    if (k == PU_NONE) {
        if (c->running != PU_NONE)
            pu_stop(out, "the job may not run on %s and no %s offer is "
                    "available: releasing it",
                    pu_offer_text(c, c->running, what), word);
        else
            pu_wait(out, 0, "no %s offer is available; waiting for one",
                    word);
        return;
    }
    double slack = pu_slack(c, k);
    if (slack < 0)
        pu_launch(out, k, "%s is the best %s offer, but the deadline will be "
                  "missed by %s", pu_offer_text(c, k, what), word,
                  pu_dur_text(-slack, dur));
    else
        pu_launch(out, k, "%s is the cheapest per unit of work",
                  pu_offer_text(c, k, what));
    pu_budget_note(c, k, out);
}

int pu_decide(const void *self, const struct ebb_job_view *job,
              const struct ebb_market_view *market, ebb_time_ms now,
              struct ebb_decision *out, pu_fallback_fn fallback)
{
    struct pu_ctx c;
    int rc = pu_begin(&c, job, market, now, out);
    if (rc != 0)
        return rc;
    if (self == NULL)
        return EBB_EINVAL;
    if (pu_settled(&c, out))
        return 0;
    switch (job->market) {
    case EBB_JOB_SPOT:
        pu_run_market(&c, EBB_MARKET_SPOT, out);
        break;
    case EBB_JOB_ON_DEMAND:
        pu_run_market(&c, EBB_MARKET_ON_DEMAND, out);
        break;
    case EBB_JOB_SPOT_FALLBACK:
    default:
        fallback(self, &c, out);
        break;
    }
    return 0;
}
