#include "daemon/agent_api.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include <ebb/runas.h>
#include <ebb/units.h>

#include "base/log.h"
#include "base/ratelimit.h"
#include "base/str.h"
#include "daemon/agent_api_parse.h"
#include "io/clock.h"
#include "io/httpd.h"
#include "store/store.h"

/* Log lines about refused requests, of each kind: a burst of
 * REFUSAL_LOG_BURST, then one more per REFUSAL_LOG_MS. */
#define REFUSAL_LOG_MS 10000
#define REFUSAL_LOG_BURST 3

/* The kinds of refusal anyone who reaches the listener can cause, each
 * rate-limited on its own so that a flood of one does not hide another. */
enum refusal {
    REFUSED_TOKEN,    /* a request without a live instance's bearer token */
    REFUSED_ENROL,    /* an enrolment with a bad, spent or expired token */
    REFUSED_METADATA, /* a metadata session without the instance's token */
    REFUSED_PLAIN,    /* plain HTTP from another host */
    N_REFUSALS
};

struct ebb__agent_api {
    struct ebb__engine *engine;
    struct ebb__httpd *httpd;
    uv_loop_t *loop;
    struct ebb__ratelimit refusals[N_REFUSALS];
    char *logs_dir;
    struct ebb__tls_ctx *tls; /* NULL: plain HTTP */
    bool insecure;            /* agent_api.insecure */
    void (*closed)(void *arg);
    void *closed_arg;
    struct ebb__agent_ckpt_hooks ckpt;
};

char *ebb__agent_log_path(const char *logs_dir, const char *id)
{
    return ebb_strfmt("%s/%s.log", logs_dir, id);
}

/* ---- answers ------------------------------------------------------------ */

static void reply_error(struct ebb__httpd_response *res, int status,
                        const char *message)
{
    ebb__httpd_set_json(res, status, json_pack("{s:s}", "error", message));
}

/* Logs a refusal of `kind` ("agent API: refused ..."), rate-limited:
 * anyone who reaches the listener can cause these, as fast as they like.
 * The first line after some were held back says how many. */
static void warn_refused(struct ebb__agent_api *api, enum refusal kind,
                         const char *fmt, ...) EBB_PRINTF(3, 4);
static void warn_refused(struct ebb__agent_api *api, enum refusal kind,
                         const char *fmt, ...)
{
    uint64_t held = 0;
    if (!ebb__ratelimit_allow(&api->refusals[kind], (ebb_time_ms)uv_now(api->loop),
                              &held))
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (held > 0)
        ebb__warn("%s (and %llu more since the last such line)", line,
                  (unsigned long long)held);
    else
        ebb__warn("%s", line);
}

/* The job the request's bearer token belongs to, and in *rank its agent's
 * node; answers 401 otherwise. */
static struct ebb__job *authenticate(struct ebb__agent_api *api,
                                     const struct ebb__httpd_request *req,
                                     struct ebb__httpd_response *res, unsigned *rank)
{
    const char *auth = ebb__httpd_header(req, "authorization");
    const char *why = NULL;
    struct ebb__job *job = NULL;
    if (auth == NULL)
        why = "no Authorization header";
    else if (strncasecmp(auth, "Bearer ", 7) != 0)
        why = "Authorization is not a bearer token";
    else if ((job = ebb__engine_agent_job(api->engine, auth + 7, rank)) == NULL)
        why = "no live instance holds this token";
    if (job != NULL)
        return job;
    warn_refused(api, REFUSED_TOKEN, "agent API: refused %s %s: %s", req->method,
                 req->path, why);
    reply_error(res, 401, why);
    return NULL;
}

/* ---- POST /v1/enrol ------------------------------------------------------- */

/* The one-time trade of the enrolment token from the instance's boot data
 * for the agent's session token (docs/agent-protocol.md). */
