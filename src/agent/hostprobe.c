/* The host probe: nvidia-smi run as a child process on the loop, twice:
 * the GPU query, then plain nvidia-smi for its header's CUDA version. */
#include "agent/hostprobe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebb/common.h>

#include "base/log.h"
#include "base/str.h"

#define MAX_OUTPUT (64 * 1024)

struct probe {
    struct agent_host host;
    uv_loop_t *loop;
    int64_t timeout_ms;
    bool header;         /* the second run: plain nvidia-smi */
    uv_process_t proc;
    uv_pipe_t out;
    uv_timer_t timer;
    uv_idle_t idle;      /* completes an absent nvidia-smi on a later turn */
    int open_handles;
    bool exited, eof, timed_out;
    int64_t status;
    int term_signal;
    struct ebb_buf output;
    char *path;
    agent_hostprobe_cb cb;
    void *arg;
};

/* Trims blanks at both ends in place. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* A number, or 0 for "[N/A]" and other words nvidia-smi prints instead. */
static int64_t field_number(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    return end != s && *end == '\0' && v > 0 ? v : 0;
}

int agent_hostprobe_parse(const char *csv, struct agent_gpu *gpus, size_t max)
{
    char *copy = ebb_strfmt("%s", csv);
    if (copy == NULL)
        return EBB_ENOMEM;
    size_t n = 0;
    int rc = 0;
    char *line = copy;
    while (line != NULL && *line != '\0') {
        char *nl = strchr(line, '\n');
        if (nl != NULL)
            *nl = '\0';
        line = trim(line);
        if (*line == '\0') {
            line = nl != NULL ? nl + 1 : NULL;
            continue;
        }
        /* nvidia-smi's model names contain no comma, so the line splits on
         * every comma into exactly five fields. */
        char *fields[5];
        size_t nf = 0;
        for (char *p = line;;) {
            fields[nf++] = p;
            char *comma = strchr(p, ',');
            if (comma == NULL)
                break;
            if (nf == 5) {
                nf++; /* a sixth field */
                break;
            }
            *comma = '\0';
            p = comma + 1;
        }
        if (nf != 5) {
            rc = EBB_EINVAL;
            break;
        }
        if (n < max) {
            struct agent_gpu *g = &gpus[n++];
            ebb__strlcpy(g->model, trim(fields[0]), sizeof(g->model));
            g->memory_mb = field_number(trim(fields[1]));
            g->pcie_width = (int)field_number(trim(fields[2]));
            g->pcie_gen = (int)field_number(trim(fields[3]));
            const char *driver = trim(fields[4]);
            ebb__strlcpy(g->driver, driver[0] == '[' ? "" : driver, sizeof(g->driver));
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    free(copy);
    return rc != 0 ? rc : (int)n;
}

void agent_hostprobe_cuda(const char *text, char *out, size_t size)
{
    static const char label[] = "CUDA Version:";
    out[0] = '\0';
    const char *p = strstr(text, label);
    if (p == NULL)
        return;
    p += strlen(label);
    p += strspn(p, " ");
    size_t n = strspn(p, "0123456789.");
    if (n > 0 && n < size) {
        memcpy(out, p, n);
        out[n] = '\0';
    }
}

/* nvidia-smi's full path when it is an executable on PATH, else NULL. */
static char *find_on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (path == NULL)
        return NULL;
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char *cand = len ? ebb_strfmt("%.*s/%s", (int)len, p, prog) : NULL;
        if (cand != NULL && access(cand, X_OK) == 0)
            return cand;
        free(cand);
        if (colon == NULL)
            return NULL;
        p = colon + 1;
    }
}

static void spawn(struct probe *pr);

/* Whether the run that just ended succeeded; says why not in the log. */
static bool run_ok(struct probe *pr)
{
    const char *what = pr->header ? "nvidia-smi (its header)" : "nvidia-smi";
    if (pr->timed_out) {
        ebb__warn("%s did not answer in time", what);
        return false;
    }
    if (pr->status != 0 || pr->term_signal != 0) {
        ebb__warn("%s failed (status %lld, signal %d): %s", what, (long long)pr->status,
                  pr->term_signal, pr->output.data ? pr->output.data : "");
        return false;
    }
    return true;
}

