/* ebb notifications: the outbox's deliveries (docs/notify.md). */
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "cli/cli.h"

static const char usage[] =
    "Usage: ebb notifications [--failed] [--json]\n"
    "\n"
    "Lists the newest notification deliveries, newest first: event id,\n"
    "type, job, channel, status (pending, delivered, dead), attempts and\n"
    "the last error. An admin sees all; others see their own jobs'.\n"
    "\n"
    "  --failed  only dead letters: events whose channel never took them\n"
    "  --json    print JSON instead of a table\n";

int cmd_notifications(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    int failed = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--failed") == 0) {
            failed = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "ebb notifications: unexpected argument \"%s\"\n%s",
                    argv[i], usage);
            return CLI_USAGE;
        }
    }
    json_t *params = json_pack("{s:b}", "failed", failed);
    json_t *r;
    int code = cli_call(cli, "notifications", params, &r);
    json_decref(params);
    if (code != CLI_OK)
        return code;
    if (json) {
        cli_print_json(r);
        json_decref(r);
        return CLI_OK;
    }
    static const char *const headers[] = {"EVENT", "TYPE", "JOB", "CHANNEL",
                                          "STATUS", "ATTEMPTS", "CREATED",
                                          "LAST ERROR"};
    struct cli_table *t = cli_table_new(8, headers);
    cli_table_right(t, 5);
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(r, "notifications"), i, j) {
        char attempts[16], created[40];
        snprintf(attempts, sizeof(attempts), "%lld",
                 (long long)json_integer_value(json_object_get(j, "attempts")));
        ebb_format_time(json_integer_value(json_object_get(j, "created_at")),
                        created, sizeof(created));
        const char *job = json_string_value(json_object_get(j, "job_id"));
        const char *err = json_string_value(json_object_get(j, "last_error"));
        const char *row[] = {
            json_string_value(json_object_get(j, "event_id")),
            json_string_value(json_object_get(j, "type")),
            job != NULL ? job : "-",
            json_string_value(json_object_get(j, "channel")),
            json_string_value(json_object_get(j, "status")),
            attempts, created, err != NULL ? err : "",
        };
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout, failed ? "no dead letters" :
                    "no notifications yet (channels: notify: in ebb.yaml)");
    json_decref(r);
    return CLI_OK;
}
