/* ebb report: spend and savings over a time window, from ebbd's ledger. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "base/currency.h"
#include "cli/cli.h"
#include "report/report_format.h"

static const char usage[] =
    "Usage: ebb report [--since 30d|DATE] [--until DATE]\n"
    "                  [--by job|team|provider|instance-type|day]\n"
    "                  [--currency CUR] [--json|--csv] [--svg FILE]\n"
    "\n"
    "Shows what was spent, what the same work would have cost on-demand and\n"
    "on spot started at once (the time lost to preemptions and restarts left\n"
    "out), the savings, preemptions, time lost, time spent checkpointing,\n"
    "fees, and plan advice (docs/report.md).\n"
    "\n"
    "  --since S     start: a duration back from now (30d, 12h) or a date\n"
    "                (2026-11-01) or ISO-8601 time; default 30d\n"
    "  --until U     end (exclusive): a date or ISO-8601 time; default now\n"
    "  --by G        one line per job, team, provider, instance-type or day\n"
    "  --currency C  report in C (rates from currency_rates: in ebb.yaml);\n"
    "                default USD\n"
    "  --json        print the report as JSON\n"
    "  --csv         print CSV (money in units, durations in seconds)\n"
    "  --svg FILE    also write a chart of prices, runs and cumulative spend\n";

/* Checks a boundary here so that a typo is named before ebbd is asked. */
static int check_when(const char *opt, const char *s, int ago)
{
    ebb_time_ms t;
    const char *why = NULL;
    if (ebb__report_parse_when(s, 0, ago, &t, &why) == 0)
        return 0;
    fprintf(stderr, "ebb report: %s \"%s\": %s\n", opt, s, why);
    return CLI_USAGE;
}

static ebb_micros cents(const json_t *o, const char *key)
{
    return ebb__report_round_cents(json_integer_value(json_object_get(o, key)));
}

static void print_table(const json_t *r)
{
    struct cli_table *t = cli_table_new(EBB__REPORT_TABLE_COLS,
                                        ebb__report_table_headers);
    for (size_t c = 1; c < EBB__REPORT_TABLE_COLS; c++)
        cli_table_right(t, c);
    const char *cells[EBB__REPORT_TABLE_COLS];
    char buf[640];
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(r, "groups"), i, g) {
        const char *key = json_string_value(json_object_get(g, "key"));
        if (ebb__report_table_row(g, key != NULL ? key : "", cells, buf,
                                  sizeof(buf)) == 0)
            cli_table_add(t, cells);
    }
    if (ebb__report_table_row(json_object_get(r, "total"), "TOTAL", cells, buf,
                              sizeof(buf)) == 0)
        cli_table_add(t, cells);
    printf("Report %s to %s, amounts in %s\n",
           json_string_value(json_object_get(r, "since")),
           json_string_value(json_object_get(r, "until")),
           json_string_value(json_object_get(r, "currency")));
    cli_table_print(t, stdout, NULL);

    const char *cur = json_string_value(json_object_get(r, "currency"));
    json_t *a;
    json_array_foreach(json_object_get(r, "advice"), i, a) {
        char spend[48], plan[48], saved[48];
        ebb__format_amount(cents(a, "spend_micros"), EBB__AMOUNT_DECIMALS,
                           cur, spend, sizeof(spend));
        ebb__format_amount(cents(a, "with_plan_micros"), EBB__AMOUNT_DECIMALS,
                           cur, plan, sizeof(plan));
        ebb__format_amount(cents(a, "savings_micros"), EBB__AMOUNT_DECIMALS,
                           cur, saved, sizeof(saved));
        printf("Advice: team %s would have paid %s instead of %s on plan %s "
               "over %d whole periods (saving %s, %.1f%%)\n",
               json_string_value(json_object_get(a, "team")), plan, spend,
               json_string_value(json_object_get(a, "plan")),
               (int)json_integer_value(json_object_get(a, "periods")), saved,
               json_number_value(json_object_get(a, "savings_pct")));
    }
    /* The ledger's own sums, exact: every micro-unit, always six
     * decimals, to compare with the store's rows. */
    json_array_foreach(json_object_get(r, "ledger"), i, a) {
        char amount[48];
        printf("Ledger: %lld rows, %s (exact)\n",
               (long long)json_integer_value(json_object_get(a, "rows")),
               ebb__format_amount(json_integer_value(json_object_get(a, "amount_micros")),
                                  6, json_string_value(json_object_get(a, "currency")),
                                  amount, sizeof(amount)));
    }
}

static int write_svg(const json_t *r, int fit, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "ebb report: cannot write %s: %s\n", path,
                strerror(errno));
        return CLI_FAIL;
    }
    int rc = ebb__report_write_svg(r, fit, f);
    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "ebb report: cannot write the chart to %s: %s\n", path,
                ebb_strerror(rc != 0 ? rc : EBB_EIO));
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cmd_report(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    static const struct option options[] = {
        {"since", required_argument, NULL, 's'},
        {"until", required_argument, NULL, 'u'},
        {"by", required_argument, NULL, 'b'},
        {"currency", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"csv", no_argument, NULL, 'v'},
        {"svg", required_argument, NULL, 'g'},
        {NULL, 0, NULL, 0},
    };
    json_t *params = json_object();
    int json = 0, csv = 0, code = CLI_OK;
    const char *svg = NULL;
    enum ebb__report_by by;
    optind = 0; /* glibc: fully re-initialise for this argv */
    for (;;) {
        int c = getopt_long(argc, argv, "", options, NULL);
        if (c == -1 || code != CLI_OK)
            break;
        switch (c) {
        case 's':
            code = check_when("--since", optarg, 1);
            json_object_set_new(params, "since", json_string(optarg));
            break;
        case 'u':
            code = check_when("--until", optarg, 0);
            json_object_set_new(params, "until", json_string(optarg));
            break;
        case 'b':
            if (ebb__report_by_parse(optarg, &by) != 0) {
                fprintf(stderr, "ebb report: --by \"%s\": not one of job, "
                        "team, provider, instance-type, day\n", optarg);
                code = CLI_USAGE;
            }
            json_object_set_new(params, "by", json_string(optarg));
            break;
        case 'c':
            json_object_set_new(params, "currency", json_string(optarg));
            break;
        case 'j':
            json = 1;
            break;
        case 'v':
            csv = 1;
            break;
        case 'g':
            svg = optarg;
            json_object_set_new(params, "chart", json_true());
            break;
        default:
            fputs(usage, stderr);
            code = CLI_USAGE;
        }
    }
    if (code == CLI_OK && optind < argc) {
        fprintf(stderr, "ebb report: unexpected argument \"%s\"\n%s",
                argv[optind], usage);
        code = CLI_USAGE;
    }
    if (code == CLI_OK && json && csv) {
        fprintf(stderr, "ebb report: --json and --csv exclude each other\n");
        code = CLI_USAGE;
    }
    json_t *r = NULL;
    if (code == CLI_OK)
        code = cli_call(cli, "report", params, &r);
    int fit = json_object_get(params, "since") == NULL &&
              json_object_get(params, "until") == NULL;
    json_decref(params);
    if (code != CLI_OK)
        return code;
    /* Without --since or --until the window is a default (30 days): the
     * chart's axis then spans what it shows instead. */
    if (svg != NULL)
        code = write_svg(r, fit, svg);
    if (json)
        cli_print_json(r);
    else if (csv && ebb__report_write_csv(r, stdout) != 0)
        code = CLI_FAIL;
    else if (!csv)
        print_table(r);
    json_decref(r);
    return code;
}
