/* ebb-agent: setup, the job document, the host check and the end.
 *
 * The protocol is docs/agent-protocol.md; how to use the agent and write
 * jobs for it is docs/agent.md.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/hostprobe.h"
#include "agent/netprobe.h"
#include "base/log.h"
#include "base/str.h"

#define FETCH_TIMEOUT_MS 15000
#define PROBE_TIMEOUT_MS 20000
/* How soon `host` goes again while ebbd says wait (its retry_ms, clamped). */
#define WAIT_MIN_MS 100
#define WAIT_MAX_MS 60000
#define WAIT_DEFAULT_MS 1000

static void on_http_closed(void *arg)
{
    struct agent *a = arg;
    a->http = NULL;
}

/* Everything that keeps the loop alive is closed here, once. */
void agent_finish(struct agent *a)
{
    if (a->state == AGENT_DONE)
        return;
    a->state = AGENT_DONE;
    ebb__timer_stop(&a->clock, &a->fetch_timer);
    ebb__timer_stop(&a->clock, &a->give_up_timer);
    ebb__timer_stop(&a->clock, &a->host_timer);
    json_decref(a->host_event);
    a->host_event = NULL;
    free(a->wait_reason);
    a->wait_reason = NULL;
    agent_imds_stop(&a->imds);
    agent_reporter_free(&a->rep);
    agent_run_free(a);
    uv_close((uv_handle_t *)&a->sigterm, NULL);
    uv_close((uv_handle_t *)&a->sigint, NULL);
    if (a->http != NULL)
        ebb__http_close(a->http, on_http_closed, a);
    ebb__clock_close(&a->clock, NULL);
}

void agent_check_done(struct agent *a)
{
    if (a->state == AGENT_FINISHING && agent_reporter_idle(&a->rep))
        agent_finish(a);
}

static void on_give_up(struct ebb__timer *t)
{
    struct agent *a = t->data;
    size_t events = 0, bytes = 0;
    agent_reporter_pending(&a->rep, &events, &bytes);
    if (a->state == AGENT_FINISHING) {
        ebb__error("giving up: ebbd did not take the final report within --exit-wait; "
                   "%zu events and %zu bytes of output were not delivered", events, bytes);
    } else {
        ebb__error("giving up: ebbd did not answer within --exit-wait; the job was "
                   "not started");
        a->exit_code = AGENT_EXIT_NO_EBBD;
    }
    agent_finish(a);
}

static void start_give_up(struct agent *a)
{
    ebb__timer_start(&a->clock, &a->give_up_timer,
                     ebb__clock_now(&a->clock) + a->opt.exit_wait_ms);
}

/* ---- ebbd's replies ---- */

static void send_host(struct agent *a)
{
    json_t *ev = json_deep_copy(a->host_event);
    if (ev == NULL) {
        ebb__error("out of memory sending the host event");
        agent_finish(a);
        return;
    }
    agent_reporter_event(&a->rep, ev);
}

static void on_host_timer(struct ebb__timer *t)
{
    struct agent *a = t->data;
    if (a->state == AGENT_PROBING)
        send_host(a);
}

/* A gang not complete yet: `host` again after retry_ms, the job not
 * started, nothing else sent meanwhile. ebbd answered, so --exit-wait
 * counts again from now; it ends the wait with release or stop. */
static void host_wait(struct agent *a, json_t *reply, const char *reason)
{
    json_t *r = json_object_get(reply, "retry_ms");
    int64_t retry = json_is_integer(r) ? json_integer_value(r) : WAIT_DEFAULT_MS;
    retry = retry < WAIT_MIN_MS ? WAIT_MIN_MS : retry > WAIT_MAX_MS ? WAIT_MAX_MS : retry;
    if (reason == NULL)
        reason = "no reason given";
    if (a->wait_reason == NULL || strcmp(a->wait_reason, reason) != 0) {
        ebb__info("ebbd says wait before starting the job (%s); asking again every "
                  "%lld ms", reason, (long long)retry);
        free(a->wait_reason);
        a->wait_reason = ebb_strfmt("%s", reason);
    }
    start_give_up(a);
    ebb__timer_start(&a->clock, &a->host_timer, ebb__clock_now(&a->clock) + retry);
}

