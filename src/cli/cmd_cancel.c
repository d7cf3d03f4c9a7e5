/* ebb cancel: stop a job for good (it checkpoints first if running). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "Usage: ebb cancel ID\n"
    "\n"
    "Cancels job ID. A running job is asked to checkpoint, then its instance\n"
    "is released; the checkpoint is kept. Only the job's owner or an admin\n"
    "may cancel it.\n";

int cmd_cancel(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    if (argc != 2 || argv[1][0] == '-') {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    json_t *params = json_pack("{s:s}", "id", argv[1]);
    json_t *r;
    int code = cli_call(cli, "cancel", params, &r);
    json_decref(params);
    if (code != CLI_OK)
        return code;
    printf("%s: %s\n", argv[1], json_string_value(json_object_get(r, "state")));
    json_decref(r);
    return CLI_OK;
}
