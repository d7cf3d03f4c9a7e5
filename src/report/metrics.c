/* Rendering ebbd's metrics as Prometheus exposition text. Pure: the
 * struct in, the text out; the daemon serves it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/str.h"
#include "report/metrics.h"

/* Checkpoints take seconds to tens of minutes (a large model's state). */
const double ebb__metrics_checkpoint_bounds[] = {1, 5, 10, 30, 60, 120, 300,
                                                 600, 1200, 1800, 3600};
const size_t ebb__metrics_checkpoint_n_bounds =
    sizeof(ebb__metrics_checkpoint_bounds) / sizeof(double);
/* A healthy loop answers within a millisecond; a second is an outage. */
const double ebb__metrics_lag_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                          0.025,  0.05,  0.1,    0.25,  0.5,
                                          1,      2.5,   5};
const size_t ebb__metrics_lag_n_bounds =
    sizeof(ebb__metrics_lag_bounds) / sizeof(double);

/* ---- text -------------------------------------------------------------- */

/* A sample value as the format writes floats: NaN, +Inf, -Inf, or the
 * shortest decimal that reads back the same. */
static void value(struct ebb_buf *b, double v)
{
    if (isnan(v)) {
        ebb_buf_puts(b, "NaN");
    } else if (isinf(v)) {
        ebb_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
    } else if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        ebb_buf_printf(b, "%.0f", v); /* whole numbers in full: 120, not 1.2e+02 */
    } else {
        char s[40];
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(s, sizeof(s), "%.*g", prec, v);
            if (strtod(s, NULL) == v)
                break;
        }
        ebb_buf_puts(b, s);
    }
}

/* A label value between double quotes, with \, " and line feeds escaped. */
static void label_value(struct ebb_buf *b, const char *s)
{
    ebb_buf_puts(b, "\"");
    for (; s != NULL && *s; s++) {
        if (*s == '\\')
            ebb_buf_puts(b, "\\\\");
        else if (*s == '"')
            ebb_buf_puts(b, "\\\"");
        else if (*s == '\n')
            ebb_buf_puts(b, "\\n");
        else
            ebb_buf_append(b, s, 1);
    }
    ebb_buf_puts(b, "\"");
}

/* HELP and TYPE, once per family. Help texts here hold no backslash or
 * line feed, the two characters HELP would need escaped. */
static void family(struct ebb_buf *b, const char *name, const char *type,
                   const char *help)
{
    ebb_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{label="value"} v, or name v when label is NULL. */
static void sample(struct ebb_buf *b, const char *name, const char *label,
                   const char *lvalue, double v)
{
    ebb_buf_puts(b, name);
    if (label != NULL) {
        ebb_buf_printf(b, "{%s=", label);
        label_value(b, lvalue);
        ebb_buf_puts(b, "}");
    }
    ebb_buf_puts(b, " ");
    value(b, v);
    ebb_buf_puts(b, "\n");
}

static void histogram(struct ebb_buf *b, const char *name, const char *help,
                      const struct ebb__histogram *h)
{
    if (h == NULL)
        return;
    family(b, name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= h->n_bounds; i++) {
        cumulative += h->counts[i];
        ebb_buf_printf(b, "%s_bucket{le=\"", name);
        value(b, i < h->n_bounds ? h->bounds[i] : INFINITY);
        ebb_buf_printf(b, "\"} %llu\n", (unsigned long long)cumulative);
    }
    ebb_buf_printf(b, "%s_sum ", name);
    value(b, h->sum);
    ebb_buf_printf(b, "\n%s_count %llu\n", name, (unsigned long long)h->count);
}

static uint64_t polls(const struct ebb__metrics_provider *p)
{
    return p->price_polls;
}

static uint64_t poll_errors(const struct ebb__metrics_provider *p)
{
    return p->price_poll_errors;
}

static uint64_t preemptions(const struct ebb__metrics_provider *p)
{
    return p->preemptions;
}

/* One family of per-provider counters; `get` picks the counter. */
static void per_provider(struct ebb_buf *b, const struct ebb__metrics *m,
                         const char *name, const char *help,
                         uint64_t (*get)(const struct ebb__metrics_provider *))
{
    family(b, name, "counter", help);
    for (size_t i = 0; i < m->n_providers; i++)
        sample(b, name, "provider", m->providers[i].provider,
               (double)get(&m->providers[i]));
}

char *ebb__metrics_render(const struct ebb__metrics *m)
{
    struct ebb_buf b = {0};
    if (m->version != NULL) {
        family(&b, "ebb_build_info", "gauge",
               "Always 1; the version label says which ebb runs.");
        sample(&b, "ebb_build_info", "version", m->version, 1);
    }
    family(&b, "ebb_start_time_seconds", "gauge",
           "When ebbd started, in seconds since the epoch.");
    sample(&b, "ebb_start_time_seconds", NULL, NULL, m->start_time);

    family(&b, "ebb_jobs", "gauge", "Jobs in each state now.");
    for (size_t i = 0; i < m->n_jobs; i++)
        sample(&b, "ebb_jobs", "state", m->jobs[i].state,
               (double)m->jobs[i].count);

    family(&b, "ebb_spend_total", "counter",
           "Money spent (the ledger's sum), in units of the currency label.");
    for (size_t i = 0; i < m->n_money; i++)
        sample(&b, "ebb_spend_total", "currency", m->money[i].currency,
               (double)m->money[i].spend / EBB_MICROS_PER_UNIT);
    family(&b, "ebb_savings", "gauge",
           "Savings against running the same work on-demand, in "
           "units of the currency label.");
    for (size_t i = 0; i < m->n_money; i++)
        sample(&b, "ebb_savings", "currency", m->money[i].currency,
               (double)m->money[i].savings / EBB_MICROS_PER_UNIT);

    per_provider(&b, m, "ebb_price_polls_total",
                 "Price polls completed, per provider.",
                 polls);
    per_provider(&b, m, "ebb_price_poll_errors_total",
                 "Price polls that failed, per provider.",
                 poll_errors);
    per_provider(&b, m, "ebb_preemptions_total",
                 "Instances taken away by their provider, per provider.",
                 preemptions);

    histogram(&b, "ebb_checkpoint_duration_seconds",
              "How long jobs took to write a checkpoint.",
              m->checkpoint_duration);
    histogram(&b, "ebb_event_loop_lag_seconds",
              "How late the event loop ran its timers.", m->loop_lag);
    return ebb_buf_take(&b);
}
