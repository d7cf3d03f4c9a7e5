/* The core's calls into a provider that hand something back: each wraps
 * the provider's function so that its callback receives what the provider
 * built read under the ABI's size rules (plugin/plugin_abi.h), never the
 * plugin's raw layout. A provider that hands back structs smaller than
 * their first version completes the call with EBB_EABI (and an error
 * naming it in the log) instead.
 *
 * Each returns what the provider's function returned; on an error return
 * the callback does not run, as for the provider's own functions.
 */
#ifndef EBB_PROVIDER_CALL_H
#define EBB_PROVIDER_CALL_H

#include <ebb/provider.h>

/* p->poll_prices(self, ...) of the provider instance `self`, whose plugin
 * is called `name` (borrowed: it must outlive the call, as a registry slot
 * does). */
int ebb__provider_poll_prices(const char *name, const struct ebb_provider *p,
                              void *self, ebb_prices_cb cb, void *arg);

/* p->launch(self, req, ...), as above. */
int ebb__provider_launch(const char *name, const struct ebb_provider *p,
                         void *self, const struct ebb_launch *req,
                         ebb_launch_cb cb, void *arg);

/* p->list_instances(self, ...), as above. */
int ebb__provider_list_instances(const char *name, const struct ebb_provider *p,
                                 void *self, ebb_list_cb cb, void *arg);

#endif
