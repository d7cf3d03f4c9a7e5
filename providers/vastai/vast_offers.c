/* Offers: the search query built from the configuration, what the answer
 * becomes, and the poll that also looks for outbid instances.
 *
 * Prices are what an hour of the machine costs with the configured disk,
 * from the documented fields: on demand dph_base (the machine's rate) plus
 * storage_total_cost (the disk's $/h at allocated_storage), spot min_bid
 * plus the same storage. Not dph_total: in a bid search it is the minimum
 * bid plus storage, so on-demand would look as cheap as spot. Each price
 * carries the machine's shape.
 *
 * Every offer is priced "now": the marketplace has no history. An offer
 * seen in a poll is remembered by (machine, type) so a launch can rent it.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ebb/units.h>

#include "vastai.h"

json_t *vast_offers_query(const struct vast_cfg *cfg)
{
    json_t *names = json_array();
    for (size_t i = 0; i < cfg->gpu_names.n; i++)
        json_array_append_new(names, json_string(cfg->gpu_names.items[i]));
    /* external: false is the CLI's default too: external (non-vast)
     * marketplace offers cannot be rented this way. */
    json_t *q = json_pack("{s:{s:b}, s:{s:b}, s:{s:b}, s:{s:b}, s:{s:o}, s:{s:I},"
                          " s:{s:f}, s:s, s:[[s,s]], s:I, s:f}",
                          "verified", "eq", cfg->verified,
                          "external", "eq", 0,
                          "rentable", "eq", 1,
                          "rented", "eq", 0,
                          "gpu_name", "in", names,
                          "num_gpus", "eq", (json_int_t)cfg->gpu_count,
                          "reliability", "gte", cfg->min_reliability,
                          "type", cfg->interruptible ? "bid" : "on-demand",
                          "order", "dph_total", "asc",
                          "limit", (json_int_t)cfg->limit,
                          "allocated_storage", cfg->disk_gb);
    /* The search takes GPU memory in MB, as vast's own client sends it. */
    if (q != NULL && cfg->min_gpu_ram_gb > 0)
        json_object_set_new(q, "gpu_ram",
                            json_pack("{s:f}", "gte", cfg->min_gpu_ram_gb * 1000));
    return q;
}

/* Words of vast's GPU names that say nothing about the model: vendor and
 * brand, and the form factor (SXM or PCIe boards of one model train
 * alike here; memory size stays in the name). */
static int noise_word(const char *w, size_t n)
{
    static const char *const words[] = {"NVIDIA", "GeForce", "Tesla", "SXM",
                                        "SXM2", "SXM3", "SXM4", "SXM5", "PCIE"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strlen(words[i]) == n && strncasecmp(words[i], w, n) == 0)
            return 1;
    return 0;
}

void vast_gpu_model(const char *vast_name, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (const char *p = vast_name; *p != '\0';) {
        while (*p == ' ' || *p == '_' || *p == '-')
            p++;
        size_t n = strcspn(p, " _-");
        if (n > 0 && !noise_word(p, n)) {
            int w = snprintf(out + len, size - len, "%s%.*s", len ? "_" : "", (int)n, p);
            if (w < 0 || (size_t)w >= size - len)
                break;
            len += (size_t)w;
        }
        p += n;
    }
}

void vast_region(const char *geolocation, char *out, size_t size)
{
    const char *geo = geolocation ? geolocation : "";
    const char *comma = strrchr(geo, ',');
    const char *country = comma ? comma + 1 : geo;
    while (*country == ' ')
        country++;
    size_t n = strlen(country);
    while (n > 0 && country[n - 1] == ' ')
        n--;
    size_t i = 0;
    for (; i < n && i + 1 < size; i++)
        out[i] = (char)toupper((unsigned char)country[i]);
    if (size > 0)
        out[i] = '\0';
}

void vast_place(json_t *row, char *region, size_t rsize, char *zone, size_t zsize,
                char *type, size_t tsize)
{
    vast_region(json_string_value(json_object_get(row, "geolocation")), region, rsize);
    json_t *machine = json_object_get(row, "machine_id");
    snprintf(zone, zsize, "%lld",
             json_is_integer(machine) ? (long long)json_integer_value(machine) : 0LL);
    char model[48];
    const char *name = json_string_value(json_object_get(row, "gpu_name"));
    vast_gpu_model(name ? name : "", model, sizeof(model));
    snprintf(type, tsize, "%sx%lld", model,
             (long long)json_integer_value(json_object_get(row, "num_gpus")));
}

/* ---- the poll ---- */

struct vast_poll {
    struct ebb_op op;
    struct vast *v;
    ebb_prices_cb cb;
    void *arg;
    struct vast_call *call;
    json_t *offers; /* the answer's "offers" array, kept until delivery */
    int status;
};

/* One offer's strings and shape, alive until the callback returns. */
struct offer_view {
    char region[64], zone[24], type[48], model[32];
    struct ebb_shape shape;
};

/* A price in dollars, as micro-units; a negative one, or one over
 * EBB_MONEY_MAX (which would not even convert), is no price. */
static ebb_micros dollars(json_t *row, const char *key, int *ok)
{
    json_t *v = json_object_get(row, key);
    double usd = json_number_value(v);
    *ok = json_is_number(v) && usd >= 0 &&
          usd <= (double)(EBB_MONEY_MAX / EBB_MICROS_PER_UNIT);
    return *ok ? (ebb_micros)llround(usd * 1e6) : 0;
}

