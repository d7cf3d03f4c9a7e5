/* The fakes and the agent runner for the agent tests (see fake.h). */
#include "fake.h"

#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "jobs.h"

/* ---- fake ebbd ---- */

static bool authorized(const struct ebb__httpd_request *req)
{
    const char *auth = ebb__httpd_header(req, "Authorization");
    return auth != NULL && strcmp(auth, "Bearer " FAKE_TOKEN) == 0;
}

static void ebbd_handler(const struct ebb__httpd_request *req,
                         struct ebb__httpd_response *res, void *arg)
{
    struct fake *f = arg;
    /* A store's presigned GET: no token of the agent's may reach it. */
    if (strcmp(req->path, "/store/obj") == 0) {
        f->object_gets++;
        if (ebb__httpd_header(req, "Authorization") != NULL) {
            res->status = 400;
            ebb__httpd_set_bodyf(res, "an Authorization header reached the store");
        } else if (f->object_gets <= f->object_fail_first) {
            res->status = 503;
            ebb__httpd_set_bodyf(res, "<Error><Code>SlowDown</Code></Error>");
        } else if (f->object == NULL) {
            res->status = 404;
        } else {
            ebb__httpd_set_body(res, f->object, f->object_len);
        }
        return;
    }
    if (!authorized(req)) {
        f->refused++;
        res->status = 401;
        ebb__httpd_set_bodyf(res, "{\"error\": \"no live instance holds this token\"}");
        return;
    }
    if (strcmp(req->method, "GET") == 0 && strcmp(req->path, "/v1/agent/job") == 0) {
        ebb__httpd_set_bodyf(res, "%s", f->job_json ? f->job_json : "{}");
    } else if (strcmp(req->method, "POST") == 0 &&
               strcmp(req->path, "/v1/agent/events") == 0) {
        json_t *ev = json_loadb(req->body, req->body_len, 0, NULL);
        if (!json_is_object(ev)) {
            json_decref(ev);
            res->status = 400;
            ebb__httpd_set_bodyf(res, "{\"error\": \"not a JSON object\"}");
            return;
        }
        json_array_append(f->events, ev);
        ebb__httpd_set_bodyf(res, "{\"command\": \"none\"}");
        if (f->hook != NULL)
            f->hook(f, ev, res);
        json_decref(ev);
    } else if (strcmp(req->method, "POST") == 0 &&
               strcmp(req->path, "/v1/agent/log") == 0) {
        f->log_posts++;
        if (strcmp(req->query, "stream=stdout") == 0)
            ebb_buf_append(&f->out, req->body, req->body_len);
        else if (strcmp(req->query, "stream=stderr") == 0)
            ebb_buf_append(&f->err, req->body, req->body_len);
        else
            res->status = 400;
    } else if (f->route == NULL || !f->route(f, req, res)) {
        res->status = 404;
        ebb__httpd_set_bodyf(res, "{\"error\": \"no such path\"}");
    }
}

/* ---- fake metadata service ---- */

static void imds_handler(const struct ebb__httpd_request *req,
                         struct ebb__httpd_response *res, void *arg)
{
    struct fake *f = arg;
    const char *ttl_name = f->alibaba ? "X-aliyun-ecs-metadata-token-ttl-seconds"
                                      : "X-aws-ec2-metadata-token-ttl-seconds";
    const char *tok_name = f->alibaba ? "X-aliyun-ecs-metadata-token"
                                      : "X-aws-ec2-metadata-token";
    const char *notice_path = f->alibaba ? "/latest/meta-data/instance/spot/termination-time"
                                         : "/latest/meta-data/spot/instance-action";
    if (strcmp(req->path, "/latest/api/token") == 0) {
        const char *ttl = ebb__httpd_header(req, ttl_name);
        long v = ttl ? strtol(ttl, NULL, 10) : 0;
        if (strcmp(req->method, "PUT") != 0 || v < 1 || v > 21600) {
            res->status = 400;
            return;
        }
        f->imds_tokens++;
        snprintf(f->imds_token, sizeof(f->imds_token), "imds-token-%d", f->imds_tokens);
        f->imds_token_uses = 0;
        ebb__httpd_set_bodyf(res, "%s", f->imds_token);
        return;
    }
    if (strcmp(req->method, "GET") != 0 || strcmp(req->path, notice_path) != 0) {
        res->status = 404;
        return;
    }
    const char *tok = ebb__httpd_header(req, tok_name);
    bool valid = tok != NULL && f->imds_token[0] != '\0' && strcmp(tok, f->imds_token) == 0;
    if (valid && f->imds_token_max_uses > 0 && f->imds_token_uses >= f->imds_token_max_uses)
        valid = false;  /* the token "expired" */
    if (!valid) {
        f->imds_refused++;
        res->status = 401;
        return;
    }
    f->imds_token_uses++;
    f->imds_ok_queries++;
    if (!f->notice) {
        res->status = 404;
        ebb__httpd_set_bodyf(res, "<html>404 - Not Found</html>");
    } else if (f->alibaba) {
        ebb__httpd_set_bodyf(res, "2099-01-01T00:00:00Z");
    } else {
        ebb__httpd_add_header(res, "Content-Type", "application/json");
        ebb__httpd_set_bodyf(res, "{\n  \"action\": \"terminate\",\n"
                                  "  \"time\": \"2099-01-01T00:00:00Z\"\n}");
    }
}

