/* The price- and risk-aware policy plugins trough and deadline, loaded from
 * the build tree by the real plugin loader and configured from their own
 * tables, then driven with small hand-built job and market views: forecast
 * troughs waited for or not, the deadline forcing on-demand at the right
 * moment, budgets stopping launches, cost per unit of work across speeds,
 * preemption risk, market restrictions, determinism and degenerate input.
 *
 * The loader and view helpers follow test_policies.c; every decision goes
 * through ph_decide_ok(), which checks what holds for every decision. */
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

#include "base/cfg_table.h"
#include "base/yaml_doc.h"
#include "plugin/plugin.h"

#include "policy_harness.h"

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
        struct ph_pol pol = ph_load(names[i], NULL);
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
        struct ebb_job_view job = ph_job10();
        struct ebb_market_view m = {.struct_size = sizeof(m)};
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
        ph_unload(&pol);
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
    struct ph_pol pol = ph_load("trough", NULL);
    struct ebb_offer offers[2];
    struct ebb_forecast_point fc[27];
    trough_market(offers, fc, T0);
    struct ebb_job_view job = ph_job10();
    job.deadline = T0 + 30 * H;
    /* 10 h at 1.00 now vs at 0.30 from T0 + 3 h: waits for the trough. */
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
    assert_int_equal(d.until, T0 + 3 * H);
    ph_reason_has(&d, "trough");

    /* 14 h to a 10 h job: waiting 3 h still leaves 48m after a restart
     * (14h - 3h - 10h - 6m - 6m), over the floor of 10m + 2% of 10 h. */
    job.deadline = T0 + 14 * H;
    d = ph_decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
    assert_int_equal(d.until, T0 + 3 * H);
    /* With 13h30m only a 2 h wait is safe; it still pays (1 h at 1.00). */
    job.deadline = T0 + 13 * H + 30 * MIN;
    d = ph_decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
    assert_int_equal(d.until, T0 + 2 * H);
    /* With 11 h no wait is safe: runs now. */
    job.deadline = T0 + 11 * H;
    d = ph_decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);
    ph_reason_has(&d, "expected cost");

    /* A trough saving under min_saving is not worth waiting for. */
    job = ph_job10();
    for (size_t i = 2; i < 27; i++)
        fc[i].p50 = USD(0.97);
    ph_decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);

    /* Without a forecast it runs now, never waiting for nothing. */
    offers[0].forecast = NULL;
    offers[0].n_forecast = 0;
    ph_decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);
    ph_unload(&pol);
}

static void trough_pauses_a_running_job(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("trough", NULL);
    struct ebb_offer offers[2];
    struct ebb_forecast_point fc[27];
    trough_market(offers, fc, T0);
    struct ebb_job_view job = ph_job10();
    job.deadline = T0 + 40 * H;
    job.running_offer = 0;
    job.running_since = T0 - H;
    /* Keeping costs 10.00; pausing for the trough about 3.03. */
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 2, T0, STOP, 0);
    ph_reason_has(&d, "trough");
    /* Near the end of the work the saving no longer pays a restart. */
    job.work_done = job.work_total - 5 * MIN;
    ph_decide_is(&pol, &job, offers, 2, T0, KEEP, 0);
    ph_unload(&pol);
}

/* ---- deadline ------------------------------------------------------------- */

