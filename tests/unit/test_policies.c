/* The policy plugins on-demand, greedy and uniform-progress, loaded from the
 * build tree by the real plugin loader and configured from their own
 * tables, then driven with hand-built job and market views.
 *
 * Every decision goes through decide_ok(), which also checks what holds for
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

/* ---- the plugins as modules --------------------------------------------- */

static void modules_load(void **state)
{
    (void)state;
    const char *names[] = {"on-demand", "greedy", "uniform-progress"};
    for (size_t i = 0; i < 3; i++) {
        struct pol pol = load(names[i], NULL);
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
        struct ebb_job_view job = job10();
        struct ebb_market_view m = {0};
        struct ebb_decision out;
        assert_int_equal(pol.p->decide(pol.self, NULL, &m, T0, &out),
                         EBB_EINVAL);
        assert_int_equal(pol.p->decide(pol.self, &job, NULL, T0, &out),
                         EBB_EINVAL);
        assert_int_equal(pol.p->decide(pol.self, &job, &m, T0, NULL),
                         EBB_EINVAL);
        unload(&pol);
    }
    /* uniform-progress exposes its knobs with the paper's defaults. */
    struct pol up = load("uniform-progress", NULL);
    const char *want[] = {"hysteresis_overheads", "hysteresis_margin",
                          "safety_overheads", "safety_margin"};
    for (size_t i = 0; i < 4; i++) {
        int found = 0;
        for (const struct ebb_cfg_key *k = up.p->config_keys; k->key; k++)
            found |= strcmp(k->key, want[i]) == 0;
        if (!found)
            fail_msg("uniform-progress lacks config key %s", want[i]);
    }
    unload(&up);
    /* Negative settings are refused at create(). */
    struct pol g = load("greedy", NULL);
    void *bad = NULL;
    struct {
        ebb_dur_ms a, b;
    } neg = {-1, 0};
    assert_int_equal(g.p->create(NULL, &neg, &bad), EBB_ECONFIG);
    assert_null(bad);
    unload(&g);
}

/* ---- on-demand ---------------------------------------------------------- */

static void on_demand_cheapest_per_work(void **state)
{
    (void)state;
    struct pol pol = load("on-demand", NULL);
    struct ebb_job_view job = job10();
    /* 3.06/h at speed 1 vs 10.00/h at speed 4 (2.50 per unit of work). */
    struct ebb_offer offers[] = {
        SPOT_OD(1),
        OD("p3.8xlarge", 10.0, 4.0),
        OD("g5.xlarge", 1.2, 0.0), /* unusable: speed 0 */
    };
    struct ebb_decision d = decide_is(&pol, &job, offers, 4, T0, LAUNCH, 2);
    reason_has(&d, "on-demand p3.8xlarge");

    /* Running on on-demand: kept, even on the pricier one. */
    job.running_offer = 1;
    job.running_since = T0;
    decide_is(&pol, &job, offers, 4, T0 + H, KEEP, 0);

    /* Running on spot: moved to on-demand. */
    job.running_offer = 0;
    decide_is(&pol, &job, offers, 4, T0 + H, LAUNCH, 2);

    /* The cheapest per work cannot finish by the deadline: the next
     * cheapest that can wins. */
    job = job10();
    job.deadline = T0 + 8 * H;
    struct ebb_offer tight[] = {
        OD("slow", 1.0, 1.0),
        OD("fast", 3.0, 2.0),
        OD("faster", 9.0, 4.0),
    };
    decide_is(&pol, &job, tight, 3, T0, LAUNCH, 1);
    /* None can: the fastest, and the reason says the deadline is lost. */
    job.deadline = T0 + 2 * H;
    d = decide_is(&pol, &job, tight, 3, T0, LAUNCH, 2);
    reason_has(&d, "missed");

    /* A spot-only job is never given on-demand. */
    job = job10();
    job.market = EBB_JOB_SPOT;
    decide_is(&pol, &job, offers, 4, T0, LAUNCH, 0);
    offers[0].available = 0;
    decide_is(&pol, &job, offers, 4, T0, WAIT, 0);
    unload(&pol);
}