void fake_post_notice(struct fake *f)
{
    f->notice = true;
    f->notice_posted_ns = uv_hrtime();
}

/* ---- setup ---- */

static void on_watchdog(uv_timer_t *t)
{
    struct fake *f = t->data;
    f->watchdog_fired = true;
}

void fake_init(struct fake *f, int watchdog_ms)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "%s/ebb-agent-test.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->ckpt_dir, sizeof(f->ckpt_dir), "%s/ckpt", f->dir);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    uv_timer_init(&f->loop, &f->watchdog);
    f->watchdog.data = f;
    uv_timer_start(&f->watchdog, on_watchdog, (uint64_t)watchdog_ms, 0);
    f->events = json_array();
    assert_int_equal(ebb__httpd_start(&f->ebbd, &f->loop, ebbd_handler, f), 0);
    f->ebbd_port = ebb__httpd_port(f->ebbd);
    f->ebbd_hold_fd = -1;
    assert_int_equal(ebb__httpd_start(&f->imds, &f->loop, imds_handler, f), 0);
}

static void on_ebbd_closed(void *arg)
{
    bool *closed = arg;
    *closed = true;
}

/* While ebbd is "down" its port stays bound by a socket that does not
 * listen: the agent's connections are refused, as they would be, and
 * neither another test's server nor the agent's own connection (a TCP
 * self-connect to a free port in the ephemeral range) can take the port
 * and answer in ebbd's place. */
