/* Learned speed (docs/policies.md "Learned speed"): what a job family
 * really does on each host, from its agents' progress reports, in place
 * of the catalog's speed wherever the engine plans: the offers policies
 * see, budgets' worst cases, deadlines at risk, and the work a running
 * job is taken to have done since its latest report.
 *
 * An estimate is kept per (family, GPU model, provider, host): the
 * family is the job's name (jobs submitted again under one name are the
 * same work), the GPU model the catalog's for the offer, the host the
 * offer's instance type in its zone (its region for on-demand); for a
 * marketplace the instance type is the machine. Each is persisted
 * (store_speeds.h) as it changes and read back at start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "engine/internal.h"
#include "store/store_speeds.h"

struct ebb__speed_entry {
    char *family, *gpu_model, *provider, *host;
    struct ebb__speed_samples s;
};

/* What an estimate on market offer `o` for `family` is keyed by; host
 * into buf. */
static struct ebb__speed_key key_of(const char *family, const struct ebb__offer *o,
                                    char *buf, size_t len)
{
    snprintf(buf, len, "%s@%s", o->instance_type, o->zone[0] ? o->zone : o->region);
    return (struct ebb__speed_key){
        .family = family,
        .gpu_model = o->catalog != NULL && o->catalog->gpu_model != NULL
                         ? o->catalog->gpu_model
                         : "",
        .provider = o->provider,
        .host = buf,
    };
}

static const char *family_of(const struct ebb__job *job)
{
    return job->spec.name != NULL ? job->spec.name : "";
}

static uint64_t mix(uint64_t h, const char *s)
{
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (h ^ 0x1f) * 1099511628211ULL; /* a separator between parts */
}

static uint64_t key_hash(const struct ebb__speed_key *k)
{
    uint64_t h = 1469598103934665603ULL;
    return mix(mix(mix(mix(h, k->family), k->gpu_model), k->provider), k->host);
}

static int key_is(const struct ebb__speed_entry *x, const struct ebb__speed_key *k)
{
    return strcmp(x->host, k->host) == 0 && strcmp(x->family, k->family) == 0 &&
           strcmp(x->provider, k->provider) == 0 &&
           strcmp(x->gpu_model, k->gpu_model) == 0;
}

/* The slot for `k`: its entry's, or the empty one it would go in. */
static size_t slot_of(const struct ebb__engine *e, const struct ebb__speed_key *k)
{
    size_t mask = e->speeds_cap - 1, i = (size_t)key_hash(k) & mask;
    while (e->speeds[i] != NULL && !key_is(e->speeds[i], k))
        i = (i + 1) & mask;
    return i;
}

static struct ebb__speed_entry *find(const struct ebb__engine *e,
                                     const struct ebb__speed_key *k)
{
    return e->n_speeds == 0 ? NULL : e->speeds[slot_of(e, k)];
}

/* Room for one more entry: the table stays at most half full. */
static int grow(struct ebb__engine *e)
{
    if (2 * (e->n_speeds + 1) <= e->speeds_cap)
        return 0;
    size_t cap = e->speeds_cap ? 2 * e->speeds_cap : 64;
    struct ebb__speed_entry **old = e->speeds;
    size_t old_cap = e->speeds_cap;
    e->speeds = calloc(cap, sizeof(*e->speeds));
    if (e->speeds == NULL) {
        e->speeds = old;
        return EBB_ENOMEM;
    }
    e->speeds_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i] != NULL) {
            struct ebb__speed_key k = {old[i]->family, old[i]->gpu_model,
                                       old[i]->provider, old[i]->host};
            e->speeds[slot_of(e, &k)] = old[i];
        }
    free(old);
    return 0;
}

static void entry_free(struct ebb__speed_entry *x)
{
    if (x == NULL)
        return;
    free(x->family);
    free(x->gpu_model);
    free(x->provider);
    free(x->host);
    free(x);
}

/* The entry for `k`, added empty when there is none; NULL: no memory. */
static struct ebb__speed_entry *get(struct ebb__engine *e, const struct ebb__speed_key *k)
{
    struct ebb__speed_entry *x = find(e, k);
    if (x != NULL)
        return x;
    if (grow(e) != 0 || (x = calloc(1, sizeof(*x))) == NULL)
        return NULL;
    x->family = strdup(k->family);
    x->gpu_model = strdup(k->gpu_model);
    x->provider = strdup(k->provider);
    x->host = strdup(k->host);
    if (x->family == NULL || x->gpu_model == NULL || x->provider == NULL ||
        x->host == NULL) {
        entry_free(x);
        return NULL;
    }
    e->speeds[slot_of(e, k)] = x;
    e->n_speeds++;
    return x;
}

