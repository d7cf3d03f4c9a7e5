/* What the YAML reader (jobspec.c) and the JSON reader (jobspec_json.c) of
 * job specs share: value checks, names of markets and signals, the
 * cross-field checks, and freeing. */
#include "jobs/jobspec.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ebb/units.h>

#include "base/cfg_table.h"
#include "base/pathname.h"

const char *const ebb__jobspec_keys[] = {
    "name",       "run",    "shell",  "work",        "deadline",
    "budget",     "restart_overhead", "resources",   "market",
    "checkpoint", "policy", "team",   "max_retries", "env",
    "submit",     "run_as", "notify", "workdir", "workdir_exclude", "priority",
    "stall_after", "min_gpu_util", "nodes", "gang", NULL,
};
const char *const ebb__jobspec_resource_keys[] = {
    "instance_types", "gpu", "zones", "regions", "providers", "network", NULL,
};
const char *const ebb__jobspec_gang_keys[] = {"restart", NULL};
const char *const ebb__jobspec_gpu_keys[] = {"model", "count", "memory_gb",
                                             NULL};
const char *const ebb__jobspec_checkpoint_keys[] = {
    "dir", "signal", "grace", "every", "store", "encrypt", "keep", NULL};

static const struct {
    int value;
    const char *name;
} priorities[] = {
    {EBB__JOB_PRIORITY_LOW, "low"},
    {EBB__JOB_PRIORITY_NORMAL, "normal"},
    {EBB__JOB_PRIORITY_HIGH, "high"},
    {EBB__JOB_PRIORITY_URGENT, "urgent"},
};
#define N_PRIORITIES (sizeof(priorities) / sizeof(priorities[0]))

int ebb__job_priority_parse(const char *s, int *out)
{
    for (size_t i = 0; i < N_PRIORITIES; i++)
        if (strcmp(s, priorities[i].name) == 0) {
            *out = priorities[i].value;
            return 0;
        }
    /* Decimal digits only: no sign, no spaces, at most four of them. */
    size_t len = strlen(s);
    if (len == 0 || len > 4 || strspn(s, "0123456789") != len)
        return EBB_EINVAL;
    int v = 0;
    for (size_t i = 0; i < len; i++)
        v = v * 10 + (s[i] - '0');
    if (v > EBB__JOB_PRIORITY_MAX)
        return EBB_EINVAL;
    *out = v;
    return 0;
}

const char *ebb__job_priority_name(int p)
{
    for (size_t i = 0; i < N_PRIORITIES; i++)
        if (priorities[i].value == p)
            return priorities[i].name;
    return NULL;
}

int ebb__job_network_parse(const char *s, double *gbps)
{
    static const struct {
        const char *unit;
        double gbps;
    } units[] = {{"mbps", 0.001}, {"gbps", 1}, {"tbps", 1000}};
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || !(v > 0) || !isdigit((unsigned char)s[0]))
        return EBB_EINVAL;
    if (*end == ' ')
        end++;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcasecmp(end, units[i].unit) == 0) {
            v *= units[i].gbps;
            if (v > EBB__JOB_NETWORK_GBPS_MAX)
                return EBB_EINVAL;
            *gbps = v;
            return 0;
        }
    return EBB_EINVAL;
}

static const char *const gang_restarts[] = {
    [EBB__GANG_WHOLE] = "whole",
    [EBB__GANG_REPLACE_LOST] = "replace_lost",
};

const char *ebb__gang_restart_name(enum ebb__gang_restart r)
{
    return gang_restarts[r];
}

int ebb__gang_restart_parse(const char *s, enum ebb__gang_restart *out)
{
    for (size_t i = 0; i < sizeof(gang_restarts) / sizeof(gang_restarts[0]); i++)
        if (strcmp(s, gang_restarts[i]) == 0) {
            *out = (enum ebb__gang_restart)i;
            return 0;
        }
    return EBB_EINVAL;
}

static const struct {
    enum ebb_job_market market;
    const char *name;
} markets[] = {
    {EBB_JOB_SPOT, "spot"},
    {EBB_JOB_ON_DEMAND, "on-demand"},
    {EBB_JOB_SPOT_FALLBACK, "spot-fallback"},
};
#define N_MARKETS (sizeof(markets) / sizeof(markets[0]))

const char *ebb__job_market_name(enum ebb_job_market m)
{
    for (size_t i = 0; i < N_MARKETS; i++) {
        if (markets[i].market == m)
            return markets[i].name;
    }
    return "unknown";
}

