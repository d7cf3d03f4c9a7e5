#include "fake_vast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static void fail(struct ebb__httpd_response *res, int status, const char *error,
                 const char *msg)
{
    res->status = status;
    ebb__httpd_set_bodyf(res, "{\"success\":false,\"error\":\"%s\",\"msg\":\"%s\"}",
                         error, msg);
}

/* Answers with `doc` (taken). */
static void send_json(struct ebb__httpd_response *res, json_t *doc)
{
    char *text = json_dumps(doc, 0);
    ebb__httpd_set_body(res, text, strlen(text));
    free(text);
    json_decref(doc);
}

static void offers(struct fake_vast *f, const struct ebb__httpd_request *req,
                   struct ebb__httpd_response *res)
{
    f->searches++;
    snprintf(f->last_query, sizeof(f->last_query), "%s", req->body);
    json_t *q = json_loads(req->body, 0, NULL);
    if (!json_is_object(q)) {
        f->bad_requests++;
        fail(res, 400, "invalid_args", "the query is not a JSON object");
        return;
    }
    /* What vast's CLI always sends; without it external marketplace
     * offers would be mixed in. */
    if (!json_is_false(json_object_get(json_object_get(q, "external"), "eq"))) {
        json_decref(q);
        f->bad_requests++;
        fail(res, 400, "invalid_args", "expected external: {eq: false}");
        return;
    }
    const char *type = json_string_value(json_object_get(q, "type"));
    int bid = type != NULL && strcmp(type, "bid") == 0;
    json_decref(q);
    json_t *list = json_array();
    for (size_t i = 0; i < f->n_offers; i++) {
        const struct fake_offer *o = &f->offers[i];
        /* dph_total is what this search type rents at: a bid search
         * prices the minimum bid, an on-demand one the machine's rate,
         * each with the disk. */
        double gpu = bid ? o->min_bid : o->dph_base;
        double total = gpu + o->storage_per_hour;
        json_array_append_new(
            list, json_pack("{s:I, s:I, s:I, s:s, s:s, s:i, s:f, s:f, s:f, s:f, "
                            "s:i, s:i, s:i, s:f, s:b, s:b, s:n, "
                            "s:{s:f, s:f, s:f}}",
                            "id", o->ask_id, "ask_contract_id", o->ask_id,
                            "machine_id", o->machine_id, "gpu_name", o->gpu_name,
                            "geolocation", o->geolocation, "num_gpus", o->num_gpus,
                            "dph_base", o->dph_base, "dph_total", total,
                            "min_bid", o->min_bid,
                            "storage_total_cost", o->storage_per_hour,
                            "gpu_ram", o->gpu_ram_mb, "cpu_ram", o->cpu_ram_mb,
                            "cpu_cores_effective", o->cpu_cores,
                            "reliability2", 0.995, "rentable", 1, "is_bid", 0,
                            "external", "search", "gpuCostPerHour", gpu,
                            "diskHour", o->storage_per_hour, "totalHour", total));
    }
    send_json(res, json_pack("{s:o}", "offers", list));
}

struct fake_vm *fake_vast_add(struct fake_vast *f, const char *label, int is_bid)
{
    struct fake_vm *vm = &f->vm[f->n_vm++];
    memset(vm, 0, sizeof(*vm));
    vm->id = 7000000 + ++f->next_id;
    vm->machine_id = 88888;
    vm->num_gpus = 1;
    vm->is_bid = is_bid;
    snprintf(vm->label, sizeof(vm->label), "%s", label ? label : "");
    snprintf(vm->gpu_name, sizeof(vm->gpu_name), "RTX 4090");
    snprintf(vm->geolocation, sizeof(vm->geolocation), "Texas, US");
    snprintf(vm->actual, sizeof(vm->actual), "running");
    snprintf(vm->intended, sizeof(vm->intended), "running");
    snprintf(vm->cur, sizeof(vm->cur), "running");
    return vm;
}

void fake_vast_outbid(struct fake_vm *vm)
{
    snprintf(vm->actual, sizeof(vm->actual), "exited");
    snprintf(vm->cur, sizeof(vm->cur), "stopped");
}