static void post_enrol(struct ebb__agent_api *api, const struct ebb__httpd_request *req,
                       struct ebb__httpd_response *res)
{
    const char *auth = ebb__httpd_header(req, "authorization");
    char bearer[EBB__BEARER_SIZE], why[256];
    int status = 401;
    struct ebb__job *job = NULL;
    if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
        snprintf(why, sizeof(why), "no enrolment token (Authorization: Bearer enrol:...)");
    else
        job = ebb__engine_agent_enrol(api->engine, auth + 7, bearer, &status, why,
                                      sizeof(why));
    if (job == NULL) {
        warn_refused(api, REFUSED_ENROL, "agent API: refused an enrolment: %s", why);
        reply_error(res, status, why);
        return;
    }
    ebb__info("job %s: its agent enrolled", ebb__engine_job_id(job));
    ebb__httpd_set_json(res, 200, json_pack("{s:s}", "token", bearer));
    OPENSSL_cleanse(bearer, sizeof(bearer));
}

/* ---- GET /v1/agent/job ---------------------------------------------------- */

static json_t *env_json(const struct ebb__job_spec *spec)
{
    json_t *env = json_object();
    for (size_t i = 0; i < spec->n_env; i++) {
        const char *eq = strchr(spec->env[i], '=');
        if (eq == NULL)
            continue;
        char *name = strndup(spec->env[i], (size_t)(eq - spec->env[i]));
        if (name != NULL)
            json_object_set_new(env, name, json_string(eq + 1));
        free(name);
    }
    return env;
}

static json_t *requirements_json(const struct ebb__job_resources *r)
{
    json_t *req = json_object();
    if (r->gpu_model != NULL)
        json_object_set_new(req, "gpu_model", json_string(r->gpu_model));
    if (r->gpu_count > 0)
        json_object_set_new(req, "gpu_count", json_integer(r->gpu_count));
    if (r->gpu_memory_gb > 0)
        json_object_set_new(req, "gpu_memory_mb",
                            json_integer((json_int_t)(r->gpu_memory_gb * 1024)));
    return req;
}

/* Durations the agent keeps run on the wall clock. */
static json_int_t wall_ms(const struct ebb__engine_options *o, ebb_dur_ms d,
                          ebb_dur_ms floor)
{
    if (d <= 0)
        return 0;
    ebb_dur_ms w = ebb__clock_real_ms(o->clock, d);
    return w < floor ? floor : w;
}

/* Where a job's checkpoints go when its spec names no dir: under ebbd's
 * state directory for a job that runs as ebbd's own user; in its user's
 * home, ~/.local/state/ebb/checkpoints/ID, for a job that runs as another
 * user (who may not enter ebbd's state directory). A new string. */
static char *default_ckpt_dir(const struct ebb__engine_options *o,
                              const struct ebb__job *job, const char *id)
{
    int64_t uid = ebb__engine_job_run_uid(job);
    char home[4096];
    if ((uid_t)uid == geteuid() || ebb_runas_user(uid, NULL, home, sizeof(home)) != 0)
        return ebb_strfmt("%s/%s", o->checkpoint_root, id);
    return ebb_strfmt("%s/.local/state/ebb/checkpoints/%s", home, id);
}

/* A gang member's part of the job document (docs/gangs.md): its rank, its
 * own checkpoint directory below the job's, and the gang's newest whole
 * checkpoint to resume from, by name (every node has its own part of it). */
static int gang_doc(const struct ebb__engine_options *o, const struct ebb__job_info *ji,
                    unsigned rank, json_t *doc)
{
    char latest[4096];
    int rc = ebb__store_checkpoint_latest(o->store, ji->id, latest, sizeof(latest));
    if (rc != 0 && rc != EBB_ENOTFOUND)
        return rc;
    const char *slash = strrchr(latest, '/');
    json_t *ck = json_object_get(doc, "checkpoint");
    const char *keys[] = {"dir", "default_dir"};
    int bad = 0;
    for (size_t i = 0; i < 2; i++) {
        const char *d = json_string_value(json_object_get(ck, keys[i]));
        if (d != NULL && d[0] != '\0') {
            char *mine = ebb_strfmt("%s/rank-%u", d, rank);
            bad |= mine == NULL || json_object_set_new(ck, keys[i], json_string(mine)) != 0;
            free(mine);
        }
    }
    bad |= json_object_set_new(ck, "resume", json_string(slash ? slash + 1 : latest)) != 0;
    bad |= json_object_set_new(doc, "gang", json_pack("{s:i,s:I}", "nodes", ji->spec->nodes,
                                                      "rank", (json_int_t)rank)) != 0;
    return bad ? EBB_ENOMEM : 0;
}

