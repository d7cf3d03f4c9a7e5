/* The sim provider (providers/sim), opened from the build tree by the real
 * plugin loader, configured through its own table from YAML, and driven by
 * a real host on a virtual clock whose sink records every instance event
 * and market change.
 *
 * The traces are small hand-written files under tests/data/sim, so every
 * expected time below can be checked by hand:
 *   prices.csv  offer A us-east-1a p3.2xlarge: 00:00 1.00, 01:00 1.00 (a
 *               repeat), 02:00 1.20, 04:00 0.90; offer B us-east-1b
 *               p3.2xlarge: 2.00 at 00:00, 03:00, 10:00 (repeats only);
 *               offer C us-east-1c p2.xlarge: 0.27 at 00:00.
 *   avail.csv   A: 2 at 00:00, 1 at 01:30, 1 at 01:45 (a repeat), 0 at
 *               05:00, 3 at 06:00; B: 0 at 00:00, 1 at 08:00; us-east-1d
 *               (no offer): 5, then 4 at 02:30. C has none: unlimited.
 *   avail_march.csv  A: 1 at 00:00, 0 at 01:00, 0 at 03:00, in March.
 * All on 2020-01-01 (UTC) unless said otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/gang.h>
#include <ebb/job_model.h>
#include <ebb/provider.h>
#include <ebb/units.h>

#include "base/cfg_table.h"
#include "base/yaml_doc.h"
#include "io/clock.h"
#include "plugin/plugin.h"
#include "plugin/plugin_host.h"

#define S EBB_MS_PER_SECOND
#define MINUTE EBB_MS_PER_MINUTE
#define H EBB_MS_PER_HOUR

static ebb_time_ms T0; /* 2020-01-01T00:00:00Z */

/* ---- the fixture: plugin, config, host, clock, recording sink ---- */

struct rec {
    enum ebb_instance_event_kind kind;
    char id[32];
    ebb_time_ms at, deadline;
    int exit_status;
    ebb_dur_ms work;
    char reason[64];
    int32_t rank;
};

struct fx {
    struct ebb__clock clock;
    struct ebb__host_env env;
    struct ebb__host host;
    struct ebb_host lent;
    struct ebb__plugin *plugin;
    const struct ebb_provider *p;
    void *cfg;
    void *self;
    struct rec *ev;
    size_t n_ev, cap_ev;
    ebb_time_ms changes[64];
    size_t n_changes;
};

static char logbuf[8192];

static void capture_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
    EBB_PRINTF(3, 4);

static void capture_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
{
    (void)ctx;
    (void)level;
    size_t used = strlen(logbuf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(logbuf + used, sizeof(logbuf) - used, fmt, ap);
    va_end(ap);
    used = strlen(logbuf);
    if (used + 1 < sizeof(logbuf)) {
        logbuf[used] = '\n';
        logbuf[used + 1] = '\0';
    }
}

static void sink_event(void *sink, const char *provider,
                       const struct ebb_instance_event *ev)
{
    struct fx *f = sink;
    assert_string_equal(provider, "sim");
    if (f->n_ev == f->cap_ev) {
        f->cap_ev = f->cap_ev ? f->cap_ev * 2 : 64;
        f->ev = realloc(f->ev, f->cap_ev * sizeof(*f->ev));
        assert_non_null(f->ev);
    }
    struct rec *r = &f->ev[f->n_ev++];
    memset(r, 0, sizeof(*r)); /* padding too: runs are compared bytewise */
    r->kind = ev->kind;
    r->at = ev->at;
    r->deadline = ev->deadline;
    r->exit_status = ev->exit_status;
    r->work = ev->work_done;
    r->rank = ev->rank;
    /* Events happen when they say they do. */
    assert_int_equal(ev->at, ebb__clock_now(&f->clock));
    snprintf(r->id, sizeof(r->id), "%s", ev->instance_id);
    snprintf(r->reason, sizeof(r->reason), "%s", ev->reason ? ev->reason : "");
}

static void sink_market(void *market, const char *provider)
{
    struct fx *f = market;
    assert_string_equal(provider, "sim");
    /* Counts them all, keeps the first 64. */
    if (f->n_changes < sizeof(f->changes) / sizeof(f->changes[0]))
        f->changes[f->n_changes] = ebb__clock_now(&f->clock);
    f->n_changes++;
}

/* Copies `yaml` with every "@/" replaced by the test data directory. */
static void expand(const char *yaml, char *out, size_t size)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/tests/data/sim/", root ? root : ".");
    size_t n = 0;
    for (const char *p = yaml; *p != '\0' && n + 1 < size; p++) {
        if (p[0] == '@' && p[1] == '/') {
            n += (size_t)snprintf(out + n, size - n, "%s", dir);
            p++;
        } else {
            out[n++] = *p;
        }
    }
    out[n < size ? n : size - 1] = '\0';
}

/* Opens the plugin, applies `yaml` (its section) and creates the provider
 * at `start`. Returns create()'s status; the fixture must be closed with
 * fx_close() either way. */
static int fx_open(struct fx *f, ebb_time_ms start, const char *yaml)
{
    memset(f, 0, sizeof(*f));
    logbuf[0] = '\0';
    struct ebb__plugin_path path;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__plugin_path_init(&path, NULL), 0);
    int rc = ebb__plugin_open(EBB__PLUGIN_PROVIDER, "sim", &path, &f->plugin, &d);
    ebb__plugin_path_free(&path);
    if (rc != 0)
        fail_msg("%s", d.msg);
    f->p = f->plugin->provider;
    assert_string_equal(f->p->name, "sim");
    assert_non_null(f->p->stop_job);

    char text[4096];
    expand(yaml, text, sizeof(text));
    struct ebb__ydoc *doc;
    assert_int_equal(ebb__ydoc_load_buffer("ebb.yaml", text, strlen(text), &doc, &d), 0);
    rc = ebb__cfg_apply(ebb__plugin_config_keys(f->plugin),
                        ebb__plugin_config_size(f->plugin), ebb__ydoc_root(doc),
                        "providers.sim", &f->cfg, &d);
    ebb__ydoc_free(doc);
    if (rc != 0)
        fail_msg("%s", d.msg);

    ebb__clock_init_virtual(&f->clock, start);
    f->env = (struct ebb__host_env){
        .clock = &f->clock,
        .sink = f,
        .instance_event = sink_event,
        .market = f,
        .market_changed = sink_market,
    };
    assert_int_equal(ebb__host_init(&f->host, &f->env, "sim"), 0);
    f->lent = f->host.host;
    f->lent.log = capture_log;
    return f->p->create(&f->lent, f->cfg, &f->self);
}

static void fx_close(struct fx *f)
{
    if (f->self != NULL)
        f->p->destroy(f->self);
    f->self = NULL;
    ebb__host_fini(&f->host);
    ebb__clock_close(&f->clock, NULL);
    ebb__cfg_free(ebb__plugin_config_keys(f->plugin), f->cfg);
    ebb__plugin_close(f->plugin);
    free(f->ev);
}

static void run_to(struct fx *f, ebb_time_ms t)
{
    ebb__clock_run_until(&f->clock, t);
}

/* ---- callbacks ---- */

struct obs {
    ebb_time_ms at;
    char provider[16], zone[16], type[16];
    ebb_micros price;
    int32_t capacity;
};

struct poll_res {
    int calls, status;
    struct obs *o;
    size_t n;
};

static void on_prices(void *arg, int status, const struct ebb_price *p, size_t n)
{
    struct poll_res *r = arg;
    r->calls++;
    r->status = status;
    free(r->o);
    r->o = calloc(n ? n : 1, sizeof(*r->o));
    assert_non_null(r->o);
    r->n = n;
    for (size_t i = 0; i < n; i++) {
        r->o[i].at = p[i].at;
        r->o[i].price = p[i].price_per_hour;
        r->o[i].capacity = p[i].capacity;
        snprintf(r->o[i].provider, sizeof(r->o[i].provider), "%s", p[i].provider);
        snprintf(r->o[i].zone, sizeof(r->o[i].zone), "%s", p[i].zone);
        snprintf(r->o[i].type, sizeof(r->o[i].type), "%s", p[i].instance_type);
        assert_int_equal(p[i].market, EBB_MARKET_SPOT);
        assert_string_equal(p[i].currency, "USD");
    }
}

