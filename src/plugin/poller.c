#include "plugin/poller.h"

#include <stdlib.h>
#include <string.h>

#include <ebb/backoff.h>

#include "plugin/provider_call.h"

struct entry {
    struct ebb_list node;
    struct ebb__poller *poller;
    const char *name;
    const struct ebb_provider *provider;
    void *self;
    const struct ebb_host *host;
    struct ebb__timer timer;
    struct ebb_backoff backoff; /* the wait after a failed poll */
    int in_flight;
    int again; /* a change was announced while a poll was in flight */
    struct ebb__poll_health health;
};

static struct entry *find(const struct ebb__poller *p, const char *name)
{
    struct ebb_list *pos;
    ebb_list_foreach(pos, &p->entries)
    {
        struct entry *e = ebb_list_entry(pos, struct entry, node);
        if (strcmp(e->name, name) == 0)
            return e;
    }
    return NULL;
}

static void poll_one(struct entry *e);

static void on_timer(struct ebb__timer *t)
{
    struct entry *e = t->data;
    e->health.next_at = 0;
    poll_one(e);
}

/* After a poll completed with `status`: when the next one happens. */
static void schedule(struct entry *e, int status)
{
    struct ebb__clock *clock = e->poller->clock;
    ebb_dur_ms wait = e->health.interval;
    if (wait <= 0)
        return;
    if (status == 0)
        ebb_backoff_reset(&e->backoff);
    else
        wait = ebb_backoff_next(&e->backoff);
    e->health.next_at = ebb__clock_now(clock) + wait;
    if (ebb__timer_start(clock, &e->timer, e->health.next_at) != 0) {
        e->health.next_at = 0;
        e->host->log(e->host->ctx, EBB_LOG_ERROR,
                     "cannot schedule the next price poll");
    }
}

static void completed(struct entry *e, int status, const struct ebb_price *prices,
                      size_t n)
{
    struct ebb__poller *p = e->poller;
    struct ebb__poll_health *h = &e->health;
    h->polls++;
    h->last_status = status;
    h->last_at = ebb__clock_now(p->clock);
    if (status != 0) {
        h->errors++;
        e->host->log(e->host->ctx, EBB_LOG_WARN, "price poll failed: %s",
                     ebb_strerror(status));
    }
    /* Bad credentials do not heal by retrying: one error, no retry storm. */
    if (status == EBB_EAUTH || status == EBB_EPERM) {
        h->stopped = 1;
        h->next_at = 0;
        e->again = 0;
        ebb__timer_stop(p->clock, &e->timer);
        e->host->log(e->host->ctx, EBB_LOG_ERROR,
                     "%s; price polling stopped until ebbd restarts (fix the "
                     "credentials first)", ebb_strerror(status));
    } else {
        schedule(e, status);
    }
    p->sink.prices(p->sink.arg, e->name, status, prices, n);
    if (e->again) {
        e->again = 0;
        poll_one(e);
    }
    if (p->sink.all_polled != NULL && ebb__poller_all_polled(p))
        p->sink.all_polled(p->sink.arg);
}

static void on_prices(void *arg, int status, const struct ebb_price *prices,
                      size_t n)
{
    struct entry *e = arg;
    e->in_flight = 0;
    if (status == EBB_ECANCELED)
        return;
    completed(e, status, prices, n);
}

static void poll_one(struct entry *e)
{
    if (e->health.stopped)
        return;
    if (e->in_flight) {
        e->again = 1;
        return;
    }
    ebb__timer_stop(e->poller->clock, &e->timer);
    e->health.next_at = 0;
    e->in_flight = 1;
    int rc = ebb__provider_poll_prices(e->name, e->provider, e->self, on_prices, e);
    if (rc != 0) {
        /* A poll that cannot start fails like one that ran: counted,
         * backed off, and refused credentials stop it. */
        e->in_flight = 0;
        e->host->log(e->host->ctx, EBB_LOG_WARN, "cannot poll prices: %s",
                     ebb_strerror(rc));
        completed(e, rc, NULL, 0);
    }
}

void ebb__poller_init(struct ebb__poller *p, struct ebb__clock *clock,
                      const struct ebb__poll_sink *sink)
{
    *p = (struct ebb__poller){.clock = clock, .sink = *sink};
    ebb_list_init(&p->entries);
}

int ebb__poller_add(struct ebb__poller *p, const char *name,
                    const struct ebb_provider *provider, void *self,
                    const struct ebb_host *host, ebb_dur_ms interval)
{
    struct entry *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return EBB_ENOMEM;
    *e = (struct entry){
        .poller = p,
        .name = name,
        .provider = provider,
        .self = self,
        .host = host,
        .health = {.interval = interval > 0 ? interval : 0},
    };
    ebb_dur_ms cap = interval > EBB__POLL_BACKOFF_CAP ? interval : EBB__POLL_BACKOFF_CAP;
    /* The first failure waits twice the interval, as collectd's read
     * loop does. */
    ebb_backoff_init(&e->backoff, 2 * e->health.interval, cap);
    ebb__timer_init(&e->timer, on_timer, e);
    ebb_list_insert_tail(&p->entries, &e->node);
    return 0;
}

int ebb__poller_add_registry(struct ebb__poller *p, struct ebb__registry *r)
{
    for (size_t i = 0; i < r->n_providers; i++) {
        struct ebb__plugin_slot *slot = &r->providers[i];
        int rc = ebb__poller_add(p, slot->plugin->name, slot->plugin->provider,
                                 slot->self, &slot->host.host,
                                 slot->host.poll_interval);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void ebb__poller_start(struct ebb__poller *p)
{
    struct ebb_list *pos, *tmp;
    ebb_list_foreach_safe(pos, tmp, &p->entries)
    {
        poll_one(ebb_list_entry(pos, struct entry, node));
    }
}

void ebb__poller_market_changed(void *poller, const char *provider)
{
    struct entry *e = find(poller, provider);
    if (e != NULL)
        poll_one(e);
}

const struct ebb__poll_health *ebb__poller_health(const struct ebb__poller *p,
                                                  const char *provider)
{
    const struct entry *e = find(p, provider);
    return e != NULL ? &e->health : NULL;
}

int ebb__poller_all_polled(const struct ebb__poller *p)
{
    struct ebb_list *pos;
    ebb_list_foreach(pos, &p->entries)
    {
        const struct entry *e = ebb_list_entry(pos, struct entry, node);
        if (e->health.polls == 0 && !e->health.stopped)
            return 0;
    }
    return 1;
}

void ebb__poller_fini(struct ebb__poller *p)
{
    struct ebb_list *pos, *tmp;
    ebb_list_foreach_safe(pos, tmp, &p->entries)
    {
        struct entry *e = ebb_list_entry(pos, struct entry, node);
        ebb__timer_stop(p->clock, &e->timer);
        ebb_list_remove(&e->node);
        free(e);
    }
}