void fake_ebbd_down(struct fake *f)
{
    bool closed = false;
    ebb__httpd_close(f->ebbd, on_ebbd_closed, &closed);
    f->ebbd = NULL;
    while (!closed)
        uv_run(&f->loop, UV_RUN_ONCE);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(f->ebbd_port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    f->ebbd_hold_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(f->ebbd_hold_fd >= 0);
    assert_int_equal(setsockopt(f->ebbd_hold_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
    assert_int_equal(bind(f->ebbd_hold_fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
}

void fake_ebbd_up(struct fake *f)
{
    close(f->ebbd_hold_fd);
    f->ebbd_hold_fd = -1;
    assert_int_equal(ebb__httpd_listen(&f->ebbd, &f->loop, "127.0.0.1", f->ebbd_port,
                                       ebbd_handler, f), 0);
}

void fake_set_job(struct fake *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(f->job_json);
    f->job_json = ebb_vstrfmt(fmt, ap);
    va_end(ap);
    assert_non_null(f->job_json);
}

const char *fake_script(struct fake *f, const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", f->dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    assert_int_equal(chmod(path, 0755), 0);
    return path;
}

/* ---- the agent ---- */

static void on_agent_closed(uv_handle_t *h)
{
    struct fake *f = h->data;
    f->agent_handles--;
}

static void on_agent_exit(uv_process_t *p, int64_t status, int sig)
{
    struct fake *f = p->data;
    f->agent_exited = true;
    f->agent_status = status;
    f->agent_signal = sig;
    uv_close((uv_handle_t *)p, on_agent_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(suggested);
    buf->len = buf->base ? suggested : 0;
}

static void on_agent_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct fake *f = s->data;
    struct ebb_buf *b = s == (uv_stream_t *)&f->agent_pipes[0] ? &f->agent_out
                                                                 : &f->agent_err;
    if (n > 0)
        ebb_buf_append(b, buf->base, (size_t)n);
    free(buf->base);
    if (n < 0)
        uv_close((uv_handle_t *)s, on_agent_closed);
}

void fake_start_agent(struct fake *f, const char *token, const char *path_prefix,
                      const char *const *extra)
{
    const char *exe = getenv("EBB_AGENT");
    assert_non_null(exe);
    char ebbd_url[64], imds_url[64];
    snprintf(ebbd_url, sizeof(ebbd_url), "http://127.0.0.1:%u", f->ebbd_port);
    snprintf(imds_url, sizeof(imds_url), "%s", ebb__httpd_url(f->imds));
    const char *args[32] = {exe, "--ebbd", ebbd_url, "--metadata", imds_url,
                            "--metadata-interval", "100ms", "--metadata-kind",
                            f->alibaba ? "alibaba" : "aws"};
    size_t n = 9;
    for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 31; i++)
        args[n++] = extra[i];
    args[n] = NULL;

    /* The agent's environment: ours, the token, and PATH as asked. */
    extern char **environ;
    size_t n_env = 0;
    while (environ[n_env] != NULL)
        n_env++;
    char **env = calloc(n_env + 3, sizeof(char *));
    assert_non_null(env);
    size_t k = 0;
    char *tok = ebb_strfmt("EBB_AGENT_TOKEN=%s", token);
    char *path = NULL;
    if (path_prefix != NULL)
        path = ebb_strfmt("PATH=%s:%s", path_prefix, getenv("PATH") ? getenv("PATH") : "");
    for (size_t i = 0; i < n_env; i++)
        if (strncmp(environ[i], "EBB_AGENT_TOKEN=", 16) != 0 &&
            (path == NULL || strncmp(environ[i], "PATH=", 5) != 0))
            env[k++] = environ[i];
    env[k++] = tok;
    if (path != NULL)
        env[k++] = path;

    uv_pipe_init(&f->loop, &f->agent_pipes[0], 0);
    uv_pipe_init(&f->loop, &f->agent_pipes[1], 0);
    f->agent.data = f->agent_pipes[0].data = f->agent_pipes[1].data = f;
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_IGNORE},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
         .data.stream = (uv_stream_t *)&f->agent_pipes[0]},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
         .data.stream = (uv_stream_t *)&f->agent_pipes[1]},
    };
    uv_process_options_t po = {
        .exit_cb = on_agent_exit, .file = exe, .args = (char **)args, .env = env,
        .stdio_count = 3, .stdio = stdio,
    };
    assert_int_equal(uv_spawn(&f->loop, &f->agent, &po), 0);
    f->agent_handles = 3;
    uv_read_start((uv_stream_t *)&f->agent_pipes[0], on_alloc, on_agent_read);
    uv_read_start((uv_stream_t *)&f->agent_pipes[1], on_alloc, on_agent_read);
    free(tok);
    free(path);
    free(env);
}

bool fake_agent_done(struct fake *f)
{
    return f->agent_exited && f->agent_handles == 0;
}

void fake_run_until(struct fake *f, bool (*done)(struct fake *f))
{
    while (!done(f) && !f->watchdog_fired)
        uv_run(&f->loop, UV_RUN_ONCE);
    if (f->watchdog_fired)
        fprintf(stderr, "watchdog fired; the agent said:\n%s\n",
                f->agent_err.data ? f->agent_err.data : "");
    assert_false(f->watchdog_fired);
}

static void on_sleep(uv_timer_t *t)
{
    bool *fired = t->data;
    *fired = true;
}

void fake_run_for(struct fake *f, int ms)
{
    uv_timer_t t;
    bool fired = false;
    uv_timer_init(&f->loop, &t);
    t.data = &fired;
    uv_timer_start(&t, on_sleep, (uint64_t)ms, 0);
    while (!fired)
        uv_run(&f->loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&f->loop, UV_RUN_NOWAIT);
}

size_t fake_count(const struct fake *f, const char *kind)
{
    size_t n = 0, i;
    json_t *ev;
    json_array_foreach(f->events, i, ev)
        if (strcmp(json_string_value(json_object_get(ev, "kind")), kind) == 0)
            n++;
    return n;
}

