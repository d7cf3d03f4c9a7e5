/* A provider plugin against a fake cloud on 127.0.0.1, for the provider
 * tests: one libuv loop carries the fake server (src/io/httpd.h), the real
 * HTTP client with short backoffs, a real clock and the plugin's host, as
 * ebbd wires them. The plugin is opened by the real loader from the build
 * tree and configured from YAML through its own table.
 *
 * The host's sink records instance events and market changes; price
 * cursors come from an in-memory store (tests seed it with pfx_set_cursor,
 * and the poller's sink stores what polls bring, as ebbd's engine does);
 * the plugin's log lines are kept so tests can read (and search) them. A
 * watchdog bounds every wait.
 *
 * pfx_poll() calls poll_prices() directly; pfx_start_poller() instead
 * lets the host's poller (plugin/poller.h) drive the plugin, as in ebbd.
 */
#ifndef EBB_TEST_PROVIDER_FIXTURE_H
#define EBB_TEST_PROVIDER_FIXTURE_H

#include <stddef.h>

#include <uv.h>

#include <ebb/provider.h>

#include "base/str.h"
#include "io/clock.h"
#include "io/http_client.h"
#include "io/httpd.h"
#include "plugin/plugin.h"
#include "plugin/plugin_host.h"
#include "plugin/poller.h"
#include "store/store.h"

/* One delivered price, copied. */
struct pfx_price {
    char region[32], zone[64], type[64], currency[4];
    enum ebb_market market;
    ebb_time_ms at;
    ebb_micros price;
    int has_shape;
    char gpu_model[32], machine_id[32];
    unsigned gpu_count, vcpus;
    double gpu_memory_gb, memory_gb;
};

/* One reported instance, copied. */
struct pfx_inst {
    char id[64], token[80], job_id[64], region[32], zone[64], type[64];
    enum ebb_market market;
    enum ebb_instance_state state;
    int preempted;
    ebb_time_ms launched_at;
};

/* What one provider call completed with. */
struct pfx_result {
    int calls;
    int status;
    struct pfx_price *prices;
    size_t n_prices;
    struct pfx_inst *inst; /* launch: one; list: n_inst */
    size_t n_inst;
};

struct pfx_event {
    enum ebb_instance_event_kind kind;
    char id[64], reason[128];
};

struct pfx {
    uv_loop_t loop;
    uv_timer_t watchdog;
    int watchdog_fired;
    struct ebb__clock clock;
    struct ebb__http *http;
    struct ebb__httpd *srv;
    struct ebb__host_env env;
    struct ebb__host host;
    struct ebb_host lent;
    struct ebb__plugin *plugin;
    const struct ebb_provider *p;
    void *cfg;
    void *self;
    int create_status;
    struct ebb_buf log;  /* the plugin's log lines */
    int market_changes;
    struct pfx_event events[32];
    size_t n_events;
    struct ebb__store *store;
    /* The poller, once started, and what its sink saw. */
    struct ebb__poller poller;
    int poller_ready;
    int polled;             /* completed polls */
    int poll_status;        /* of the latest */
    size_t poll_prices;     /* prices the latest brought */
    ebb_time_ms polled_at[16]; /* when the first 16 completed */
};

/* Starts the loop, the fake server (`handler(req, res, arg)`), the HTTP
 * client and the clock. */
void pfx_init(struct pfx *f, ebb__httpd_handler handler, void *arg);

/* Opens provider `name`, applies `yaml` (its section's keys; "@URL@" is
 * replaced by the fake server's base URL) and creates it; the status of
 * create() is returned and kept in f->create_status. */
int pfx_create(struct pfx *f, const char *name, const char *yaml);

/* Stores a price of the created plugin's series (region, zone "", type,
 * product) at `at`, so that its cursor is `at`. */
void pfx_set_cursor(struct pfx *f, const char *region, const char *type,
                    const char *product, ebb_time_ms at);

/* The store's cursor of the plugin's series matching `key`. */
ebb_time_ms pfx_cursor(struct pfx *f, const struct ebb_series_key *key);

/* Starts the host's poller over the created plugin, with the interval it
 * declared; the sink stores the prices and counts polls in f->polled. */
void pfx_start_poller(struct pfx *f);

/* Destroys the plugin (and the poller) and creates it again from `yaml`,
 * keeping the fake server, the store and the log: ebbd restarted. */
int pfx_recreate(struct pfx *f, const char *name, const char *yaml);

/* Runs the loop until *counter >= target; fails the test on the watchdog. */
void pfx_run_until(struct pfx *f, const int *counter, int target);

/* Runs the loop for `ms` of wall time. */
void pfx_run_for(struct pfx *f, int64_t ms);

/* Each calls the provider, asserts it started, and runs the loop until it
 * completed; the result is in *r (free with pfx_result_free). */
void pfx_poll(struct pfx *f, struct pfx_result *r);
void pfx_launch(struct pfx *f, const struct ebb_launch *req, struct pfx_result *r);
void pfx_terminate(struct pfx *f, const char *id, struct pfx_result *r);
void pfx_list(struct pfx *f, struct pfx_result *r);
void pfx_result_free(struct pfx_result *r);

/* Callbacks for starting calls by hand (arg: a struct pfx_result). */
void pfx_on_prices(void *arg, int status, const struct ebb_price *p, size_t n);
void pfx_on_launch(void *arg, int status, const struct ebb_instance *inst);
void pfx_on_done(void *arg, int status);
void pfx_on_list(void *arg, int status, const struct ebb_instance *v, size_t n);

/* The first price matching the arguments (zone may be NULL: any), or NULL. */
const struct pfx_price *pfx_find_price(const struct pfx_result *r,
                                       const char *zone, enum ebb_market market,
                                       ebb_time_ms at);

/* Fails when `needle` occurs in the plugin's log. */
void pfx_assert_not_logged(const struct pfx *f, const char *needle);

/* Destroys the plugin (calls in flight complete with EBB_ECANCELED), closes
 * everything and checks that the loop closes cleanly. */
void pfx_close(struct pfx *f);

#endif
