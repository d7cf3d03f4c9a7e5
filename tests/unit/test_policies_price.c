/* The price- and risk-aware policy plugins trough and deadline, loaded from
 * the build tree by the real plugin loader and configured from their own
 * tables, then driven with small hand-built job and market views: forecast
 * troughs waited for or not, the deadline forcing on-demand at the right
 * moment, budgets stopping launches, cost per unit of work across speeds,
 * preemption risk, market restrictions, determinism and degenerate input.
 *
 * The loader and view helpers follow test_policies.c; every decision goes
 * through decide_ok(), which checks what holds for every decision. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <math.h>

#include <ebb/policy.h>

#include "cfg_table.h"
#include "plugin.h"
#include "yaml_doc.h"

#define H EBB_MS_PER_HOUR
#define MIN EBB_MS_PER_MINUTE
#define USD(x) ((ebb_micros)((x) * 1e6 + 0.5))
#define T0 INT64_C(1700000000000)

/* ---- loading ------------------------------------------------------------ */

struct pol {
    struct ebb__plugin *plugin;
    const struct ebb_policy *p;
    void *cfg;
    void *self;
};

/* Opens policy `name` from $EBB_BUILD_ROOT/policies by name (so the loader's
 * name check runs), configures it from `yaml` (a mapping, or NULL for the
 * defaults) and creates it. */
static struct pol load(const char *name, const char *yaml)
{
    struct pol pol = {0};
    const char *root = getenv("EBB_BUILD_ROOT");
    assert_non_null(root);
    char *dirs[1] = {(char *)root};
    struct ebb__plugin_path path = {.dirs = dirs, .n = 1};
    struct ebb__diag d = {{0}};
    int rc = ebb__plugin_open(EBB__PLUGIN_POLICY, name, &path, &pol.plugin, &d);
    if (rc != 0)
        fail_msg("open %s: %s", name, d.msg);
    pol.p = pol.plugin->policy;
    assert_string_equal(pol.p->name, name);

    struct ebb__ydoc *doc = NULL;
    const struct ebb__ynode *section = NULL;
    if (yaml != NULL) {
        rc = ebb__ydoc_load_buffer("ebb.yaml", yaml, strlen(yaml), &doc, &d);
        if (rc != 0)
            fail_msg("yaml: %s", d.msg);
        section = ebb__ydoc_root(doc);
    }
    rc = ebb__cfg_apply(pol.p->config_keys, pol.p->config_size, section,
                        name, &pol.cfg, &d);
    ebb__ydoc_free(doc);
    if (rc != 0)
        fail_msg("config %s: %s", name, d.msg);
    rc = pol.p->create(NULL, pol.cfg, &pol.self);
    assert_int_equal(rc, 0);
    assert_non_null(pol.self);
    return pol;
}

static void unload(struct pol *pol)
{
    pol->p->destroy(pol->self);
    ebb__cfg_free(pol->p->config_keys, pol->cfg);
    ebb__plugin_close(pol->plugin);
}

/* ---- views -------------------------------------------------------------- */

static struct ebb_offer offer(enum ebb_market m, const char *type,
                              const char *zone, double usd_per_hour,
                              double speed, int available)
{
    struct ebb_offer o = {0};
    o.provider = "aws";
    o.region = "us-east-1";
    o.zone = zone;
    o.instance_type = type;
    o.market = m;
    o.price_per_hour = USD(usd_per_hour);
    o.speed = speed;
    o.available = available;
    return o;
}

#define SPOT(type, usd, speed, avail)                                       \
    offer(EBB_MARKET_SPOT, type, "us-east-1a", usd, speed, avail)
#define OD(type, usd, speed) offer(EBB_MARKET_ON_DEMAND, type, "", usd, speed, 1)
/* The usual market: p3.2xlarge on spot at 0.918/h (`avail` instances)
 * and on demand at 3.06/h, both at speed 1. */
#define SPOT_OD(avail)                                                       \
    SPOT("p3.2xlarge", 0.918, 1.0, avail), OD("p3.2xlarge", 3.06, 1.0)

/* A 10 h job submitted at T0 with a deadline at T0 + 20 h and a 6 min
 * restart overhead, spot with on-demand fallback, not running. */
