#include "daemon/daemon.h"

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/paths.h"
#include "base/pathname.h"
#include "base/str.h"
#include "daemon/daemon_ckpt.h"
#include "daemon/daemon_workdir.h"
#include "ebb_build_config.h"
#include "daemon/daemon_notify.h"
#include "io/httpd.h"
#include "report/metrics.h"
#include "market/store_prices.h"

/* api.socket_group must name a group: a typo is bad configuration,
 * refused at its line before the state directory is touched, not a
 * failure found once the socket is made. Returns 0 or 2. */
static int check_socket_group(const struct ebb__config *cfg)
{
    const char *group = cfg->api_socket_group;
    if (group == NULL)
        return 0;
    struct group gr, *found = NULL;
    char buf[4096];
    if (getgrnam_r(group, &gr, buf, sizeof(buf), &found) == 0 && found != NULL)
        return 0;
    struct ebb_diag diag = {{0}};
    ebb_diag_set(&diag, cfg->file, cfg->api_socket_group_line,
                 "api.socket_group: no group named \"%s\" (getent group lists "
                 "them)", group);
    ebb__error("%s", diag.msg);
    return 2;
}

/* The state directory as an absolute path without "." or ".." parts, by
 * text (it need not exist yet): where the built-in configuration keeps
 * its store. NULL when it cannot be known. */
static char *state_dir_absolute(const struct ebb__daemon_options *opts)
{
    char *dir = ebb__state_dir_resolve(opts->state_dir), cwd[4096];
    char *joined = dir == NULL               ? NULL
                   : dir[0] == '/'           ? ebb_strfmt("%s", dir)
                   : getcwd(cwd, sizeof(cwd)) ? ebb_strfmt("%s/%s", cwd, dir)
                                             : NULL;
    char *abs = NULL;
    if (joined == NULL || ebb__path_resolve(NULL, joined, &abs) != 0)
        abs = NULL;
    free(joined);
    free(dir);
    return abs;
}

static int load_config(const struct ebb__daemon_options *opts,
                       struct ebb__daemon *d)
{
    struct ebb_diag diag = {{0}};
    char *state = opts->config_path == NULL ? state_dir_absolute(opts) : NULL;
    if (opts->config_path == NULL && state == NULL) {
        ebb__error("no state directory: pass --state-dir or set EBB_STATE_DIR");
        return 1;
    }
    int rc = opts->config_path != NULL
                 ? ebb__config_load_file(opts->config_path, &d->config, &diag)
                 : ebb__config_load_default(state, &d->config, &diag);
    free(state);
    if (rc != 0) {
        ebb__error("%s", diag.msg);
        return 2;
    }
    d->config_name = strdup(opts->config_path ? opts->config_path : "(built-in)");
    d->clock_speed = opts->clock_speed > 0 ? opts->clock_speed : d->config->clock_speed;
    ebb__log_set_level(opts->log_level_set ? opts->log_level
                                           : d->config->log_level);
    rc = ebb__registry_load(&d->registry, d->config, &diag);
    if (rc != 0) {
        ebb__error("%s", diag.msg);
        return 2;
    }
    return check_socket_group(d->config);
}

static int open_state(const struct ebb__daemon_options *opts,
                      struct ebb__daemon *d)
{
    char err[512] = "";
    d->state_dir = ebb__state_dir_resolve(opts->state_dir);
    if (d->state_dir == NULL) {
        ebb__error("no state directory: pass --state-dir or set EBB_STATE_DIR");
        return 1;
    }
    if (ebb__mkdir_p(d->state_dir, err, sizeof(err)) != 0 ||
        ebb__state_dir_check(d->state_dir, err, sizeof(err)) != 0) {
        ebb__error("%s", err);
        return 1;
    }
    /* Absolute from here on: agents and jobs run in other directories and
     * are given paths inside it. */
    char *absolute = realpath(d->state_dir, NULL);
    if (absolute == NULL) {
        ebb__error("%s: %s", d->state_dir, strerror(errno));
        return 1;
    }
    free(d->state_dir);
    d->state_dir = absolute;
    long holder = 0;
    int rc = ebb__state_lock(d->state_dir, &d->lock_fd, &holder, err, sizeof(err));
    if (rc == EBB_EBUSY) {
        ebb__error("another ebbd (pid %ld) is already running with state "
                   "directory %s; stop it first, or use another --state-dir",
                   holder, d->state_dir);
        return 1;
    }
    if (rc != 0) {
        ebb__error("%s", err);
        return 1;
    }
    char *db = ebb__path_join(d->state_dir, "ebb.db");
    rc = db ? ebb__store_open(db, &d->store, err, sizeof(err)) : EBB_ENOMEM;
    free(db);
    if (rc != 0) {
        ebb__error("%s", err[0] ? err : ebb_strerror(rc));
        return 1;
    }
    return 0;
}

