/* What the ebb CLI's subcommands share: finding and calling ebbd, option
 * parsing, and aligned tables. */
#ifndef EBB_CLI_H
#define EBB_CLI_H

#include <stdio.h>

#include <jansson.h>

/* Exit codes every subcommand uses. */
enum {
    CLI_OK = 0,
    CLI_FAIL = 1,  /* the operation failed, or ebbd is not running */
    CLI_USAGE = 2, /* bad usage or bad input */
};

struct cli {
    const char *state_dir_option; /* --state-dir, or NULL */
    const char *prog;             /* "ebb" */
};

struct cli_command {
    const char *name;
    int (*run)(struct cli *cli, int argc, char **argv);
    const char *summary;
};

/* Calls `method` on ebbd. On success returns CLI_OK with *result (caller
 * decrefs). Otherwise prints one line saying what went wrong and how to fix
 * it (e.g. how to start ebbd) and returns CLI_FAIL. */
int cli_call(struct cli *cli, const char *method, json_t *params,
             json_t **result);

/* Reads the YAML file `file` for ebbd: params {"file", "yaml", "workdir"
 * (the current directory)}. A file over EBB__YAML_SPEC_MAX_BYTES (256 KiB)
 * is refused here, as ebbd would. On failure prints why, prefixed with `what`
 * ("ebb submit"), and returns NULL (exit with CLI_USAGE). */
json_t *cli_file_params(const char *what, const char *file);

/* submit_workdir.c: when the spec in params' "yaml" has `workdir:`,
 * resolves it from `file`'s directory, packs it (workdir_exclude, no
 * links, at most 2 GiB), sends the tar with workdir_put when ebbd asks
 * for it, and sets params' "workdir" (the directory) and
 * "workdir_archive" ({sha256, size}). CLI_OK (also for a spec that does
 * not parse: ebbd refuses it), or CLI_USAGE / CLI_FAIL with why printed
 * as file:line. */
int cli_submit_workdir(struct cli *cli, const char *file, json_t *params);

/* `--check`: reads `file` as cli_file_params() does and parses it with the
 * parser ebbd uses, a job spec (or a schedule when `schedule` is set),
 * without asking ebbd: what ebbd checks against its own state (installed
 * policies, teams, its clock) is left to submit. Prints "FILE: ok", or the
 * first problem as file:line prefixed with `what`. Returns CLI_OK or
 * CLI_USAGE. */
int cli_check_file(const char *what, const char *file, int schedule);

/* Prints `value` as indented JSON followed by a newline. */
void cli_print_json(json_t *value);

/* True when argv holds --help or -h; prints `usage` to stdout then. */
int cli_wants_help(int argc, char **argv, const char *usage);

/* `ebb budget` and `ebb queue`: reads `[--team T] [--json]` after argv[0],
 * the command, and calls ebbd's method of that name with the team. Returns
 * as cli_call() with *result and *json set, or CLI_USAGE once it has said
 * what is wrong. */
int cli_team_call(struct cli *cli, int argc, char **argv, const char *usage,
                  json_t **result, int *json);

/* An aligned text table. Cells are copied. */
struct cli_table;
struct cli_table *cli_table_new(size_t ncols, const char *const *headers);
/* Marks a column as numeric: right-aligned. */
void cli_table_right(struct cli_table *t, size_t col);
void cli_table_add(struct cli_table *t, const char *const *cells);
/* Prints and frees. An empty table prints `empty` instead (may be NULL). */
void cli_table_print(struct cli_table *t, FILE *out, const char *empty);

/* Subcommands (cmd_*.c). */
int cmd_status(struct cli *cli, int argc, char **argv);
int cmd_providers(struct cli *cli, int argc, char **argv);
int cmd_policies(struct cli *cli, int argc, char **argv);
int cmd_prices(struct cli *cli, int argc, char **argv);
int cmd_backtest(struct cli *cli, int argc, char **argv);
int cmd_plan(struct cli *cli, int argc, char **argv);
int cmd_submit(struct cli *cli, int argc, char **argv);
int cmd_jobs(struct cli *cli, int argc, char **argv);
int cmd_job(struct cli *cli, int argc, char **argv);
int cmd_cancel(struct cli *cli, int argc, char **argv);
int cmd_logs(struct cli *cli, int argc, char **argv);
int cmd_forecast(struct cli *cli, int argc, char **argv);
int cmd_cron(struct cli *cli, int argc, char **argv);
int cmd_report(struct cli *cli, int argc, char **argv);
int cmd_schedule(struct cli *cli, int argc, char **argv);
int cmd_budget(struct cli *cli, int argc, char **argv);
int cmd_queue(struct cli *cli, int argc, char **argv);
int cmd_notifications(struct cli *cli, int argc, char **argv);

#endif
