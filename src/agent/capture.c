/* A program run as a child on the loop, its standard output kept (see
 * capture.h). */
#include "agent/capture.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebb/common.h>

#include "base/log.h"
#include "base/str.h"

struct capture {
    uv_process_t proc;
    uv_pipe_t out;
    uv_timer_t timer;
    int open_handles;
    bool exited, eof, timed_out;
    int64_t status;
    int term_signal;
    struct ebb_buf output;
    char *what;
    agent_capture_cb cb;
    void *arg;
};

/* Whether the run succeeded; says why not in the log. */
static bool run_ok(const struct capture *c)
{
    if (c->timed_out) {
        ebb__warn("%s did not answer in time", c->what);
        return false;
    }
    if (c->status != 0 || c->term_signal != 0) {
        ebb__warn("%s failed (status %lld, signal %d): %s", c->what, (long long)c->status,
                  c->term_signal, c->output.data ? c->output.data : "");
        return false;
    }
    return true;
}

static void on_closed(uv_handle_t *h)
{
    struct capture *c = h->data;
    if (--c->open_handles > 0)
        return;
    c->cb(c->arg, run_ok(c), c->output.data ? c->output.data : "");
    ebb_buf_free(&c->output);
    free(c->what);
    free(c);
}

static void close_all(struct capture *c)
{
    uv_close((uv_handle_t *)&c->proc, on_closed);
    uv_close((uv_handle_t *)&c->out, on_closed);
    uv_close((uv_handle_t *)&c->timer, on_closed);
}

static void maybe_done(struct capture *c)
{
    if (c->exited && c->eof)
        close_all(c);
}

static void on_exit_cb(uv_process_t *proc, int64_t status, int term_signal)
{
    struct capture *c = proc->data;
    c->exited = true;
    c->status = status;
    c->term_signal = term_signal;
    maybe_done(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(suggested);
    buf->len = buf->base ? suggested : 0;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct capture *c = s->data;
    if (nread > 0 && c->output.len + (size_t)nread <= AGENT_CAPTURE_MAX)
        ebb_buf_append(&c->output, buf->base, (size_t)nread);
    free(buf->base);
    if (nread < 0) {
        uv_read_stop(s);
        c->eof = true;
        maybe_done(c);
    }
}

static void on_timeout(uv_timer_t *t)
{
    struct capture *c = t->data;
    c->timed_out = true;
    uv_process_kill(&c->proc, SIGKILL);
}

int agent_capture_start(uv_loop_t *loop, char *const argv[], int64_t timeout_ms,
                        const char *what, agent_capture_cb cb, void *arg)
{
    struct capture *c = calloc(1, sizeof(*c));
    if (c == NULL || (c->what = ebb_strfmt("%s", what)) == NULL) {
        free(c);
        return EBB_ENOMEM;
    }
    c->cb = cb;
    c->arg = arg;
    uv_pipe_init(loop, &c->out, 0);
    uv_timer_init(loop, &c->timer);
    c->proc.data = c->out.data = c->timer.data = c;
    c->open_handles = 3;
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_IGNORE},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&c->out},
        {.flags = UV_INHERIT_FD, .data.fd = 2},
    };
    uv_process_options_t po = {
        .exit_cb = on_exit_cb, .file = argv[0], .args = (char **)argv,
        .stdio_count = 3, .stdio = stdio,
    };
    int rc = uv_spawn(loop, &c->proc, &po);
    if (rc != 0) {
        ebb__warn("cannot run %s: %s", argv[0], uv_strerror(rc));
        c->exited = c->eof = true;
        c->status = 127;
        close_all(c);
        return 0;
    }
    uv_read_start((uv_stream_t *)&c->out, on_alloc, on_read);
    uv_timer_start(&c->timer, on_timeout, (uint64_t)timeout_ms, 0);
    return 0;
}

char *agent_find_program(const char *prog)
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
