/* The price poller: the host, not the plugin, owns when each provider's
 * prices are polled (collectd's plugin_register_complex_read with its
 * read loop is the model).
 *
 * A provider declares its interval at create (host->poll_every). The
 * poller polls every provider once at start; then each one `interval`
 * (clock time) after its last poll completed. A failed poll doubles the
 * wait, up to max(interval, EBB__POLL_BACKOFF_CAP), and a good one resets
 * it (base/backoff.h). A poll that ends in EBB_EAUTH or EBB_EPERM stops
 * that provider's polling for good, with one error in the log and in its
 * health (`ebb providers`): retrying refused credentials only floods the
 * provider. A provider without an interval (the sim) is polled at start
 * and whenever it announces a change (host->market_changed); an
 * announcement during a poll polls again once that one completes.
 *
 * Every completed poll (never a cancelled one) goes to the sink: its
 * prices, then, once every provider has completed a first poll (or
 * stopped), `all_polled`, after each poll from then on.
 *
 * Timers run on the ebb clock, so backtests poll on the virtual clock.
 */
#ifndef EBB_POLLER_H
#define EBB_POLLER_H

#include <ebb/list.h>
#include <ebb/provider.h>

#include "io/clock.h"
#include "plugin/registry.h"

/* The longest a failing provider waits between polls, unless its own
 * interval is longer. */
#define EBB__POLL_BACKOFF_CAP EBB_MS_PER_HOUR

/* How a provider's price polls fare, for `ebb providers` and metrics. */
struct ebb__poll_health {
    uint64_t polls, errors;
    int last_status;      /* of the latest poll: 0 or an EBB_E* code */
    ebb_time_ms last_at;  /* 0: never polled */
    ebb_time_ms next_at;  /* the next scheduled poll; 0: none */
    ebb_dur_ms interval;  /* declared; 0: polled when it announces changes */
    int stopped;          /* polling stopped (authentication failed) */
};

/* Where completed polls go; `prices` is valid during the call only. */
struct ebb__poll_sink {
    void *arg;
    void (*prices)(void *arg, const char *provider, int status,
                   const struct ebb_price *prices, size_t n);
    void (*all_polled)(void *arg); /* may be NULL */
};

struct ebb__poller {
    struct ebb__clock *clock;
    struct ebb__poll_sink sink;
    struct ebb_list entries; /* one per provider, in the order added */
};

/* Prepares an empty poller on `clock` that reports to `sink` (copied). */
void ebb__poller_init(struct ebb__poller *p, struct ebb__clock *clock,
                      const struct ebb__poll_sink *sink);

/* Schedules provider `name` (borrowed, as are the others; they must
 * outlive the poller), whose instance is `self`, every `interval` (0: on
 * announced changes only). What the poller says about a provider (a
 * failed poll, a stop) it logs through the provider's `host`, tagged
 * with its name. Returns 0 or EBB_ENOMEM. */
int ebb__poller_add(struct ebb__poller *p, const char *name,
                    const struct ebb_provider *provider, void *self,
                    const struct ebb_host *host, ebb_dur_ms interval);

/* Adds every started provider of `r` with the interval its host was
 * told (poll_every). Returns 0 or EBB_ENOMEM. */
int ebb__poller_add_registry(struct ebb__poller *p, struct ebb__registry *r);

/* Polls every provider now, in the order they were added. */
void ebb__poller_start(struct ebb__poller *p);

/* A host env's market_changed: polls `provider` now (`poller` is the
 * struct ebb__poller). Unknown or stopped providers are ignored. */
void ebb__poller_market_changed(void *poller, const char *provider);

/* The health of `provider`'s polls, or NULL when it is not polled here. */
const struct ebb__poll_health *ebb__poller_health(const struct ebb__poller *p,
                                                  const char *provider);

/* Whether every provider has completed a poll or stopped. */
int ebb__poller_all_polled(const struct ebb__poller *p);

/* Stops the timers and frees. Call it after the providers are destroyed
 * (their cancelled polls still reach the poller). */
void ebb__poller_fini(struct ebb__poller *p);

#endif