static void get_job(struct ebb__agent_api *api, struct ebb__job *job, unsigned rank,
                    struct ebb__httpd_response *res)
{
    struct ebb__job_info ji;
    struct ebb__attempt_info a;
    ebb__engine_job_info(job, &ji);
    ebb__engine_job_attempt(job, &a); /* authenticated: it has one */
    const struct ebb__job_spec *spec = ji.spec;
    const struct ebb__engine_options *o = ebb__engine_options(api->engine);
    json_t *argv = json_array();
    for (size_t i = 0; i < spec->argc; i++)
        json_array_append_new(argv, json_string(spec->argv[i]));
    /* Without a dir of its own the agent chooses: on the instance's own
     * disk when it has one (the local provider's private disks, --disk),
     * else at default_dir. */
    char *dir = strdup(spec->checkpoint.dir ? spec->checkpoint.dir : "");
    char *default_dir = default_ckpt_dir(o, job, ji.id);
    json_t *doc = json_pack(
        "{s:s,s:s,s:o,s:b,s:o,s:s,s:{s:s,s:s,s:s,s:s,s:I,s:I,s:i},s:s,s:I,s:o}",
        "job_id", ji.id,
        "instance_id", a.instance_id ? a.instance_id : "",
        "argv", argv,
        "shell", spec->shell,
        "env", env_json(spec),
        "workdir", ji.workdir ? ji.workdir : "",
        "checkpoint",
            "dir", dir ? dir : "",
            "default_dir", default_dir ? default_dir : "",
            "signal", spec->checkpoint.signal_name,
            "periodic_signal", "SIGUSR2",
            "every_ms", wall_ms(o, ebb__engine_job_checkpoint_every(job), EBB_MS_PER_SECOND),
            "grace_ms", (json_int_t)ebb__engine_agent_grace(job),
            "keep", spec->checkpoint.keep,
        "progress_file", "",
        "heartbeat_ms", (json_int_t)o->agent_heartbeat,
        "requirements", requirements_json(&spec->resources));
    free(dir);
    free(default_dir);
    if (doc != NULL && spec->nodes > 1 && gang_doc(o, &ji, rank, doc) != 0) {
        json_decref(doc);
        reply_error(res, 503, "cannot give the gang's checkpoint now; ask again");
        return;
    }
    if (doc != NULL && api->ckpt.job_doc != NULL &&
        api->ckpt.job_doc(api->ckpt.arg, job, doc) != 0) {
        json_decref(doc);
        reply_error(res, 503, "cannot give the job's store now; ask again");
        return;
    }
    ebb__httpd_set_json(res, 200, doc);
}

/* The agent's reports about stored checkpoints become job events. */
static void store_report(struct ebb__agent_api *api, struct ebb__job *job,
                         const struct ebb__agent_report *r)
{
    char reason[640];
    if (r->kind == EBB__AGENT_CHECKPOINT_FALLBACK)
        snprintf(reason, sizeof(reason), "stored checkpoint %s refused: %s",
                 r->path ? r->path : "?", r->reason);
    else if (r->kind == EBB__AGENT_CHECKPOINT_SKIPPED)
        snprintf(reason, sizeof(reason), "final checkpoint %s%snot stored: %s",
                 r->path ? r->path : "", r->path ? " " : "", r->reason);
    else if (r->kind == EBB__AGENT_STARTED && r->resume_id > 0)
        snprintf(reason, sizeof(reason), "resumed from stored checkpoint %lld "
                 "(%lld bytes in %.1f s)", (long long)r->resume_id,
                 (long long)r->download_bytes, (double)r->download_ms / 1000.0);
    else
        return;
    const struct ebb__engine_options *o = ebb__engine_options(api->engine);
    const char *state = ebb__job_state_name(ebb__engine_job_state(job));
    ebb__info("job %s: %s", ebb__engine_job_id(job), reason);
    /* A checkpoint that could not be stored, or not be used, is worth a
     * person's attention: its event is written with the job event. */
    int failed = r->kind != EBB__AGENT_STARTED;
    int rc = ebb__store_begin(o->store);
    if (rc == 0)
        rc = ebb__store_job_event(o->store, ebb__engine_job_id(job),
                                  ebb__clock_now(o->clock), state, state, reason);
    if (rc == 0 && failed)
        ebb__engine_job_note(job, "checkpoint.failed", reason);
    if (rc == 0)
        rc = ebb__store_commit(o->store);
    if (rc != 0) {
        ebb__store_rollback(o->store);
        ebb__error("job %s: cannot record \"%s\": %s", ebb__engine_job_id(job), reason,
                   ebb__store_errmsg(o->store));
    }
}