static void on_signal(uv_signal_t *handle, int signum);

/* The loop, the clock, HTTP and the plugins. Plugins are created before
 * the state directory is touched: their create() is where they check what
 * the configuration tables cannot (a sim trace that does not load), and a
 * bad configuration must change nothing on disk. */
static int start_plugins(struct ebb__daemon *d)
{
    if (ebb__clock_init_real_at(&d->clock, &d->loop, d->config->clock_start,
                                d->clock_speed) != 0) {
        ebb__error("cannot initialise the clock");
        return 1;
    }
    d->started_at = ebb__clock_now(&d->clock);
    uv_signal_init(&d->loop, &d->sigterm);
    uv_signal_init(&d->loop, &d->sigint);
    d->sigterm.data = d->sigint.data = d;
    uv_signal_start(&d->sigterm, on_signal, SIGTERM);
    uv_signal_start(&d->sigint, on_signal, SIGINT);

    if (ebb__http_init(&d->http, &d->loop) != 0) {
        ebb__error("cannot initialise HTTP (libcurl)");
        return 1;
    }
    /* The engine becomes the hosts' sink once the store is open; nothing
     * reaches a sink before the loop runs. */
    d->host_env = (struct ebb__host_env){.clock = &d->clock, .http = d->http};
    struct ebb_diag diag = {{0}};
    int rc = ebb__registry_start(&d->registry, &d->host_env, &diag);
    if (rc != 0) {
        ebb__error("%s", diag.msg);
        return rc == EBB_ECONFIG ? 2 : 1;
    }
    return 0;
}

/* The catalog of on-demand prices and instance facts: `catalog:` is not a
 * configuration key yet, so the shipped one is used when it is installed. */
static void load_catalog(struct ebb__daemon *d)
{
    char *data = ebb__data_dir();
    char *path = data ? ebb__path_join(data, "catalog.csv") : NULL;
    free(data);
    struct ebb_diag diag = {{0}};
    /* Without the catalog the market has no on-demand offers and every
     * instance type runs at the reference speed: on-demand jobs would wait
     * for ever with nothing in the log. */
    if (path != NULL && access(path, R_OK) != 0)
        ebb__warn("no instance catalog at %s: on-demand offers and instance "
                  "speeds are unknown, so on-demand jobs cannot run (set "
                  "EBB_DATA_DIR to the directory with catalog.csv)", path);
    else if (path != NULL && ebb__catalog_load(path, &d->catalog, &diag) != 0)
        ebb__warn("%s", diag.msg);
    free(path);
}

/* The default prices of checkpoint stores (data/store_prices.csv): a
 * store whose ebb.yaml entry sets no price_per_gb_month / egress_per_gb
 * is billed at them (docs/stores.md). Without the file such a store is
 * billed what it sets; that is worth a warning only when there is one. */
static void load_store_prices(struct ebb__daemon *d)
{
    char *data = ebb__data_dir();
    char *path = data ? ebb__path_join(data, "store_prices.csv") : NULL;
    free(data);
    struct ebb_diag diag = {{0}};
    if (path != NULL && access(path, R_OK) != 0 && d->config->n_stores > 0)
        ebb__warn("no store prices at %s: stores without price_per_gb_month "
                  "and egress_per_gb in ebb.yaml are billed nothing (set "
                  "EBB_DATA_DIR to the directory with store_prices.csv)", path);
    else if (path != NULL && access(path, R_OK) == 0 &&
             ebb__store_prices_load(path, &d->store_fees, &diag) != 0)
        ebb__warn("%s", diag.msg);
    free(path);
}

