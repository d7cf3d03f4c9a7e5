/* ebb submit: hand a job spec to ebbd. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
    "Usage: ebb submit JOB.yaml [--json]\n"
    "\n"
    "Submits the job described in JOB.yaml (see README: Jobs) and prints its\n"
    "id. A spec with an error is refused with file:line and nothing is\n"
    "stored. The job's relative paths are resolved from the current\n"
    "directory, where local instances run it.\n";

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *grown = realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

int cmd_submit(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    const char *file = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
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
    size_t len = 0;
    char *yaml = read_file(file, &len);
    if (yaml == NULL) {
        fprintf(stderr, "ebb submit: cannot read %s: %s\n", file, strerror(errno));
        return CLI_USAGE;
    }
    if (strlen(yaml) != len) {
        fprintf(stderr, "ebb submit: %s holds a NUL byte; a job spec is text\n", file);
        free(yaml);
        return CLI_USAGE;
    }
    char cwd[4096];
    json_t *params = json_pack("{s:s,s:s,s:s}", "file", file, "yaml", yaml,
                               "workdir", getcwd(cwd, sizeof(cwd)) ? cwd : "");
    free(yaml);
    if (params == NULL) {
        fprintf(stderr, "ebb submit: %s is not UTF-8 text\n", file);
        return CLI_USAGE;
    }
    json_t *r;
    int code = cli_call(cli, "submit", params, &r);
    json_decref(params);
    if (code != CLI_OK)
        return code;
    if (json)
        cli_print_json(r);
    else
        puts(json_string_value(json_object_get(r, "id")));
    json_decref(r);
    return CLI_OK;
}