static void poll(struct fx *f, struct poll_res *r)
{
    int calls = r->calls;
    assert_int_equal(f->p->poll_prices(f->self, on_prices, r), 0);
    assert_int_equal(r->calls, calls); /* never inside the call */
    run_to(f, ebb__clock_now(&f->clock));
    assert_int_equal(r->calls, calls + 1);
    assert_int_equal(r->status, 0);
}

struct launch_res {
    int calls, status;
    char id[32], zone[32], token[32], job[32];
    enum ebb_instance_state state;
    enum ebb_billing billing;
    ebb_time_ms launched_at;
};

static void on_launch(void *arg, int status, const struct ebb_instance *in)
{
    struct launch_res *r = arg;
    r->calls++;
    r->status = status;
    if (status == 0) {
        snprintf(r->id, sizeof(r->id), "%s", in->id);
        snprintf(r->zone, sizeof(r->zone), "%s", in->zone);
        snprintf(r->token, sizeof(r->token), "%s", in->token);
        snprintf(r->job, sizeof(r->job), "%s", in->job_id);
        r->state = in->state;
        r->billing = in->billing;
        r->launched_at = in->launched_at;
    } else {
        assert_null(in);
    }
}

struct done_res {
    int calls, status;
};

static void on_done(void *arg, int status)
{
    struct done_res *r = arg;
    r->calls++;
    r->status = status;
}

struct list_res {
    int calls, status;
    size_t n;
    char ids[8][32];
    enum ebb_instance_state states[8];
};

static void on_list(void *arg, int status, const struct ebb_instance *v, size_t n)
{
    struct list_res *r = arg;
    r->calls++;
    r->status = status;
    r->n = n;
    for (size_t i = 0; i < n && i < 8; i++) {
        snprintf(r->ids[i], sizeof(r->ids[i]), "%s", v[i].id);
        r->states[i] = v[i].state;
    }
}

/* A launch request and the job model it carries (linked() points the one
 * at the other once the pair has its final address). */
struct sim_launch {
    struct ebb_launch l;
    struct ebb_job_model model;
};

static const struct ebb_launch *linked(struct sim_launch *j)
{
    j->l.model = &j->model;
    return &j->l;
}

/* A launch request with a job model: `work` of reference work at `speed`. */
static struct sim_launch job(const char *token, const char *zone, const char *type,
                             enum ebb_market market, ebb_dur_ms work, double speed)
{
    return (struct sim_launch){
        .l = {
            .struct_size = sizeof(struct ebb_launch),
            .token = token,
            .job_id = "job-1",
            .provider = "aws",
            .region = "us-east-1",
            .zone = zone,
            .instance_type = type,
            .market = market,
            .currency = "USD",
            .count = 1,
        },
        .model = {
            .struct_size = sizeof(struct ebb_job_model),
            .work_remaining = work,
            .speed = speed,
        },
    };
}

/* A spot launch of `work` at speed 1 on offer C (us-east-1c p2.xlarge, no
 * availability series: capacity unlimited) or on offer A (us-east-1a
 * p3.2xlarge). */
static struct sim_launch on_c(const char *token, ebb_dur_ms work)
{
    return job(token, "us-east-1c", "p2.xlarge", EBB_MARKET_SPOT, work, 1.0);
}

static struct sim_launch on_a(const char *token, ebb_dur_ms work)
{
    return job(token, "us-east-1a", "p3.2xlarge", EBB_MARKET_SPOT, work, 1.0);
}

/* Launches and runs the clock to the callback (at now). */
static void launch(struct fx *f, struct sim_launch *req, struct launch_res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(f->p->launch(f->self, linked(req), on_launch, r), 0);
    assert_int_equal(r->calls, 0);
    run_to(f, ebb__clock_now(&f->clock));
    assert_int_equal(r->calls, 1);
}

/* Launches spot instances "x" and then "y" on offer A, 100 h of work
 * each; y once the clock has run to `y_at` (at once when that is not
 * later than now). */
static void launch_x_y(struct fx *f, ebb_time_ms y_at, struct launch_res *x,
                       struct launch_res *y)
{
    struct sim_launch req = on_a("x", 100 * H);
    launch(f, &req, x);
    if (y_at > ebb__clock_now(&f->clock))
        run_to(f, y_at);
    req.l.token = "y";
    launch(f, &req, y);
}

/* The events of instance `id`, in order. */
static size_t events_of(const struct fx *f, const char *id, struct rec *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_ev; i++) {
        if (strcmp(f->ev[i].id, id) == 0 && n < max)
            out[n++] = f->ev[i];
    }
    return n;
}

static void expect(const struct rec *r, enum ebb_instance_event_kind kind,
                   ebb_time_ms at, ebb_dur_ms work)
{
    assert_int_equal(r->kind, kind);
    assert_int_equal(r->at, at);
    if (work >= 0)
        assert_int_equal(r->work, work);
}

static const char base_yaml[] = "prices: @/prices.csv\n"
                                "availability: @/avail.csv\n";

/* ---- market ---- */

static void first_poll_is_history_then_only_new_rows(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0 + 90 * MINUTE, base_yaml), 0);
    struct poll_res r = {0};
    poll(&f, &r);
    /* Rows at or before 01:30, in (time, offer) order; 01:30 is the
     * availability-only change of A. */
    assert_int_equal(r.n, 5);
    assert_int_equal(r.o[0].at, T0);
    assert_string_equal(r.o[0].zone, "us-east-1a");
    assert_string_equal(r.o[0].provider, "aws");
    assert_int_equal(r.o[0].price, 1000000);
    assert_int_equal(r.o[0].capacity, 2);
    assert_string_equal(r.o[1].zone, "us-east-1b");
    assert_int_equal(r.o[1].capacity, 0);
    assert_string_equal(r.o[2].zone, "us-east-1c");
    assert_string_equal(r.o[2].type, "p2.xlarge");
    assert_int_equal(r.o[2].price, 270000);
    assert_int_equal(r.o[2].capacity, -1); /* no availability: unlimited */
    assert_int_equal(r.o[3].at, T0 + H); /* a repeated price is still a row */
    assert_int_equal(r.o[3].price, 1000000);
    assert_int_equal(r.o[4].at, T0 + 90 * MINUTE);
    assert_string_equal(r.o[4].zone, "us-east-1a");
    assert_int_equal(r.o[4].price, 1000000);
    assert_int_equal(r.o[4].capacity, 1);

    /* Nothing new at the same time. */
    poll(&f, &r);
    assert_int_equal(r.n, 0);

    /* 01:45 repeats A's capacity: not an observation. */
    run_to(&f, T0 + 2 * H);
    poll(&f, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.o[0].at, T0 + 2 * H);
    assert_int_equal(r.o[0].price, 1200000);
    assert_int_equal(r.o[0].capacity, 1);

    run_to(&f, T0 + 8 * H);
    poll(&f, &r);
    assert_int_equal(r.n, 5);
    const ebb_time_ms at[] = {3 * H, 4 * H, 5 * H, 6 * H, 8 * H};
    const char *zone[] = {"us-east-1b", "us-east-1a", "us-east-1a", "us-east-1a",
                          "us-east-1b"};
    const ebb_micros price[] = {2000000, 900000, 900000, 900000, 2000000};
    const int32_t cap[] = {0, 1, 0, 3, 1};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(r.o[i].at, T0 + at[i]);
        assert_string_equal(r.o[i].zone, zone[i]);
        assert_int_equal(r.o[i].price, price[i]);
        assert_int_equal(r.o[i].capacity, cap[i]);
    }
    free(r.o);
    fx_close(&f);
}

static void market_changed_fires_only_at_real_changes(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0 + 90 * MINUTE, base_yaml), 0);
    run_to(&f, INT64_MAX);
    /* Not 01:45 (repeat), 03:00 and 10:00 (repeated prices), 02:30 (a
     * series without an offer); not 01:30 itself (the state at create). */
    const ebb_time_ms want[] = {2 * H, 4 * H, 5 * H, 6 * H, 8 * H};
    assert_int_equal(f.n_changes, 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(f.changes[i], T0 + want[i]);
    fx_close(&f);
}