static struct ebb_job_view job10(void)
{
    struct ebb_job_view j = {0};
    j.id = "job-1";
    j.name = "train";
    j.market = EBB_JOB_SPOT_FALLBACK;
    j.work_total = 10 * H;
    j.work_done = 0;
    j.submitted_at = T0;
    j.deadline = T0 + 20 * H;
    j.restart_overhead = 6 * MIN;
    j.checkpoint_grace = 2 * MIN;
    j.running_offer = SIZE_MAX;
    return j;
}

/* Decides and checks what every decision must satisfy. */
static struct ebb_decision decide_ok(const struct pol *pol,
                                     const struct ebb_job_view *job,
                                     const struct ebb_offer *offers, size_t n,
                                     ebb_time_ms now)
{
    struct ebb_market_view m = {.offers = offers, .n_offers = n};
    struct ebb_job_view job_copy = *job;
    struct ebb_offer copy[16];
    assert_true(n <= 16);
    if (n > 0 && offers != NULL)
        memcpy(copy, offers, n * sizeof(*offers));

    struct ebb_decision a, b;
    memset(&a, 0xa5, sizeof(a));
    memset(&b, 0x5a, sizeof(b));
    assert_int_equal(pol->p->decide(pol->self, job, &m, now, &a), 0);
    assert_int_equal(pol->p->decide(pol->self, job, &m, now, &b), 0);
    assert_memory_equal(&a, &b, sizeof(a));
    assert_memory_equal(&job_copy, job, sizeof(*job));
    if (n > 0 && offers != NULL)
        assert_memory_equal(copy, offers, n * sizeof(*offers));

    assert_true(a.reason[0] != '\0');
    assert_non_null(memchr(a.reason, '\0', sizeof(a.reason)));
    assert_true(a.kind >= EBB_DECIDE_WAIT && a.kind <= EBB_DECIDE_STOP);
    if (a.kind == EBB_DECIDE_LAUNCH)
        assert_true(a.offer < n);
    if ((a.kind == EBB_DECIDE_WAIT || a.kind == EBB_DECIDE_KEEP) &&
        a.until != 0)
        assert_true(a.until > now);
    if (a.kind == EBB_DECIDE_STOP)
        assert_true(job->running_offer != SIZE_MAX);
    return a;
}

static void expect(const struct ebb_decision *d, enum ebb_decision_kind kind,
                   size_t offer)
{
    if (d->kind != kind || (kind == EBB_DECIDE_LAUNCH && d->offer != offer))
        fail_msg("got kind %d offer %zu (%s), want kind %d offer %zu",
                 (int)d->kind, d->offer, d->reason, (int)kind, offer);
}

#define WAIT EBB_DECIDE_WAIT
#define LAUNCH EBB_DECIDE_LAUNCH
#define KEEP EBB_DECIDE_KEEP
#define STOP EBB_DECIDE_STOP

/* decide_ok(), then expect(). */
static struct ebb_decision decide_is(const struct pol *pol,
                                     const struct ebb_job_view *job,
                                     const struct ebb_offer *offers, size_t n,
                                     ebb_time_ms now,
                                     enum ebb_decision_kind kind, size_t offer)
{
    struct ebb_decision d = decide_ok(pol, job, offers, n, now);
    expect(&d, kind, offer);
    return d;
}

static void reason_has(const struct ebb_decision *d, const char *what)
{
    if (strstr(d->reason, what) == NULL)
        fail_msg("reason \"%s\" lacks \"%s\"", d->reason, what);
}

static const char *const names[] = {"trough", "deadline"};
#define N_NAMES 2

/* A forecast: `n` hourly points from now + 1 h, p50 = usd[i], p10/p90 at
 * -/+ 10%. */
static void hourly(struct ebb_forecast_point *fc, ebb_time_ms now,
                   const double *usd, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fc[i].at = now + (ebb_time_ms)(i + 1) * H;
        fc[i].p50 = USD(usd[i]);
        fc[i].p10 = USD(usd[i] * 0.9);
        fc[i].p90 = USD(usd[i] * 1.1);
    }
}

/* ---- the plugins as modules --------------------------------------------- */

