/* The report's chart as one SVG document, drawn from the report's JSON:
 * a headline, then three panels over one time axis: the price per hour of
 * the series the jobs ran on, when each job ran (a bar per instance, a red
 * mark where it was preempted), and cumulative spend against what the same
 * time would have cost on-demand, the gap between them shaded as savings.
 * Plain SVG 1.1 with no scripts, fonts or external references, so any
 * viewer (and rsvg-convert) renders it the same. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "report/report_format.h"

#define W 960
#define LEFT 92
#define RIGHT 28
#define PLOT_W (W - LEFT - RIGHT)
#define MAX_SERIES 6
#define MAX_LANES 14
#define LANE_H 18

/* Colour-blind-safe (Okabe-Ito) hues for series, in spend order. */
static const char *const palette[MAX_SERIES] = {
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00",
};

struct chart {
    FILE *out;
    ebb_time_ms t0, t1;
    const char *currency;
};

static double x_of(const struct chart *c, ebb_time_ms t)
{
    if (t < c->t0)
        t = c->t0;
    if (t > c->t1)
        t = c->t1;
    return LEFT + (double)(t - c->t0) * PLOT_W / (double)(c->t1 - c->t0);
}

/* Text content with XML's five special characters escaped. */
static void xml_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default: fputc(*s, out);
        }
    }
}

static void text_at(FILE *out, double x, double y, const char *attrs,
                    const char *s)
{
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    xml_text(out, s);
    fputs("</text>\n", out);
}

/* On-demand is grey everywhere: its price line, its instances' bars and
 * the cumulative on-demand line. */
#define ON_DEMAND_GREY "#777777"

static int is_on_demand(const json_t *series)
{
    const char *m = json_string_value(json_object_get(series, "market"));
    return m != NULL && strcmp(m, "on-demand") == 0;
}

static const char *colour_of(const json_t *all, json_int_t i)
{
    if (i < 0 || i >= MAX_SERIES)
        return "#bbbbbb";
    return is_on_demand(json_array_get(all, (size_t)i)) ? ON_DEMAND_GREY
                                                         : palette[i];
}

static json_int_t int_at(const json_t *a, size_t i)
{
    return json_integer_value(json_array_get(a, i));
}

/* A round step for an axis spanning `span` in about `n` ticks: 1, 2 or 5
 * times a power of ten. */
