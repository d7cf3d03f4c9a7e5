/* Quotes from ebbd's own market (report/plan.h): the `plan` method
 * {file, yaml, samples, seed}, answered with the quote, and the quote that
 * a team's `admission: p90` judges a submission by (daemon_jobs.c).
 *
 * On the loop it only reads the spec and copies the market's last four
 * weeks of spot prices and capacities as CSV text; a worker thread of
 * libuv's pool writes them to a temporary directory, loads them with the
 * trace readers and runs the samples (seconds of work), so the loop never
 * waits for a quote. The worker's engines share nothing with ebbd's: their
 * own store, clock and plugin instances. Plans count against
 * api.max_store_readers, as the other long reads do, and a user has one
 * quote running at a time: seconds of CPU each, so one user's quotes
 * would otherwise take every reader from the others.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include <ebb/buf.h>
#include <ebb/list.h>
#include <ebb/trace.h>
#include <ebb/units.h>

#include "base/log.h"
#include "base/paths.h"
#include "daemon/daemon.h"
#include "engine/engine.h"
#include "jobs/jobspec.h"
#include "market/market.h"
#include "report/plan.h"


struct plan_req {
    uv_work_t req;
    struct ebb__daemon *d;
    struct ebb__api_call *call;
    struct ebb_list node;   /* in d->quotes while it runs */
    struct ebb__job_spec spec;
    ebb__daemon_quote_cb cb;
    void *arg;
    char *prices, *avail; /* CSV text; avail NULL when no capacity is known */
    char *catalog;
    char *policy;
    struct ebb__backtest_speed *speeds; /* what the job's family learned (owned) */
    size_t n_speeds;
    struct ebb__plan_options opt;
    json_t *result;
    const char *code;
    struct ebb_diag diag;
};

/* Whether an offer before k has o's availability key. */
static int avail_seen(const struct ebb__market *m, size_t k)
{
    const struct ebb__offer *o = &m->offers[k];
    for (size_t i = 0; i < k; i++) {
        const struct ebb__offer *p = &m->offers[i];
        if (p->market == EBB_MARKET_SPOT && strcmp(p->provider, o->provider) == 0 &&
            strcmp(p->zone, o->zone) == 0 &&
            strcmp(p->instance_type, o->instance_type) == 0)
            return 1;
    }
    return 0;
}

/* The market's spot history before `now` as the two traces' text. */
static int snapshot(struct plan_req *r, const struct ebb__market *m, ebb_time_ms now)
{
    struct ebb_buf p = {0}, a = {0};
    ebb_buf_puts(&p, EBB__PLAN_PRICES_HEADER);
    ebb_buf_puts(&a, EBB__PLAN_AVAIL_HEADER);
    size_t avail_rows = 0;
    for (size_t k = 0; k < m->n_offers; k++) {
        const struct ebb__offer *o = &m->offers[k];
        if (o->market != EBB_MARKET_SPOT || strcmp(o->currency, "USD") != 0)
            continue;
        size_t end = 0;
        while (end < o->n_steps && o->steps[end].at < now)
            end++;
        size_t begin = end;
        while (begin > 0 && o->steps[begin - 1].at >= now - EBB__ENGINE_OUTLOOK_HISTORY)
            begin--;
        if (begin > 0)
            begin--;
        int own_avail = !avail_seen(m, k);
        for (size_t i = begin; i < end; i++) {
            const struct ebb__market_step *s = &o->steps[i];
            ebb__plan_price_row(&p, s->at, o->provider, o->region, o->zone,
                                o->instance_type, o->product, s->price);
            /* Unknown capacity (-1) starts and ends no period
             * (ebb__availability_record); it is left out. */
            if (own_avail && s->capacity >= 0) {
                ebb__plan_avail_row(&a, s->at, o->provider, o->zone,
                                    o->instance_type, s->capacity);
                avail_rows++;
            }
        }
    }
    r->prices = ebb_buf_take(&p);
    r->avail = avail_rows > 0 ? ebb_buf_take(&a) : NULL;
    ebb_buf_free(&a);
    return r->prices != NULL && (avail_rows == 0 || r->avail != NULL) ? 0 : EBB_ENOMEM;
}

/* One learned speed of the job's family, copied into the request. */
static int copy_speed(void *arg, const struct ebb__speed_key *k, long long samples,
                      const char *rates)
{
    struct plan_req *r = arg;
    struct ebb__backtest_speed *grown = realloc(r->speeds, (r->n_speeds + 1) * sizeof(*grown));
    if (grown == NULL)
        return EBB_ENOMEM;
    r->speeds = grown;
    struct ebb__backtest_speed *s = &r->speeds[r->n_speeds++];
    *s = (struct ebb__backtest_speed){
        .key = {strdup(k->family), strdup(k->gpu_model), strdup(k->provider),
                strdup(k->host)},
        .samples = samples,
        .rates = strdup(rates),
    };
    return s->key.family && s->key.gpu_model && s->key.provider && s->key.host && s->rates
               ? 0
               : EBB_ENOMEM;
}

