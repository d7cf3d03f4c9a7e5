#include "policy_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cfg_table.h"
#include "base/yaml_doc.h"

/* ---- loading ------------------------------------------------------------ */

/* Opens policy `name` from $EBB_BUILD_ROOT/policies by name (so the loader's
 * name check runs), configures it from `yaml` (a mapping, or NULL for the
 * defaults) and creates it. */
/* Opens and configures policy `name` into *pol (see ph_load). */
static void open_configured(struct ph_pol *pol, const char *name,
                            const char *yaml)
{
    const char *root = getenv("EBB_BUILD_ROOT");
    assert_non_null(root);
    char *dirs[1] = {(char *)root};
    struct ebb__plugin_path path = {.dirs = dirs, .n = 1};
    struct ebb_diag d = {{0}};
    int rc = ebb__plugin_open(EBB__PLUGIN_POLICY, name, &path, &pol->plugin, &d);
    if (rc != 0)
        fail_msg("open %s: %s", name, d.msg);
    pol->p = pol->plugin->policy;
    assert_string_equal(pol->p->name, name);

    struct ebb__ydoc *doc = NULL;
    const struct ebb__ynode *section = NULL;
    if (yaml != NULL) {
        rc = ebb__ydoc_load_buffer("ebb.yaml", yaml, strlen(yaml), &doc, &d);
        if (rc != 0)
            fail_msg("yaml: %s", d.msg);
        section = ebb__ydoc_root(doc);
    }
    rc = ebb__cfg_apply(pol->p->config_keys, pol->p->config_size, section,
                        name, &pol->cfg, &d);
    ebb__ydoc_free(doc);
    if (rc != 0)
        fail_msg("config %s: %s", name, d.msg);
}

struct ph_pol ph_load(const char *name, const char *yaml)
{
    struct ph_pol pol = {0};
    open_configured(&pol, name, yaml);
    int rc = pol.p->create(NULL, pol.cfg, &pol.self);
    assert_int_equal(rc, 0);
    assert_non_null(pol.self);
    return pol;
}

int ph_create_rc(const char *name, const char *yaml)
{
    struct ph_pol pol = {0};
    open_configured(&pol, name, yaml);
    int rc = pol.p->create(NULL, pol.cfg, &pol.self);
    if (rc == 0)
        pol.p->destroy(pol.self);
    ebb__cfg_free(pol.p->config_keys, pol.cfg);
    ebb__plugin_close(pol.plugin);
    return rc;
}

void ph_unload(struct ph_pol *pol)
{
    pol->p->destroy(pol->self);
    ebb__cfg_free(pol->p->config_keys, pol->cfg);
    ebb__plugin_close(pol->plugin);
}

/* ---- views -------------------------------------------------------------- */

