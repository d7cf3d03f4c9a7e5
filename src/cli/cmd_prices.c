/* ebb prices: the latest observed price of every series ebbd stores, or
 * with --history every observation of the matching series in a window. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "base/currency.h"
#include "cli/cli.h"

static const char usage[] =
    "Usage: ebb prices [--provider P] [--type T] [--zone Z] [--json]\n"
    "       ebb prices --history [--since S] [--until U] [--provider P]\n"
    "                  [--type T] [--zone Z] [--json]\n"
    "\n"
    "Shows the latest price per series (provider, region, zone, instance\n"
    "type, product, market) that ebbd has stored, with when it was observed.\n"
    "With --history, every observation of each matching series from S to U\n"
    "instead, the rows of one series together, oldest first.\n"
    "\n"
    "  --provider P  only provider P (e.g. aws)\n"
    "  --type T      only instance type T (e.g. p3.2xlarge)\n"
    "  --zone Z      only zone Z (e.g. us-east-1a)\n"
    "  --history     every observation, not only the latest\n"
    "  --since S     history from S: a duration back from ebbd's now (7d,\n"
    "                12h), a date (2020-01-06) or an ISO-8601 time\n"
    "                (default: 7d)\n"
    "  --until U     history up to U (excluded): a date or an ISO-8601 time\n"
    "                (default: ebbd's now, included)\n"
    "  --json        print JSON instead of a table\n";

/* One table row: the series' fields from `series`, the price and time
 * from `obs` (the same object for a latest price). */
static void add_row(struct cli_table *t, json_t *series, json_t *obs)
{
    char price[48];
    ebb__format_amount(json_integer_value(json_object_get(obs, "price_micros")),
                       EBB__RATE_DECIMALS, NULL, price, sizeof(price));
    const char *row[] = {
        json_string_value(json_object_get(series, "provider")),
        json_string_value(json_object_get(series, "region")),
        json_string_value(json_object_get(series, "zone")),
        json_string_value(json_object_get(series, "instance_type")),
        json_string_value(json_object_get(series, "market")),
        price,
        json_string_value(json_object_get(series, "currency")),
        json_string_value(json_object_get(obs, "observed_at")),
    };
    cli_table_add(t, row);
}

int cmd_prices(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    static const struct option options[] = {
        {"provider", required_argument, NULL, 'p'},
        {"type", required_argument, NULL, 't'},
        {"zone", required_argument, NULL, 'z'},
        {"history", no_argument, NULL, 'h'},
        {"since", required_argument, NULL, 's'},
        {"until", required_argument, NULL, 'u'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    json_t *params = json_object();
    int json = 0, history = 0;
    optind = 0; /* glibc: fully re-initialise for this argv */
    for (;;) {
        int c = getopt_long(argc, argv, "", options, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'p':
            json_object_set_new(params, "provider", json_string(optarg));
            break;
        case 't':
            json_object_set_new(params, "instance_type", json_string(optarg));
            break;
        case 'z':
            json_object_set_new(params, "zone", json_string(optarg));
            break;
        case 'h':
            history = 1;
            json_object_set_new(params, "history", json_true());
            break;
        case 's':
            json_object_set_new(params, "since", json_string(optarg));
            break;
        case 'u':
            json_object_set_new(params, "until", json_string(optarg));
            break;
        case 'j':
            json = 1;
            break;
        default:
            fputs(usage, stderr);
            json_decref(params);
            return CLI_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ebb prices: unexpected argument \"%s\"\n%s", argv[optind], usage);
        json_decref(params);
        return CLI_USAGE;
    }
    if (!history && (json_object_get(params, "since") != NULL ||
                     json_object_get(params, "until") != NULL)) {
        fprintf(stderr, "ebb prices: --since and --until need --history\n%s", usage);
        json_decref(params);
        return CLI_USAGE;
    }
    json_t *r;
    int code = cli_call(cli, "prices", params, &r);
    if (code != CLI_OK) {
        json_decref(params);
        return code;
    }
    if (json) {
        cli_print_json(r);
        json_decref(r);
        json_decref(params);
        return CLI_OK;
    }
    static const char *const headers[] = {"PROVIDER", "REGION", "ZONE", "TYPE",
                                          "MARKET", "PRICE/H", "CURRENCY",
                                          "OBSERVED"};
    struct cli_table *t = cli_table_new(8, headers);
    cli_table_right(t, 5);
    size_t i, k;
    json_t *p, *pt;
    if (history)
        json_array_foreach(json_object_get(r, "series"), i, p)
            json_array_foreach(json_object_get(p, "points"), k, pt)
                add_row(t, p, pt);
    else
        json_array_foreach(json_object_get(r, "prices"), i, p)
            add_row(t, p, p);
    /* With a filter, nothing may match it while ebbd has other prices:
     * say which, rather than that no provider is configured. */
    int filtered = json_object_get(params, "provider") != NULL ||
                   json_object_get(params, "instance_type") != NULL ||
                   json_object_get(params, "zone") != NULL;
    const char *none =
        history ? (filtered ? "no prices observed in that window match "
                              "--provider, --type and --zone"
                            : "no prices observed in that window")
        : filtered ? "no prices match --provider, --type and --zone (ebb "
                     "prices without them lists every series)"
                   : "no prices yet (configure a provider under providers: in "
                     "ebb.yaml)";
    cli_table_print(t, stdout, none);
    json_decref(r);
    json_decref(params);
    return CLI_OK;
}