static double nice_step(double span, int n)
{
    double raw = span / n, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* Vertical grid lines and date labels under a panel at [top, bottom]. */
static void time_axis(const struct chart *c, double top, double bottom,
                      int labels)
{
    static const ebb_dur_ms steps[] = {
        EBB_MS_PER_HOUR, 3 * EBB_MS_PER_HOUR, 6 * EBB_MS_PER_HOUR,
        12 * EBB_MS_PER_HOUR, EBB_MS_PER_DAY, 2 * EBB_MS_PER_DAY,
        7 * EBB_MS_PER_DAY, 14 * EBB_MS_PER_DAY, 28 * EBB_MS_PER_DAY,
        91 * EBB_MS_PER_DAY,
    };
    ebb_dur_ms step = steps[0];
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        step = steps[i];
        if ((c->t1 - c->t0) / step <= 8)
            break;
    }
    for (ebb_time_ms t = (c->t0 / step + 1) * step; t < c->t1; t += step) {
        double x = x_of(c, t);
        fprintf(c->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#e3e3e3\"/>\n", x, top, x, bottom);
        if (!labels)
            continue;
        static const char months[][4] = {"Jan", "Feb", "Mar", "Apr", "May",
                                         "Jun", "Jul", "Aug", "Sep", "Oct",
                                         "Nov", "Dec"};
        int64_t y;
        int m, day;
        ebb_civil_from_days(t / EBB_MS_PER_DAY, &y, &m, &day);
        ebb_dur_ms in_day = t % EBB_MS_PER_DAY;
        char label[32];
        /* "Oct 02", or "Oct 02 12:00" off midnight */
        if (in_day == 0)
            snprintf(label, sizeof(label), "%s %02d", months[m - 1], day);
        else
            snprintf(label, sizeof(label), "%s %02d %02d:%02d", months[m - 1],
                     day, (int)(in_day / EBB_MS_PER_HOUR),
                     (int)(in_day % EBB_MS_PER_HOUR / EBB_MS_PER_MINUTE));
        text_at(c->out, x, bottom + 14, "text-anchor=\"middle\" "
                "class=\"tick\"", label);
    }
}

/* Horizontal grid and money labels for a value axis [0, top_value]. */
static double value_axis(const struct chart *c, double top, double bottom,
                         double max_value)
{
    double step = nice_step(max_value > 0 ? max_value : 1, 4);
    double vmax = ceil((max_value > 0 ? max_value : 1) / step) * step;
    for (double v = 0; v <= vmax + step / 2; v += step) {
        double y = bottom - v * (bottom - top) / vmax;
        fprintf(c->out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                "stroke=\"#e3e3e3\"/>\n", LEFT, y, LEFT + PLOT_W, y);
        char label[48];
        ebb_format_money((ebb_micros)llround(v * 1e6), NULL, label,
                          sizeof(label));
        text_at(c->out, LEFT - 6, y + 4, "text-anchor=\"end\" class=\"tick\"",
                label);
    }
    return vmax;
}

static void panel_title(const struct chart *c, double y, const char *title)
{
    text_at(c->out, LEFT, y, "class=\"panel\"", title);
}

/* ---- prices ------------------------------------------------------------ */

static double series_max(const json_t *series, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *pts = json_object_get(json_array_get(series, i), "prices");
        for (size_t k = 0; k < json_array_size(pts); k++) {
            double v = (double)int_at(json_array_get(pts, k), 1) / 1e6;
            m = v > m ? v : m;
        }
    }
    return m;
}

static void series_name(const json_t *s, char *buf, size_t len)
{
    const char *zone = json_string_value(json_object_get(s, "zone"));
    const char *region = json_string_value(json_object_get(s, "region"));
    snprintf(buf, len, "%s %s %s %s",
             json_string_value(json_object_get(s, "provider")),
             json_string_value(json_object_get(s, "instance_type")),
             zone != NULL && zone[0] ? zone : region != NULL ? region : "",
             json_string_value(json_object_get(s, "market")));
}

static double draw_prices(const struct chart *c, const json_t *series,
                          double top)
{
    size_t n = json_array_size(series);
    if (n > MAX_SERIES)
        n = MAX_SERIES;
    char title[96];
    snprintf(title, sizeof(title), "Price per hour (%s) of the series used",
             c->currency);
    panel_title(c, top, title);
    double y0 = top + 12, y1 = y0 + 150;
    time_axis(c, y0, y1, 0);
    double vmax = value_axis(c, y0, y1, series_max(series, n));
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(series, i);
        const json_t *pts = json_object_get(s, "prices");
        if (json_array_size(pts) == 0)
            continue;
        fprintf(c->out, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" "
                "%sd=\"", colour_of(series, (json_int_t)i),
                is_on_demand(s) ? "stroke-dasharray=\"5 3\" " : "");
        for (size_t k = 0; k < json_array_size(pts); k++) {
            const json_t *p = json_array_get(pts, k);
            double x = x_of(c, int_at(p, 0));
            double ny = y1 - (double)int_at(p, 1) / 1e6 * (y1 - y0) / vmax;
            /* A step line: a price holds until the next observation. */
            if (k == 0)
                fprintf(c->out, "M%.1f %.1f", x, ny);
            else
                fprintf(c->out, "H%.1fV%.1f", x, ny);
        }
        fprintf(c->out, "H%d\"/>\n", LEFT + PLOT_W);
        char name[160];
        series_name(s, name, sizeof(name));
        double lx = LEFT + 8 + (double)(i % 3) * 290, ly = y1 + 18 + (i / 3) * 15;
        fprintf(c->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"4\" "
                "fill=\"%s\"/>\n", lx, ly - 5, colour_of(series, (json_int_t)i));
        text_at(c->out, lx + 16, ly, "class=\"legend\"", name);
    }
    return y1 + 18 + (double)((n + 2) / 3) * 15 + 14;
}