static void availability_from_another_period_is_shifted_and_cycled(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0 + 12 * H,
                             "prices: @/prices.csv\n"
                             "availability: @/avail_march.csv\n"
                             "align_availability: true\n"),
                     0);
    assert_non_null(strstr(logbuf, "does not overlap"));
    assert_non_null(strstr(logbuf, "repeated every 3h"));
    struct poll_res r = {0};
    poll(&f, &r);
    /* March's 1/0/0 at 00:00/01:00/03:00 replays from 2020-01-01 00:00 in
     * 3 h cycles until the price trace's end (10:00). */
    const ebb_time_ms at[] = {0, H, 2 * H, 3 * H, 4 * H, 6 * H, 7 * H, 9 * H, 10 * H};
    const int32_t cap[] = {1, 0, 0, 1, 0, 1, 0, 1, 0};
    size_t k = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (strcmp(r.o[i].zone, "us-east-1a") != 0)
            continue;
        assert_true(k < 9);
        assert_int_equal(r.o[i].at, T0 + at[k]);
        assert_int_equal(r.o[i].capacity, cap[k]);
        k++;
    }
    assert_int_equal(k, 9);
    free(r.o);
    fx_close(&f);

    /* The changes are announced too, and stop at the end of the prices. */
    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\n"
                                     "availability: @/avail_march.csv\n"
                                     "align_availability: true\n"),
                     0);
    run_to(&f, INT64_MAX);
    const ebb_time_ms ch[] = {H, 2 * H, 3 * H, 4 * H, 6 * H, 7 * H, 9 * H, 10 * H};
    assert_int_equal(f.n_changes, 8);
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(f.changes[i], T0 + ch[i]);
    fx_close(&f);
}

/* Unasked, availability from another period is used as recorded: nothing
 * is known of capacity during the prices (unlimited), and a warning says
 * why the trace changes nothing. */
static void availability_from_another_period_is_not_moved_unasked(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0 + 12 * H,
                             "prices: @/prices.csv\n"
                             "availability: @/avail_march.csv\n"),
                     0);
    assert_non_null(strstr(logbuf, "does not overlap"));
    assert_non_null(strstr(logbuf, "used as recorded; set align_availability"));
    assert_null(strstr(logbuf, "repeated every"));
    struct poll_res r = {0};
    poll(&f, &r);
    size_t seen = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (strcmp(r.o[i].zone, "us-east-1a") != 0)
            continue;
        assert_int_equal(r.o[i].capacity, -1);
        seen++;
    }
    assert_true(seen > 0);
    free(r.o);
    fx_close(&f);
}

/* ---- launches ---- */

static void launches_check_capacity_and_on_demand_always_works(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0 + 90 * MINUTE, base_yaml), 0);
    struct launch_res r;
    struct sim_launch req = job("t-b", "us-east-1b", "p3.2xlarge", EBB_MARKET_SPOT,
                                H, 1.0);
    launch(&f, &req, &r);
    assert_int_equal(r.status, EBB_ENOCAPACITY);

    req = job("t-x", "us-east-1a", "p9.huge", EBB_MARKET_SPOT, H, 1.0);
    launch(&f, &req, &r);
    assert_int_equal(r.status, EBB_ENOTFOUND);

    req = job("t-od", "", "p3.2xlarge", EBB_MARKET_ON_DEMAND, H, 1.0);
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, "sim-1");
    assert_string_equal(r.zone, "");
    assert_int_equal(r.state, EBB_INSTANCE_RUNNING);
    assert_int_equal(r.launched_at, T0 + 90 * MINUTE);
    assert_int_equal(r.billing, EBB_BILLING_PER_SECOND);

    /* A (capacity 1 now) takes one spot instance, not two; zone "" lets the
     * sim choose, and it picks the only offer with room. */
    req = job("t-a1", "", "p3.2xlarge", EBB_MARKET_SPOT, H, 1.0);
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.zone, "us-east-1a");
    assert_string_equal(r.token, "t-a1");
    assert_string_equal(r.job, "job-1");
    req = on_a("t-a2", H);
    launch(&f, &req, &r);
    assert_int_equal(r.status, EBB_ENOCAPACITY);

    /* At 06:00 A has 3 again. */
    run_to(&f, T0 + 6 * H);
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    fx_close(&f);
}

static void a_launch_is_idempotent_by_token(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    struct launch_res a, b;
    struct sim_launch req = on_c("tok", H);
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    /* Also when the retry comes before the first answer. */
    assert_int_equal(f.p->launch(f.self, linked(&req), on_launch, &a), 0);
    assert_int_equal(f.p->launch(f.self, linked(&req), on_launch, &b), 0);
    run_to(&f, T0);
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);
    assert_string_equal(a.id, b.id);
    run_to(&f, T0 + 10 * MINUTE);
    launch(&f, &req, &b);
    assert_string_equal(b.id, a.id);
    assert_int_equal(b.launched_at, T0);

    struct list_res l = {0};
    assert_int_equal(f.p->list_instances(f.self, on_list, &l), 0);
    assert_int_equal(l.calls, 0);
    run_to(&f, T0 + 10 * MINUTE);
    assert_int_equal(l.calls, 1);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.ids[0], a.id);

    /* Only one RUNNING event. */
    size_t running = 0;
    for (size_t i = 0; i < f.n_ev; i++)
        running += f.ev[i].kind == EBB_EVENT_RUNNING;
    assert_int_equal(running, 1);
    fx_close(&f);
}

/* ---- the job model ---- */

static void job_timeline_runs_exactly(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\n"
                                     "launch_latency: 10s\n"
                                     "checkpoint_time: 30s\n"
                                     "billing: aws-hourly\n"),
                     0);
    struct launch_res r;
    /* 1000 s of reference work at speed 2, 60 s to restart, a checkpoint
     * every 300 s of work: 150 s of wall time between checkpoints. */
    struct sim_launch req = job("t", "us-east-1c", "p2.xlarge", EBB_MARKET_SPOT,
                                1000 * S, 2.0);
    req.model.restart_overhead = 60 * S;
    req.model.checkpoint_every = 300 * S;
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.billing, EBB_BILLING_HOURLY_START_PRICE);
    run_to(&f, INT64_MAX);

    struct rec e[16];
    assert_int_equal(events_of(&f, r.id, e, 16), 9);
    expect(&e[0], EBB_EVENT_RUNNING, T0 + 10 * S, -1);
    expect(&e[1], EBB_EVENT_PROGRESS, T0 + 70 * S, 0);
    expect(&e[2], EBB_EVENT_CHECKPOINT, T0 + 250 * S, 300 * S);
    expect(&e[3], EBB_EVENT_PROGRESS, T0 + 250 * S, 300 * S);
    expect(&e[4], EBB_EVENT_CHECKPOINT, T0 + 430 * S, 600 * S);
    expect(&e[5], EBB_EVENT_PROGRESS, T0 + 430 * S, 600 * S);
    expect(&e[6], EBB_EVENT_CHECKPOINT, T0 + 610 * S, 900 * S);
    expect(&e[7], EBB_EVENT_PROGRESS, T0 + 610 * S, 900 * S);
    expect(&e[8], EBB_EVENT_EXITED, T0 + 660 * S, 1000 * S);
    assert_int_equal(e[8].exit_status, 0);
    fx_close(&f);
}

/* An instance outlives its job: it is still listed (and billed) after
 * EXITED until terminated. */
static void exited_instance_lives_until_terminated(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    struct launch_res r;
    struct sim_launch req = on_c("t", 60 * S);
    launch(&f, &req, &r);
    run_to(&f, T0 + H);
    assert_int_equal(f.ev[f.n_ev - 1].kind, EBB_EVENT_EXITED);
    assert_int_equal(f.ev[f.n_ev - 1].at, T0 + 60 * S);
    struct list_res l = {0};
    assert_int_equal(f.p->list_instances(f.self, on_list, &l), 0);
    run_to(&f, T0 + H);
    assert_int_equal(l.n, 1);
    struct done_res d = {0};
    assert_int_equal(f.p->terminate(f.self, r.id, on_done, &d), 0);
    assert_int_equal(d.calls, 0);
    run_to(&f, T0 + H);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.status, 0);
    assert_int_equal(f.p->list_instances(f.self, on_list, &l), 0);
    run_to(&f, T0 + H);
    assert_int_equal(l.n, 0);
    fx_close(&f);
}

/* ---- preemption ---- */

