/* The host table ebbd lends each plugin (include/ebb/host.h), backed by
 * the engine's clock, HTTP client and event sinks.
 *
 * One struct ebb__host per plugin instance: it tags log lines with the
 * plugin's name and owns the plugin's timers, so that destroying a plugin
 * drops whatever it left pending. It keeps the poll interval the plugin
 * declared (poll_every) for the poller, and reads price cursors from the
 * store.
 */
#ifndef EBB_HOST_IMPL_H
#define EBB_HOST_IMPL_H

#include <ebb/host.h>
#include <ebb/list.h>

#include "io/clock.h"
#include "io/http_client.h"
#include "store/store.h"

/* What the program shares with every plugin host. Must outlive the hosts.
 * Any of the sinks may be NULL: what would reach it is dropped. */
struct ebb__host_env {
    struct ebb__clock *clock;
    struct ebb__http *http; /* NULL: plugins get EBB_EUNSUPPORTED (backtests) */
    const char *plugins_dir; /* NULL: plugins keep no files (backtests) */
    /* Where price_cursor() reads; NULL: every cursor is 0 (backtests). */
    struct ebb__store *store;
    /* Instance events go to the engine. */
    void *sink;
    void (*instance_event)(void *sink, const char *provider,
                           const struct ebb_instance_event *ev);
    /* market_changed() goes to the poller (plugin/poller.h). */
    void *market;
    void (*market_changed)(void *market, const char *provider);
};

struct ebb__host_timer;

struct ebb__host {
    struct ebb_host host; /* lent to the plugin; host.ctx points back here */
    const struct ebb__host_env *env;
    char *name;
    char *dir;                       /* plugin_dir(), once asked for */
    struct ebb_list timers;          /* pending, for destroy */
    /* Pending timers by id, so stopping one is O(1): open addressing,
     * a power-of-two size, deleted slots marked (see host.c). */
    struct ebb__host_timer **slots;
    size_t n_slots, used_slots;
    int64_t next_timer_id;
    ebb_dur_ms poll_interval; /* what poll_every() declared; 0: none */
};

/* Fills `h` for the plugin called `name`. Returns 0 or EBB_ENOMEM. */
int ebb__host_init(struct ebb__host *h, const struct ebb__host_env *env,
                   const char *name);

/* Drops pending timers (their functions never run) and frees. */
void ebb__host_fini(struct ebb__host *h);

#endif
