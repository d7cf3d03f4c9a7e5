/* Processes of local instances: start, watch, kill. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ebb/runas.h>

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

/* What /proc/PID/stat says of a process: its state, parent and start time
 * (fields 3, 4 and 22). Returns 0, or -1 when there is no such process. */
static int proc_stat(pid_t pid, char *state, pid_t *ppid, unsigned long long *ticks)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* Field 2 is "(comm)" and may hold spaces: count from its ')'. */
    char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ' || p[2] == '\0')
        return -1;
    *state = p[2];
    *ppid = (pid_t)strtol(p + 3, NULL, 10);
    int field = 2;
    for (p++; *p != '\0' && field < 22; p++)
        if (*p == ' ')
            field++;
    *ticks = field == 22 ? strtoull(p, NULL, 10) : 0;
    return 0;
}

unsigned long long local_start_ticks(pid_t pid)
{
    char state;
    pid_t ppid;
    unsigned long long ticks;
    if (proc_stat(pid, &state, &ppid, &ticks) != 0 || state == 'Z' || state == 'X')
        return 0;
    return ticks;
}

/* "NAME=value" appended to env[*n] when it fits. */
static void env_put(char **env, size_t *n, const char *name, const char *value)
{
    if (value != NULL && asprintf(&env[*n], "%s=%s", name, value) >= 0)
        (*n)++;
}

/* The environment the agent gets: only what it needs, never ebbd's own
 * (which may hold cloud credentials). HOME, USER and LOGNAME are the
 * job's user's, not ebbd's. */
static char **agent_env(const struct local_inst *inst, const struct ebb_launch *req,
                        const char *agent_token, const struct ebb_runas *who)
{
    static const char *const keep[] = {"PATH", "LANG", "TZ", "TMPDIR"};
    size_t n = 0;
    char **env = calloc(sizeof(keep) / sizeof(keep[0]) + 7, sizeof(*env));
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
        env_put(env, &n, keep[i], getenv(keep[i]));
    env_put(env, &n, "HOME", who->home);
    env_put(env, &n, "USER", who->name);
    env_put(env, &n, "LOGNAME", who->name);
    env_put(env, &n, "EBB_AGENT_TOKEN", agent_token);
    env_put(env, &n, "EBB_LOCAL_INSTANCE", inst->id);
    /* Which market offer the process stands for (run_on: sim -> local),
     * so that a wrapper can play a host of that type (tests/e2e). */
    env_put(env, &n, "EBB_LOCAL_INSTANCE_TYPE", req->instance_type);
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

/* The CA for the agent as a descriptor it inherits, named
 * /proc/self/fd/N on its command line: the job's user may not enter
 * ebbd's state directory, where the file is, but may read an open file
 * of mode 0644 through its descriptor. -1 without a CA (ok stays 1) or
 * when it cannot be written (ok 0, logged). */
static int open_ca(struct local *l, const char *pem, char *name, size_t len, int *ok)
{
    *ok = 1;
    if (pem == NULL)
        return -1;
    char *path = write_ca(l, pem);
    int fd = path ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (path != NULL && fd < 0)
        l->host->log(l->host->ctx, EBB_LOG_ERROR, "cannot open %s: %s", path,
                     strerror(errno));
    free(path);
    *ok = fd >= 0;
    snprintf(name, len, "/proc/self/fd/%d", fd);
    return fd;
}

/* The steps of the child between fork and exec; a failed one is reported
 * to the parent through the status pipe as {step, errno}. */
enum spawn_step { STEP_SESSION, STEP_STDIO, STEP_FDS, STEP_USER, STEP_EXEC };

/* Descriptors the child keeps: its stdin and stdout/stderr, and the CA
 * (-1: none), which stays at its number. */
struct child_fds {
    int null_fd, log_fd, ca_fd;
};

static const char *const step_names[] = {
    [STEP_SESSION] = "setsid", [STEP_STDIO] = "dup2",
    [STEP_FDS] = "close_range", [STEP_USER] = "becoming the job's user",
    [STEP_EXEC] = "exec",
};

/* The child's steps: a session of its own, so ebbd's signals and
 * terminal never reach it and its group is the instance's to kill; every
 * descriptor but stdio closed at exec (ebbd's store, sockets and keys
 * never reach the job's user); then the job's user, and the cwd its home
 * (ebbd's may be closed to it). Only async-signal-safe calls: ebbd has
 * threads. Returns a negative errno with *step the one that failed; on
 * success it does not return. */
static int child_steps(const struct child_fds *fds, const struct ebb_runas *who,
                       const char *agent, char *const argv[], char *const env[],
                       int *step)
{
    *step = STEP_SESSION;
    if (setsid() < 0)
        return -errno;
    *step = STEP_STDIO;
    if (dup2(fds->null_fd, 0) < 0 || dup2(fds->log_fd, 1) < 0 ||
        dup2(fds->log_fd, 2) < 0)
        return -errno;
    *step = STEP_FDS;
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0 ||
        (fds->ca_fd > 2 && fcntl(fds->ca_fd, F_SETFD, 0) != 0))
        return -errno;
    *step = STEP_USER;
    int rc = ebb_runas_become(who);
    if (rc != 0)
        return rc;
    if (chdir(who->home) != 0 && chdir("/") != 0)
        return -errno;
    *step = STEP_EXEC;
    execve(agent, argv, env);
    return -errno;
}