static void modules_load(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_NAMES; i++) {
        struct pol pol = load(names[i], NULL);
        assert_int_equal(pol.p->abi, EBB_POLICY_ABI);
        assert_int_equal(pol.p->struct_size, sizeof(struct ebb_policy));
        assert_true(strlen(pol.p->description) > 10);
        for (const struct ebb_cfg_key *k = pol.p->config_keys; k->key; k++) {
            assert_non_null(k->default_value);
            assert_true(strlen(k->help) > 10);
        }
        assert_non_null(dlsym(pol.plugin->dl, "ebb_policy_entry"));
        assert_null(dlsym(pol.plugin->dl, "pu_expected_cost"));
        assert_null(dlsym(pol.plugin->dl, "pu_best_fit"));
        assert_null(dlsym(pol.plugin->dl, "dlr_idle"));
        struct ebb_job_view job = job10();
        struct ebb_market_view m = {0};
        struct ebb_decision out;
        assert_int_equal(pol.p->decide(pol.self, NULL, &m, T0, &out),
                         EBB_EINVAL);
        assert_int_equal(pol.p->decide(pol.self, &job, NULL, T0, &out),
                         EBB_EINVAL);
        assert_int_equal(pol.p->decide(pol.self, &job, &m, T0, NULL),
                         EBB_EINVAL);
        /* Negative or out-of-range settings are refused at create(). */
        void *bad = NULL;
        char *cfg = calloc(1, pol.p->config_size);
        assert_non_null(cfg);
        memcpy(cfg, pol.cfg, pol.p->config_size);
        *(ebb_dur_ms *)cfg = -1; /* safety_margin comes first */
        assert_int_equal(pol.p->create(NULL, cfg, &bad), EBB_ECONFIG);
        assert_null(bad);
        free(cfg);
        unload(&pol);
    }
}

/* ---- trough --------------------------------------------------------------- */

/* Spot at 1.00/h now and until T0 + 3 h, then 0.30/h for a day. */
static void trough_market(struct ebb_offer *offers,
                          struct ebb_forecast_point *fc, ebb_time_ms now)
{
    double usd[27];
    for (size_t i = 0; i < 27; i++)
        usd[i] = i < 2 ? 1.0 : 0.3;
    hourly(fc, now, usd, 27);
    offers[0] = SPOT("p3.2xlarge", 1.0, 1.0, 1);
    offers[0].forecast = fc;
    offers[0].n_forecast = 27;
    offers[1] = OD("p3.2xlarge", 3.06, 1.0);
}

static void trough_waits_when_slack_allows(void **state)
{
    (void)state;
    struct pol pol = load("trough", NULL);
    struct ebb_offer offers[2];
    struct ebb_forecast_point fc[27];
    trough_market(offers, fc, T0);
    struct ebb_job_view job = job10();
    job.deadline = T0 + 30 * H;
    /* 10 h at 1.00 now vs at 0.30 from T0 + 3 h: waits for the trough. */
    struct ebb_decision d = decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
    assert_int_equal(d.until, T0 + 3 * H);
    reason_has(&d, "trough");

    /* 14 h to a 10 h job: waiting 3 h still leaves 48m after a restart
     * (14h - 3h - 10h - 6m - 6m), over the floor of 10m + 2% of 10 h. */
    job.deadline = T0 + 14 * H;
    d = decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
    assert_int_equal(d.until, T0 + 3 * H);
    /* With 13h30m only a 2 h wait is safe; it still pays (1 h at 1.00). */
    job.deadline = T0 + 13 * H + 30 * MIN;
    d = decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
    assert_int_equal(d.until, T0 + 2 * H);
    /* With 11 h no wait is safe: runs now. */
    job.deadline = T0 + 11 * H;
    d = decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);
    reason_has(&d, "expected cost");

    /* A trough saving under min_saving is not worth waiting for. */
    job = job10();
    for (size_t i = 2; i < 27; i++)
        fc[i].p50 = USD(0.97);
    decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);

    /* Without a forecast it runs now, never waiting for nothing. */
    offers[0].forecast = NULL;
    offers[0].n_forecast = 0;
    decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);
    unload(&pol);
}

static void trough_pauses_a_running_job(void **state)
{
    (void)state;
    struct pol pol = load("trough", NULL);
    struct ebb_offer offers[2];
    struct ebb_forecast_point fc[27];
    trough_market(offers, fc, T0);
    struct ebb_job_view job = job10();
    job.deadline = T0 + 40 * H;
    job.running_offer = 0;
    job.running_since = T0 - H;
    /* Keeping costs 10.00; pausing for the trough about 3.03. */
    struct ebb_decision d = decide_is(&pol, &job, offers, 2, T0, STOP, 0);
    reason_has(&d, "trough");
    /* Near the end of the work the saving no longer pays a restart. */
    job.work_done = job.work_total - 5 * MIN;
    decide_is(&pol, &job, offers, 2, T0, KEEP, 0);
    unload(&pol);
}

