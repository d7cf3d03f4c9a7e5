#include "plugin/plugin_host.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/paths.h"
#include "base/str.h"
#include "plugin/plugin_abi.h"

struct ebb__host_timer {
    struct ebb__timer timer;
    struct ebb__host *owner;
    struct ebb_list node; /* in owner->timers */
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

/* A deleted slot: probing goes on past it; inserting may reuse it. */
static struct ebb__host_timer slot_deleted;

static size_t slot_of(int64_t id, size_t n)
{
    return (size_t)((uint64_t)id * 0x9E3779B97F4A7C15ULL) & (n - 1);
}

static int slots_grow(struct ebb__host *h)
{
    size_t n = h->n_slots ? h->n_slots * 2 : 64;
    struct ebb__host_timer **slots = calloc(n, sizeof(*slots));
    if (slots == NULL)
        return EBB_ENOMEM;
    size_t used = 0;
    struct ebb_list *pos;
    ebb_list_foreach(pos, &h->timers) {
        struct ebb__host_timer *t = ebb_list_entry(pos, struct ebb__host_timer, node);
        size_t i = slot_of(t->id, n);
        while (slots[i] != NULL)
            i = (i + 1) & (n - 1);
        slots[i] = t;
        used++;
    }
    free(h->slots);
    h->slots = slots;
    h->n_slots = n;
    h->used_slots = used;
    return 0;
}

static int slots_add(struct ebb__host *h, struct ebb__host_timer *t)
{
    if ((h->used_slots + 1) * 2 > h->n_slots && slots_grow(h) != 0)
        return EBB_ENOMEM;
    size_t i = slot_of(t->id, h->n_slots);
    while (h->slots[i] != NULL && h->slots[i] != &slot_deleted)
        i = (i + 1) & (h->n_slots - 1);
    if (h->slots[i] == NULL)
        h->used_slots++;
    h->slots[i] = t;
    return 0;
}

/* The slot holding timer `id`, or NULL. */
static struct ebb__host_timer **slots_find(struct ebb__host *h, int64_t id)
{
    if (h->n_slots == 0)
        return NULL;
    for (size_t i = slot_of(id, h->n_slots); h->slots[i] != NULL;
         i = (i + 1) & (h->n_slots - 1))
        if (h->slots[i] != &slot_deleted && h->slots[i]->id == id)
            return &h->slots[i];
    return NULL;
}

static void timer_unlink(struct ebb__host_timer *t)
{
    struct ebb__host *h = t->owner;
    ebb_list_remove(&t->node);
    struct ebb__host_timer **slot = slots_find(h, t->id);
    if (slot != NULL)
        *slot = &slot_deleted;
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
    if (slots_add(h, t) != 0) {
        ebb__timer_stop(h->env->clock, &t->timer);
        free(t);
        return EBB_ENOMEM;
    }
    ebb_list_insert_head(&h->timers, &t->node);
    return t->id;
}

static void host_timer_stop(void *ctx, int64_t id)
{
    struct ebb__host *h = from_ctx(ctx);
    struct ebb__host_timer **slot = slots_find(h, id);
    if (slot == NULL)
        return;
    struct ebb__host_timer *t = *slot;
    ebb__timer_stop(h->env->clock, &t->timer);
    timer_unlink(t);
    free(t);
}

static int host_http(void *ctx, const struct ebb_http_request *req,
                     ebb_http_cb cb, void *arg)
{
    struct ebb__host *h = from_ctx(ctx);
    struct ebb_http_request read;
    int rc = ebb__abi_read_http(h->name, req, &read);
    if (rc != 0)
        return rc;
    if (h->env->http == NULL)
        return EBB_EUNSUPPORTED;
    return ebb__http_request(h->env->http, &read, cb, arg);
}

static void host_instance_event(void *ctx, const struct ebb_instance_event *ev)
{
    struct ebb__host *h = from_ctx(ctx);
    struct ebb_instance_event read;
    /* An event the core cannot read is dropped: the refusal is logged,
     * and recovery's instance lists still say where the instance is. */
    if (ebb__abi_read_event(h->name, ev, &read) != 0)
        return;
    if (h->env->instance_event != NULL)
        h->env->instance_event(h->env->sink, h->name, &read);
}

static void host_market_changed(void *ctx)
{
    struct ebb__host *h = from_ctx(ctx);
    if (h->env->market_changed != NULL)
        h->env->market_changed(h->env->market, h->name);
}

static ebb_time_ms host_price_cursor(void *ctx, const struct ebb_series_key *key)
{
    struct ebb__host *h = from_ctx(ctx);
    ebb_time_ms at = 0;
    struct ebb_series_key read;
    /* A key the host cannot read has no cursor: the plugin starts from
     * its history, and the log says why. */
    if (ebb__abi_read_series_key(h->name, key, &read) != 0)
        return 0;
    if (h->env->store != NULL &&
        ebb__store_price_cursor(h->env->store, h->name, &read, &at) != 0)
        ebb__error("%s: %s", h->name, ebb__store_errmsg(h->env->store));
    return at;
}

static void host_poll_every(void *ctx, ebb_dur_ms interval)
{
    from_ctx(ctx)->poll_interval = interval > 0 ? interval : 0;
}

static const char *host_plugin_dir(void *ctx)
{
    struct ebb__host *h = from_ctx(ctx);
    if (h->env->plugins_dir == NULL)
        return NULL;
    if (h->dir == NULL) {
        char err[256];
        char *dir = ebb_strfmt("%s/%s", h->env->plugins_dir, h->name);
        if (dir == NULL || ebb__mkdir_p(dir, err, sizeof(err)) != 0) {
            ebb__error("%s: %s", h->name, dir ? err : "out of memory");
            free(dir);
            return NULL;
        }
        h->dir = dir;
    }
    return h->dir;
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
            .price_cursor = host_price_cursor,
            .plugin_dir = host_plugin_dir,
            .poll_every = host_poll_every,
        },
        .env = env,
        .name = strdup(name),
    };
    ebb_list_init(&h->timers);
    return h->name != NULL ? 0 : EBB_ENOMEM;
}

void ebb__host_fini(struct ebb__host *h)
{
    while (!ebb_list_empty(&h->timers)) {
        struct ebb__host_timer *t =
            ebb_list_entry(ebb_list_first(&h->timers), struct ebb__host_timer, node);
        ebb__timer_stop(h->env->clock, &t->timer);
        timer_unlink(t);
        free(t);
    }
    free(h->slots);
    h->slots = NULL;
    h->n_slots = h->used_slots = 0;
    free(h->name);
    h->name = NULL;
    free(h->dir);
    h->dir = NULL;
}
