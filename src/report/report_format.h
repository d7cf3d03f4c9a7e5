/* A report's outputs. ebbd answers the `report` API method with
 * ebb__report_json(); the CLI prints that JSON as it is (--json), as a table,
 * as CSV or as an SVG chart, all from the JSON, so every output shows the
 * same figures. docs/report.md describes the JSON. */
#ifndef EBB_REPORT_FORMAT_H
#define EBB_REPORT_FORMAT_H

#include <stdio.h>

#include <jansson.h>

#include "report/report.h"

/* The report as JSON (a new reference), or NULL when out of memory. */
json_t *ebb__report_json(const struct ebb__report *r);

/* The table's columns: EBB__REPORT_TABLE_COLS headers, the group's name
 * first. */
#define EBB__REPORT_TABLE_COLS 12
extern const char *const ebb__report_table_headers[EBB__REPORT_TABLE_COLS];

/* Formats one group (or the total) of a JSON report as table cells:
 * `cells` receives EBB__REPORT_TABLE_COLS strings inside `buf` (`len` bytes,
 * 512 is plenty), the first being `name`. Returns 0 or EBB_EINVAL when
 * `figures` lacks a figure. */
int ebb__report_table_row(const json_t *figures, const char *name,
                          const char **cells, char *buf, size_t len);

/* Writes the report as CSV (RFC 4180): a header, one line per group and a
 * last line for the total (group "TOTAL"). Money in units of the report
 * currency, durations in seconds. Returns 0, or EBB_EINVAL when `report` is
 * not a report, EBB_EIO when writing fails. */
int ebb__report_write_csv(const json_t *report, FILE *out);

/* Writes the chart of a report built with opts.chart as a standalone SVG
 * document. Its time axis is the report's window, or with `fit` the span
 * of what the chart shows (instances' runs and spend; the whole window
 * when it shows nothing), so that a 7-hour job is not a sliver of a
 * 30-day default window. Returns 0, EBB_EINVAL when the report has no
 * chart data, or EBB_EIO. (report_svg.c) */
int ebb__report_write_svg(const json_t *report, int fit, FILE *out);

#endif