/* ---- runs -------------------------------------------------------------- */

/* A job's lane: its runs' total time picks the jobs shown when there are
 * more than MAX_LANES; lanes are ordered by each job's first run. */
struct lane {
    const char *job;
    size_t first;    /* index of its first run */
    ebb_dur_ms ms;   /* total run time */
};

struct run_ref {
    const char *job;
    size_t i;
};

static int by_job(const void *a, const void *b)
{
    const struct run_ref *x = a, *y = b;
    int c = strcmp(x->job, y->job);
    return c != 0 ? c : (x->i > y->i) - (x->i < y->i);
}

static int by_time_spent(const void *a, const void *b)
{
    const struct lane *x = a, *y = b;
    if (x->ms != y->ms)
        return (x->ms < y->ms) - (x->ms > y->ms);
    return (x->first > y->first) - (x->first < y->first);
}

static int by_first(const void *a, const void *b)
{
    const struct lane *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

static ebb_dur_ms run_ms(const json_t *r)
{
    return json_integer_value(json_object_get(r, "end_ms")) -
           json_integer_value(json_object_get(r, "start_ms"));
}

/* Fills lane_of[i] (a row, or SIZE_MAX) for each of the n runs; returns the
 * number of jobs (*rows: how many are drawn), or SIZE_MAX when out of
 * memory. Sorting keeps it O(n log n) for a month of thousands of runs. */
static size_t assign_lanes(const json_t *runs, size_t n, size_t *lane_of,
                           size_t *rows)
{
    struct run_ref *refs = calloc(n + 1, sizeof(*refs));
    struct lane *lanes = calloc(n + 1, sizeof(*lanes));
    size_t n_lanes = 0;
    if (refs == NULL || lanes == NULL) {
        free(refs);
        free(lanes);
        return SIZE_MAX;
    }
    for (size_t i = 0; i < n; i++) {
        const char *j = json_string_value(
            json_object_get(json_array_get(runs, i), "job"));
        refs[i] = (struct run_ref){j != NULL ? j : "", i};
    }
    qsort(refs, n, sizeof(*refs), by_job);
    for (size_t k = 0; k < n; k++) {
        if (k == 0 || strcmp(refs[k].job, refs[k - 1].job) != 0)
            lanes[n_lanes++] = (struct lane){refs[k].job, refs[k].i, 0};
        lanes[n_lanes - 1].ms += run_ms(json_array_get(runs, refs[k].i));
    }
    qsort(lanes, n_lanes, sizeof(*lanes), by_time_spent);
    *rows = n_lanes < MAX_LANES ? n_lanes : MAX_LANES;
    qsort(lanes, *rows, sizeof(*lanes), by_first);
    /* Each run's row: its job among the (at most MAX_LANES) drawn. */
    for (size_t k = 0; k < n; k++) {
        size_t row = SIZE_MAX;
        for (size_t l = 0; l < *rows && row == SIZE_MAX; l++)
            if (strcmp(lanes[l].job, refs[k].job) == 0)
                row = l;
        lane_of[refs[k].i] = row;
    }
    free(refs);
    free(lanes);
    return n_lanes;
}

static double draw_runs(const struct chart *c, const json_t *runs,
                        const json_t *series, double top)
{
    size_t n = json_array_size(runs), rows = 0;
    size_t *lane_of = calloc(n + 1, sizeof(*lane_of));
    size_t jobs = lane_of != NULL ? assign_lanes(runs, n, lane_of, &rows)
                                  : SIZE_MAX;
    if (jobs == SIZE_MAX) {
        free(lane_of);
        return top;
    }
    panel_title(c, top, jobs > rows ? "When the jobs that ran longest ran "
                                      "(bars: instances; red mark: preempted)"
                                    : "When each job ran (bars: instances; "
                                      "red mark: preempted)");
    double y0 = top + 12, y1 = y0 + (double)(rows > 0 ? rows : 1) * LANE_H;
    time_axis(c, y0, y1, 0);
    int *labelled = calloc(rows + 1, sizeof(*labelled));
    for (size_t i = 0; i < n && labelled != NULL; i++) {
        const json_t *r = json_array_get(runs, i);
        if (lane_of[i] == SIZE_MAX)
            continue;
        double y = y0 + (double)lane_of[i] * LANE_H;
        double xa = x_of(c, json_integer_value(json_object_get(r, "start_ms")));
        double xb = x_of(c, json_integer_value(json_object_get(r, "end_ms")));
        const json_t *si = json_object_get(r, "series");
        const char *colour =
            colour_of(series, json_is_integer(si) ? json_integer_value(si) : -1);
        fprintf(c->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                "height=\"%d\" rx=\"2\" fill=\"%s\"/>\n", xa, y + 3,
                xb - xa > 1.5 ? xb - xa : 1.5, LANE_H - 6, colour);
        if (json_is_true(json_object_get(r, "preempted")))
            fprintf(c->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"3\" "
                    "height=\"%d\" fill=\"#D00000\"/>\n", xb - 1.5, y + 1,
                    LANE_H - 2);
        if (!labelled[lane_of[i]]++)
            text_at(c->out, LEFT - 6, y + LANE_H - 5,
                    "text-anchor=\"end\" class=\"tick\"",
                    json_string_value(json_object_get(r, "job")));
    }
    free(labelled);
    free(lane_of);
    if (n == 0)
        text_at(c->out, LEFT + 8, y0 + 13, "class=\"tick\"",
                "no instance ran in this window");
    if (jobs > rows) {
        char more[64];
        snprintf(more, sizeof(more), "and %zu more jobs", jobs - rows);
        text_at(c->out, LEFT + PLOT_W, y1 + 12, "text-anchor=\"end\" "
                "class=\"tick\"", more);
    }
    return y1 + 30;
}

/* ---- cumulative -------------------------------------------------------- */

static void polyline(const struct chart *c, const json_t *cum, int col,
                     double y0, double y1, double vmax, int start_new)
{
    for (size_t k = 0; k < json_array_size(cum); k++) {
        const json_t *p = json_array_get(cum, k);
        fprintf(c->out, "%s%.1f %.1f", k == 0 && start_new ? "M" : "L",
                x_of(c, int_at(p, 0)),
                y1 - (double)int_at(p, (size_t)col) / 1e6 * (y1 - y0) / vmax);
    }
}

static double draw_cumulative(const struct chart *c, const json_t *cum,
                              double top)
{
    char title[96];
    snprintf(title, sizeof(title), "Cumulative spend (%s) against on-demand",
             c->currency);
    panel_title(c, top, title);
    double y0 = top + 12, y1 = y0 + 170;
    size_t n = json_array_size(cum);
    double max = n ? (double)int_at(json_array_get(cum, n - 1), 2) / 1e6 : 0;
    double spent = n ? (double)int_at(json_array_get(cum, n - 1), 1) / 1e6 : 0;
    max = spent > max ? spent : max;
    time_axis(c, y0, y1, 1);
    double vmax = value_axis(c, y0, y1, max);
    if (n > 0) {
        /* The savings: the area between the two lines. */
        fputs("<path fill=\"#009E73\" fill-opacity=\"0.15\" d=\"", c->out);
        polyline(c, cum, 2, y0, y1, vmax, 1);
        for (size_t k = n; k-- > 0;) {
            const json_t *p = json_array_get(cum, k);
            fprintf(c->out, "L%.1f %.1f", x_of(c, int_at(p, 0)),
                    y1 - (double)int_at(p, 1) / 1e6 * (y1 - y0) / vmax);
        }
        fputs("Z\"/>\n<path fill=\"none\" stroke=\"" ON_DEMAND_GREY "\" "
              "stroke-dasharray=\"5 3\" stroke-width=\"1.6\" d=\"", c->out);
        polyline(c, cum, 2, y0, y1, vmax, 1);
        fputs("\"/>\n<path fill=\"none\" stroke=\"#0072B2\" "
              "stroke-width=\"2.2\" d=\"", c->out);
        polyline(c, cum, 1, y0, y1, vmax, 1);
        fputs("\"/>\n", c->out);
        /* The end values at the lines' ends: spend below its line, the
         * on-demand figure above its own (when it differs). */
        const json_t *last = json_array_get(cum, n - 1);
        double xe = x_of(c, int_at(last, 0));
        int at_edge = xe > LEFT + PLOT_W - 60;
        for (size_t k = 1; k <= 2; k++) {
            if (k == 2 && int_at(last, 2) == int_at(last, 1))
                break;
            char v[48];
            ebb_format_money(ebb__report_round_cents(int_at(last, k)), NULL, v,
                              sizeof(v));
            double ye = y1 - (double)int_at(last, k) / 1e6 * (y1 - y0) / vmax;
            text_at(c->out, at_edge ? xe - 4 : xe + 4, k == 1 ? ye + 14 : ye - 5,
                    at_edge ? "text-anchor=\"end\" class=\"legend\""
                            : "class=\"legend\"", v);
        }
    }
    double lx = LEFT + 8, ly = y1 + 34;
    fprintf(c->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"3\" "
            "fill=\"#0072B2\"/>\n", lx, ly - 4);
    text_at(c->out, lx + 18, ly, "class=\"legend\"", "actual spend");
    fprintf(c->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"3\" "
            "fill=\"" ON_DEMAND_GREY "\"/>\n", lx + 130, ly - 4);
    text_at(c->out, lx + 148, ly, "class=\"legend\"",
            "on-demand for the same work, plus fees");
    fprintf(c->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"9\" "
            "fill=\"#009E73\" fill-opacity=\"0.3\"/>\n", lx + 450, ly - 8);
    text_at(c->out, lx + 468, ly, "class=\"legend\"", "saved");
    return ly + 20;
}

/* ---- document ---------------------------------------------------------- */

static const char *money(const json_t *o, const char *key, const char *cur,
                         char *buf, size_t len)
{
    return ebb_format_money(
        ebb__report_round_cents(json_integer_value(json_object_get(o, key))),
        cur, buf, len);
}

/* "2026-10-01T00:00:00Z" -> "2026-10-01 00:00" */
static void short_time(const json_t *report, const char *key, char *buf,
                       size_t len)
{
    const char *iso = json_string_value(json_object_get(report, key));
    snprintf(buf, len, "%.10s %.5s", iso != NULL ? iso : "",
             iso != NULL && strlen(iso) > 16 ? iso + 11 : "");
}

static void headline(const struct chart *c, const json_t *report)
{
    const json_t *t = json_object_get(report, "total");
    char spend[48], od[48], saved[48], line[320];
    money(t, "spend_micros", c->currency, spend, sizeof(spend));
    money(t, "on_demand_micros", c->currency, od, sizeof(od));
    money(t, "savings_micros", c->currency, saved, sizeof(saved));
    const json_t *pct = json_object_get(t, "savings_pct");
    snprintf(line, sizeof(line), "Spent %s", spend);
    if (json_is_number(pct))
        snprintf(line + strlen(line), sizeof(line) - strlen(line),
                 " \xc2\xb7 on-demand %s \xc2\xb7 saved %s (%.1f%%)", od,
                 saved, json_number_value(pct));
    text_at(c->out, LEFT, 30, "class=\"title\"", line);
    char since[32], until[32], sub[200];
    short_time(report, "since", since, sizeof(since));
    short_time(report, "until", until, sizeof(until));
    snprintf(sub, sizeof(sub), "%s to %s UTC \xc2\xb7 %lld preemptions "
             "\xc2\xb7 %s lost to restarts", since, until,
             (long long)json_integer_value(json_object_get(t, "preemptions")),
             ebb_format_duration(json_integer_value(json_object_get(t, "restart_ms")),
                                  line, sizeof(line)));
    text_at(c->out, LEFT, 50, "class=\"tick\"", sub);
}

/* The span of the chart's runs and cumulative spend, with a margin of a
 * twentieth of it on each side, within [c->t0, c->t1]; unchanged when the
 * chart has neither. */
static void fit_to_data(struct chart *c, const json_t *chart)
{
    ebb_time_ms lo = INT64_MAX, hi = INT64_MIN;
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(chart, "runs"), i, v) {
        ebb_time_ms a = json_integer_value(json_object_get(v, "start_ms"));
        ebb_time_ms b = json_integer_value(json_object_get(v, "end_ms"));
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
    }
    json_array_foreach(json_object_get(chart, "cumulative"), i, v) {
        ebb_time_ms t = json_integer_value(json_array_get(v, 0));
        lo = t < lo ? t : lo;
        hi = t > hi ? t : hi;
    }
    if (lo > hi)
        return;
    ebb_time_ms pad = (hi - lo) / 20 > EBB_MS_PER_MINUTE ? (hi - lo) / 20
                                                          : EBB_MS_PER_MINUTE;
    lo = lo - pad > c->t0 ? lo - pad : c->t0;
    hi = hi + pad < c->t1 ? hi + pad : c->t1;
    if (hi > lo) {
        c->t0 = lo;
        c->t1 = hi;
    }
}

