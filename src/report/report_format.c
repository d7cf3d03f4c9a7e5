/* A report as JSON, and the table cells and CSV the CLI prints from that
 * JSON. One field table names each figure for every output. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "report/report_format.h"

enum kind { MONEY, PCT, DUR, COUNT };

struct field {
    const char *json; /* key in a figures object */
    const char *csv;  /* CSV column */
    enum kind kind;
};

static const struct field fields[] = {
    {"rows", "rows", COUNT},
    {"spend_micros", "spend", MONEY},
    {"compute_micros", "compute", MONEY},
    {"overhead_micros", "overhead", MONEY},
    {"fees_micros", "fees", MONEY},
    {"fee_storage_micros", "fee_storage", MONEY},
    {"fee_egress_micros", "fee_egress", MONEY},
    {"on_demand_micros", "on_demand", MONEY},
    {"on_demand_basis_micros", "on_demand_basis", MONEY},
    {"savings_micros", "savings", MONEY},
    {"savings_pct", "savings_pct", PCT},
    {"spot_at_once_micros", "spot_at_once", MONEY},
    {"spot_at_once_basis_micros", "spot_at_once_basis", MONEY},
    {"savings_vs_spot_at_once_micros", "savings_vs_spot_at_once", MONEY},
    {"savings_vs_spot_at_once_pct", "savings_vs_spot_at_once_pct", PCT},
    {"instance_ms", "instance_s", DUR},
    {"restart_ms", "restart_s", DUR},
    {"lost_ms", "lost_s", DUR},
    {"checkpoint_ms", "checkpoint_s", DUR},
    {"preemptions", "preemptions", COUNT},
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

/* ---- JSON -------------------------------------------------------------- */

static json_t *pct_json(ebb_micros reference, ebb_micros basis)
{
    double p = ebb__report_saved_pct(reference, basis);
    return isnan(p) ? json_null() : json_real(round(p * 100.0) / 100.0);
}

static json_t *figures_json(const struct ebb__report_figures *f)
{
    return json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:o,"
        "s:I,s:I,s:I,s:I,s:I}",
        "rows", (json_int_t)f->rows,
        "spend_micros", (json_int_t)f->spend,
        "compute_micros", (json_int_t)f->compute,
        "overhead_micros", (json_int_t)f->overhead,
        "fees_micros", (json_int_t)f->fees,
        "fee_storage_micros", (json_int_t)f->fee_storage,
        "fee_egress_micros", (json_int_t)f->fee_egress,
        "on_demand_micros", (json_int_t)f->on_demand,
        "on_demand_basis_micros", (json_int_t)f->on_demand_basis,
        "savings_micros",
        (json_int_t)ebb__report_saved(f->on_demand, f->on_demand_basis),
        "savings_pct", pct_json(f->on_demand, f->on_demand_basis),
        "spot_at_once_micros", (json_int_t)f->spot_at_once,
        "spot_at_once_basis_micros", (json_int_t)f->spot_at_once_basis,
        "savings_vs_spot_at_once_micros",
        (json_int_t)ebb__report_saved(f->spot_at_once, f->spot_at_once_basis),
        "savings_vs_spot_at_once_pct",
        pct_json(f->spot_at_once, f->spot_at_once_basis),
        "instance_ms", (json_int_t)f->instance_ms,
        "restart_ms", (json_int_t)f->restart_ms,
        "lost_ms", (json_int_t)f->lost_ms,
        "checkpoint_ms", (json_int_t)f->checkpoint_ms,
        "preemptions", (json_int_t)f->preemptions);
}

static json_t *time_json(ebb_time_ms t)
{
    char buf[EBB_TIME_BUFSZ];
    return json_string(ebb_format_time(t, buf, sizeof(buf)));
}

static const char *market_word(enum ebb_market m)
{
    return m == EBB_MARKET_SPOT ? "spot" : "on-demand";
}

