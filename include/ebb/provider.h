/* ebb — the provider plugin ABI.
 *
 * A provider plugin is a shared module exporting one function,
 * ebb_provider_entry(), that returns a pointer to a static struct
 * ebb_provider. The loader refuses a plugin whose `abi` major differs from
 * EBB_PROVIDER_ABI and reads fields past the first version's only when
 * `struct_size` covers them, so fields are only ever appended.
 *
 * Every asynchronous call completes exactly once through its callback, on
 * the loop, also on error and on shutdown. A call that returns an error
 * code does not run its callback.
 */
#ifndef EBB_PROVIDER_H
#define EBB_PROVIDER_H

#include "common.h"
#include "config.h"
#include "host.h"
#include "types.h"

#define EBB_PROVIDER_ABI 1

/* Prices observed by one poll; `prices` is valid during the call only. */
typedef void (*ebb_prices_cb)(void *arg, int status,
                              const struct ebb_price *prices, size_t n);
/* The launched instance (state PENDING or RUNNING); valid during the call. */
typedef void (*ebb_launch_cb)(void *arg, int status,
                              const struct ebb_instance *inst);
typedef void (*ebb_done_cb)(void *arg, int status);
/* Every instance carrying ebb's tags; valid during the call only. */
typedef void (*ebb_list_cb)(void *arg, int status,
                            const struct ebb_instance *list, size_t n);

struct ebb_provider {
    uint32_t abi;            /* EBB_PROVIDER_ABI */
    uint32_t struct_size;    /* sizeof(struct ebb_provider) */
    const char *name;        /* "aws"; the key under `providers:` */
    const char *description; /* one line for `ebb providers` */

    const struct ebb_cfg_key *config_keys; /* ends with EBB_CFG_END */
    size_t config_size;      /* bytes of the struct config_keys fill */

    /* `config` is owned by the core and outlives the instance. */
    int (*create)(const struct ebb_host *host, const void *config, void **self);
    /* Cancels what is in flight (callbacks run with EBB_ECANCELED) and frees. */
    void (*destroy)(void *self);

    int (*poll_prices)(void *self, ebb_prices_cb cb, void *arg);
    int (*launch)(void *self, const struct ebb_launch *req, ebb_launch_cb cb,
                  void *arg);
    int (*terminate)(void *self, const char *instance_id, ebb_done_cb cb,
                     void *arg);
    int (*list_instances)(void *self, ebb_list_cb cb, void *arg);

    /* Optional (NULL for providers whose jobs run under ebb-agent, which
     * ebbd reaches itself). For providers that run or simulate the job
     * themselves: ask the job on `instance_id` to checkpoint within `grace`
     * and exit; the provider reports CHECKPOINT and EXITED events with
     * EBB_EXIT_STOPPED. `cb` runs once the request is delivered. */
    int (*stop_job)(void *self, const char *instance_id, ebb_dur_ms grace,
                    ebb_done_cb cb, void *arg);
};

typedef const struct ebb_provider *(*ebb_provider_entry_fn)(void);

#endif
