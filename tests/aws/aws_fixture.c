#include "aws_fixture.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cfg_table.h"
#include "base/str.h"
#include "base/yaml_doc.h"

static void fx_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
    EBB_PRINTF(3, 4);

/* The host's log function wrapped: every line is also kept for greps. */
static void fx_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
{
    struct aws_fx *f = ((struct ebb__host *)ctx)->env->sink;
    va_list ap;
    va_start(ap, fmt);
    char *line = ebb_vstrfmt(fmt, ap);
    va_end(ap);
    if (line == NULL)
        return;
    size_t len = strlen(line);
    char *grown = realloc(f->log, f->log_len + len + 2);
    if (grown != NULL) {
        f->log = grown;
        memcpy(f->log + f->log_len, line, len);
        f->log_len += len;
        f->log[f->log_len++] = '\n';
        f->log[f->log_len] = '\0';
    }
    if (getenv("EBB_TEST_VERBOSE") != NULL)
        fprintf(stderr, "aws[%d]: %s\n", (int)level, line);
    free(line);
}

static void on_event(void *sink, const char *provider,
                     const struct ebb_instance_event *ev)
{
    struct aws_fx *f = sink;
    if (strcmp(provider, "aws") != 0 || f->n_events == 16)
        return;
    snprintf(f->event_ids[f->n_events], sizeof(f->event_ids[0]), "%s",
             ev->instance_id);
    f->events = realloc(f->events, (f->n_events + 1) * sizeof(*f->events));
    f->events[f->n_events++] = *ev;
}

static void on_market(void *sink, const char *provider)
{
    struct aws_fx *f = sink;
    if (strcmp(provider, "aws") == 0)
        f->market_changes++;
    if (f->poller_ready)
        ebb__poller_market_changed(&f->poller, provider);
}

/* The host's price_cursor, answering one time for every series but
 * those of uncursored_type. */
static ebb_time_ms fx_price_cursor(void *ctx, const struct ebb_series_key *key)
{
    struct aws_fx *f = (struct aws_fx *)((char *)ctx - offsetof(struct aws_fx, host));
    if (f->uncursored_type != NULL && key->instance_type != NULL &&
        strcmp(key->instance_type, f->uncursored_type) == 0)
        return 0;
    return f->last_price_at;
}

static void on_polled(void *arg, const char *provider, int status,
                      const struct ebb_price *prices, size_t n)
{
    struct aws_fx *f = arg;
    (void)provider;
    (void)prices;
    (void)n;
    f->polls++;
    f->poll_status = status;
}

void aws_fx_start_poller(struct aws_fx *f)
{
    const struct ebb__poll_sink sink = {.arg = f, .prices = on_polled};
    ebb__poller_init(&f->poller, &f->clock, &sink);
    f->poller_ready = 1;
    if (ebb__poller_add(&f->poller, "aws", f->p, f->self, &f->lent,
                        f->host.poll_interval) != 0)
        abort();
    ebb__poller_start(&f->poller);
}

/* `yaml` with "@URL" replaced by the fake's URL. */
static char *expand(const char *yaml, const char *url)
{
    struct ebb_buf b = {0};
    for (const char *p = yaml; *p != '\0';) {
        if (strncmp(p, "@URL", 4) == 0) {
            ebb_buf_puts(&b, url);
            p += 4;
        } else {
            ebb_buf_append(&b, p++, 1);
        }
    }
    return ebb_buf_take(&b);
}

static void on_fake_stop_closed(uv_handle_t *h)
{
    (void)h;
}

/* Runs on the fake's thread: closes the fake and this handle, which ends
 * the fake's loop. */
static void on_fake_stop(uv_async_t *a)
{
    struct aws_fx *f = a->data;
    fake_ec2_close(f->ec2, NULL, NULL);
    uv_close((uv_handle_t *)&f->fake_stop, on_fake_stop_closed);
}

static void fake_thread_main(void *arg)
{
    struct aws_fx *f = arg;
    uv_run(&f->fake_loop, UV_RUN_DEFAULT);
}

void aws_fx_start_fake_thread(struct aws_fx *f)
{
    if (uv_thread_create(&f->fake_thread, fake_thread_main, f) != 0)
        abort();
    f->fake_running = 1;
}

