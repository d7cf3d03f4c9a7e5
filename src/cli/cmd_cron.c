/* ebb cron next: the fire times of a cron expression, computed in this
 * process (no daemon needed) by the same code ebbd's schedules use. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ebb/units.h>

#include "base/tz.h"
#include "cli/cli.h"
#include "jobs/cron.h"

#define COUNT_MAX 10000

static const char usage[] =
    "Usage: ebb cron next 'EXPR' [--from T] [--count N] [--tz ZONE]\n"
    "\n"
    "Prints the next N fire times of the cron expression EXPR, one\n"
    "ISO-8601 UTC time per line, as ebbd would fire a schedule with it.\n"
    "EXPR is five fields (minute hour day-of-month month day-of-week) or a\n"
    "macro such as @daily; quote it. See docs/cron.md.\n"
    "\n"
    "  --from T     start after this time, ISO-8601 (default: now)\n"
    "  --count N    how many fire times (default 5, at most 10000)\n"
    "  --tz ZONE    the expression's time zone, an IANA name such as\n"
    "               Asia/Shanghai (default UTC); daylight-saving changes\n"
    "               are handled as Vixie cron does\n"
    "\n"
    "Exit codes: 0 done, 1 failure, 2 bad input (the message points at the\n"
    "bad field of EXPR).\n";

/* The message, then the expression with the bad field underlined. */
static int bad_expr(const char *expr, const struct ebb__cron_error *err)
{
    fprintf(stderr, "ebb cron next: invalid cron expression: %s\n  %s\n  ",
            err->msg, expr);
    for (size_t i = 0; i < err->at; i++)
        fputc(expr[i] == '\t' ? '\t' : ' ', stderr);
    for (size_t i = 0; i < (err->len > 0 ? err->len : 1); i++)
        fputc('^', stderr);
    fputc('\n', stderr);
    return CLI_USAGE;
}

static int next(int argc, char **argv)
{
    static const struct option options[] = {
        {"from", required_argument, NULL, 'f'},
        {"count", required_argument, NULL, 'n'},
        {"tz", required_argument, NULL, 'z'},
        {NULL, 0, NULL, 0},
    };
    const char *from_arg = NULL, *zone = "UTC";
    long count = 5;
    optind = 0; /* glibc: fully re-initialise for this argv */
    for (;;) {
        int c = getopt_long(argc, argv, "", options, NULL);
        if (c == -1)
            break;
        char *end;
        switch (c) {
        case 'f': from_arg = optarg; break;
        case 'z': zone = optarg; break;
        case 'n':
            count = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || count < 1 ||
                count > COUNT_MAX) {
                fprintf(stderr,
                        "ebb cron next: --count: \"%s\" is not a number from "
                        "1 to %d\n",
                        optarg, COUNT_MAX);
                return CLI_USAGE;
            }
            break;
        default:
            fputs(usage, stderr);
            return CLI_USAGE;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr,
                "ebb cron next: give one expression, quoted (example: ebb "
                "cron next '30 2 * * *')\n");
        return CLI_USAGE;
    }
    const char *expr = argv[optind];
    ebb_time_ms t;
    if (from_arg != NULL) {
        const char *why = NULL;
        if (ebb_parse_time_why(from_arg, &t, &why) != 0) {
            fprintf(stderr,
                    "ebb cron next: --from: \"%s\" is not a time%s%s "
                    "(example: 2026-12-01T00:00:00Z)\n",
                    from_arg, why != NULL ? ": " : "", why != NULL ? why : "");
            return CLI_USAGE;
        }
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        t = (ebb_time_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    struct ebb__cron cron;
    struct ebb__cron_error err;
    if (ebb__cron_parse(expr, 0, &cron, &err) != 0)
        return bad_expr(expr, &err);
    struct ebb__tz *tz;
    struct ebb_diag d = {{0}};
    int rc = ebb__tz_load(zone, &tz, &d);
    if (rc != 0) {
        fprintf(stderr, "ebb cron next: --tz: %s\n",
                d.msg[0] != '\0' ? d.msg : ebb_strerror(rc));
        return rc == EBB_ENOMEM || rc == EBB_EIO ? CLI_FAIL : CLI_USAGE;
    }
    long printed = 0;
    for (; printed < count; printed++) {
        if (ebb__cron_next(&cron, tz, t, &t) != 0)
            break;
        char buf[EBB_TIME_BUFSZ];
        puts(ebb_format_time(t, buf, sizeof(buf)));
    }
    ebb__tz_free(tz);
    ebb_time_ms ever;
    if (printed == 0 && ebb__cron_next(&cron, NULL, 0, &ever) != 0) {
        fprintf(stderr, "ebb cron next: \"%s\" never fires (no date matches "
                        "it)\n",
                expr);
        return CLI_USAGE;
    }
    if (printed < count)
        fprintf(stderr, "ebb cron next: no more fire times before the year "
                        "10000\n");
    return CLI_OK;
}

int cmd_cron(struct cli *cli, int argc, char **argv)
{
    (void)cli;
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (strcmp(argv[1], "next") != 0) {
        fprintf(stderr, "ebb cron: unknown subcommand \"%s\" (try: ebb cron "
                        "next '30 2 * * *')\n",
                argv[1]);
        return CLI_USAGE;
    }
    if (cli_wants_help(argc - 1, argv + 1, usage))
        return CLI_OK;
    return next(argc - 1, argv + 1);
}