static void capacity_drop_preempts_the_newest_with_notice_and_checkpoint(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    struct launch_res x, y;
    launch_x_y(&f, T0 + 10 * MINUTE, &x, &y);
    assert_int_equal(y.status, 0);
    run_to(&f, T0 + 3 * H);

    /* 01:30: A drops from 2 to 1, so y (the newer) goes. */
    struct rec e[16];
    assert_int_equal(events_of(&f, y.id, e, 16), 6);
    expect(&e[0], EBB_EVENT_RUNNING, T0 + 10 * MINUTE, -1);
    expect(&e[1], EBB_EVENT_PROGRESS, T0 + 10 * MINUTE, 0);
    expect(&e[2], EBB_EVENT_NOTICE, T0 + 88 * MINUTE, -1);
    assert_int_equal(e[2].deadline, T0 + 90 * MINUTE);
    assert_string_equal(e[2].reason, "spot capacity reclaimed");
    expect(&e[3], EBB_EVENT_CHECKPOINT, T0 + 88 * MINUTE + 30 * S, 78 * MINUTE);
    expect(&e[4], EBB_EVENT_PROGRESS, T0 + 88 * MINUTE + 30 * S, 78 * MINUTE);
    expect(&e[5], EBB_EVENT_LOST, T0 + 90 * MINUTE, -1);
    assert_string_equal(e[5].reason, "spot capacity reclaimed");
    assert_int_equal(e[5].deadline, T0 + 90 * MINUTE);
    assert_int_equal(events_of(&f, x.id, e, 16), 2);

    /* No events for y after it is lost; terminating it still succeeds. */
    struct done_res d = {0};
    assert_int_equal(f.p->terminate(f.self, y.id, on_done, &d), 0);
    run_to(&f, T0 + 3 * H);
    assert_int_equal(d.status, 0);

    /* 05:00: A drops to 0 and x goes too. */
    run_to(&f, INT64_MAX);
    assert_int_equal(events_of(&f, x.id, e, 16), 6);
    expect(&e[2], EBB_EVENT_NOTICE, T0 + 5 * H - 2 * MINUTE, -1);
    expect(&e[5], EBB_EVENT_LOST, T0 + 5 * H, -1);
    assert_int_equal(events_of(&f, y.id, e, 16), 6);
    fx_close(&f);
}

static void a_short_notice_gives_no_checkpoint(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\n"
                                     "availability: @/avail.csv\n"
                                     "notice_lead: 20s\n"
                                     "checkpoint_time: 30s\n"),
                     0);
    struct launch_res x, y;
    launch_x_y(&f, T0 + MINUTE, &x, &y);
    run_to(&f, T0 + 2 * H);
    struct rec e[16];
    assert_int_equal(events_of(&f, y.id, e, 16), 4);
    expect(&e[2], EBB_EVENT_NOTICE, T0 + 90 * MINUTE - 20 * S, -1);
    expect(&e[3], EBB_EVENT_LOST, T0 + 90 * MINUTE, -1);
    fx_close(&f);
}

/* A notice is never earlier than the launch: an instance launched after
 * (deadline - notice_lead) hears at once. */
static void a_late_launch_hears_its_notice_at_once(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0 + 89 * MINUTE, base_yaml), 0);
    struct launch_res x, y;
    launch_x_y(&f, 0, &x, &y);
    run_to(&f, T0 + 2 * H);
    struct rec e[16];
    assert_int_equal(events_of(&f, y.id, e, 16), 6);
    expect(&e[2], EBB_EVENT_NOTICE, T0 + 89 * MINUTE, -1);
    expect(&e[3], EBB_EVENT_CHECKPOINT, T0 + 89 * MINUTE + 30 * S, 0);
    expect(&e[5], EBB_EVENT_LOST, T0 + 90 * MINUTE, -1);
    /* Terminating y earlier would have spared nobody else: x stays. */
    assert_int_equal(events_of(&f, x.id, e, 16), 2);
    fx_close(&f);
}

/* When the newer instance is terminated before the drop, the older one is
 * not preempted in its place (one left, capacity one). */
static void terminating_the_newest_spares_the_rest(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    struct launch_res x, y;
    launch_x_y(&f, 0, &x, &y);
    run_to(&f, T0 + H);
    struct done_res d = {0};
    assert_int_equal(f.p->terminate(f.self, y.id, on_done, &d), 0);
    run_to(&f, T0 + 4 * H);
    struct rec e[16];
    assert_int_equal(events_of(&f, y.id, e, 16), 2); /* RUNNING, PROGRESS */
    assert_int_equal(events_of(&f, x.id, e, 16), 2);
    fx_close(&f);
}

/* Lifetimes of `n` spot instances under the hazard model, in launch order. */
static void hazard_lifetimes(int64_t seed, double rate, size_t n, ebb_dur_ms *out)
{
    struct fx f;
    char yaml[256];
    snprintf(yaml, sizeof(yaml),
             "prices: @/prices.csv\npreemption_hazard: %g\nseed: %lld\n", rate,
             (long long)seed);
    assert_int_equal(fx_open(&f, T0, yaml), 0);
    char (*ids)[32] = calloc(n, sizeof(*ids));
    assert_non_null(ids);
    for (size_t i = 0; i < n; i++) {
        char tok[32];
        snprintf(tok, sizeof(tok), "h%zu", i);
        struct sim_launch req = on_c(tok, 10000 * H);
        struct launch_res r;
        launch(&f, &req, &r);
        assert_int_equal(r.status, 0);
        snprintf(ids[i], sizeof(ids[i]), "%s", r.id);
        out[i] = -1;
    }
    run_to(&f, INT64_MAX);
    size_t lost = 0;
    for (size_t k = 0; k < f.n_ev; k++) {
        if (f.ev[k].kind != EBB_EVENT_LOST)
            continue;
        assert_string_equal(f.ev[k].reason, "random preemption (hazard model)");
        size_t i = strtoul(f.ev[k].id + 4, NULL, 10) - 1;
        assert_true(i < n);
        assert_int_equal(out[i], -1);
        out[i] = f.ev[k].at - T0;
        lost++;
    }
    assert_int_equal(lost, n);
    free(ids);
    fx_close(&f);
}

static void hazard_model_is_deterministic_and_has_its_rate(void **state)
{
    (void)state;
    enum { N = 2000 };
    ebb_dur_ms *a = calloc(N, sizeof(*a)), *b = calloc(N, sizeof(*b));
    assert_non_null(a);
    assert_non_null(b);
    hazard_lifetimes(7, 0.5, 16, a);
    hazard_lifetimes(7, 0.5, 16, b);
    assert_memory_equal(a, b, 16 * sizeof(*a));
    hazard_lifetimes(8, 0.5, 16, b);
    assert_memory_not_equal(a, b, 16 * sizeof(*a));

    /* 0.5 per hour: mean lifetime 2 h (standard error 2 h / sqrt(2000),
     * about 2.2%; 8% is 3.6 of them). */
    hazard_lifetimes(1, 0.5, N, a);
    double sum = 0;
    for (size_t i = 0; i < N; i++)
        sum += (double)a[i];
    double mean_h = sum / N / (double)H;
    assert_true(fabs(mean_h - 2.0) < 0.16);
    free(a);
    free(b);
}

static void a_hazard_preemption_gives_notice_and_checkpoint(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\n"
                                     "preemption_hazard: 0.2\n"),
                     0);
    struct launch_res r;
    struct sim_launch req = on_c("t", 10000 * H);
    launch(&f, &req, &r);
    /* On-demand instances are never preempted. */
    struct launch_res od;
    req = job("od", "", "p2.xlarge", EBB_MARKET_ON_DEMAND, 10000 * H, 1.0);
    launch(&f, &req, &od);
    run_to(&f, T0 + 1000 * H);
    struct rec e[16];
    assert_int_equal(events_of(&f, r.id, e, 16), 6);
    ebb_time_ms lost = e[5].at;
    assert_int_equal(e[5].kind, EBB_EVENT_LOST);
    assert_true(lost > T0 + 2 * MINUTE);
    expect(&e[2], EBB_EVENT_NOTICE, lost - 2 * MINUTE, lost - 2 * MINUTE - T0);
    expect(&e[3], EBB_EVENT_CHECKPOINT, lost - 90 * S, lost - 2 * MINUTE - T0);
    assert_int_equal(events_of(&f, od.id, e, 16), 2);
    fx_close(&f);
}

/* ---- stop, terminate, destroy ---- */