int ebb__job_market_parse(const char *s, enum ebb_job_market *out)
{
    for (size_t i = 0; i < N_MARKETS; i++) {
        if (strcmp(s, markets[i].name) == 0) {
            *out = markets[i].market;
            return 0;
        }
    }
    return EBB_EINVAL;
}

/* Only signals a job can catch and that do not mean "crash" to it: the
 * agent sends this one to ask for a checkpoint, so SIGKILL or SIGSTOP
 * would defeat the purpose. */
static const struct {
    const char *name;
    int signo;
} signals[] = {
    {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGTERM", SIGTERM},
    {"SIGINT", SIGINT},   {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT},
};
#define N_SIGNALS (sizeof(signals) / sizeof(signals[0]))

static int upper(int c)
{
    return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

/* Compares ASCII case-insensitively; strcasecmp would follow the locale. */
static int same_name(const char *a, const char *b)
{
    for (; *a != '\0' && *b != '\0'; a++, b++) {
        if (upper((unsigned char)*a) != upper((unsigned char)*b))
            return 0;
    }
    return *a == *b;
}

int ebb__job_signal_parse(const char *s, int *signo, char name[16])
{
    for (size_t i = 0; i < N_SIGNALS; i++) {
        if (same_name(s, signals[i].name) ||
            same_name(s, signals[i].name + 3)) {
            *signo = signals[i].signo;
            snprintf(name, 16, "%s", signals[i].name);
            return 0;
        }
    }
    return EBB_EINVAL;
}

/* Whether every byte of s is a letter, a digit, '.', '_' or '-': the
 * characters of job names and user names. */
static int name_chars_only(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int ebb__job_name_valid(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > EBB__JOB_NAME_MAX)
        return 0;
    if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return 0;
    return name_chars_only(s, len);
}

int ebb__job_user_valid(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > 32 || s[0] == '-')
        return 0;
    return name_chars_only(s, len);
}

static int ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int ebb__job_ident_valid(const char *s)
{
    return ebb__yread_name_valid(s, strlen(s));
}

int ebb__job_env_name_valid(const char *s, size_t len)
{
    if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (!ident_char(s[i]) || s[i] == '-')
            return 0;
    }
    return 1;
}

static void say(struct ebb_diag *d, const struct ebb__jobspec_where *w,
                int line, const char *fmt, ...) EBB_PRINTF(4, 5);

