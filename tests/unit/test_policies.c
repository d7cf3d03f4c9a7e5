/* The policy plugins on-demand, greedy and uniform-progress, loaded from the
 * build tree by the real plugin loader and configured from their own
 * tables, then driven with hand-built job and market views.
 *
 * Every decision goes through ph_decide_ok(), which also checks what holds for
 * all of them: rc 0, a non-empty reason, a valid offer index for LAUNCH,
 * the inputs left untouched, and the same bytes when asked twice. A small
 * simulation at the end runs whole jobs to check finishing by the deadline
 * and that hysteresis really reduces on/off flapping. */
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

/* ---- the plugins as modules --------------------------------------------- */

static void modules_load(void **state)
{
    (void)state;
    const char *names[] = {"on-demand", "greedy", "uniform-progress"};
    for (size_t i = 0; i < 3; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        assert_int_equal(pol.p->abi, EBB_POLICY_ABI);
        assert_int_equal(pol.p->struct_size, sizeof(struct ebb_policy));
        assert_true(strlen(pol.p->description) > 10);
        assert_non_null(pol.p->config_keys);
        for (const struct ebb_cfg_key *k = pol.p->config_keys; k->key; k++) {
            assert_non_null(k->default_value);
            assert_true(strlen(k->help) > 10);
        }
        /* Only the entry is exported; shared helpers stay hidden. */
        assert_non_null(dlsym(pol.plugin->dl, "ebb_policy_entry"));
        assert_null(dlsym(pol.plugin->dl, "pu_slack"));
        assert_null(dlsym(pol.plugin->dl, "pu_od_choice"));
        /* NULL arguments are refused, not dereferenced. */
        struct ebb_job_view job = ph_job10();
        struct ebb_market_view m = {.struct_size = sizeof(m)};
        struct ebb_decision out;
        assert_int_equal(pol.p->decide(pol.self, NULL, &m, T0, &out),
                         EBB_EINVAL);
        assert_int_equal(pol.p->decide(pol.self, &job, NULL, T0, &out),
                         EBB_EINVAL);
        assert_int_equal(pol.p->decide(pol.self, &job, &m, T0, NULL),
                         EBB_EINVAL);
        ph_unload(&pol);
    }
    /* uniform-progress exposes its knobs with the paper's defaults. */
    struct ph_pol up = ph_load("uniform-progress", NULL);
    const char *want[] = {"hysteresis_overheads", "hysteresis_margin",
                          "safety_overheads", "safety_margin"};
    for (size_t i = 0; i < 4; i++) {
        int found = 0;
        for (const struct ebb_cfg_key *k = up.p->config_keys; k->key; k++)
            found |= strcmp(k->key, want[i]) == 0;
        if (!found)
            fail_msg("uniform-progress lacks config key %s", want[i]);
    }
    ph_unload(&up);
    /* Negative settings are refused at create(). */
    struct ph_pol g = ph_load("greedy", NULL);
    void *bad = NULL;
    struct {
        ebb_dur_ms a, b;
    } neg = {-1, 0};
    assert_int_equal(g.p->create(NULL, &neg, &bad), EBB_ECONFIG);
    assert_null(bad);
    ph_unload(&g);
}

/* ---- on-demand ---------------------------------------------------------- */

static void on_demand_cheapest_per_work(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("on-demand", NULL);
    struct ebb_job_view job = ph_job10();
    /* 3.06/h at speed 1 vs 10.00/h at speed 4 (2.50 per unit of work). */
    struct ebb_offer offers[] = {
        SPOT_OD(1),
        OD("p3.8xlarge", 10.0, 4.0),
        OD("g5.xlarge", 1.2, 0.0), /* unusable: speed 0 */
    };
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 4, T0, LAUNCH, 2);
    ph_reason_has(&d, "on-demand p3.8xlarge");

    /* Running on on-demand: kept, even on the pricier one. */
    job.running_offer = 1;
    job.running_since = T0;
    ph_decide_is(&pol, &job, offers, 4, T0 + H, KEEP, 0);

    /* Running on spot: moved to on-demand. */
    job.running_offer = 0;
    ph_decide_is(&pol, &job, offers, 4, T0 + H, LAUNCH, 2);

    /* The cheapest per work cannot finish by the deadline: the next
     * cheapest that can wins. */
    job = ph_job10();
    job.deadline = T0 + 8 * H;
    struct ebb_offer tight[] = {
        OD("slow", 1.0, 1.0),
        OD("fast", 3.0, 2.0),
        OD("faster", 9.0, 4.0),
    };
    ph_decide_is(&pol, &job, tight, 3, T0, LAUNCH, 1);
    /* None can: the fastest, and the reason says the deadline is lost. */
    job.deadline = T0 + 2 * H;
    d = ph_decide_is(&pol, &job, tight, 3, T0, LAUNCH, 2);
    ph_reason_has(&d, "missed");

    /* A spot-only job is never given on-demand. */
    job = ph_job10();
    job.market = EBB_JOB_SPOT;
    ph_decide_is(&pol, &job, offers, 4, T0, LAUNCH, 0);
    offers[0].available = 0;
    ph_decide_is(&pol, &job, offers, 4, T0, WAIT, 0);
    ph_unload(&pol);
}