/* ---- greedy ------------------------------------------------------------- */

static void greedy_takes_spot(void **state)
{
    (void)state;
    struct pol pol = load("greedy", NULL);
    struct ebb_job_view job = job10();
    struct ebb_offer offers[] = {
        SPOT("p3.2xlarge", 0.5, 1.0, 0), /* cheapest but taken */
        SPOT("p3.2xlarge", 0.918, 1.0, 1),
        SPOT("p3.8xlarge", 3.2, 4.0, 1), /* 0.80 per work: cheapest */
        OD("p3.2xlarge", 3.06, 1.0),
    };
    struct ebb_decision d = decide_is(&pol, &job, offers, 4, T0, LAUNCH, 2);
    reason_has(&d, "spot p3.8xlarge us-east-1a at 3.200/h");
    reason_has(&d, "available");

    /* On spot, kept. */
    job.running_offer = 2;
    job.running_since = T0;
    decide_is(&pol, &job, offers, 4, T0 + H, KEEP, 0);
    unload(&pol);
}

static void greedy_waits_then_on_demand(void **state)
{
    (void)state;
    struct pol pol = load("greedy", NULL);
    struct ebb_job_view job = job10();
    struct ebb_offer offers[] = {SPOT_OD(0)};
    /* Slack = 20h - 10h - 6m = 9h54m; asks again when 10 min are left. */
    struct ebb_decision d = decide_is(&pol, &job, offers, 2, T0, WAIT, 0);
    assert_int_equal(d.until, T0 + 9 * H + 44 * MIN);
    reason_has(&d, "slack 9h54m");

    /* At that time: on-demand. */
    d = decide_is(&pol, &job, offers, 2, T0 + 9 * H + 44 * MIN + 1, LAUNCH, 1);
    reason_has(&d, "switching to on-demand");

    /* Slack gone: on-demand even though spot is back, because a spot start
     * with no slack would miss the deadline on the first preemption. */
    offers[0].available = 1;
    decide_is(&pol, &job, offers, 2, T0 + 9 * H + 50 * MIN, LAUNCH, 1);

    /* On spot when the slack runs out: kept, progress is being made. */
    job.running_offer = 0;
    job.running_since = T0 + 9 * H;
    decide_is(&pol, &job, offers, 2, T0 + 9 * H + 55 * MIN, KEEP, 0);

    /* On on-demand with spot back and little slack: stays. */
    job.running_offer = 1;
    decide_is(&pol, &job, offers, 2, T0 + 9 * H + 55 * MIN, KEEP, 0);
    /* ... unless the slack comfortably allows (here the deadline moved). */
    job.deadline = T0 + 40 * H;
    decide_is(&pol, &job, offers, 2, T0 + 9 * H + 55 * MIN, LAUNCH, 0);
    unload(&pol);
}

static void greedy_slow_spot_yields(void **state)
{
    (void)state;
    struct pol pol = load("greedy", NULL);
    struct ebb_job_view job = job10();
    struct ebb_offer offers[] = {
        SPOT("g4dn.xlarge", 0.2, 0.5, 1),
        OD("p3.2xlarge", 3.06, 1.0),
    };
    job.running_offer = 0;
    job.running_since = T0;
    job.work_done = 2 * H;
    /* 8 h left: 16 h on this spot, 8 h on on-demand; 9h57m to go. */
    ebb_time_ms now = T0 + 10 * H + 3 * MIN;
    struct ebb_decision d = decide_is(&pol, &job, offers, 2, now, KEEP, 0);
    assert_int_equal(d.until, now + 1 * H + 41 * MIN);
    d = decide_is(&pol, &job, offers, 2, now + 1 * H + 45 * MIN, LAUNCH, 1);
    reason_has(&d, "cannot finish");
    unload(&pol);
}

