/* The job process (see job.h). */
#include "agent/job.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

extern char **environ;

/* How long the pipes may stay open after the job's main process exited: a
 * child that left the process group can hold them forever. */
#define DRAIN_MS 2000

bool agent_progress_parse(const char *line, size_t len, double *out)
{
    static const char prefix[] = "EBB_PROGRESS ";
    size_t plen = sizeof(prefix) - 1;
    if (len <= plen || len >= AGENT_LINE_MAX || memcmp(line, prefix, plen) != 0)
        return false;
    char num[AGENT_LINE_MAX];
    memcpy(num, line + plen, len - plen);
    num[len - plen] = '\0';
    char *end;
    errno = 0;
    double v = strtod(num, &end);
    while (*end == ' ' || *end == '\t' || *end == '\r')
        end++;
    if (end == num || *end != '\0' || errno != 0 || !(v >= 0.0 && v <= 1.0))
        return false;
    *out = v;
    return true;
}

void agent_linescan_feed(struct agent_linescan *ls, const char *data, size_t len,
                         void (*progress)(void *arg, double fraction), void *arg)
{
    for (size_t i = 0; i < len; i++) {
        char c = data[i];
        if (c == '\n') {
            double f;
            if (!ls->overlong && agent_progress_parse(ls->buf, ls->len, &f))
                progress(arg, f);
            ls->len = 0;
            ls->overlong = false;
        } else if (ls->len + 1 < AGENT_LINE_MAX) {
            ls->buf[ls->len++] = c;
        } else {
            ls->overlong = true;
        }
    }
}

/* A variable's name in an environment entry: the bytes before its '='
 * (all of it when there is none). */
struct env_name {
    const char *s;
    size_t len;
    size_t at; /* its index in `extra` */
};

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c != 0 ? c : (alen > blen) - (alen < blen);
}

/* Sorts by name, then by place in `extra`: the last of a run of equal
 * names is the one that wins. */
static int by_name_then_at(const void *pa, const void *pb)
{
    const struct env_name *a = pa, *b = pb;
    int c = name_cmp(a->s, a->len, b->s, b->len);
    return c != 0 ? c : (a->at > b->at) - (a->at < b->at);
}

static bool is_token(const char *s, size_t len)
{
    return len == strlen("EBB_AGENT_TOKEN") && memcmp(s, "EBB_AGENT_TOKEN", len) == 0;
}