/* A run is over and its handles are closed: the next one, or the end. */
static void ran(struct probe *pr)
{
    struct agent_host *h = &pr->host;
    const char *out = pr->output.data ? pr->output.data : "";
    bool more = false;
    if (h->have_smi && !pr->header) {
        int n = -1;
        if (run_ok(pr)) {
            n = agent_hostprobe_parse(out, h->gpus, AGENT_MAX_GPUS);
            if (n < 0)
                ebb__warn("cannot read nvidia-smi's output: \"%s\"", out);
        }
        h->ok = n >= 0;
        h->n = n >= 0 ? (size_t)n : 0;
        if (!h->ok)
            ebb__warn("reporting no GPUs");
        more = h->ok;
    } else if (h->have_smi) {
        if (run_ok(pr))
            agent_hostprobe_cuda(out, h->cuda, sizeof(h->cuda));
        if (h->cuda[0] == '\0')
            ebb__warn("nvidia-smi's header gave no CUDA version; reporting it unknown");
    }
    ebb_buf_free(&pr->output);
    if (more) {
        pr->header = true;
        spawn(pr);
        return;
    }
    pr->cb(pr->arg, h);
    free(pr->path);
    free(pr);
}

static void on_closed(uv_handle_t *h)
{
    struct probe *pr = h->data;
    if (--pr->open_handles == 0)
        ran(pr);
}

static void close_all(struct probe *pr)
{
    uv_close((uv_handle_t *)&pr->proc, on_closed);
    uv_close((uv_handle_t *)&pr->out, on_closed);
    uv_close((uv_handle_t *)&pr->timer, on_closed);
}

static void maybe_done(struct probe *pr)
{
    if (pr->exited && pr->eof)
        close_all(pr);
}

static void on_exit_cb(uv_process_t *proc, int64_t status, int term_signal)
{
    struct probe *pr = proc->data;
    pr->exited = true;
    pr->status = status;
    pr->term_signal = term_signal;
    maybe_done(pr);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(suggested);
    buf->len = buf->base ? suggested : 0;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct probe *pr = s->data;
    if (nread > 0 && pr->output.len + (size_t)nread <= MAX_OUTPUT)
        ebb_buf_append(&pr->output, buf->base, (size_t)nread);
    free(buf->base);
    if (nread < 0) {
        uv_read_stop(s);
        pr->eof = true;
        maybe_done(pr);
    }
}

static void on_timeout(uv_timer_t *t)
{
    struct probe *pr = t->data;
    pr->timed_out = true;
    uv_process_kill(&pr->proc, SIGKILL);
}

static void on_idle(uv_idle_t *idle)
{
    struct probe *pr = idle->data;
    uv_idle_stop(idle);
    pr->open_handles = 1;
    uv_close((uv_handle_t *)idle, on_closed);
}

/* Starts one run of nvidia-smi: the query, or plain for the header. */
static void spawn(struct probe *pr)
{
    pr->exited = pr->eof = pr->timed_out = false;
    pr->status = 0;
    pr->term_signal = 0;
    uv_pipe_init(pr->loop, &pr->out, 0);
    uv_timer_init(pr->loop, &pr->timer);
    pr->proc.data = pr->out.data = pr->timer.data = pr;
    pr->open_handles = 3;
    char *query[] = {pr->path, AGENT_NVIDIA_SMI_QUERY, "--format=csv,noheader,nounits",
                     NULL};
    char *plain[] = {pr->path, NULL};
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_IGNORE},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&pr->out},
        {.flags = UV_INHERIT_FD, .data.fd = 2},
    };
    uv_process_options_t po = {
        .exit_cb = on_exit_cb, .file = pr->path, .args = pr->header ? plain : query,
        .stdio_count = 3, .stdio = stdio,
    };
    int rc = uv_spawn(pr->loop, &pr->proc, &po);
    if (rc != 0) {
        ebb__warn("cannot run %s: %s", pr->path, uv_strerror(rc));
        pr->exited = pr->eof = true;
        pr->status = 127;
        close_all(pr);
        return;
    }
    uv_read_start((uv_stream_t *)&pr->out, on_alloc, on_read);
    uv_timer_start(&pr->timer, on_timeout, (uint64_t)pr->timeout_ms, 0);
}

int agent_hostprobe_start(uv_loop_t *loop, int64_t timeout_ms,
                          agent_hostprobe_cb cb, void *arg)
{
    struct probe *pr = calloc(1, sizeof(*pr));
    if (pr == NULL)
        return EBB_ENOMEM;
    pr->loop = loop;
    pr->timeout_ms = timeout_ms;
    pr->cb = cb;
    pr->arg = arg;
    pr->path = find_on_path("nvidia-smi");
    pr->host.have_smi = pr->path != NULL;
    if (pr->path == NULL) {
        uv_idle_init(loop, &pr->idle);
        pr->idle.data = pr;
        uv_idle_start(&pr->idle, on_idle);
        return 0;
    }
    spawn(pr);
    return 0;
}
