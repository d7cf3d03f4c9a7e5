/* ebb logs: a job's output as its agent captured it. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

static const char usage[] =
    "Usage: ebb logs ID [-f]\n"
    "\n"
    "Prints job ID's stdout and stderr as ebb-agent captured them, across\n"
    "all its instances. Only the job's owner or an admin may read them.\n"
    "\n"
    "  -f, --follow  keep printing new output until the job ends\n";

int cmd_logs(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    const char *id = NULL;
    int follow = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0) {
            follow = 1;
        } else if (argv[i][0] == '-' || id != NULL) {
            fprintf(stderr, "ebb logs: unexpected argument \"%s\"\n%s", argv[i], usage);
            return CLI_USAGE;
        } else {
            id = argv[i];
        }
    }
    if (id == NULL) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    json_int_t offset = 0;
    for (;;) {
        json_t *params = json_pack("{s:s,s:I}", "id", id, "offset", offset);
        json_t *r;
        int code = cli_call(cli, "logs", params, &r);
        json_decref(params);
        if (code != CLI_OK)
            return code;
        const char *data = json_string_value(json_object_get(r, "data"));
        size_t len = json_string_length(json_object_get(r, "data"));
        json_int_t next = json_integer_value(json_object_get(r, "next"));
        int ended = json_is_true(json_object_get(r, "ended"));
        fwrite(data ? data : "", 1, len, stdout);
        fflush(stdout);
        json_decref(r);
        int more = next > offset;
        offset = next;
        if (more)
            continue;
        if (!follow || ended)
            return CLI_OK;
        struct timespec pause = {0, 500 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}