static void deadline_forces_on_demand(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("deadline", NULL);
    struct ebb_offer offers[] = {SPOT_OD(1)};
    struct ebb_job_view job = ph_job10();
    job.work_done = 5 * H;
    job.running_offer = 0;
    job.running_since = T0 + 9 * H;
    /* Slack on on-demand q = 20h - t - 5h - 6m; floor 10m + 2% of 5h =
     * 16m. At 14h30m q = 24m: kept, asked again when q reaches 16m. */
    struct ebb_decision d =
        ph_decide_is(&pol, &job, offers, 2, T0 + 14 * H + 30 * MIN, KEEP, 0);
    assert_int_equal(d.until, T0 + 14 * H + 38 * MIN);
    /* At 14h39m q = 15m: one more preemption would be fatal: on-demand. */
    d = ph_decide_is(&pol, &job, offers, 2, T0 + 14 * H + 39 * MIN, LAUNCH, 1);
    ph_reason_has(&d, "preemption");

    /* Idle: a spot start needs q - 6m >= 16m. */
    job.running_offer = SIZE_MAX;
    ph_decide_is(&pol, &job, offers, 2, T0 + 14 * H + 32 * MIN, LAUNCH, 0);
    d = ph_decide_is(&pol, &job, offers, 2, T0 + 14 * H + 33 * MIN, LAUNCH, 1);
    ph_reason_has(&d, "no room for a spot start");

    /* On on-demand (hysteresis): back to spot only with q - d >= floor +
     * d, i.e. q >= 28m: at 14h20m q = 34m, at 14h27m q = 27m. */
    job.running_offer = 1;
    job.running_since = T0 + 14 * H;
    ph_decide_is(&pol, &job, offers, 2, T0 + 14 * H + 20 * MIN, LAUNCH, 0);
    ph_decide_is(&pol, &job, offers, 2, T0 + 14 * H + 27 * MIN, KEEP, 0);
    ph_unload(&pol);
}

static void deadline_waits_for_spot_then_on_demand(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("deadline", NULL);
    struct ebb_offer offers[] = {SPOT_OD(0)};
    struct ebb_job_view job = ph_job10();
    /* q = 9h54m; floor 10m + 12m = 22m; reserve 22m + 4 * 6m = 46m. */
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
    assert_int_equal(d.until, T0 + 9 * H + 8 * MIN);
    ph_reason_has(&d, "unless spot returns");
    d = ph_decide_is(&pol, &job, offers, 2, T0 + 9 * H + 8 * MIN, LAUNCH, 1);
    ph_reason_has(&d, "reserve");
    ph_unload(&pol);
}

static void deadline_moves_zone_only_when_it_pays(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("deadline", NULL);
    struct ebb_offer offers[] = {
        SPOT("p3.2xlarge", 0.918, 1.0, 1),
        ph_offer(EBB_MARKET_SPOT, "p3.2xlarge", "us-east-1b", 0.90, 1.0, 1),
        OD("p3.2xlarge", 3.06, 1.0),
    };
    struct ebb_job_view job = ph_job10();
    job.running_offer = 0;
    job.running_since = T0;
    /* 2% cheaper: not worth a restart. */
    ph_decide_is(&pol, &job, offers, 3, T0 + H, KEEP, 0);
    /* 40% cheaper for 9 h of work: moves. */
    offers[1].price_per_hour = USD(0.55);
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 3, T0 + H, LAUNCH, 1);
    ph_reason_has(&d, "worth a restart");
    /* ... but not in the last minutes of work. */
    job.work_done = job.work_total - 4 * MIN;
    ph_decide_is(&pol, &job, offers, 3, T0 + H, KEEP, 0);
    ph_unload(&pol);
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
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 1);
        ph_unload(&pol);
    }
}

/* A checkpoint that must travel (ebb_offer.transfer_cost, the egress of a
 * move out of the store's region) counts in the cost of starting there:
 * the faster offer's 8 USD run loses to 9.18 USD once 2 USD of transfer
 * come on top, not with 0.50; and a move that paid stops paying. */
static void transfer_cost_counts(void **state)
{
    (void)state;
    struct ebb_offer offers[] = {
        SPOT("p3.2xlarge", 0.918, 1.0, 1),
        SPOT("p3.8xlarge", 3.2, 4.0, 1),
        OD("p3.2xlarge", 3.06, 1.0),
    };
    for (size_t i = 0; i < N_NAMES; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        offers[1].transfer_cost = USD(0.5);
        ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 1);
        offers[1].transfer_cost = USD(2);
        ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 0);
        offers[1].transfer_cost = 0;
        ph_unload(&pol);
    }
    struct ph_pol pol = ph_load("deadline", NULL);
    struct ebb_offer zones[] = {
        SPOT("p3.2xlarge", 0.918, 1.0, 1),
        ph_offer(EBB_MARKET_SPOT, "p3.2xlarge", "us-east-1b", 0.55, 1.0, 1),
        OD("p3.2xlarge", 3.06, 1.0),
    };
    struct ebb_job_view job = ph_job10();
    job.running_offer = 0;
    job.running_since = T0;
    ph_decide_is(&pol, &job, zones, 3, T0 + H, LAUNCH, 1);
    zones[1].transfer_cost = USD(5);
    ph_decide_is(&pol, &job, zones, 3, T0 + H, KEEP, 0);
    ph_unload(&pol);
}