double ebb__engine_speed(const struct ebb__job *job, size_t offer, long long *samples)
{
    const struct ebb__engine *e = job->engine;
    const struct ebb__offer *o = &e->market.offers[offer];
    if (samples != NULL)
        *samples = 0;
    if (e->n_speeds == 0)
        return o->speed;
    char host[256];
    struct ebb__speed_key k = key_of(family_of(job), o, host, sizeof(host));
    const struct ebb__speed_entry *x = find(e, &k);
    if (x == NULL || x->s.total == 0)
        return o->speed;
    if (samples != NULL)
        *samples = x->s.total;
    return ebb__speed_estimate(&x->s, o->speed > 0 ? o->speed : 1);
}

double ebb__engine_offer_speed(const struct ebb__engine *e, size_t offer,
                               long long *samples)
{
    const struct ebb__offer *o = &e->market.offers[offer];
    char host[256];
    struct ebb__speed_key k = key_of("", o, host, sizeof(host));
    struct ebb__speed_samples pooled = {0};
    long long total = 0;
    for (size_t i = 0; i < e->speeds_cap; i++) {
        const struct ebb__speed_entry *x = e->speeds[i];
        if (x == NULL || strcmp(x->host, k.host) != 0 ||
            strcmp(x->provider, k.provider) != 0 ||
            strcmp(x->gpu_model, k.gpu_model) != 0)
            continue;
        size_t first = x->s.n_kept < EBB__SPEED_WINDOW ? 0 : x->s.next;
        for (size_t j = 0; j < x->s.n_kept; j++)
            ebb__speed_add(&pooled, x->s.rate[(first + j) % EBB__SPEED_WINDOW]);
        total += x->s.total;
    }
    pooled.total = total;
    *samples = total;
    return ebb__speed_estimate(&pooled, o->speed > 0 ? o->speed : 1);
}

void ebb__engine_speed_progress(struct ebb__job *job, ebb_dur_ms done, ebb_time_ms now)
{
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    /* Only while the job works: not in its restart overhead, not while
     * it checkpoints or stops (ebb__engine_speed_pause). */
    ebb_time_ms productive = a->running_at + job->spec.restart_overhead;
    int working = a->running_at != 0 && now >= productive && !a->stop_sent &&
                  !a->notice;
    ebb_time_ms from = a->rate_at;
    ebb_dur_ms from_work = a->rate_work;
    a->rate_at = working ? now : 0;
    a->rate_work = done;
    if (!working || from == 0 || from < productive || now <= from || done < from_work)
        return;
    double rate = (double)(done - from_work) / (double)(now - from);
    char host[256];
    struct ebb__speed_key k = key_of(family_of(job), &e->market.offers[a->offer], host,
                                     sizeof(host));
    struct ebb__speed_entry *x = get(e, &k);
    if (x == NULL || !ebb__speed_add(&x->s, rate))
        return;
    char text[EBB__SPEED_TEXT_SIZE];
    ebb__speed_format(&x->s, text, sizeof(text));
    if (ebb__store_speed_put(e->opt.store, &k, x->s.total, text, now) != 0)
        ebb__warn("job %s: cannot record its speed on %s: %s", job->id, host,
                  ebb__store_errmsg(e->opt.store));
    e->market.version++; /* the views' speeds changed */
}

void ebb__engine_speed_pause(struct ebb__attempt *a)
{
    a->rate_at = 0;
}

int ebb__engine_speed_learned(struct ebb__engine *e, const struct ebb__speed_key *k,
                              long long samples, const char *rates)
{
    struct ebb__speed_samples s;
    if (ebb__speed_parse(rates, samples, &s) != 0)
        return EBB_EINVAL;
    struct ebb__speed_entry *x = get(e, k);
    if (x == NULL)
        return EBB_ENOMEM;
    x->s = s;
    e->market.version++; /* the views' speeds changed */
    return 0;
}

int ebb__engine_speeds_of(const struct ebb__engine *e, const char *family,
                          ebb__speed_row_cb cb, void *arg)
{
    for (size_t i = 0; i < e->speeds_cap; i++) {
        const struct ebb__speed_entry *x = e->speeds[i];
        if (x == NULL || x->s.total == 0 || strcmp(x->family, family) != 0)
            continue;
        char text[EBB__SPEED_TEXT_SIZE];
        ebb__speed_format(&x->s, text, sizeof(text));
        struct ebb__speed_key k = {x->family, x->gpu_model, x->provider, x->host};
        int rc = cb(arg, &k, x->s.total, text);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int load_row(void *arg, const struct ebb__speed_key *k, long long samples,
                    const char *rates)
{
    int rc = ebb__engine_speed_learned(arg, k, samples, rates);
    if (rc == EBB_EINVAL) {
        ebb__warn("learned speed of %s on %s %s: \"%s\" is not a list of rates; "
                  "ignored", k->family, k->provider, k->host, rates);
        return 0;
    }
    return rc;
}

int ebb__engine_speed_load(struct ebb__engine *e)
{
    return ebb__store_speed_each(e->opt.store, load_row, e);
}

void ebb__engine_speed_free(struct ebb__engine *e)
{
    for (size_t i = 0; i < e->speeds_cap; i++)
        entry_free(e->speeds[i]);
    free(e->speeds);
    e->speeds = NULL;
    e->speeds_cap = e->n_speeds = 0;
}