/* ---- deadline ------------------------------------------------------------- */

static void deadline_forces_on_demand(void **state)
{
    (void)state;
    struct pol pol = load("deadline", NULL);
    struct ebb_offer offers[] = {SPOT_OD(1)};
    struct ebb_job_view job = job10();
    job.work_done = 5 * H;
    job.running_offer = 0;
    job.running_since = T0 + 9 * H;
    /* Slack on on-demand q = 20h - t - 5h - 6m; floor 10m + 2% of 5h =
     * 16m. At 14h30m q = 24m: kept, asked again when q reaches 16m. */
    struct ebb_decision d =
        decide_is(&pol, &job, offers, 2, T0 + 14 * H + 30 * MIN, KEEP, 0);
    assert_int_equal(d.until, T0 + 14 * H + 38 * MIN);
    /* At 14h39m q = 15m: one more preemption would be fatal: on-demand. */
    d = decide_is(&pol, &job, offers, 2, T0 + 14 * H + 39 * MIN, LAUNCH, 1);
    reason_has(&d, "preemption");

    /* Idle: a spot start needs q - 6m >= 16m. */
    job.running_offer = SIZE_MAX;
    decide_is(&pol, &job, offers, 2, T0 + 14 * H + 32 * MIN, LAUNCH, 0);
    d = decide_is(&pol, &job, offers, 2, T0 + 14 * H + 33 * MIN, LAUNCH, 1);
    reason_has(&d, "no room for a spot start");

    /* On on-demand (hysteresis): back to spot only with q - d >= floor +
     * d, i.e. q >= 28m: at 14h20m q = 34m, at 14h27m q = 27m. */
    job.running_offer = 1;
    job.running_since = T0 + 14 * H;
    decide_is(&pol, &job, offers, 2, T0 + 14 * H + 20 * MIN, LAUNCH, 0);
    decide_is(&pol, &job, offers, 2, T0 + 14 * H + 27 * MIN, KEEP, 0);
    unload(&pol);
}

static void deadline_waits_for_spot_then_on_demand(void **state)
{
    (void)state;
    struct pol pol = load("deadline", NULL);
    struct ebb_offer offers[] = {SPOT_OD(0)};
    struct ebb_job_view job = job10();
    /* q = 9h54m; floor 10m + 12m = 22m; reserve 22m + 4 * 6m = 46m. */
    struct ebb_decision d = decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
    assert_int_equal(d.until, T0 + 9 * H + 8 * MIN);
    reason_has(&d, "unless spot returns");
    d = decide_is(&pol, &job, offers, 2, T0 + 9 * H + 8 * MIN, LAUNCH, 1);
    reason_has(&d, "reserve");
    unload(&pol);
}

static void deadline_moves_zone_only_when_it_pays(void **state)
{
    (void)state;
    struct pol pol = load("deadline", NULL);
    struct ebb_offer offers[] = {
        SPOT("p3.2xlarge", 0.918, 1.0, 1),
        offer(EBB_MARKET_SPOT, "p3.2xlarge", "us-east-1b", 0.90, 1.0, 1),
        OD("p3.2xlarge", 3.06, 1.0),
    };
    struct ebb_job_view job = job10();
    job.running_offer = 0;
    job.running_since = T0;
    /* 2% cheaper: not worth a restart. */
    decide_is(&pol, &job, offers, 3, T0 + H, KEEP, 0);
    /* 40% cheaper for 9 h of work: moves. */
    offers[1].price_per_hour = USD(0.55);
    struct ebb_decision d = decide_is(&pol, &job, offers, 3, T0 + H, LAUNCH, 1);
    reason_has(&d, "worth a restart");
    /* ... but not in the last minutes of work. */
    job.work_done = job.work_total - 4 * MIN;
    decide_is(&pol, &job, offers, 3, T0 + H, KEEP, 0);
    unload(&pol);
}

/* ---- both: cost per work, risk, budget, markets ------------------------- */

