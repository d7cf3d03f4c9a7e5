/* ebb schedule: add, list, show and remove cron schedules (docs/cron.md). */
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "base/currency.h"
#include "cli/cli.h"

static const char usage[] =
    "Usage: ebb schedule add [--check] FILE.yaml\n"
    "       ebb schedule list [--json]\n"
    "       ebb schedule show ID [--json]\n"
    "       ebb schedule remove ID\n"
    "\n"
    "A schedule runs a job at every fire time of a cron expression, at the\n"
    "cheapest time within a window after it (see docs/cron.md and\n"
    "examples/nightly.yaml). add prints the new schedule's id; a file with\n"
    "an error is refused with file:line and nothing is stored. ID is a\n"
    "schedule's id or name. remove stops future runs; runs already started\n"
    "go on. Only the owner or an admin may remove a schedule. Another\n"
    "user's schedule shows only when it fires, not its spec, runs or\n"
    "events, unless you are an admin or an admin of its team.\n"
    "\n"
    "  --json   print ebbd's answer as JSON\n"
    "  --check  add: only parse FILE.yaml as ebbd would, without ebbd:\n"
    "           prints \"FILE.yaml: ok\" or the first problem as file:line\n";

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "-";
}

static const char *when(json_t *o, const char *key, char *buf, size_t len)
{
    json_t *v = json_is_integer(o) ? o : json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) == 0)
        return "-";
    return ebb_format_time(json_integer_value(v), buf, len);
}

static const char *budget(json_t *o, char *buf, size_t len)
{
    json_t *b = json_object_get(o, "budget_micros");
    if (!json_is_integer(b))
        return "no cap";
    return ebb__format_amount(json_integer_value(b), EBB__AMOUNT_DECIMALS,
                              str(o, "currency"), buf, len);
}

/* Parses [--json] (when `json`), [--check] (when `check`) and one
 * positional argument when `want_arg`. */
static int args(int argc, char **argv, int want_arg, const char **arg,
                int *json, int *check)
{
    for (int i = 2; i < argc; i++) {
        if (json != NULL && strcmp(argv[i], "--json") == 0) {
            *json = 1;
        } else if (check != NULL && strcmp(argv[i], "--check") == 0) {
            *check = 1;
        } else if (argv[i][0] == '-' || !want_arg || *arg != NULL) {
            fprintf(stderr, "ebb schedule %s: unexpected argument \"%s\"\n%s",
                    argv[1], argv[i], usage);
            return CLI_USAGE;
        } else {
            *arg = argv[i];
        }
    }
    if (want_arg && *arg == NULL) {
        fprintf(stderr, "ebb schedule %s: which one?\n%s", argv[1], usage);
        return CLI_USAGE;
    }
    return CLI_OK;
}

static int do_add(struct cli *cli, const char *file)
{
    json_t *params = cli_file_params("ebb schedule add", file);
    if (params == NULL)
        return CLI_USAGE;
    json_t *r;
    int code = cli_call(cli, "schedule_add", params, &r);
    json_decref(params);
    if (code != CLI_OK)
        return code;
    puts(str(r, "id"));
    json_decref(r);
    return CLI_OK;
}

static void print_list(json_t *r)
{
    static const char *const headers[] = {"ID", "NAME", "CRON", "TIMEZONE",
                                          "WINDOW", "BUDGET", "NEXT FIRE",
                                          "LAST RUN"};
    struct cli_table *t = cli_table_new(8, headers);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(r, "schedules"), i, s) {
        char window[32], money[48], next[40], last[96];
        ebb_format_duration(json_integer_value(json_object_get(s, "window_ms")),
                             window, sizeof(window));
        snprintf(last, sizeof(last), "%s %s", str(s, "last_job_id"),
                 json_is_string(json_object_get(s, "last_job_state"))
                     ? str(s, "last_job_state") : "");
        const char *row[] = {str(s, "id"), str(s, "name"), str(s, "cron"),
                             str(s, "timezone"), window,
                             budget(s, money, sizeof(money)),
                             when(s, "next_fire_at", next, sizeof(next)), last};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout, "no schedules (add one with: ebb schedule add "
                               "FILE.yaml)");
}

