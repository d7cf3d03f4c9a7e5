#include "report/backtest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/trace.h>
#include <ebb/units.h>

#include "base/log.h"
#include "base/str.h"
#include "engine/engine.h"
#include "engine/vengine.h"
#include "jobs/jobspec.h"
#include "market/catalog.h"
#include "report/backtest_input.h"
#include "report/backtest_yardsticks.h"
#include "report/report.h"

/* How long after the last deadline the clock keeps running, so late jobs
 * can still finish and be reported as late rather than unfinished. */
#define GRACE_AFTER_DEADLINES (7 * EBB_MS_PER_DAY)

struct backtest {
    const struct ebb__backtest_options *opt;
    struct ebb__catalog *catalog;
    struct ebb__workload *workload;
    struct ebb__vengine v;      /* the engine, its plugins and clock */
    struct ebb__timer *submits;
    struct ebb__job **jobs;     /* by workload index */
    struct ebb_diag *d;
    int failed;
    ebb_time_ms start, end;
    struct ebb__timer progress;
    struct ebb_avail_alignment align; /* shifted 0: availability as recorded */
};

/* ---- set-up ------------------------------------------------------------ */

/* Quotes a path for a YAML double-quoted scalar. */
static void yaml_quote(struct ebb_buf *b, const char *s)
{
    ebb_buf_puts(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            ebb_buf_puts(b, "\\");
        ebb_buf_append(b, s, 1);
    }
    ebb_buf_puts(b, "\"");
}

/* The backtest's ebb.yaml: the sim market over the given traces. Built as
 * text and read by the ordinary loader so the sim is configured exactly as
 * a user's ebb.yaml would configure it. NULL when out of memory. */
static char *config_text(const struct backtest *bt)
{
    const struct ebb__backtest_options *o = bt->opt;
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, "providers:\n  sim:\n    prices: ");
    yaml_quote(&b, o->prices);
    if (o->availability != NULL) {
        ebb_buf_puts(&b, "\n    availability: ");
        yaml_quote(&b, o->availability);
        if (o->align_availability)
            ebb_buf_puts(&b, "\n    align_availability: true");
    }
    ebb_buf_printf(&b, "\n    seed: %lld\n    preemption_hazard: %.17g\n",
                    o->seed, o->preemption_hazard);
    if (o->billing != NULL) {
        ebb_buf_puts(&b, "    billing: ");
        yaml_quote(&b, o->billing);
        ebb_buf_puts(&b, "\n");
    }
    if (o->policies != NULL)
        ebb_buf_printf(&b, "policies: %s\n", o->policies);
    return ebb_buf_take(&b);
}

/* --policy names an installed policy; the message lists them. */
static int check_policy(struct backtest *bt)
{
    const char *want = bt->opt->policy;
    struct ebb__registry *r = &bt->v.registry;
    if (want == NULL || ebb__registry_policy(r, want) != NULL)
        return 0;
    struct ebb_buf names = {0};
    for (size_t i = 0; i < r->n_policies; i++)
        ebb_buf_printf(&names, "%s%s", i ? ", " : "", r->policies[i].plugin->name);
    ebb_diag_set(bt->d, NULL, 0, "%s: no policy named \"%s\" is installed "
                 "(installed: %s)", bt->opt->policy_what ? bt->opt->policy_what : "--policy",
                 want, names.data ? names.data : "none");
    ebb_buf_free(&names);
    return EBB_EINVAL;
}

/* ---- running ----------------------------------------------------------- */

static void on_submit(struct ebb__timer *t)
{
    struct backtest *bt = t->data;
    size_t i = (size_t)(t - bt->submits);
    struct ebb__job_spec spec = bt->workload->jobs[i];
    /* The engine takes ownership of the spec; the workload keeps a zeroed
     * copy so it is not freed twice. */
    bt->workload->jobs[i] = (struct ebb__job_spec){0};
    if (bt->opt->policy != NULL) {
        free(spec.policy);
        spec.policy = strdup(bt->opt->policy);
    }
    struct ebb_diag d = {{0}};
    int rc = ebb__engine_submit(bt->v.engine, &spec, "", 0, NULL, &bt->jobs[i], &d);
    if (rc != 0) {
        ebb__jobspec_free(&spec);
        if (!bt->failed)
            *bt->d = d;
        bt->failed = rc;
    }
}

