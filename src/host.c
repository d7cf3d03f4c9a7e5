#include "host.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct ebb__host_timer {
    struct ebb__timer timer;
    struct ebb__host *owner;
    struct ebb__host_timer *prev, *next;
    int64_t id;
    ebb_timer_fn fn;
    void *arg;
};

static struct ebb__host *from_ctx(void *ctx)
{
    return ctx;
}

static void host_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
    EBB_PRINTF(3, 4);

static void host_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ebb__logv(level, from_ctx(ctx)->name, fmt, ap);
    va_end(ap);
}

static ebb_time_ms host_now(void *ctx)
{
    return ebb__clock_now(from_ctx(ctx)->env->clock);
}

static void timer_unlink(struct ebb__host_timer *t)
{
    struct ebb__host *h = t->owner;
    if (t->prev != NULL)
        t->prev->next = t->next;
    else
        h->timers = t->next;
    if (t->next != NULL)
        t->next->prev = t->prev;
}

static void on_timer(struct ebb__timer *timer)
{
    struct ebb__host_timer *t = timer->data;
    ebb_timer_fn fn = t->fn;
    void *arg = t->arg;
    /* Unlink and free first: the function may start new timers or stop
     * this id, which must then be a no-op. */
    timer_unlink(t);
    free(t);
    fn(arg);
}

static int64_t host_timer_start(void *ctx, ebb_time_ms due, ebb_timer_fn fn,
                                void *arg)
{
    struct ebb__host *h = from_ctx(ctx);
    struct ebb__host_timer *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return EBB_ENOMEM;
    t->owner = h;
    t->id = ++h->next_timer_id;
    t->fn = fn;
    t->arg = arg;
    ebb__timer_init(&t->timer, on_timer, t);
    int rc = ebb__timer_start(h->env->clock, &t->timer, due);
    if (rc != 0) {
        free(t);
        return rc;
    }
    t->next = h->timers;
    if (h->timers != NULL)
        h->timers->prev = t;
    h->timers = t;
    return t->id;
}

static void host_timer_stop(void *ctx, int64_t id)
{
    struct ebb__host *h = from_ctx(ctx);
    for (struct ebb__host_timer *t = h->timers; t != NULL; t = t->next) {
        if (t->id == id) {
            ebb__timer_stop(h->env->clock, &t->timer);
            timer_unlink(t);
            free(t);
            return;
        }
    }
}

static int host_http(void *ctx, const struct ebb_http_request *req,
                     ebb_http_cb cb, void *arg)
{
    struct ebb__host *h = from_ctx(ctx);
    if (h->env->http == NULL)
        return EBB_EUNSUPPORTED;
    return ebb__http_request(h->env->http, req, cb, arg);
}

static void host_instance_event(void *ctx, const struct ebb_instance_event *ev)
{
    struct ebb__host *h = from_ctx(ctx);
    if (h->env->instance_event != NULL)
        h->env->instance_event(h->env->sink, h->name, ev);
}

static void host_market_changed(void *ctx)
{
    struct ebb__host *h = from_ctx(ctx);
    if (h->env->market_changed != NULL)
        h->env->market_changed(h->env->sink, h->name);
}

int ebb__host_init(struct ebb__host *h, const struct ebb__host_env *env,
                   const char *name)
{
    *h = (struct ebb__host){
        .host = {
            .abi = EBB_HOST_ABI,
            .struct_size = sizeof(struct ebb_host),
            .ctx = h,
            .log = host_log,
            .now = host_now,
            .timer_start = host_timer_start,
            .timer_stop = host_timer_stop,
            .http = host_http,
            .instance_event = host_instance_event,
            .market_changed = host_market_changed,
        },
        .env = env,
        .name = strdup(name),
    };
    return h->name != NULL ? 0 : EBB_ENOMEM;
}

void ebb__host_fini(struct ebb__host *h)
{
    while (h->timers != NULL) {
        struct ebb__host_timer *t = h->timers;
        ebb__timer_stop(h->env->clock, &t->timer);
        timer_unlink(t);
        free(t);
    }
    free(h->name);
    h->name = NULL;
}
