/* ebb plan: a quote of a job's cost and finish time with their odds
 * (report/plan.h). Without --prices ebbd quotes it from its own market
 * (its `plan` method); with --prices this process quotes it from the
 * traces, as ebb backtest runs. Nothing is submitted or stored. */
#include <errno.h>
#include <stdint.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/trace.h>
#include <ebb/units.h>

#include "base/str.h"
#include "cli/cli.h"
#include "jobs/jobspec.h"
#include "report/plan.h"

static const char usage[] =
    "Usage: ebb plan JOB.yaml [--samples N] [--seed S] [--json]\n"
    "       ebb plan JOB.yaml --prices P.csv [--availability A.csv\n"
    "                [--align-availability]] --catalog C.csv [--at T]\n"
    "                [--policy NAME] [--samples N] [--seed S] [--json]\n"
    "\n"
    "Quotes what the job would cost and when it would finish, with the odds,\n"
    "without submitting it: the job's policy runs on ebb's engine on a\n"
    "virtual clock from now against N sampled futures (spot prices drawn\n"
    "from the forecast's p10..p90 band, outages from the preemption hazard),\n"
    "and the quote is the spread of what happened. Nothing is stored.\n"
    "\n"
    "Without --prices ebbd quotes it from its market and configuration. With\n"
    "it, this process quotes it from the traces (as ebb backtest):\n"
    "  --prices P.csv        price history; rows from T on are not read\n"
    "  --availability A.csv  spot capacity history (its outages give the\n"
    "                        hazard); default: no outages\n"
    "  --align-availability  A.csv is from another period: all of it counts\n"
    "  --catalog C.csv       on-demand prices and instance facts\n"
    "  --at T                when the job would be submitted (ISO-8601);\n"
    "                        default: the end of P.csv's data\n"
    "  --policy NAME         plan with this policy (default: the job's own,\n"
    "                        else deadline)\n"
    "\n"
    "  --samples N           sampled futures, 1 to 10000 (default 200)\n"
    "  --seed S              seed of the sampling, 0 to 2^63-1 (default 1):\n"
    "                        the same inputs and seed give the same quote\n"
    "  --json                print {cost_usd: {p10, p50, p90}, finish: {p10,\n"
    "                        p50, p90}, p_deadline, p_budget,\n"
    "                        cheapest_deadline, budget_95, samples, ...}\n"
    "\n"
    "Exit codes: 0 done, 1 failure (e.g. ebbd not running), 2 bad input.\n";

static void line(const char *what, const char *value)
{
    printf("%-18s %s\n", what, value);
}

static const char *str_or(const json_t *v, const char *none)
{
    return json_is_string(v) ? json_string_value(v) : none;
}

static void print_quote(const json_t *q)
{
    char buf[160];
    const json_t *c = json_object_get(q, "cost_usd"), *f = json_object_get(q, "finish");
    printf("%s with %s, submitted %s (%lld samples)\n",
           str_or(json_object_get(q, "job"), "?"), str_or(json_object_get(q, "policy"), "?"),
           str_or(json_object_get(q, "at"), "?"),
           (long long)json_integer_value(json_object_get(q, "samples")));
    snprintf(buf, sizeof(buf), "%.2f / %.2f / %.2f USD",
             json_number_value(json_object_get(c, "p10")),
             json_number_value(json_object_get(c, "p50")),
             json_number_value(json_object_get(c, "p90")));
    line("cost p10/p50/p90", buf);
    snprintf(buf, sizeof(buf), "%s / %s / %s",
             str_or(json_object_get(f, "p10"), "unfinished"),
             str_or(json_object_get(f, "p50"), "unfinished"),
             str_or(json_object_get(f, "p90"), "unfinished"));
    line("finish p10/p50/p90", buf);
    const json_t *pd = json_object_get(q, "p_deadline"), *pb = json_object_get(q, "p_budget");
    if (json_is_number(pd)) {
        snprintf(buf, sizeof(buf), "%.0f%% (deadline %s)", 100 * json_number_value(pd),
                 str_or(json_object_get(q, "deadline"), "?"));
        line("meets deadline", buf);
    }
    if (json_is_number(pb)) {
        snprintf(buf, sizeof(buf), "%.0f%% (budget %.2f USD)", 100 * json_number_value(pb),
                 json_number_value(json_object_get(q, "budget_usd")));
        line("within budget", buf);
    }
    line("cheapest deadline", str_or(json_object_get(q, "cheapest_deadline"), "none"));
    snprintf(buf, sizeof(buf), "%.2f USD", json_number_value(json_object_get(q, "budget_95")));
    line("budget for 95%", buf);
}

struct args {
    const char *job, *prices, *availability, *catalog, *policy;
    int align, json, have_at;
    ebb_time_ms at;
    unsigned samples;
    uint64_t seed;
};