static void on_progress(struct ebb__timer *t)
{
    struct backtest *bt = t->data;
    ebb_time_ms now = ebb__clock_now(&bt->v.clock);
    char when[40];
    ebb_format_time(now, when, sizeof(when));
    struct ebb__engine_stats st;
    ebb__engine_stats(bt->v.engine, &st);
    size_t done = st.jobs - st.active;
    double pct = bt->end > bt->start ? 100.0 * (double)(now - bt->start) /
                                           (double)(bt->end - bt->start)
                                     : 100.0;
    fprintf(bt->opt->progress, "\rbacktest: %.10s %5.1f%%  %zu/%zu jobs ended ",
            when, pct, done, bt->workload->n);
    fflush(bt->opt->progress);
    ebb__timer_start(&bt->v.clock, t, now + 6 * EBB_MS_PER_HOUR);
}

static int all_ended(const struct backtest *bt)
{
    struct ebb__engine_stats st;
    ebb__engine_stats(bt->v.engine, &st);
    return st.jobs == bt->workload->n && st.active == 0;
}

static void run(struct backtest *bt)
{
    for (size_t i = 0; i < bt->workload->n; i++) {
        ebb__timer_init(&bt->submits[i], on_submit, bt);
        ebb__timer_start(&bt->v.clock, &bt->submits[i], bt->workload->jobs[i].submit);
    }
    if (bt->opt->progress != NULL) {
        ebb__timer_init(&bt->progress, on_progress, bt);
        ebb__timer_start(&bt->v.clock, &bt->progress, bt->start);
    }
    /* Run day by day so the loop can stop as soon as every job has ended
     * instead of replaying the rest of the traces. */
    for (ebb_time_ms t = bt->start; t < bt->end && !bt->failed;) {
        t += EBB_MS_PER_DAY;
        ebb__clock_run_until(&bt->v.clock, t < bt->end ? t : bt->end);
        if (all_ended(bt))
            break;
        if (ebb__clock_next_due(&bt->v.clock) == INT64_MAX && !bt->opt->progress)
            break;
    }
    if (bt->opt->progress != NULL) {
        ebb__timer_stop(&bt->v.clock, &bt->progress);
        fprintf(bt->opt->progress, "\n");
    }
}

/* ---- results ----------------------------------------------------------- */

static double usd(ebb_micros m)
{
    return (double)m / (double)EBB_MICROS_PER_UNIT;
}

static json_t *time_json(ebb_time_ms t)
{
    char buf[40];
    if (t <= 0)
        return json_null();
    return json_string(ebb_format_time(t, buf, sizeof(buf)));
}

/* A saving as a percentage of `reference`, rounded to hundredths (JSON
 * carries the rounded value); null without a reference. */
static json_t *pct_json(ebb_micros reference, ebb_micros cost)
{
    if (reference <= 0)
        return json_null();
    double p = 100.0 * (double)(reference - cost) / (double)reference;
    return json_real(round(p * 100.0) / 100.0);
}

/* The sums of a backtest: cost (billed plus what still-running instances
 * accrued) and on-demand reference of every job, and of the finished jobs
 * that have a reference, which alone carry a saving. */
struct totals {
    ebb_micros cost, on_demand, oracle;
    ebb_micros done_cost, done_on_demand;
    int oracle_complete;
};

/* The instance time job `id` lost (report.h, lost_ms: restarts after its
 * first start and work redone from an earlier checkpoint), from the
 * backtest's own ledger grouped by job; 0 when it has none. */
static ebb_dur_ms lost_ms(const struct ebb__report *by_job, const char *id)
{
    for (size_t i = 0; by_job != NULL && i < by_job->n_groups; i++)
        if (strcmp(by_job->groups[i].key, id) == 0)
            return by_job->groups[i].f.lost_ms;
    return 0;
}

static json_t *job_result(struct backtest *bt, const struct ebb__job *job,
                          const struct ebb__report *by_job, struct totals *t)
{
    ebb_micros od = ebb__backtest_on_demand_cost(bt->v.engine, job);
    ebb_micros oracle = 0;
    int orc = bt->opt->no_oracle ? EBB_ENOTFOUND
                                 : ebb__backtest_oracle_cost(bt->v.engine, job, bt->end,
                                                             &oracle);
    struct ebb__job_info ji;
    ebb__engine_job_info(job, &ji);
    /* A job still on an instance when the backtest ends has been billed
     * only for the instances it left: its cost is what it spent so far,
     * accrued time included, and it has no saving until it ends. */
    struct ebb__budget_usage use;
    ebb_micros cost = ebb__engine_job_budget(job, ebb__clock_now(&bt->v.clock),
                                             &use) == 0 ? use.spent : ji.spent;
    int finished = ji.state == EBB__JOB_SUCCEEDED;
    int met = finished && (ji.deadline <= 0 || ji.finished_at <= ji.deadline);
    t->cost += cost;
    t->on_demand += od > 0 ? od : 0;
    if (finished && od > 0) {
        t->done_cost += cost;
        t->done_on_demand += od;
    }
    if (orc == 0)
        t->oracle += oracle;
    else
        t->oracle_complete = 0;
    return json_pack("{s:s,s:s,s:s,s:s,s:f,s:o,s:o,s:o,s:o,s:b,s:o,s:o,s:o,s:i,s:i,s:f,s:f}",
        "name", ji.spec->name,
        "id", ji.id,
        "policy", ji.policy,
        "state", ebb__job_state_name(ji.state),
        "cost_usd", usd(cost),
        "budget_usd", ji.budget >= 0 ? json_real(usd(ji.budget)) : json_null(),
        "on_demand_cost_usd", od >= 0 ? json_real(usd(od)) : json_null(),
        "savings_pct", finished ? pct_json(od, cost) : json_null(),
        "oracle_cost_usd", orc == 0 ? json_real(usd(oracle)) : json_null(),
        "deadline_met", met,
        "submitted_at", time_json(ji.submitted_at),
        "deadline", time_json(ji.deadline),
        "finished_at", finished ? time_json(ji.finished_at) : json_null(),
        "preemptions", (int)ji.preemptions,
        "restarts", (int)ji.restarts,
        "work_done_hours", (double)ji.work_saved / EBB_MS_PER_HOUR,
        "lost_hours", (double)lost_ms(by_job, ji.id) / EBB_MS_PER_HOUR);
}

