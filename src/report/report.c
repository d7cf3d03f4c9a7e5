/* Building a savings report: one pass over the ledger rows of the window
 * (each converted, priced against its references and added to its group),
 * one over the job events (preemptions, time spent checkpointing), and,
 * for the chart, the instances' runs and the price series they used.
 * docs/report.md defines the figures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/str.h"
#include "report/report.h"
#include "report/report_impl.h"
#include "store/store_ledger.h"

static const char *const by_names[] = {
    [EBB__REPORT_BY_NONE] = "none",
    [EBB__REPORT_BY_JOB] = "job",
    [EBB__REPORT_BY_TEAM] = "team",
    [EBB__REPORT_BY_PROVIDER] = "provider",
    [EBB__REPORT_BY_INSTANCE_TYPE] = "instance-type",
    [EBB__REPORT_BY_DAY] = "day",
};

int ebb__report_by_parse(const char *s, enum ebb__report_by *out)
{
    if (s == NULL || s[0] == '\0') {
        *out = EBB__REPORT_BY_NONE;
        return 0;
    }
    for (size_t i = 0; i < sizeof(by_names) / sizeof(by_names[0]); i++) {
        if (strcmp(s, by_names[i]) == 0) {
            *out = (enum ebb__report_by)i;
            return 0;
        }
    }
    return EBB_EINVAL;
}

const char *ebb__report_by_name(enum ebb__report_by by)
{
    return (size_t)by < sizeof(by_names) / sizeof(by_names[0]) ? by_names[by]
                                                               : "none";
}

int ebb__report_parse_when(const char *s, ebb_time_ms now, int ago,
                           ebb_time_ms *out, const char **why)
{
    ebb_dur_ms d;
    if (ago && ebb_parse_duration(s, &d) == 0 && d >= 0) {
        *out = now - d;
        return 0;
    }
    if (ebb_parse_time(s, out) == 0)
        return 0;
    *why = ago ? "not a duration back from now (e.g. 30d, 12h) nor a date "
                 "(e.g. 2026-11-01) or ISO-8601 time (e.g. "
                 "2026-11-01T12:00:00Z)"
               : "not a date (e.g. 2026-11-01) nor an ISO-8601 time (e.g. "
                 "2026-11-01T12:00:00Z)";
    return EBB_EINVAL;
}

ebb_micros ebb__report_saved(ebb_micros reference, ebb_micros basis)
{
    return reference - basis;
}

double ebb__report_saved_pct(ebb_micros reference, ebb_micros basis)
{
    if (reference == 0)
        return NAN;
    return 100.0 * (double)(reference - basis) / (double)reference;
}

/* ---- groups ------------------------------------------------------------ */

static int group_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct ebb__report_group *)elem)->key);
}

/* The figures of the group named `key`, added in key order when new. */
static struct ebb__report_figures *group_of(struct ebb__report *r,
                                            const char *key, size_t *cap)
{
    size_t lo = 0, hi = r->n_groups;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = group_cmp(key, &r->groups[mid]);
        if (c == 0)
            return &r->groups[mid].f;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (r->n_groups == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        void *g = realloc(r->groups, ncap * sizeof(*r->groups));
        if (g == NULL)
            return NULL;
        r->groups = g;
        *cap = ncap;
    }
    char *copy = strdup(key);
    if (copy == NULL)
        return NULL;
    memmove(&r->groups[lo + 1], &r->groups[lo],
            (r->n_groups - lo) * sizeof(*r->groups));
    r->groups[lo] = (struct ebb__report_group){.key = copy};
    r->n_groups++;
    return &r->groups[lo].f;
}

/* The group a fact belongs to under r->by. */
static const char *key_of(const struct ebb__report *r, const struct fact *f,
                          char *buf, size_t len)
{
    switch (r->by) {
    case EBB__REPORT_BY_JOB:
        return f->job_id[0] ? f->job_id : "(no job)";
    case EBB__REPORT_BY_TEAM:
        return f->team[0] ? f->team : "(no team)";
    case EBB__REPORT_BY_PROVIDER:
        return f->provider[0] ? f->provider : "(none)";
    case EBB__REPORT_BY_INSTANCE_TYPE:
        return f->instance_type[0] ? f->instance_type : "(none)";
    case EBB__REPORT_BY_DAY: {
        int64_t y;
        int m, d;
        int64_t day = f->at / EBB_MS_PER_DAY - (f->at % EBB_MS_PER_DAY < 0);
        ebb_civil_from_days(day, &y, &m, &d);
        snprintf(buf, len, "%04lld-%02d-%02d", (long long)y, m, d);
        return buf;
    }
    case EBB__REPORT_BY_NONE:
        break;
    }
    return NULL;
}