/* run_on names providers that must be configured. */
static int check_run_on(struct ebb__daemon *d)
{
    for (size_t i = 0; i < d->config->n_run_on; i++) {
        const struct ebb__run_on *r = &d->config->run_on[i];
        const char *name = ebb__registry_provider(&d->registry, r->market) == NULL
                               ? r->market
                           : ebb__registry_provider(&d->registry, r->runner) == NULL
                               ? r->runner
                               : NULL;
        if (name != NULL) {
            ebb__error("%s:%d: run_on: %s is not a configured provider (see "
                       "providers: in the same file)", d->config->file, r->line, name);
            return 2;
        }
    }
    return 0;
}

static int make_state_subdirs(struct ebb__daemon *d)
{
    char err[512] = "";
    d->logs_dir = ebb__path_join(d->state_dir, "logs");
    d->checkpoints_dir = ebb__path_join(d->state_dir, "checkpoints");
    d->plugins_dir = ebb__path_join(d->state_dir, "plugins");
    if (d->logs_dir == NULL || d->checkpoints_dir == NULL || d->plugins_dir == NULL ||
        ebb__mkdir_p(d->logs_dir, err, sizeof(err)) != 0 ||
        ebb__mkdir_p(d->checkpoints_dir, err, sizeof(err)) != 0 ||
        ebb__mkdir_p(d->plugins_dir, err, sizeof(err)) != 0) {
        ebb__error("%s", err[0] ? err : "out of memory");
        return 1;
    }
    d->host_env.plugins_dir = d->plugins_dir;
    if (ebb__daemon_workdirs_open(d, err, sizeof(err)) != 0) {
        ebb__error("%s", err);
        return 1;
    }
    return 0;
}

static void on_loop_turn(uv_check_t *handle)
{
    struct ebb__daemon *d = handle->data;
    int ok = ebb__store_flush(d->store) == 0;
    if (!ok)
        ebb__error("cannot commit to the store: %s", ebb__store_errmsg(d->store));
    if (d->api != NULL)
        ebb__api_server_committed(d->api, ok, ebb__store_errmsg(d->store));
    if (ok)
        ebb__daemon_checkpoint_maybe(d);
}

static int start_engine(struct ebb__daemon *d)
{
    load_catalog(d);
    load_store_prices(d);
    if (make_state_subdirs(d) != 0)
        return 1;
    struct ebb__engine_options eo = {
        .clock = &d->clock,
        .store = d->store,
        .registry = &d->registry,
        .catalog = d->catalog,
        .store_fees = d->store_fees,
        .default_policy = d->config->default_policy,
        .store_prices = 1,
        .agent_heartbeat = d->config->agent_heartbeat,
        .agent_enrol_ttl = d->config->agent_enrol_ttl,
        .agent_gang_timeout = d->config->agent_gang_timeout,
        .agent_heartbeat_timeout = d->config->agent_heartbeat_timeout,
        .checkpoint_root = d->checkpoints_dir,
        .run_on = d->config->run_on,
        .n_run_on = d->config->n_run_on,
        .checkpoint_durations = &d->checkpoint_durations,
        .budget_config = d->config,
        .note = ebb__daemon_note,
        .note_arg = d,
    };
    ebb__histogram_init(&d->checkpoint_durations, ebb__metrics_checkpoint_bounds,
                        ebb__metrics_checkpoint_n_bounds);
    if (ebb__engine_new(&eo, &d->engine) != 0) {
        ebb__error("out of memory starting the engine");
        return 1;
    }
    const struct ebb__poll_sink sink = {
        .arg = d->engine,
        .prices = ebb__engine_prices,
        .all_polled = ebb__engine_all_polled,
    };
    ebb__poller_init(&d->poller, &d->clock, &sink);
    d->poller_ready = 1;
    ebb__engine_host_env(d->engine, &d->host_env);
    d->host_env.store = d->store;
    d->host_env.market = &d->poller;
    d->host_env.market_changed = ebb__poller_market_changed;
    if (ebb__poller_add_registry(&d->poller, &d->registry) != 0) {
        ebb__error("out of memory starting the poller");
        return 1;
    }
    /* One commit per loop turn instead of one per event (see store.h). */
    ebb__store_group_commit(d->store, 1);
    ebb__store_checkpoint_elsewhere(d->store);
    uv_check_init(&d->loop, &d->flush);
    d->flush.data = d;
    uv_check_start(&d->flush, on_loop_turn);
    d->flush_ready = 1;
    if (ebb__engine_recover(d->engine) != 0)
        return 1;
    ebb__engine_agent_sweep_start(d->engine);
    ebb__poller_start(&d->poller);
    return 0;
}

