/* The host table ebbd lends each plugin (include/ebb/host.h), backed by
 * the engine's clock, HTTP client and event sinks.
 *
 * One struct ebb__host per plugin instance: it tags log lines with the
 * plugin's name and owns the plugin's timers, so that destroying a plugin
 * drops whatever it left pending.
 */
#ifndef EBB_HOST_IMPL_H
#define EBB_HOST_IMPL_H

#include <ebb/host.h>

#include "io/clock.h"
#include "io/http_client.h"

/* What the engine shares with every plugin host. Must outlive the hosts. */
struct ebb__host_env {
    struct ebb__clock *clock;
    struct ebb__http *http; /* NULL: plugins get EBB_EUNSUPPORTED (backtests) */
    const char *plugins_dir; /* NULL: plugins keep no files (backtests) */
    void *sink;
    void (*instance_event)(void *sink, const char *provider,
                           const struct ebb_instance_event *ev);
    void (*market_changed)(void *sink, const char *provider);
    ebb_time_ms (*last_price_at)(void *sink, const char *provider,
                                 const char *region);
};

struct ebb__host_timer;

struct ebb__host {
    struct ebb_host host; /* lent to the plugin; host.ctx points back here */
    const struct ebb__host_env *env;
    char *name;
    char *dir;                       /* plugin_dir(), once asked for */
    struct ebb__host_timer *timers;  /* pending, a list for destroy */
    /* Pending timers by id, so stopping one is O(1): open addressing,
     * a power-of-two size, deleted slots marked (see host.c). */
    struct ebb__host_timer **slots;
    size_t n_slots, used_slots;
    int64_t next_timer_id;
};

/* Fills `h` for the plugin called `name`. Returns 0 or EBB_ENOMEM. */
int ebb__host_init(struct ebb__host *h, const struct ebb__host_env *env,
                   const char *name);

/* Drops pending timers (their functions never run) and frees. */
void ebb__host_fini(struct ebb__host *h);

#endif