/* ebbd lets the job start, with the variables of its `env` (a gang's
 * MASTER_ADDR and the like), when it sends one; an unusable one is a
 * start that fails. */
static void host_go(struct agent *a, json_t *reply)
{
    ebb__timer_stop(&a->clock, &a->give_up_timer);
    a->state = AGENT_RUNNING;
    char why[512];
    int rc = agent_env_parse(json_object_get(reply, "env"), "ebbd's env", true,
                             &a->gang_env, why, sizeof(why));
    if (rc != 0) {
        agent_strv_free(a->gang_env);
        a->gang_env = NULL;
        agent_run_fail_start(a, rc == EBB_ENOMEM ? "out of memory" : why);
        return;
    }
    size_t n = 0;
    while (a->gang_env[n] != NULL)
        n++;
    /* A gang member's job cannot find its peers without them. */
    if (n == 0 && a->doc.gang_nodes > 1) {
        agent_run_fail_start(a, "ebbd gave this gang member no environment "
                                "(MASTER_ADDR, NODE_RANK, ...)");
        return;
    }
    if (n > 0)
        ebb__info("ebbd adds %zu variable(s) to the job's environment", n);
    agent_run_start(a);
}

static void on_reply(void *arg, const char *kind, json_t *reply)
{
    struct agent *a = arg;
    const char *cmd = json_string_value(json_object_get(reply, "command"));
    const char *reason = json_string_value(json_object_get(reply, "reason"));
    if (a->state == AGENT_PROBING && strcmp(kind, "host") == 0) {
        if (cmd != NULL && (strcmp(cmd, "release") == 0 || strcmp(cmd, "stop") == 0)) {
            ebb__warn("ebbd released this host (%s); the job is not started",
                      reason ? reason : "no reason given");
            a->exit_code = AGENT_EXIT_RELEASED;
            agent_finish(a);
        } else if (cmd != NULL && strcmp(cmd, "wait") == 0) {
            host_wait(a, reply, reason);
        } else {
            host_go(a, reply);
        }
        return;
    }
    if (a->state == AGENT_RUNNING)
        agent_run_command(a, kind, reply);
    else if (a->state == AGENT_FINISHING && strcmp(kind, "exited") == 0)
        agent_check_done(a);
}

static void on_idle(void *arg)
{
    agent_check_done(arg);
}

/* ---- the host check ---- */

static void on_probe(void *arg, const struct agent_host *h)
{
    struct agent *a = arg;
    if (a->state != AGENT_PROBING)
        return;
    json_t *list = json_array();
    for (size_t i = 0; i < h->n; i++)
        json_array_append_new(list, json_pack("{s:s, s:I, s:i, s:i}",
                                              "model", h->gpus[i].model,
                                              "memory_mb", (json_int_t)h->gpus[i].memory_mb,
                                              "pcie_width", h->gpus[i].pcie_width,
                                              "pcie_gen", h->gpus[i].pcie_gen));
    const char *driver = h->n > 0 ? h->gpus[0].driver : "";
    if (h->have_smi && h->ok && h->n > 0)
        agent_gpuwatch_enable(&a->gpus);
    if (h->have_smi && h->ok)
        ebb__info("host: %zu GPU(s)%s%s, PCIe x%d gen %d, driver %s, CUDA %s", h->n,
                  h->n ? ": " : "", h->n ? h->gpus[0].model : "",
                  h->n ? h->gpus[0].pcie_width : 0, h->n ? h->gpus[0].pcie_gen : 0,
                  driver[0] ? driver : "unknown", h->cuda[0] ? h->cuda : "unknown");
    for (size_t i = 1; i < h->n; i++)
        if (strcmp(h->gpus[i].driver, driver) != 0)
            ebb__warn("GPU %zu reports driver %s, GPU 0 %s; reporting GPU 0's", i,
                      h->gpus[i].driver, driver);
    ebb__info("network: address %s, port %d, link %lld Mbit/s",
              a->net.addr[0] ? a->net.addr : "unknown", a->net.port,
              (long long)a->net.link_mbps);
    a->host_event = json_pack("{s:s, s:o, s:b, s:s, s:s, s:I, s:s, s:i}", "kind", "host",
                              "gpus", list, "nvidia_smi", h->have_smi,
                              "driver_version", driver, "cuda_version", h->cuda,
                              "link_mbps", (json_int_t)a->net.link_mbps,
                              "addr", a->net.addr, "port", a->net.port);
    send_host(a);
}