static void faster_pricier_offer_wins(void **state)
{
    (void)state;
    struct ebb_offer offers[] = {
        SPOT("p3.2xlarge", 0.918, 1.0, 1),
        SPOT("p3.8xlarge", 3.2, 4.0, 1), /* 0.80 per unit of work */
        OD("p3.2xlarge", 3.06, 1.0),
    };
    for (size_t i = 0; i < N_NAMES; i++) {
        struct pol pol = load(names[i], NULL);
        struct ebb_job_view job = job10();
        decide_is(&pol, &job, offers, 3, T0, LAUNCH, 1);
        unload(&pol);
    }
}

static void preemption_risk_steers_away(void **state)
{
    (void)state;
    struct ebb_offer offers[] = {
        SPOT("p3.2xlarge", 0.85, 1.0, 1),
        offer(EBB_MARKET_SPOT, "p3.2xlarge", "us-east-1b", 0.918, 1.0, 1),
        OD("p3.2xlarge", 3.06, 1.0),
    };
    for (size_t i = 0; i < N_NAMES; i++) {
        struct pol pol = load(names[i], NULL);
        struct ebb_job_view job = job10();
        /* No risk known: the cheaper one. */
        decide_is(&pol, &job, offers, 3, T0, LAUNCH, 0);
        /* Two preemptions an hour, 6 min lost each: +20% expected. */
        offers[0].preemption_per_hour = 2.0;
        offers[1].preemption_per_hour = 0.01;
        struct ebb_decision d = decide_is(&pol, &job, offers, 3, T0, LAUNCH, 1);
        reason_has(&d, "us-east-1b");
        /* Absurd risk on every spot offer: on-demand is cheaper. */
        offers[1].preemption_per_hour = 50.0;
        offers[0].preemption_per_hour = 50.0;
        decide_is(&pol, &job, offers, 3, T0, LAUNCH, 2);
        offers[0].preemption_per_hour = 0;
        offers[1].preemption_per_hour = 0;
        unload(&pol);
    }
}

static void budget_stops_a_launch(void **state)
{
    (void)state;
    struct ebb_offer offers[] = {SPOT_OD(1)};
    for (size_t i = 0; i < N_NAMES; i++) {
        struct pol pol = load(names[i], NULL);
        struct ebb_job_view job = job10();
        /* Up to the first checkpoint on spot: 0.918 * (6m + 2m + 1h) =
         * 1.04; 2.00 left: launches. */
        job.budget = USD(10);
        job.spent = USD(8);
        decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);
        /* 1.00 left: waits, and says why. */
        job.spent = USD(9);
        struct ebb_decision d = decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
        reason_has(&d, "budget");
        /* Running, 50 min from its next checkpoint (0.77 worst case with
         * the grace): kept; 0.50 left: stopped. */
        job.running_offer = 0;
        job.running_since = T0;
        job.work_done = 10 * MIN;
        decide_is(&pol, &job, offers, 2, T0 + 20 * MIN, KEEP, 0);
        job.spent = USD(9.5);
        d = decide_is(&pol, &job, offers, 2, T0 + 20 * MIN, STOP, 0);
        reason_has(&d, "budget");
        /* The forecast's p90 counts: a spike to 5.00/h within the hour. */
        job.running_offer = SIZE_MAX;
        job.work_done = 0;
        job.spent = USD(8);
        struct ebb_forecast_point fc[1] = {
            {T0 + 30 * MIN, USD(4.0), USD(4.5), USD(5.0)}};
        offers[0].forecast = fc;
        offers[0].n_forecast = 1;
        d = decide_ok(&pol, &job, offers, 2, T0);
        assert_true(d.kind != EBB_DECIDE_LAUNCH || d.offer != 0);
        offers[0].forecast = NULL;
        offers[0].n_forecast = 0;
        unload(&pol);
    }
}

/* The job's own checkpoint interval replaces the checkpoint_every setting
 * in the budget's worst case; the setting remains for jobs without one. */