/* ---- uniform-progress --------------------------------------------------- */

static void up_ahead_waits_behind_runs(void **state)
{
    (void)state;
    struct pol pol = load("uniform-progress", NULL);
    struct ebb_job_view job = job10();
    struct ebb_offer offers[] = {SPOT_OD(0)};
    /* 10 h after submission the line is at 5 h; 6 h done: ahead. */
    job.work_done = 6 * H;
    ebb_time_ms now = T0 + 10 * H;
    struct ebb_decision d = decide_is(&pol, &job, offers, 2, now, WAIT, 0);
    /* The line reaches 6 h at T0 + 12 h. */
    assert_int_equal(d.until, T0 + 12 * H);
    reason_has(&d, "ahead");

    /* 4 h done: behind, no spot: on-demand. */
    job.work_done = 4 * H;
    d = decide_is(&pol, &job, offers, 2, now, LAUNCH, 1);
    reason_has(&d, "behind");

    /* Behind but spot is there: spot (exploitation). */
    offers[0].available = 1;
    decide_is(&pol, &job, offers, 2, now, LAUNCH, 0);

    /* On spot while behind: kept until preempted. */
    job.running_offer = 0;
    job.running_since = now;
    decide_is(&pol, &job, offers, 2, now + H, KEEP, 0);
    unload(&pol);
}

static void up_hysteresis(void **state)
{
    (void)state;
    struct pol pol = load("uniform-progress", NULL);
    struct ebb_job_view job = job10();
    struct ebb_offer offers[] = {SPOT_OD(1)};
    job.running_offer = 1;
    job.running_since = T0 + 8 * H;
    ebb_time_ms now = T0 + 10 * H; /* line at 5h; slope 1/2 */
    /* Just ahead of the line now, but not of where it will be in 2d = 12m
     * (5h06m): on-demand is kept although spot is available. */
    job.work_done = 5 * H + 3 * MIN;
    struct ebb_decision d = decide_is(&pol, &job, offers, 2, now, KEEP, 0);
    reason_has(&d, "hysteresis");
    /* On-demand gains 1/2 per minute on the line: ahead by the margin in
     * 6 min. */
    assert_int_equal(d.until, now + 6 * MIN);

    /* Ahead of the line 12 min out: spot. */
    job.work_done = 5 * H + 7 * MIN;
    decide_is(&pol, &job, offers, 2, now, LAUNCH, 0);
    /* ... or, with no spot, release on-demand. */
    offers[0].available = 0;
    decide_is(&pol, &job, offers, 2, now, STOP, 0);

    /* Idle just ahead of the line: waits; just behind: on-demand. */
    job.running_offer = SIZE_MAX;
    job.work_done = 5 * H + 1;
    decide_is(&pol, &job, offers, 2, now, WAIT, 0);
    job.work_done = 5 * H - 1;
    decide_is(&pol, &job, offers, 2, now, LAUNCH, 1);
    unload(&pol);
}

