/* Instances nothing waits for any more (a shadow, a runner whose machine
 * the market took away, a stray found after a restart) are terminated
 * until their provider says they are gone: a failed terminate is asked
 * again, later and later, so that no instance is left running, and
 * billing, while ebbd runs. */
#include <stdlib.h>
#include <string.h>

#include <ebb/backoff.h>
#include "base/log.h"
#include "engine/internal.h"

struct ebb__release {
    struct ebb_list node;    /* on engine->releases */
    struct ebb__engine *e;
    struct ebb__plugin_slot *slot;
    struct ebb__timer retry;
    unsigned failures;
    char id[];
};

/* 10 s, doubling with every failure, at most 5 minutes. */
ebb_dur_ms ebb__engine_retry_after(unsigned failures)
{
    return ebb_backoff_after(10 * EBB_MS_PER_SECOND, 5 * EBB_MS_PER_MINUTE,
                              failures);
}

static void release_free(struct ebb__release *r)
{
    struct ebb__engine *e = r->e;
    ebb_list_remove(&r->node);
    ebb__timer_stop(e->opt.clock, &r->retry);
    free(r);
}

static void ask(struct ebb__release *r);

static void on_released(void *arg, int status)
{
    struct ebb__release *r = arg;
    if (status == 0 || status == EBB_ENOTFOUND || status == EBB_ECANCELED) {
        release_free(r);
        return;
    }
    r->failures++;
    ebb_dur_ms wait = ebb__engine_retry_after(r->failures);
    ebb__warn("terminating %s on %s: %s; asking again in %lld s", r->id,
              r->slot->plugin->name, ebb_strerror(status), (long long)(wait / 1000));
    struct ebb__clock *c = r->e->opt.clock;
    ebb__timer_start(c, &r->retry, ebb__clock_now(c) + ebb__clock_from_real_ms(c, wait));
}

static void ask(struct ebb__release *r)
{
    const struct ebb_provider *p = r->slot->plugin->provider;
    int rc = p->terminate(r->slot->self, r->id, on_released, r);
    if (rc != 0)
        on_released(r, rc);
}

static void on_retry(struct ebb__timer *t)
{
    ask(t->data);
}

void ebb__engine_release_aside(struct ebb__engine *e, struct ebb__plugin_slot *slot,
                               const char *id)
{
    size_t len = strlen(id);
    struct ebb__release *r = calloc(1, sizeof(*r) + len + 1);
    if (r == NULL) {
        ebb__error("out of memory terminating %s on %s", id, slot->plugin->name);
        return;
    }
    r->e = e;
    r->slot = slot;
    memcpy(r->id, id, len + 1);
    ebb__timer_init(&r->retry, on_retry, r);
    ebb_list_insert_head(&e->releases, &r->node);
    ask(r);
}

void ebb__engine_releases_free(struct ebb__engine *e)
{
    while (!ebb_list_empty(&e->releases))
        release_free(ebb_list_entry(e->releases.next, struct ebb__release, node));
}