static void job_checkpoint_interval_counts(void **state)
{
    (void)state;
    struct ebb_offer offers[] = {SPOT_OD(1)};
    for (size_t i = 0; i < N_NAMES; i++) {
        struct pol pol = load(names[i], NULL);
        struct ebb_job_view job = job10();
        job.budget = USD(10);
        job.spent = USD(9);
        /* No periodic checkpoints: the 1 h setting, 0.918 * (6m + 2m +
         * 1h) = 1.04 > 1.00 left: waits. */
        decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
        /* Every 20 min: 0.918 * (6m + 2m + 20m) = 0.43: launches. */
        job.checkpoint_every = 20 * MIN;
        decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);
        /* Every 2 h: 0.918 * (6m + 2m + 2h) = 1.96 > 1.00: waits, although
         * the setting alone would not reach that far either. */
        job.checkpoint_every = 2 * H;
        job.spent = USD(8.5);
        decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
        unload(&pol);
        /* The setting still rules jobs without an interval of their own. */
        pol = load(names[i], "checkpoint_every: 20m\n");
        job.checkpoint_every = 0;
        job.spent = USD(9);
        decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);
        job.checkpoint_every = 2 * H;
        decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
        unload(&pol);
    }
}

/* The cheapest offer is found whatever the order of the offers and however
 * the prices now differ from the forecast: offers costed early must not
 * hide a later one that the forecast makes cheaper, and equal costs go to
 * the first offer. */
static void cheapest_offer_found_in_any_order(void **state)
{
    (void)state;
    struct ebb_forecast_point fc[24];
    double usd[24];
    for (size_t i = 0; i < 24; i++)
        usd[i] = 0.5;
    hourly(fc, T0, usd, 24);
    for (size_t i = 0; i < 24; i++) /* from a minute on: nothing to wait for */
        fc[i].at -= H - MIN;
    for (size_t i = 0; i < N_NAMES; i++) {
        struct pol pol = load(names[i], NULL);
        struct ebb_job_view job = job10();
        /* Offer 1 looks cheaper now (0.90 against 1.00) but offer 0's
         * forecast halves in a minute: 0 wins. */
        struct ebb_offer offers[] = {
            SPOT("p3.2xlarge", 1.0, 1.0, 1), SPOT("p3.2xlarge", 0.9, 1.0, 1),
            OD("p3.2xlarge", 3.06, 1.0)};
        offers[0].zone = "us-east-1b";
        offers[0].forecast = fc;
        offers[0].n_forecast = 24;
        decide_is(&pol, &job, offers, 3, T0, LAUNCH, 0);
        /* The same with the offers the other way round. */
        struct ebb_offer swapped[] = {offers[1], offers[0], offers[2]};
        decide_is(&pol, &job, swapped, 3, T0, LAUNCH, 1);
        /* Two offers alike: the first; the same behind a dearer one. */
        struct ebb_offer same[] = {
            SPOT("p3.2xlarge", 2.0, 1.0, 1), SPOT("p3.2xlarge", 0.9, 1.0, 1),
            SPOT("p3.2xlarge", 0.9, 1.0, 1), OD("p3.2xlarge", 3.06, 1.0)};
        decide_is(&pol, &job, same, 4, T0, LAUNCH, 1);
        same[0].price_per_hour = USD(0.9);
        decide_is(&pol, &job, same, 4, T0, LAUNCH, 0);
        unload(&pol);
    }
}

static void markets_are_respected(void **state)
{
    (void)state;
    struct ebb_offer offers[] = {
        OD("p3.2xlarge", 3.06, 1.0),
        SPOT("p3.2xlarge", 0.918, 1.0, 0),
        OD("p3.8xlarge", 10.0, 4.0),
    };
    for (size_t i = 0; i < N_NAMES; i++) {
        struct pol pol = load(names[i], NULL);
        struct ebb_job_view job = job10();
        job.market = EBB_JOB_SPOT;
        ebb_time_ms times[] = {T0, T0 + 15 * H, T0 + 25 * H};
        for (size_t t = 0; t < 3; t++)
            decide_is(&pol, &job, offers, 3, times[t], WAIT, 0);
        offers[1].available = 1;
        decide_is(&pol, &job, offers, 3, T0 + 15 * H, LAUNCH, 1);
        offers[1].available = 0;
        job.running_offer = 0;
        job.running_since = T0;
        decide_is(&pol, &job, offers, 3, T0 + 15 * H, STOP, 0);

        job = job10();
        job.market = EBB_JOB_ON_DEMAND;
        offers[1].available = 1;
        decide_is(&pol, &job, offers, 3, T0, LAUNCH, 2);
        /* Spot-fallback without a deadline: spot only. */
        job = job10();
        job.deadline = 0;
        offers[1].available = 0;
        decide_is(&pol, &job, offers, 3, T0, WAIT, 0);
        unload(&pol);
    }
}

/* ---- determinism and degenerate input ----------------------------------- */

