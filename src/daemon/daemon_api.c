/* The API methods ebbd answers on its unix socket. Each handler reads its
 * params, asks the store or the registry, and answers exactly once. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebb/units.h>

#include "base/paths.h"
#include "daemon/daemon.h"
#include "daemon/daemon_notify.h"
#include "daemon/daemon_params.h"
#include "ebb_build_config.h"
#include "report/forecast_report.h"
#include "report/report_format.h"

static json_t *plugin_json(const struct ebb__plugin_slot *slot)
{
    return json_pack("{s:s,s:s,s:s}", "name", slot->plugin->name,
                     "description", ebb__plugin_description(slot->plugin),
                     "path", slot->plugin->path);
}

/* A provider with how its price polls fare. */
static json_t *provider_json(const struct ebb__daemon *d,
                             const struct ebb__plugin_slot *slot)
{
    json_t *o = plugin_json(slot);
    const struct ebb__poll_health *h =
        d->poller_ready ? ebb__poller_health(&d->poller, slot->plugin->name) : NULL;
    if (h == NULL)
        return o;
    char status[200], at[40] = "", next[40] = "";
    if (h->last_at > 0)
        ebb_format_time(h->last_at, at, sizeof(at));
    if (h->next_at > 0)
        ebb_format_time(h->next_at, next, sizeof(next));
    if (h->stopped)
        snprintf(status, sizeof(status), "stopped: %s (fix the credentials, "
                 "then restart ebbd)", ebb_strerror(h->last_status));
    else if (h->polls == 0)
        snprintf(status, sizeof(status), "not polled yet");
    else if (h->last_status != 0 && h->next_at > 0)
        snprintf(status, sizeof(status), "error: %s (backing off: next poll %s)",
                 ebb_strerror(h->last_status), next);
    else if (h->last_status != 0)
        snprintf(status, sizeof(status), "error: %s", ebb_strerror(h->last_status));
    else
        snprintf(status, sizeof(status), "ok");
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "polls", json_integer((json_int_t)h->polls));
    json_object_set_new(o, "poll_errors", json_integer((json_int_t)h->errors));
    json_object_set_new(o, "last_poll", h->last_at > 0 ? json_string(at) : json_null());
    json_object_set_new(o, "next_poll", h->next_at > 0 ? json_string(next) : json_null());
    json_object_set_new(o, "poll_interval_ms", json_integer((json_int_t)h->interval));
    return o;
}

static void count_job(void *arg, const char *state, int64_t count)
{
    json_object_set_new(arg, state, json_integer(count));
}

static void api_status(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    json_t *jobs = json_object();
    if (ebb__store_job_counts(d->store, count_job, jobs) != 0) {
        json_decref(jobs);
        ebb__api_fail(call, "internal", "cannot count jobs: %s",
                      ebb__store_errmsg(d->store));
        return;
    }
    json_t *providers = json_array();
    for (size_t i = 0; i < d->registry.n_providers; i++)
        json_array_append_new(providers, provider_json(d, &d->registry.providers[i]));
    json_t *policies = json_array();
    for (size_t i = 0; i < d->registry.n_policies; i++)
        json_array_append_new(policies, plugin_json(&d->registry.policies[i]));
    ebb_time_ms now = ebb__clock_now(&d->clock);
    char started[40], clock_now[40];
    ebb_format_time(d->started_at, started, sizeof(started));
    ebb_format_time(now, clock_now, sizeof(clock_now));
    /* Uptime is wall time, whatever the clock's speed: an accelerated
     * clock's market time is the clock's own (clock_now, clock_speed). */
    ebb__api_reply(call, json_pack("{s:s,s:I,s:s,s:I,s:s,s:f,s:b,s:s,s:s,s:s,s:s,s:o,s:o,s:o}",
        "version", EBB_VERSION,
        "pid", (json_int_t)getpid(),
        "started_at", started,
        "uptime_s", (json_int_t)(ebb__clock_real_ms(&d->clock, now - d->started_at) /
                                 EBB_MS_PER_SECOND),
        "clock_now", clock_now,
        "clock_speed", d->clock_speed > 0 ? d->clock_speed : 1.0,
        "clock_set", d->config->clock_start != 0,
        "state_dir", d->state_dir,
        "config", d->config_name,
        "clock", d->clock.is_virtual ? "virtual" : "real",
        "default_policy", d->config->default_policy,
        "providers", providers,
        "policies", policies,
        "jobs", jobs));
}