/* Adds `add` to the total and to the fact's group. */
static int account(struct report_build *b, const struct fact *f,
                   const struct ebb__report_figures *add)
{
    struct ebb__report_figures *dst[2] = {&b->r->total, NULL};
    char day[16];
    const char *key = key_of(b->r, f, day, sizeof(day));
    if (key != NULL) {
        dst[1] = group_of(b->r, key, &b->cap_groups);
        if (dst[1] == NULL)
            return EBB_ENOMEM;
    }
    for (size_t i = 0; i < 2 && dst[i] != NULL; i++) {
        struct ebb__report_figures *t = dst[i];
        t->rows += add->rows;
        t->spend += add->spend;
        t->compute += add->compute;
        t->overhead += add->overhead;
        t->fees += add->fees;
        t->fee_storage += add->fee_storage;
        t->fee_egress += add->fee_egress;
        t->on_demand += add->on_demand;
        t->on_demand_basis += add->on_demand_basis;
        t->spot_at_once += add->spot_at_once;
        t->spot_at_once_basis += add->spot_at_once_basis;
        t->instance_ms += add->instance_ms;
        t->restart_ms += add->restart_ms;
        t->lost_ms += add->lost_ms;
        t->checkpoint_ms += add->checkpoint_ms;
        t->preemptions += add->preemptions;
    }
    return 0;
}

/* ---- ledger rows ------------------------------------------------------- */

static int add_native(struct report_build *b, const char *cur, ebb_micros v)
{
    struct ebb__report *r = b->r;
    size_t i = 0;
    while (i < r->n_natives && strcmp(r->natives[i].currency, cur) < 0)
        i++;
    if (i == r->n_natives || strcmp(r->natives[i].currency, cur) != 0) {
        void *n = realloc(r->natives, (r->n_natives + 1) * sizeof(*r->natives));
        if (n == NULL)
            return EBB_ENOMEM;
        r->natives = n;
        memmove(&r->natives[i + 1], &r->natives[i],
                (r->n_natives - i) * sizeof(*r->natives));
        r->natives[i] = (struct ebb__report_native){.amount = 0};
        ebb__strlcpy(r->natives[i].currency, cur, sizeof(r->natives[i].currency));
        r->n_natives++;
    }
    r->natives[i].amount += v;
    r->natives[i].rows++;
    return 0;
}

