/* ebbd's Prometheus endpoint (docs/metrics.md): GET /metrics on
 * metrics.listen, rendered by metrics.c from what the daemon knows.
 *
 * A scrape is answered on the loop, synchronously (httpd's contract), from
 * numbers that are cheap to get there: job counts (one grouped query on a
 * small table), the engine's poll health and market losses, and the two
 * histograms. Money is the exception: summing the ledger and building the
 * savings report may take a while on a large ledger, so they are computed
 * off the loop (libuv's thread pool, a store handle of its own) and a
 * scrape shows the latest snapshot, starting a fresh one when it is older
 * than MONEY_MAX_AGE. Prometheus scrapes every 15-60 s, so its graphs lag
 * one scrape behind the ledger at most.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/paths.h"
#include "daemon/daemon.h"
#include "ebb_build_config.h"
#include "io/httpd.h"
#include "report/metrics.h"
#include "report/report.h"
#include "store/store_ledger.h"

/* A money snapshot older than this is refreshed by the next scrape (wall
 * time). */
#define MONEY_MAX_AGE_MS 5000

/* How often the lag probe's timer is due (wall time). */
#define LAG_INTERVAL_MS 100

/* What the money snapshot holds per currency. */
struct money {
    char currency[4];
    ebb_micros spend, savings;
};

/* One refresh of the money snapshot, off the loop. */
struct money_work {
    uv_work_t req;
    struct ebb__daemon_metrics *m;
    char *db_path;
    ebb_time_ms now;                         /* the clock's, for the report */
    const struct ebb__currency_rate *rates;  /* the daemon's config */
    size_t n_rates;
    const struct ebb__catalog *catalog;      /* the daemon's; may be NULL */
    struct money *money;                     /* the result */
    size_t n_money;
    struct ebb_diag diag;                   /* why savings are missing */
};

struct ebb__daemon_metrics {
    struct ebb__daemon *d;
    struct ebb__httpd *httpd;
    uv_timer_t lag_timer;
    uint64_t lag_due_ns;     /* uv_hrtime() when the probe is due */
    struct ebb__histogram lag;
    struct money *money;     /* the latest snapshot */
    size_t n_money;
    uint64_t money_at_ns;    /* when it was taken; 0: never */
    struct money_work *work; /* a refresh in flight, or NULL */
    int warned;              /* the savings problem has been logged */
    /* Closing: every handle and the refresh in flight must finish. */
    int pending;
    void (*closed)(void *arg);
    void *closed_arg;
};

/* ---- the money snapshot (off the loop) ---------------------------------- */

static int add_sum(void *arg, const char *currency, ebb_micros total)
{
    struct money_work *w = arg;
    struct money *grown = realloc(w->money, (w->n_money + 1) * sizeof(*grown));
    if (grown == NULL)
        return EBB_ENOMEM;
    w->money = grown;
    struct money *c = &w->money[w->n_money++];
    *c = (struct money){.spend = total};
    snprintf(c->currency, sizeof(c->currency), "%s", currency);
    return 0;
}

/* The ledger's sum per currency, from the refresh's own store handle. */
static int ledger_sums(struct ebb__store *store, struct money_work *w)
{
    int rc = ebb__store_ledger_sums(store, add_sum, w);
    if (rc != 0) {
        ebb_diag_set(&w->diag, NULL, 0, "cannot sum the ledger: %s",
                      rc == EBB_ENOMEM ? "out of memory"
                                       : ebb__store_errmsg(store));
        return EBB_EDB;
    }
    return 0;
}

/* Savings as `ebb report` computes them (the on-demand reference less what
 * those rows cost), of the whole ledger, in `c`'s currency. */
static void savings_in(struct ebb__store *store, struct money_work *w,
                       struct money *c)
{
    struct ebb__report_opts o = {
        .since = 0, .until = w->now + 1, .currency = c->currency,
        .rates = w->rates, .n_rates = w->n_rates, .catalog = w->catalog,
    };
    struct ebb__report *r = NULL;
    struct ebb_diag d = {{0}};
    if (ebb__report_build(store, &o, &r, &d) == 0)
        c->savings = ebb__report_saved(r->total.on_demand, r->total.on_demand_basis);
    else if (w->diag.msg[0] == '\0')
        ebb_diag_set(&w->diag, NULL, 0, "ebb_savings{currency=\"%s\"} is 0: %s",
                      c->currency, d.msg);
    ebb__report_free(r);
}

static void money_run(uv_work_t *req)
{
    struct money_work *w = req->data;
    char err[256];
    struct ebb__store *store = NULL;
    if (ebb__store_open(w->db_path, &store, err, sizeof(err)) != 0) {
        ebb_diag_set(&w->diag, NULL, 0, "cannot open the store: %s", err);
        return;
    }
    if (ledger_sums(store, w) == 0)
        for (size_t i = 0; i < w->n_money; i++)
            savings_in(store, w, &w->money[i]);
    ebb__store_close(store);
}

