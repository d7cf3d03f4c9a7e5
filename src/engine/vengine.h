/* An engine on the virtual clock, built the way `ebb backtest` runs it:
 * the plugins named by an ebb.yaml text (the sim market), an optional
 * catalog, an in-memory store, the engine as their sink and the host's
 * poller asking them for prices. Backtests,
 * benchmarks and engine tests all build it here, so they run the same
 * wiring.
 */
#ifndef EBB_VENGINE_H
#define EBB_VENGINE_H

#include <ebb/diag.h>

#include "config/config_file.h"
#include "engine/engine.h"
#include "io/clock.h"
#include "market/catalog.h"
#include "plugin/poller.h"
#include "plugin/registry.h"
#include "store/store.h"

struct ebb__vengine {
    struct ebb__config *config;
    struct ebb__registry registry;
    struct ebb__clock clock;
    struct ebb__store *store;
    struct ebb__engine *engine;      /* NULL until it is made */
    struct ebb__poller poller;       /* polls the plugins into the engine */
    struct ebb__host_env env;
    int registry_loaded, clock_ready, poller_ready;
};

/* Loads the configuration `config_text` (named `name` in messages), opens
 * an in-memory store,
 * starts the plugins and the engine (pricing on-demand offers from
 * `catalog`, borrowed, may be NULL) on a virtual clock at `start`, and asks
 * every provider for prices (the answers arrive as the clock runs).
 * Returns 0, or an EBB_E* code with d set; call ebb__vengine_close()
 * either way. */
int ebb__vengine_open(struct ebb__vengine *v, const char *name,
                      const char *config_text,
                      const struct ebb__catalog *catalog, ebb_time_ms start,
                      struct ebb_diag *d);

/* Tears down in the order that lets providers cancel into a live engine. */
void ebb__vengine_close(struct ebb__vengine *v);

#endif