static json_t *chart_json(const struct ebb__report *r)
{
    json_t *series = json_array(), *runs = json_array(), *cum = json_array();
    for (size_t i = 0; i < r->n_series; i++) {
        const struct ebb__report_series *s = &r->series[i];
        json_t *pts = json_array();
        for (size_t k = 0; k < s->n_points; k++)
            json_array_append_new(pts, json_pack("[I,I]",
                                                 (json_int_t)s->points[k].at,
                                                 (json_int_t)s->points[k].value));
        json_array_append_new(series, json_pack(
            "{s:s,s:s,s:s,s:s,s:s,s:I,s:o}", "provider", s->provider,
            "region", s->region, "zone", s->zone,
            "instance_type", s->instance_type, "market", market_word(s->market),
            "spend_micros", (json_int_t)s->spend, "prices", pts));
    }
    for (size_t i = 0; i < r->n_runs; i++) {
        const struct ebb__report_run *u = &r->runs[i];
        json_array_append_new(runs, json_pack(
            "{s:s,s:o,s:I,s:I,s:b}", "job", u->job_id, "series",
            u->series == SIZE_MAX ? json_null()
                                  : json_integer((json_int_t)u->series),
            "start_ms", (json_int_t)u->start, "end_ms", (json_int_t)u->end,
            "preempted", u->preempted));
    }
    for (size_t i = 0; i < r->n_cumulative; i++) {
        const struct ebb__report_cumulative *c = &r->cumulative[i];
        json_array_append_new(cum, json_pack("[I,I,I]", (json_int_t)c->at,
                                             (json_int_t)c->spend,
                                             (json_int_t)c->on_demand));
    }
    return json_pack("{s:o,s:o,s:I,s:o}", "series", series, "runs", runs,
                     "runs_left_out", (json_int_t)r->runs_left_out,
                     "cumulative", cum);
}

json_t *ebb__report_json(const struct ebb__report *r)
{
    json_t *groups = json_array(), *ledger = json_array(),
           *advice = json_array();
    for (size_t i = 0; i < r->n_groups; i++) {
        json_t *g = figures_json(&r->groups[i].f);
        json_object_set_new(g, "key", json_string(r->groups[i].key));
        json_array_append_new(groups, g);
    }
    for (size_t i = 0; i < r->n_natives; i++)
        json_array_append_new(ledger, json_pack(
            "{s:s,s:I,s:I}", "currency", r->natives[i].currency,
            "amount_micros", (json_int_t)r->natives[i].amount,
            "rows", (json_int_t)r->natives[i].rows));
    for (size_t i = 0; i < r->n_advice; i++) {
        const struct ebb__report_advice *a = &r->advice[i];
        json_array_append_new(advice, json_pack(
            "{s:s,s:s,s:i,s:I,s:I,s:I,s:I,s:I,s:o}", "team", a->team,
            "plan", a->plan, "periods", a->periods,
            "period_ms", (json_int_t)a->period,
            "used_ms", (json_int_t)a->used_ms,
            "spend_micros", (json_int_t)a->spend,
            "with_plan_micros", (json_int_t)a->with_plan,
            "savings_micros", (json_int_t)(a->spend - a->with_plan),
            "savings_pct", pct_json(a->spend, a->with_plan)));
    }
    json_t *j = json_pack("{s:o,s:o,s:I,s:I,s:s,s:s,s:o,s:o,s:o,s:o}",
                          "since", time_json(r->since),
                          "until", time_json(r->until),
                          "since_ms", (json_int_t)r->since,
                          "until_ms", (json_int_t)r->until,
                          "by", ebb__report_by_name(r->by),
                          "currency", r->currency,
                          "total", figures_json(&r->total),
                          "groups", groups, "ledger", ledger,
                          "advice", advice);
    if (j != NULL && r->cumulative != NULL)
        json_object_set_new(j, "chart", chart_json(r));
    return j;
}

/* ---- cells ------------------------------------------------------------- */

/* One figure as text: money in units, durations as "1h30m" (to the
 * second), percentages with one decimal ("-" when there is no
 * reference). */