static void stop_job_checkpoints_then_exits_stopped(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    struct launch_res a, b;
    struct sim_launch req = on_c("a", 100 * H);
    launch(&f, &req, &a);
    req.l.token = "b";
    launch(&f, &req, &b);
    run_to(&f, T0 + 100 * S);
    struct done_res d1 = {0}, d2 = {0}, d3 = {0};
    assert_int_equal(f.p->stop_job(f.self, a.id, 60 * S, on_done, &d1), 0);
    /* A grace shorter than checkpoint_time (30 s): no checkpoint. */
    assert_int_equal(f.p->stop_job(f.self, b.id, 10 * S, on_done, &d2), 0);
    assert_int_equal(f.p->stop_job(f.self, "sim-99", 10 * S, on_done, &d3), 0);
    assert_int_equal(d1.calls + d2.calls + d3.calls, 0);
    run_to(&f, T0 + 100 * S);
    assert_int_equal(d1.calls, 1);
    assert_int_equal(d1.status, 0);
    assert_int_equal(d2.status, 0);
    assert_int_equal(d3.status, EBB_ENOTFOUND);
    run_to(&f, T0 + H);

    struct rec e[16];
    assert_int_equal(events_of(&f, a.id, e, 16), 4);
    expect(&e[2], EBB_EVENT_CHECKPOINT, T0 + 130 * S, 100 * S);
    expect(&e[3], EBB_EVENT_EXITED, T0 + 130 * S, -1);
    assert_int_equal(e[3].exit_status, EBB_EXIT_STOPPED);
    assert_int_equal(events_of(&f, b.id, e, 16), 3);
    expect(&e[2], EBB_EVENT_EXITED, T0 + 110 * S, -1);
    assert_int_equal(e[2].exit_status, EBB_EXIT_STOPPED);
    fx_close(&f);
}

static void terminate_cancels_pending_events(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\n"
                                     "launch_latency: 1m\n"),
                     0);
    struct launch_res r;
    struct sim_launch req = on_c("t", H);
    req.model.checkpoint_every = 10 * MINUTE;
    launch(&f, &req, &r);
    run_to(&f, T0 + 5 * MINUTE);
    size_t before = f.n_ev;
    assert_int_equal(before, 2);
    struct done_res d = {0}, bad = {0};
    assert_int_equal(f.p->terminate(f.self, r.id, on_done, &d), 0);
    assert_int_equal(f.p->terminate(f.self, "nope", on_done, &bad), 0);
    run_to(&f, INT64_MAX);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.status, 0);
    assert_int_equal(bad.calls, 1);
    assert_int_equal(bad.status, EBB_ENOTFOUND);
    assert_int_equal(f.n_ev, before);
    fx_close(&f);
}

/* The engine may terminate from inside an event handler. */
static struct fx *reentrant_fx;

static void terminate_on_exit(void *sink, const char *provider,
                              const struct ebb_instance_event *ev)
{
    sink_event(sink, provider, ev);
    if (ev->kind == EBB_EVENT_EXITED) {
        static struct done_res d;
        assert_int_equal(reentrant_fx->p->terminate(reentrant_fx->self,
                                                    ev->instance_id, on_done, &d),
                         0);
    }
}

static void terminate_from_an_event_handler(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    reentrant_fx = &f;
    f.env.instance_event = terminate_on_exit;
    struct launch_res r;
    struct sim_launch req = on_c("t", MINUTE);
    launch(&f, &req, &r);
    run_to(&f, INT64_MAX);
    assert_int_equal(f.n_ev, 3);
    struct list_res l = {0};
    assert_int_equal(f.p->list_instances(f.self, on_list, &l), 0);
    run_to(&f, INT64_MAX);
    assert_int_equal(l.n, 0);
    fx_close(&f);
}

static void destroy_cancels_pending_callbacks(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    struct launch_res r;
    struct sim_launch req = on_c("t", H);
    launch(&f, &req, &r);
    struct poll_res p = {0};
    struct launch_res l2 = {0};
    struct done_res t = {0}, s = {0};
    struct list_res l = {0};
    req.l.token = "t2";
    assert_int_equal(f.p->poll_prices(f.self, on_prices, &p), 0);
    assert_int_equal(f.p->launch(f.self, linked(&req), on_launch, &l2), 0);
    assert_int_equal(f.p->stop_job(f.self, r.id, 0, on_done, &s), 0);
    assert_int_equal(f.p->terminate(f.self, r.id, on_done, &t), 0);
    assert_int_equal(f.p->list_instances(f.self, on_list, &l), 0);
    f.p->destroy(f.self);
    f.self = NULL;
    assert_int_equal(p.calls, 1);
    assert_int_equal(p.status, EBB_ECANCELED);
    assert_int_equal(l2.calls, 1);
    assert_int_equal(l2.status, EBB_ECANCELED);
    assert_int_equal(s.calls, 1);
    assert_int_equal(s.status, EBB_ECANCELED);
    assert_int_equal(t.calls, 1);
    assert_int_equal(t.status, EBB_ECANCELED);
    assert_int_equal(l.calls, 1);
    assert_int_equal(l.status, EBB_ECANCELED);
    size_t n = f.n_ev;
    assert_int_equal(ebb__clock_run_until(&f.clock, INT64_MAX), 0);
    assert_int_equal(f.n_ev, n);
    free(p.o);
    fx_close(&f);
}

/* The order of the ECANCELED callbacks, recorded by on_done_in_order. */
struct done_order {
    int seen[4];
    int n;
};

struct done_tag {
    struct done_order *order;
    int tag;
};

static void on_done_in_order(void *arg, int status)
{
    struct done_tag *d = arg;
    assert_int_equal(status, EBB_ECANCELED);
    assert_true(d->order->n < 4);
    d->order->seen[d->order->n++] = d->tag;
}

static void destroy_cancels_in_the_order_asked(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    struct launch_res r;
    struct sim_launch req = on_c("t", H);
    launch(&f, &req, &r);
    struct done_order order = {0};
    struct done_tag d[3];
    for (int i = 0; i < 3; i++) {
        d[i] = (struct done_tag){.order = &order, .tag = i};
        assert_int_equal(f.p->stop_job(f.self, r.id, 0, on_done_in_order, &d[i]), 0);
    }
    f.p->destroy(f.self);
    f.self = NULL;
    assert_int_equal(order.n, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(order.seen[i], i);
    fx_close(&f);
}

/* ---- the same inputs give the same events ---- */

static void run_scenario(struct fx *f)
{
    assert_int_equal(fx_open(f, T0, "prices: @/prices.csv\n"
                                    "availability: @/avail.csv\n"
                                    "preemption_hazard: 1.5\nseed: 3\n"),
                     0);
    for (int i = 0; i < 6; i++) {
        char tok[8];
        snprintf(tok, sizeof(tok), "s%d", i);
        struct sim_launch req = job(tok, i % 2 ? "us-east-1a" : "us-east-1c",
                                    i % 2 ? "p3.2xlarge" : "p2.xlarge",
                                    EBB_MARKET_SPOT, 3 * H, 1.5);
        req.model.checkpoint_every = 20 * MINUTE;
        req.model.restart_overhead = 2 * MINUTE;
        struct launch_res r;
        launch(f, &req, &r);
        run_to(f, ebb__clock_now(&f->clock) + 17 * MINUTE);
    }
    run_to(f, INT64_MAX);
}

static void same_inputs_same_events(void **state)
{
    (void)state;
    struct fx a, b;
    run_scenario(&a);
    run_scenario(&b);
    assert_true(a.n_ev > 20);
    assert_int_equal(a.n_ev, b.n_ev);
    assert_memory_equal(a.ev, b.ev, a.n_ev * sizeof(*a.ev));
    assert_int_equal(a.n_changes, b.n_changes);
    fx_close(&a);
    fx_close(&b);
}

/* ---- configuration and shipped data ---- */

static void bad_traces_fail_create_with_the_readers_message(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, "prices: @/nope.csv\n"), EBB_ECONFIG);
    assert_non_null(strstr(logbuf, "nope.csv: cannot open: No such file"));
    fx_close(&f);

    assert_int_equal(fx_open(&f, T0, "prices: @/bad_prices.csv\n"), EBB_ECONFIG);
    assert_non_null(strstr(logbuf, "bad_prices.csv:3:"));
    fx_close(&f);

    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\n"
                                     "availability: @/prices.csv\n"),
                     EBB_ECONFIG);
    assert_non_null(strstr(logbuf, "prices.csv:1:"));
    fx_close(&f);

    assert_int_equal(fx_open(&f, T0, "availability: @/avail.csv\n"), EBB_ECONFIG);
    assert_non_null(strstr(logbuf, "prices: required"));
    fx_close(&f);

    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\nbilling: monthly\n"),
                     EBB_ECONFIG);
    assert_non_null(strstr(logbuf, "\"monthly\" is not a billing rule"));
    fx_close(&f);
}