static int open_fx(struct aws_fx *f, const char *secret, const char *token,
                   const char *yaml, int threaded)
{
    memset(f, 0, sizeof(*f));
    f->fake_threaded = threaded;
    uv_loop_t *fake_loop = threaded ? &f->fake_loop : &f->loop;
    if (uv_loop_init(&f->loop) != 0 ||
        (threaded && (uv_loop_init(&f->fake_loop) != 0 ||
                      uv_async_init(&f->fake_loop, &f->fake_stop, on_fake_stop) != 0)) ||
        ebb__clock_init_real(&f->clock, &f->loop) != 0 ||
        ebb__http_init(&f->http, &f->loop) != 0 ||
        fake_ec2_start(&f->ec2, fake_loop, FX_AKID, secret, token) != 0) {
        fprintf(stderr, "cannot start the loop, client or fake EC2\n");
        abort();
    }
    ebb__http_set_backoff(f->http, 1, 20);

    struct ebb__plugin_path path;
    struct ebb_diag d = {{0}};
    ebb__plugin_path_init(&path, NULL);
    int rc = ebb__plugin_open(EBB__PLUGIN_PROVIDER, "aws", &path, &f->plugin, &d);
    ebb__plugin_path_free(&path);
    if (rc != 0) {
        fprintf(stderr, "%s\n", d.msg);
        abort();
    }
    f->p = f->plugin->provider;
    char *text = expand(yaml, fake_ec2_url(f->ec2));
    struct ebb__ydoc *doc;
    if (ebb__ydoc_load_buffer("ebb.yaml", text, strlen(text), &doc, &d) != 0 ||
        ebb__cfg_apply(ebb__plugin_config_keys(f->plugin),
                       ebb__plugin_config_size(f->plugin), ebb__ydoc_root(doc),
                       "providers.aws", &f->cfg, &d) != 0) {
        fprintf(stderr, "%s\n", d.msg);
        abort();
    }
    ebb__ydoc_free(doc);
    free(text);

    f->env = (struct ebb__host_env){
        .clock = &f->clock,
        .http = f->http,
        .sink = f,
        .instance_event = on_event,
        .market = f,
        .market_changed = on_market,
    };
    ebb__host_init(&f->host, &f->env, "aws");
    f->lent = f->host.host;
    f->lent.log = fx_log;
    f->lent.price_cursor = fx_price_cursor;
    f->fake_stop.data = f;
    return f->p->create(&f->lent, f->cfg, &f->self);
}

int aws_fx_open(struct aws_fx *f, const char *secret, const char *token,
                const char *yaml)
{
    return open_fx(f, secret, token, yaml, 0);
}

int aws_fx_open_threaded(struct aws_fx *f, const char *secret, const char *token,
                         const char *yaml)
{
    return open_fx(f, secret, token, yaml, 1);
}

static void on_closed(void *arg)
{
    (*(int *)arg)++;
}

static void on_clock_closed(struct ebb__clock *clock)
{
    (void)clock;
}

void aws_fx_close(struct aws_fx *f)
{
    if (f->self != NULL)
        f->p->destroy(f->self);
    f->self = NULL;
    if (f->poller_ready)
        ebb__poller_fini(&f->poller);
    f->poller_ready = 0;
    int closed = 0;
    /* The client cancels what the provider left in flight (their
     * callbacks only free) before the module is unloaded. */
    ebb__http_close(f->http, on_closed, &closed);
    if (!f->fake_threaded) {
        fake_ec2_close(f->ec2, on_closed, &closed);
    } else if (f->fake_running) {
        uv_async_send(&f->fake_stop);
        uv_thread_join(&f->fake_thread);
    } else {
        on_fake_stop(&f->fake_stop);
        uv_run(&f->fake_loop, UV_RUN_DEFAULT);
    }
    if (f->fake_threaded && uv_loop_close(&f->fake_loop) != 0) {
        fprintf(stderr, "a handle was left open on the fake's loop\n");
        abort();
    }
    ebb__host_fini(&f->host);
    ebb__clock_close(&f->clock, on_clock_closed);
    int handles = f->fake_threaded ? 1 : 2;
    while (closed < handles && uv_run(&f->loop, UV_RUN_ONCE) != 0) {
    }
    uv_run(&f->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&f->loop) != 0) {
        fprintf(stderr, "a handle was left open on the loop\n");
        abort();
    }
    ebb__cfg_free(ebb__plugin_config_keys(f->plugin), f->cfg);
    ebb__plugin_close(f->plugin);
    free(f->events);
    free(f->log);
}

static void on_deadline(uv_timer_t *t)
{
    *(int *)t->data = 1;
}

static void on_timer_closed(uv_handle_t *h)
{
    (void)h;
}

int aws_fx_run(struct aws_fx *f, const int *flag, int64_t ms)
{
    uv_timer_t t;
    int expired = 0;
    uv_timer_init(&f->loop, &t);
    t.data = &expired;
    uv_timer_start(&t, on_deadline, (uint64_t)ms, 0);
    while (!*flag && !expired)
        uv_run(&f->loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, on_timer_closed);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    return *flag;
}