/* ---- greedy ------------------------------------------------------------- */

static void greedy_takes_spot(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("greedy", NULL);
    struct ebb_job_view job = ph_job10();
    struct ebb_offer offers[] = {
        SPOT("p3.2xlarge", 0.5, 1.0, 0), /* cheapest but taken */
        SPOT("p3.2xlarge", 0.918, 1.0, 1),
        SPOT("p3.8xlarge", 3.2, 4.0, 1), /* 0.80 per work: cheapest */
        OD("p3.2xlarge", 3.06, 1.0),
    };
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 4, T0, LAUNCH, 2);
    ph_reason_has(&d, "spot p3.8xlarge us-east-1a at 3.2000 USD/h");
    ph_reason_has(&d, "available");

    /* On spot, kept. */
    job.running_offer = 2;
    job.running_since = T0;
    ph_decide_is(&pol, &job, offers, 4, T0 + H, KEEP, 0);
    ph_unload(&pol);
}

static void greedy_waits_then_on_demand(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("greedy", NULL);
    struct ebb_job_view job = ph_job10();
    struct ebb_offer offers[] = {SPOT_OD(0)};
    /* Slack = 20h - 10h - 6m = 9h54m; asks again when 10 min are left. */
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
    assert_int_equal(d.until, T0 + 9 * H + 44 * MIN);
    ph_reason_has(&d, "slack 9h54m");

    /* At that time: on-demand. */
    d = ph_decide_is(&pol, &job, offers, 2, T0 + 9 * H + 44 * MIN + 1, LAUNCH, 1);
    ph_reason_has(&d, "switching to on-demand");

    /* Slack gone: on-demand even though spot is back, because a spot start
     * with no slack would miss the deadline on the first preemption. */
    offers[0].available = 1;
    ph_decide_is(&pol, &job, offers, 2, T0 + 9 * H + 50 * MIN, LAUNCH, 1);

    /* On spot when the slack runs out: kept, progress is being made. */
    job.running_offer = 0;
    job.running_since = T0 + 9 * H;
    ph_decide_is(&pol, &job, offers, 2, T0 + 9 * H + 55 * MIN, KEEP, 0);

    /* On on-demand with spot back and little slack: stays. */
    job.running_offer = 1;
    ph_decide_is(&pol, &job, offers, 2, T0 + 9 * H + 55 * MIN, KEEP, 0);
    /* ... unless the slack comfortably allows (here the deadline moved). */
    job.deadline = T0 + 40 * H;
    ph_decide_is(&pol, &job, offers, 2, T0 + 9 * H + 55 * MIN, LAUNCH, 0);
    ph_unload(&pol);
}

static void greedy_slow_spot_yields(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("greedy", NULL);
    struct ebb_job_view job = ph_job10();
    struct ebb_offer offers[] = {
        SPOT("g4dn.xlarge", 0.2, 0.5, 1),
        OD("p3.2xlarge", 3.06, 1.0),
    };
    job.running_offer = 0;
    job.running_since = T0;
    job.work_done = 2 * H;
    /* 8 h left: 16 h on this spot, 8 h on on-demand; 9h57m to go. */
    ebb_time_ms now = T0 + 10 * H + 3 * MIN;
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 2, now, KEEP, 0);
    assert_int_equal(d.until, now + 1 * H + 41 * MIN);
    d = ph_decide_is(&pol, &job, offers, 2, now + 1 * H + 45 * MIN, LAUNCH, 1);
    ph_reason_has(&d, "cannot finish");
    ph_unload(&pol);
}

/* ---- uniform-progress --------------------------------------------------- */