static void api_providers(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    json_t *providers = json_array();
    for (size_t i = 0; i < d->registry.n_providers; i++)
        json_array_append_new(providers, provider_json(d, &d->registry.providers[i]));
    ebb__api_reply(call, json_pack("{s:o}", "providers", providers));
}

static int add_price(void *arg, const struct ebb__price_row *row)
{
    const struct ebb_price *p = &row->price;
    char at[40];
    ebb_format_time(p->at, at, sizeof(at));
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:f,s:I,s:s,s:s}",
        "provider", row->provider, "region", p->region, "zone", p->zone,
        "instance_type", p->instance_type, "product", p->product,
        "market", p->market == EBB_MARKET_SPOT ? "spot" : "on-demand",
        "price", (double)p->price_per_hour / EBB_MICROS_PER_UNIT,
        "price_micros", (json_int_t)p->price_per_hour,
        "currency", p->currency, "observed_at", at);
    return json_array_append_new(arg, o) == 0 ? 0 : EBB_ENOMEM;
}

static const char *param_string(struct ebb__api_call *call, const char *key)
{
    return json_string_value(json_object_get(call->params, key));
}

/* ---- reads off the loop ------------------------------------------------ */

/* Reads of the store that can take long (every series, weeks of history)
 * run on libuv's thread pool, each with its own store handle (a handle
 * belongs to one thread), and answer from the loop when done. */
struct store_read {
    uv_work_t req;
    struct ebb__daemon *d;
    struct ebb__api_call *call;
    char *db_path;
    struct ebb__price_filter filter; /* strings owned here */
    /* Off the loop: fills result, or code and diag. Touches no daemon. */
    void (*run)(struct store_read *r, struct ebb__store *store);
    struct ebb__forecast_opts opts; /* forecast only */
    /* report only; its strings and arrays belong to the call's params
     * (kept until the call is answered, after the work) and to the
     * daemon's config and catalog (never changed while it runs). */
    struct ebb__report_opts report;
    json_t *result;
    const char *code; /* error code when result is NULL */
    struct ebb_diag diag;
};

static void store_read_run(uv_work_t *req)
{
    struct store_read *r = req->data;
    r->code = "internal";
    char err[256];
    struct ebb__store *store = NULL;
    if (ebb__store_open(r->db_path, &store, err, sizeof(err)) != 0) {
        ebb_diag_set(&r->diag, NULL, 0, "cannot open the store: %s", err);
        return;
    }
    r->run(r, store);
    ebb__store_close(store);
}

static void store_read_free(struct store_read *r)
{
    free(r->db_path);
    free((char *)r->filter.provider);
    free((char *)r->filter.instance_type);
    free((char *)r->filter.zone);
    free(r);
}

static void prices_run(struct store_read *r, struct ebb__store *store);

static void store_read_done(uv_work_t *req, int status)
{
    struct store_read *r = req->data;
    r->d->store_readers--;
    if (r->result != NULL && r->run == prices_run) /* on the loop: the engine's */
        ebb__daemon_price_speeds(r->d, json_object_get(r->result, "prices"));
    if (r->result != NULL)
        ebb__api_reply(r->call, r->result);
    else if (status == UV_ECANCELED)
        ebb__api_fail(r->call, "internal", "ebbd is shutting down");
    else
        ebb__api_fail(r->call, r->code, "%s", r->diag.msg);
    store_read_free(r);
}

static int dup_param(struct ebb__api_call *call, const char *key,
                     const char **out)
{
    const char *v = param_string(call, key);
    *out = v != NULL ? strdup(v) : NULL;
    return v == NULL || *out != NULL;
}