static void preemption_risk_steers_away(void **state)
{
    (void)state;
    struct ebb_offer offers[] = {
        SPOT("p3.2xlarge", 0.85, 1.0, 1),
        ph_offer(EBB_MARKET_SPOT, "p3.2xlarge", "us-east-1b", 0.918, 1.0,
                 1),
        OD("p3.2xlarge", 3.06, 1.0),
    };
    for (size_t i = 0; i < N_NAMES; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        /* No risk known: the cheaper one. */
        ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 0);
        /* Two preemptions an hour, 6 min lost each: +20% expected. */
        offers[0].preemption_per_hour = 2.0;
        offers[1].preemption_per_hour = 0.01;
        struct ebb_decision d = ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 1);
        ph_reason_has(&d, "us-east-1b");
        /* Absurd risk on every spot offer: on-demand is cheaper. */
        offers[1].preemption_per_hour = 50.0;
        offers[0].preemption_per_hour = 50.0;
        ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 2);
        offers[0].preemption_per_hour = 0;
        offers[1].preemption_per_hour = 0;
        ph_unload(&pol);
    }
}

static void budget_stops_a_launch(void **state)
{
    (void)state;
    struct ebb_offer offers[] = {SPOT_OD(1)};
    for (size_t i = 0; i < N_NAMES; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        /* Up to the first checkpoint on spot: 0.918 * (6m + 2m + 1h) =
         * 1.04; 2.00 left: launches. */
        job.budget = USD(10);
        job.spent = USD(8);
        ph_decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);
        /* 1.00 left: waits, and says why. */
        job.spent = USD(9);
        struct ebb_decision d = ph_decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
        ph_reason_has(&d, "budget");
        /* Running, 50 min from its next checkpoint (0.77 worst case with
         * the grace): kept; 0.50 left: stopped. */
        job.running_offer = 0;
        job.running_since = T0;
        job.work_done = 10 * MIN;
        ph_decide_is(&pol, &job, offers, 2, T0 + 20 * MIN, KEEP, 0);
        job.spent = USD(9.5);
        d = ph_decide_is(&pol, &job, offers, 2, T0 + 20 * MIN, STOP, 0);
        ph_reason_has(&d, "budget");
        /* The forecast's p90 counts: a spike to 5.00/h within the hour. */
        job.running_offer = SIZE_MAX;
        job.work_done = 0;
        job.spent = USD(8);
        struct ebb_forecast_point fc[1] = {
            {T0 + 30 * MIN, USD(4.0), USD(4.5), USD(5.0)}};
        offers[0].forecast = fc;
        offers[0].n_forecast = 1;
        d = ph_decide_ok(&pol, &job, offers, 2, T0);
        assert_true(d.kind != EBB_DECIDE_LAUNCH || d.offer != 0);
        offers[0].forecast = NULL;
        offers[0].n_forecast = 0;
        ph_unload(&pol);
    }
}

/* The job's own checkpoint interval replaces the checkpoint_every setting
 * in the budget's worst case; the setting remains for jobs without one. */
