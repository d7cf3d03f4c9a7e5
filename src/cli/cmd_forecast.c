/* ebb forecast: price forecasts of every series, from a CSV trace (in this
 * process) or from ebbd's store (its `forecast` method). Both build the
 * same document with forecast_report.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/trace.h>
#include <ebb/units.h>

#include "base/str.h"
#include "cli/cli.h"
#include "report/forecast_report.h"

static const char usage[] =
    "Usage: ebb forecast [--prices P.csv] [--at T] [--horizon D] [--step D]\n"
    "                    [--provider P] [--type T] [--zone Z] [--json]\n"
    "\n"
    "Forecasts the spot price of every series: the median (p50) and a\n"
    "p10..p90 band of the price in effect at each step after T, from the\n"
    "history before T only. Without --prices the history is what ebbd has\n"
    "stored (the last 28 days before T); with it, the CSV price trace\n"
    "P.csv, read by this process (no daemon needed). A series with no\n"
    "price before T is left out.\n"
    "\n"
    "  --prices P.csv  price trace (timestamp_utc,provider,region,zone,\n"
    "                  instance_type,product,price_usd_per_hour)\n"
    "  --at T          forecast origin, ISO-8601 (e.g. 2020-01-01T00:00:00Z);\n"
    "                  default: with --prices the end of the file's data plus\n"
    "                  1ms (so its last row counts), else ebbd's now\n"
    "  --horizon D     how far ahead (default 24h)\n"
    "  --step D        time between points (default 1h); at most 10000 points\n"
    "  --provider P    only provider P (e.g. aws)\n"
    "  --type T        only instance type T (e.g. p3.2xlarge)\n"
    "  --zone Z        only zone Z (e.g. us-east-1a)\n"
    "  --json          print {\"forecasts\":[{provider, region, zone,\n"
    "                  instance_type, product, points:[{t, p10, p50, p90}]}]}\n"
    "                  with prices in USD per hour\n"
    "\n"
    "The table shows per series the current price, the next troughs (the\n"
    "lowest local minima of p50) and a sparkline of p50.\n"
    "\n"
    "Exit codes: 0 done, 1 failure (e.g. ebbd not running), 2 bad input.\n";

static void print_doc(json_t *doc, int json)
{
    if (!json) {
        ebb__forecast_report_print(doc, stdout, "no series to forecast");
        return;
    }
    /* Prices print back as written ("0.9", not "0.90000000000000002"). */
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                     JSON_REAL_PRECISION(EBB__JSON_REAL_DIGITS));
    if (text != NULL)
        puts(text);
    free(text);
}

/* Runs in this process: a trace is the user's file, and reading it is the
 * CLI's work, not ebbd's. */
static int from_trace(const char *path, const struct ebb__price_filter *f,
                      int have_at, ebb_time_ms at, ebb_dur_ms step,
                      size_t n_steps, int json)
{
    struct ebb_price_trace *t = NULL;
    struct ebb_diag d = {{0}};
    int rc = ebb_price_trace_load(path, &t, &d);
    if (rc != 0) {
        fprintf(stderr, "ebb forecast: %s\n", d.msg[0] ? d.msg : ebb_strerror(rc));
        return rc == EBB_ENOMEM ? CLI_FAIL : CLI_USAGE;
    }
    struct ebb__forecast_opts o = {
        .origin = have_at ? at : t->last_at + 1,
        .step = step,
        .n_steps = n_steps,
    };
    json_t *doc = NULL;
    rc = ebb__forecast_report_trace(t, f, &o, &doc, &d);
    ebb_price_trace_free(t);
    if (rc != 0) {
        fprintf(stderr, "ebb forecast: %s\n", d.msg[0] ? d.msg : ebb_strerror(rc));
        return rc == EBB_ENOMEM ? CLI_FAIL : CLI_USAGE;
    }
    print_doc(doc, json);
    json_decref(doc);
    return CLI_OK;
}

static int bad_flag(const char *flag, const char *value, const char *what,
                    const char *why)
{
    fprintf(stderr, "ebb forecast: %s: \"%s\" is not %s%s%s\n", flag, value,
            what, why != NULL ? ": " : "", why != NULL ? why : "");
    return CLI_USAGE;
}

int cmd_forecast(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    static const struct option options[] = {
        {"prices", required_argument, NULL, 'P'},
        {"at", required_argument, NULL, 'a'},
        {"horizon", required_argument, NULL, 'H'},
        {"step", required_argument, NULL, 's'},
        {"provider", required_argument, NULL, 'p'},
        {"type", required_argument, NULL, 't'},
        {"zone", required_argument, NULL, 'z'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    const char *prices = NULL, *horizon_arg = "24h", *step_arg = "1h";
    struct ebb__price_filter f = {0};
    ebb_time_ms at = 0;
    int have_at = 0, json = 0;
    optind = 0; /* glibc: fully re-initialise for this argv */
    for (;;) {
        int c = getopt_long(argc, argv, "", options, NULL);
        if (c == -1)
            break;
        const char *why = NULL;
        switch (c) {
        case 'P': prices = optarg; break;
        case 'H': horizon_arg = optarg; break;
        case 's': step_arg = optarg; break;
        case 'p': f.provider = optarg; break;
        case 't': f.instance_type = optarg; break;
        case 'z': f.zone = optarg; break;
        case 'j': json = 1; break;
        case 'a':
            if (ebb_parse_time_why(optarg, &at, &why) != 0)
                return bad_flag("--at", optarg,
                                "a time (example: 2020-01-01T00:00:00Z)", why);
            have_at = 1;
            break;
        default:
            fputs(usage, stderr);
            return CLI_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ebb forecast: unexpected argument \"%s\"\n%s", argv[optind], usage);
        return CLI_USAGE;
    }
    ebb_dur_ms horizon, step;
    const char *why = NULL;
    if (ebb_parse_duration_why(horizon_arg, &horizon, &why) != 0)
        return bad_flag("--horizon", horizon_arg, "a duration (example: 24h)", why);
    if (ebb_parse_duration_why(step_arg, &step, &why) != 0)
        return bad_flag("--step", step_arg, "a duration (example: 1h)", why);
    size_t n_steps = 0;
    if (ebb__forecast_count_steps(horizon, step, &n_steps, &why) != 0) {
        fprintf(stderr, "ebb forecast: --horizon %s --step %s: %s\n", horizon_arg,
                step_arg, why);
        return CLI_USAGE;
    }
    if (prices != NULL)
        return from_trace(prices, &f, have_at, at, step, n_steps, json);

    json_t *params = json_pack("{s:I,s:I}", "horizon", (json_int_t)horizon,
                               "step", (json_int_t)step);
    if (params == NULL) {
        fputs("ebb forecast: out of memory\n", stderr);
        return CLI_FAIL;
    }
    if (have_at)
        json_object_set_new(params, "at", json_integer(at));
    if (f.provider != NULL)
        json_object_set_new(params, "provider", json_string(f.provider));
    if (f.instance_type != NULL)
        json_object_set_new(params, "instance_type", json_string(f.instance_type));
    if (f.zone != NULL)
        json_object_set_new(params, "zone", json_string(f.zone));
    json_t *r;
    int code = cli_call(cli, "forecast", params, &r);
    json_decref(params);
    if (code != CLI_OK)
        return code;
    print_doc(r, json);
    json_decref(r);
    return CLI_OK;
}
