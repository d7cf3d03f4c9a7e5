/* The engine on the virtual clock (vengine.h): built from the public face
 * (engine.h) alone, as any other caller would. */
#include "engine/vengine.h"

#include <string.h>

int ebb__vengine_open(struct ebb__vengine *v, const char *name,
                      const char *config_text,
                      const struct ebb__catalog *catalog, ebb_time_ms start,
                      struct ebb_diag *d)
{
    memset(v, 0, sizeof(*v));
    int rc = ebb__config_load_buffer(name, config_text, strlen(config_text),
                                     &v->config, d);
    if (rc == 0)
        rc = ebb__registry_load(&v->registry, v->config, d);
    if (rc != 0)
        return rc;
    v->registry_loaded = 1;
    ebb__clock_init_virtual(&v->clock, start);
    v->clock_ready = 1;
    char err[256] = "";
    rc = ebb__store_open(":memory:", &v->store, err, sizeof(err));
    if (rc != 0) {
        ebb_diag_set(d, NULL, 0, "%s", err);
        return rc;
    }
    struct ebb__engine_options eo = {
        .clock = &v->clock,
        .store = v->store,
        .registry = &v->registry,
        .catalog = catalog,
        .default_policy = v->config->default_policy,
    };
    rc = ebb__engine_new(&eo, &v->engine);
    if (rc != 0) {
        ebb_diag_set(d, NULL, 0, "out of memory");
        return rc;
    }
    const struct ebb__poll_sink sink = {
        .arg = v->engine,
        .prices = ebb__engine_prices,
        .all_polled = ebb__engine_all_polled,
    };
    ebb__poller_init(&v->poller, &v->clock, &sink);
    v->poller_ready = 1;
    v->env = (struct ebb__host_env){
        .clock = &v->clock,
        .market = &v->poller,
        .market_changed = ebb__poller_market_changed,
    };
    ebb__engine_host_env(v->engine, &v->env);
    rc = ebb__registry_start(&v->registry, &v->env, d);
    if (rc == 0)
        rc = ebb__poller_add_registry(&v->poller, &v->registry);
    if (rc == 0)
        ebb__poller_start(&v->poller);
    return rc;
}

void ebb__vengine_close(struct ebb__vengine *v)
{
    if (v->registry_loaded)
        ebb__registry_free(&v->registry);
    if (v->poller_ready)
        ebb__poller_fini(&v->poller);
    ebb__engine_free(v->engine);
    if (v->clock_ready)
        ebb__clock_close(&v->clock, NULL);
    ebb__store_close(v->store);
    ebb__config_free(v->config);
    memset(v, 0, sizeof(*v));
}
