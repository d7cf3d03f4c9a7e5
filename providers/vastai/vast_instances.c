/* Instances: rent (PUT /api/v0/asks/{offer}/), destroy (DELETE
 * /api/v0/instances/{id}/), list (GET /api/v1/instances/, every page), and
 * outbid detection.
 *
 * vast.ai has no idempotency token, so ebb's instances carry the label
 * "ebb:<job id>:<token>" and a launch first looks for an instance with its
 * token: one found (a launch repeated after a crash, or a rent whose
 * answer was lost) is returned instead of renting another. The rent itself
 * is sent once (no blind HTTP retry could tell a lost answer from a
 * refused request, so this is the one retry the host's HTTP client cannot
 * make); a failed one is retried after that check, the waits from the
 * shared backoff (ebb/backoff.h).
 *
 * An outbid interruptible instance is stopped, not destroyed, and no
 * notice comes: it is reported preempted (state STOPPING: it still exists
 * and may restart if the bid wins again, so the core must destroy it).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/backoff.h>
#include <ebb/buf.h>
#include <ebb/shquote.h>

#include "vastai.h"

/* One of ebb's instances as listed; strings owned by the row. */
struct row {
    char id[24], token[96], job_id[96], region[64], zone[24], type[48];
    enum ebb_market market;
    enum ebb_instance_state state;
    int preempted;
    ebb_time_ms launched_at;
};

static void view(const struct row *r, struct ebb_instance *out)
{
    *out = (struct ebb_instance){
        .struct_size = sizeof(struct ebb_instance),
        .id = r->id,
        .token = r->token,
        .job_id = r->job_id,
        .region = r->region,
        .zone = r->zone,
        .instance_type = r->type,
        .market = r->market,
        .state = r->state,
        .launched_at = r->launched_at,
        .preempted = r->preempted,
        .billing = EBB_BILLING_PER_SECOND,
    };
}

static int is_one_of(const char *s, const char *const *set, size_t n)
{
    for (size_t i = 0; s != NULL && i < n; i++)
        if (strcmp(s, set[i]) == 0)
            return 1;
    return 0;
}

/* Reads one instance; returns 1 when it is ebb's (its label says so). */
static int parse_row(json_t *j, struct row *r)
{
    const char *label = json_string_value(json_object_get(j, "label"));
    json_t *id = json_object_get(j, "id");
    size_t plen = strlen(VAST_LABEL_PREFIX);
    if (label == NULL || strncmp(label, VAST_LABEL_PREFIX, plen) != 0 ||
        !json_is_integer(id))
        return 0;
    const char *job = label + plen;
    const char *colon = strchr(job, ':');
    if (colon == NULL)
        return 0;
    memset(r, 0, sizeof(*r));
    snprintf(r->id, sizeof(r->id), "%lld", (long long)json_integer_value(id));
    snprintf(r->job_id, sizeof(r->job_id), "%.*s", (int)(colon - job), job);
    snprintf(r->token, sizeof(r->token), "%s", colon + 1);
    vast_place(j, r->region, sizeof(r->region), r->zone, sizeof(r->zone), r->type,
               sizeof(r->type));
    int bid = json_is_true(json_object_get(j, "is_bid"));
    r->market = bid ? EBB_MARKET_SPOT : EBB_MARKET_ON_DEMAND;
    const char *actual = json_string_value(json_object_get(j, "actual_status"));
    const char *intended = json_string_value(json_object_get(j, "intended_status"));
    const char *cur = json_string_value(json_object_get(j, "cur_state"));
    static const char *const up[] = {"running"};
    static const char *const down[] = {"exited", "stopped", "offline"};
    if (is_one_of(actual, up, 1)) {
        r->state = EBB_INSTANCE_RUNNING;
    } else if (is_one_of(actual, down, 3) || is_one_of(cur, down, 3)) {
        r->state = EBB_INSTANCE_STOPPING;
        /* ebb never stops instances (it destroys them): a stopped bid
         * instance that is meant to run was outbid. */
        r->preempted = bid && !is_one_of(intended, down, 3);
    } else {
        r->state = EBB_INSTANCE_PENDING; /* created, loading, scheduling */
    }
    json_t *start = json_object_get(j, "start_date");
    r->launched_at = json_is_number(start)
                         ? (ebb_time_ms)llround(json_number_value(start) * 1000)
                         : 0;
    return 1;
}

