#include "plugin/provider_call.h"

#include <stdlib.h>

#include "plugin/plugin_abi.h"

/* What a provider hands back is read whatever the status says: a failed
 * poll may still carry the prices it got before failing. */

/* One call in flight: the core's callback, and the plugin's name for the
 * readers' messages (the name outlives the calls: destroy completes them
 * first). */
struct call {
    const char *plugin;
    void *arg;
    union {
        ebb_prices_cb prices;
        ebb_launch_cb launch;
        ebb_list_cb list;
    } cb;
};

static struct call *call_new(const char *name, void *arg)
{
    struct call *c = malloc(sizeof(*c));
    if (c != NULL)
        *c = (struct call){.plugin = name, .arg = arg};
    return c;
}

static void on_prices(void *arg, int status, const struct ebb_price *prices,
                      size_t n)
{
    struct call *c = arg;
    struct ebb__abi_room room = {0};
    const struct ebb_price *read;
    int rc = ebb__abi_read_prices(c->plugin, prices, n, &room, &read);
    if (rc != 0) {
        status = rc;
        read = NULL;
        n = 0;
    }
    c->cb.prices(c->arg, status, read, n);
    ebb__abi_room_free(&room);
    free(c);
}

int ebb__provider_poll_prices(const char *name, const struct ebb_provider *p,
                              void *self, ebb_prices_cb cb, void *arg)
{
    struct call *c = call_new(name, arg);
    if (c == NULL)
        return EBB_ENOMEM;
    c->cb.prices = cb;
    int rc = p->poll_prices(self, on_prices, c);
    if (rc != 0)
        free(c);
    return rc;
}

static void on_launched(void *arg, int status, const struct ebb_instance *inst)
{
    struct call *c = arg;
    struct ebb__abi_room room = {0};
    const struct ebb_instance *read = NULL;
    int rc = inst != NULL
                 ? ebb__abi_read_instances(c->plugin, inst, 1, &room, &read)
                 : 0;
    if (rc != 0)
        status = rc;
    c->cb.launch(c->arg, status, read);
    ebb__abi_room_free(&room);
    free(c);
}

int ebb__provider_launch(const char *name, const struct ebb_provider *p,
                         void *self, const struct ebb_launch *req,
                         ebb_launch_cb cb, void *arg)
{
    struct call *c = call_new(name, arg);
    if (c == NULL)
        return EBB_ENOMEM;
    c->cb.launch = cb;
    int rc = p->launch(self, req, on_launched, c);
    if (rc != 0)
        free(c);
    return rc;
}

static void on_listed(void *arg, int status, const struct ebb_instance *list,
                      size_t n)
{
    struct call *c = arg;
    struct ebb__abi_room room = {0};
    const struct ebb_instance *read;
    int rc = ebb__abi_read_instances(c->plugin, list, n, &room, &read);
    if (rc != 0) {
        status = rc;
        read = NULL;
        n = 0;
    }
    c->cb.list(c->arg, status, read, n);
    ebb__abi_room_free(&room);
    free(c);
}

int ebb__provider_list_instances(const char *name, const struct ebb_provider *p,
                                 void *self, ebb_list_cb cb, void *arg)
{
    struct call *c = call_new(name, arg);
    if (c == NULL)
        return EBB_ENOMEM;
    c->cb.list = cb;
    int rc = p->list_instances(self, on_listed, c);
    if (rc != 0)
        free(c);
    return rc;
}
