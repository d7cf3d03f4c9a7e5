/* ebb prices: the latest observed price of every series ebbd stores. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "units.h"

static const char usage[] =
    "Usage: ebb prices [--provider P] [--type T] [--zone Z] [--json]\n"
    "\n"
    "Shows the latest price per series (provider, region, zone, instance\n"
    "type, product, market) that ebbd has stored, with when it was observed.\n"
    "\n"
    "  --provider P  only provider P (e.g. aws)\n"
    "  --type T      only instance type T (e.g. p3.2xlarge)\n"
    "  --zone Z      only zone Z (e.g. us-east-1a)\n"
    "  --json        print JSON instead of a table\n";

int cmd_prices(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    static const struct option options[] = {
        {"provider", required_argument, NULL, 'p'},
        {"type", required_argument, NULL, 't'},
        {"zone", required_argument, NULL, 'z'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    json_t *params = json_object();
    int json = 0;
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
    json_t *r;
    int code = cli_call(cli, "prices", params, &r);
    json_decref(params);
    if (code != CLI_OK)
        return code;
    if (json) {
        cli_print_json(r);
        json_decref(r);
        return CLI_OK;
    }
    static const char *const headers[] = {"PROVIDER", "REGION", "ZONE", "TYPE",
                                          "MARKET", "PRICE/H", "CURRENCY",
                                          "OBSERVED"};
    struct cli_table *t = cli_table_new(8, headers);
    cli_table_right(t, 5);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(r, "prices"), i, p) {
        char price[48];
        ebb__format_money(json_integer_value(json_object_get(p, "price_micros")),
                          NULL, price, sizeof(price));
        const char *row[] = {
            json_string_value(json_object_get(p, "provider")),
            json_string_value(json_object_get(p, "region")),
            json_string_value(json_object_get(p, "zone")),
            json_string_value(json_object_get(p, "instance_type")),
            json_string_value(json_object_get(p, "market")),
            price,
            json_string_value(json_object_get(p, "currency")),
            json_string_value(json_object_get(p, "observed_at")),
        };
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout, "no prices yet (configure a provider under "
                               "providers: in ebb.yaml)");
    json_decref(r);
    return CLI_OK;
}
