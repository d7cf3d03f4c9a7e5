/* ebb-agent's command line and token. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "agent/agent.h"
#include "base/log.h"
#include "base/str.h"
#include "ebb_build_config.h"

#define DEFAULT_METADATA_INTERVAL_MS 2000
#define DEFAULT_EXIT_WAIT_MS EBB_MS_PER_HOUR
#define DEFAULT_LOG_BUFFER ((size_t)4 << 20)
#define MAX_TOKEN 4096

static void usage(FILE *out)
{
    fputs("Usage: ebb-agent --ebbd URL [--token-file PATH]\n"
          "                 [--ebbd-pin sha256//BASE64 | --ebbd-ca FILE]\n"
          "                 [--metadata URL] [--metadata-kind aws|alibaba|none]\n"
          "                 [--metadata-interval DURATION] [--exit-wait DURATION]\n"
          "                 [--log-buffer BYTES] [--log-level LEVEL] [--disk DIR]\n"
          "                 [--sysfs DIR]\n"
          "\n"
          "Runs one ebb job beside ebbd: fetches what to run from URL, starts it,\n"
          "reports heartbeats, progress, checkpoints and the exit, and asks the job\n"
          "to checkpoint on a spot termination notice or when ebbd says stop.\n"
          "The token comes from --token-file or EBB_AGENT_TOKEN; a one-time\n"
          "enrolment token (\"enrol:...\") is traded for a session token first.\n"
          "\n"
          "  --ebbd-pin PIN              trust ebbd's TLS certificate by its public\n"
          "                              key's SHA-256 (curl's sha256// form)\n"
          "  --ebbd-ca FILE              verify ebbd's certificate with this CA (PEM)\n"
          "                              Either needs an https:// URL; without them an\n"
          "                              https:// URL is checked against the system CAs\n"
          "  --metadata URL              metadata base URL (default: the kind's)\n"
          "  --metadata-kind KIND        aws (default), alibaba or none\n"
          "  --metadata-interval DUR     metadata poll interval (default 2s)\n"
          "  --exit-wait DUR             how long to wait for ebbd to take the\n"
          "                              final report (default 1h)\n"
          "  --log-buffer BYTES          job output kept while ebbd is away\n"
          "                              (default 4194304)\n"
          "  --log-level LEVEL           error, warn, info (default) or debug\n"
          "  --disk DIR                  the instance's disk: checkpoints of a job with\n"
          "                              a store go to DIR/checkpoints/JOB unless the\n"
          "                              job names a directory (default\n"
          "                              $HOME/.local/state/ebb)\n"
          "  --sysfs DIR                 where sysfs is, for the link speed of the\n"
          "                              interface towards ebbd (default /sys)\n"
          "  --version                   print the version and exit\n"
          "  --help                      print this help and exit\n"
          "\n"
          "Exit status: the job's (128+N when signal N ended it); 2 usage; 3 ebbd\n"
          "refused the token or sent an unusable job; 4 ebbd released the host\n"
          "(the job was not started); 5 ebbd never answered.\n", out);
}

static int bad(const char *fmt, ...) EBB_PRINTF(1, 2);
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ebb-agent: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return AGENT_EXIT_USAGE;
}

static int parse_duration_opt(const char *name, const char *value, int64_t *out)
{
    if (ebb_parse_duration(value, out) != 0 || *out <= 0)
        return bad("%s: \"%s\" is not a positive duration (try \"2s\" or \"500ms\")",
                   name, value);
    return 0;
}

/* Once told how to trust ebbd, the agent talks to it only over TLS:
 * nothing is sent in clear, and nothing unverified is believed. */
static int check_trust(const struct agent_options *opt)
{
    const char *given = opt->ebbd_pin ? "--ebbd-pin" : opt->ebbd_ca ? "--ebbd-ca" : NULL;
    if (given == NULL)
        return 0;
    if (opt->ebbd_pin != NULL && opt->ebbd_ca != NULL)
        return bad("give --ebbd-pin or --ebbd-ca, not both");
    if (strncmp(opt->ebbd_url, "https://", 8) != 0)
        return bad("%s needs an https:// --ebbd URL, not \"%s\" (the agent never "
                   "talks to ebbd in clear once it is told how to verify it)",
                   given, opt->ebbd_url);
    if (opt->ebbd_pin != NULL &&
        (strncmp(opt->ebbd_pin, "sha256//", 8) != 0 || strlen(opt->ebbd_pin) < 9))
        return bad("--ebbd-pin: \"%s\" is not a pin (sha256// and the base64 "
                   "SHA-256 of the certificate's public key)", opt->ebbd_pin);
    FILE *f = opt->ebbd_ca != NULL ? fopen(opt->ebbd_ca, "r") : NULL;
    if (opt->ebbd_ca != NULL && f == NULL)
        return bad("--ebbd-ca %s: %s", opt->ebbd_ca, strerror(errno));
    if (f != NULL)
        fclose(f);
    return 0;
}

