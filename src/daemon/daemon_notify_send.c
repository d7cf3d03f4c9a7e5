/* Delivering the outbox (daemon_notify.h; docs/notify.md).
 *
 * At least once: a row leaves the outbox only when its channel took it
 * (a 2xx answer, a command's exit 0), so a SIGKILL between the commit and
 * the answer sends it again at the next start, with the same id. The
 * sender reads only committed rows: every scan flushes the store's group
 * first, so nothing is sent for a change that could still be lost.
 *
 * Bounded: at most EBB__NOTIFY_CONCURRENCY deliveries at once, each held
 * to its channel's timeout (an HTTP attempt by libcurl, a command by a
 * timer that kills it); a failure waits ebb_backoff_after(channel backoff,
 * 10 minutes, attempts) and after max_attempts the row is a dead letter
 * (`ebb notifications --failed`). Nothing here blocks the loop: a
 * receiver that hangs holds one slot until its timeout.
 *
 * Deliveries run on libuv timers in wall-clock time, not on ebb's clock:
 * their receivers live in real time even when the clock is accelerated. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include <ebb/backoff.h>
#include <ebb/runas.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/daemon_notify.h"
#include "io/http_client.h"
#include "io/webhook_sign.h"
#include "store/store_outbox.h"

_Static_assert(EBB__NOTIFY_CONCURRENCY <= EBB__OUTBOX_SKIP_MAX,
               "the rows in flight must fit ebb__store_outbox_next_due's skip");

/* A scan after a store failure waits this long before it tries again. */
#define RETRY_SCAN_MS 1000

struct slot {
    struct ebb__daemon_notify *n;
    int busy;
    int64_t seq;
    int attempts;            /* before this one */
    char event_id[40];
    char channel[72];
    char type[40];
    char *body;
    const struct ebb__notify_channel *ch;
    /* A command's run: the process, the pipe to its stdin, the timer that
     * bounds it; the delivery ends once all three are closed. */
    uv_process_t proc;
    uv_pipe_t in;
    uv_timer_t limit;
    uv_write_t wr;
    int open_handles;
    int64_t exit_status;
    int term_signal;
    int timed_out;
    char error[200];
};

struct ebb__daemon_notify {
    struct ebb__daemon *d;
    uv_timer_t tick;
    int stopping;
    int refs;                /* the tick timer and each busy slot */
    unsigned finished;       /* deliveries ended since the last prune */
    struct slot slots[EBB__NOTIFY_CONCURRENCY];
};

static void unref(struct ebb__daemon_notify *n)
{
    if (--n->refs > 0)
        return;
    n->d->notify = NULL;
    free(n);
}

static void rearm(struct ebb__daemon_notify *n);

/* ---- the end of one delivery ------------------------------------------- */

static void finish(struct slot *s, int ok, const char *error)
{
    struct ebb__daemon_notify *n = s->n;
    struct ebb__daemon *d = n->d;
    if (!n->stopping) {
        int attempts = s->attempts + 1;
        ebb_time_ms now = ebb__daemon_wall_ms();
        int rc;
        if (ok) {
            rc = ebb__store_outbox_delivered(d->store, s->seq, attempts, now);
            ebb__debug("notify: %s %s delivered to %s (attempt %d)", s->type,
                       s->event_id, s->channel, attempts);
        } else {
            int dead = s->ch == NULL || attempts >= s->ch->max_attempts;
            ebb_dur_ms wait = s->ch == NULL ? 0
                              : ebb_backoff_after(s->ch->backoff,
                                                  EBB__NOTIFY_BACKOFF_CAP_MS,
                                                  (unsigned)attempts);
            rc = ebb__store_outbox_failed(d->store, s->seq, attempts, error,
                                          now + wait, dead, now);
            if (dead)
                ebb__warn("notify: %s %s to %s is a dead letter after %d "
                          "attempts: %s (ebb notifications --failed)", s->type,
                          s->event_id, s->channel, attempts, error);
            else
                ebb__info("notify: %s %s to %s failed (attempt %d of %d): %s; "
                          "again in %lld ms", s->type, s->event_id, s->channel,
                          attempts, s->ch->max_attempts, error, (long long)wait);
        }
        if (rc != 0)
            ebb__error("notify: cannot record the delivery of %s: %s",
                       s->event_id, ebb__store_errmsg(d->store));
        if (++n->finished >= 500) {
            n->finished = 0;
            if (ebb__store_outbox_prune(d->store, EBB__NOTIFY_KEEP_DONE) < 0)
                ebb__error("notify: cannot prune the outbox: %s",
                           ebb__store_errmsg(d->store));
        }
    }
    free(s->body);
    s->body = NULL;
    s->busy = 0;
    if (!n->stopping)
        rearm(n);
    unref(n);
}