/* Starts `run` off the loop for `call`, with the provider, instance_type
 * and zone params as the filter; the call is answered when it is done.
 * At most api.max_store_readers run at once: each holds a thread of
 * libuv's pool (which DNS lookups and checkpoints share) and a store
 * handle, so one more is answered "busy" rather than queued without end. */
static void store_read_start(struct ebb__daemon *d, struct ebb__api_call *call,
                             void (*run)(struct store_read *, struct ebb__store *),
                             const struct ebb__forecast_opts *opts,
                             const struct ebb__report_opts *report)
{
    if (d->store_readers >= d->config->api_max_store_readers) {
        ebb__api_fail(call, "busy", "ebbd is already answering %u long reads of "
                      "the store (api.max_store_readers); try again in a moment",
                      d->store_readers);
        return;
    }
    struct store_read *r = calloc(1, sizeof(*r));
    int ok = r != NULL;
    if (ok) {
        r->d = d;
        r->call = call;
        r->run = run;
        r->opts = opts != NULL ? *opts : (struct ebb__forecast_opts){0};
        r->report = report != NULL ? *report : (struct ebb__report_opts){0};
        r->req.data = r;
        r->db_path = ebb__path_join(d->state_dir, "ebb.db");
        ok = r->db_path != NULL &&
             dup_param(call, "provider", &r->filter.provider) &&
             dup_param(call, "instance_type", &r->filter.instance_type) &&
             dup_param(call, "zone", &r->filter.zone);
    }
    int rc = ok ? uv_queue_work(&d->loop, &r->req, store_read_run,
                                store_read_done)
                : UV_ENOMEM;
    if (rc == 0)
        d->store_readers++;
    if (rc != 0) {
        if (r != NULL)
            store_read_free(r);
        ebb__api_fail(call, "internal", "cannot read the store: %s",
                      uv_strerror(rc));
    }
}

/* ---- prices ------------------------------------------------------------ */

/* What one history answer may hold (about 80 bytes of JSON a point), so
 * that it stays well inside one API message. */
#define HISTORY_MAX_POINTS 100000

/* Groups observations by series: the store gives the rows of one series
 * together, oldest first. */
struct history_build {
    json_t *series;      /* the answer's array */
    json_t *points;      /* the current series' points; borrowed */
    char key[512];       /* the current series */
    size_t n_points;
    struct store_read *r;
};

static int add_history_point(void *arg, const struct ebb__price_row *row)
{
    struct history_build *h = arg;
    const struct ebb_price *p = &row->price;
    const char *market = p->market == EBB_MARKET_SPOT ? "spot" : "on-demand";
    if (++h->n_points > HISTORY_MAX_POINTS) {
        ebb_diag_set(&h->r->diag, NULL, 0, "more than %d observations; narrow "
                      "the history with provider, instance_type and zone, or "
                      "with since and until", HISTORY_MAX_POINTS);
        h->r->code = "bad_request";
        return EBB_EINVAL;
    }
    char key[sizeof(h->key)];
    snprintf(key, sizeof(key), "%s\n%s\n%s\n%s\n%s\n%s", row->provider,
             p->region, p->zone, p->instance_type, p->product, market);
    if (h->points == NULL || strcmp(key, h->key) != 0) {
        h->points = json_array();
        json_t *s = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o}",
            "provider", row->provider, "region", p->region, "zone", p->zone,
            "instance_type", p->instance_type, "product", p->product,
            "market", market, "currency", p->currency, "points", h->points);
        if (s == NULL || json_array_append_new(h->series, s) != 0)
            return EBB_ENOMEM;
        memcpy(h->key, key, sizeof(key));
    }
    char at[40];
    ebb_format_time(p->at, at, sizeof(at));
    json_t *pt = json_pack("{s:s,s:f,s:I}", "observed_at", at,
                           "price", (double)p->price_per_hour / EBB_MICROS_PER_UNIT,
                           "price_micros", (json_int_t)p->price_per_hour);
    return json_array_append_new(h->points, pt) == 0 ? 0 : EBB_ENOMEM;
}