static void say(struct ebb_diag *d, const struct ebb__jobspec_where *w,
                int line, const char *fmt, ...)
{
    char msg[sizeof(d->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (w->file != NULL)
        ebb_diag_set(d, w->file, line > 0 ? line : w->job, "%s", msg);
    else
        ebb_diag_set(d, NULL, 0, "%s: %s",
                      w->prefix != NULL ? w->prefix : "job spec", msg);
}

/* a + b for non-negative durations, stopping at INT64_MAX instead of
 * overflowing (durations can be as large as int64 milliseconds). */
static ebb_dur_ms add_sat(ebb_dur_ms a, ebb_dur_ms b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

int ebb__jobspec_check(const struct ebb__job_spec *spec,
                       const struct ebb__jobspec_where *w,
                       struct ebb_diag *d)
{
    char a[EBB_TIME_BUFSZ], b[EBB_TIME_BUFSZ];
    char c[EBB_DURATION_BUFSZ], e[EBB_DURATION_BUFSZ];
    if (spec->work <= 0) {
        say(d, w, w->work, "work: must be more than 0s (example: 8h)");
        return EBB_ECONFIG;
    }
    if (spec->nodes < 1 || spec->nodes > EBB__JOB_NODES_MAX) {
        say(d, w, w->nodes, "nodes: %d is outside 1..%d", spec->nodes,
            EBB__JOB_NODES_MAX);
        return EBB_ECONFIG;
    }
    if (spec->gang_restart == EBB__GANG_REPLACE_LOST && spec->nodes < 2) {
        say(d, w, w->nodes, "gang.restart: replace_lost needs a gang: nodes is "
            "%d (example: nodes: 2)", spec->nodes);
        return EBB_ECONFIG;
    }
    if (spec->checkpoint.grace < 0 ||
        spec->checkpoint.grace > EBB__JOB_GRACE_MAX) {
        say(d, w, w->grace,
            "checkpoint.grace: %s is longer than the limit of 10m",
            ebb_format_duration(spec->checkpoint.grace, c, sizeof(c)));
        return EBB_ECONFIG;
    }
    static const struct ebb__cfg_range every = {"every", EBB__JOB_EVERY_MIN,
                                                EBB__JOB_EVERY_MAX, true};
    if (spec->checkpoint.every != 0 && (spec->checkpoint.every < EBB__JOB_EVERY_MIN ||
                                        spec->checkpoint.every > EBB__JOB_EVERY_MAX)) {
        char range[3 * EBB_DURATION_BUFSZ];
        say(d, w, w->every, "checkpoint.every: %s is outside the allowed range (%s)",
            ebb_format_duration(spec->checkpoint.every, c, sizeof(c)),
            ebb__cfg_range_format(EBB_CFG_DURATION, &every, range, sizeof(range)));
        return EBB_ECONFIG;
    }
    if (spec->checkpoint.dir != NULL) {
        char *resolved = NULL;
        int rc = ebb__path_resolve(NULL, spec->checkpoint.dir, &resolved);
        free(resolved);
        if (rc == EBB_ENOMEM) {
            say(d, w, w->dir, "out of memory");
            return rc;
        }
        if (rc != 0) {
            char q[EBB_DIAG_QUOTE_SIZE];
            const char *dir = spec->checkpoint.dir;
            say(d, w, w->dir, "checkpoint.dir: %s climbs out of %s with \"..\" "
                "(write a path without it, e.g. ckpt or /data/ckpt)",
                ebb_diag_quote(dir, strlen(dir), q, sizeof(q)),
                dir[0] == '/' ? "/" : "the job's working directory");
            return EBB_ECONFIG;
        }
    }
    if (!spec->has_deadline)
        return 0;

    ebb_dur_ms need = add_sat(spec->work, spec->restart_overhead);
    ebb_format_duration(spec->work, c, sizeof(c));
    ebb_format_duration(spec->restart_overhead, e, sizeof(e));
    if (spec->deadline_is_relative) {
        ebb_format_duration(spec->deadline_in, a, sizeof(a));
        if (spec->deadline_in < need) {
            say(d, w, w->deadline,
                "can never finish: deadline %s is shorter than work %s plus "
                "restart overhead %s", a, c, e);
            return EBB_ECONFIG;
        }
        if (spec->deadline_in == need) {
            say(d, w, w->deadline,
                "can never finish in time: deadline %s leaves no time "
                "beyond work %s plus restart overhead %s (make it longer)",
                a, c, e);
            return EBB_ECONFIG;
        }
        return 0;
    }
    ebb_format_time(spec->deadline_at, a, sizeof(a));
    if (spec->deadline_at <= 0) {
        say(d, w, w->deadline, "deadline: %s is before 1970", a);
        return EBB_ECONFIG;
    }
    if (!spec->has_submit)
        return 0;
    ebb_format_time(spec->submit, b, sizeof(b));
    if (spec->deadline_at <= spec->submit) {
        say(d, w, w->deadline, "deadline: %s is not after submit %s", a, b);
        return EBB_ECONFIG;
    }
    ebb_dur_ms avail = spec->deadline_at - spec->submit;
    if (avail <= need) {
        char f[EBB_DURATION_BUFSZ];
        ebb_format_duration(avail, f, sizeof(f));
        say(d, w, w->deadline,
            "can never finish: deadline %s is %s after submit, %s work %s "
            "plus restart overhead %s", a, f,
            avail < need ? "shorter than" : "no longer than", c, e);
        return EBB_ECONFIG;
    }
    return 0;
}

ebb_time_ms ebb__jobspec_deadline(const struct ebb__job_spec *spec,
                                  ebb_time_ms submitted_at)
{
    if (!spec->has_deadline)
        return 0;
    if (!spec->deadline_is_relative)
        return spec->deadline_at;
    if (spec->deadline_in > INT64_MAX - submitted_at)
        return INT64_MAX;
    return submitted_at + spec->deadline_in;
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

void ebb__jobspec_free(struct ebb__job_spec *spec)
{
    if (spec == NULL)
        return;
    free(spec->name);
    free_strv(spec->argv, spec->argc);
    ebb__string_list_free(&spec->resources.instance_types);
    ebb__string_list_free(&spec->resources.zones);
    ebb__string_list_free(&spec->resources.regions);
    ebb__string_list_free(&spec->resources.providers);
    free(spec->resources.gpu_model);
    free(spec->checkpoint.dir);
    free(spec->checkpoint.store);
    free(spec->policy);
    free(spec->team);
    free(spec->run_as);
    ebb__string_list_free(&spec->notify);
    free_strv(spec->env, spec->n_env);
    free(spec->workdir_src);
    ebb__string_list_free(&spec->workdir_exclude);
    free(spec->file);
    memset(spec, 0, sizeof(*spec));
}