static void up_ahead_waits_behind_runs(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("uniform-progress", NULL);
    struct ebb_job_view job = ph_job10();
    struct ebb_offer offers[] = {SPOT_OD(0)};
    /* 10 h after submission the line is at 5 h; 6 h done: ahead. */
    job.work_done = 6 * H;
    ebb_time_ms now = T0 + 10 * H;
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 2, now, WAIT, 0);
    /* The line reaches 6 h at T0 + 12 h. */
    assert_int_equal(d.until, T0 + 12 * H);
    ph_reason_has(&d, "ahead");

    /* 4 h done: behind, no spot: on-demand. */
    job.work_done = 4 * H;
    d = ph_decide_is(&pol, &job, offers, 2, now, LAUNCH, 1);
    ph_reason_has(&d, "behind");

    /* Behind but spot is there: spot (exploitation). */
    offers[0].available = 1;
    ph_decide_is(&pol, &job, offers, 2, now, LAUNCH, 0);

    /* On spot while behind: kept until preempted. */
    job.running_offer = 0;
    job.running_since = now;
    ph_decide_is(&pol, &job, offers, 2, now + H, KEEP, 0);
    ph_unload(&pol);
}

static void up_hysteresis(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("uniform-progress", NULL);
    struct ebb_job_view job = ph_job10();
    struct ebb_offer offers[] = {SPOT_OD(1)};
    job.running_offer = 1;
    job.running_since = T0 + 8 * H;
    ebb_time_ms now = T0 + 10 * H; /* line at 5h; slope 1/2 */
    /* Just ahead of the line now, but not of where it will be in 2d = 12m
     * (5h06m): on-demand is kept although spot is available. */
    job.work_done = 5 * H + 3 * MIN;
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 2, now, KEEP, 0);
    ph_reason_has(&d, "hysteresis");
    /* On-demand gains 1/2 per minute on the line: ahead by the margin in
     * 6 min. */
    assert_int_equal(d.until, now + 6 * MIN);

    /* Ahead of the line 12 min out: spot. */
    job.work_done = 5 * H + 7 * MIN;
    ph_decide_is(&pol, &job, offers, 2, now, LAUNCH, 0);
    /* ... or, with no spot, release on-demand. */
    offers[0].available = 0;
    ph_decide_is(&pol, &job, offers, 2, now, STOP, 0);

    /* Idle just ahead of the line: waits; just behind: on-demand. */
    job.running_offer = SIZE_MAX;
    job.work_done = 5 * H + 1;
    ph_decide_is(&pol, &job, offers, 2, now, WAIT, 0);
    job.work_done = 5 * H - 1;
    ph_decide_is(&pol, &job, offers, 2, now, LAUNCH, 1);
    ph_unload(&pol);
}

static void up_safety_net(void **state)
{
    (void)state;
    struct ph_pol pol = ph_load("uniform-progress", NULL);
    struct ebb_job_view job = ph_job10();
    struct ebb_offer offers[] = {SPOT_OD(1)};
    /* Behind the line with spot available (which rule 2 would take), but
     * 10h + 6m + 5m to go with 10 h of work: slack 5m < d = 6m: the safety
     * net goes on-demand regardless. */
    job.work_done = 0;
    job.submitted_at = T0 - 100 * H;
    job.deadline = T0 + 10 * H + 11 * MIN;
    job.work_total = 10 * H;
    struct ebb_decision d = ph_decide_is(&pol, &job, offers, 2, T0, LAUNCH, 1);
    ph_reason_has(&d, "safety net");

    /* With 7 min of slack it would take spot. */
    ph_decide_is(&pol, &job, offers, 2, T0 - 2 * MIN, LAUNCH, 0);
    ph_unload(&pol);

    /* On on-demand and far ahead of the line, but leaving would trip a
     * 1 h safety margin: stays until done. */
    pol = ph_load("uniform-progress", "safety_margin: 1h\n");
    job = ph_job10();
    job.running_offer = 1;
    job.running_since = T0;
    job.work_done = 9 * H + 45 * MIN; /* line at 19h12m: 9h36m */
    d = ph_decide_is(&pol, &job, offers, 2, T0 + 19 * H, KEEP, 0);
    ph_reason_has(&d, "safety net");
    ph_unload(&pol);
}

/* ---- market restrictions ------------------------------------------------ */