/* Whether `sorted` (n names) holds the name s[0..len). */
static bool name_in(const struct env_name *sorted, size_t n, const char *s, size_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = name_cmp(sorted[mid].s, sorted[mid].len, s, len);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* The names of `extra` sorted once, so that each of the agent's variables
 * is looked up in O(log n): comparing every entry with every other was
 * quadratic, and a job document may carry a large environment. */
char **agent_job_environ(char *const *extra, size_t n_extra)
{
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **envp = calloc(n + n_extra + 1, sizeof(char *));
    struct env_name *names = calloc(n_extra > 0 ? n_extra : 1, sizeof(*names));
    bool *wins = calloc(n_extra > 0 ? n_extra : 1, sizeof(*wins));
    if (envp == NULL || names == NULL || wins == NULL) {
        free(envp);
        free(names);
        free(wins);
        return NULL;
    }
    for (size_t i = 0; i < n_extra; i++)
        names[i] = (struct env_name){extra[i], strcspn(extra[i], "="), i};
    qsort(names, n_extra, sizeof(*names), by_name_then_at);
    /* A name set twice in `extra` keeps its last value. */
    for (size_t i = 0; i < n_extra; i++) {
        bool last = i + 1 == n_extra ||
                    name_cmp(names[i].s, names[i].len, names[i + 1].s, names[i + 1].len) != 0;
        wins[names[i].at] = last && !is_token(names[i].s, names[i].len);
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(environ[i], "=");
        if (!is_token(environ[i], len) && !name_in(names, n_extra, environ[i], len))
            envp[k++] = environ[i];
    }
    for (size_t i = 0; i < n_extra; i++)
        if (wins[i])
            envp[k++] = extra[i];
    free(names);
    free(wins);
    return envp;
}

static void on_closed(uv_handle_t *h)
{
    struct agent_job *job = h->data;
    if (--job->open_handles == 0 && job->exited)
        job->cbs.exited(job->cbs.arg, job->status, job->term_signal);
}

static void close_all(struct agent_job *job)
{
    uv_close((uv_handle_t *)&job->proc, on_closed);
    uv_close((uv_handle_t *)&job->pipes[0], on_closed);
    uv_close((uv_handle_t *)&job->pipes[1], on_closed);
    uv_close((uv_handle_t *)&job->drain, on_closed);
}

static void maybe_done(struct agent_job *job)
{
    if (job->exited && job->eof[0] && job->eof[1] &&
        !uv_is_closing((uv_handle_t *)&job->proc))
        close_all(job);
}

static void on_drain_timeout(uv_timer_t *t)
{
    struct agent_job *job = t->data;
    ebb__warn("the job's output pipes are still open %d ms after it exited "
              "(a child outside its process group?); closing them", DRAIN_MS);
    job->eof[0] = job->eof[1] = true;
    maybe_done(job);
}

static void on_exit_cb(uv_process_t *proc, int64_t status, int term_signal)
{
    struct agent_job *job = proc->data;
    job->exited = true;
    job->status = status;
    job->term_signal = term_signal;
    /* Whatever the job left running in its group goes with it, so nothing
     * outlives the job on the instance. */
    agent_job_kill_group(job);
    uv_timer_start(&job->drain, on_drain_timeout, DRAIN_MS, 0);
    maybe_done(job);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(suggested);
    buf->len = buf->base ? suggested : 0;
}

/* Writes all of `data` to `fd`, the agent's own stdout or stderr. A
 * blocking write: when nobody reads the agent's output, the job should
 * not run ahead of it either. */
static void pass_through(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, data, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        data += w;
        len -= (size_t)w;
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct agent_job *job = s->data;
    enum agent_stream which = s == (uv_stream_t *)&job->pipes[0] ? AGENT_STDOUT
                                                                 : AGENT_STDERR;
    if (nread > 0) {
        pass_through(which == AGENT_STDOUT ? 1 : 2, buf->base, (size_t)nread);
        job->cbs.output(job->cbs.arg, which, buf->base, (size_t)nread);
        agent_linescan_feed(&job->scan[which], buf->base, (size_t)nread,
                            job->cbs.progress, job->cbs.arg);
    }
    free(buf->base);
    if (nread < 0) {
        uv_read_stop(s);
        job->eof[which] = true;
        maybe_done(job);
    }
}

int agent_job_start(struct agent_job *job, uv_loop_t *loop, char **argv,
                    char **envp, const char *workdir,
                    const struct agent_job_cbs *cbs)
{
    *job = (struct agent_job){.cbs = *cbs};
    uv_pipe_init(loop, &job->pipes[0], 0);
    uv_pipe_init(loop, &job->pipes[1], 0);
    uv_timer_init(loop, &job->drain);
    job->proc.data = job->pipes[0].data = job->pipes[1].data = job->drain.data = job;
    job->open_handles = 4;
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_IGNORE},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
         .data.stream = (uv_stream_t *)&job->pipes[0]},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
         .data.stream = (uv_stream_t *)&job->pipes[1]},
    };
    /* UV_PROCESS_DETACHED makes the child call setsid(): its own session
     * and process group, so the group can be signalled as one and a
     * terminal's ^C does not reach it behind the agent's back. */
    uv_process_options_t po = {
        .exit_cb = on_exit_cb,
        .file = argv[0],
        .args = argv,
        .env = envp,
        .cwd = workdir != NULL && workdir[0] != '\0' ? workdir : NULL,
        .flags = UV_PROCESS_DETACHED,
        .stdio_count = 3,
        .stdio = stdio,
    };
    int rc = uv_spawn(loop, &job->proc, &po);
    if (rc != 0) {
        close_all(job);
        return rc;
    }
    job->pid = job->proc.pid;
    uv_read_start((uv_stream_t *)&job->pipes[0], on_alloc, on_read);
    uv_read_start((uv_stream_t *)&job->pipes[1], on_alloc, on_read);
    return 0;
}

int agent_job_signal(struct agent_job *job, int sig)
{
    if (job->exited)
        return UV_ESRCH;
    return uv_process_kill(&job->proc, sig);
}

void agent_job_kill_group(struct agent_job *job)
{
    if (job->pid > 0)
        kill(-job->pid, SIGKILL);
}