static void child(int status_fd, const struct child_fds *fds, const struct ebb_runas *who,
                  const char *agent, char *const argv[], char *const env[])
{
    int report[2] = {0, 0};
    report[1] = -child_steps(fds, who, agent, argv, env, &report[0]);
    ssize_t w = write(status_fd, report, sizeof(report));
    (void)w;
    _exit(127);
}

/* Reads the child's report: 0 once exec closed the pipe, else the step
 * that failed. It blocks the loop only while the child runs from fork to
 * exec, as posix_spawn would. */
static int child_status(int fd, int step[2])
{
    for (int tries = 0; tries < 100; tries++) {
        ssize_t n = read(fd, step, 2 * sizeof(int));
        if (n < 0 && errno == EINTR)
            continue;
        return n == (ssize_t)(2 * sizeof(int)) ? -1 : 0;
    }
    return 0;
}

int local_spawn(struct local *l, struct local_inst *inst, const struct ebb_launch *req,
                const char *agent_token, const struct ebb_runas *who)
{
    const char *tls_pin = EBB_HAS(struct ebb_launch, req, agent_tls_pin) ? req->agent_tls_pin
                                                                        : NULL;
    const char *tls_ca = EBB_HAS(struct ebb_launch, req, agent_tls_ca) ? req->agent_tls_ca
                                                                      : NULL;
    char *metadata = NULL, *log = NULL;
    char **env = agent_env(inst, req, agent_token, who);
    if (asprintf(&metadata, "%s/imds/%s", req->agent_url, inst->key) < 0)
        metadata = NULL;
    if (asprintf(&log, "%s/%s.agent.log", l->dir, inst->key) < 0)
        log = NULL;
    char ca_name[64];
    int ca_ok;
    struct child_fds fds = {.null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)};
    /* Opened here, as ebbd: the agent's log stays ebbd's file, which the
     * agent only appends to. Why it could not be opened is kept for the
     * message: a log file that cannot be created is not an agent that
     * cannot start. */
    fds.log_fd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
                            0640) : -1;
    int log_errno = errno;
    /* The instance's own disk, once its log is open (a log that cannot be
     * opened is named as such). */
    char *disk = NULL;
    int disk_rc = fds.log_fd >= 0 && l->private_disks ? local_disk_create(l, inst, who, &disk)
                                                      : 0;
    fds.ca_fd = open_ca(l, tls_ca, ca_name, sizeof(ca_name), &ca_ok);
    const char *trust = fds.ca_fd >= 0 ? "--ebbd-ca" : tls_pin ? "--ebbd-pin" : NULL;
    char *argv[10] = {l->agent, "--ebbd", (char *)req->agent_url,
                      "--metadata", metadata};
    size_t argc = 5;
    if (disk != NULL) {
        argv[argc++] = "--disk";
        argv[argc++] = (char *)disk;
    }
    if (trust != NULL) {
        argv[argc++] = (char *)trust;
        argv[argc++] = fds.ca_fd >= 0 ? ca_name : (char *)tls_pin;
    }
    int rc = EBB_EIO;
    int pipe_fds[2] = {-1, -1};
    if (disk_rc != 0) {
        rc = disk_rc; /* logged */
    } else if (env != NULL && metadata != NULL && fds.null_fd >= 0 && fds.log_fd >= 0 &&
               ca_ok && pipe2(pipe_fds, O_CLOEXEC) == 0) {
        pid_t pid = fork();
        if (pid == 0)
            child(pipe_fds[1], &fds, who, l->agent, argv, env);
        int err = pid < 0 ? errno : 0;
        close(pipe_fds[1]);
        int step[2] = {0, 0};
        if (pid > 0 && child_status(pipe_fds[0], step) == 0) {
            inst->pid = pid;
            inst->ours = 1;
            inst->start_ticks = local_start_ticks(pid);
            rc = 0;
        } else {
            if (pid > 0) {
                local_reap_later(l, pid);
                err = step[1];
            }
            l->host->log(l->host->ctx, EBB_LOG_ERROR, "cannot start %s as %s "
                         "(uid %ld): %s: %s", l->agent, who->name, (long)who->uid,
                         pid > 0 ? step_names[step[0]] : "fork", strerror(err));
            /* The user may not be become, or may not run the agent: the
             * same next time, so the job is told rather than retried. */
            rc = err == EPERM || err == EACCES ? EBB_EPERM : EBB_EIO;
        }
        close(pipe_fds[0]);
    } else if (log != NULL && fds.log_fd < 0) {
        l->host->log(l->host->ctx, EBB_LOG_ERROR, "cannot open the agent's log "
                     "%s: %s", log, strerror(log_errno));
    } else {
        l->host->log(l->host->ctx, EBB_LOG_ERROR, "cannot start %s: %s",
                     l->agent, strerror(errno));
    }
    if (fds.null_fd >= 0)
        close(fds.null_fd);
    if (fds.log_fd >= 0)
        close(fds.log_fd);
    if (fds.ca_fd >= 0)
        close(fds.ca_fd);
    free_env(env);
    free(metadata);
    free(log);
    free(disk);
    return rc;
}