int ebb__report_write_svg(const json_t *report, int fit, FILE *out)
{
    const json_t *chart = json_object_get(report, "chart");
    struct chart c = {
        .out = out,
        .t0 = json_integer_value(json_object_get(report, "since_ms")),
        .t1 = json_integer_value(json_object_get(report, "until_ms")),
        .currency = json_string_value(json_object_get(report, "currency")),
    };
    if (!json_is_object(chart) || c.t1 <= c.t0 || c.currency == NULL)
        return EBB_EINVAL;
    if (fit)
        fit_to_data(&c, chart);
    /* Drawn into a temporary buffer first: the height is known at the end. */
    char *body = NULL;
    size_t body_len = 0;
    c.out = open_memstream(&body, &body_len);
    if (c.out == NULL)
        return EBB_ENOMEM;
    headline(&c, report);
    double y = draw_prices(&c, json_object_get(chart, "series"), 82);
    y = draw_runs(&c, json_object_get(chart, "runs"),
                  json_object_get(chart, "series"), y);
    y = draw_cumulative(&c, json_object_get(chart, "cumulative"), y);
    if (fclose(c.out) != 0) {
        free(body);
        return EBB_ENOMEM;
    }
    int h = (int)ceil(y);
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\">\n"
            "<style>text{font-family:DejaVu Sans,Verdana,sans-serif;"
            "fill:#222}.title{font-size:17px;font-weight:bold}"
            ".panel{font-size:13px;font-weight:bold}.tick{font-size:10px;"
            "fill:#555}.legend{font-size:11px}</style>\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
            W, h, W, h);
    fwrite(body, 1, body_len, out);
    fputs("</svg>\n", out);
    free(body);
    return fflush(out) != 0 || ferror(out) ? EBB_EIO : 0;
}