/* ---- webhook and Slack ------------------------------------------------- */

static void on_http(const struct ebb_http_response *res, void *arg)
{
    struct slot *s = arg;
    char why[200];
    int ok = res->error == 0 && res->status >= 200 && res->status < 300;
    if (res->error != 0)
        snprintf(why, sizeof(why), "%s", res->error_message[0]
                                             ? res->error_message
                                             : ebb_strerror(res->error));
    else
        snprintf(why, sizeof(why), "the receiver answered HTTP %d", res->status);
    finish(s, ok, why);
}

static int post(struct slot *s)
{
    const struct ebb__notify_channel *ch = s->ch;
    char h_id[64], h_ts[48], h_sig[32 + EBB__WEBHOOK_SIG_SIZE];
    const char *headers[5] = {"Content-Type: application/json", h_id, h_ts, h_sig,
                              NULL};
    size_t n_headers = 2;
    char *slack = NULL;
    const char *body = s->body;
    snprintf(h_id, sizeof(h_id), "Ebb-Event-Id: %s", s->event_id);
    if (ch->kind == EBB__NOTIFY_WEBHOOK) {
        int64_t ts = ebb__daemon_wall_ms() / 1000;
        char sig[EBB__WEBHOOK_SIG_SIZE];
        int rc = ebb__webhook_signature(ch->secret, ch->secret_len, ts, body,
                                        strlen(body), sig);
        if (rc != 0)
            return rc;
        snprintf(h_ts, sizeof(h_ts), "Ebb-Timestamp: %lld", (long long)ts);
        snprintf(h_sig, sizeof(h_sig), "Ebb-Signature: %s", sig);
        n_headers = 4;
    } else {
        /* Slack's incoming webhooks take {"text": ...}. */
        char *text = ebb__notify_slack_text(body);
        json_t *o = text != NULL ? json_pack("{s:s}", "text", text) : NULL;
        slack = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        free(text);
        if (slack == NULL)
            return EBB_ENOMEM;
        body = slack;
    }
    struct ebb_http_request req = {
        .struct_size = sizeof(req),
        .method = "POST",
        .url = ch->url,
        .headers = headers,
        .n_headers = n_headers,
        .body = body,
        .body_len = strlen(body),
        .timeout = ch->timeout,
        .max_attempts = 1, /* retries are the outbox's, durable */
    };
    int rc = ebb__http_request(s->n->d->http, &req, on_http, s);
    free(slack);
    return rc;
}

/* ---- command ----------------------------------------------------------- */

static void on_cmd_closed(uv_handle_t *h)
{
    struct slot *s = h->data;
    if (--s->open_handles > 0)
        return;
    int ok = !s->timed_out && s->term_signal == 0 && s->exit_status == 0 &&
             s->error[0] == '\0';
    if (s->error[0] == '\0') {
        if (s->timed_out)
            snprintf(s->error, sizeof(s->error), "killed after its timeout of "
                     "%lld ms", (long long)s->ch->timeout);
        else if (s->term_signal != 0)
            snprintf(s->error, sizeof(s->error), "killed by signal %d",
                     s->term_signal);
        else if (s->exit_status != 0)
            snprintf(s->error, sizeof(s->error), "exited with status %lld",
                     (long long)s->exit_status);
    }
    finish(s, ok, s->error);
}

static void close_cmd(struct slot *s, uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, on_cmd_closed);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int term_signal)
{
    struct slot *s = p->data;
    s->exit_status = status;
    s->term_signal = term_signal;
    uv_timer_stop(&s->limit);
    close_cmd(s, (uv_handle_t *)&s->limit);
    close_cmd(s, (uv_handle_t *)&s->in);
    close_cmd(s, (uv_handle_t *)&s->proc);
}

static void on_limit(uv_timer_t *t)
{
    struct slot *s = t->data;
    s->timed_out = 1;
    uv_process_kill(&s->proc, SIGKILL);
}

static void on_written(uv_write_t *w, int status)
{
    struct slot *s = w->data;
    /* A command that does not read its stdin is its own business; the
     * exit status decides. Closing the pipe gives it end of file. */
    (void)status;
    close_cmd(s, (uv_handle_t *)&s->in);
}

/* Who a command runs as: ebbd's own user, or when ebbd is root the
 * channel's run_as (default nobody), never root. */
static int command_user(const struct ebb__notify_channel *ch, uv_process_options_t *o,
                        char *why, size_t len)
{
    if (geteuid() != 0)
        return 0;
    const char *name = ch->run_as != NULL ? ch->run_as : "nobody";
    int64_t uid = -1;
    struct ebb_runas r;
    if (ebb_runas_lookup(name, &uid) != 0) {
        snprintf(why, len, "no user %s to run the command as (notify.%s.run_as)",
                 name, ch->name);
        return EBB_ENOTFOUND;
    }
    int rc = ebb_runas_prepare(uid, &r, why, len);
    if (rc != 0)
        return rc;
    if (r.uid == 0) {
        snprintf(why, len, "%s is root; a notification command never runs as "
                 "root", name);
        return EBB_EPERM;
    }
    o->flags |= UV_PROCESS_SETUID | UV_PROCESS_SETGID;
    o->uid = r.uid;
    o->gid = r.gid;
    return 0;
}

