/* ebb status: what the daemon is and what it runs. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "cli/cli.h"

static const char usage[] =
    "Usage: ebb status [--json]\n"
    "\n"
    "Shows ebbd's version, uptime, state directory, the providers and\n"
    "policies it loaded, and how many jobs are in each state.\n"
    "\n"
    "  --json  print one JSON object instead of text\n";

static void print_names(const char *label, json_t *plugins)
{
    printf("%-17s", label);
    if (json_array_size(plugins) == 0)
        printf("(none)");
    size_t i;
    json_t *p;
    json_array_foreach(plugins, i, p)
        printf("%s%s", i ? ", " : "", json_string_value(json_object_get(p, "name")));
    printf("\n");
}

int cmd_status(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "ebb status: unexpected argument \"%s\"\n%s", argv[i], usage);
            return CLI_USAGE;
        }
    }
    json_t *r;
    int code = cli_call(cli, "status", NULL, &r);
    if (code != CLI_OK)
        return code;
    if (json) {
        cli_print_json(r);
        json_decref(r);
        return CLI_OK;
    }
    json_int_t up = json_integer_value(json_object_get(r, "uptime_s"));
    printf("%-17sebbd %s (pid %lld)\n", "daemon:",
           json_string_value(json_object_get(r, "version")),
           (long long)json_integer_value(json_object_get(r, "pid")));
    char uptime[32];
    printf("%-17s%s\n", "uptime:",
           ebb_format_duration(up * EBB_MS_PER_SECOND, uptime, sizeof(uptime)));
    /* A clock set to another time (clock.start) or accelerated (demos,
     * --clock-speed) runs market time of its own: shown apart from the
     * wall uptime. */
    double speed = json_real_value(json_object_get(r, "clock_speed"));
    if ((speed > 0 && speed != 1.0) || json_is_true(json_object_get(r, "clock_set")))
        printf("%-17s%s (x%g, started at %s)\n", "market clock:",
               json_string_value(json_object_get(r, "clock_now")), speed,
               json_string_value(json_object_get(r, "started_at")));
    printf("%-17s%s\n", "state dir:", json_string_value(json_object_get(r, "state_dir")));
    printf("%-17s%s\n", "config:", json_string_value(json_object_get(r, "config")));
    print_names("providers:", json_object_get(r, "providers"));
    print_names("policies:", json_object_get(r, "policies"));
    printf("%-17s%s\n", "default policy:",
           json_string_value(json_object_get(r, "default_policy")));
    json_t *jobs = json_object_get(r, "jobs");
    printf("%-17s", "jobs:");
    if (json_object_size(jobs) == 0)
        printf("none");
    const char *state;
    json_t *count;
    int first = 1;
    json_object_foreach(jobs, state, count) {
        printf("%s%s %lld", first ? "" : ", ", state,
               (long long)json_integer_value(count));
        first = 0;
    }
    printf("\n");
    json_decref(r);
    return CLI_OK;
}