void local_reap_later(struct local *l, pid_t pid)
{
    if (waitpid(pid, NULL, WNOHANG) != 0)
        return; /* reaped now, or not a child of ours */
    if (l->n_reap == l->cap_reap) {
        size_t cap = l->cap_reap ? l->cap_reap * 2 : 8;
        pid_t *more = realloc(l->reap, cap * sizeof(*more));
        if (more == NULL)
            return; /* a zombie until ebbd exits: better than a crash */
        l->reap = more;
        l->cap_reap = cap;
    }
    l->reap[l->n_reap++] = pid;
}

void local_reap(struct local *l)
{
    size_t kept = 0;
    for (size_t i = 0; i < l->n_reap; i++)
        if (waitpid(l->reap[i], NULL, WNOHANG) == 0)
            l->reap[kept++] = l->reap[i];
    l->n_reap = kept;
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

/* Whether process `pid` is part of the instance: it carries the mark in
 * its environment (readable when it is ebbd's own user's or ebbd is root),
 * or it is a child of the instance's agent (the job, in a session of its
 * own; /proc/PID/stat is readable whoever runs it). */
static int of_instance(pid_t pid, const struct local_inst *inst, int agent_alive,
                       const char *mark, size_t mark_len)
{
    char state;
    pid_t ppid;
    unsigned long long ticks;
    if (agent_alive && proc_stat(pid, &state, &ppid, &ticks) == 0 && ppid == inst->pid)
        return 1;
    return has_mark(pid, mark, mark_len);
}

void local_kill(const struct local_inst *inst)
{
    int alive = inst->start_ticks != 0 && local_start_ticks(inst->pid) == inst->start_ticks;
    /* Stopped first, so that the agent starts nothing while its children
     * are looked for, and they keep it as their parent until then. */
    if (alive)
        kill(-inst->pid, SIGSTOP);
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
        if (of_instance((pid_t)pid, inst, alive, mark, (size_t)len)) {
            pid_t group = getpgid((pid_t)pid);
            if (group > 1 && group != getpgid(0))
                kill(-group, SIGKILL);
            kill((pid_t)pid, SIGKILL);
        }
    }
    if (proc != NULL)
        closedir(proc);
    if (alive)
        kill(-inst->pid, SIGKILL);
}