static void release(struct ebb__daemon_metrics *m);

static void money_done(uv_work_t *req, int status)
{
    struct money_work *w = req->data;
    struct ebb__daemon_metrics *m = w->m;
    m->work = NULL;
    if (status == 0 && w->money != NULL) {
        free(m->money);
        m->money = w->money;
        m->n_money = w->n_money;
        w->money = NULL;
    }
    if (status == 0)
        m->money_at_ns = uv_hrtime();
    /* Said once: a missing currency rate would repeat at every scrape. */
    if (status == 0 && w->diag.msg[0] != '\0' && !m->warned) {
        ebb__warn("metrics: %s", w->diag.msg);
        m->warned = 1;
    }
    free(w->money);
    free(w->db_path);
    free(w);
    if (m->closed != NULL)
        release(m);
}

static void money_refresh(struct ebb__daemon_metrics *m)
{
    if (m->work != NULL || m->closed != NULL)
        return;
    struct ebb__daemon *d = m->d;
    struct money_work *w = calloc(1, sizeof(*w));
    if (w == NULL || (w->db_path = ebb__path_join(d->state_dir, "ebb.db")) == NULL) {
        free(w);
        return;
    }
    w->req.data = w;
    w->m = m;
    w->now = ebb__clock_now(&d->clock);
    w->rates = d->config->rates;
    w->n_rates = d->config->n_rates;
    w->catalog = d->catalog;
    if (uv_queue_work(&d->loop, &w->req, money_run, money_done) != 0) {
        free(w->db_path);
        free(w);
        return;
    }
    m->work = w;
}

/* ---- event-loop lag ------------------------------------------------------- */

/* A wall-clock timer (not the ebb clock, which may run faster): how late it
 * runs is how long ready work waited for the loop. */
static void on_lag_probe(uv_timer_t *t)
{
    struct ebb__daemon_metrics *m = t->data;
    uint64_t now = uv_hrtime();
    double late = now > m->lag_due_ns ? (double)(now - m->lag_due_ns) / 1e9 : 0;
    ebb__histogram_observe(&m->lag, late);
    m->lag_due_ns = now + (uint64_t)LAG_INTERVAL_MS * 1000000u;
    uv_timer_start(t, on_lag_probe, LAG_INTERVAL_MS, 0);
}

/* ---- scrapes -------------------------------------------------------------- */

#define MAX_STATES 32

struct job_counts {
    struct ebb__metrics_jobs jobs[MAX_STATES];
    char names[MAX_STATES][32];
    size_t n;
};

static void count_state(void *arg, const char *state, int64_t count)
{
    struct job_counts *c = arg;
    if (c->n == MAX_STATES)
        return;
    snprintf(c->names[c->n], sizeof(c->names[c->n]), "%s", state);
    c->jobs[c->n] = (struct ebb__metrics_jobs){c->names[c->n], count};
    c->n++;
}

/* Per provider plugin: its polls, and the losses ebb saw on its offers
 * since it started (the market's counts, which the forecasts use too). */
static struct ebb__metrics_provider *provider_counts(const struct ebb__daemon *d)
{
    size_t n = d->registry.n_providers;
    struct ebb__metrics_provider *p = calloc(n ? n : 1, sizeof(*p));
    if (p == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *name = d->registry.providers[i].plugin->name;
        const struct ebb__poll_health *h =
            d->poller_ready ? ebb__poller_health(&d->poller, name) : NULL;
        p[i].provider = name;
        p[i].price_polls = h != NULL ? h->polls : 0;
        p[i].price_poll_errors = h != NULL ? h->errors : 0;
        const struct ebb__market *m = ebb__engine_market(d->engine);
        for (size_t k = 0; k < m->n_offers; k++)
            if (strcmp(m->offers[k].plugin, name) == 0)
                p[i].preemptions += m->offers[k].losses;
    }
    return p;
}