static void job_checkpoint_interval_counts(void **state)
{
    (void)state;
    struct ebb_offer offers[] = {SPOT_OD(1)};
    for (size_t i = 0; i < N_NAMES; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        job.budget = USD(10);
        job.spent = USD(9);
        /* No periodic checkpoints: the 1 h setting, 0.918 * (6m + 2m +
         * 1h) = 1.04 > 1.00 left: waits. */
        ph_decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
        /* Every 20 min: 0.918 * (6m + 2m + 20m) = 0.43: launches. */
        job.checkpoint_every = 20 * MIN;
        ph_decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);
        /* Every 2 h: 0.918 * (6m + 2m + 2h) = 1.96 > 1.00: waits, although
         * the setting alone would not reach that far either. */
        job.checkpoint_every = 2 * H;
        job.spent = USD(8.5);
        ph_decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
        ph_unload(&pol);
        /* The setting still rules jobs without an interval of their own. */
        pol = ph_load(names[i], "checkpoint_every: 20m\n");
        job.checkpoint_every = 0;
        job.spent = USD(9);
        ph_decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);
        job.checkpoint_every = 2 * H;
        ph_decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
        ph_unload(&pol);
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
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        /* Offer 1 looks cheaper now (0.90 against 1.00) but offer 0's
         * forecast halves in a minute: 0 wins. */
        struct ebb_offer offers[] = {
            SPOT("p3.2xlarge", 1.0, 1.0, 1), SPOT("p3.2xlarge", 0.9, 1.0, 1),
            OD("p3.2xlarge", 3.06, 1.0)};
        offers[0].zone = "us-east-1b";
        offers[0].forecast = fc;
        offers[0].n_forecast = 24;
        ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 0);
        /* The same with the offers the other way round. */
        struct ebb_offer swapped[] = {offers[1], offers[0], offers[2]};
        ph_decide_is(&pol, &job, swapped, 3, T0, LAUNCH, 1);
        /* Two offers alike: the first; the same behind a dearer one. */
        struct ebb_offer same[] = {
            SPOT("p3.2xlarge", 2.0, 1.0, 1), SPOT("p3.2xlarge", 0.9, 1.0, 1),
            SPOT("p3.2xlarge", 0.9, 1.0, 1), OD("p3.2xlarge", 3.06, 1.0)};
        ph_decide_is(&pol, &job, same, 4, T0, LAUNCH, 1);
        same[0].price_per_hour = USD(0.9);
        ph_decide_is(&pol, &job, same, 4, T0, LAUNCH, 0);
        ph_unload(&pol);
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
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        job.market = EBB_JOB_SPOT;
        ebb_time_ms times[] = {T0, T0 + 15 * H, T0 + 25 * H};
        for (size_t t = 0; t < 3; t++)
            ph_decide_is(&pol, &job, offers, 3, times[t], WAIT, 0);
        offers[1].available = 1;
        ph_decide_is(&pol, &job, offers, 3, T0 + 15 * H, LAUNCH, 1);
        offers[1].available = 0;
        job.running_offer = 0;
        job.running_since = T0;
        ph_decide_is(&pol, &job, offers, 3, T0 + 15 * H, STOP, 0);

        job = ph_job10();
        job.market = EBB_JOB_ON_DEMAND;
        offers[1].available = 1;
        ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 2);
        /* Spot-fallback without a deadline: spot only. */
        job = ph_job10();
        job.deadline = 0;
        offers[1].available = 0;
        ph_decide_is(&pol, &job, offers, 3, T0, WAIT, 0);
        ph_unload(&pol);
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
        struct ph_pol a = ph_load(names[i], NULL);
        struct ph_pol b = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        job.work_done = 3 * H + 17;
        for (ebb_time_ms t = T0; t < T0 + 22 * H; t += 37 * MIN) {
            for (int run = 0; run < 2; run++) {
                job.running_offer = run ? 0 : SIZE_MAX;
                struct ebb_decision x = ph_decide_ok(&a, &job, offers, 2, t);
                struct ebb_decision y = ph_decide_ok(&b, &job, offers, 2, t);
                assert_memory_equal(&x, &y, sizeof(x));
            }
        }
        ph_unload(&b);
        ph_unload(&a);
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
        ph_offer(EBB_MARKET_SPOT, NULL, NULL, 0.5, NAN, 1),
        ph_offer(EBB_MARKET_ON_DEMAND, NULL, NULL, -1.0, 1.0, 1),
        ph_offer(EBB_MARKET_ON_DEMAND, NULL, NULL, 1.0, -2.0, 1),
    };
    struct ebb_forecast_point odd[3] = {
        {T0 + 2 * H, USD(0.1), USD(0.2), USD(0.3)},
        {T0 + H, -5, -5, -5}, /* out of order, negative */
        {T0 - H, INT64_MAX, INT64_MAX, INT64_MAX},
    };
    for (size_t i = 0; i < N_NAMES; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        struct ebb_decision d;

        d = ph_decide_is(&pol, &job, NULL, 0, T0, WAIT, 0);
        {
            struct ebb_market_view m = {.struct_size = sizeof(m),
                                        .offers = NULL, .n_offers = 3};
            assert_int_equal(pol.p->decide(pol.self, &job, &m, T0, &d), 0);
            ph_expect(&d, EBB_DECIDE_WAIT, 0);
        }
        ph_decide_is(&pol, &job, broken, 3, T0, WAIT, 0);

        /* Deadline passed: the fastest on-demand, kept once there. */
        ph_decide_is(&pol, &job, offers, 3, T0 + 30 * H, LAUNCH, 2);
        job.running_offer = 2;
        job.running_since = T0 + 29 * H;
        ph_decide_is(&pol, &job, offers, 3, T0 + 30 * H, KEEP, 0);

        job = ph_job10();
        job.work_done = job.work_total;
        ph_decide_is(&pol, &job, offers, 3, T0, WAIT, 0);
        job.running_offer = 0;
        ph_decide_is(&pol, &job, offers, 3, T0, KEEP, 0);

        job = ph_job10();
        job.running_offer = 7;
        d = ph_decide_ok(&pol, &job, offers, 3, T0);
        assert_true(d.kind == EBB_DECIDE_LAUNCH || d.kind == EBB_DECIDE_WAIT);

        /* Odd forecasts and hazards: a decision, no crash, no UB. */
        job = ph_job10();
        offers[0].forecast = odd;
        offers[0].n_forecast = 3;
        offers[0].preemption_per_hour = NAN;
        ph_decide_ok(&pol, &job, offers, 3, T0);
        offers[0].preemption_per_hour = INFINITY;
        ph_decide_ok(&pol, &job, offers, 3, T0);
        offers[0].preemption_per_hour = -1;
        ph_decide_ok(&pol, &job, offers, 3, T0);
        offers[0].forecast = NULL; /* n without points */
        ph_decide_ok(&pol, &job, offers, 3, T0);
        offers[0].n_forecast = 0;
        offers[0].preemption_per_hour = 0;

        job.submitted_at = job.deadline;
        ph_decide_ok(&pol, &job, offers, 3, T0);
        job = ph_job10();
        job.deadline = 0;
        ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 0);
        job = ph_job10();
        job.work_total = INT64_MAX;
        job.deadline = INT64_MAX;
        job.restart_overhead = -5;
        job.budget = INT64_MAX;
        ph_decide_ok(&pol, &job, offers, 3, INT64_MAX - 1);
        ph_decide_ok(&pol, &job, offers, 3, INT64_MIN);
        job.work_done = INT64_MIN;
        job.work_saved = INT64_MAX;
        ph_decide_ok(&pol, &job, offers, 3, 0);
        ph_unload(&pol);
    }
}