struct ebb_offer ph_offer(enum ebb_market m, const char *type,
                              const char *zone, double usd_per_hour,
                              double speed, int available)
{
    struct ebb_offer o = {0};
    o.struct_size = sizeof(o);
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

/* The usual market: p3.2xlarge on spot at 0.918/h (`avail` instances)
 * and on demand at 3.06/h, both at speed 1. */

/* A 10 h job submitted at T0 with a deadline at T0 + 20 h and a 6 min
 * restart overhead, spot with on-demand fallback, not running. */
struct ebb_job_view ph_job10(void)
{
    struct ebb_job_view j = {0};
    j.struct_size = sizeof(j);
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

/* The offers as ebbd hands them to a policy that asks for forecasts
 * (EBB_POLICY_ASKS_FORECASTS): without them until fill_forecast. */
struct lazy_view {
    struct ebb_offer offers[16];
    const struct ebb_offer *full;
    size_t n;
};

static int lazy_fill(void *ctx, size_t k)
{
    struct lazy_view *l = ctx;
    if (k >= l->n)
        return EBB_EINVAL;
    l->offers[k].forecast = l->full[k].forecast;
    l->offers[k].n_forecast = l->full[k].n_forecast;
    l->offers[k].forecast_p50_low = l->full[k].forecast_p50_low;
    return 0;
}

/* A policy that asks for forecasts decides alike when it gets them only
 * by asking: it reads none it did not ask for. */
static void same_when_asked(const struct ph_pol *pol, const struct ebb_job_view *job,
                            const struct ebb_offer *offers, size_t n,
                            ebb_time_ms now, const struct ebb_decision *want,
                            uint64_t generation)
{
    if (!(pol->p->flags & EBB_POLICY_ASKS_FORECASTS) || n == 0 || offers == NULL)
        return;
    static struct lazy_view l;
    memcpy(l.offers, offers, n * sizeof(*offers));
    l.full = offers;
    l.n = n;
    for (size_t k = 0; k < n; k++) {
        l.offers[k].forecast = NULL;
        l.offers[k].n_forecast = 0;
        l.offers[k].forecast_p50_low = 0;
    }
    struct ebb_market_view m = {.struct_size = sizeof(m), .offers = l.offers,
                                .n_offers = n, .generation = generation,
                                .fill_forecast = lazy_fill, .fill_ctx = &l};
    struct ebb_decision got;
    memset(&got, 0xa5, sizeof(got));
    assert_int_equal(pol->p->decide(pol->self, job, &m, now, &got), 0);
    assert_memory_equal(&got, want, sizeof(got));
}

/* Decides and checks what every decision must satisfy. */
struct ebb_decision ph_decide_ok(const struct ph_pol *pol,
                                     const struct ebb_job_view *job,
                                     const struct ebb_offer *offers, size_t n,
                                     ebb_time_ms now)
{
    /* A fresh generation for each call: both decide() calls below see the
     * same offers, so the second may use what the first memoised and must
     * still give the same bytes; the next call's offers may differ. */
    static uint64_t generation;
    struct ebb_market_view m = {.struct_size = sizeof(m), .offers = offers,
                                .n_offers = n, .generation = ++generation};
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
    same_when_asked(pol, job, offers, n, now, &a, ++generation);
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

void ph_expect(const struct ebb_decision *d, enum ebb_decision_kind kind,
                   size_t offer)
{
    if (d->kind != kind || (kind == EBB_DECIDE_LAUNCH && d->offer != offer))
        fail_msg("got kind %d offer %zu (%s), want kind %d offer %zu",
                 (int)d->kind, d->offer, d->reason, (int)kind, offer);
}

/* ph_decide_ok(), then ph_expect(). */
struct ebb_decision ph_decide_is(const struct ph_pol *pol,
                                     const struct ebb_job_view *job,
                                     const struct ebb_offer *offers, size_t n,
                                     ebb_time_ms now,
                                     enum ebb_decision_kind kind, size_t offer)
{
    struct ebb_decision d = ph_decide_ok(pol, job, offers, n, now);
    ph_expect(&d, kind, offer);
    return d;
}

void ph_reason_has(const struct ebb_decision *d, const char *what)
{
    if (strstr(d->reason, what) == NULL)
        fail_msg("reason \"%s\" lacks \"%s\"", d->reason, what);}

/* Runs the job minute by minute. Spot is available when `spot_up(minute)`
 * is 1; a running spot instance is lost when it goes away. Progress counts
 * only after the restart overhead of each start. */
struct ph_sim_result ph_simulate(const struct ph_pol *pol,
                                  struct ebb_job_view job,
                                  int (*spot_up)(long minute))
{
    struct ebb_offer offers[] = {SPOT_OD(0)};
    struct ph_sim_result r = {0};
    double done = (double)job.work_done;
    for (long m = 0; m < 40 * 60; m++) {
        ebb_time_ms now = job.submitted_at + m * MIN;
        offers[0].available = spot_up(m);
        if (job.running_offer == 0 && !offers[0].available)
            job.running_offer = SIZE_MAX; /* preempted */
        job.work_done = (ebb_dur_ms)done;
        struct ebb_decision d = ph_decide_ok(pol, &job, offers, 2, now);
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

int ph_never(long minute)
{
    (void)minute;
    return 0;
}

/* Spot for the first 5 h, then gone. */
int ph_early(long minute)
{
    return minute < 5 * 60;
}

/* Spot up 40 minutes of every 90. */
int ph_flaky(long minute)
{
    return minute % 90 < 40;
}
