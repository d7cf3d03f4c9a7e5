/* The aws provider under test: loaded from the build tree by the real
 * plugin loader, configured from YAML through its own table, and run with
 * a real host (real clock, the host's HTTP client) against fake_ec2 on
 * 127.0.0.1, all on one libuv loop. Shared by test_aws.c and
 * bench-ingest. */
#ifndef AWS_FIXTURE_H
#define AWS_FIXTURE_H

#include <stddef.h>

#include <uv.h>

#include <ebb/provider.h>

#include "fake_ec2.h"
#include "io/clock.h"
#include "io/http_client.h"
#include "plugin/plugin.h"
#include "plugin/plugin_host.h"
#include "plugin/poller.h"

#define FX_AKID "AKIDEBBTEST0001"
#define FX_SECRET "s3cr3t/EBB+TEST+wJalrXUtnFEMIK7MDENGbPxRfiCY"
#define FX_TOKEN "FQoGZXIvYXdzEBBsessionTOKENvalue//abc+def=="

struct aws_fx {
    uv_loop_t loop;
    /* With aws_fx_open_threaded(): fake EC2 runs on its own loop and
     * thread, as a cloud would, so its work is not ebb's. */
    int fake_threaded, fake_running;
    uv_loop_t fake_loop;
    uv_async_t fake_stop;
    uv_thread_t fake_thread;
    struct ebb__clock clock;
    struct ebb__http *http;
    struct fake_ec2 *ec2;
    struct ebb__host_env env;
    struct ebb__host host;
    struct ebb_host lent;
    struct ebb__plugin *plugin;
    const struct ebb_provider *p;
    void *cfg;
    void *self;
    ebb_time_ms last_price_at; /* every series' cursor, as the host answers */
    const char *uncursored_type; /* a type whose series have no cursor */
    int market_changes;
    /* The host's poller, once aws_fx_start_poller() ran, and its sink's
     * counts. */
    struct ebb__poller poller;
    int poller_ready;
    int polls, poll_status;
    struct ebb_instance_event *events; /* strings not kept */
    char event_ids[16][32];
    size_t n_events;
    char *log;                 /* every plugin log line */
    size_t log_len;
};

/* Starts the loop, fake EC2 (credentials FX_AKID/`secret`, `token`),
 * client and host; opens and configures the plugin with `yaml` (its
 * section; "@URL" is replaced by the fake's URL) and creates it. Returns
 * create()'s status; close with aws_fx_close() either way. */
int aws_fx_open(struct aws_fx *f, const char *secret, const char *token,
                const char *yaml);

/* The same with fake EC2 on a loop of its own, which
 * aws_fx_start_fake_thread() starts on a thread once the test has set it
 * up (fake_ec2_set_prices() ...). */
int aws_fx_open_threaded(struct aws_fx *f, const char *secret, const char *token,
                         const char *yaml);
void aws_fx_start_fake_thread(struct aws_fx *f);

/* Lets the host's poller drive the provider (the interval it declared):
 * f->polls counts completed polls, f->poll_status is the latest's. */
void aws_fx_start_poller(struct aws_fx *f);

/* Destroys the provider and closes everything, running the loop until
 * every handle is closed. */
void aws_fx_close(struct aws_fx *f);

/* Runs the loop until *flag becomes non-zero or `ms` pass. Returns the
 * flag. */
int aws_fx_run(struct aws_fx *f, const int *flag, int64_t ms);

#endif