/* ebb's instances in a list's answer; *out is malloc'd. */
static int parse_list(json_t *body, struct row **out, size_t *n)
{
    json_t *list = json_object_get(body, "instances");
    *out = NULL;
    *n = 0;
    if (!json_is_array(list))
        return EBB_EPROTO;
    *out = calloc(json_array_size(list) + 1, sizeof(**out));
    if (*out == NULL)
        return EBB_ENOMEM;
    size_t i;
    json_t *j;
    json_array_foreach(list, i, j)
    {
        if (parse_row(j, &(*out)[*n]))
            (*n)++;
    }
    return 0;
}

static int was_reported(const struct vast *v, const char *id)
{
    for (size_t i = 0; i < v->n_lost; i++)
        if (strcmp(v->lost[i], id) == 0)
            return 1;
    return 0;
}

void vast_report_lost(struct vast *v, json_t *body)
{
    struct row *rows;
    size_t n;
    if (parse_list(body, &rows, &n) != 0)
        return;
    /* Forget instances no longer listed, so the set stays small. */
    size_t keep = 0;
    for (size_t i = 0; i < v->n_lost; i++) {
        size_t k = 0;
        while (k < n && strcmp(rows[k].id, v->lost[i]) != 0)
            k++;
        if (k < n)
            v->lost[keep++] = v->lost[i];
        else
            free(v->lost[i]);
    }
    v->n_lost = keep;
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].preempted || was_reported(v, rows[i].id))
            continue;
        char **grown = realloc(v->lost, (v->n_lost + 1) * sizeof(*grown));
        char *id = strdup(rows[i].id);
        if (grown == NULL || id == NULL) {
            free(id);
            if (grown != NULL)
                v->lost = grown;
            break;
        }
        v->lost = grown;
        v->lost[v->n_lost++] = id;
        struct ebb_instance_event ev = {
            .struct_size = sizeof(struct ebb_instance_event),
            .kind = EBB_EVENT_LOST,
            .instance_id = rows[i].id,
            .token = rows[i].token,
            .at = vast_now(v),
            .reason = "outbid: vast.ai stopped the interruptible instance",
        };
        v->host->log(v->host->ctx, EBB_LOG_INFO, "instance %s (job %s) was outbid",
                     rows[i].id, rows[i].job_id);
        v->host->instance_event(v->host->ctx, &ev);
    }
    free(rows);
}

/* ---- operations ---- */

enum kind { LAUNCH, TERMINATE, LIST };

struct inst_op {
    struct ebb_op op;
    struct vast *v;
    enum kind kind;
    union {
        ebb_launch_cb launch;
        ebb_done_cb done;
        ebb_list_cb list;
    } cb;
    void *arg;
    struct vast_call *call;
    /* LAUNCH: what is asked for, and the instance once known. */
    struct row want;
    char *agent_url, *agent_token;
    char *agent_pin, *agent_ca; /* how the agent trusts ebbd; NULL: not given */
    ebb_micros max_price;
    int attempts;
};

static void op_free(struct inst_op *o)
{
    ebb_op_remove(&o->op);
    free(o->agent_url);
    free(o->agent_token);
    free(o->agent_pin);
    free(o->agent_ca);
    free(o);
}

static void complete_done(struct inst_op *o, int status)
{
    ebb_done_cb cb = o->cb.done;
    void *arg = o->arg;
    op_free(o);
    cb(arg, status);
}

static void complete_launch(struct inst_op *o, int status)
{
    struct ebb_instance one;
    view(&o->want, &one);
    ebb_op_remove(&o->op);
    o->cb.launch(o->arg, status, status == 0 ? &one : NULL);
    free(o->agent_url);
    free(o->agent_token);
    free(o->agent_pin);
    free(o->agent_ca);
    free(o);
}

