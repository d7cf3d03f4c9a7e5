/* ebb jobs: the jobs ebbd manages. */
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "base/currency.h"
#include "cli/cli.h"

static const char usage[] =
    "Usage: ebb jobs [--all] [--json]\n"
    "\n"
    "Lists unfinished jobs, newest first: id, name, state, policy, progress\n"
    "(work done of the job's reference work), spend, preemptions and, for a\n"
    "job that waits, why (JSON: waiting_reason).\n"
    "\n"
    "  --all   include finished jobs\n"
    "  --json  print JSON instead of a table\n";

int cmd_jobs(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    int all = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--all") == 0) {
            all = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "ebb jobs: unexpected argument \"%s\"\n%s", argv[i], usage);
            return CLI_USAGE;
        }
    }
    json_t *params = json_pack("{s:b}", "all", all);
    json_t *r;
    int code = cli_call(cli, "jobs", params, &r);
    json_decref(params);
    if (code != CLI_OK)
        return code;
    if (json) {
        cli_print_json(r);
        json_decref(r);
        return CLI_OK;
    }
    static const char *const headers[] = {"ID", "NAME", "STATE", "POLICY",
                                          "PROGRESS", "SPENT", "PREEMPTIONS",
                                          "SUBMITTED", "WAITING BECAUSE"};
    struct cli_table *t = cli_table_new(9, headers);
    cli_table_right(t, 4);
    cli_table_right(t, 5);
    cli_table_right(t, 6);
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(r, "jobs"), i, j) {
        char progress[16], spent[48], preempt[16], submitted[40];
        json_int_t work = json_integer_value(json_object_get(j, "work_ms"));
        json_int_t done = json_integer_value(json_object_get(j, "work_done_ms"));
        snprintf(progress, sizeof(progress), "%.0f%%",
                 work > 0 ? 100.0 * (double)done / (double)work : 0.0);
        ebb__format_amount(json_integer_value(json_object_get(j, "spent_micros")),
                           EBB__AMOUNT_DECIMALS,
                           json_string_value(json_object_get(j, "currency")), spent,
                           sizeof(spent));
        snprintf(preempt, sizeof(preempt), "%lld",
                 (long long)json_integer_value(json_object_get(j, "preemptions")));
        ebb_format_time(json_integer_value(json_object_get(j, "submitted_at")),
                         submitted, sizeof(submitted));
        const char *row[] = {
            json_string_value(json_object_get(j, "id")),
            json_string_value(json_object_get(j, "name")),
            json_string_value(json_object_get(j, "state")),
            json_string_value(json_object_get(j, "policy")),
            progress, spent, preempt, submitted,
            json_string_value(json_object_get(j, "waiting_reason")),
        };
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout, all ? "no jobs yet (submit one with: ebb submit JOB.yaml)"
                                   : "no unfinished jobs (ebb jobs --all shows "
                                     "finished ones)");
    json_decref(r);
    return CLI_OK;
}
