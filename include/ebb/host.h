/* ebb — what ebbd lends a plugin: logging, time, timers, HTTP and a way to
 * report events. The host also owns the poll cadence (poll_every) and
 * where each price series' poll resumes (price_cursor). Plugins own no
 * event loop and read no clock: everything goes through this table so
 * that the same plugin runs live and in a backtest under the virtual
 * clock.
 *
 * Every function takes the host's `ctx` first. All calls happen on ebbd's
 * loop thread; none may be made from another thread.
 */
#ifndef EBB_HOST_H
#define EBB_HOST_H

#include "common.h"
#include "http.h"
#include "types.h"

#define EBB_HOST_ABI 1

typedef void (*ebb_timer_fn)(void *arg);

struct ebb_host {
    uint32_t abi;          /* EBB_HOST_ABI */
    uint32_t struct_size;  /* sizeof(struct ebb_host) of the core */
    void *ctx;

    /* Writes one log line tagged with the plugin's name. */
    void (*log)(void *ctx, enum ebb_log_level level, const char *fmt, ...)
        EBB_PRINTF(3, 4);

    /* The current time of ebbd's clock (real or virtual). */
    ebb_time_ms (*now)(void *ctx);

    /* Runs `fn(arg)` once at `due` (clock time). Returns a positive id, or a
     * negative EBB_E* code. Timers still pending when the plugin is
     * destroyed are dropped without running. */
    int64_t (*timer_start)(void *ctx, ebb_time_ms due, ebb_timer_fn fn, void *arg);
    /* Cancels a pending timer; unknown or fired ids are ignored. */
    void (*timer_stop)(void *ctx, int64_t id);

    /* Starts an HTTP request; `cb` runs exactly once, also on error and on
     * shutdown (error EBB_ECANCELED). Returns 0, or a negative code when the
     * request could not be started (then `cb` does not run). */
    int (*http)(void *ctx, const struct ebb_http_request *req, ebb_http_cb cb,
                void *arg);

    /* A provider reports what happened to one of its instances. */
    void (*instance_event)(void *ctx, const struct ebb_instance_event *ev);

    /* A provider says its prices or capacity changed without being polled
     * (the sim market does this as its trace advances): the host polls it
     * now (or once the poll in flight has completed). */
    void (*market_changed)(void *ctx);

    /* The newest stored observation time of this plugin's prices in the
     * series `key` names (a NULL field matches any value; "" is a market
     * without regions or zones), or 0 when none is stored. A poll of a
     * series resumes where the store's prices of that very series end,
     * across restarts: a series added to the configuration, or one whose
     * last poll failed, starts from its own history, never from a
     * neighbour's. */
    ebb_time_ms (*price_cursor)(void *ctx, const struct ebb_series_key *key);

    /* A directory this plugin may keep files in across restarts
     * (STATE/plugins/NAME, created on first use), or NULL where plugins
     * keep none (backtests). Valid while the plugin lives. */
    const char *(*plugin_dir)(void *ctx);

    /* Declares how often the host polls this plugin's prices: `interval`
     * (clock time) after each completed poll. A failing poll doubles the
     * wait, up to max(interval, 1 h), until one succeeds; an
     * authentication failure (a poll completing with EBB_EAUTH or
     * EBB_EPERM) stops polling, with one error, until ebbd restarts. Call
     * it from create(). Without it the host polls at start and then
     * whenever market_changed() is called. */
    void (*poll_every)(void *ctx, ebb_dur_ms interval);
};

#endif
