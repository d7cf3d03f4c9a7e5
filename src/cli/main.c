/* ebb: the command-line interface. Global options, then a subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "ebb_build_config.h"

static const struct cli_command commands[] = {
    {"status", cmd_status, "show the daemon's version, uptime, plugins and jobs"},
    {"providers", cmd_providers, "list providers, or describe one's configuration"},
    {"policies", cmd_policies, "list policies, or describe one's configuration"},
    {"prices", cmd_prices, "show the latest price of every series"},
    {"submit", cmd_submit, "submit a job spec; prints the job's id"},
    {"jobs", cmd_jobs, "list jobs (--all: finished ones too)"},
    {"job", cmd_job, "show one job: ebb job show ID"},
    {"cancel", cmd_cancel, "cancel a job (it checkpoints first)"},
    {"logs", cmd_logs, "print a job's output (-f follows it)"},
    {"backtest", cmd_backtest, "replay a workload against price traces"},
    {"forecast", cmd_forecast, "forecast spot prices (p10/p50/p90) of every series"},
    {"plan", cmd_plan, "quote a job's cost and finish time with their odds"},
    {"cron", cmd_cron, "print the next fire times of a cron expression"},
    {"schedule", cmd_schedule, "add, list, show or remove cron schedules of jobs"},
    {"report", cmd_report, "spend and savings against on-demand, by job, team, ..."},
    {"budget", cmd_budget, "caps, spend this month and what running jobs committed"},
    {"queue", cmd_queue, "waiting jobs in the order ebbd considers them, and why (--team)"},
    {"notifications", cmd_notifications, "deliveries of events to notify: channels (--failed)"},
    {NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fputs("Usage: ebb [--state-dir DIR] COMMAND [ARGS...]\n"
          "\n"
          "The ebb command-line interface. It talks to ebbd over the unix\n"
          "socket in the state directory (default: $EBB_STATE_DIR, /var/lib/ebb\n"
          "for root, else $XDG_STATE_HOME/ebb or ~/.local/state/ebb).\n"
          "\n"
          "Commands:\n", out);
    /* The summaries line up after the longest name. */
    int width = 0;
    for (const struct cli_command *c = commands; c->name; c++)
        width = (int)strlen(c->name) > width ? (int)strlen(c->name) : width;
    for (const struct cli_command *c = commands; c->name; c++)
        fprintf(out, "  %-*s  %s\n", width, c->name, c->summary);
    fputs("\n"
          "Every command takes --help; listing commands take --json.\n"
          "Options:\n"
          "  --state-dir DIR  the daemon's state directory\n"
          "  --version        print the version and exit\n"
          "  --help           print this help and exit\n", out);
}

int main(int argc, char **argv)
{
    struct cli cli = {.prog = "ebb"};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--version") == 0) {
            printf("ebb %s\n", EBB_VERSION);
            return CLI_OK;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return CLI_OK;
        }
        if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc) {
            cli.state_dir_option = argv[++i];
        } else if (strcmp(argv[i], "--state-dir") == 0 ||
                   strcmp(argv[i], "--state-dir=") == 0) {
            fprintf(stderr, "ebb: --state-dir needs a directory "
                    "(ebb --state-dir DIR COMMAND ...)\n");
            return CLI_USAGE;
        } else if (strncmp(argv[i], "--state-dir=", 12) == 0) {
            cli.state_dir_option = argv[i] + 12;
        } else {
            fprintf(stderr, "ebb: unknown option \"%s\"\n", argv[i]);
            usage(stderr);
            return CLI_USAGE;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *name = strcmp(argv[i], "help") == 0 && i + 1 < argc ? argv[i + 1]
                                                                      : argv[i];
    for (const struct cli_command *c = commands; c->name; c++) {
        if (strcmp(c->name, name) != 0)
            continue;
        if (name != argv[i]) { /* "ebb help CMD" */
            char *help_argv[] = {argv[i + 1], "--help", NULL};
            return c->run(&cli, 2, help_argv);
        }
        return c->run(&cli, argc - i, argv + i);
    }
    if (strcmp(argv[i], "help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    fprintf(stderr, "ebb: unknown command \"%s\" (see ebb --help)\n", argv[i]);
    return CLI_USAGE;
}