static void deterministic_bytes(void **state)
{
    (void)state;
    struct ebb_offer offers[2];
    struct ebb_forecast_point fc[27];
    trough_market(offers, fc, T0);
    offers[0].preemption_per_hour = 0.3;
    for (size_t i = 0; i < N_NAMES; i++) {
        struct pol a = load(names[i], NULL);
        struct pol b = load(names[i], NULL);
        struct ebb_job_view job = job10();
        job.work_done = 3 * H + 17;
        for (ebb_time_ms t = T0; t < T0 + 22 * H; t += 37 * MIN) {
            for (int run = 0; run < 2; run++) {
                job.running_offer = run ? 0 : SIZE_MAX;
                struct ebb_decision x = decide_ok(&a, &job, offers, 2, t);
                struct ebb_decision y = decide_ok(&b, &job, offers, 2, t);
                assert_memory_equal(&x, &y, sizeof(x));
            }
        }
        unload(&b);
        unload(&a);
    }
}

static void degenerate_inputs(void **state)
{
    (void)state;
    struct ebb_offer offers[] = {
        SPOT_OD(1),
        OD("p3.8xlarge", 12.24, 4.0),
    };
    struct ebb_offer broken[] = {
        offer(EBB_MARKET_SPOT, NULL, NULL, 0.5, NAN, 1),
        offer(EBB_MARKET_ON_DEMAND, NULL, NULL, -1.0, 1.0, 1),
        offer(EBB_MARKET_ON_DEMAND, NULL, NULL, 1.0, -2.0, 1),
    };
    struct ebb_forecast_point odd[3] = {
        {T0 + 2 * H, USD(0.1), USD(0.2), USD(0.3)},
        {T0 + H, -5, -5, -5}, /* out of order, negative */
        {T0 - H, INT64_MAX, INT64_MAX, INT64_MAX},
    };
    for (size_t i = 0; i < N_NAMES; i++) {
        struct pol pol = load(names[i], NULL);
        struct ebb_job_view job = job10();
        struct ebb_decision d;

        d = decide_is(&pol, &job, NULL, 0, T0, WAIT, 0);
        {
            struct ebb_market_view m = {.offers = NULL, .n_offers = 3};
            assert_int_equal(pol.p->decide(pol.self, &job, &m, T0, &d), 0);
            expect(&d, EBB_DECIDE_WAIT, 0);
        }
        decide_is(&pol, &job, broken, 3, T0, WAIT, 0);

        /* Deadline passed: the fastest on-demand, kept once there. */
        decide_is(&pol, &job, offers, 3, T0 + 30 * H, LAUNCH, 2);
        job.running_offer = 2;
        job.running_since = T0 + 29 * H;
        decide_is(&pol, &job, offers, 3, T0 + 30 * H, KEEP, 0);

        job = job10();
        job.work_done = job.work_total;
        decide_is(&pol, &job, offers, 3, T0, WAIT, 0);
        job.running_offer = 0;
        decide_is(&pol, &job, offers, 3, T0, KEEP, 0);

        job = job10();
        job.running_offer = 7;
        d = decide_ok(&pol, &job, offers, 3, T0);
        assert_true(d.kind == EBB_DECIDE_LAUNCH || d.kind == EBB_DECIDE_WAIT);

        /* Odd forecasts and hazards: a decision, no crash, no UB. */
        job = job10();
        offers[0].forecast = odd;
        offers[0].n_forecast = 3;
        offers[0].preemption_per_hour = NAN;
        decide_ok(&pol, &job, offers, 3, T0);
        offers[0].preemption_per_hour = INFINITY;
        decide_ok(&pol, &job, offers, 3, T0);
        offers[0].preemption_per_hour = -1;
        decide_ok(&pol, &job, offers, 3, T0);
        offers[0].forecast = NULL; /* n without points */
        decide_ok(&pol, &job, offers, 3, T0);
        offers[0].n_forecast = 0;
        offers[0].preemption_per_hour = 0;

        job.submitted_at = job.deadline;
        decide_ok(&pol, &job, offers, 3, T0);
        job = job10();
        job.deadline = 0;
        decide_is(&pol, &job, offers, 3, T0, LAUNCH, 0);
        job = job10();
        job.work_total = INT64_MAX;
        job.deadline = INT64_MAX;
        job.restart_overhead = -5;
        job.budget = INT64_MAX;
        decide_ok(&pol, &job, offers, 3, INT64_MAX - 1);
        decide_ok(&pol, &job, offers, 3, INT64_MIN);
        job.work_done = INT64_MIN;
        job.work_saved = INT64_MAX;
        decide_ok(&pol, &job, offers, 3, 0);
        unload(&pol);
    }
}