static int cell(const json_t *figures, const char *key, enum kind kind,
                int csv, char *buf, size_t len)
{
    const json_t *v = json_object_get(figures, key);
    if (v == NULL)
        return EBB_EINVAL;
    if (kind == PCT) {
        if (!json_is_number(v))
            snprintf(buf, len, "%s", csv ? "" : "-");
        else
            snprintf(buf, len, csv ? "%.2f" : "%.1f%%", json_number_value(v));
        return 0;
    }
    json_int_t n = json_integer_value(v);
    if (kind == MONEY)
        ebb_format_money(csv ? n : ebb__report_round_cents(n), NULL, buf, len);
    else if (kind == DUR && csv)
        snprintf(buf, len, "%.3f", (double)n / 1000.0);
    else if (kind == DUR) /* whole seconds, as every time in a table */
        ebb_format_duration((n + EBB_MS_PER_SECOND / 2) / EBB_MS_PER_SECOND *
                                EBB_MS_PER_SECOND, buf, len);
    else
        snprintf(buf, len, "%lld", (long long)n);
    return 0;
}

const char *const ebb__report_table_headers[EBB__REPORT_TABLE_COLS] = {
    "GROUP", "SPEND", "ON-DEMAND", "SAVED", "SAVED%", "VS SPOT NOW",
    "PREEMPT", "RESTARTS", "LOST", "CHECKPOINTS", "FEES", "INSTANCE TIME",
};

static const struct field table_fields[EBB__REPORT_TABLE_COLS - 1] = {
    {"spend_micros", NULL, MONEY},
    {"on_demand_micros", NULL, MONEY},
    {"savings_micros", NULL, MONEY},
    {"savings_pct", NULL, PCT},
    {"savings_vs_spot_at_once_pct", NULL, PCT},
    {"preemptions", NULL, COUNT},
    {"restart_ms", NULL, DUR},
    {"lost_ms", NULL, DUR},
    {"checkpoint_ms", NULL, DUR},
    {"fees_micros", NULL, MONEY},
    {"instance_ms", NULL, DUR},
};

int ebb__report_table_row(const json_t *figures, const char *name,
                          const char **cells, char *buf, size_t len)
{
    cells[0] = name;
    size_t used = 0;
    for (size_t i = 0; i < EBB__REPORT_TABLE_COLS - 1; i++) {
        size_t room = len - used < 48 ? len - used : 48;
        if (room < 2 ||
            cell(figures, table_fields[i].json, table_fields[i].kind, 0,
                 buf + used, room) != 0)
            return EBB_EINVAL;
        cells[i + 1] = buf + used;
        used += strlen(buf + used) + 1;
    }
    return 0;
}

/* ---- CSV --------------------------------------------------------------- */

/* A field quoted when it holds a comma, a quote or a line break. */
static void csv_text(FILE *out, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static int csv_line(FILE *out, const json_t *figures, const char *name,
                    const char *currency)
{
    csv_text(out, name);
    fprintf(out, ",%s", currency);
    for (size_t i = 0; i < N_FIELDS; i++) {
        char buf[64];
        if (cell(figures, fields[i].json, fields[i].kind, 1, buf, sizeof(buf)))
            return EBB_EINVAL;
        fprintf(out, ",%s", buf);
    }
    fputs("\r\n", out);
    return 0;
}

int ebb__report_write_csv(const json_t *report, FILE *out)
{
    const json_t *groups = json_object_get(report, "groups");
    const json_t *total = json_object_get(report, "total");
    const char *cur = json_string_value(json_object_get(report, "currency"));
    if (!json_is_array(groups) || !json_is_object(total) || cur == NULL)
        return EBB_EINVAL;
    fputs("group,currency", out);
    for (size_t i = 0; i < N_FIELDS; i++)
        fprintf(out, ",%s", fields[i].csv);
    fputs("\r\n", out);
    size_t i;
    const json_t *g;
    int rc = 0;
    json_array_foreach(groups, i, g) {
        const char *key = json_string_value(json_object_get(g, "key"));
        if (rc == 0)
            rc = csv_line(out, g, key != NULL ? key : "", cur);
    }
    if (rc == 0)
        rc = csv_line(out, total, "TOTAL", cur);
    if (rc == 0 && (fflush(out) != 0 || ferror(out)))
        rc = EBB_EIO;
    return rc;
}