/* Agents keep the URL they were started with, so a port the OS picked
 * (agent_api.listen with port 0) is kept in STATE/agent.port and asked for
 * again after a restart: agents that outlived ebbd reconnect. */
static int start_agent_api(struct ebb__daemon *d, char *err, size_t errlen)
{
    char ip[64];
    uint16_t port = 0;
    const char *listen = d->config->agent_listen;
    char *keep = ebb__path_join(d->state_dir, "agent.port");
    int rc = EBB_ENOMEM;
    if (keep != NULL && ebb__httpd_parse_address(listen, ip, sizeof(ip), &port) == 0 &&
        port == 0) {
        FILE *f = fopen(keep, "r");
        unsigned kept = 0;
        if (f != NULL && fscanf(f, "%u", &kept) == 1 && kept > 0 && kept < 65536) {
            char again[96];
            snprintf(again, sizeof(again), strchr(ip, ':') ? "[%s]:%u" : "%s:%u",
                     ip, kept);
            rc = ebb__agent_api_start(&d->agent_api, &d->loop, d->engine, again,
                                      d->logs_dir, err, errlen);
            if (rc != 0)
                ebb__warn("agents' port %u is taken now; agents started before "
                          "cannot reconnect", kept);
        }
        if (f != NULL)
            fclose(f);
    }
    if (keep != NULL && d->agent_api == NULL)
        rc = ebb__agent_api_start(&d->agent_api, &d->loop, d->engine, listen,
                                  d->logs_dir, err, errlen);
    struct ebb__tls_ctx *tls = NULL;
    if (rc == 0)
        rc = ebb__daemon_agent_tls(d, &tls, err, errlen);
    if (rc == 0)
        ebb__agent_api_secure(d->agent_api, tls, d->config->agent_insecure);
    if (rc == 0 && port == 0) {
        const char *url = ebb__agent_api_url(d->agent_api);
        const char *colon = strrchr(url, ':');
        FILE *f = fopen(keep, "w");
        if (f == NULL || fprintf(f, "%s\n", colon + 1) < 0)
            ebb__warn("cannot keep the agents' port in %s", keep);
        if (f != NULL)
            fclose(f);
    }
    free(keep);
    return rc;
}

/* A socket others may use (api.socket_mode with group or other bits) must
 * be reachable: the state directory then lets the same users traverse it
 * (search permission only; nothing in it becomes readable). */
static int open_state_dir_to_socket_users(struct ebb__daemon *d)
{
    unsigned mode = d->config->api_socket_mode;
    if ((mode & 077) == 0)
        return 0;
    mode_t dir_mode = 0700 | ((mode & 070) ? 010 : 0) | ((mode & 07) ? 01 : 0);
    const char *group = d->config->api_socket_group;
    struct group gr, *found = NULL;
    char buf[1024];
    if (group != NULL && (getgrnam_r(group, &gr, buf, sizeof(buf), &found) != 0 ||
                          found == NULL || chown(d->state_dir, (uid_t)-1, gr.gr_gid) != 0)) {
        ebb__error("cannot give %s to group %s: %s", d->state_dir, group,
                   found == NULL ? "no such group" : strerror(errno));
        return 1;
    }
    if (chmod(d->state_dir, dir_mode) != 0) {
        ebb__error("cannot open %s to the socket's users: %s", d->state_dir,
                   strerror(errno));
        return 1;
    }
    return 0;
}

