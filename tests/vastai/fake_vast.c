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
        fail(res, 400, "invalid_args", "the query is not a JSON object");
        return;
    }
    json_decref(q);
    json_t *list = json_array();
    for (size_t i = 0; i < f->n_offers; i++) {
        const struct fake_offer *o = &f->offers[i];
        json_array_append_new(
            list, json_pack("{s:I, s:I, s:I, s:s, s:s, s:i, s:f, s:f, s:i, s:i, "
                            "s:i, s:f, s:b, s:b}",
                            "id", o->ask_id, "ask_contract_id", o->ask_id,
                            "machine_id", o->machine_id, "gpu_name", o->gpu_name,
                            "geolocation", o->geolocation, "num_gpus", o->num_gpus,
                            "dph_total", o->dph_total, "min_bid", o->min_bid,
                            "gpu_ram", o->gpu_ram_mb, "cpu_ram", o->cpu_ram_mb,
                            "cpu_cores_effective", o->cpu_cores,
                            "reliability2", 0.995, "rentable", 1, "is_bid", 0));
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
    vm->price = json_is_number(price) ? json_number_value(price) : o->dph_total;
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

static void list(struct fake_vast *f, struct ebb__httpd_response *res)
{
    f->lists++;
    json_t *a = json_array();
    for (size_t i = 0; i < f->n_vm; i++) {
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
    send_json(res, json_pack("{s:o}", "instances", a));
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
        res->status = 401;
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
             strcmp(req->path, "/api/v0/instances/") == 0 &&
             strcmp(req->query, "owner=me") == 0)
        list(f, res);
    else
        fail(res, 404, "not_found", "no such endpoint");
}
