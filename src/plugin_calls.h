/* HTTP calls a plugin makes through its host, tracked so that the plugin
 * can be destroyed while some are in flight.
 *
 * The host runs every HTTP callback exactly once, possibly after the
 * plugin's destroy() (the host's client outlives it). A plugin that starts
 * its calls here detaches them all in destroy(): a detached call's answer
 * is dropped and its record freed, and the plugin's callback never runs on
 * freed memory. Plugins link this through libebb_pic.
 */
#ifndef EBB_PLUGIN_CALLS_H
#define EBB_PLUGIN_CALLS_H

#include <ebb/host.h>

struct ebb__call;

/* The calls in flight of one plugin instance; zero-initialise it. */
struct ebb__calls {
    struct ebb__call *head;
};

typedef void (*ebb__call_cb)(void *arg, const struct ebb_http_response *res);

/* Starts `req` through `host`; `cb(arg, res)` runs once with the answer
 * unless the call or its set is detached first. Returns the call, or NULL
 * when the host refused it or memory ran out (then `cb` never runs; *err,
 * when not NULL, says why). */
struct ebb__call *ebb__call_start(struct ebb__calls *set,
                                  const struct ebb_host *host,
                                  const struct ebb_http_request *req,
                                  ebb__call_cb cb, void *arg, int *err);

/* Detaches one call in flight: its callback will not run. */
void ebb__call_detach(struct ebb__call *call);

/* Detaches every call in flight: none of their callbacks will run. */
void ebb__calls_detach(struct ebb__calls *set);

#endif