static void rent(struct fake_vast *f, long long ask, const struct ebb__httpd_request *req,
                 struct ebb__httpd_response *res)
{
    const struct fake_offer *o = NULL;
    for (size_t i = 0; i < f->n_offers; i++)
        if (f->offers[i].ask_id == ask)
            o = &f->offers[i];
    if (o == NULL) {
        fail(res, 404, "no_such_ask", "Instance type is not available.");
        return;
    }
    json_t *b = json_loads(req->body, 0, NULL);
    const char *image = json_string_value(json_object_get(b, "image"));
    const char *label = json_string_value(json_object_get(b, "label"));
    json_t *price = json_object_get(b, "price");
    if (image == NULL || label == NULL || strcmp(json_string_value(json_object_get(b, "client_id")), "me") != 0) {
        json_decref(b);
        fail(res, 400, "invalid_args", "image, label and client_id are required");
        return;
    }
    if (json_is_number(price) && json_number_value(price) < o->min_bid) {
        json_decref(b);
        fail(res, 400, "invalid_price", "bid below the minimum");
        return;
    }
    f->rents++;
    struct fake_vm *vm = fake_vast_add(f, label, json_is_number(price));
    vm->ask_id = ask;
    vm->machine_id = o->machine_id;
    vm->num_gpus = o->num_gpus;
    vm->price = json_is_number(price) ? json_number_value(price) : o->dph_base;
    snprintf(vm->gpu_name, sizeof(vm->gpu_name), "%s", o->gpu_name);
    snprintf(vm->geolocation, sizeof(vm->geolocation), "%s", o->geolocation);
    snprintf(vm->actual, sizeof(vm->actual), "loading");
    snprintf(vm->image, sizeof(vm->image), "%s", image);
    const char *onstart = json_string_value(json_object_get(b, "onstart"));
    snprintf(vm->onstart, sizeof(vm->onstart), "%s", onstart ? onstart : "");
    const char *token = json_string_value(
        json_object_get(json_object_get(b, "env"), "EBB_AGENT_TOKEN"));
    snprintf(vm->token, sizeof(vm->token), "%s", token ? token : "");
    json_decref(b);
    if (f->lose_next_rent > 0) {
        f->lose_next_rent--;
        res->status = 503;
        ebb__httpd_set_bodyf(res, "upstream timeout");
        return;
    }
    ebb__httpd_set_bodyf(res, "{\"success\":true,\"new_contract\":%lld}", vm->id);
}

static void destroy(struct fake_vast *f, long long id, struct ebb__httpd_response *res)
{
    f->deletes++;
    for (size_t i = 0; i < f->n_vm; i++) {
        if (f->vm[i].id == id) {
            f->vm[i] = f->vm[--f->n_vm];
            ebb__httpd_set_bodyf(res, "{\"success\":true}");
            return;
        }
    }
    fail(res, 404, "no_such_instance", "no such instance");
}

