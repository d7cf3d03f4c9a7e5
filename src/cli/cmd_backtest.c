/* ebb backtest: replay a workload against real price traces with the live
 * engine on a virtual clock (see src/report/backtest.h). Runs in this process. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebb/config.h>

#include "base/str.h"
#include "cli/cli.h"
#include "report/backtest.h"

static const char usage[] =
    "Usage: ebb backtest --prices P.csv [--availability A.csv [--align-availability]]\n"
    "                    --catalog C.csv --workload W.yaml [--policy NAME] [--seed N]\n"
    "                    [--preemption-hazard X] [--billing RULE] [--json]\n"
    "\n"
    "Runs the workload W.yaml (jobs: a list of job specs, each with submit:)\n"
    "through ebb's engine against the sim market replaying the price trace\n"
    "P.csv (and spot capacity from A.csv), on a virtual clock, and reports\n"
    "each job's cost against running it on demand and against the hindsight\n"
    "optimum (the oracle).\n"
    "\n"
    "  --prices P.csv           price trace (timestamp_utc,provider,region,zone,\n"
    "                           instance_type,product,price_usd_per_hour)\n"
    "  --availability A.csv     spot capacity (timestamp_utc,provider,zone,\n"
    "                           instance_type,available); default unlimited.\n"
    "                           Used as recorded: a job window it does not\n"
    "                           cover is an error (exit 2)\n"
    "  --align-availability     replay A.csv over P.csv's period when they do\n"
    "                           not overlap (first row at the prices' first,\n"
    "                           repeated back to back); said on stderr and in\n"
    "                           the JSON (availability_alignment)\n"
    "  --catalog C.csv          on-demand prices and instance facts\n"
    "  --workload W.yaml        the jobs to run\n"
    "  --policy NAME            run every job with this policy (default: each\n"
    "                           job's policy:, else renewal)\n"
    "  --seed N                 seed of the random preemption model (default 1)\n"
    "  --preemption-hazard X    random preemptions per spot instance-hour\n"
    "                           (default 0: only the availability trace preempts)\n"
    "  --billing RULE           per-second (default: the price in effect, per\n"
    "                           second) or aws-hourly (the price at the start of\n"
    "                           each instance-hour, billed per second)\n"
    "  --json                   print one JSON object\n"
    "\n"
    "A price series holds from its last row to the end of the run; a job\n"
    "submitted before every series it may use begins is an error (exit 2).\n"
    "\n"
    "Exit codes: 0 done, 1 failure, 2 bad input (the message names file:line).\n";

/* Costs in tables: cents are what people compare; --json keeps the exact
 * micro-unit figures. */
static const char *money(double usd, char *buf, size_t len)
{
    if (usd < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.2f USD", usd);
    return buf;
}

/* A percentage with one decimal, or "-" for null; returns whether there
 * was one. */
static int pct(const json_t *v, char *buf, size_t len)
{
    if (!json_is_number(v)) {
        snprintf(buf, len, "-");
        return 0;
    }
    snprintf(buf, len, "%.1f%%", json_number_value(v));
    return 1;
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : -1;
}

static void print_table(json_t *r)
{
    static const char *const headers[] = {"JOB", "POLICY", "COST", "ON-DEMAND",
                                          "ORACLE", "SAVED", "DEADLINE",
                                          "PREEMPT", "RESTARTS", "FINISHED"};
    struct cli_table *t = cli_table_new(10, headers);
    for (size_t c = 2; c <= 5; c++)
        cli_table_right(t, c);
    cli_table_right(t, 7);
    cli_table_right(t, 8);
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(r, "jobs"), i, j) {
        char cost[40], od[40], oracle[40], saved[16], pre[16], res[16];
        money(num(j, "cost_usd"), cost, sizeof(cost));
        money(num(j, "on_demand_cost_usd"), od, sizeof(od));
        money(num(j, "oracle_cost_usd"), oracle, sizeof(oracle));
        /* An unfinished job has no saving yet (its cost is what it spent
         * so far): the JSON says null, the table "-". */
        pct(json_object_get(j, "savings_pct"), saved, sizeof(saved));
        snprintf(pre, sizeof(pre), "%lld",
                 (long long)json_integer_value(json_object_get(j, "preemptions")));
        snprintf(res, sizeof(res), "%lld",
                 (long long)json_integer_value(json_object_get(j, "restarts")));
        const char *fin = json_string_value(json_object_get(j, "finished_at"));
        const char *row[] = {
            json_string_value(json_object_get(j, "name")),
            json_string_value(json_object_get(j, "policy")),
            cost, od, oracle, saved,
            json_is_true(json_object_get(j, "deadline_met")) ? "met" : "MISSED",
            pre, res, fin ? fin : json_string_value(json_object_get(j, "state")),
        };
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout, "no jobs");
    double total = num(r, "total_cost_usd"), od = num(r, "total_on_demand_cost_usd");
    double oracle = num(r, "total_oracle_cost_usd");
    char a[40], b[40], c[40], saved[16];
    printf("\n%s: %s, on-demand %s", json_string_value(json_object_get(r, "policy")),
           money(total, a, sizeof(a)), money(od, b, sizeof(b)));
    size_t unfinished = 0, n_jobs = json_array_size(json_object_get(r, "jobs"));
    json_array_foreach(json_object_get(r, "jobs"), i, j)
        if (strcmp(json_string_value(json_object_get(j, "state")), "succeeded") != 0)
            unfinished++;
    if (pct(json_object_get(r, "savings_pct"), saved, sizeof(saved)))
        printf(" (saved %s%s)", saved, unfinished ? " on the finished jobs" : "");
    if (oracle > 0)
        printf(", oracle %s (gap %+.1f%%)", money(oracle, c, sizeof(c)),
               100.0 * (total - oracle) / oracle);
    if (unfinished > 0)
        printf("; %zu of %zu jobs unfinished (their cost so far, no saving)",
               unfinished, n_jobs);
    printf("\n");
}