int ebb__report_to_currency(struct report_build *b, ebb_micros amount,
                            const char *from, ebb_micros *out)
{
    int rc = ebb__currency_convert(amount, from, b->r->currency, b->o->rates,
                                   b->o->n_rates, EBB__ROUND_NEAREST, out);
    /* The rate to add is the currency's own, in USD for one unit: no
     * example figure, which would be some other currency's rate. */
    if (rc == EBB_ENOTFOUND) {
        const char *missing = strcmp(from, "USD") != 0 ? from : b->r->currency;
        ebb_diag_set(b->d, NULL, 0,
                      "no exchange rate between %s and %s: add %s under "
                      "currency_rates: in ebb.yaml, as how many USD one %s is "
                      "worth (currency_rates: {%s: RATE})",
                      from, b->r->currency, missing, missing, missing);
    }
    else if (rc != 0)
        ebb_diag_set(b->d, NULL, 0, "%s: amount too large to convert", from);
    return rc != 0 ? EBB_EINVAL : 0;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* One ledger row of the window (ebb__store_ledger_window()): converted,
 * priced against its references and added to its group. */
static int add_row(struct report_build *b,
                   const struct ebb__ledger_window_row *l)
{
    struct fact f = {
        .job_id = l->job_id, .team = l->team, .provider = l->provider,
        .region = l->region, .zone = l->zone,
        .instance_type = l->instance_type, .market = l->market,
        .at = l->start_at,
    };
    const char *kind = l->kind, *cur = l->currency, *note = l->note;
    ebb_time_ms end = l->end_at;
    ebb_micros native = l->amount, amount;
    if (add_native(b, cur, native) != 0)
        return EBB_ENOMEM;
    int rc = ebb__report_to_currency(b, native, cur, &amount);
    if (rc != 0)
        return rc;

    struct ebb__report_figures add = {.rows = 1, .spend = amount};
    struct ref_row ref = {
        .f = &f, .start = f.at, .end = end, .amount = amount,
        .submitted_at = l->submitted_at,
        .prior_compute = l->prior_compute,
        .lost = l->lost_ms,
    };
    if (strcmp(kind, "fee") == 0) {
        add.fees = amount;
        if (starts_with(note, "storage"))
            add.fee_storage = amount;
        else if (starts_with(note, "egress"))
            add.fee_egress = amount;
    } else {
        int compute = strcmp(kind, "compute") == 0;
        if (compute)
            add.compute = amount;
        else
            add.overhead = amount, add.restart_ms = end - f.at;
        add.instance_ms = end - f.at;
        add.lost_ms = l->lost_ms;
        rc = ebb__report_price_refs(b, &ref, compute, &add);
        if (rc != 0)
            return rc;
    }
    if (b->o->chart)
        rc = ebb__report_cumulate(b, end, amount, add.on_demand + amount -
                                                      add.on_demand_basis);
    return rc != 0 ? rc : account(b, &f, &add);
}

static int on_row(void *arg, const struct ebb__ledger_window_row *l)
{
    struct report_build *b = arg;
    return ebb__report_stop(b, add_row(b, l));
}

/* ---- job events -------------------------------------------------------- */

/* A preemption (counted, and marked on the chart's run) or a checkpoint
 * (the time to the job's next event, within the window) of the window,
 * grouped by the instance the job held then. */
static int add_event(struct report_build *b,
                     const struct ebb__window_event_row *e)
{
    struct fact f = {
        .job_id = e->job_id, .team = e->team, .provider = e->provider,
        .instance_type = e->instance_type, .at = e->at,
        .region = "", .zone = "", .market = "",
    };
    struct ebb__report_figures add = {0};
    if (strcmp(e->to_state, "preempted") == 0) {
        add.preemptions = 1;
        if (b->o->chart && ebb__report_mark_preempted(b, e->instance_token) != 0)
            return EBB_ENOMEM;
    } else {
        ebb_time_ms next = e->has_next ? e->next_at : b->r->until;
        add.checkpoint_ms = (next < b->r->until ? next : b->r->until) - f.at;
    }
    return account(b, &f, &add);
}

static int on_event(void *arg, const struct ebb__window_event_row *e)
{
    struct report_build *b = arg;
    return ebb__report_stop(b, add_event(b, e));
}

/* ---- driver ------------------------------------------------------------ */

int ebb__report_stop(struct report_build *b, int rc)
{
    b->stop = rc;
    return rc;
}

int ebb__report_walked(struct report_build *b, int rc, const char *what)
{
    int stop = b->stop;
    b->stop = 0;
    if (stop != 0 || rc == 0)
        return stop;
    ebb_diag_set(b->d, NULL, 0, "%s: %s", what, ebb__store_errmsg(b->store));
    return rc == EBB_ENOMEM ? EBB_ENOMEM : EBB_EDB;
}

int ebb__report_build(struct ebb__store *store,
                      const struct ebb__report_opts *o,
                      struct ebb__report **out, struct ebb_diag *d)
{
    *out = NULL;
    const char *cur = o->currency != NULL ? o->currency : "USD";
    if (o->since >= o->until) {
        ebb_diag_set(d, NULL, 0, "the report's start must come before its "
                      "end (--since before --until)");
        return EBB_EINVAL;
    }
    if (strlen(cur) != 3) {
        ebb_diag_set(d, NULL, 0, "currency \"%s\" is not a three-letter "
                      "code (e.g. USD)", cur);
        return EBB_EINVAL;
    }
    struct ebb__report *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return EBB_ENOMEM;
    r->since = o->since;
    r->until = o->until;
    r->by = o->by;
    memcpy(r->currency, cur, 4);
    struct report_build b = {.store = store, .o = o, .r = r, .d = d};
    int rc = ebb__report_walked(
        &b, ebb__store_ledger_window(store, r->since, r->until, on_row, &b),
        "cannot read the store");
    if (rc == 0)
        rc = ebb__report_walked(
            &b,
            ebb__store_window_events(store, r->since, r->until, on_event, &b),
            "cannot read the store");
    if (rc == 0 && o->chart)
        rc = ebb__report_chart(&b);
    if (rc == 0 && o->n_plans > 0)
        rc = ebb__report_advise(store, o, r, d);
    ebb__report_build_free(&b);
    if (rc != 0) {
        if (rc == EBB_ENOMEM)
            ebb_diag_set(d, NULL, 0, "out of memory");
        ebb__report_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void ebb__report_free(struct ebb__report *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n_groups; i++)
        free(r->groups[i].key);
    free(r->groups);
    free(r->natives);
    for (size_t i = 0; i < r->n_series; i++) {
        struct ebb__report_series *s = &r->series[i];
        free(s->provider);
        free(s->region);
        free(s->zone);
        free(s->instance_type);
        free(s->points);
    }
    free(r->series);
    for (size_t i = 0; i < r->n_runs; i++)
        free(r->runs[i].job_id);
    free(r->runs);
    free(r->cumulative);
    for (size_t i = 0; i < r->n_advice; i++) {
        free(r->advice[i].team);
        free(r->advice[i].plan);
    }
    free(r->advice);
    free(r);
}