static void op_cancel(struct ebb_op *op)
{
    struct inst_op *o = (struct inst_op *)op;
    if (o->call != NULL)
        vast_api_cancel(o->call);
    o->call = NULL;
    if (o->kind == LAUNCH)
        complete_launch(o, EBB_ECANCELED);
    else if (o->kind == LIST) {
        ebb_list_cb cb = o->cb.list;
        void *arg = o->arg;
        op_free(o);
        cb(arg, EBB_ECANCELED, NULL, 0);
    } else
        complete_done(o, EBB_ECANCELED);
}

static struct inst_op *op_new(struct vast *v, enum kind kind, void *arg)
{
    struct inst_op *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return NULL;
    o->kind = kind;
    o->arg = arg;
    o->v = v;
    ebb_op_add(&v->ops, &o->op, op_cancel);
    return o;
}

/* ---- list ---- */

static void on_listed(void *arg, int status, json_t *body)
{
    struct inst_op *o = arg;
    o->call = NULL;
    struct row *rows = NULL;
    size_t n = 0;
    if (status == 0)
        status = parse_list(body, &rows, &n);
    struct ebb_instance *views = calloc(n + 1, sizeof(*views));
    if (views == NULL && status == 0)
        status = EBB_ENOMEM;
    for (size_t i = 0; status == 0 && i < n; i++)
        view(&rows[i], &views[i]);
    ebb_list_cb cb = o->cb.list;
    void *cb_arg = o->arg;
    op_free(o);
    cb(cb_arg, status, status == 0 ? views : NULL, status == 0 ? n : 0);
    free(views);
    free(rows);
}