/* ---- whole jobs, simulated ---------------------------------------------- */

static void simulated_jobs_meet_deadlines(void **state)
{
    (void)state;
    int (*traces[])(long) = {ph_never, ph_early, ph_flaky};
    for (size_t i = 0; i < N_NAMES; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        for (size_t t = 0; t < 3; t++) {
            struct ebb_job_view job = ph_job10();
            struct ph_sim_result r = ph_simulate(&pol, job, traces[t]);
            if (r.finished == 0 || r.finished > job.deadline)
                fail_msg("%s on trace %zu: finished %lld, deadline %lld",
                         names[i], t, (long long)(r.finished - T0),
                         (long long)(job.deadline - T0));
            if (traces[t] != ph_never)
                assert_true(r.spot_starts > 0);
            /* No flapping onto on-demand: spot starts follow the trace's
             * outages, on-demand ones are few. */
            if (r.od_starts > 3)
                fail_msg("%s on trace %zu: %u on-demand and %u spot starts",
                         names[i], t, r.od_starts, r.spot_starts);
        }
        ph_unload(&pol);
    }
}

/* The forecast's lowest p50 only lets a policy skip work: on random
 * markets with forecasts, giving it or leaving it out (0) must produce the
 * same decision, byte for byte. */
static void forecast_low_changes_no_decision(void **state)
{
    (void)state;
    enum { N_OFFERS = 12, N_POINTS = 48 };
    static struct ebb_forecast_point fc[N_OFFERS][N_POINTS];
    static double by_hour[N_OFFERS][24];
    uint64_t x = 88172645463325252ULL;
    const char *pruning[] = {"deadline", "trough"};
    for (size_t p = 0; p < 2; p++) {
        struct ph_pol pol = ph_load(pruning[p], NULL);
        for (int round = 0; round < 300; round++) {
            struct ebb_offer offers[N_OFFERS];
            for (size_t k = 0; k < N_OFFERS; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                int spot = k % 3 != 0;
                double price = 0.3 + (double)(x % 4000) / 1000.0;
                offers[k] = ph_offer(spot ? EBB_MARKET_SPOT : EBB_MARKET_ON_DEMAND,
                                     "p3.2xlarge", spot ? "us-east-1a" : "",
                                     price, 0.5 + (double)(x >> 20 & 7) / 4.0,
                                     (int)(x >> 30 & 1) || !spot);
                offers[k].preemption_per_hour = spot ? (double)(x >> 40 & 7) / 50 : 0;
                /* Every other round some spot offers have a hazard by hour. */
                if (spot && round % 2 == 1 && (x >> 44 & 1)) {
                    for (size_t h = 0; h < 24; h++) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        by_hour[k][h] = (double)(x % 9) / 20;
                    }
                    offers[k].preemption_by_hour = by_hour[k];
                }
                ebb_micros low = offers[k].price_per_hour;
                for (size_t i = 0; i < N_POINTS; i++) {
                    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                    ebb_micros p50 = (ebb_micros)((double)offers[k].price_per_hour *
                                                  (0.5 + (double)(x % 1000) / 1000.0));
                    fc[k][i] = (struct ebb_forecast_point){
                        T0 + (ebb_time_ms)(i + 1) * H, p50 * 9 / 10, p50, p50 * 11 / 10};
                    if (p50 < low)
                        low = p50;
                }
                offers[k].forecast = fc[k];
                offers[k].n_forecast = N_POINTS;
                offers[k].forecast_p50_low = low;
            }
            struct ebb_job_view job = ph_job10();
            job.deadline = T0 + (ebb_time_ms)(12 + round % 30) * H;
            if (round % 4 == 1) {
                job.running_offer = (size_t)round % N_OFFERS;
                job.running_since = T0 - H;
            }
            struct ebb_decision with = ph_decide_ok(&pol, &job, offers, N_OFFERS, T0);
            for (size_t k = 0; k < N_OFFERS; k++)
                offers[k].forecast_p50_low = 0;
            struct ebb_decision without = ph_decide_ok(&pol, &job, offers, N_OFFERS, T0);
            assert_memory_equal(&with, &without, sizeof(with));
        }
        ph_unload(&pol);
    }
}