/* ---- whole jobs, simulated ---------------------------------------------- */

struct sim_result {
    ebb_time_ms finished; /* 0 when not finished */
    unsigned od_starts, spot_starts;
};

/* Runs the job minute by minute. Spot is available when `spot_up(minute)`
 * is 1; a running spot instance is lost when it goes away. Progress counts
 * only after the restart overhead of each start. */
static struct sim_result simulate(const struct pol *pol,
                                  struct ebb_job_view job,
                                  int (*spot_up)(long minute))
{
    struct ebb_offer offers[] = {SPOT_OD(0)};
    struct sim_result r = {0};
    double done = (double)job.work_done;
    for (long m = 0; m < 40 * 60; m++) {
        ebb_time_ms now = job.submitted_at + m * MIN;
        offers[0].available = spot_up(m);
        if (job.running_offer == 0 && !offers[0].available)
            job.running_offer = SIZE_MAX; /* preempted */
        job.work_done = (ebb_dur_ms)done;
        struct ebb_decision d = decide_ok(pol, &job, offers, 2, now);
        if (d.kind == EBB_DECIDE_LAUNCH) {
            job.running_offer = d.offer;
            job.running_since = now;
            if (d.offer == 0)
                r.spot_starts++;
            else
                r.od_starts++;
        } else if (d.kind == EBB_DECIDE_STOP) {
            job.running_offer = SIZE_MAX;
        }
        if (job.running_offer != SIZE_MAX) {
            ebb_time_ms from = job.running_since + job.restart_overhead;
            ebb_time_ms start = from > now ? from : now;
            if (start < now + MIN)
                done += (double)(now + MIN - start) *
                        offers[job.running_offer].speed;
        }
        if (done >= (double)job.work_total) {
            r.finished = now + MIN;
            break;
        }
    }
    return r;
}

static int never(long minute)
{
    (void)minute;
    return 0;
}

/* Spot for the first 5 h, then gone. */
static int early(long minute)
{
    return minute < 5 * 60;
}

/* Spot up 40 minutes of every 90. */
static int flaky(long minute)
{
    return minute % 90 < 40;
}

static void simulated_jobs_meet_deadlines(void **state)
{
    (void)state;
    int (*traces[])(long) = {never, early, flaky};
    for (size_t i = 0; i < N_NAMES; i++) {
        struct pol pol = load(names[i], NULL);
        for (size_t t = 0; t < 3; t++) {
            struct ebb_job_view job = job10();
            struct sim_result r = simulate(&pol, job, traces[t]);
            if (r.finished == 0 || r.finished > job.deadline)
                fail_msg("%s on trace %zu: finished %lld, deadline %lld",
                         names[i], t, (long long)(r.finished - T0),
                         (long long)(job.deadline - T0));
            if (traces[t] != never)
                assert_true(r.spot_starts > 0);
            /* No flapping onto on-demand: spot starts follow the trace's
             * outages, on-demand ones are few. */
            if (r.od_starts > 3)
                fail_msg("%s on trace %zu: %u on-demand and %u spot starts",
                         names[i], t, r.od_starts, r.spot_starts);
        }
        unload(&pol);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(modules_load),
        cmocka_unit_test(trough_waits_when_slack_allows),
        cmocka_unit_test(trough_pauses_a_running_job),
        cmocka_unit_test(deadline_forces_on_demand),
        cmocka_unit_test(deadline_waits_for_spot_then_on_demand),
        cmocka_unit_test(deadline_moves_zone_only_when_it_pays),
        cmocka_unit_test(faster_pricier_offer_wins),
        cmocka_unit_test(preemption_risk_steers_away),
        cmocka_unit_test(budget_stops_a_launch),
        cmocka_unit_test(job_checkpoint_interval_counts),
        cmocka_unit_test(cheapest_offer_found_in_any_order),
        cmocka_unit_test(markets_are_respected),
        cmocka_unit_test(deterministic_bytes),
        cmocka_unit_test(degenerate_inputs),
        cmocka_unit_test(simulated_jobs_meet_deadlines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