/* Off the loop: the traces through the readers, then the quote. */
static void plan_work(uv_work_t *req)
{
    struct plan_req *r = req->data;
    r->code = "internal";
    char dir[4096];
    if (ebb__plan_tmpdir("ebbd-market", dir, sizeof(dir), &r->diag) != 0)
        return;
    char *pp = ebb__path_join(dir, "market-prices.csv");
    char *ap = ebb__path_join(dir, "market-availability.csv");
    struct ebb_price_trace *prices = NULL;
    struct ebb_avail_trace *avail = NULL;
    int rc = pp && ap ? ebb__plan_write_text(pp, r->prices, NULL, &r->diag) : EBB_ENOMEM;
    if (rc == 0 && r->avail != NULL)
        rc = ebb__plan_write_text(ap, r->avail, NULL, &r->diag);
    if (rc == 0)
        rc = ebb_price_trace_load(pp, &prices, &r->diag);
    if (rc == 0 && r->avail != NULL)
        rc = ebb_avail_trace_load(ap, &avail, &r->diag);
    if (rc == 0) {
        r->opt.prices = prices;
        r->opt.availability = avail;
        rc = ebb__plan_run(&r->opt, &r->result, &r->diag);
        if (rc == EBB_EINVAL || rc == EBB_ECONFIG)
            r->code = "bad_request";
    } else if (rc == EBB_EINVAL) {
        /* The market's own text did not load: a name with a comma. */
        r->code = "internal";
    }
    ebb_price_trace_free(prices);
    ebb_avail_trace_free(avail);
    if (pp != NULL)
        unlink(pp);
    if (ap != NULL)
        unlink(ap);
    rmdir(dir);
    free(pp);
    free(ap);
}

static void plan_free(struct plan_req *r)
{
    for (size_t i = 0; i < r->n_speeds; i++) {
        struct ebb__backtest_speed *s = &r->speeds[i];
        free((char *)s->key.family);
        free((char *)s->key.gpu_model);
        free((char *)s->key.provider);
        free((char *)s->key.host);
        free((char *)s->rates);
    }
    free(r->speeds);
    ebb__jobspec_free(&r->spec);
    free(r->prices);
    free(r->avail);
    free(r->catalog);
    free(r->policy);
    free(r);
}

static void plan_done(uv_work_t *req, int status)
{
    struct plan_req *r = req->data;
    r->d->store_readers--;
    ebb_list_remove(&r->node);
    /* A quote that ends once shutdown has freed the engine is answered as
     * cancelled: its callback may not read the engine. */
    if (r->d->engine == NULL) {
        json_decref(r->result);
        r->result = NULL;
    }
    if (r->result == NULL && (status == UV_ECANCELED || r->d->engine == NULL)) {
        r->code = "internal";
        ebb_diag_set(&r->diag, NULL, 0, "ebbd is shutting down");
    } else if (r->result == NULL && r->diag.msg[0] == '\0') {
        ebb_diag_set(&r->diag, NULL, 0, "the quote failed");
    }
    r->cb(r->d, r->call, &r->spec, r->result, r->code, r->diag.msg, r->arg);
    json_decref(r->result);
    plan_free(r);
}

/* Whether a quote for `uid` runs now (ebbd's own are nobody's). */
static bool quoting(const struct ebb__daemon *d, uid_t uid)
{
    const struct ebb_list *n;
    ebb_list_foreach(n, &d->quotes) {
        const struct ebb__api_call *c = ebb_list_entry(n, const struct plan_req, node)->call;
        if (c != NULL && c->uid == uid)
            return true;
    }
    return false;
}

/* A quote that does not start: said to `call`'s caller, or, for one of
 * ebbd's own (call NULL), to the debug log. */