/* preemption_hazard is bounded with the allowed range in the message:
 * 1e9 made a backtest run for minutes (#16 point 8). */
static void the_hazard_is_bounded(void **state)
{
    (void)state;
    static const char *const bad[] = {"1e9", "10.5", "-0.1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char cfg[128];
        snprintf(cfg, sizeof(cfg), "prices: @/prices.csv\npreemption_hazard: %s\n", bad[i]);
        struct fx f;
        assert_int_equal(fx_open(&f, T0, cfg), EBB_ECONFIG);
        if (strstr(logbuf, "is outside the allowed range (from 0 to 10 preemptions "
                           "per spot instance-hour; example: 0.05)") == NULL)
            fail_msg("%s: %s", bad[i], logbuf);
        fx_close(&f);
    }
    struct fx f;
    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\npreemption_hazard: 10\n"), 0);
    fx_close(&f);
}

static void replays_the_shipped_aws_traces(void **state)
{
    (void)state;
    struct fx f;
    ebb_time_ms start;
    assert_int_equal(ebb_parse_time("2020-01-15T00:00:00Z", &start), 0);
    assert_int_equal(fx_open(&f, start,
                             "prices: @/../../../data/traces/"
                             "aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv\n"
                             "availability: @/../../../data/availability_aws_2020-03.csv\n"
                             "align_availability: true\n"),
                     0);
    assert_non_null(strstr(logbuf, "does not overlap"));
    struct poll_res r = {0};
    poll(&f, &r);
    assert_true(r.n > 1000);
    for (size_t i = 1; i < r.n; i++)
        assert_true(r.o[i - 1].at <= r.o[i].at && r.o[i].at <= start);
    /* us-east-1b p3.2xlarge held an instance for the whole March log. */
    struct launch_res l;
    struct sim_launch req = job("t", "us-east-1b", "p3.2xlarge", EBB_MARKET_SPOT,
                                H, 1.0);
    launch(&f, &req, &l);
    assert_int_equal(l.status, 0);
    req.l.token = "t2";
    launch(&f, &req, &l);
    assert_int_equal(l.status, EBB_ENOCAPACITY);
    ebb_time_ms day;
    assert_int_equal(ebb_parse_time("2020-01-16T00:00:00Z", &day), 0);
    f.n_changes = 0;
    run_to(&f, day);
    assert_true(f.n_changes > 0);
    poll(&f, &r);
    assert_true(r.n > 0);
    /* The replay ends with the price trace (2020-02-29). */
    size_t changes = f.n_changes;
    run_to(&f, INT64_MAX);
    assert_true(f.n_changes > changes);
    ebb_time_ms end;
    assert_int_equal(ebb_parse_time("2020-03-01T00:00:00Z", &end), 0);
    assert_true(ebb__clock_now(&f.clock) < end);
    free(r.o);
    fx_close(&f);
}

/* ---- gangs ---- */

/* A launch request for a gang of `count` on offer A or C. */
static struct sim_launch gang(const char *token, const char *zone, unsigned count,
                              ebb_dur_ms work)
{
    struct sim_launch req = job(token, zone,
                                strcmp(zone, "us-east-1c") == 0 ? "p2.xlarge"
                                                                : "p3.2xlarge",
                                EBB_MARKET_SPOT, work, 1.0);
    req.l.count = count;
    return req;
}

static void list_now(struct fx *f, struct list_res *l)
{
    memset(l, 0, sizeof(*l));
    assert_int_equal(f->p->list_instances(f->self, on_list, l), 0);
    run_to(f, ebb__clock_now(&f->clock));
    assert_int_equal(l->calls, 1);
    assert_int_equal(l->status, 0);
}

static void a_gang_needs_capacity_for_every_member(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    assert_true(f.p->flags & EBB_PROVIDER_GANGS);
    struct launch_res r;
    /* A holds 2 at 00:00: not 3, and B (0) none at all. */
    struct sim_launch req = gang("g3", "us-east-1a", 3, H);
    launch(&f, &req, &r);
    assert_int_equal(r.status, EBB_ENOCAPACITY);
    req = gang("gb", "us-east-1b", 2, H);
    launch(&f, &req, &r);
    assert_int_equal(r.status, EBB_ENOCAPACITY);
    req = gang("big", "us-east-1c", EBB_GANG_MAX + 1, H);
    assert_int_equal(f.p->launch(f.self, linked(&req), on_launch, &r), EBB_EINVAL);

    req = gang("g2", "us-east-1a", 2, H);
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, "sim-1,sim-2");
    assert_string_equal(r.token, "g2");
    assert_string_equal(r.zone, "us-east-1a");
    /* Each member counts against A's capacity: no room for a third. */
    struct sim_launch one = on_a("one", H);
    launch(&f, &one, &r);
    assert_int_equal(r.status, EBB_ENOCAPACITY);
    /* The same token, the same gang. */
    launch(&f, &req, &r);
    assert_string_equal(r.id, "sim-1,sim-2");
    /* C is unlimited: a gang of 4 there numbers its members after A's. */
    req = gang("g4", "us-east-1c", 4, H);
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, "sim-3,sim-4,sim-5,sim-6");
    struct list_res l;
    list_now(&f, &l);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.ids[0], "sim-1,sim-2");
    assert_string_equal(l.ids[1], "sim-3,sim-4,sim-5,sim-6");
    fx_close(&f);
}

/* A gang of 2 on A from 00:00: at 01:30 A drops to 1 and the newer member
 * (rank 1) goes alone; the gang's job checkpoints at the notice and does
 * no more once its member is lost; rank 0 runs on until terminated. */
static void a_member_is_preempted_alone_and_named_by_rank(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    struct launch_res r;
    struct sim_launch req = gang("g2", "us-east-1a", 2, 100 * H);
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    run_to(&f, T0 + 100 * MINUTE);

    struct rec e[16];
    assert_int_equal(events_of(&f, "sim-1,sim-2", e, 16), 6);
    expect(&e[0], EBB_EVENT_RUNNING, T0, -1);
    assert_int_equal(e[0].rank, -1);
    expect(&e[1], EBB_EVENT_PROGRESS, T0, 0);
    expect(&e[2], EBB_EVENT_NOTICE, T0 + 88 * MINUTE, 88 * MINUTE);
    assert_int_equal(e[2].rank, 1);
    assert_int_equal(e[2].deadline, T0 + 90 * MINUTE);
    expect(&e[3], EBB_EVENT_CHECKPOINT, T0 + 88 * MINUTE + 30 * S, 88 * MINUTE);
    assert_int_equal(e[3].rank, -1);
    expect(&e[4], EBB_EVENT_PROGRESS, T0 + 88 * MINUTE + 30 * S, 88 * MINUTE);
    expect(&e[5], EBB_EVENT_LOST, T0 + 90 * MINUTE, -1);
    assert_int_equal(e[5].rank, 1);
    assert_string_equal(e[5].reason, "spot capacity reclaimed");
    assert_int_equal(events_of(&f, "sim-1", e, 16), 0);
    assert_int_equal(events_of(&f, "sim-2", e, 16), 0);

    /* The gang is short of rank 1 and still running; the lost member's
     * place is free again (A holds 1 now and rank 0 has it). */
    struct list_res l;
    list_now(&f, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.ids[0], "sim-1");
    assert_int_equal(l.states[0], EBB_INSTANCE_RUNNING);
    struct sim_launch one = on_a("one", H);
    launch(&f, &one, &r);
    assert_int_equal(r.status, EBB_ENOCAPACITY);
    /* The gang's job stopped with its member: there is none to stop. */
    struct done_res d = {0};
    assert_int_equal(f.p->stop_job(f.self, "sim-1", MINUTE, on_done, &d), 0);
    run_to(&f, ebb__clock_now(&f.clock));
    assert_int_equal(d.status, EBB_ENOTFOUND);

    /* Terminating the gang's id ends every member it names (the lost one
     * already ended); no events come after. */
    size_t before = f.n_ev;
    d = (struct done_res){0};
    assert_int_equal(f.p->terminate(f.self, "sim-1,sim-2", on_done, &d), 0);
    run_to(&f, INT64_MAX);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.status, 0);
    assert_int_equal(f.n_ev, before);
    list_now(&f, &l);
    assert_int_equal(l.n, 0);
    /* A gang id naming an instance the sim never issued. */
    assert_int_equal(f.p->terminate(f.self, "sim-1,sim-9", on_done, &d), 0);
    run_to(&f, ebb__clock_now(&f.clock));
    assert_int_equal(d.status, EBB_ENOTFOUND);
    fx_close(&f);
}

