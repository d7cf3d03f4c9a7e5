/* ebbd: the ebb daemon. Parses the command line and runs the daemon. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "ebb_build_config.h"

static void usage(FILE *out)
{
    fputs("Usage: ebbd [--config FILE] [--state-dir DIR] [--log-level LEVEL]\n"
          "            [--clock-speed N]\n"
          "       ebbd --check [--config FILE]\n"
          "\n"
          "The ebb scheduler daemon: watches spot prices, runs jobs on the\n"
          "cheapest capacity, checkpoints and resumes them on preemption.\n"
          "\n"
          "Options:\n"
          "  --config FILE      configuration (default: the built-in one, see\n"
          "                     examples/ebb.yaml)\n"
          "  --state-dir DIR    where ebb.db, ebb.sock and the lock live\n"
          "                     (default: $EBB_STATE_DIR, /var/lib/ebb for root,\n"
          "                     else $XDG_STATE_HOME/ebb or ~/.local/state/ebb)\n"
          "  --log-level LEVEL  error, warn, info (default) or debug; overrides\n"
          "                     log_level in the configuration\n"
          "  --clock-speed N    run the clock N times as fast as the wall clock\n"
          "                     (demos on the sim market: 1440 = a day a minute);\n"
          "                     overrides clock.speed in the configuration\n"
          "  --check            read the configuration and create its plugins,\n"
          "                     print \"FILE: ok\" or the first problem as\n"
          "                     file:line, and exit 0 or 2; nothing is started\n"
          "                     and the state directory is not touched\n"
          "  --version          print the version and exit\n"
          "  --help             print this help and exit\n"
          "\n"
          "SIGTERM or SIGINT stops ebbd cleanly. Exit codes: 0 clean stop,\n"
          "1 runtime failure (state directory, lock, database), 2 bad\n"
          "configuration or usage.\n", out);
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"state-dir", required_argument, NULL, 's'},
        {"log-level", required_argument, NULL, 'l'},
        {"clock-speed", required_argument, NULL, 'k'},
        {"check", no_argument, NULL, 'C'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct ebb__daemon_options opts = {0};
    for (;;) {
        int c = getopt_long(argc, argv, "", options, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'c':
            opts.config_path = optarg;
            break;
        case 's':
            opts.state_dir = optarg;
            break;
        case 'l':
            if (ebb__log_parse_level(optarg, &opts.log_level) != 0) {
                fprintf(stderr, "ebbd: --log-level: \"%s\" is not one of error, "
                        "warn, info, debug\n", optarg);
                return 2;
            }
            opts.log_level_set = 1;
            break;
        case 'k': {
            char *end = NULL;
            opts.clock_speed = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !(opts.clock_speed > 0 &&
                                                   opts.clock_speed <= 1e6)) {
                fprintf(stderr, "ebbd: --clock-speed: \"%s\" is not a number above "
                        "0 and at most 1000000\n", optarg);
                return 2;
            }
            break;
        }
        case 'C':
            opts.check = 1;
            break;
        case 'V':
            printf("ebbd %s\n", EBB_VERSION);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ebbd: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    /* A client that closes its end before its answer is written must cost
     * that answer, not the daemon: writes then fail with EPIPE. */
    signal(SIGPIPE, SIG_IGN);
    return ebb__daemon_run(&opts);
}