static void spot_only_never_on_demand(void **state)
{
    (void)state;
    const char *names[] = {"on-demand", "greedy", "uniform-progress"};
    struct ebb_offer offers[] = {
        OD("p3.2xlarge", 3.06, 1.0),
        SPOT("p3.2xlarge", 0.918, 1.0, 0),
        OD("p3.8xlarge", 10.0, 4.0),
    };
    for (size_t i = 0; i < 3; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        job.market = EBB_JOB_SPOT;
        /* Behind, out of slack, deadline passed: still no on-demand. */
        ebb_time_ms times[] = {T0, T0 + 15 * H, T0 + 25 * H};
        for (size_t t = 0; t < 3; t++)
            ph_decide_is(&pol, &job, offers, 3, times[t], WAIT, 0);
        offers[1].available = 1;
        ph_decide_is(&pol, &job, offers, 3, T0 + 15 * H, LAUNCH, 1);
        offers[1].available = 0;
        /* Found on on-demand somehow: released. */
        job.running_offer = 0;
        job.running_since = T0;
        ph_decide_is(&pol, &job, offers, 3, T0 + 15 * H, STOP, 0);

        /* On-demand-only jobs never get spot. */
        job = ph_job10();
        job.market = EBB_JOB_ON_DEMAND;
        offers[1].available = 1;
        ph_decide_is(&pol, &job, offers, 3, T0, LAUNCH, 2);
        offers[1].available = 0;
        ph_unload(&pol);
    }
}

/* ---- determinism and degenerate input ----------------------------------- */

static void deterministic_bytes(void **state)
{
    (void)state;
    const char *names[] = {"on-demand", "greedy", "uniform-progress"};
    struct ebb_offer offers[] = {SPOT_OD(1)};
    for (size_t i = 0; i < 3; i++) {
        /* Two instances of the same policy agree too (no hidden state). */
        struct ph_pol a = ph_load(names[i], NULL);
        struct ph_pol b = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        job.work_done = 3 * H + 17;
        for (ebb_time_ms t = T0; t < T0 + 22 * H; t += 37 * MIN) {
            struct ebb_decision x = ph_decide_ok(&a, &job, offers, 2, t);
            struct ebb_decision y = ph_decide_ok(&b, &job, offers, 2, t);
            assert_memory_equal(&x, &y, sizeof(x));
        }
        ph_unload(&b);
        ph_unload(&a);
    }
}

static void degenerate_inputs(void **state)
{
    (void)state;
    const char *names[] = {"on-demand", "greedy", "uniform-progress"};
    struct ebb_offer offers[] = {
        SPOT_OD(1),
        OD("p3.8xlarge", 12.24, 4.0),
    };
    struct ebb_offer broken[] = {
        ph_offer(EBB_MARKET_SPOT, NULL, NULL, 0.5, NAN, 1),
        ph_offer(EBB_MARKET_ON_DEMAND, NULL, NULL, -1.0, 1.0, 1),
        ph_offer(EBB_MARKET_ON_DEMAND, NULL, NULL, 1.0, -2.0, 1),
    };
    for (size_t i = 0; i < 3; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        struct ebb_job_view job = ph_job10();
        struct ebb_decision d;

        /* No offers at all, or a NULL table. */
        d = ph_decide_is(&pol, &job, NULL, 0, T0, WAIT, 0);
        {
            struct ebb_market_view m = {.struct_size = sizeof(m),
                                        .offers = NULL, .n_offers = 3};
            assert_int_equal(pol.p->decide(pol.self, &job, &m, T0, &d), 0);
            ph_expect(&d, EBB_DECIDE_WAIT, 0);
            assert_true(d.reason[0] != '\0');
        }
        /* Only unusable offers (NaN / negative speed, negative price). */
        ph_decide_is(&pol, &job, broken, 3, T0, WAIT, 0);

        /* Deadline passed: the fastest on-demand, the safest way out. */
        ph_decide_is(&pol, &job, offers, 3, T0 + 30 * H, LAUNCH, 2);
        /* ... and an instance already running there is kept. */
        job.running_offer = 2;
        job.running_since = T0 + 29 * H;
        ph_decide_is(&pol, &job, offers, 3, T0 + 30 * H, KEEP, 0);

        /* Work done: nothing to launch; a running job is let exit. */
        job = ph_job10();
        job.work_done = job.work_total;
        ph_decide_is(&pol, &job, offers, 3, T0, WAIT, 0);
        job.running_offer = 0;
        ph_decide_is(&pol, &job, offers, 3, T0, KEEP, 0);
        job.work_total = 0;
        job.work_done = 0;
        ph_decide_is(&pol, &job, offers, 3, T0, KEEP, 0);

        /* A running index outside the view counts as not running. */
        job = ph_job10();
        job.running_offer = 7;
        d = ph_decide_ok(&pol, &job, offers, 3, T0);
        assert_true(d.kind == EBB_DECIDE_LAUNCH || d.kind == EBB_DECIDE_WAIT);

        /* Submitted at the deadline, negative times, no deadline, extreme
         * values: a decision, no crash, no UB. */
        job = ph_job10();
        job.submitted_at = job.deadline;
        ph_decide_ok(&pol, &job, offers, 3, T0);
        job.submitted_at = T0 + 30 * H;
        ph_decide_ok(&pol, &job, offers, 3, T0);
        job = ph_job10();
        job.deadline = 0;
        d = ph_decide_ok(&pol, &job, offers, 3, T0);
        if (i > 0)
            ph_expect(&d, EBB_DECIDE_LAUNCH, 0);
        offers[0].available = 0;
        d = ph_decide_ok(&pol, &job, offers, 3, T0);
        if (i > 0)
            ph_expect(&d, EBB_DECIDE_WAIT, 0);
        offers[0].available = 1;
        job = ph_job10();
        job.work_total = INT64_MAX;
        job.deadline = INT64_MAX;
        job.restart_overhead = -5;
        ph_decide_ok(&pol, &job, offers, 3, INT64_MAX - 1);
        ph_decide_ok(&pol, &job, offers, 3, INT64_MIN);
        job.work_done = INT64_MIN;
        ph_decide_ok(&pol, &job, offers, 3, 0);

        /* Budget spent: nothing new starts, a running instance stops. */
        job = ph_job10();
        job.budget = USD(40);
        job.spent = USD(40);
        d = ph_decide_is(&pol, &job, offers, 3, T0, WAIT, 0);
        ph_reason_has(&d, "budget");
        job.running_offer = 1;
        ph_decide_is(&pol, &job, offers, 3, T0, STOP, 0);
        /* Budget too small to finish: still decides, and says so. */
        job = ph_job10();
        job.market = EBB_JOB_ON_DEMAND;
        job.budget = USD(5);
        job.spent = USD(1);
        d = ph_decide_ok(&pol, &job, offers, 3, T0);
        ph_expect(&d, EBB_DECIDE_LAUNCH, 2); /* tie per work: the faster */
        ph_reason_has(&d, "budget left 4.00");
        ph_unload(&pol);
    }
}