static int run_command(struct slot *s)
{
    const struct ebb__notify_channel *ch = s->ch;
    uv_loop_t *loop = &s->n->d->loop;
    char **args = calloc(ch->argc + 1, sizeof(*args));
    if (args == NULL)
        return EBB_ENOMEM;
    memcpy(args, ch->argv, ch->argc * sizeof(*args));
    char env_id[64], env_type[64];
    snprintf(env_id, sizeof(env_id), "EBB_EVENT_ID=%s", s->event_id);
    snprintf(env_type, sizeof(env_type), "EBB_EVENT_TYPE=%s", s->type);
    char *env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", env_id, env_type, NULL};
    uv_stdio_container_t io[3] = {
        {.flags = UV_CREATE_PIPE | UV_READABLE_PIPE,
         .data.stream = (uv_stream_t *)&s->in},
        {.flags = UV_IGNORE},
        {.flags = UV_INHERIT_FD, .data.fd = 2},
    };
    uv_process_options_t o = {
        .exit_cb = on_exit_cb, .file = args[0], .args = args, .env = env,
        .cwd = "/", .stdio_count = 3, .stdio = io,
    };
    s->error[0] = '\0';
    s->timed_out = 0;
    s->exit_status = 0;
    s->term_signal = 0;
    char why[200];
    int rc = command_user(ch, &o, why, sizeof(why));
    if (rc != 0) {
        free(args);
        ebb__warn("notify: channel %s: %s", ch->name, why);
        snprintf(s->error, sizeof(s->error), "%s", why);
        return rc;
    }
    uv_pipe_init(loop, &s->in, 0);
    uv_timer_init(loop, &s->limit);
    s->in.data = s->limit.data = s->proc.data = s->wr.data = s;
    s->open_handles = 3;
    int uvr = uv_spawn(loop, &s->proc, &o);
    free(args);
    if (uvr != 0) {
        /* The handles exist either way; the delivery ends when they close. */
        snprintf(s->error, sizeof(s->error), "cannot start %s: %s", ch->argv[0],
                 uv_strerror(uvr));
        close_cmd(s, (uv_handle_t *)&s->limit);
        close_cmd(s, (uv_handle_t *)&s->in);
        close_cmd(s, (uv_handle_t *)&s->proc);
        return 0;
    }
    uv_timer_start(&s->limit, on_limit, (uint64_t)ch->timeout, 0);
    uv_buf_t buf = uv_buf_init(s->body, (unsigned)strlen(s->body));
    if (uv_write(&s->wr, (uv_stream_t *)&s->in, &buf, 1, on_written) != 0)
        close_cmd(s, (uv_handle_t *)&s->in);
    return 0;
}

/* ---- scanning the outbox ----------------------------------------------- */

static void start_slot(struct slot *s)
{
    struct ebb__daemon_notify *n = s->n;
    s->ch = ebb__config_channel(n->d->config, s->channel);
    int rc;
    if (s->ch == NULL) {
        snprintf(s->error, sizeof(s->error), "channel %s is no longer in "
                 "ebb.yaml (notify:)", s->channel);
        rc = EBB_ENOTFOUND;
    } else if (s->ch->kind == EBB__NOTIFY_COMMAND) {
        rc = run_command(s);
    } else {
        rc = post(s);
        if (rc != 0)
            snprintf(s->error, sizeof(s->error), "cannot send: %s",
                     ebb_strerror(rc));
    }
    if (rc != 0)
        finish(s, 0, s->error);
}

struct pick {
    struct ebb__daemon_notify *n;
    struct slot *picked[EBB__NOTIFY_CONCURRENCY];
    size_t n_picked;
};

/* Copies a due row into a free slot; the slots start after the scan, so
 * that no write runs while the scan's statement is stepping. */
static int pick_row(void *arg, const struct ebb__outbox_row *row)
{
    struct pick *p = arg;
    struct slot *s = NULL;
    for (size_t i = 0; i < EBB__NOTIFY_CONCURRENCY && s == NULL; i++)
        if (!p->n->slots[i].busy)
            s = &p->n->slots[i];
    if (s == NULL)
        return 1;
    s->body = strdup(row->body);
    if (s->body == NULL)
        return EBB_ENOMEM;
    s->busy = 1;
    s->seq = row->seq;
    s->attempts = row->attempts;
    snprintf(s->event_id, sizeof(s->event_id), "%s", row->event_id);
    snprintf(s->channel, sizeof(s->channel), "%s", row->channel);
    snprintf(s->type, sizeof(s->type), "%s", row->type);
    p->picked[p->n_picked++] = s;
    p->n->refs++;
    return 0;
}