/* ---- POST /v1/agent/events ------------------------------------------------ */

/* The reply's "env" for a gang member's job: "NAME=value" as an object. */
static json_t *reply_env(const struct ebb__agent_reply *reply)
{
    json_t *env = json_object();
    for (size_t i = 0; env != NULL && i < reply->n_env; i++) {
        const char *eq = strchr(reply->env[i], '=');
        char *name = eq != NULL ? strndup(reply->env[i], (size_t)(eq - reply->env[i])) : NULL;
        if (name != NULL)
            json_object_set_new(env, name, json_string(eq + 1));
        free(name);
    }
    return env;
}

static void post_event(struct ebb__agent_api *api, struct ebb__job *job, unsigned rank,
                       const struct ebb__httpd_request *req,
                       struct ebb__httpd_response *res)
{
    json_error_t jerr;
    json_t *body = json_loadb(req->body, req->body_len, 0, &jerr);
    const char *why = "the body is not a JSON object";
    struct ebb__agent_report r;
    if (!json_is_object(body) || ebb__agent_report_parse(body, &r, &why) != 0) {
        ebb__warn("job %s: bad agent report: %s", ebb__engine_job_id(job), why);
        json_decref(body);
        reply_error(res, 400, why);
        return;
    }
    struct ebb__job_info ji;
    ebb__engine_job_info(job, &ji);
    /* A job with a store moves on only when a checkpoint is durable
     * (ebbd reports it then): the agent's own word is progress. */
    if (r.kind == EBB__AGENT_CHECKPOINT && ji.spec->checkpoint.store != NULL)
        r.kind = r.fraction >= 0 ? EBB__AGENT_PROGRESS : EBB__AGENT_HEARTBEAT;
    store_report(api, job, &r);
    struct ebb__agent_reply reply;
    ebb__engine_agent_report(job, rank, &r, &reply);
    json_decref(body);
    /* What the agent is told was recorded (an exit, a checkpoint) is. */
    if (ebb__store_flush(ebb__engine_options(api->engine)->store) != 0) {
        reply_error(res, 503, "cannot record the report; send it again");
        return;
    }
    if (reply.command == EBB__AGENT_RELEASE)
        ebb__httpd_set_json(res, 200, json_pack("{s:s,s:s}", "command", "release",
                                       "reason", reply.reason));
    else if (reply.command == EBB__AGENT_STOP)
        ebb__httpd_set_json(res, 200, json_pack("{s:s,s:I,s:s}", "command", "stop",
                                       "grace_ms", (json_int_t)reply.grace,
                                       "reason", reply.reason));
    else if (reply.command == EBB__AGENT_WAIT)
        ebb__httpd_set_json(res, 200, json_pack("{s:s,s:I,s:s}", "command", "wait",
                                       "retry_ms", (json_int_t)reply.retry,
                                       "reason", reply.reason));
    else if (reply.n_env > 0)
        ebb__httpd_set_json(res, 200, json_pack("{s:s,s:o}", "command", "none",
                                                "env", reply_env(&reply)));
    else
        ebb__httpd_set_json(res, 200, json_pack("{s:s}", "command", "none"));
}

/* ---- POST /v1/agent/log ---------------------------------------------------- */

static void post_log(struct ebb__agent_api *api, struct ebb__job *job,
                     const struct ebb__httpd_request *req,
                     struct ebb__httpd_response *res)
{
    const char *id = ebb__engine_job_id(job);
    char *path = ebb__agent_log_path(api->logs_dir, id);
    int fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640) : -1;
    int ok = fd >= 0;
    size_t done = 0;
    while (ok && done < req->body_len) {
        ssize_t n = write(fd, req->body + done, req->body_len - done);
        if (n < 0 && errno == EINTR)
            continue;
        ok = n > 0;
        done += ok ? (size_t)n : 0;
    }
    if (fd >= 0)
        close(fd);
    if (!ok) {
        ebb__error("job %s: cannot append to %s: %s", id,
                   path ? path : "its log", strerror(errno));
        reply_error(res, 500, "cannot store the log");
    } else {
        ebb__httpd_set_json(res, 200, json_pack("{s:s}", "command", "none"));
    }
    free(path);
}