static void on_net(void *arg, const struct agent_net *net)
{
    struct agent *a = arg;
    if (a->state != AGENT_PROBING)
        return;
    a->net = *net;
    if (agent_hostprobe_start(&a->loop, PROBE_TIMEOUT_MS, on_probe, a) != 0) {
        ebb__error("out of memory starting the host probe");
        agent_finish(a);
    }
}

/* ---- the job document ---- */

static void on_job_doc(const struct ebb_http_response *res, void *arg)
{
    struct agent *a = arg;
    if (a->state != AGENT_FETCHING || res->error == EBB_ECANCELED)
        return;
    char why[512];
    if (res->error == 0 && res->status == 401) {
        ebb__error("ebbd refused the agent's token: %s",
                   agent_describe_failure(res, why, sizeof(why)));
        a->exit_code = AGENT_EXIT_REFUSED;
        agent_finish(a);
        return;
    }
    if (res->error != 0 || res->status >= 500 || res->status == 429) {
        a->fetch_failures++;
        int64_t delay = agent_backoff_ms(a->rep.backoff_base_ms, a->rep.backoff_cap_ms,
                                         a->fetch_failures);
        ebb__log(a->fetch_failures == 1 ? EBB_LOG_WARN : EBB_LOG_DEBUG, "agent",
                 "cannot fetch the job from %s: %s; retrying in %lld ms",
                 a->opt.ebbd_url, agent_describe_failure(res, why, sizeof(why)),
                 (long long)delay);
        ebb__timer_start(&a->clock, &a->fetch_timer, ebb__clock_now(&a->clock) + delay);
        return;
    }
    if (res->status != 200) {
        ebb__error("ebbd would not give the job: %s",
                   agent_describe_failure(res, why, sizeof(why)));
        a->exit_code = AGENT_EXIT_REFUSED;
        agent_finish(a);
        return;
    }
    if (agent_jobdoc_parse(res->body, res->body_len, &a->doc, why, sizeof(why)) != 0) {
        ebb__error("%s", why);
        a->exit_code = AGENT_EXIT_REFUSED;
        agent_finish(a);
        return;
    }
    ebb__info("job %s (instance %s): %s%s", a->doc.job_id, a->doc.instance_id,
              a->doc.argv[0], a->doc.shell ? " (shell)" : "");
    if (a->doc.gang_nodes > 0)
        ebb__info("a gang's member: rank %d of %d nodes", a->doc.gang_rank,
                  a->doc.gang_nodes);
    a->state = AGENT_PROBING;
    int rc = agent_netprobe_start(&a->loop, a->opt.ebbd_url, a->opt.sysfs, on_net, a);
    if (rc != 0) {
        ebb__warn("cannot look for ebbd's host (%s); reporting no address",
                  ebb_strerror(rc));
        on_net(a, &(struct agent_net){0});
    }
}

void agent_fetch_job(struct agent *a)
{
    char *url = ebb_strfmt("%s/v1/agent/job", a->rep.base_url);
    const char *headers[] = {a->rep.auth_header};
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = "GET", .url = url, .headers = headers, .n_headers = 1,
        .timeout = FETCH_TIMEOUT_MS, .max_attempts = 1,
    };
    int rc = url ? ebb__http_request(a->http, &req, on_job_doc, a) : EBB_ENOMEM;
    free(url);
    if (rc != 0) {
        ebb__error("cannot ask ebbd for the job: %s", ebb_strerror(rc));
        agent_finish(a);
    }
}