/* ---- the hazard by hour of day ------------------------------------------ */

/* T0 is 22:13 UTC. "Stormy" hours 22:00-08:59 lose 3 instances an hour,
 * the others none (`calm_now` swaps the two). */
static void storm_hours(double by_hour[24], int calm_now)
{
    for (int h = 0; h < 24; h++) {
        int storm = h >= 22 || h <= 8;
        by_hour[h] = storm != calm_now ? 3.0 : 0.0;
    }
}

/* Equal prices at every hour: trough waits for the calm hours, where the
 * same run loses less to preemptions, and runs now when the storm is
 * later or when only the flat rate is known. */
static void trough_waits_for_calm_hours(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("trough", NULL);
    struct ebb_offer offers[2];
    struct ebb_forecast_point fc[27];
    double usd[27], stormy[24];
    for (size_t i = 0; i < 27; i++)
        usd[i] = 1.0;
    hourly(fc, T0, usd, 27);
    offers[0] = SPOT("p3.2xlarge", 1.0, 1.0, 1);
    offers[0].forecast = fc;
    offers[0].n_forecast = 27;
    offers[0].preemption_per_hour = 3.0 * 11 / 24;
    offers[1] = OD("p3.2xlarge", 3.06, 1.0);
    struct ebb_job_view job = ph_job10();
    job.deadline = T0 + 40 * H;

    /* Now: 10h06m of stormy hours, (1 + 3 * 0.1) * 10.1 = 13.13 expected;
     * from 09:13 (T0 + 11 h) all calm, 10.10. */
    storm_hours(stormy, 0);
    offers[0].preemption_by_hour = stormy;
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
    assert_int_equal(d.until, T0 + 11 * H);
    ph_reason_has(&d, "trough");

    /* The flat rate alone: every start costs the same, so it runs now. */
    offers[0].preemption_by_hour = NULL;
    ph_decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);

    /* Calm now, stormy later: runs now. */
    storm_hours(stormy, 1);
    offers[0].preemption_by_hour = stormy;
    ph_decide_is(&pol, &job, offers, 2, T0, LAUNCH, 0);
    ph_unload(&pol);
}