/* ---- whole jobs, simulated ---------------------------------------------- */

static void simulated_jobs_meet_deadlines(void **state)
{
    (void)state;
    const char *names[] = {"on-demand", "greedy", "uniform-progress"};
    int (*traces[])(long) = {ph_never, ph_early, ph_flaky};
    for (size_t i = 0; i < 3; i++) {
        struct ph_pol pol = ph_load(names[i], NULL);
        for (size_t t = 0; t < 3; t++) {
            struct ebb_job_view job = ph_job10();
            struct ph_sim_result r = ph_simulate(&pol, job, traces[t]);
            if (r.finished == 0 || r.finished > job.deadline)
                fail_msg("%s on trace %zu: finished %lld, deadline %lld",
                         names[i], t, (long long)(r.finished - T0),
                         (long long)(job.deadline - T0));
            if (i == 0)
                assert_int_equal(r.spot_starts, 0);
            else if (traces[t] != ph_never)
                assert_true(r.spot_starts > 0);
        }
        ph_unload(&pol);
    }
}

static void hysteresis_reduces_flapping(void **state)
{
    (void)state;
    struct ph_pol with = ph_load("uniform-progress", NULL);
    struct ph_pol without = ph_load("uniform-progress",
                              "hysteresis_overheads: 0\n"
                              "hysteresis_margin: 0s\n");
    struct ebb_job_view job = ph_job10();
    struct ph_sim_result a = ph_simulate(&with, job, ph_never);
    struct ph_sim_result b = ph_simulate(&without, job, ph_never);
    assert_true(a.finished != 0 && a.finished <= job.deadline);
    assert_true(b.finished != 0 && b.finished <= job.deadline);
    /* Without hysteresis it restarts on-demand about every catch-up; with
     * it, markedly less often. */
    if (!(a.od_starts * 2 <= b.od_starts))
        fail_msg("on-demand starts: %u with hysteresis, %u without",
                 a.od_starts, b.od_starts);
    ph_unload(&without);
    ph_unload(&with);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(modules_load),
        cmocka_unit_test(on_demand_cheapest_per_work),
        cmocka_unit_test(greedy_takes_spot),
        cmocka_unit_test(greedy_waits_then_on_demand),
        cmocka_unit_test(greedy_slow_spot_yields),
        cmocka_unit_test(up_ahead_waits_behind_runs),
        cmocka_unit_test(up_hysteresis),
        cmocka_unit_test(up_safety_net),
        cmocka_unit_test(spot_only_never_on_demand),
        cmocka_unit_test(deterministic_bytes),
        cmocka_unit_test(degenerate_inputs),
        cmocka_unit_test(simulated_jobs_meet_deadlines),
        cmocka_unit_test(hysteresis_reduces_flapping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