static void up_safety_net(void **state)
{
    (void)state;
    struct pol pol = load("uniform-progress", NULL);
    struct ebb_job_view job = job10();
    struct ebb_offer offers[] = {SPOT_OD(1)};
    /* Behind the line with spot available (which rule 2 would take), but
     * 10h + 6m + 5m to go with 10 h of work: slack 5m < d = 6m: the safety
     * net goes on-demand regardless. */
    job.work_done = 0;
    job.submitted_at = T0 - 100 * H;
    job.deadline = T0 + 10 * H + 11 * MIN;
    job.work_total = 10 * H;
    struct ebb_decision d = decide_is(&pol, &job, offers, 2, T0, LAUNCH, 1);
    reason_has(&d, "safety net");

    /* With 7 min of slack it would take spot. */
    decide_is(&pol, &job, offers, 2, T0 - 2 * MIN, LAUNCH, 0);
    unload(&pol);

    /* On on-demand and far ahead of the line, but leaving would trip a
     * 1 h safety margin: stays until done. */
    pol = load("uniform-progress", "safety_margin: 1h\n");
    job = job10();
    job.running_offer = 1;
    job.running_since = T0;
    job.work_done = 9 * H + 45 * MIN; /* line at 19h12m: 9h36m */
    d = decide_is(&pol, &job, offers, 2, T0 + 19 * H, KEEP, 0);
    reason_has(&d, "safety net");
    unload(&pol);
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
        struct pol pol = load(names[i], NULL);
        struct ebb_job_view job = job10();
        job.market = EBB_JOB_SPOT;
        /* Behind, out of slack, deadline passed: still no on-demand. */
        ebb_time_ms times[] = {T0, T0 + 15 * H, T0 + 25 * H};
        for (size_t t = 0; t < 3; t++)
            decide_is(&pol, &job, offers, 3, times[t], WAIT, 0);
        offers[1].available = 1;
        decide_is(&pol, &job, offers, 3, T0 + 15 * H, LAUNCH, 1);
        offers[1].available = 0;
        /* Found on on-demand somehow: released. */
        job.running_offer = 0;
        job.running_since = T0;
        decide_is(&pol, &job, offers, 3, T0 + 15 * H, STOP, 0);

        /* On-demand-only jobs never get spot. */
        job = job10();
        job.market = EBB_JOB_ON_DEMAND;
        offers[1].available = 1;
        decide_is(&pol, &job, offers, 3, T0, LAUNCH, 2);
        offers[1].available = 0;
        unload(&pol);
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
        struct pol a = load(names[i], NULL);
        struct pol b = load(names[i], NULL);
        struct ebb_job_view job = job10();
        job.work_done = 3 * H + 17;
        for (ebb_time_ms t = T0; t < T0 + 22 * H; t += 37 * MIN) {
            struct ebb_decision x = decide_ok(&a, &job, offers, 2, t);
            struct ebb_decision y = decide_ok(&b, &job, offers, 2, t);
            assert_memory_equal(&x, &y, sizeof(x));
        }
        unload(&b);
        unload(&a);
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
        offer(EBB_MARKET_SPOT, NULL, NULL, 0.5, NAN, 1),
        offer(EBB_MARKET_ON_DEMAND, NULL, NULL, -1.0, 1.0, 1),
        offer(EBB_MARKET_ON_DEMAND, NULL, NULL, 1.0, -2.0, 1),
    };
    for (size_t i = 0; i < 3; i++) {
        struct pol pol = load(names[i], NULL);
        struct ebb_job_view job = job10();
        struct ebb_decision d;

        /* No offers at all, or a NULL table. */
        d = decide_is(&pol, &job, NULL, 0, T0, WAIT, 0);
        {
            struct ebb_market_view m = {.offers = NULL, .n_offers = 3};
            assert_int_equal(pol.p->decide(pol.self, &job, &m, T0, &d), 0);
            expect(&d, EBB_DECIDE_WAIT, 0);
            assert_true(d.reason[0] != '\0');
        }
        /* Only unusable offers (NaN / negative speed, negative price). */
        decide_is(&pol, &job, broken, 3, T0, WAIT, 0);

        /* Deadline passed: the fastest on-demand, the safest way out. */
        decide_is(&pol, &job, offers, 3, T0 + 30 * H, LAUNCH, 2);
        /* ... and an instance already running there is kept. */
        job.running_offer = 2;
        job.running_since = T0 + 29 * H;
        decide_is(&pol, &job, offers, 3, T0 + 30 * H, KEEP, 0);

        /* Work done: nothing to launch; a running job is let exit. */
        job = job10();
        job.work_done = job.work_total;
        decide_is(&pol, &job, offers, 3, T0, WAIT, 0);
        job.running_offer = 0;
        decide_is(&pol, &job, offers, 3, T0, KEEP, 0);
        job.work_total = 0;
        job.work_done = 0;
        decide_is(&pol, &job, offers, 3, T0, KEEP, 0);

        /* A running index outside the view counts as not running. */
        job = job10();
        job.running_offer = 7;
        d = decide_ok(&pol, &job, offers, 3, T0);
        assert_true(d.kind == EBB_DECIDE_LAUNCH || d.kind == EBB_DECIDE_WAIT);

        /* Submitted at the deadline, negative times, no deadline, extreme
         * values: a decision, no crash, no UB. */
        job = job10();
        job.submitted_at = job.deadline;
        decide_ok(&pol, &job, offers, 3, T0);
        job.submitted_at = T0 + 30 * H;
        decide_ok(&pol, &job, offers, 3, T0);
        job = job10();
        job.deadline = 0;
        d = decide_ok(&pol, &job, offers, 3, T0);
        if (i > 0)
            expect(&d, EBB_DECIDE_LAUNCH, 0);
        offers[0].available = 0;
        d = decide_ok(&pol, &job, offers, 3, T0);
        if (i > 0)
            expect(&d, EBB_DECIDE_WAIT, 0);
        offers[0].available = 1;
        job = job10();
        job.work_total = INT64_MAX;
        job.deadline = INT64_MAX;
        job.restart_overhead = -5;
        decide_ok(&pol, &job, offers, 3, INT64_MAX - 1);
        decide_ok(&pol, &job, offers, 3, INT64_MIN);
        job.work_done = INT64_MIN;
        decide_ok(&pol, &job, offers, 3, 0);

        /* Budget spent: nothing new starts, a running instance stops. */
        job = job10();
        job.budget = USD(40);
        job.spent = USD(40);
        d = decide_is(&pol, &job, offers, 3, T0, WAIT, 0);
        reason_has(&d, "budget");
        job.running_offer = 1;
        decide_is(&pol, &job, offers, 3, T0, STOP, 0);
        /* Budget too small to finish: still decides, and says so. */
        job = job10();
        job.market = EBB_JOB_ON_DEMAND;
        job.budget = USD(5);
        job.spent = USD(1);
        d = decide_ok(&pol, &job, offers, 3, T0);
        expect(&d, EBB_DECIDE_LAUNCH, 2); /* tie per work: the faster */
        reason_has(&d, "budget left 4.00");
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
    const char *names[] = {"on-demand", "greedy", "uniform-progress"};
    int (*traces[])(long) = {never, early, flaky};
    for (size_t i = 0; i < 3; i++) {
        struct pol pol = load(names[i], NULL);
        for (size_t t = 0; t < 3; t++) {
            struct ebb_job_view job = job10();
            struct sim_result r = simulate(&pol, job, traces[t]);
            if (r.finished == 0 || r.finished > job.deadline)
                fail_msg("%s on trace %zu: finished %lld, deadline %lld",
                         names[i], t, (long long)(r.finished - T0),
                         (long long)(job.deadline - T0));
            if (i == 0)
                assert_int_equal(r.spot_starts, 0);
            else if (traces[t] != never)
                assert_true(r.spot_starts > 0);
        }
        unload(&pol);
    }
}

static void hysteresis_reduces_flapping(void **state)
{
    (void)state;
    struct pol with = load("uniform-progress", NULL);
    struct pol without = load("uniform-progress",
                              "hysteresis_overheads: 0\n"
                              "hysteresis_margin: 0s\n");
    struct ebb_job_view job = job10();
    struct sim_result a = simulate(&with, job, never);
    struct sim_result b = simulate(&without, job, never);
    assert_true(a.finished != 0 && a.finished <= job.deadline);
    assert_true(b.finished != 0 && b.finished <= job.deadline);
    /* Without hysteresis it restarts on-demand about every catch-up; with
     * it, markedly less often. */
    if (!(a.od_starts * 2 <= b.od_starts))
        fail_msg("on-demand starts: %u with hysteresis, %u without",
                 a.od_starts, b.od_starts);
    unload(&without);
    unload(&with);
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