/* Two spot offers at the same price and the same flat rate; the second's
 * storm is at another time of day. Both policies launch the one calm
 * during the run, and the first (the lower index) when only flat rates
 * are known. */
static void calm_offer_preferred(void **state)
{
    (void)state;
    double stormy[24], calm[24];
    storm_hours(stormy, 0);
    storm_hours(calm, 1);
    for (size_t i = 0; i < N_NAMES; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_offer offers[] = {
            SPOT("p3.2xlarge", 0.918, 1.0, 1),
            ph_offer(EBB_MARKET_SPOT, "p3.2xlarge", "us-east-1b", 0.918, 1.0,
                     1),
            OD("p3.2xlarge", 3.06, 1.0),
        };
        offers[0].preemption_per_hour = offers[1].preemption_per_hour = 1.5;
        struct ebb_job_view job = ph_job10();
        ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 0);
        offers[0].preemption_by_hour = stormy;
        offers[1].preemption_by_hour = calm;
        ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 1);
        /* Twelve hours later the storm has moved to the other offer. */
        job.submitted_at = T0 + 12 * H;
        job.deadline = T0 + 32 * H;
        ph_decide_is(&pol, &job, offers, 3, T0 + 11 * H, LAUNCH, 0);
        ph_unload(&pol);
    }
}

/* ---- view sizes (include/ebb/policy.h) ---------------------------------- */

/* Decides on offers laid out `stride` bytes apart, with a given market
 * view generation. */
static struct ebb_decision decide_laid_out(const struct ph_pol *pol,
                                           const struct ebb_job_view *job,
                                           const void *offers, size_t n,
                                           uint64_t generation)
{
    struct ebb_market_view m = {.struct_size = sizeof(m), .offers = offers,
                                .n_offers = n, .generation = generation};
    struct ebb_decision d;
    assert_int_equal(pol->p->decide(pol->self, job, &m, T0, &d), 0);
    return d;
}

/* An ebbd with more offer fields (a wider stride) or fewer (one that
 * predates preemption_by_hour) is read right; views too small for the
 * first version are refused; the memo kept for one generation serves
 * other jobs on the same view with the same answers as none. */