static uint64_t decisions(const struct backtest *bt)
{
    struct ebb__engine_stats st;
    ebb__engine_stats(bt->v.engine, &st);
    return st.decisions;
}

static json_t *results(struct backtest *bt)
{
    json_t *jobs = json_array();
    struct totals t = {.oracle_complete = 1};
    /* Lost time is the report's figure, read from the same ledger. */
    struct ebb__report_opts ro = {
        .since = bt->start, .until = ebb__clock_now(&bt->v.clock) + 1,
        .by = EBB__REPORT_BY_JOB, .catalog = bt->catalog,
    };
    struct ebb__report *by_job = NULL;
    struct ebb_diag rd = {{0}};
    if (ebb__report_build(bt->v.store, &ro, &by_job, &rd) != 0)
        ebb__warn("backtest: lost time not known: %s", rd.msg);
    for (size_t i = 0; i < bt->workload->n; i++)
        if (bt->jobs[i] != NULL)
            json_array_append_new(jobs, job_result(bt, bt->jobs[i], by_job, &t));
    ebb__report_free(by_job);
    /* The policy every job ran with, or "mixed" when the workload's jobs
     * chose different ones. */
    const char *policy = NULL;
    for (size_t i = 0; i < bt->workload->n; i++) {
        if (bt->jobs[i] == NULL)
            continue;
        struct ebb__job_info ji;
        ebb__engine_job_info(bt->jobs[i], &ji);
        if (policy == NULL)
            policy = ji.policy;
        else if (strcmp(policy, ji.policy) != 0)
            policy = "mixed";
    }
    json_t *r = json_pack("{s:s,s:o,s:f,s:f,s:o,s:o,s:I,s:I}",
        "policy", policy ? policy
                  : bt->opt->policy ? bt->opt->policy : bt->v.config->default_policy,
        "jobs", jobs,
        "total_cost_usd", usd(t.cost),
        "total_on_demand_cost_usd", usd(t.on_demand),
        "savings_pct", pct_json(t.done_on_demand, t.done_cost),
        "total_oracle_cost_usd", t.oracle_complete ? json_real(usd(t.oracle))
                                                   : json_null(),
        "seed", (json_int_t)bt->opt->seed,
        "decisions", (json_int_t)decisions(bt));
    const struct ebb_avail_alignment *al = &bt->align;
    if (r != NULL && al->shifted)
        json_object_set_new(r, "availability_alignment", json_pack(
            "{s:I,s:I,s:I,s:I}", "start", (json_int_t)al->start,
            "orig_first", (json_int_t)al->orig_first,
            "period_ms", (json_int_t)al->period, "end", (json_int_t)al->end));
    return r;
}

/* ---- driver ------------------------------------------------------------ */

/* Says on opt->notes how the availability is replayed, when it is moved. */
static void note_alignment(const struct backtest *bt)
{
    const struct ebb_avail_alignment *al = &bt->align;
    if (!al->shifted || bt->opt->notes == NULL)
        return;
    char from[EBB_TIME_BUFSZ], orig[EBB_TIME_BUFSZ], until[EBB_TIME_BUFSZ],
        period[EBB_DURATION_BUFSZ];
    fprintf(bt->opt->notes, "ebb backtest: --align-availability: %s (from %s) is "
            "replayed from %s, repeated every %s until %s\n", bt->opt->availability,
            ebb_format_time(al->orig_first, orig, sizeof(orig)),
            ebb_format_time(al->start, from, sizeof(from)),
            ebb_format_duration(al->period, period, sizeof(period)),
            ebb_format_time(al->end, until, sizeof(until)));
}