static void print_show(json_t *s)
{
    char a[48], b[48];
    printf("Schedule %s (%s)\n", str(s, "id"), str(s, "name"));
    printf("  cron:        %s (%s)\n", str(s, "cron"), str(s, "timezone"));
    printf("  window:      %s after each fire time\n",
           ebb_format_duration(json_integer_value(json_object_get(s, "window_ms")),
                                a, sizeof(a)));
    printf("  budget:      %s per run\n", budget(s, a, sizeof(a)));
    printf("  missed:      %s\n", str(s, "missed"));
    int redacted = json_is_true(json_object_get(s, "redacted"));
    printf("  %-12s %s%s(added %s by uid %lld)\n", redacted ? "added:" : "file:",
           redacted ? "" : str(s, "file"), redacted ? "" : " ",
           when(s, "created_at", a, sizeof(a)),
           (long long)json_integer_value(json_object_get(s, "owner_uid")));
    printf("  last fire:   %s\n", when(s, "last_fire_at", a, sizeof(a)));
    printf("  team:        %s\n", str(s, "team"));
    printf("\nNext fire times:\n");
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(s, "next_fires"), i, row)
        printf("  %s\n", when(row, NULL, a, sizeof(a)));
    if (json_array_size(json_object_get(s, "next_fires")) == 0)
        printf("  none\n");

    if (redacted) {
        printf("\n  redacted: not your schedule (its spec, runs and events are "
               "shown only\n  to its owner, its team's admins and ebbd's "
               "admins)\n");
        return;
    }
    printf("\nSpec (%s):\n", str(s, "file"));
    for (const char *line = str(s, "yaml"); *line != '\0';) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        printf("  %.*s\n", len, line);
        line += len + (end != NULL);
    }

    static const char *const rh[] = {"FIRE TIME", "JOB", "STATE", "DEADLINE"};
    struct cli_table *t = cli_table_new(4, rh);
    json_array_foreach(json_object_get(s, "runs"), i, row) {
        const char *cells[] = {when(row, "fire_at", a, sizeof(a)), str(row, "id"),
                               str(row, "state"),
                               when(row, "deadline", b, sizeof(b))};
        cli_table_add(t, cells);
    }
    printf("\nRecent runs:\n");
    cli_table_print(t, stdout, "  none yet");

    static const char *const eh[] = {"AT", "FIRE TIME", "WHAT", "WHY"};
    t = cli_table_new(4, eh);
    json_array_foreach(json_object_get(s, "events"), i, row) {
        const char *cells[] = {when(row, "at", a, sizeof(a)),
                               when(row, "fire_at", b, sizeof(b)),
                               str(row, "kind"), str(row, "reason")};
        cli_table_add(t, cells);
    }
    printf("\nRecent events:\n");
    cli_table_print(t, stdout, "  none yet");
}

int cmd_schedule(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    const char *sub = argc > 1 ? argv[1] : "";
    const char *arg = NULL;
    int json = 0, code;
    if (strcmp(sub, "add") == 0) {
        int check = 0;
        code = args(argc, argv, 1, &arg, NULL, &check);
        if (code == CLI_OK && check)
            return cli_check_file("ebb schedule add", arg, 1);
        return code != CLI_OK ? code : do_add(cli, arg);
    }
    const char *method = strcmp(sub, "list") == 0     ? "schedules"
                         : strcmp(sub, "show") == 0   ? "schedule"
                         : strcmp(sub, "remove") == 0 ? "schedule_remove"
                                                      : NULL;
    if (method == NULL) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    int is_list = strcmp(sub, "list") == 0, is_remove = strcmp(sub, "remove") == 0;
    code = args(argc, argv, !is_list, &arg, is_remove ? NULL : &json, NULL);
    if (code != CLI_OK)
        return code;
    json_t *params = arg ? json_pack("{s:s}", "id", arg) : json_object();
    json_t *r;
    code = cli_call(cli, method, params, &r);
    json_decref(params);
    if (code != CLI_OK)
        return code;
    if (json)
        cli_print_json(r);
    else if (is_list)
        print_list(r);
    else if (is_remove)
        printf("%s: removed; runs already started go on\n", str(r, "id"));
    else
        print_show(r);
    json_decref(r);
    return CLI_OK;
}