static void scrape(struct ebb__daemon_metrics *m, struct ebb__httpd_response *res)
{
    struct ebb__daemon *d = m->d;
    struct job_counts jobs = {.n = 0};
    if (ebb__store_job_counts(d->store, count_state, &jobs) != 0) {
        res->status = 500;
        ebb__httpd_set_bodyf(res, "cannot count jobs: %s\n",
                             ebb__store_errmsg(d->store));
        return;
    }
    struct ebb__metrics_money *money = calloc(m->n_money ? m->n_money : 1,
                                              sizeof(*money));
    size_t n_money = money != NULL ? m->n_money : 0;
    for (size_t i = 0; i < n_money; i++)
        money[i] = (struct ebb__metrics_money){
            m->money[i].currency, m->money[i].spend, m->money[i].savings};
    struct ebb__metrics_provider *providers = provider_counts(d);
    struct ebb__metrics mt = {
        .version = EBB_VERSION,
        /* On ebb's clock, as `ebb status` says it: the wall clock unless
         * clock.start or a clock speed is configured. */
        .start_time = (double)d->started_at / EBB_MS_PER_SECOND,
        .jobs = jobs.jobs, .n_jobs = jobs.n,
        .money = money, .n_money = n_money,
        .providers = providers,
        .n_providers = d->registry.n_providers,
        .checkpoint_duration = &d->checkpoint_durations,
        .loop_lag = &m->lag,
    };
    char *text = money != NULL && providers != NULL ? ebb__metrics_render(&mt) : NULL;
    free(providers);
    free(money);
    if (text == NULL) {
        res->status = 500;
        return;
    }
    ebb__httpd_add_header(res, "Content-Type", EBB__METRICS_CONTENT_TYPE);
    ebb__httpd_set_body(res, text, strlen(text));
    free(text);
    if (m->money_at_ns == 0 ||
        uv_hrtime() - m->money_at_ns > (uint64_t)MONEY_MAX_AGE_MS * 1000000u)
        money_refresh(m);
}

static void handle(const struct ebb__httpd_request *req,
                   struct ebb__httpd_response *res, void *arg)
{
    if (strcmp(req->path, "/metrics") != 0) {
        res->status = 404;
        ebb__httpd_set_bodyf(res, "not found: the metrics are at /metrics\n");
        return;
    }
    if (strcmp(req->method, "GET") != 0) {
        res->status = 405;
        ebb__httpd_add_header(res, "Allow", "GET");
        return;
    }
    scrape(arg, res);
}

/* ---- start and close ------------------------------------------------------ */

struct ebb__httpd *ebb__daemon_metrics_httpd(struct ebb__daemon_metrics *m)
{
    return m->httpd;
}

int ebb__daemon_metrics_start(struct ebb__daemon *d)
{
    const char *address = d->config->metrics_listen;
    if (address == NULL)
        return 0;
    char ip[64];
    uint16_t port;
    if (ebb__httpd_parse_address(address, ip, sizeof(ip), &port) != 0) {
        ebb__error("metrics.listen: %s is not an address and port (example: "
                   "127.0.0.1:9464)", address);
        return 2;
    }
    struct ebb__daemon_metrics *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return 1;
    m->d = d;
    ebb__histogram_init(&m->lag, ebb__metrics_lag_bounds, ebb__metrics_lag_n_bounds);
    int rc = ebb__httpd_listen(&m->httpd, &d->loop, ip, port, handle, m);
    if (rc != 0) {
        ebb__error("cannot listen on %s for metrics: %s", address,
                   rc == EBB_EIO ? "address in use or not available"
                                 : ebb_strerror(rc));
        free(m);
        return rc == EBB_EINVAL ? 2 : 1;
    }
    uv_timer_init(&d->loop, &m->lag_timer);
    m->lag_timer.data = m;
    m->lag_due_ns = uv_hrtime() + (uint64_t)LAG_INTERVAL_MS * 1000000u;
    uv_timer_start(&m->lag_timer, on_lag_probe, LAG_INTERVAL_MS, 0);
    d->metrics = m;
    money_refresh(m);
    int v6 = strchr(ip, ':') != NULL;
    ebb__info("metrics at http://%s%s%s:%u/metrics", v6 ? "[" : "", ip,
              v6 ? "]" : "", (unsigned)ebb__httpd_port(m->httpd));
    return 0;
}

/* Frees `m` once its last handle and refresh are done. */
static void release(struct ebb__daemon_metrics *m)
{
    if (m->pending > 0 || m->work != NULL)
        return;
    void (*cb)(void *) = m->closed;
    void *arg = m->closed_arg;
    m->d->metrics = NULL;
    free(m->money);
    free(m);
    cb(arg);
}

static void on_part_closed(struct ebb__daemon_metrics *m)
{
    m->pending--;
    release(m);
}

static void on_httpd_closed(void *arg)
{
    on_part_closed(arg);
}

static void on_timer_closed(uv_handle_t *h)
{
    on_part_closed(h->data);
}

void ebb__daemon_metrics_close(struct ebb__daemon *d, void (*cb)(void *arg),
                               void *arg)
{
    struct ebb__daemon_metrics *m = d->metrics;
    if (m == NULL) {
        cb(arg);
        return;
    }
    m->closed = cb;
    m->closed_arg = arg;
    m->pending = 2;
    /* A refresh not yet started is dropped; one running is waited for. */
    if (m->work != NULL)
        uv_cancel((uv_req_t *)&m->work->req);
    ebb__httpd_close(m->httpd, on_httpd_closed, m);
    uv_close((uv_handle_t *)&m->lag_timer, on_timer_closed);
}
