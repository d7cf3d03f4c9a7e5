#include "provider_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/diag.h>

#include "base/cfg_table.h"
#include "base/yaml_doc.h"

#define WATCHDOG_MS 20000

static struct pfx *from_ctx(void *ctx)
{
    return (struct pfx *)((char *)ctx - offsetof(struct pfx, host));
}

static void capture_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
    EBB_PRINTF(3, 4);

static void capture_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
{
    struct pfx *f = from_ctx(ctx);
    va_list ap;
    va_start(ap, fmt);
    char *line = ebb_vstrfmt(fmt, ap);
    va_end(ap);
    assert_non_null(line);
    ebb_buf_printf(&f->log, "%d %s\n", (int)level, line);
    if (getenv("PFX_VERBOSE") != NULL)
        fprintf(stderr, "plugin log: %s\n", line);
    free(line);
}

static void sink_event(void *sink, const char *provider,
                       const struct ebb_instance_event *ev)
{
    struct pfx *f = sink;
    (void)provider;
    assert_true(f->n_events < sizeof(f->events) / sizeof(f->events[0]));
    struct pfx_event *e = &f->events[f->n_events++];
    e->kind = ev->kind;
    snprintf(e->id, sizeof(e->id), "%s", ev->instance_id);
    snprintf(e->reason, sizeof(e->reason), "%s", ev->reason ? ev->reason : "");
}

static void sink_market(void *sink, const char *provider)
{
    struct pfx *f = sink;
    (void)provider;
    f->market_changes++;
}

static void sink_prices(void *arg, const char *provider, int status,
                        const struct ebb_price *prices, size_t n)
{
    struct pfx *f = arg;
    if (f->polled < (int)(sizeof(f->polled_at) / sizeof(f->polled_at[0])))
        f->polled_at[f->polled] = ebb__clock_now(&f->clock);
    f->polled++;
    f->poll_status = status;
    f->poll_prices = n;
    size_t inserted;
    if (n > 0)
        assert_int_equal(ebb__store_put_prices(f->store, provider, prices, n,
                                               &inserted),
                         0);
}

static void on_watchdog(uv_timer_t *t)
{
    struct pfx *f = t->data;
    f->watchdog_fired = 1;
}

void pfx_init(struct pfx *f, ebb__httpd_handler handler, void *arg)
{
    memset(f, 0, sizeof(*f));
    assert_int_equal(uv_loop_init(&f->loop), 0);
    uv_timer_init(&f->loop, &f->watchdog);
    f->watchdog.data = f;
    uv_timer_start(&f->watchdog, on_watchdog, WATCHDOG_MS, 0);
    uv_unref((uv_handle_t *)&f->watchdog);
    assert_int_equal(ebb__httpd_start(&f->srv, &f->loop, handler, arg), 0);
    assert_int_equal(ebb__http_init(&f->http, &f->loop), 0);
    ebb__http_set_backoff(f->http, 1, 10);
    assert_int_equal(ebb__clock_init_real(&f->clock, &f->loop), 0);
    char err[256];
    assert_int_equal(ebb__store_open(":memory:", &f->store, err, sizeof(err)), 0);
    f->env = (struct ebb__host_env){
        .clock = &f->clock,
        .http = f->http,
        .store = f->store,
        .sink = f,
        .instance_event = sink_event,
        .market = f,
        .market_changed = sink_market,
    };
}

int pfx_create(struct pfx *f, const char *name, const char *yaml)
{
    struct ebb__plugin_path path;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__plugin_path_init(&path, NULL), 0);
    int rc = ebb__plugin_open(EBB__PLUGIN_PROVIDER, name, &path, &f->plugin, &d);
    ebb__plugin_path_free(&path);
    if (rc != 0)
        fail_msg("%s", d.msg);
    f->p = f->plugin->provider;

    struct ebb_buf text = {0};
    const char *url = ebb__httpd_url(f->srv);
    for (const char *s = yaml; *s != '\0';) {
        if (strncmp(s, "@URL@", 5) == 0) {
            ebb_buf_puts(&text, url);
            s += 5;
        } else {
            ebb_buf_append(&text, s++, 1);
        }
    }
    char *doc_text = ebb_buf_take(&text);
    assert_non_null(doc_text);
    struct ebb__ydoc *doc;
    assert_int_equal(ebb__ydoc_load_buffer("ebb.yaml", doc_text, strlen(doc_text),
                                           &doc, &d),
                     0);
    free(doc_text);
    char where[64];
    snprintf(where, sizeof(where), "providers.%s", name);
    rc = ebb__cfg_apply(ebb__plugin_config_keys(f->plugin),
                        ebb__plugin_config_size(f->plugin), ebb__ydoc_root(doc),
                        where, &f->cfg, &d);
    ebb__ydoc_free(doc);
    if (rc != 0)
        fail_msg("%s", d.msg);
    assert_int_equal(ebb__host_init(&f->host, &f->env, name), 0);
    f->lent = f->host.host;
    f->lent.log = capture_log;
    f->create_status = f->p->create(&f->lent, f->cfg, &f->self);
    if (f->create_status != 0)
        f->self = NULL;
    return f->create_status;
}