static void view_sizes_respected(void **state)
{
    (void)state;
    double stormy[24], calm[24];
    storm_hours(stormy, 0);
    storm_hours(calm, 1);
    struct ebb_offer offers[] = {
        SPOT("p3.2xlarge", 0.918, 1.0, 1),
        ph_offer(EBB_MARKET_SPOT, "p3.2xlarge", "us-east-1b", 0.918, 1.0,
                 1),
        OD("p3.2xlarge", 3.06, 1.0),
    };
    offers[0].preemption_per_hour = offers[1].preemption_per_hour = 1.5;
    offers[0].preemption_by_hour = stormy;
    offers[1].preemption_by_hour = calm;
    struct wider {
        struct ebb_offer o;
        char future[40];
    } wide[3];
    /* The first version's layout: the fields up to forecast_p50_low. */
    const size_t v1 = offsetof(struct ebb_offer, preemption_by_hour);
    assert_true(v1 >= EBB_POLICY_OFFER_SIZE_V1);
    _Alignas(struct ebb_offer) unsigned char old[3 * sizeof(struct ebb_offer)];
    memset(wide, 0x7f, sizeof(wide));
    memset(old, 0, sizeof(old));
    for (size_t k = 0; k < 3; k++) {
        wide[k].o = offers[k];
        wide[k].o.struct_size = sizeof(struct wider);
        struct ebb_offer o = offers[k];
        o.struct_size = (uint32_t)v1;
        memcpy(old + k * v1, &o, v1);
    }
    for (size_t i = 0; i < N_NAMES; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        struct ebb_decision d = decide_laid_out(&pol, &job, wide, 3, 0);
        ph_expect(&d, LAUNCH, 1);
        /* The old layout has no hazard by hour: the flat tie, offer 0. */
        d = decide_laid_out(&pol, &job, old, 3, 0);
        ph_expect(&d, LAUNCH, 0);

        /* One generation, several jobs, memo on and off. */
        for (int w = 0; w < 12; w++) {
            job = ph_job10();
            job.work_done = (ebb_dur_ms)w * 50 * MIN;
            job.running_offer = w % 3 == 0 ? (size_t)(w / 3 % 3) : SIZE_MAX;
            struct ebb_decision memo =
                decide_laid_out(&pol, &job, offers, 3, 77);
            struct ebb_decision none =
                decide_laid_out(&pol, &job, offers, 3, 0);
            assert_memory_equal(&memo, &none, sizeof(memo));
        }

        /* Too small for the first version: refused. */
        job = ph_job10();
        struct ebb_offer small[3] = {offers[0], offers[1], offers[2]};
        small[0].struct_size = (uint32_t)EBB_POLICY_OFFER_SIZE_V1 - 8;
        struct ebb_market_view m = {.struct_size = sizeof(m), .offers = small,
                                    .n_offers = 3};
        assert_int_equal(pol.p->decide(pol.self, &job, &m, T0, &d), EBB_EINVAL);
        m.offers = offers;
        m.struct_size = (uint32_t)EBB_POLICY_MARKET_SIZE_V1 - 1;
        assert_int_equal(pol.p->decide(pol.self, &job, &m, T0, &d), EBB_EINVAL);
        m.struct_size = sizeof(m);
        job.struct_size = (uint32_t)EBB_POLICY_JOB_SIZE_V1 - 1;
        assert_int_equal(pol.p->decide(pol.self, &job, &m, T0, &d), EBB_EINVAL);
        /* A market view of the first version: no generation read. */
        job = ph_job10();
        m.struct_size = (uint32_t)EBB_POLICY_MARKET_SIZE_V1;
        assert_int_equal(pol.p->decide(pol.self, &job, &m, T0, &d), 0);
        ph_expect(&d, LAUNCH, 1);
        ph_unload(&pol);
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
        cmocka_unit_test(transfer_cost_counts),
        cmocka_unit_test(preemption_risk_steers_away),
        cmocka_unit_test(budget_stops_a_launch),
        cmocka_unit_test(job_checkpoint_interval_counts),
        cmocka_unit_test(cheapest_offer_found_in_any_order),
        cmocka_unit_test(markets_are_respected),
        cmocka_unit_test(deterministic_bytes),
        cmocka_unit_test(forecast_low_changes_no_decision),
        cmocka_unit_test(degenerate_inputs),
        cmocka_unit_test(simulated_jobs_meet_deadlines),
        cmocka_unit_test(trough_waits_for_calm_hours),
        cmocka_unit_test(calm_offer_preferred),
        cmocka_unit_test(view_sizes_respected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