/* ---- the metadata endpoint of local instances ------------------------------ */

/* /imds/<token>/latest/...: the attempt whose token it is, or NULL. A gang
 * member's "<token>+<rank>" names its gang's attempt: the gang shares one
 * notice. */
static struct ebb__job *imds_job(struct ebb__agent_api *api, const char *path,
                                 const char **rest)
{
    const char *token = path + strlen("/imds/");
    const char *slash = strchr(token, '/');
    char buf[EBB__AGENT_TOKEN_SIZE];
    if (slash == NULL || (size_t)(slash - token) >= sizeof(buf))
        return NULL;
    memcpy(buf, token, (size_t)(slash - token));
    buf[slash - token] = '\0';
    buf[strcspn(buf, "+")] = '\0';
    *rest = slash;
    return ebb__engine_job_of_token(api->engine, buf);
}

static void serve_imds(struct ebb__agent_api *api,
                       const struct ebb__httpd_request *req,
                       struct ebb__httpd_response *res)
{
    const char *rest = NULL;
    struct ebb__job *job = imds_job(api, req->path, &rest);
    if (job == NULL) {
        res->status = 404;
        return;
    }
    if (strcmp(req->method, "PUT") == 0 && strcmp(rest, "/latest/api/token") == 0) {
        if (ebb__httpd_header(req, "x-aws-ec2-metadata-token-ttl-seconds") == NULL) {
            res->status = 400;
            return;
        }
        /* The path's token is no secret (it names the instance in ebb's
         * store, the provider's tags and `ebb job show`): the session goes
         * only to the holder of the instance's own bearer token. */
        const char *auth = ebb__httpd_header(req, "authorization");
        unsigned rank = 0;
        if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0 ||
            ebb__engine_agent_job(api->engine, auth + 7, &rank) != job) {
            warn_refused(api, REFUSED_METADATA,
                         "metadata endpoint: refused a session for %s: %s",
                         ebb__engine_job_id(job),
                         auth == NULL ? "no Authorization header"
                                      : "not the instance's bearer token");
            res->status = 401;
            return;
        }
        const char *session = ebb__engine_imds_token(job);
        if (session == NULL) {
            res->status = 500;
            return;
        }
        ebb__httpd_set_body(res, session, strlen(session));
        return;
    }
    struct ebb__attempt_info a;
    ebb__engine_job_attempt(job, &a); /* found by its token: it has one */
    if (strcmp(req->method, "GET") != 0 ||
        strcmp(rest, "/latest/meta-data/spot/instance-action") != 0) {
        res->status = 404;
        return;
    }
    const char *token = ebb__httpd_header(req, "x-aws-ec2-metadata-token");
    if (token == NULL || a.imds_token[0] == '\0' ||
        strlen(token) != strlen(a.imds_token) ||
        CRYPTO_memcmp(token, a.imds_token, strlen(token)) != 0) {
        res->status = 401;
        return;
    }
    if (a.notice_deadline == 0) {
        res->status = 404;
        return;
    }
    char when[40];
    ebb_format_time(a.notice_deadline, when, sizeof(when));
    ebb__httpd_set_json(res, 200, json_pack("{s:s,s:s}", "action", "terminate", "time", when));
}

/* ---- routing --------------------------------------------------------------- */

