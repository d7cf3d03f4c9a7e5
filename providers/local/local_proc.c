/* Processes of local instances: start, watch, kill. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "local.h"

#define MARK "EBB_LOCAL_INSTANCE="

int local_find_agent(struct local *l)
{
    if (l->cfg->agent[0] != '\0') {
        l->agent = strdup(l->cfg->agent);
    } else {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char *slash = NULL;
        if (n > 0) {
            self[n] = '\0';
            slash = strrchr(self, '/');
        }
        if (slash != NULL)
            *slash = '\0';
        if (slash == NULL || asprintf(&l->agent, "%s/ebb-agent", self) < 0)
            l->agent = NULL;
    }
    if (l->agent == NULL || access(l->agent, X_OK) != 0) {
        l->host->log(l->host->ctx, EBB_LOG_ERROR, "agent: %s is not an executable "
                     "ebb-agent (set providers.local.agent)",
                     l->agent ? l->agent : "(none beside this program)");
        free(l->agent);
        l->agent = NULL;
        return EBB_ECONFIG;
    }
    return 0;
}

unsigned long long local_start_ticks(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* Field 2 is "(comm)" and may hold spaces: count from its ')'. */
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return 0;
    char state = p[2];
    if (state == 'Z' || state == 'X')
        return 0;
    int field = 2;
    for (p++; *p != '\0' && field < 22; p++)
        if (*p == ' ')
            field++;
    return field == 22 ? strtoull(p, NULL, 10) : 0;
}

/* The environment the agent gets: only what it needs, never ebbd's own
 * (which may hold cloud credentials). */
static char **agent_env(const struct local_inst *inst, const char *agent_token)
{
    static const char *const keep[] = {"PATH", "HOME", "LANG", "TZ", "USER",
                                       "TMPDIR"};
    size_t n = 0;
    char **env = calloc(sizeof(keep) / sizeof(keep[0]) + 3, sizeof(*env));
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
        const char *v = getenv(keep[i]);
        if (v != NULL && asprintf(&env[n], "%s=%s", keep[i], v) >= 0)
            n++;
    }
    if (asprintf(&env[n], "EBB_AGENT_TOKEN=%s", agent_token) >= 0)
        n++;
    if (asprintf(&env[n], MARK "%s", inst->id) >= 0)
        n++;
    return env;
}

static void free_env(char **env)
{
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        free(env[i]);
    free(env);
}

/* DIR/ebbd-ca.pem holding `pem`, written beside and renamed into place
 * (an agent starting meanwhile reads the old file or the new one). A new
 * string, or NULL with the reason logged. */
static char *write_ca(struct local *l, const char *pem)
{
    char *path = NULL, *tmp = NULL;
    if (asprintf(&path, "%s/ebbd-ca.pem", l->dir) < 0)
        path = NULL;
    if (asprintf(&tmp, "%s/ebbd-ca.pem.new", l->dir) < 0)
        tmp = NULL;
    int fd = -1, ok = path != NULL && tmp != NULL;
    if (ok) {
        unlink(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    }
    size_t len = strlen(pem);
    ok = fd >= 0 && write(fd, pem, len) == (ssize_t)len;
    if (fd >= 0)
        ok = close(fd) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        l->host->log(l->host->ctx, EBB_LOG_ERROR, "cannot write %s/ebbd-ca.pem: %s",
                     l->dir, strerror(errno));
        if (tmp != NULL)
            unlink(tmp);
        free(path);
        path = NULL;
    }
    free(tmp);
    return path;
}

int local_spawn(struct local *l, struct local_inst *inst, const char *agent_url,
                const char *agent_token, const char *tls_pin, const char *tls_ca)
{
    char *metadata = NULL, *log = NULL;
    char **env = agent_env(inst, agent_token);
    if (asprintf(&metadata, "%s/imds/%s", agent_url, inst->token) < 0)
        metadata = NULL;
    if (asprintf(&log, "%s/%s.agent.log", l->dir, inst->token) < 0)
        log = NULL;
    char *ca_file = tls_ca != NULL ? write_ca(l, tls_ca) : NULL;
    const char *trust = ca_file ? "--ebbd-ca" : tls_pin ? "--ebbd-pin" : NULL;
    char *const argv[] = {l->agent, "--ebbd", (char *)agent_url,
                          "--metadata", metadata, (char *)trust,
                          ca_file ? ca_file : (char *)tls_pin, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    int rc = EBB_EIO;
    if (env != NULL && metadata != NULL && log != NULL && (tls_ca == NULL || ca_file)) {
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0640);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        /* A session of its own: ebbd's signals and terminal never reach it,
         * and its group is the instance's to kill. */
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
        pid_t pid;
        int err = posix_spawn(&pid, l->agent, &fa, &attr, argv, env);
        if (err == 0) {
            inst->pid = pid;
            inst->ours = 1;
            inst->start_ticks = local_start_ticks(pid);
            rc = 0;
        } else {
            l->host->log(l->host->ctx, EBB_LOG_ERROR, "cannot start %s: %s",
                         l->agent, strerror(err));
        }
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    free_env(env);
    free(metadata);
    free(log);
    free(ca_file);
    return rc;
}

int local_alive(struct local_inst *inst)
{
    if (inst->gone)
        return 0;
    if (inst->ours) {
        int status;
        pid_t r = waitpid(inst->pid, &status, WNOHANG);
        if (r == inst->pid || (r < 0 && errno == ECHILD))
            inst->ours = 0; /* reaped (or not ours after all) */
    }
    unsigned long long ticks = local_start_ticks(inst->pid);
    if (ticks == 0 || (inst->start_ticks != 0 && ticks != inst->start_ticks))
        inst->gone = 1;
    return !inst->gone;
}

/* Whether process `pid`'s environment carries `mark` ("NAME=value"). */
static int has_mark(pid_t pid, const char *mark, size_t mark_len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[1 << 16];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
        if (strncmp(buf + i, mark, mark_len) == 0 && buf[i + (ssize_t)mark_len] == '\0')
            return 1;
    }
    return 0;
}

void local_kill(const struct local_inst *inst)
{
    if (local_start_ticks(inst->pid) == inst->start_ticks && inst->start_ticks != 0)
        kill(-inst->pid, SIGKILL);
    char mark[160];
    int len = snprintf(mark, sizeof(mark), MARK "%s", inst->id);
    DIR *proc = opendir("/proc");
    struct dirent *de;
    for (;;) {
        de = proc != NULL ? readdir(proc) : NULL;
        if (de == NULL)
            break;
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end != '\0' || pid <= 1 || pid == (long)getpid())
            continue;
        if (has_mark((pid_t)pid, mark, (size_t)len)) {
            pid_t group = getpgid((pid_t)pid);
            if (group > 1 && group != getpgid(0))
                kill(-group, SIGKILL);
            kill((pid_t)pid, SIGKILL);
        }
    }
    if (proc != NULL)
        closedir(proc);
}