/* The value of `key` in a query string, copied into out; 0 when absent. */
static int query_value(const char *query, const char *key, char *out, size_t size)
{
    size_t n = strlen(key);
    for (const char *p = query; p != NULL && *p != '\0';) {
        const char *end = strchr(p, '&');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > n && strncmp(p, key, n) == 0 && p[n] == '=') {
            snprintf(out, size, "%.*s", (int)(len - n - 1), p + n + 1);
            return 1;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

/* GET /api/v1/instances/?limit=N[&after_token=T]: a page from the
 * instance after T ("after-<index>": opaque to the client). */
static void list(struct fake_vast *f, const struct ebb__httpd_request *req,
                 struct ebb__httpd_response *res)
{
    f->lists++;
    char limit_text[16] = "", token[64] = "";
    query_value(req->query, "limit", limit_text, sizeof(limit_text));
    long limit = strtol(limit_text, NULL, 10);
    if (limit <= 0)
        limit = 5;
    if (limit > 25)
        limit = 25;
    size_t page = f->list_page > 0 && f->list_page < (size_t)limit ? f->list_page
                                                                 : (size_t)limit;
    size_t from = 0;
    if (query_value(req->query, "after_token", token, sizeof(token))) {
        char *end;
        if (strncmp(token, "after-", 6) != 0) {
            f->bad_requests++;
            fail(res, 400, "invalid_args", "invalid after_token");
            return;
        }
        from = (size_t)strtoul(token + 6, &end, 10);
    }
    json_t *a = json_array();
    for (size_t i = from; i < f->n_vm && i < from + page; i++) {
        const struct fake_vm *vm = &f->vm[i];
        json_array_append_new(
            a, json_pack("{s:I, s:I, s:s, s:s, s:i, s:s, s:b, s:f, s:s, s:s, s:s, "
                         "s:f, s:s}",
                         "id", vm->id, "machine_id", vm->machine_id, "label",
                         vm->label, "gpu_name", vm->gpu_name, "num_gpus",
                         vm->num_gpus, "geolocation", vm->geolocation, "is_bid",
                         vm->is_bid, "dph_total", vm->price, "actual_status",
                         vm->actual, "intended_status", vm->intended, "cur_state",
                         vm->cur, "start_date", 1796040000.5, "status_msg", ""));
    }
    json_t *next = json_null();
    if (from + page < f->n_vm) {
        char t[32];
        snprintf(t, sizeof(t), "after-%zu", from + page);
        next = json_string(t);
    }
    send_json(res, json_pack("{s:b, s:I, s:I, s:o, s:o}", "success", 1,
                             "instances_found", (json_int_t)json_array_size(a),
                             "total_instances", (json_int_t)f->n_vm, "next_token",
                             next, "instances", a));
}

/* The id in "<prefix><id>/", the trailing slash required. */
static int id_in(const char *path, const char *prefix, long long *id)
{
    size_t n = strlen(prefix);
    char *end;
    if (strncmp(path, prefix, n) != 0)
        return 0;
    *id = strtoll(path + n, &end, 10);
    return end != path + n && strcmp(end, "/") == 0;
}

void fake_vast_handle(const struct ebb__httpd_request *req,
                      struct ebb__httpd_response *res, void *arg)
{
    struct fake_vast *f = arg;
    f->requests++;
    res->delay_ms = f->delay_ms;
    ebb__httpd_add_header(res, "Content-Type", "application/json");
    char want[256];
    snprintf(want, sizeof(want), "Bearer %s", f->api_key);
    const char *auth = ebb__httpd_header(req, "Authorization");
    if (auth == NULL || strcmp(auth, want) != 0 || strstr(req->target, "api_key") != NULL) {
        f->unauthorized++;
        /* The offer search says so with a 404 (search_offers.yaml). */
        res->status = strcmp(req->path, "/api/v0/bundles/") == 0 ? 404 : 401;
        ebb__httpd_set_bodyf(res, "{\"success\":false,\"error\":\"auth_error\","
                                  "\"msg\":\"Invalid user key\"}");
        return;
    }
    if (f->rate_limit_next > 0) {
        f->rate_limit_next--;
        f->rate_limited++;
        res->status = 429;
        ebb__httpd_add_header(res, "Retry-After", "0");
        ebb__httpd_set_bodyf(res, "{\"detail\":\"API requests too frequent\"}");
        return;
    }
    long long id;
    if (strcmp(req->method, "POST") == 0 && strcmp(req->path, "/api/v0/bundles/") == 0)
        offers(f, req, res);
    else if (strcmp(req->method, "PUT") == 0 &&
             id_in(req->path, "/api/v0/asks/", &id))
        rent(f, id, req, res);
    else if (strcmp(req->method, "DELETE") == 0 &&
             id_in(req->path, "/api/v0/instances/", &id))
        destroy(f, id, res);
    else if (strcmp(req->method, "GET") == 0 &&
             strcmp(req->path, "/api/v1/instances/") == 0)
        list(f, req, res);
    else
        fail(res, 404, "not_found", "no such endpoint");
}
