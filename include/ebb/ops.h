/* What a plugin has in flight, tracked so that destroy() can end it all.
 *
 * Operations: every provider call (a poll, a launch ...) is an operation
 * from the call until its callback; destroy() cancels each one, which
 * completes it with EBB_ECANCELED as the provider ABI demands.
 *
 * HTTP calls: the host runs every HTTP callback exactly once, possibly
 * after the plugin's destroy() (the host's client outlives it). Calls
 * started here are detached by destroy(): a detached call's answer is
 * dropped and its record freed, so no plugin callback runs on freed
 * memory; its request's prepare and classify hooks no longer run either
 * (the next attempt is not made). Plugins link this with base.
 */
#ifndef EBB_PLUGIN_OPS_H
#define EBB_PLUGIN_OPS_H

#include "host.h"
#include "list.h"

/* ---- operations ---- */

struct ebb_op;

/* A plugin's operations, oldest first; zero-initialise, then set `host`.
 * (A zeroed list head is taken for an empty list on first use; a plugin
 * that walks `head` itself before its first ebb_op_add initialises it
 * with ebb_list_init.) */
struct ebb_ops {
    struct ebb_list head;
    const struct ebb_host *host;
};

/* Embedded in each operation's own struct. */
struct ebb_op {
    struct ebb_list node; /* in set->head */
    struct ebb_ops *set;
    /* Completes the operation with EBB_ECANCELED and frees it (after
     * taking it off the list with ebb_op_remove). */
    void (*cancel)(struct ebb_op *op);
    int64_t timer; /* a pending host timer of the operation, or 0 */
};

/* Appends `op` to `set`, to be ended by `cancel` on ebb_ops_cancel_all.
 * The caller owns `op` and sets its timer field, if it has one. */
void ebb_op_add(struct ebb_ops *set, struct ebb_op *op,
                 void (*cancel)(struct ebb_op *op));
/* Takes `op` off its list and stops its timer, if any. */
void ebb_op_remove(struct ebb_op *op);
/* Cancels every operation (for destroy()), in the order they were added,
 * so that callbacks see their ECANCELED in the order they were asked
 * for; an operation added by a cancel callback is cancelled too. */
void ebb_ops_cancel_all(struct ebb_ops *set);

/* ---- HTTP calls ---- */

struct ebb_call;

/* The calls in flight of one plugin instance; zero-initialise it. */
struct ebb_calls {
    struct ebb_list head;
};

typedef void (*ebb_call_cb)(void *arg, const struct ebb_http_response *res);

/* Starts `req` through `host`; `cb(arg, res)` runs once with the answer
 * unless the call or its set is detached first. Returns the call, or NULL
 * when the host refused it or memory ran out (then `cb` never runs; *err,
 * when not NULL, says why). */
struct ebb_call *ebb_call_start(struct ebb_calls *set,
                                  const struct ebb_host *host,
                                  const struct ebb_http_request *req,
                                  ebb_call_cb cb, void *arg, int *err);

/* Detaches one call in flight: its callback will not run. */
void ebb_call_detach(struct ebb_call *call);

/* Detaches every call in flight: none of their callbacks will run. */
void ebb_calls_detach(struct ebb_calls *set);

#endif