json_t *fake_event(const struct fake *f, const char *kind, size_t nth)
{
    size_t i;
    json_t *ev;
    json_array_foreach(f->events, i, ev)
        if (strcmp(json_string_value(json_object_get(ev, "kind")), kind) == 0 && nth-- == 0)
            return ev;
    return NULL;
}

char *fake_kinds(const struct fake *f)
{
    struct ebb_buf b = {0};
    size_t i;
    json_t *ev;
    ebb_buf_puts(&b, "");
    json_array_foreach(f->events, i, ev) {
        const char *kind = json_string_value(json_object_get(ev, "kind"));
        if (strcmp(kind, "heartbeat") == 0)
            continue;
        ebb_buf_printf(&b, "%s%s", b.len ? "," : "", kind);
    }
    return ebb_buf_take(&b);
}

void fake_next_run(struct fake *f)
{
    json_array_clear(f->events);
    ebb_buf_free(&f->out);
    ebb_buf_free(&f->err);
    ebb_buf_free(&f->agent_out);
    ebb_buf_free(&f->agent_err);
    f->agent_exited = false;
    f->hook = NULL;
}

void fake_job_script(struct fake *f, const char *text, const char *args, int steps,
                     const char *ckpt, const char *more)
{
    const char *path = fake_script(f, "job.sh", text);
    char argv[1024];
    snprintf(argv, sizeof(argv), "[\"%s\"%s]", path, args);
    fake_set_job(f, JOB_DOC, argv, "false", steps, f->dir, f->ckpt_dir, ckpt, more);
}

const char *fake_nvidia_smi(struct fake *f, const char *gpus, const char *drivers)
{
    static char bin[300];
    const char *smi = getenv("FAKE_NVIDIA_SMI");
    assert_non_null(smi);
    snprintf(bin, sizeof(bin), "%s/bin", f->dir);
    assert_true(mkdir(bin, 0700) == 0 || errno == EEXIST);
    char link[400];
    snprintf(link, sizeof(link), "%s/nvidia-smi", bin);
    unlink(link);
    assert_int_equal(symlink(smi, link), 0);
    if (gpus != NULL)
        fake_script(f, "bin/nvidia-smi.gpus", gpus);
    if (drivers != NULL)
        fake_script(f, "bin/nvidia-smi.drivers", drivers);
    return bin;
}

bool fake_has(const struct ebb_buf *b, const char *needle)
{
    return b->data != NULL && strstr(b->data, needle) != NULL;
}

int64_t fake_ev_int(json_t *ev, const char *key)
{
    assert_non_null(ev);
    json_t *v = json_object_get(ev, key);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

bool fake_ev_bool(json_t *ev, const char *key)
{
    assert_non_null(ev);
    json_t *v = json_object_get(ev, key);
    assert_true(json_is_boolean(v));
    return json_is_true(v);
}

const char *fake_ev_str(json_t *ev, const char *key)
{
    assert_non_null(ev);
    const char *s = json_string_value(json_object_get(ev, key));
    assert_non_null(s);
    return s;
}

void fake_assert_kinds(struct fake *f, const char *want)
{
    char *kinds = fake_kinds(f);
    if (strcmp(kinds, want) != 0)
        fprintf(stderr, "events: %s\nwanted: %s\nagent said:\n%s\n", kinds, want,
                f->agent_err.data ? f->agent_err.data : "");
    assert_string_equal(kinds, want);
    free(kinds);
}

static void on_closed(void *arg)
{
    (void)arg;
}

void fake_close(struct fake *f)
{
    if (!f->agent_exited && f->agent_handles > 0)
        uv_process_kill(&f->agent, SIGKILL);
    while (f->agent_handles > 0)
        uv_run(&f->loop, UV_RUN_ONCE);
    if (f->ebbd != NULL)
        ebb__httpd_close(f->ebbd, on_closed, NULL);
    if (f->ebbd_hold_fd >= 0)
        close(f->ebbd_hold_fd);
    ebb__httpd_close(f->imds, on_closed, NULL);
    uv_close((uv_handle_t *)&f->watchdog, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    json_decref(f->events);
    free(f->job_json);
    free(f->object);
    ebb_buf_free(&f->out);
    ebb_buf_free(&f->err);
    ebb_buf_free(&f->agent_out);
    ebb_buf_free(&f->agent_err);
    char *cmd = ebb_strfmt("rm -rf '%s'", f->dir);
    if (cmd != NULL && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", f->dir);
    free(cmd);
}