/* The history's window is in r->report.since/until, read as ebb report
 * reads its own. */
static void history_run(struct store_read *r, struct ebb__store *store)
{
    struct history_build h = {.series = json_array(), .r = r};
    int rc = h.series != NULL
                 ? ebb__store_price_history(store, &r->filter, r->report.since,
                                            r->report.until, add_history_point, &h)
                 : EBB_ENOMEM;
    if (rc != 0) {
        json_decref(h.series);
        if (r->diag.msg[0] == '\0')
            ebb_diag_set(&r->diag, NULL, 0, "cannot read prices: %s",
                          rc == EBB_ENOMEM ? "out of memory" : ebb__store_errmsg(store));
        return;
    }
    char since[40], until[40];
    ebb_format_time(r->report.since, since, sizeof(since));
    ebb_format_time(r->report.until, until, sizeof(until));
    /* The strings are in whole seconds, as every time ebb shows; the
     * window exactly is in since_ms and until_ms. */
    r->result = json_pack("{s:s,s:s,s:I,s:I,s:o}", "since", since, "until", until,
                          "since_ms", (json_int_t)r->report.since,
                          "until_ms", (json_int_t)r->report.until,
                          "series", h.series);
}

static void prices_run(struct store_read *r, struct ebb__store *store)
{
    json_t *prices = json_array();
    if (ebb__store_latest_prices(store, &r->filter, add_price, prices) != 0) {
        json_decref(prices);
        ebb_diag_set(&r->diag, NULL, 0, "cannot read prices: %s",
                      ebb__store_errmsg(store));
        return;
    }
    r->result = json_pack("{s:o}", "prices", prices);
}

/* ---- forecast ---------------------------------------------------------- */

/* How far back a forecast reads each series: four weeks show the daily
 * and weekly patterns that spot prices have. */
#define FORECAST_LOOKBACK (28 * EBB_MS_PER_DAY)

/* What one answer may hold, so that it stays well inside one API message
 * (a point is about 70 bytes of JSON). */
#define FORECAST_MAX_TOTAL_POINTS 100000

struct history_ctx {
    struct ebb__forecast_acc *acc;
    struct ebb_diag *diag;
};

static int add_history_row(void *arg, const struct ebb__price_row *row)
{
    struct history_ctx *h = arg;
    return ebb__forecast_acc_add(h->acc, row, h->diag);
}

static void forecast_run(struct store_read *r, struct ebb__store *store)
{
    struct history_ctx h = {ebb__forecast_acc_new(&r->opts), &r->diag};
    ebb_time_ms since = r->opts.origin > FORECAST_LOOKBACK
                            ? r->opts.origin - FORECAST_LOOKBACK : 0;
    int rc = h.acc != NULL ? 0 : EBB_ENOMEM;
    if (rc == 0) {
        rc = ebb__store_price_history(store, &r->filter, since, r->opts.origin,
                                      add_history_row, &h);
        if (rc < 0 && r->diag.msg[0] == '\0')
            ebb_diag_set(&r->diag, NULL, 0, "cannot read prices: %s",
                          ebb__store_errmsg(store));
    }
    if (rc == 0)
        rc = ebb__forecast_acc_finish(h.acc, &r->result, &r->diag);
    if (rc == EBB_EINVAL)
        r->code = "bad_request";
    else if (rc == EBB_ENOMEM && r->diag.msg[0] == '\0')
        ebb_diag_set(&r->diag, NULL, 0, "out of memory");
    ebb__forecast_acc_free(h.acc);
}

static void api_forecast(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    ebb_time_ms at = ebb__clock_now(&d->clock);
    ebb_dur_ms horizon = 24 * EBB_MS_PER_HOUR, step = EBB_MS_PER_HOUR;
    struct ebb_diag bad;
    if (ebb__param_time(call->params, "at", &at, &bad) != 0 ||
        ebb__param_duration(call->params, "horizon", &horizon, &bad) != 0 ||
        ebb__param_duration(call->params, "step", &step, &bad) != 0) {
        ebb__api_fail(call, "bad_request", "%s", bad.msg);
        return;
    }
    size_t n_steps = 0;
    const char *why = NULL;
    if (ebb__forecast_count_steps(horizon, step, &n_steps, &why) != 0) {
        ebb__api_fail(call, "bad_request", "horizon and step: %s", why);
        return;
    }
    struct ebb__forecast_opts opts = {
        .origin = at, .step = step, .n_steps = n_steps,
        .max_total_points = FORECAST_MAX_TOTAL_POINTS,
    };
    store_read_start(d, call, forecast_run, &opts, NULL);
}