void pfx_set_cursor(struct pfx *f, const char *region, const char *type,
                    const char *product, ebb_time_ms at)
{
    const struct ebb_price p = {
        .region = region,
        .zone = "",
        .instance_type = type,
        .product = product,
        .market = EBB_MARKET_SPOT,
        .at = at,
        .price_per_hour = 1,
        .currency = "USD",
    };
    assert_true(ebb__store_put_price(f->store, f->p->name, &p) >= 0);
}

ebb_time_ms pfx_cursor(struct pfx *f, const struct ebb_series_key *key)
{
    ebb_time_ms at = -1;
    assert_int_equal(ebb__store_price_cursor(f->store, f->p->name, key, &at), 0);
    return at;
}

/* Market changes go to the poller once it runs, and are counted. */
static void poller_market(void *arg, const char *provider)
{
    struct pfx *f = arg;
    f->market_changes++;
    ebb__poller_market_changed(&f->poller, provider);
}

void pfx_start_poller(struct pfx *f)
{
    const struct ebb__poll_sink sink = {.arg = f, .prices = sink_prices};
    ebb__poller_init(&f->poller, &f->clock, &sink);
    f->poller_ready = 1;
    f->env.market_changed = poller_market;
    assert_int_equal(ebb__poller_add(&f->poller, f->p->name, f->p, f->self, &f->lent,
                                     f->host.poll_interval),
                     0);
    ebb__poller_start(&f->poller);
}

/* Destroys the plugin and what leans on it. */
static void plugin_close(struct pfx *f)
{
    if (f->self != NULL)
        f->p->destroy(f->self);
    f->self = NULL;
    if (f->poller_ready)
        ebb__poller_fini(&f->poller);
    f->poller_ready = 0;
    f->env.market_changed = sink_market;
    if (f->plugin != NULL) {
        ebb__host_fini(&f->host);
        ebb__cfg_free(ebb__plugin_config_keys(f->plugin), f->cfg);
        ebb__plugin_close(f->plugin);
    }
    f->plugin = NULL;
    f->cfg = NULL;
}

int pfx_recreate(struct pfx *f, const char *name, const char *yaml)
{
    plugin_close(f);
    return pfx_create(f, name, yaml);
}

struct wait {
    const int *counter;
    int target;
};

/* Runs just before the loop would sleep: a callback run by a timer at the
 * top of this turn may have reached the target, and then the loop must
 * not sleep until the next event. */
static void on_prepare(uv_prepare_t *h)
{
    const struct wait *w = h->data;
    if (*w->counter >= w->target)
        uv_stop(h->loop);
}

void pfx_run_until(struct pfx *f, const int *counter, int target)
{
    struct wait w = {counter, target};
    uv_prepare_t prep;
    uv_prepare_init(&f->loop, &prep);
    prep.data = &w;
    uv_prepare_start(&prep, on_prepare);
    while (*counter < target && !f->watchdog_fired)
        uv_run(&f->loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&prep, NULL);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_false(f->watchdog_fired);
}

static void on_pause(uv_timer_t *t)
{
    *(int *)t->data = 1;
}

void pfx_run_for(struct pfx *f, int64_t ms)
{
    uv_timer_t t;
    int done = 0;
    uv_timer_init(&f->loop, &t);
    t.data = &done;
    uv_timer_start(&t, on_pause, (uint64_t)ms, 0);
    pfx_run_until(f, &done, 1);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&f->loop, UV_RUN_NOWAIT);
}

static void copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

void pfx_on_prices(void *arg, int status, const struct ebb_price *p, size_t n)
{
    struct pfx_result *r = arg;
    r->calls++;
    r->status = status;
    r->prices = n ? calloc(n, sizeof(*r->prices)) : NULL;
    r->n_prices = n;
    for (size_t i = 0; i < n; i++) {
        struct pfx_price *c = &r->prices[i];
        assert_null(p[i].provider);
        copy(c->region, sizeof(c->region), p[i].region);
        copy(c->zone, sizeof(c->zone), p[i].zone);
        copy(c->type, sizeof(c->type), p[i].instance_type);
        copy(c->currency, sizeof(c->currency), p[i].currency);
        c->market = p[i].market;
        c->at = p[i].at;
        c->price = p[i].price_per_hour;
        if (p[i].shape != NULL) {
            c->has_shape = 1;
            copy(c->gpu_model, sizeof(c->gpu_model), p[i].shape->gpu_model);
            copy(c->machine_id, sizeof(c->machine_id), p[i].shape->machine_id);
            c->gpu_count = p[i].shape->gpu_count;
            c->vcpus = p[i].shape->vcpus;
            c->gpu_memory_gb = p[i].shape->gpu_memory_gb;
            c->memory_gb = p[i].shape->memory_gb;
        }
    }
}

