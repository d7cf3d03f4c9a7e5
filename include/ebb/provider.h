/* ebb — the provider plugin ABI.
 *
 * A provider plugin is a shared module exporting one function,
 * ebb_provider_entry() (declared below), that returns a pointer to a
 * static struct ebb_provider.
 *
 * How the ABI grows (EBB_PROVIDER_ABI stays 1 while it does). Every struct
 * that crosses it starts with `uint32_t struct_size`: struct ebb_provider
 * (the plugin fills, the loader reads), struct ebb_price, ebb_shape,
 * ebb_instance, ebb_instance_event, ebb_series_key and ebb_http_request
 * (the plugin fills, the core reads), struct ebb_launch, ebb_job_model, ebb_http_response and
 * ebb_host (the core fills, the plugin reads), struct ebb_http_attempt
 * (the core sizes it, a prepare hook fills it). Whoever fills one sets
 * struct_size to the sizeof() it was compiled with. New fields are only ever appended, each
 * with a comment saying so; within one EBB_PROVIDER_ABI no field is
 * removed, reordered or retyped. A reader
 * - refuses a struct whose struct_size does not cover the first version's
 *   fields (the EBB_*_SIZE_V1 macros; the core logs an error naming the
 *   plugin and drops what it was handed, a provider returns EBB_EINVAL);
 * - reads an appended field only when struct_size covers it
 *   (EBB_HAS(type, v, field)), and otherwise acts as its comment says for
 *   an absent field (NULL, 0 or -1);
 * - steps through an array (the prices of one poll, the instances of one
 *   list) by the first element's struct_size, not by its own sizeof:
 *   every element of one array has the same struct_size, and a plugin
 *   built with more fields lays them out wider.
 * An appended field starts past the whole of the version before it, tail
 * padding included (a plugin may leave padding uninitialised, and a field
 * placed there would read as set): when a version ends in padding, the
 * next field appended is as aligned as the struct, or an explicit
 * reserved member fills the padding first.
 * So a plugin built against older headers (smaller structs) and one built
 * against newer ones (fields this ebb does not know) both load and work.
 * The loader also refuses a plugin whose `abi` differs from
 * EBB_PROVIDER_ABI.
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

    /* Appended, optional: NULL (or not covered by struct_size) for
     * providers whose jobs run under ebb-agent, which ebbd reaches
     * itself. For providers that run or simulate the job
     * themselves: ask the job on `instance_id` to checkpoint within `grace`
     * and exit; the provider reports CHECKPOINT and EXITED events with
     * EBB_EXIT_STOPPED. `cb` runs once the request is delivered. */
    int (*stop_job)(void *self, const char *instance_id, ebb_dur_ms grace,
                    ebb_done_cb cb, void *arg);

    /* Appended: EBB_PROVIDER_* bits; 0 when struct_size does not cover
     * it. */
    uint32_t flags;
};

/* The provider runs jobs' processes on ebbd's own machine, as the user
 * ebb_launch.run_uid names (local): ebbd refuses at submit a job of
 * another user when it could not start processes as that user. */
#define EBB_PROVIDER_RUNS_HERE UINT32_C(1)
/* The provider launches gangs (ebb_launch.count > 1) all or nothing and
 * reports them as gang.h says; the engine offers gang jobs only its
 * offers. */
#define EBB_PROVIDER_GANGS UINT32_C(2)
/* The provider also launches one member into a running gang
 * (ebb_launch.join_gang), for gang.restart: replace_lost; without it such
 * a gang restarts whole. terminate() of one member's id ends that member
 * alone. */
#define EBB_PROVIDER_GANG_REPLACE UINT32_C(4)

/* The size of the first version: the least struct_size the loader accepts. */
#define EBB_PROVIDER_SIZE_V1                                                  \
    (offsetof(struct ebb_provider, list_instances) +                         \
     sizeof(((struct ebb_provider *)0)->list_instances))

/* The one symbol a provider plugin exports: it returns the plugin's static
 * struct ebb_provider, which must stay valid until the plugin is unloaded.
 * Define it in the plugin; the loader finds it with dlsym(). */
EBB_EXTERN const struct ebb_provider *ebb_provider_entry(void);
typedef const struct ebb_provider *(*ebb_provider_entry_fn)(void);

#endif