static void poll_finish(struct vast_poll *p, int status)
{
    struct vast *v = p->v;
    size_t n_offers = json_array_size(p->offers);
    struct offer_view *views = calloc(n_offers + 1, sizeof(*views));
    struct ebb_price *prices = calloc(2 * n_offers + 1, sizeof(*prices));
    struct vast_offer *memo = calloc(n_offers + 1, sizeof(*memo));
    size_t n = 0, n_memo = 0;
    if (views == NULL || prices == NULL || memo == NULL)
        status = EBB_ENOMEM;
    ebb_time_ms now = vast_now(v);
    for (size_t i = 0; status != EBB_ENOMEM && i < n_offers; i++) {
        json_t *o = json_array_get(p->offers, i);
        struct offer_view *w = &views[i];
        int ok_base, ok_bid, has_storage;
        ebb_micros base_rate = dollars(o, "dph_base", &ok_base);
        ebb_micros min_bid = dollars(o, "min_bid", &ok_bid);
        /* 0 when absent: a machine that charges nothing for disk. */
        ebb_micros storage = dollars(o, "storage_total_cost", &has_storage);
        json_t *ask = json_object_get(o, "id");
        if (!ok_base || !json_is_integer(ask) ||
            !json_is_integer(json_object_get(o, "machine_id")))
            continue;
        vast_place(o, w->region, sizeof(w->region), w->zone, sizeof(w->zone),
                   w->type, sizeof(w->type));
        const char *name = json_string_value(json_object_get(o, "gpu_name"));
        vast_gpu_model(name ? name : "", w->model, sizeof(w->model));
        json_t *cores = json_object_get(o, "cpu_cores_effective");
        if (!json_is_number(cores))
            cores = json_object_get(o, "cpu_cores");
        w->shape = (struct ebb_shape){
            .struct_size = sizeof(struct ebb_shape),
            .gpu_model = w->model,
            .gpu_count = (uint32_t)json_integer_value(json_object_get(o, "num_gpus")),
            .gpu_memory_gb = json_number_value(json_object_get(o, "gpu_ram")) / 1024,
            .vcpus = (uint32_t)json_number_value(cores),
            .memory_gb = json_number_value(json_object_get(o, "cpu_ram")) / 1024,
            .machine_id = w->zone,
        };
        struct ebb_price base = {
            .struct_size = sizeof(struct ebb_price),
            .region = w->region,
            .zone = w->zone,
            .instance_type = w->type,
            .product = "Linux/UNIX",
            .at = now,
            .currency = "USD",
            .capacity = 1,
            .shape = &w->shape,
        };
        prices[n] = base;
        prices[n].market = EBB_MARKET_ON_DEMAND;
        prices[n++].price_per_hour = base_rate + storage;
        if (v->cfg->interruptible && ok_bid) {
            prices[n] = base;
            prices[n].market = EBB_MARKET_SPOT;
            prices[n++].price_per_hour = min_bid + storage;
        }
        struct vast_offer *m = &memo[n_memo++];
        snprintf(m->machine, sizeof(m->machine), "%s", w->zone);
        snprintf(m->type, sizeof(m->type), "%s", w->type);
        m->ask_id = (long long)json_integer_value(ask);
        m->min_bid = ok_bid ? min_bid : base_rate;
    }
    if (status != EBB_ENOMEM && p->offers != NULL) {
        free(v->offers);
        v->offers = memo;
        v->n_offers = n_memo;
        memo = NULL;
    }
    ebb_op_remove(&p->op);
    p->cb(p->arg, status, status == EBB_ENOMEM ? NULL : prices,
          status == EBB_ENOMEM ? 0 : n);
    free(memo);
    free(prices);
    free(views);
    json_decref(p->offers);
    free(p);
}

static void on_instances(void *arg, int status, json_t *body)
{
    struct vast_poll *p = arg;
    p->call = NULL;
    if (status == 0)
        vast_report_lost(p->v, body);
    poll_finish(p, p->status);
}

static void on_offers(void *arg, int status, json_t *body)
{
    struct vast_poll *p = arg;
    struct vast *v = p->v;
    p->call = NULL;
    json_t *offers = json_object_get(body, "offers");
    if (status == 0 && !json_is_array(offers))
        status = EBB_EPROTO;
    if (status != 0) {
        poll_finish(p, status);
        return;
    }
    p->offers = json_incref(offers);
    /* The same poll looks for outbid instances: vast.ai gives no notice. */
    p->call = vast_list_instances(v, on_instances, p);
    if (p->call == NULL)
        poll_finish(p, 0);
}

static void poll_cancel(struct ebb_op *op)
{
    struct vast_poll *p = (struct vast_poll *)op;
    if (p->call != NULL)
        vast_api_cancel(p->call);
    ebb_op_remove(op);
    p->cb(p->arg, EBB_ECANCELED, NULL, 0);
    json_decref(p->offers);
    free(p);
}

int vast_poll_prices(struct vast *v, ebb_prices_cb cb, void *arg)
{
    struct vast_poll *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return EBB_ENOMEM;
    p->cb = cb;
    p->arg = arg;
    p->v = v;
    ebb_op_add(&v->ops, &p->op, poll_cancel);
    json_t *q = vast_offers_query(v->cfg);
    p->call = q ? vast_api(v, "POST", "/api/v0/bundles/", q, 0, on_offers, p) : NULL;
    json_decref(q);
    if (p->call != NULL)
        return 0;
    ebb_op_remove(&p->op);
    free(p);
    return EBB_ENOMEM;
}