static void copy_inst(struct pfx_inst *c, const struct ebb_instance *v)
{
    copy(c->id, sizeof(c->id), v->id);
    copy(c->token, sizeof(c->token), v->token);
    copy(c->job_id, sizeof(c->job_id), v->job_id);
    copy(c->region, sizeof(c->region), v->region);
    copy(c->zone, sizeof(c->zone), v->zone);
    copy(c->type, sizeof(c->type), v->instance_type);
    c->market = v->market;
    c->state = v->state;
    c->preempted = v->preempted;
    c->launched_at = v->launched_at;
}

void pfx_on_launch(void *arg, int status, const struct ebb_instance *inst)
{
    struct pfx_result *r = arg;
    r->calls++;
    r->status = status;
    if (status == 0) {
        assert_non_null(inst);
        r->inst = calloc(1, sizeof(*r->inst));
        r->n_inst = 1;
        copy_inst(r->inst, inst);
    }
}

void pfx_on_done(void *arg, int status)
{
    struct pfx_result *r = arg;
    r->calls++;
    r->status = status;
}

void pfx_on_list(void *arg, int status, const struct ebb_instance *v, size_t n)
{
    struct pfx_result *r = arg;
    r->calls++;
    r->status = status;
    r->inst = n ? calloc(n, sizeof(*r->inst)) : NULL;
    r->n_inst = n;
    for (size_t i = 0; i < n; i++)
        copy_inst(&r->inst[i], &v[i]);
}

void pfx_result_free(struct pfx_result *r)
{
    free(r->prices);
    free(r->inst);
    memset(r, 0, sizeof(*r));
}

void pfx_poll(struct pfx *f, struct pfx_result *r)
{
    pfx_result_free(r);
    assert_int_equal(f->p->poll_prices(f->self, pfx_on_prices, r), 0);
    assert_int_equal(r->calls, 0); /* never inside the call */
    pfx_run_until(f, &r->calls, 1);
}

void pfx_launch(struct pfx *f, const struct ebb_launch *req, struct pfx_result *r)
{
    pfx_result_free(r);
    assert_int_equal(f->p->launch(f->self, req, pfx_on_launch, r), 0);
    assert_int_equal(r->calls, 0);
    pfx_run_until(f, &r->calls, 1);
}

void pfx_terminate(struct pfx *f, const char *id, struct pfx_result *r)
{
    pfx_result_free(r);
    assert_int_equal(f->p->terminate(f->self, id, pfx_on_done, r), 0);
    assert_int_equal(r->calls, 0);
    pfx_run_until(f, &r->calls, 1);
}

void pfx_list(struct pfx *f, struct pfx_result *r)
{
    pfx_result_free(r);
    assert_int_equal(f->p->list_instances(f->self, pfx_on_list, r), 0);
    assert_int_equal(r->calls, 0);
    pfx_run_until(f, &r->calls, 1);
}

const struct pfx_price *pfx_find_price(const struct pfx_result *r,
                                       const char *zone, enum ebb_market market,
                                       ebb_time_ms at)
{
    for (size_t i = 0; i < r->n_prices; i++) {
        const struct pfx_price *p = &r->prices[i];
        if ((zone == NULL || strcmp(p->zone, zone) == 0) && p->market == market &&
            p->at == at)
            return p;
    }
    return NULL;
}

void pfx_assert_not_logged(const struct pfx *f, const char *needle)
{
    if (f->log.data != NULL && strstr(f->log.data, needle) != NULL)
        fail_msg("the plugin logged \"%s\":\n%s", needle, f->log.data);
}

static void on_closed(void *arg)
{
    (*(int *)arg)++;
}

void pfx_close(struct pfx *f)
{
    if (f->self != NULL)
        f->p->destroy(f->self);
    f->self = NULL;
    int closed = 0;
    ebb__http_close(f->http, on_closed, &closed);
    ebb__httpd_close(f->srv, on_closed, &closed);
    if (f->poller_ready)
        ebb__poller_fini(&f->poller);
    f->poller_ready = 0;
    if (f->plugin != NULL)
        ebb__host_fini(&f->host);
    ebb__clock_close(&f->clock, NULL);
    uv_close((uv_handle_t *)&f->watchdog, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(closed, 2);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    if (f->plugin != NULL) {
        ebb__cfg_free(ebb__plugin_config_keys(f->plugin), f->cfg);
        ebb__plugin_close(f->plugin);
    }
    ebb__store_close(f->store);
    ebb_buf_free(&f->log);
}