static void refuse(struct ebb__api_call *call, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(struct ebb__api_call *call, const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (call != NULL)
        ebb__api_fail(call, code, "%s", msg);
    else
        ebb__debug("a background quote did not start: %s", msg);
}

int ebb__daemon_quote(struct ebb__daemon *d, struct ebb__api_call *call,
                      struct ebb__job_spec *spec, unsigned samples, uint64_t seed,
                      ebb__daemon_quote_cb cb, void *arg)
{
    if (d->store_readers >= d->config->api_max_store_readers) {
        refuse(call, "busy", "ebbd is already answering %u long reads "
               "(api.max_store_readers); try again in a moment", d->store_readers);
        ebb__jobspec_free(spec);
        return -1;
    }
    if (call != NULL && quoting(d, call->uid)) {
        refuse(call, "busy", "ebbd is already quoting a job of yours (uid %u; "
               "one quote at a time per user); try again when it has answered",
               (unsigned)call->uid);
        ebb__jobspec_free(spec);
        return -1;
    }
    struct plan_req *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        refuse(call, "internal", "out of memory");
        ebb__jobspec_free(spec);
        return -1;
    }
    r->d = d;
    r->call = call;
    r->req.data = r;
    r->cb = cb;
    r->arg = arg;
    r->spec = *spec;
    *spec = (struct ebb__job_spec){0};
    char *data = ebb__data_dir();
    r->catalog = data ? ebb__path_join(data, "catalog.csv") : NULL;
    free(data);
    if (d->catalog == NULL || r->catalog == NULL) {
        refuse(call, "internal", "ebbd has no instance catalog to quote "
               "from (set EBB_DATA_DIR to the directory with catalog.csv)");
        plan_free(r);
        return -1;
    }
    /* The policy ebbd would give the job: its own, else ebbd's default. */
    r->policy = strdup(r->spec.policy ? r->spec.policy : d->config->default_policy);
    ebb_time_ms now = ebb__clock_now(&d->clock);
    int rc = r->policy != NULL ? snapshot(r, ebb__engine_market(d->engine), now)
                               : EBB_ENOMEM;
    /* The job's family (its name) runs as fast in the quote as ebbd has
     * seen it run on each host. */
    if (rc == 0)
        rc = ebb__engine_speeds_of(d->engine, r->spec.name ? r->spec.name : "", copy_speed,
                                   r);
    r->opt = (struct ebb__plan_options){
        .catalog = r->catalog, .job = &r->spec, .policy = r->policy,
        .now = now, .samples = samples, .seed = seed,
        .speeds = r->speeds, .n_speeds = r->n_speeds,
        /* ebbd's own quotes take one CPU; a caller's, every one. */
        .threads = call == NULL ? 1 : 0,
    };
    if (rc == 0)
        rc = uv_queue_work(&d->loop, &r->req, plan_work, plan_done);
    if (rc != 0) {
        refuse(call, "internal", "cannot start the quote: %s",
               rc == EBB_ENOMEM ? "out of memory" : uv_strerror(rc));
        plan_free(r);
        return -1;
    }
    d->store_readers++;
    ebb_list_insert_head(&d->quotes, &r->node);
    return 0;
}

static void plan_answer(struct ebb__daemon *d, struct ebb__api_call *call,
                        struct ebb__job_spec *spec, json_t *quote,
                        const char *code, const char *msg, void *arg)
{
    (void)d;
    (void)spec;
    (void)arg;
    if (quote != NULL)
        ebb__api_reply(call, json_incref(quote));
    else
        ebb__api_fail(call, code, "%s", msg);
}

/* An integer param within [lo, hi], or `def` when absent. */
static int param_uint(struct ebb__api_call *call, const char *key, json_int_t lo,
                      json_int_t hi, json_int_t def, json_int_t *out)
{
    const json_t *v = json_object_get(call->params, key);
    *out = def;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        ebb__api_fail(call, "bad_request", "%s: must be an integer from %lld to %lld",
                      key, (long long)lo, (long long)hi);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

void ebb__api_plan(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    const char *file = json_string_value(json_object_get(call->params, "file"));
    const char *yaml = json_string_value(json_object_get(call->params, "yaml"));
    if (file == NULL || yaml == NULL) {
        ebb__api_fail(call, "bad_request", "plan needs file and yaml");
        return;
    }
    json_int_t samples, seed;
    if (param_uint(call, "samples", EBB__PLAN_SAMPLES_MIN, EBB__PLAN_SAMPLES_MAX,
                   EBB__PLAN_SAMPLES_DEFAULT, &samples) != 0 ||
        param_uint(call, "seed", 0, INT64_MAX, 1, &seed) != 0)
        return;
    struct ebb__job_spec spec;
    struct ebb_diag diag = {{0}};
    if (ebb__jobspec_load_buffer(file, yaml, strlen(yaml), &spec, &diag) != 0) {
        ebb__api_fail(call, "invalid", "%s", diag.msg);
        return;
    }
    ebb__daemon_quote(d, call, &spec, (unsigned)samples, (uint64_t)seed,
                      plan_answer, NULL);
}