static void terminating_a_gang_ends_all_its_members(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    struct launch_res r;
    struct sim_launch req = gang("g3", "us-east-1c", 3, 100 * H);
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    run_to(&f, T0 + MINUTE);
    /* stop_job reaches the gang's one job. */
    struct done_res d = {0};
    assert_int_equal(f.p->stop_job(f.self, r.id, 5 * MINUTE, on_done, &d), 0);
    run_to(&f, T0 + 2 * MINUTE);
    assert_int_equal(d.status, 0);
    struct rec e[16];
    assert_int_equal(events_of(&f, r.id, e, 16), 4);
    expect(&e[2], EBB_EVENT_CHECKPOINT, T0 + MINUTE + 30 * S, MINUTE);
    expect(&e[3], EBB_EVENT_EXITED, T0 + MINUTE + 30 * S, -1);
    assert_int_equal(e[3].exit_status, EBB_EXIT_STOPPED);

    assert_int_equal(f.p->terminate(f.self, r.id, on_done, &d), 0);
    run_to(&f, T0 + 3 * MINUTE);
    assert_int_equal(d.status, 0);
    struct list_res l;
    list_now(&f, &l);
    assert_int_equal(l.n, 0);
    /* Ended, the gang answers its token as terminated, whole. */
    launch(&f, &req, &r);
    assert_string_equal(r.id, "sim-1,sim-2,sim-3");
    assert_int_equal(r.state, EBB_INSTANCE_TERMINATED);
    fx_close(&f);
}

/* A checkpoint the notice of one member starts, ending at that member's
 * deadline, counts: the job's events come before the loss. */
static void a_gang_checkpoint_ending_at_the_deadline_counts(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\navailability: @/avail.csv\n"
                                     "notice_lead: 30s\n"), 0);
    struct launch_res r;
    struct sim_launch req = gang("g2", "us-east-1a", 2, 100 * H);
    launch(&f, &req, &r);
    run_to(&f, T0 + 100 * MINUTE);
    struct rec e[16];
    assert_int_equal(events_of(&f, "sim-1,sim-2", e, 16), 6);
    expect(&e[2], EBB_EVENT_NOTICE, T0 + 90 * MINUTE - 30 * S, -1);
    assert_int_equal(e[2].rank, 1);
    expect(&e[3], EBB_EVENT_CHECKPOINT, T0 + 90 * MINUTE, 90 * MINUTE - 30 * S);
    expect(&e[4], EBB_EVENT_PROGRESS, T0 + 90 * MINUTE, 90 * MINUTE - 30 * S);
    expect(&e[5], EBB_EVENT_LOST, T0 + 90 * MINUTE, -1);
    assert_int_equal(e[5].rank, 1);
    fx_close(&f);
}

/* preempt_after takes one node of a gang: its last. */
static void preempt_after_takes_a_gangs_last_member(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\npreempt_after: 1h\n"), 0);
    struct launch_res r;
    struct sim_launch req = gang("g3", "us-east-1c", 3, 100 * H);
    launch(&f, &req, &r);
    run_to(&f, T0 + 3 * H);
    size_t notices = 0, losses = 0;
    for (size_t i = 0; i < f.n_ev; i++) {
        if (f.ev[i].kind == EBB_EVENT_NOTICE) {
            notices++;
            assert_int_equal(f.ev[i].rank, 2);
            assert_int_equal(f.ev[i].at, T0 + 58 * MINUTE);
        }
        if (f.ev[i].kind == EBB_EVENT_LOST) {
            losses++;
            assert_int_equal(f.ev[i].rank, 2);
            assert_int_equal(f.ev[i].at, T0 + H);
        }
    }
    assert_int_equal(notices, 1);
    assert_int_equal(losses, 1);
    struct list_res l;
    list_now(&f, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.ids[0], "sim-1,sim-2");
    fx_close(&f);
}

/* Each member draws its own lifetime: a gang of 4 at 0.5 preemptions per
 * instance-hour loses its first node after 30 minutes on average, not 2
 * hours (standard error 30 min / sqrt(300), about 5.8%; 20% is 3.5 of
 * them), and every member goes in its own time, with its own rank. */
static void the_hazard_takes_gang_members_one_by_one(void **state)
{
    (void)state;
    enum { G = 300, N = 4 };
    struct fx f;
    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\npreemption_hazard: 0.5\n"),
                     0);
    for (size_t g = 0; g < G; g++) {
        char tok[32];
        snprintf(tok, sizeof(tok), "g%zu", g);
        struct sim_launch req = gang(tok, "us-east-1c", N, 10000 * H);
        struct launch_res r;
        launch(&f, &req, &r);
        assert_int_equal(r.status, 0);
    }
    run_to(&f, INT64_MAX);
    ebb_dur_ms first[G];
    unsigned ranks[G] = {0};
    for (size_t g = 0; g < G; g++)
        first[g] = -1;
    for (size_t k = 0; k < f.n_ev; k++) {
        const struct rec *e = &f.ev[k];
        if (e->kind != EBB_EVENT_LOST)
            continue;
        size_t g = (strtoul(e->id + 4, NULL, 10) - 1) / N;
        assert_true(g < G);
        assert_true(e->rank >= 0 && e->rank < N);
        assert_false(ranks[g] & (1u << e->rank));
        ranks[g] |= 1u << e->rank;
        if (first[g] < 0)
            first[g] = e->at - T0;
    }
    double sum = 0;
    for (size_t g = 0; g < G; g++) {
        assert_int_equal(ranks[g], (1u << N) - 1);
        sum += (double)first[g];
    }
    double mean_h = sum / G / (double)H;
    assert_true(fabs(mean_h - 0.5) < 0.1);
    fx_close(&f);
}

/* ---- replacement members (joins) ---- */

/* A join: one member for rank `rank` of gang `id`, launched with `token`. */
static struct sim_launch join_req(const char *token, const char *id, unsigned rank)
{
    struct sim_launch req = job(token, "", "", EBB_MARKET_SPOT, 100 * H, 1.0);
    req.l.join_gang = id;
    req.l.join_rank = rank;
    return req;
}

static size_t events_of_kind(const struct fx *f, enum ebb_instance_event_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_ev; i++)
        n += f->ev[i].kind == kind;
    return n;
}

/* preempt_after 1h on C takes a gang's last rank an hour after it starts:
 * the join that replaces it starts a new member there, which is preempted
 * on its own an hour later and can be replaced again; rank 0 too. */