static void handle(const struct ebb__httpd_request *req,
                   struct ebb__httpd_response *res, void *arg)
{
    struct ebb__agent_api *api = arg;
    /* Plain HTTP is for agents on this host; the configuration refuses a
     * plain listener others can reach, and this refuses what reaches a
     * loopback one from afar (a port forward, a proxy). */
    if (!req->tls && !req->peer_loopback && !api->insecure) {
        warn_refused(api, REFUSED_PLAIN,
                     "agent API: refused plain HTTP %s %s from another host "
                     "(serve TLS, or set agent_api.insecure: true)",
                     req->method, req->path);
        reply_error(res, 403, "plain HTTP from another host: use https "
                    "(agent_api.insecure is off)");
        return;
    }
    if (strcmp(req->path, "/v1/enrol") == 0) {
        if (strcmp(req->method, "POST") != 0)
            reply_error(res, 405, "use POST");
        else
            post_enrol(api, req, res);
        return;
    }
    if (strncmp(req->path, "/imds/", 6) == 0) {
        serve_imds(api, req, res);
        return;
    }
    const char *ck = "/v1/agent/checkpoints";
    if (strcmp(req->path, "/v1/agent/resume") == 0 ||
        (strncmp(req->path, ck, strlen(ck)) == 0 &&
         (req->path[strlen(ck)] == '\0' || req->path[strlen(ck)] == '/'))) {
        unsigned rank = 0;
        struct ebb__job *job = api->ckpt.serve ? authenticate(api, req, res, &rank) : NULL;
        if (job != NULL)
            api->ckpt.serve(api->ckpt.arg, job, rank, req, res);
        else if (api->ckpt.serve == NULL)
            reply_error(res, 404, "no such endpoint");
        return;
    }
    int get_job_doc = strcmp(req->path, "/v1/agent/job") == 0;
    int events = strcmp(req->path, "/v1/agent/events") == 0;
    int log = strcmp(req->path, "/v1/agent/log") == 0;
    if (!get_job_doc && !events && !log) {
        reply_error(res, 404, "no such endpoint");
        return;
    }
    const char *want = get_job_doc ? "GET" : "POST";
    if (strcmp(req->method, want) != 0) {
        reply_error(res, 405, get_job_doc ? "use GET" : "use POST");
        return;
    }
    unsigned rank = 0;
    struct ebb__job *job = authenticate(api, req, res, &rank);
    if (job == NULL)
        return;
    if (get_job_doc)
        get_job(api, job, rank, res);
    else if (events)
        post_event(api, job, rank, req, res);
    else
        post_log(api, job, req, res);
}

int ebb__agent_api_start(struct ebb__agent_api **out, uv_loop_t *loop,
                         struct ebb__engine *engine, const char *address,
                         const char *logs_dir, char *err, size_t errlen)
{
    char ip[64];
    uint16_t port;
    if (ebb__httpd_parse_address(address, ip, sizeof(ip), &port) != 0) {
        snprintf(err, errlen, "agent_api.listen: %s is not an address and "
                 "port (example: 127.0.0.1:7311 or [::1]:7311)", address);
        return EBB_EINVAL;
    }
    struct ebb__agent_api *api = calloc(1, sizeof(*api));
    if (api == NULL || (api->logs_dir = strdup(logs_dir)) == NULL) {
        free(api);
        return EBB_ENOMEM;
    }
    api->engine = engine;
    api->loop = loop;
    for (int k = 0; k < N_REFUSALS; k++)
        api->refusals[k] = (struct ebb__ratelimit){.interval = REFUSAL_LOG_MS,
                                                   .burst = REFUSAL_LOG_BURST};
    int rc = ebb__httpd_listen(&api->httpd, loop, ip, port, handle, api);
    if (rc != 0) {
        snprintf(err, errlen, "cannot listen on %s for agents: %s", address,
                 rc == EBB_EIO ? "address in use or not available" : ebb_strerror(rc));
        free(api->logs_dir);
        free(api);
        return rc;
    }
    *out = api;
    return 0;
}

void ebb__agent_api_secure(struct ebb__agent_api *api, struct ebb__tls_ctx *tls,
                           bool insecure)
{
    api->tls = tls;
    api->insecure = insecure;
    ebb__httpd_set_tls(api->httpd, tls);
}

void ebb__agent_api_ckpt(struct ebb__agent_api *api,
                         const struct ebb__agent_ckpt_hooks *hooks)
{
    api->ckpt = *hooks;
}

struct ebb__httpd *ebb__agent_api_httpd(struct ebb__agent_api *api)
{
    return api->httpd;
}

const char *ebb__agent_api_url(const struct ebb__agent_api *api)
{
    return ebb__httpd_url(api->httpd);
}

static void on_httpd_closed(void *arg)
{
    struct ebb__agent_api *api = arg;
    if (api->closed != NULL)
        api->closed(api->closed_arg);
    ebb__tls_ctx_free(api->tls);
    free(api->logs_dir);
    free(api);
}

void ebb__agent_api_close(struct ebb__agent_api *api, void (*cb)(void *arg),
                          void *arg)
{
    api->closed = cb;
    api->closed_arg = arg;
    ebb__httpd_close(api->httpd, on_httpd_closed, api);
}
