/* Events into the outbox (daemon_notify.h): which channels an event goes
 * to, its stable id and its JSON, written in the caller's transaction.
 *
 * The event JSON is the one body every channel is built from: a webhook
 * POSTs it as it is, Slack gets a sentence made from it, a command reads
 * it on stdin. It is written once, so every retry and every channel
 * carries the same id and the same words. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <ebb/units.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/daemon_notify.h"
#include "store/store_outbox.h"
#include "store/store_read.h"

ebb_time_ms ebb__daemon_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (ebb_time_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "evt_" and 32 hex digits: random for an event that happens whenever it
 * happens, the hash of its key for one that happens once (so that writing
 * it again, after a restart, finds the row already there). */
static int event_id(const char *key, char out[40])
{
    unsigned char raw[SHA256_DIGEST_LENGTH];
    if (key != NULL)
        SHA256((const unsigned char *)key, strlen(key), raw);
    else if (RAND_bytes(raw, 16) != 1)
        return EBB_EIO;
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "evt_", 4);
    for (int i = 0; i < 16; i++) {
        out[4 + 2 * i] = hex[raw[i] >> 4];
        out[5 + 2 * i] = hex[raw[i] & 15];
    }
    out[36] = '\0';
    return 0;
}

/* An amount as a plain decimal string with at least two decimals
 * ("12.50", "0.000125"): exact, unlike a JSON number. */
static void decimal(ebb_micros v, char *buf, size_t len)
{
    int neg = v < 0;
    uint64_t a = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char frac[8];
    snprintf(frac, sizeof(frac), "%06llu", (unsigned long long)(a % 1000000));
    size_t keep = 6;
    while (keep > 2 && frac[keep - 1] == '0')
        keep--;
    frac[keep] = '\0';
    snprintf(buf, len, "%s%llu.%s", neg ? "-" : "",
             (unsigned long long)(a / 1000000), frac);
}

static json_t *str_or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? json_string(s) : json_null();
}

/* The event JSON: {"id", "type", "time", "job_id", "team", "state",
 * "reason", "spent", "currency"}. NULL when out of memory or when a
 * string is not UTF-8. */