static int start_api(struct ebb__daemon *d)
{
    char err[512] = "";
    if (open_state_dir_to_socket_users(d) != 0)
        return 1;
    char *sock = ebb__path_join(d->state_dir, "ebb.sock");
    int rc = sock ? ebb__api_server_start(&d->api, &d->loop, sock,
                                          (int)d->config->api_socket_mode,
                                          d->config->api_socket_group,
                                          ebb__daemon_methods, d, err, sizeof(err))
                  : EBB_ENOMEM;
    free(sock);
    if (rc != 0) {
        ebb__error("%s", err[0] ? err : ebb_strerror(rc));
        return rc == EBB_ECONFIG ? 2 : 1;
    }
    rc = start_agent_api(d, err, sizeof(err));
    if (rc != 0) {
        ebb__error("%s", err[0] ? err : ebb_strerror(rc));
        return rc == EBB_EINVAL ? 2 : 1;
    }
    /* Agents are told the configured URL, or where ebbd really listens
     * (the port the OS picked for port 0). */
    const char *url = d->config->agent_url ? d->config->agent_url
                                           : ebb__agent_api_url(d->agent_api);
    const struct ebb__agent_ckpt_hooks hooks = {
        .job_doc = ebb__daemon_ckpt_job_doc, .serve = ebb__daemon_ckpt_serve, .arg = d};
    ebb__agent_api_ckpt(d->agent_api, &hooks);
    ebb__engine_set_agent_url(d->engine, url);
    ebb__engine_set_agent_tls(d->engine, d->agent_tls_pin[0] ? d->agent_tls_pin : NULL,
                              d->agent_tls_ca);
    ebb__info("agents reach ebbd at %s", url);
    return 0;
}

/* Shutdown runs as a chain of close callbacks: API server (answers what is
 * in flight), then HTTP (in-flight requests complete with EBB_ECANCELED
 * while their plugins still exist), then plugins, clock and signals. When
 * the last handle is closed uv_run() returns. */
static void on_http_closed(void *arg)
{
    struct ebb__daemon *d = arg;
    d->http = NULL;
    /* Providers cancel their pending calls into the engine: it goes last. */
    ebb__registry_free(&d->registry);
    ebb__daemon_schedules_stop(d);
    if (d->poller_ready)
        ebb__poller_fini(&d->poller);
    d->poller_ready = 0;
    ebb__engine_free(d->engine);
    d->engine = NULL;
    ebb__clock_close(&d->clock, NULL);
    uv_close((uv_handle_t *)&d->sigterm, NULL);
    uv_close((uv_handle_t *)&d->sigint, NULL);
    if (d->flush_ready) {
        ebb__store_flush(d->store);
        uv_close((uv_handle_t *)&d->flush, NULL);
        d->flush_ready = 0;
    }
}

static void on_api_closed(void *arg);

static void on_agent_api_closed(void *arg)
{
    struct ebb__daemon *d = arg;
    d->agent_api = NULL;
    if (d->api != NULL)
        ebb__api_server_close(d->api, on_api_closed, d);
    else
        on_api_closed(d);
}

static void on_api_closed(void *arg)
{
    struct ebb__daemon *d = arg;
    d->api = NULL;
    if (d->http != NULL)
        ebb__http_close(d->http, on_http_closed, d);
    else
        on_http_closed(d);
}

static void close_agent_api(void *arg)
{
    struct ebb__daemon *d = arg;
    if (d->agent_api != NULL)
        ebb__agent_api_close(d->agent_api, on_agent_api_closed, d);
    else
        on_agent_api_closed(d);
}

static void begin_shutdown(struct ebb__daemon *d)
{
    if (d->shutting_down)
        return;
    d->shutting_down = 1;
    ebb__daemon_notify_stop(d);
    ebb__daemon_ckpt_stop(d);
    ebb__daemon_workdir_sweep_stop(d);
    ebb__daemon_metrics_close(d, close_agent_api, d);
}