static size_t in_flight(const struct ebb__daemon_notify *n, int64_t *seqs)
{
    size_t k = 0;
    for (size_t i = 0; i < EBB__NOTIFY_CONCURRENCY; i++)
        if (n->slots[i].busy)
            seqs[k++] = n->slots[i].seq;
    return k;
}

static void on_tick(uv_timer_t *t)
{
    struct ebb__daemon_notify *n = t->data;
    struct ebb__daemon *d = n->d;
    if (n->stopping)
        return;
    /* Only committed rows go out. */
    if (ebb__store_flush(d->store) != 0) {
        ebb__error("notify: cannot commit before delivering: %s",
                   ebb__store_errmsg(d->store));
        uv_timer_start(&n->tick, on_tick, RETRY_SCAN_MS, 0);
        return;
    }
    int64_t busy[EBB__NOTIFY_CONCURRENCY];
    size_t n_busy = in_flight(n, busy);
    struct pick p = {.n = n};
    int rc = ebb__store_outbox_due(d->store, ebb__daemon_wall_ms(),
                                   EBB__NOTIFY_CONCURRENCY - n_busy, busy, n_busy,
                                   pick_row, &p);
    if (rc < 0)
        ebb__error("notify: cannot read the outbox: %s",
                   ebb__store_errmsg(d->store));
    for (size_t i = 0; i < p.n_picked; i++)
        start_slot(p.picked[i]);
    if (rc < 0)
        uv_timer_start(&n->tick, on_tick, RETRY_SCAN_MS, 0);
    else
        rearm(n);
}

/* Arms the scan for the earliest row not in flight, while a slot is free. */
static void rearm(struct ebb__daemon_notify *n)
{
    int64_t busy[EBB__NOTIFY_CONCURRENCY];
    size_t n_busy = in_flight(n, busy);
    if (n_busy == EBB__NOTIFY_CONCURRENCY) {
        uv_timer_stop(&n->tick); /* a slot's end arms it again */
        return;
    }
    ebb_time_ms at = 0;
    if (ebb__store_outbox_next_due(n->d->store, busy, n_busy, &at) != 0) {
        uv_timer_start(&n->tick, on_tick, RETRY_SCAN_MS, 0);
        return;
    }
    if (at == 0) {
        uv_timer_stop(&n->tick); /* a new event kicks it */
        return;
    }
    ebb_time_ms now = ebb__daemon_wall_ms();
    uv_timer_start(&n->tick, on_tick, at > now ? (uint64_t)(at - now) : 0, 0);
}

/* ---- start, kick, stop ------------------------------------------------- */

int ebb__daemon_notify_start(struct ebb__daemon *d)
{
    struct ebb__daemon_notify *n = calloc(1, sizeof(*n));
    if (n == NULL) {
        ebb__error("out of memory starting notifications");
        return 1;
    }
    n->d = d;
    n->refs = 1;
    for (size_t i = 0; i < EBB__NOTIFY_CONCURRENCY; i++)
        n->slots[i].n = n;
    uv_timer_init(&d->loop, &n->tick);
    n->tick.data = n;
    d->notify = n;
    if (ebb__store_outbox_prune(d->store, EBB__NOTIFY_KEEP_DONE) < 0)
        ebb__error("notify: cannot prune the outbox: %s",
                   ebb__store_errmsg(d->store));
    /* Rows left pending by the previous run go out now. */
    uv_timer_start(&n->tick, on_tick, 0, 0);
    return 0;
}

void ebb__daemon_notify_kick(struct ebb__daemon *d)
{
    struct ebb__daemon_notify *n = d->notify;
    if (n == NULL || n->stopping)
        return;
    uv_timer_start(&n->tick, on_tick, 0, 0);
}

static void on_tick_closed(uv_handle_t *h)
{
    unref(h->data);
}

void ebb__daemon_notify_stop(struct ebb__daemon *d)
{
    struct ebb__daemon_notify *n = d->notify;
    if (n == NULL || n->stopping)
        return;
    n->stopping = 1;
    for (size_t i = 0; i < EBB__NOTIFY_CONCURRENCY; i++) {
        struct slot *s = &n->slots[i];
        if (s->busy && s->ch != NULL && s->ch->kind == EBB__NOTIFY_COMMAND &&
            s->open_handles > 0 && !uv_is_closing((uv_handle_t *)&s->proc))
            uv_process_kill(&s->proc, SIGKILL);
    }
    uv_close((uv_handle_t *)&n->tick, on_tick_closed);
}
