/* ebb queue: the waiting jobs in the order ebbd considers them, and why
 * each is not running (docs/budgets.md "Priorities and fair share"). */
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "cli/cli.h"

static const char usage[] =
    "Usage: ebb queue [--team TEAM] [--json]\n"
    "\n"
    "Lists the waiting jobs (pending, waiting, paused, preempted) in the order\n"
    "ebbd considers them: higher priority first, then, in a team with\n"
    "fair_share, the owner who spent less this month against their share,\n"
    "then the earlier submitted. For each, what it waits for (quota, budget,\n"
    "price, policy_timer, capacity, retry, planning) and the reason ebbd\n"
    "recorded when it last looked. Another's job shows its place only.\n"
    "\n"
    "  --team TEAM  only this team's jobs\n"
    "  --json       print JSON instead of a table\n";

static const char *text(json_t *o, const char *key, const char *none)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : none;
}

int cmd_queue(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    json_t *r;
    int json;
    int code = cli_team_call(cli, argc, argv, usage, &r, &json);
    if (code != CLI_OK)
        return code;
    if (json) {
        cli_print_json(r);
        json_decref(r);
        return CLI_OK;
    }
    static const char *const headers[] = {"#", "JOB", "NAME", "TEAM", "PRIORITY",
                                          "STATE", "WAITS FOR", "REASON"};
    struct cli_table *t = cli_table_new(8, headers);
    cli_table_right(t, 0);
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(r, "queue"), i, j) {
        char place[24], prio[24];
        snprintf(place, sizeof(place), "%lld",
                 (long long)json_integer_value(json_object_get(j, "place")));
        snprintf(prio, sizeof(prio), "%lld",
                 (long long)json_integer_value(json_object_get(j, "priority")));
        const char *row[] = {
            place, text(j, "id", "?"), text(j, "name", "-"), text(j, "team", "-"),
            text(j, "priority_name", prio), text(j, "state", "?"),
            text(j, "waiting_for", "-"), text(j, "waiting_reason", ""),
        };
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout, "no job waits");
    json_decref(r);
    return CLI_OK;
}
