/* A harness for policy tests: loads a policy plugin from the build tree
 * through the real loader and its configuration table, builds job and
 * market views, and checks what every decision must satisfy. */
#ifndef EBB_POLICY_HARNESS_H
#define EBB_POLICY_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ebb/policy.h>

#include "plugin/plugin.h"

#define H EBB_MS_PER_HOUR
#define MIN EBB_MS_PER_MINUTE
#define USD(x) ((ebb_micros)((x) * 1e6 + 0.5))
#define T0 INT64_C(1700000000000)
#define SPOT(type, usd, speed, avail)                                       \
    ph_offer(EBB_MARKET_SPOT, type, "us-east-1a", usd, speed, avail)
#define OD(type, usd, speed) ph_offer(EBB_MARKET_ON_DEMAND, type, "", usd, speed, 1)
#define SPOT_OD(avail)                                                       \
    SPOT("p3.2xlarge", 0.918, 1.0, avail), OD("p3.2xlarge", 3.06, 1.0)
#define WAIT EBB_DECIDE_WAIT
#define LAUNCH EBB_DECIDE_LAUNCH
#define KEEP EBB_DECIDE_KEEP
#define STOP EBB_DECIDE_STOP

struct ph_pol {
    struct ebb__plugin *plugin;
    const struct ebb_policy *p;
    void *cfg;
    void *self;
};

/* Opens policy `name` from $EBB_BUILD_ROOT/policies by name (so the loader's
 * name check runs), configures it from `yaml` (a mapping, or NULL for the
 * defaults) and creates it. */
struct ph_pol ph_load(const char *name, const char *yaml);
void ph_unload(struct ph_pol *pol);

/* Opens and configures policy `name` as ph_load() does (the settings must
 * parse), then returns what its create() answers (0: created, and
 * destroyed again). */
int ph_create_rc(const char *name, const char *yaml);

/* An offer in us-east-1 of provider aws. */
struct ebb_offer ph_offer(enum ebb_market m, const char *type, const char *zone,
                          double usd_per_hour, double speed, int available);

/* A 10 h job submitted at T0 with a deadline at T0 + 20 h and a 6 min
 * restart overhead, spot with on-demand fallback, not running. */
struct ebb_job_view ph_job10(void);

/* Decides and checks what every decision must satisfy: rc 0, a non-empty
 * reason, a valid offer for LAUNCH, inputs untouched, the same bytes when
 * asked twice. */
struct ebb_decision ph_decide_ok(const struct ph_pol *pol,
                                 const struct ebb_job_view *job,
                                 const struct ebb_offer *offers, size_t n,
                                 ebb_time_ms now);

/* Fails unless the decision is `kind` (and, for LAUNCH, on `offer`). */
void ph_expect(const struct ebb_decision *d, enum ebb_decision_kind kind,
               size_t offer);

/* ph_decide_ok(), then ph_expect(). */
struct ebb_decision ph_decide_is(const struct ph_pol *pol,
                                 const struct ebb_job_view *job,
                                 const struct ebb_offer *offers, size_t n,
                                 ebb_time_ms now, enum ebb_decision_kind kind,
                                 size_t offer);

/* Fails unless the decision's reason contains `what`. */
void ph_reason_has(const struct ebb_decision *d, const char *what);

struct ph_sim_result {
    ebb_time_ms finished; /* 0 when not finished */
    unsigned od_starts, spot_starts;
};

/* Runs the job minute by minute for up to 40 hours on the SPOT_OD market:
 * spot is available when `spot_up(minute)` is 1, and a running spot
 * instance is lost when it goes away. Progress counts only after the
 * restart overhead of each start. */
struct ph_sim_result ph_simulate(const struct ph_pol *pol,
                                 struct ebb_job_view job,
                                 int (*spot_up)(long minute));

/* Spot-availability patterns for ph_simulate(): never; the first 5 hours
 * only; 40 minutes of every 90. */
int ph_never(long minute);
int ph_early(long minute);
int ph_flaky(long minute);

#endif