static void on_fetch_timer(struct ebb__timer *t)
{
    struct agent *a = t->data;
    if (a->enrolling)
        agent_enrol(a);
    else
        agent_fetch_job(a);
}

/* ---- signals to the agent ---- */

static void on_signal(uv_signal_t *h, int signum)
{
    struct agent *a = h->data;
    if (a->state == AGENT_RUNNING) {
        agent_run_stop(a, a->doc.grace_ms, signum == SIGTERM ? "the agent got SIGTERM"
                                                            : "the agent got SIGINT");
    } else if (a->state != AGENT_FINISHING) {
        ebb__info("%s before the job started; exiting", strsignal(signum));
        a->exit_code = 128 + signum;
        agent_finish(a);
    }
}

static int setup(struct agent *a)
{
    uv_loop_init(&a->loop);
    uv_signal_init(&a->loop, &a->sigterm);
    uv_signal_init(&a->loop, &a->sigint);
    a->sigterm.data = a->sigint.data = a;
    uv_signal_start(&a->sigterm, on_signal, SIGTERM);
    uv_signal_start(&a->sigint, on_signal, SIGINT);
    ebb__clock_init_real(&a->clock, &a->loop);
    ebb__timer_init(&a->fetch_timer, on_fetch_timer, a);
    ebb__timer_init(&a->give_up_timer, on_give_up, a);
    ebb__timer_init(&a->host_timer, on_host_timer, a);
    agent_gpuwatch_init(&a->gpus, &a->loop);
    agent_run_init(a);
    if (ebb__http_init(&a->http, &a->loop) != 0) {
        ebb__error("cannot initialise HTTP (libcurl)");
        return 1;
    }
    if (ebb__http_set_pinned_key(a->http, a->opt.ebbd_pin) != 0 ||
        ebb__http_set_ca_file(a->http, a->opt.ebbd_ca) != 0) {
        ebb__error("out of memory");
        return 1;
    }
    if (a->opt.ebbd_pin != NULL || a->opt.ebbd_ca != NULL)
        ebb__info("ebbd's certificate must match %s %s", a->opt.ebbd_pin ? "the pin" : "the CA in",
                  a->opt.ebbd_pin ? a->opt.ebbd_pin : a->opt.ebbd_ca);
    if (agent_reporter_init(&a->rep, a->http, &a->clock, a->opt.ebbd_url, a->token,
                            a->opt.log_buffer) != 0) {
        ebb__error("out of memory");
        return 1;
    }
    a->rep.on_reply = on_reply;
    a->rep.on_idle = on_idle;
    a->rep.arg = a;
    return 0;
}

int main(int argc, char **argv)
{
    struct agent *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return 1;
    bool done = false;
    int rc = agent_options_parse(&a->opt, argc, argv, &done);
    if (rc != 0 || done) {
        free(a);
        return rc;
    }
    a->token = agent_read_token(&a->opt);
    if (a->token == NULL) {
        free(a);
        return AGENT_EXIT_USAGE;
    }
    srand((unsigned)getpid() ^ (unsigned)uv_hrtime());
    /* A closed stdout must not kill the agent while it passes the job's
     * output through; the job itself gets default dispositions back
     * (uv_spawn resets them in the child). */
    signal(SIGPIPE, SIG_IGN);
    a->exit_code = 1;
    if (setup(a) == 0) {
        a->state = AGENT_FETCHING;
        start_give_up(a);
        a->enrolling = agent_token_is_enrolment(a->token);
        if (a->enrolling)
            agent_enrol(a);
        else
            agent_fetch_job(a);
    } else {
        agent_finish(a);
    }
    uv_run(&a->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&a->loop) != 0)
        ebb__error("event loop did not close cleanly");
    int code = a->exit_code;
    agent_gpuwatch_free(&a->gpus);
    agent_jobdoc_free(&a->doc);
    free(a->token);
    free(a);
    return code;
}