static void span(struct backtest *bt)
{
    bt->start = INT64_MAX;
    bt->end = INT64_MIN;
    for (size_t i = 0; i < bt->workload->n; i++) {
        const struct ebb__job_spec *s = &bt->workload->jobs[i];
        ebb_time_ms dl = ebb__jobspec_deadline(s, s->submit);
        ebb_time_ms last = dl > 0 ? dl : s->submit + 30 * EBB_MS_PER_DAY;
        if (s->submit < bt->start)
            bt->start = s->submit;
        if (last > bt->end)
            bt->end = last;
    }
    bt->end += GRACE_AFTER_DEADLINES;
}

/* The workload of one job, opt->job submitted at opt->job_submit: a copy
 * made through the spec's JSON, the one copy of a spec ebb has. */
static int one_job(struct backtest *bt)
{
    bt->workload = calloc(1, sizeof(*bt->workload));
    if (bt->workload == NULL)
        return EBB_ENOMEM;
    bt->workload->jobs = calloc(1, sizeof(*bt->workload->jobs));
    bt->workload->file = strdup(bt->opt->job->file ? bt->opt->job->file : "(job)");
    json_t *j = ebb__jobspec_to_json(bt->opt->job);
    int rc = bt->workload->jobs && bt->workload->file && j ? 0 : EBB_ENOMEM;
    if (rc == 0)
        rc = ebb__jobspec_from_json(j, &bt->workload->jobs[0], bt->d);
    json_decref(j);
    if (rc == 0) {
        bt->workload->n = 1;
        bt->workload->jobs[0].has_submit = 1;
        bt->workload->jobs[0].submit = bt->opt->job_submit;
    }
    return rc;
}

static int learned_speeds(struct backtest *bt)
{
    for (size_t i = 0; i < bt->opt->n_speeds; i++) {
        const struct ebb__backtest_speed *s = &bt->opt->speeds[i];
        int rc = ebb__engine_speed_learned(bt->v.engine, &s->key, s->samples, s->rates);
        if (rc == EBB_EINVAL)
            ebb_diag_set(bt->d, NULL, 0, "the learned speed of %s on %s %s is not a list "
                         "of rates: \"%.40s\"", s->key.family, s->key.provider,
                         s->key.host, s->rates);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int setup(struct backtest *bt)
{
    int rc = ebb__catalog_load(bt->opt->catalog, &bt->catalog, bt->d);
    if (rc == 0 && bt->opt->job != NULL)
        rc = one_job(bt);
    else if (rc == 0)
        rc = ebb__workload_load_file(bt->opt->workload, &bt->workload, bt->d);
    if (rc == 0 && bt->workload->n == 0) {
        ebb_diag_set(bt->d, bt->opt->workload, 0, "the workload has no jobs");
        rc = EBB_EINVAL;
    }
    if (rc == 0)
        rc = ebb__backtest_check_input(bt->opt, bt->workload, bt->catalog,
                                       &bt->align, bt->d);
    if (rc != 0)
        return rc;
    note_alignment(bt);
    span(bt);
    char *text = config_text(bt);
    rc = text != NULL ? ebb__vengine_open(&bt->v, "(backtest)", text,
                                          bt->catalog, bt->start, bt->d)
                      : EBB_ENOMEM;
    free(text);
    if (rc == 0)
        ebb__engine_set_outlook_refresh(bt->v.engine, bt->opt->outlook_refresh);
    if (rc == 0)
        rc = learned_speeds(bt);
    if (rc == 0)
        rc = check_policy(bt);
    bt->submits = calloc(bt->workload->n, sizeof(*bt->submits));
    bt->jobs = calloc(bt->workload->n, sizeof(*bt->jobs));
    if (rc == 0 && (bt->submits == NULL || bt->jobs == NULL))
        rc = EBB_ENOMEM;
    return rc;
}

static void teardown(struct backtest *bt)
{
    ebb__vengine_close(&bt->v);
    ebb__workload_free(bt->workload);
    ebb__catalog_free(bt->catalog);
    free(bt->submits);
    free(bt->jobs);
}

int ebb__backtest_run(const struct ebb__backtest_options *o, json_t **result,
                      struct ebb_diag *d)
{
    *result = NULL;
    struct backtest bt = {.opt = o, .d = d};
    int rc = setup(&bt);
    if (rc == 0) {
        run(&bt);
        rc = bt.failed;
    }
    if (rc == 0) {
        *result = results(&bt);
        if (*result == NULL)
            rc = EBB_ENOMEM;
    }
    teardown(&bt);
    return rc;
}