int cmd_backtest(struct cli *cli, int argc, char **argv)
{
    (void)cli;
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    static const struct option options[] = {
        {"prices", required_argument, NULL, 'p'},
        {"availability", required_argument, NULL, 'a'},
        {"align-availability", no_argument, NULL, 'A'},
        {"catalog", required_argument, NULL, 'c'},
        {"workload", required_argument, NULL, 'w'},
        {"policy", required_argument, NULL, 'P'},
        {"seed", required_argument, NULL, 's'},
        {"preemption-hazard", required_argument, NULL, 'H'},
        {"billing", required_argument, NULL, 'b'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    struct ebb__backtest_options o = {.seed = 1};
    int json = 0;
    optind = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "", options, NULL);
        if (c == -1)
            break;
        char *end = NULL;
        switch (c) {
        case 'p': o.prices = optarg; break;
        case 'a': o.availability = optarg; break;
        case 'A': o.align_availability = 1; break;
        case 'c': o.catalog = optarg; break;
        case 'w': o.workload = optarg; break;
        case 'P': o.policy = optarg; break;
        case 'j': json = 1; break;
        case 'b':
            if (strcmp(optarg, "per-second") != 0 && strcmp(optarg, "aws-hourly") != 0) {
                fprintf(stderr, "ebb backtest: --billing: \"%s\" is not per-second "
                        "or aws-hourly\n", optarg);
                return CLI_USAGE;
            }
            o.billing = optarg;
            break;
        case 's':
            /* The seed becomes the sim's seed key, an integer of its
             * configuration table, so it has that table's bounds. */
            errno = 0;
            o.seed = strtoll(optarg, &end, 10);
            if (end == optarg || *end != '\0' || errno == ERANGE ||
                o.seed > EBB_CFG_NUMBER_MAX || o.seed < -EBB_CFG_NUMBER_MAX) {
                fprintf(stderr, "ebb backtest: --seed: \"%s\" is not an integer "
                        "from %d to %d\n", optarg, -EBB_CFG_NUMBER_MAX,
                        EBB_CFG_NUMBER_MAX);
                return CLI_USAGE;
            }
            break;
        case 'H':
            o.preemption_hazard = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || o.preemption_hazard < 0) {
                fprintf(stderr, "ebb backtest: --preemption-hazard: \"%s\" is not "
                        "a non-negative number (example: 0.05)\n", optarg);
                return CLI_USAGE;
            }
            break;
        default:
            fputs(usage, stderr);
            return CLI_USAGE;
        }
    }
    const char *missing = !o.prices ? "--prices" : !o.catalog ? "--catalog"
                        : !o.workload ? "--workload" : NULL;
    if (missing != NULL || optind < argc) {
        if (missing != NULL)
            fprintf(stderr, "ebb backtest: %s is required\n", missing);
        else
            fprintf(stderr, "ebb backtest: unexpected argument \"%s\"\n", argv[optind]);
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    o.progress = isatty(STDERR_FILENO) ? stderr : NULL;
    o.notes = stderr;
    json_t *r;
    struct ebb_diag d = {{0}};
    int rc = ebb__backtest_run(&o, &r, &d);
    if (rc != 0) {
        fprintf(stderr, "ebb backtest: %s\n", d.msg[0] ? d.msg : ebb_strerror(rc));
        /* Everything a backtest reads is input the user gave: a file that
         * cannot be read is bad input like one that cannot be parsed. */
        return rc == EBB_ENOMEM ? CLI_FAIL : CLI_USAGE;
    }
    if (json) {
        char *text = json_dumps(r, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                       JSON_REAL_PRECISION(EBB__JSON_REAL_DIGITS));
        if (text != NULL)
            puts(text);
        free(text);
    } else {
        print_table(r);
    }
    json_decref(r);
    return CLI_OK;
}