/* ---- report ------------------------------------------------------------ */

static void report_run(struct store_read *r, struct ebb__store *store)
{
    struct ebb__report *rep = NULL;
    int rc = ebb__report_build(store, &r->report, &rep, &r->diag);
    if (rc == 0) {
        r->result = ebb__report_json(rep);
        if (r->result == NULL)
            ebb_diag_set(&r->diag, NULL, 0, "out of memory");
    } else if (rc == EBB_EINVAL) {
        r->code = "bad_request";
    }
    ebb__report_free(rep);
}

/* The latest price per series, or with "history" each series' observations
 * in [since, until) (default: the week before ebbd's now). */
static void api_prices(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    if (!json_is_true(json_object_get(call->params, "history"))) {
        store_read_start(d, call, prices_run, NULL, NULL);
        return;
    }
    ebb_time_ms now = ebb__clock_now(&d->clock);
    struct ebb__report_opts window = {.since = now - 7 * EBB_MS_PER_DAY,
                                      .until = now + 1};
    struct ebb_diag bad;
    if (ebb__param_when(call->params, "since", now, 1, &window.since, &bad) != 0 ||
        ebb__param_when(call->params, "until", now, 0, &window.until, &bad) != 0) {
        ebb__api_fail(call, "bad_request", "%s", bad.msg);
        return;
    }
    if (window.since >= window.until) {
        ebb__api_fail(call, "bad_request", "since must come before until");
        return;
    }
    store_read_start(d, call, history_run, NULL, &window);
}

static void api_report(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    ebb_time_ms now = ebb__clock_now(&d->clock);
    struct ebb__report_opts o = {
        .since = now - 30 * EBB_MS_PER_DAY, .until = now,
        .currency = param_string(call, "currency"),
        .rates = d->config->rates, .n_rates = d->config->n_rates,
        .catalog = d->catalog,
        .plans = d->config->plans, .n_plans = d->config->n_plans,
        .chart = json_is_true(json_object_get(call->params, "chart")),
    };
    struct ebb_diag bad;
    if (ebb__param_when(call->params, "since", now, 1, &o.since, &bad) != 0 ||
        ebb__param_when(call->params, "until", now, 0, &o.until, &bad) != 0) {
        ebb__api_fail(call, "bad_request", "%s", bad.msg);
        return;
    }
    const char *by = param_string(call, "by");
    if (ebb__report_by_parse(by, &o.by) != 0) {
        ebb__api_fail(call, "bad_request", "by: \"%s\" is not one of job, "
                      "team, provider, instance-type, day", by);
        return;
    }
    store_read_start(d, call, report_run, NULL, &o);
}

const struct ebb__api_method ebb__daemon_methods[] = {
    {"status", api_status},
    {"providers", api_providers},
    {"prices", api_prices},
    {"forecast", api_forecast},
    {"submit", ebb__api_submit},
    {"plan", ebb__api_plan},
    {"workdir_put", ebb__api_workdir_put},
    {"jobs", ebb__api_jobs},
    {"job", ebb__api_job},
    {"cancel", ebb__api_cancel},
    {"logs", ebb__api_logs},
    {"report", api_report},
    {"schedule_add", ebb__api_schedule_add},
    {"schedules", ebb__api_schedules},
    {"schedule", ebb__api_schedule},
    {"schedule_remove", ebb__api_schedule_remove},
    {"budget", ebb__api_budget},
    {"queue", ebb__api_queue},
    {"notifications", ebb__api_notifications},
    {NULL, NULL},
};