static void a_join_replaces_a_lost_member(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, "prices: @/prices.csv\npreempt_after: 1h\n"), 0);
    assert_true(f.p->flags & EBB_PROVIDER_GANG_REPLACE);
    struct launch_res r;
    struct sim_launch req = gang("g2", "us-east-1c", 2, 100 * H);
    launch(&f, &req, &r);
    assert_string_equal(r.id, "sim-1,sim-2");
    run_to(&f, T0 + H);
    struct list_res l;
    list_now(&f, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.ids[0], "sim-1");

    /* The new member alone answers, with the gang's token and place. */
    struct sim_launch j = join_req("g2", "sim-1,sim-2", 1);
    launch(&f, &j, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, "sim-3");
    assert_string_equal(r.token, "g2");
    assert_string_equal(r.zone, "us-east-1c");
    assert_int_equal(r.state, EBB_INSTANCE_RUNNING);
    assert_int_equal(r.launched_at, T0 + H);
    /* The same join again: the same member. */
    launch(&f, &j, &r);
    assert_string_equal(r.id, "sim-3");
    list_now(&f, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.ids[0], "sim-1,sim-3");
    assert_int_equal(l.states[0], EBB_INSTANCE_RUNNING);
    /* The gang's launch token still answers the gang, now with it. */
    launch(&f, &req, &r);
    assert_string_equal(r.id, "sim-1,sim-3");

    /* Preempted on its own, named by the gang and its rank. */
    size_t before = f.n_ev;
    run_to(&f, T0 + 2 * H);
    assert_int_equal(f.n_ev, before + 2);
    expect(&f.ev[before], EBB_EVENT_NOTICE, T0 + 2 * H - 2 * MINUTE, -1);
    assert_string_equal(f.ev[before].id, "sim-1,sim-3");
    assert_int_equal(f.ev[before].rank, 1);
    expect(&f.ev[before + 1], EBB_EVENT_LOST, T0 + 2 * H, -1);
    assert_int_equal(f.ev[before + 1].rank, 1);
    j = join_req("g2", "sim-1,sim-3", 1);
    launch(&f, &j, &r);
    assert_string_equal(r.id, "sim-4");

    /* Rank 0 ended alone, and replaced. */
    struct done_res d = {0};
    assert_int_equal(f.p->terminate(f.self, "sim-1", on_done, &d), 0);
    run_to(&f, ebb__clock_now(&f.clock));
    assert_int_equal(d.status, 0);
    list_now(&f, &l);
    assert_string_equal(l.ids[0], "sim-4");
    j = join_req("g2", "sim-1,sim-4", 0);
    launch(&f, &j, &r);
    assert_string_equal(r.id, "sim-5");
    list_now(&f, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.ids[0], "sim-5,sim-4");

    /* The sim's own job of the gang stopped with its first loss: joins
     * start no job. */
    assert_int_equal(events_of_kind(&f, EBB_EVENT_RUNNING), 1);
    d = (struct done_res){0};
    assert_int_equal(f.p->stop_job(f.self, "sim-5,sim-4", MINUTE, on_done, &d), 0);
    run_to(&f, ebb__clock_now(&f.clock));
    assert_int_equal(d.status, EBB_ENOTFOUND);

    /* The gang's id with its new members ends them all. */
    before = f.n_ev;
    assert_int_equal(f.p->terminate(f.self, "sim-5,sim-4", on_done, &d), 0);
    run_to(&f, T0 + 10 * H);
    assert_int_equal(d.status, 0);
    assert_int_equal(f.n_ev, before);
    list_now(&f, &l);
    assert_int_equal(l.n, 0);
    fx_close(&f);
}

/* Returns launch()'s status for a join of rank `rank` into `id`. */
static int try_join(struct fx *f, const char *token, const char *id, unsigned rank,
                    const char *why)
{
    logbuf[0] = '\0';
    struct sim_launch j = join_req(token, id, rank);
    struct launch_res r = {0};
    int rc = f->p->launch(f->self, linked(&j), on_launch, &r);
    run_to(f, ebb__clock_now(&f->clock));
    assert_int_equal(r.calls, 0);
    if (why != NULL && strstr(logbuf, why) == NULL)
        fail_msg("log \"%s\" does not say \"%s\"", logbuf, why);
    return rc;
}

static void a_join_needs_a_lost_rank_of_a_running_gang_and_room(void **state)
{
    (void)state;
    struct fx f;
    assert_int_equal(fx_open(&f, T0, base_yaml), 0);
    struct launch_res r;
    struct sim_launch req = gang("g2", "us-east-1a", 2, 100 * H);
    launch(&f, &req, &r);
    run_to(&f, T0 + 100 * MINUTE); /* A holds 1 from 01:30: rank 1 lost */

    /* A's one place is rank 0's. */
    struct sim_launch j = join_req("g2", "sim-1,sim-2", 1);
    launch(&f, &j, &r);
    assert_int_equal(r.status, EBB_ENOCAPACITY);

    assert_int_equal(try_join(&f, "g2", "sim-1,sim-2", 0,
                              "join of rank 0 into gang sim-1,sim-2 refused: its "
                              "member sim-1 still runs"),
                     EBB_EINVAL);
    assert_int_equal(try_join(&f, "g2", "sim-1,sim-2", 2, "the gang's ranks are 0 to 1"),
                     EBB_EINVAL);
    assert_int_equal(try_join(&f, "g2", "sim-1,sim-9", 1,
                              "it names an instance the sim never started"),
                     EBB_EINVAL);
    assert_int_equal(try_join(&f, "g2", "", 1, "never started"), EBB_EINVAL);
    assert_int_equal(try_join(&f, "other", "sim-1,sim-2", 1,
                              "the launch's token other is not the gang's (g2)"),
                     EBB_EINVAL);
    j = join_req("g2", "sim-1,sim-2", 1);
    j.l.count = 2;
    logbuf[0] = '\0';
    assert_int_equal(f.p->launch(f.self, linked(&j), on_launch, &r), EBB_EINVAL);
    assert_non_null(strstr(logbuf, "a join starts one member, not 2"));

    struct sim_launch one = on_c("one", H);
    launch(&f, &one, &r);
    assert_string_equal(r.id, "sim-3");
    assert_int_equal(try_join(&f, "one", "sim-3", 0, "sim-3 is a single instance"),
                     EBB_EINVAL);
    struct sim_launch g3 = gang("g3", "us-east-1c", 3, H);
    launch(&f, &g3, &r);
    assert_string_equal(r.id, "sim-4,sim-5,sim-6");
    assert_int_equal(try_join(&f, "g2", "sim-1,sim-5", 1,
                              "it names members of different gangs"),
                     EBB_EINVAL);

    /* A gang whose members all ended takes none. */
    struct done_res d = {0};
    assert_int_equal(f.p->terminate(f.self, "sim-1,sim-2", on_done, &d), 0);
    run_to(&f, ebb__clock_now(&f.clock));
    assert_int_equal(try_join(&f, "g2", "sim-1,sim-2", 1,
                              "every member of the gang has ended"),
                     EBB_EINVAL);
    /* None of the refusals started anything. */
    launch(&f, &one, &r);
    assert_string_equal(r.id, "sim-3");
    struct sim_launch next = on_c("next", H);
    launch(&f, &next, &r);
    assert_string_equal(r.id, "sim-7");
    fx_close(&f);
}

int main(void)
{
    assert_int_equal(ebb_parse_time("2020-01-01T00:00:00Z", &T0), 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_poll_is_history_then_only_new_rows),
        cmocka_unit_test(market_changed_fires_only_at_real_changes),
        cmocka_unit_test(availability_from_another_period_is_shifted_and_cycled),
        cmocka_unit_test(availability_from_another_period_is_not_moved_unasked),
        cmocka_unit_test(launches_check_capacity_and_on_demand_always_works),
        cmocka_unit_test(a_launch_is_idempotent_by_token),
        cmocka_unit_test(job_timeline_runs_exactly),
        cmocka_unit_test(exited_instance_lives_until_terminated),
        cmocka_unit_test(capacity_drop_preempts_the_newest_with_notice_and_checkpoint),
        cmocka_unit_test(a_short_notice_gives_no_checkpoint),
        cmocka_unit_test(a_late_launch_hears_its_notice_at_once),
        cmocka_unit_test(terminating_the_newest_spares_the_rest),
        cmocka_unit_test(hazard_model_is_deterministic_and_has_its_rate),
        cmocka_unit_test(a_hazard_preemption_gives_notice_and_checkpoint),
        cmocka_unit_test(stop_job_checkpoints_then_exits_stopped),
        cmocka_unit_test(terminate_cancels_pending_events),
        cmocka_unit_test(terminate_from_an_event_handler),
        cmocka_unit_test(destroy_cancels_pending_callbacks),
        cmocka_unit_test(destroy_cancels_in_the_order_asked),
        cmocka_unit_test(same_inputs_same_events),
        cmocka_unit_test(bad_traces_fail_create_with_the_readers_message),
        cmocka_unit_test(the_hazard_is_bounded),
        cmocka_unit_test(replays_the_shipped_aws_traces),
        cmocka_unit_test(a_gang_needs_capacity_for_every_member),
        cmocka_unit_test(a_member_is_preempted_alone_and_named_by_rank),
        cmocka_unit_test(terminating_a_gang_ends_all_its_members),
        cmocka_unit_test(a_gang_checkpoint_ending_at_the_deadline_counts),
        cmocka_unit_test(preempt_after_takes_a_gangs_last_member),
        cmocka_unit_test(the_hazard_takes_gang_members_one_by_one),
        cmocka_unit_test(a_join_replaces_a_lost_member),
        cmocka_unit_test(a_join_needs_a_lost_rank_of_a_running_gang_and_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
