/* ebb submit: hand a job spec to ebbd. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "Usage: ebb submit JOB.yaml [--json]\n"
    "       ebb submit --check JOB.yaml\n"
    "\n"
    "Submits the job described in JOB.yaml (see README: Jobs) and prints its\n"
    "id. A spec with an error is refused with file:line and nothing is\n"
    "stored. The job's relative paths are resolved from the current\n"
    "directory, where local instances run it; with `workdir:`, from that\n"
    "directory (relative to JOB.yaml's), which is packed and sent to ebbd.\n"
    "Warnings (what a preemption would cost the job, a workdir that only\n"
    "this machine's instances reach) are printed on stderr.\n"
    "\n"
    "  --json   print ebbd's answer as JSON\n"
    "  --check  only parse JOB.yaml as ebbd would, without ebbd: prints\n"
    "           \"JOB.yaml: ok\" or the first problem as file:line (exit 2)\n";

int cmd_submit(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    const char *file = NULL;
    int json = 0, check = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--check") == 0) {
            check = 1;
        } else if (argv[i][0] == '-' || file != NULL) {
            fprintf(stderr, "ebb submit: unexpected argument \"%s\"\n%s", argv[i], usage);
            return CLI_USAGE;
        } else {
            file = argv[i];
        }
    }
    if (file == NULL) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    if (check)
        return cli_check_file("ebb submit", file, 0);
    json_t *params = cli_file_params("ebb submit", file);
    if (params == NULL)
        return CLI_USAGE;
    json_t *r;
    int code = cli_submit_workdir(cli, file, params);
    if (code != CLI_OK) {
        json_decref(params);
        return code;
    }
    code = cli_call(cli, "submit", params, &r);
    json_decref(params);
    if (code != CLI_OK)
        return code;
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(r, "warnings"), i, w)
        if (json_is_string(w))
            fprintf(stderr, "ebb submit: warning: %s\n", json_string_value(w));
    if (json)
        cli_print_json(r);
    else
        puts(json_string_value(json_object_get(r, "id")));
    json_decref(r);
    return CLI_OK;
}