static void on_signal(uv_signal_t *handle, int signum)
{
    struct ebb__daemon *d = handle->data;
    ebb__info("received %s; shutting down", strsignal(signum));
    begin_shutdown(d);
}

static void release_state(struct ebb__daemon *d)
{
    ebb__store_close(d->store);
    d->store = NULL;
    if (d->lock_fd >= 0)
        close(d->lock_fd);
    d->lock_fd = -1;
    ebb__catalog_free(d->catalog);
    d->catalog = NULL;
    ebb__store_prices_free(d->store_fees);
    d->store_fees = NULL;
    free(d->state_dir);
    free(d->logs_dir);
    free(d->agent_tls_ca);
    free(d->checkpoints_dir);
    free(d->plugins_dir);
    ebb__daemon_workdirs_close(d);
    free(d->config_name);
    ebb__config_free(d->config);
}

/* --check ends here: everything a configuration can be refused for is
 * known once the plugins are created, and nothing has touched the state
 * directory. */
static int checked(struct ebb__daemon *d)
{
    printf("%s: ok (%zu providers, %zu policies)\n", d->config_name,
           d->registry.n_providers, d->registry.n_policies);
    fflush(stdout);
    ebb__log_set_level(EBB_LOG_WARN);
    return 0;
}

/* From the state directory to the schedules: what a running ebbd needs
 * beyond its plugins. Returns 0 or the exit code. */
static int start_the_rest(const struct ebb__daemon_options *opts,
                          struct ebb__daemon *d)
{
    int code = open_state(opts, d);
    if (code == 0)
        code = ebb__daemon_stores_make_dirs(d);
    if (code == 0)
        code = ebb__daemon_clock_start(d);
    if (code == 0)
        code = start_engine(d);
    if (code == 0)
        code = start_api(d);
    if (code == 0)
        code = ebb__daemon_metrics_start(d);
    if (code == 0)
        code = ebb__daemon_limits_apply(d);
    if (code == 0)
        code = ebb__daemon_ckpt_start(d);
    if (code == 0)
        code = ebb__daemon_workdir_sweep_start(d);
    if (code == 0)
        code = ebb__daemon_schedules_start(d);
    if (code == 0)
        code = ebb__daemon_notify_start(d);
    if (code == 0)
        ebb__info("ebbd %s started: state %s, config %s, %zu providers, %zu "
                  "policies, pid %ld", EBB_VERSION, d->state_dir,
                  d->config_name, d->registry.n_providers,
                  d->registry.n_policies, (long)getpid());
    return code;
}

int ebb__daemon_run(const struct ebb__daemon_options *opts)
{
    struct ebb__daemon *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return 1;
    d->lock_fd = -1;
    ebb_list_init(&d->quotes);
    ebb_list_init(&d->outlooks.kept);
    int code = load_config(opts, d);
    if (code != 0) {
        ebb__registry_free(&d->registry);
        release_state(d);
        free(d);
        return code;
    }
    if (uv_loop_init(&d->loop) != 0) {
        ebb__error("cannot initialise the event loop");
        ebb__registry_free(&d->registry);
        release_state(d);
        free(d);
        return 1;
    }
    code = start_plugins(d);
    if (code == 0)
        code = check_run_on(d);
    if (code == 0)
        code = ebb__daemon_stores_open(d);
    if (code == 0 && opts->check)
        code = checked(d);
    else if (code == 0)
        code = start_the_rest(opts, d);
    d->exit_code = code;
    if (code != 0 || opts->check)
        begin_shutdown(d);
    uv_run(&d->loop, UV_RUN_DEFAULT);
    code = d->exit_code;
    int rc = uv_loop_close(&d->loop);
    if (rc != 0) {
        /* A handle left open is a bug that leak checkers would hide. */
        ebb__error("event loop did not close cleanly: %s", uv_strerror(rc));
        code = code ? code : 3;
    } else if (code == 0) {
        ebb__info("stopped cleanly");
    }
    ebb__daemon_ckpt_free(d);
    ebb__daemon_outlooks_free(d);
    ebb__daemon_workdir_seals_free(d);
    ebb__daemon_stores_free(d);
    release_state(d);
    free(d);
    return code;
}