static int bad(const char *flag, const char *value, const char *what)
{
    fprintf(stderr, "ebb plan: %s: \"%s\" is not %s\n", flag, value, what);
    return CLI_USAGE;
}

static int parse(int argc, char **argv, struct args *a)
{
    static const struct option options[] = {
        {"samples", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"prices", required_argument, NULL, 'p'},
        {"availability", required_argument, NULL, 'a'},
        {"align-availability", no_argument, NULL, 'A'},
        {"catalog", required_argument, NULL, 'c'},
        {"at", required_argument, NULL, 't'},
        {"policy", required_argument, NULL, 'P'},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "", options, NULL);
        if (c == -1)
            break;
        char *end = NULL;
        unsigned long long v;
        switch (c) {
        case 'n':
            errno = 0;
            v = strtoull(optarg, &end, 10);
            if (end == optarg || *end != '\0' || errno != 0 || optarg[0] == '-' ||
                v < EBB__PLAN_SAMPLES_MIN || v > EBB__PLAN_SAMPLES_MAX)
                return bad("--samples", optarg, "a number of samples from 1 to 10000");
            a->samples = (unsigned)v;
            break;
        case 's':
            errno = 0;
            v = strtoull(optarg, &end, 10);
            if (end == optarg || *end != '\0' || errno != 0 || optarg[0] == '-' ||
                v > INT64_MAX)
                return bad("--seed", optarg, "an integer from 0 to 9223372036854775807");
            a->seed = v;
            break;
        case 't':
            if (ebb_parse_time(optarg, &a->at) != 0)
                return bad("--at", optarg, "a time (example: 2020-02-01T00:00:00Z)");
            a->have_at = 1;
            break;
        case 'j': a->json = 1; break;
        case 'p': a->prices = optarg; break;
        case 'a': a->availability = optarg; break;
        case 'A': a->align = 1; break;
        case 'c': a->catalog = optarg; break;
        case 'P': a->policy = optarg; break;
        default:
            fputs(usage, stderr);
            return CLI_USAGE;
        }
    }
    const char *why = optind >= argc ? "JOB.yaml is required"
                    : optind + 1 < argc ? "one JOB.yaml only"
                    : a->prices == NULL && (a->availability || a->catalog || a->have_at ||
                                            a->policy || a->align)
                        ? "--availability, --align-availability, --catalog, --at "
                          "and --policy go with --prices"
                    : a->prices != NULL && a->catalog == NULL ? "--catalog is required "
                                                                "with --prices"
                    : NULL;
    if (why != NULL) {
        fprintf(stderr, "ebb plan: %s\n", why);
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    a->job = argv[optind];
    return CLI_OK;
}

/* In this process, from the traces: they are the user's files. */
static int from_traces(const struct args *a, json_t **q)
{
    struct ebb_price_trace *prices = NULL;
    struct ebb_avail_trace *avail = NULL;
    struct ebb__job_spec spec = {0};
    struct ebb_diag d = {{0}};
    int rc = ebb__jobspec_load_file(a->job, &spec, &d);
    if (rc == 0)
        rc = ebb_price_trace_load(a->prices, &prices, &d);
    if (rc == 0 && a->availability != NULL)
        rc = ebb_avail_trace_load(a->availability, &avail, &d);
    if (rc == 0) {
        struct ebb__plan_options o = {
            .prices = prices, .availability = avail, .availability_replayed = a->align,
            .catalog = a->catalog, .job = &spec, .policy = a->policy,
            .now = a->have_at ? a->at : prices->last_at + 1,
            .samples = a->samples, .seed = a->seed,
        };
        rc = ebb__plan_run(&o, q, &d);
    }
    ebb__jobspec_free(&spec);
    ebb_price_trace_free(prices);
    ebb_avail_trace_free(avail);
    if (rc != 0) {
        fprintf(stderr, "ebb plan: %s\n", d.msg[0] ? d.msg : ebb_strerror(rc));
        return rc == EBB_ENOMEM ? CLI_FAIL : CLI_USAGE;
    }
    return CLI_OK;
}

int cmd_plan(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    struct args a = {.samples = EBB__PLAN_SAMPLES_DEFAULT, .seed = 1};
    int rc = parse(argc, argv, &a);
    if (rc != CLI_OK)
        return rc;
    json_t *q = NULL;
    if (a.prices != NULL) {
        rc = from_traces(&a, &q);
    } else {
        json_t *params = cli_file_params("ebb plan", a.job);
        if (params == NULL)
            return CLI_USAGE;
        json_object_set_new(params, "samples", json_integer(a.samples));
        json_object_set_new(params, "seed", json_integer((json_int_t)a.seed));
        rc = cli_call(cli, "plan", params, &q);
        json_decref(params);
    }
    if (rc != CLI_OK)
        return rc;
    if (a.json)
        cli_print_json(q);
    else
        print_quote(q);
    json_decref(q);
    return CLI_OK;
}