static char *event_body(const char *id, const struct ebb__engine_note *n)
{
    char when[40], spent[48];
    ebb_format_time(n->at, when, sizeof(when));
    decimal(n->spent, spent, sizeof(spent));
    int money = n->currency != NULL && n->currency[0] != '\0';
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    int bad = json_object_set_new(o, "id", json_string(id));
    bad |= json_object_set_new(o, "type", json_string(n->type));
    bad |= json_object_set_new(o, "time", json_string(when));
    bad |= json_object_set_new(o, "job_id", str_or_null(n->job_id));
    const char *team = n->team != NULL ? n->team : n->spec ? n->spec->team : NULL;
    bad |= json_object_set_new(o, "team", str_or_null(team));
    bad |= json_object_set_new(o, "state", str_or_null(n->state));
    bad |= json_object_set_new(o, "reason", str_or_null(n->reason));
    bad |= json_object_set_new(o, "spent", money ? json_string(spent) : json_null());
    bad |= json_object_set_new(o, "currency", str_or_null(n->currency));
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

/* The job's channels that ebb.yaml still has (a channel removed since its
 * submit is skipped, with a warning), into names[] (at most `max`). */
static size_t channels_of(const struct ebb__daemon *d,
                          const struct ebb__engine_note *n,
                          const char **names, size_t max)
{
    const struct ebb__config *cfg = d->config;
    const struct ebb_string_list *l =
        n->spec != NULL && n->spec->has_notify ? &n->spec->notify
                                                : &cfg->notify.defaults;
    size_t k = 0;
    for (size_t i = 0; i < l->n && k < max; i++) {
        if (ebb__config_channel(cfg, l->items[i]) == NULL) {
            ebb__warn("job %s: notify channel %s is no longer in ebb.yaml; "
                      "its events skip it", n->job_id ? n->job_id : "-",
                      l->items[i]);
            continue;
        }
        names[k++] = l->items[i];
    }
    return k;
}

int ebb__daemon_notify_event(struct ebb__daemon *d,
                             const struct ebb__engine_note *n)
{
    const char *names[64];
    size_t k = channels_of(d, n, names, sizeof(names) / sizeof(names[0]));
    if (k == 0)
        return 0;
    char id[40];
    int rc = event_id(n->key, id);
    char *body = rc == 0 ? event_body(id, n) : NULL;
    if (body == NULL)
        return rc != 0 ? rc : EBB_ENOMEM;
    struct ebb__outbox_event ev = {
        .event_id = id, .type = n->type, .job_id = n->job_id,
        .created_at = ebb__daemon_wall_ms(), .body = body,
    };
    rc = ebb__store_outbox_add(d->store, &ev, names, k);
    free(body);
    if (rc > 0)
        ebb__daemon_notify_kick(d);
    return rc < 0 ? rc : 0;
}

void ebb__daemon_note(void *arg, const struct ebb__engine_note *n)
{
    struct ebb__daemon *d = arg;
    /* The engine's change is recorded whatever happens here: an event that
     * cannot be written is logged, not a reason to lose the state. */
    int rc = ebb__daemon_notify_event(d, n);
    if (rc != 0)
        ebb__error("job %s: cannot write its %s event to the outbox: %s",
                   n->job_id ? n->job_id : "-", n->type,
                   ebb__store_errmsg(d->store));
}

char *ebb__notify_slack_text(const char *body)
{
    json_t *o = json_loads(body, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return NULL;
    }
    const char *job = json_string_value(json_object_get(o, "job_id"));
    const char *team = json_string_value(json_object_get(o, "team"));
    const char *type = json_string_value(json_object_get(o, "type"));
    const char *state = json_string_value(json_object_get(o, "state"));
    const char *reason = json_string_value(json_object_get(o, "reason"));
    const char *spent = json_string_value(json_object_get(o, "spent"));
    const char *cur = json_string_value(json_object_get(o, "currency"));
    char what[96], team_s[96] = "", money[96] = "";
    if (type != NULL && strcmp(type, "job.state") == 0 && state != NULL)
        snprintf(what, sizeof(what), "is %s", state);
    else if (type != NULL && strcmp(type, "job.preempted") == 0)
        snprintf(what, sizeof(what), "was preempted");
    else if (type != NULL && strcmp(type, "job.stalled") == 0)
        snprintf(what, sizeof(what), "is being moved");
    else
        snprintf(what, sizeof(what), "%s", type != NULL ? type : "event");
    if (team != NULL)
        snprintf(team_s, sizeof(team_s), " (team %s)", team);
    if (spent != NULL && cur != NULL)
        snprintf(money, sizeof(money), " Spent so far: %s %s.", spent, cur);
    size_t len = 256 + strlen(reason != NULL ? reason : "") + strlen(job ? job : "");
    char *text = malloc(len);
    if (text != NULL)
        snprintf(text, len, "ebb: %s%s%s %s%s%s.%s", job != NULL ? "job " : "",
                 job != NULL ? job : "", team_s, what, reason != NULL ? ": " : "",
                 reason != NULL ? reason : "", money);
    json_decref(o);
    return text;
}

/* ebb notifications: the newest deliveries (with "failed": dead letters
 * only). An admin sees every row; anyone else only those of their own
 * jobs, since a row's reason describes its job. */
void ebb__api_notifications(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    int failed = json_is_true(json_object_get(call->params, "failed"));
    json_t *rows = NULL;
    if (ebb__store_outbox_json(d->store, failed, 1000, &rows) != 0) {
        ebb__api_fail(call, "internal", "cannot read the store: %s",
                      ebb__store_errmsg(d->store));
        return;
    }
    if (!ebb__daemon_is_admin(d, call->uid)) {
        json_t *mine = json_array();
        size_t i;
        json_t *row;
        json_array_foreach(rows, i, row) {
            const char *job = json_string_value(json_object_get(row, "job_id"));
            int64_t owner = -1;
            if (job != NULL && ebb__store_job_owner(d->store, job, &owner) == 0 &&
                owner == (int64_t)call->uid)
                json_array_append(mine, row);
        }
        json_decref(rows);
        rows = mine;
    }
    ebb__api_reply(call, json_pack("{s:o}", "notifications", rows));
}