int vast_list(struct vast *v, ebb_list_cb cb, void *arg)
{
    struct inst_op *o = op_new(v, LIST, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    o->cb.list = cb;
    o->call = vast_list_instances(v, on_listed, o);
    if (o->call == NULL) {
        op_free(o);
        return EBB_ENOMEM;
    }
    return 0;
}

/* ---- terminate ---- */

static void on_destroyed(void *arg, int status, json_t *body)
{
    struct inst_op *o = arg;
    o->call = NULL;
    (void)body;
    /* Already gone is what was asked for. */
    complete_done(o, status == EBB_ENOTFOUND ? 0 : status);
}

int vast_terminate(struct vast *v, const char *id, ebb_done_cb cb, void *arg)
{
    if (id == NULL || id[0] == '\0' || strspn(id, "0123456789") != strlen(id))
        return EBB_EINVAL;
    struct inst_op *o = op_new(v, TERMINATE, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    o->cb.done = cb;
    char path[64];
    snprintf(path, sizeof(path), "/api/v0/instances/%s/", id);
    json_t *empty = json_object();
    o->call = empty ? vast_api(v, "DELETE", path, empty, 0, on_destroyed, o) : NULL;
    json_decref(empty);
    if (o->call == NULL) {
        op_free(o);
        return EBB_ENOMEM;
    }
    return 0;
}

/* ---- launch ---- */

static void check_existing(struct inst_op *o);

static const struct vast_offer *find_offer(const struct vast *v, const char *zone,
                                           const char *type)
{
    /* Offers are kept cheapest first; no zone: the cheapest machine. */
    for (size_t i = 0; i < v->n_offers; i++)
        if ((zone[0] == '\0' || strcmp(v->offers[i].machine, zone) == 0) &&
            strcmp(v->offers[i].type, type) == 0)
            return &v->offers[i];
    return NULL;
}

static void on_retry(void *arg)
{
    struct inst_op *o = arg;
    o->op.timer = 0;
    check_existing(o);
}

static void on_rented(void *arg, int status, json_t *body)
{
    struct inst_op *o = arg;
    struct vast *v = o->v;
    o->call = NULL;
    json_t *id = json_object_get(body, "new_contract");
    if (status == 0 && !json_is_integer(id))
        status = EBB_EPROTO;
    if (status == 0) {
        snprintf(o->want.id, sizeof(o->want.id), "%lld",
                 (long long)json_integer_value(id));
        complete_launch(o, 0);
        return;
    }
    if (status == EBB_ENOTFOUND) {
        v->host->log(v->host->ctx, EBB_LOG_INFO, "machine %s is no longer offered",
                     o->want.zone);
        complete_launch(o, EBB_ENOCAPACITY);
        return;
    }
    int transient = status == EBB_ETHROTTLED || status == EBB_EHTTP ||
                    status == EBB_ETIMEDOUT || status == EBB_EIO;
    if (transient && o->attempts <= v->cfg->launch_retries) {
        ebb_dur_ms wait = ebb_backoff_after(v->cfg->retry_backoff,
                                            32 * v->cfg->retry_backoff,
                                            (unsigned)o->attempts);
        o->op.timer = v->host->timer_start(v->host->ctx, vast_now(v) + wait,
                                           on_retry, o);
        if (o->op.timer > 0)
            return;
        o->op.timer = 0;
    }
    complete_launch(o, status);
}

static int rent(struct inst_op *o)
{
    struct vast *v = o->v;
    const struct vast_offer *offer = find_offer(v, o->want.zone, o->want.type);
    if (offer == NULL) {
        v->host->log(v->host->ctx, EBB_LOG_INFO,
                     "no %s offer%s%s in the latest poll", o->want.type,
                     o->want.zone[0] ? " on machine " : "", o->want.zone);
        return EBB_ENOCAPACITY;
    }
    ebb_micros bid = o->max_price > 0 ? o->max_price : offer->min_bid;
    if (o->want.market == EBB_MARKET_SPOT && bid < offer->min_bid) {
        v->host->log(v->host->ctx, EBB_LOG_INFO,
                     "bid %.6f USD/h is below machine %s's minimum %.6f",
                     (double)bid / 1e6, offer->machine, (double)offer->min_bid / 1e6);
        return EBB_ENOCAPACITY;
    }
    snprintf(o->want.zone, sizeof(o->want.zone), "%s", offer->machine);
    /* The CA (PEM) rides in the environment; onstart writes it to a file
     * for --ebbd-ca. */
    struct ebb_buf onstart = {0};
    if (o->agent_ca != NULL)
        ebb_buf_puts(&onstart, "umask 077; mkdir -p /run/ebb; printf '%s' \"$EBB_EBBD_CA\" "
                               "> /run/ebb/ebbd-ca.pem; ");
    ebb_buf_printf(&onstart, "%s --ebbd ", v->cfg->agent_command);
    ebb_buf_sh_quote(&onstart, o->agent_url);
    if (o->agent_ca != NULL) {
        ebb_buf_puts(&onstart, " --ebbd-ca /run/ebb/ebbd-ca.pem");
    } else if (o->agent_pin != NULL) {
        ebb_buf_puts(&onstart, " --ebbd-pin ");
        ebb_buf_sh_quote(&onstart, o->agent_pin);
    }
    ebb_buf_puts(&onstart, " --metadata-kind none");
    char *label = ebb_strfmt(VAST_LABEL_PREFIX "%s:%s", o->want.job_id, o->want.token);
    json_t *body = onstart.failed || label == NULL
                       ? NULL
                       : json_pack("{s:s, s:s, s:f, s:s, s:s, s:s, s:{s:s}}",
                                   "client_id", "me", "image", v->cfg->image,
                                   "disk", v->cfg->disk_gb, "label", label,
                                   "runtype", "ssh_direct", "onstart", onstart.data,
                                   "env", "EBB_AGENT_TOKEN", o->agent_token);
    if (body != NULL && o->agent_ca != NULL)
        json_object_set_new(json_object_get(body, "env"), "EBB_EBBD_CA",
                            json_string(o->agent_ca));
    /* A price makes the rent a bid: an interruptible instance. */
    if (body != NULL && o->want.market == EBB_MARKET_SPOT)
        json_object_set_new(body, "price", json_real((double)bid / 1e6));
    char path[64];
    snprintf(path, sizeof(path), "/api/v0/asks/%lld/", offer->ask_id);
    o->attempts++;
    o->call = body ? vast_api(v, "PUT", path, body, 1, on_rented, o) : NULL;
    json_decref(body);
    free(label);
    ebb_buf_free(&onstart);
    return o->call != NULL ? 0 : EBB_ENOMEM;
}

static void on_checked(void *arg, int status, json_t *body)
{
    struct inst_op *o = arg;
    o->call = NULL;
    struct row *rows = NULL;
    size_t n = 0;
    if (status == 0)
        status = parse_list(body, &rows, &n);
    for (size_t i = 0; status == 0 && i < n; i++) {
        if (strcmp(rows[i].token, o->want.token) == 0) {
            /* Rented before: that one, as it is now. */
            struct row found = rows[i];
            found.market = o->want.market;
            o->want = found;
            free(rows);
            complete_launch(o, 0);
            return;
        }
    }
    free(rows);
    if (status == 0)
        status = rent(o);
    if (status != 0)
        complete_launch(o, status);
}

static void check_existing(struct inst_op *o)
{
    o->call = vast_list_instances(o->v, on_checked, o);
    if (o->call == NULL)
        complete_launch(o, EBB_ENOMEM);
}

int vast_launch(struct vast *v, const struct ebb_launch *req, ebb_launch_cb cb,
                void *arg)
{
    if (req->token == NULL || req->token[0] == '\0' || req->instance_type == NULL)
        return EBB_EINVAL;
    if (req->count > 1) {
        /* vast.ai rents single machines, with no placement between them:
         * a gang there is one machine with all the GPUs. */
        v->host->log(v->host->ctx, EBB_LOG_ERROR,
                     "cannot launch a gang of %u for job %s: vast.ai rents single "
                     "machines, not groups placed together; ask for one machine "
                     "with all the GPUs instead (nodes: 1 and resources.gpu.count "
                     "N x the GPUs per node)",
                     req->count, req->job_id ? req->job_id : "");
        return EBB_EINVAL;
    }
    if (v->cfg->image[0] == '\0') {
        v->host->log(v->host->ctx, EBB_LOG_ERROR,
                     "cannot launch: set image (a container image with ebb-agent)");
        return EBB_ECONFIG;
    }
    struct inst_op *o = op_new(v, LAUNCH, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    o->cb.launch = cb;
    struct row *w = &o->want;
    int fits = snprintf(w->token, sizeof(w->token), "%s", req->token) <
                   (int)sizeof(w->token) &&
               snprintf(w->job_id, sizeof(w->job_id), "%s",
                        req->job_id ? req->job_id : "") < (int)sizeof(w->job_id);
    snprintf(w->region, sizeof(w->region), "%s", req->region ? req->region : "");
    snprintf(w->zone, sizeof(w->zone), "%s", req->zone ? req->zone : "");
    snprintf(w->type, sizeof(w->type), "%s", req->instance_type);
    w->market = req->market;
    w->state = EBB_INSTANCE_PENDING;
    w->launched_at = vast_now(v);
    o->max_price = req->max_price_per_hour;
    o->agent_url = strdup(req->agent_url ? req->agent_url : "");
    o->agent_token = strdup(req->agent_token ? req->agent_token : "");
    const char *pin = EBB_HAS(struct ebb_launch, req, agent_tls_pin) ? req->agent_tls_pin : NULL;
    const char *ca = EBB_HAS(struct ebb_launch, req, agent_tls_ca) ? req->agent_tls_ca : NULL;
    o->agent_pin = pin != NULL ? strdup(pin) : NULL;
    o->agent_ca = ca != NULL ? strdup(ca) : NULL;
    if ((pin != NULL && o->agent_pin == NULL) || (ca != NULL && o->agent_ca == NULL)) {
        op_free(o);
        return EBB_ENOMEM;
    }
    if (!fits || strchr(w->job_id, ':') != NULL) {
        op_free(o);
        return EBB_EINVAL;
    }
    if (o->agent_url != NULL && o->agent_token != NULL)
        o->call = vast_list_instances(v, on_checked, o);
    if (o->call == NULL) {
        op_free(o);
        return EBB_ENOMEM;
    }
    return 0;
}