int agent_options_parse(struct agent_options *opt, int argc, char **argv, bool *done)
{
    static const struct option options[] = {
        {"ebbd", required_argument, NULL, 'e'},
        {"token-file", required_argument, NULL, 't'},
        {"ebbd-pin", required_argument, NULL, 'p'},
        {"ebbd-ca", required_argument, NULL, 'c'},
        {"metadata", required_argument, NULL, 'm'},
        {"metadata-kind", required_argument, NULL, 'k'},
        {"metadata-interval", required_argument, NULL, 'i'},
        {"exit-wait", required_argument, NULL, 'w'},
        {"log-buffer", required_argument, NULL, 'b'},
        {"log-level", required_argument, NULL, 'l'},
        {"disk", required_argument, NULL, 'd'},
        {"sysfs", required_argument, NULL, 's'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *opt = (struct agent_options){
        .metadata_kind = AGENT_MD_AWS,
        .metadata_interval_ms = DEFAULT_METADATA_INTERVAL_MS,
        .exit_wait_ms = DEFAULT_EXIT_WAIT_MS,
        .log_buffer = DEFAULT_LOG_BUFFER,
        .scan_ms = 200,
        .sysfs = "/sys",
    };
    *done = false;
    int rc = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "", options, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'e': opt->ebbd_url = optarg; break;
        case 't': opt->token_file = optarg; break;
        case 'p': opt->ebbd_pin = optarg; break;
        case 'c': opt->ebbd_ca = optarg; break;
        case 'm': opt->metadata_url = optarg; break;
        case 'd':
            if (optarg[0] != '/')
                return bad("--disk: \"%s\" is not an absolute path", optarg);
            opt->disk = optarg;
            opt->disk_given = true;
            break;
        case 's':
            if (optarg[0] != '/')
                return bad("--sysfs: \"%s\" is not an absolute path", optarg);
            opt->sysfs = optarg;
            break;
        case 'k':
            if (strcmp(optarg, "aws") == 0)
                opt->metadata_kind = AGENT_MD_AWS;
            else if (strcmp(optarg, "alibaba") == 0)
                opt->metadata_kind = AGENT_MD_ALIBABA;
            else if (strcmp(optarg, "none") == 0)
                opt->metadata_kind = AGENT_MD_NONE;
            else
                return bad("--metadata-kind: \"%s\" is not aws, alibaba or none",
                           optarg);
            break;
        case 'i': rc = parse_duration_opt("--metadata-interval", optarg,
                                          &opt->metadata_interval_ms); break;
        case 'w': rc = parse_duration_opt("--exit-wait", optarg, &opt->exit_wait_ms); break;
        case 'b': {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (end == optarg || *end != '\0' || errno != 0 || v < 1024 || optarg[0] == '-')
                return bad("--log-buffer: \"%s\" is not a byte count >= 1024", optarg);
            opt->log_buffer = (size_t)v;
            break;
        }
        case 'l': {
            enum ebb_log_level level;
            if (ebb__log_parse_level(optarg, &level) != 0)
                return bad("--log-level: \"%s\" is not error, warn, info or debug",
                           optarg);
            ebb__log_set_level(level);
            break;
        }
        case 'V':
            printf("ebb-agent %s\n", EBB_VERSION);
            *done = true;
            return 0;
        case 'h':
            usage(stdout);
            *done = true;
            return 0;
        default:
            usage(stderr);
            return AGENT_EXIT_USAGE;
        }
        if (rc != 0)
            return rc;
    }
    if (optind < argc)
        return bad("unexpected argument \"%s\" (the job comes from ebbd)",
                   argv[optind]);
    if (opt->ebbd_url == NULL)
        return bad("--ebbd URL is required (ebbd's agent.url)");
    rc = check_trust(opt);
    if (rc != 0)
        return rc;
    if (opt->metadata_url == NULL)
        opt->metadata_url = agent_imds_default_base(opt->metadata_kind);
    /* Without --disk and $HOME there is none: a job with a store then
     * fails to start, saying so. */
    static char default_disk[4096];
    const char *home = getenv("HOME");
    if (opt->disk == NULL && home != NULL && home[0] == '/' &&
        (size_t)snprintf(default_disk, sizeof(default_disk), "%s/.local/state/ebb", home) <
            sizeof(default_disk))
        opt->disk = default_disk;
    return 0;
}

char *agent_read_token(const struct agent_options *opt)
{
    if (opt->token_file == NULL) {
        const char *env = getenv("EBB_AGENT_TOKEN");
        if (env == NULL || env[0] == '\0') {
            fprintf(stderr, "ebb-agent: no token: give --token-file PATH or set "
                    "EBB_AGENT_TOKEN\n");
            return NULL;
        }
        return ebb_strfmt("%s", env);
    }
    FILE *f = fopen(opt->token_file, "r");
    if (f == NULL) {
        fprintf(stderr, "ebb-agent: --token-file %s: %s\n", opt->token_file,
                strerror(errno));
        return NULL;
    }
    char buf[MAX_TOKEN + 2];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    if (buf[0] == '\0' || n > MAX_TOKEN) {
        fprintf(stderr, "ebb-agent: --token-file %s: %s\n", opt->token_file,
                buf[0] == '\0' ? "the file is empty" : "the token is too long");
        return NULL;
    }
    return ebb_strfmt("%s", buf);
}
