/* Two fake clouds in one process for the cross-provider end-to-end test:
 * the fake Alibaba ECS endpoint (tests/alibaba/fake_ecs.c) and the fake
 * vast.ai API (tests/vastai/fake_vast.c), each on its own 127.0.0.1 port,
 * plus a control port through which the test acts on their world and
 * reads it:
 *
 *   POST /outbid  every running vast.ai instance is outbid: vast.ai stops
 *                 it, and its machine's minimum bid rises to the winning
 *                 bid (OUTBID_PRICE), so the machine is no bargain any more
 *   GET  /state   both worlds as JSON: instances with their status, what
 *                 each fake counted (rents, deletes, RunInstances, ...),
 *                 refused keys and signatures, the last RunInstances form
 *
 * Usage: fake_clouds PORTS_FILE
 * Credentials come from the environment ebbd gets too:
 * ALIBABA_CLOUD_ACCESS_KEY_ID, ALIBABA_CLOUD_ACCESS_KEY_SECRET and
 * VAST_API_KEY. The fakes check them as they do in the provider tests.
 * Once all three servers listen, PORTS_FILE gets {"ecs": PORT, "vast":
 * PORT, "control": PORT} (written aside, then renamed: a reader never sees
 * half of it). SIGTERM or SIGINT closes everything and exits 0.
 *
 * The Alibaba world: spot prices for one V100 instance type in zone
 * cn-hangzhou-h, a row every minute from two hours before the start to two
 * hours after it, so the providers' polls around the real now always find
 * one; in CNY, as ECS answers for its mainland China regions. The vast.ai
 * world: one interruptible V100 machine, much cheaper per hour than the ECS
 * spot price converted at 0.14 USD per CNY. Instances boot: a short timer moves
 * rented vast instances from "loading" to "running" and launched ECS
 * instances from Pending to Running.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include <ebb/units.h>

#include "fake_ecs.h"
#include "fake_vast.h"

#define ECS_REGION "cn-hangzhou"
#define ECS_ZONE "cn-hangzhou-h"
#define ECS_TYPE "ecs.gn6v-c8g1.2xlarge"
#define ECS_SPOT_CNY 4.0        /* 0.56 USD at 0.14 USD per CNY */
#define ECS_ORIGIN_CNY 26.46
#define VAST_MIN_BID 0.25       /* USD per hour */
#define VAST_RATE 0.44         /* dph_base: the machine on demand */
#define VAST_DISK 0.01         /* storage_total_cost: its disk, per hour */
#define OUTBID_PRICE 1.20       /* the bid that wins the machine */
#define PRICE_STEP EBB_MS_PER_MINUTE
#define PRICE_SPAN (2 * EBB_MS_PER_HOUR)
#define BOOT_MS 300

struct world {
    uv_loop_t *loop;
    struct fake_ecs ecs;
    struct fake_vast vast;
    struct fake_price *prices;
    struct fake_offer offer;
    struct ebb__httpd *ecs_srv, *vast_srv, *control_srv;
    uv_timer_t boot;
    uv_signal_t sigterm, sigint;
    /* What ECS answered, counted here by action (fake_ecs keeps only its
     * first calls, and the test runs longer). */
    int run_instances, delete_instance, ecs_refused;
    int outbids;
};

static const char *env_or_die(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr, "fake_clouds: set %s\n", name);
        exit(2);
    }
    return v;
}

/* Spot price rows around the real now. */
static int make_prices(struct world *w)
{
    uv_timeval64_t tv;
    if (uv_gettimeofday(&tv) != 0)
        return -1;
    ebb_time_ms now = tv.tv_sec * 1000 + tv.tv_usec / 1000;
    ebb_time_ms first = now - PRICE_SPAN - now % PRICE_STEP;
    size_t n = (size_t)(2 * PRICE_SPAN / PRICE_STEP) + 1;
    w->prices = calloc(n, sizeof(*w->prices));
    if (w->prices == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        w->prices[i] = (struct fake_price){
            .region = ECS_REGION,
            .zone = ECS_ZONE,
            .type = ECS_TYPE,
            .at = first + (ebb_time_ms)i * PRICE_STEP,
            .spot = ECS_SPOT_CNY,
            .origin = ECS_ORIGIN_CNY,
        };
    w->ecs.prices = w->prices;
    w->ecs.n_prices = n;
    w->ecs.page_size = 50;
    return 0;
}

/* ---- the ECS endpoint, with its answers counted by action ---- */

/* The form's Action, or "" (the fake itself rejects a form without one). */
static void form_action(const char *body, char *out, size_t size)
{
    out[0] = '\0';
    for (const char *p = body; *p != '\0';) {
        size_t len = strcspn(p, "&");
        if (strncmp(p, "Action=", 7) == 0) {
            snprintf(out, size, "%.*s", (int)(len - 7), p + 7);
            return;
        }
        p += len + (p[len] == '&');
    }
}

static void ecs_handle(const struct ebb__httpd_request *req,
                       struct ebb__httpd_response *res, void *arg)
{
    struct world *w = arg;
    fake_ecs_handle(req, res, &w->ecs);
    char action[40];
    form_action(req->body, action, sizeof(action));
    if (res->status != 200)
        w->ecs_refused++;
    else if (strcmp(action, "RunInstances") == 0)
        w->run_instances++;
    else if (strcmp(action, "DeleteInstance") == 0)
        w->delete_instance++;
}

static void vast_handle(const struct ebb__httpd_request *req,
                        struct ebb__httpd_response *res, void *arg)
{
    struct world *w = arg;
    fake_vast_handle(req, res, &w->vast);
}

/* ---- instances boot ---- */

static void on_boot(uv_timer_t *t)
{
    struct world *w = t->data;
    for (size_t i = 0; i < w->vast.n_vm; i++)
        if (strcmp(w->vast.vm[i].actual, "loading") == 0)
            snprintf(w->vast.vm[i].actual, sizeof(w->vast.vm[i].actual), "running");
    for (size_t i = 0; i < w->ecs.n_inst; i++)
        if (strcmp(w->ecs.inst[i].status, "Pending") == 0)
            snprintf(w->ecs.inst[i].status, sizeof(w->ecs.inst[i].status), "Running");
}

/* ---- the control port ---- */

static void outbid(struct world *w, struct ebb__httpd_response *res)
{
    int n = 0;
    for (size_t i = 0; i < w->vast.n_vm; i++) {
        struct fake_vm *vm = &w->vast.vm[i];
        if (!vm->is_bid || strcmp(vm->actual, "exited") == 0)
            continue;
        fake_vast_outbid(vm);
        if (vm->machine_id == w->offer.machine_id)
            w->offer.min_bid = OUTBID_PRICE;
        n++;
    }
    w->outbids += n;
    ebb__httpd_set_bodyf(res, "{\"outbid\":%d}", n);
}

static json_t *vast_json(const struct fake_vast *f)
{
    json_t *list = json_array();
    for (size_t i = 0; i < f->n_vm; i++) {
        const struct fake_vm *vm = &f->vm[i];
        json_array_append_new(
            list, json_pack("{s:I, s:s, s:s, s:s, s:b, s:f}", "id", vm->id,
                            "label", vm->label, "actual_status", vm->actual,
                            "cur_state", vm->cur, "is_bid", vm->is_bid, "price",
                            vm->price));
    }
    return json_pack("{s:o, s:i, s:i, s:i, s:i, s:i}", "instances", list,
                     "requests", f->requests, "searches", f->searches, "rents",
                     f->rents, "deletes", f->deletes, "unauthorized",
                     f->unauthorized);
}

static json_t *ecs_json(const struct world *w)
{
    const struct fake_ecs *e = &w->ecs;
    json_t *list = json_array();
    for (size_t i = 0; i < e->n_inst; i++) {
        const struct fake_instance *x = &e->inst[i];
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id", x->id,
                            "region", x->region, "zone", x->zone, "type",
                            x->type, "status", x->status, "spot_strategy",
                            x->strategy, "job_id", x->job_id));
    }
    /* The last RunInstances form's keys the test asserts on. */
    json_t *last_run = json_object();
    static const char *const keys[] = {"SpotStrategy", "ClientToken", "InstanceType",
                                       "ZoneId", "InstanceChargeType"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *v = fake_ecs_run_param(e, keys[i]);
        if (v != NULL)
            json_object_set_new(last_run, keys[i], json_string(v));
    }
    return json_pack("{s:o, s:i, s:i, s:i, s:i, s:i, s:o}", "instances", list,
                     "requests", e->requests, "run_instances", w->run_instances,
                     "delete_instance", w->delete_instance, "bad_signatures",
                     e->bad_signatures, "refused", w->ecs_refused, "last_run",
                     last_run);
}

static void control_handle(const struct ebb__httpd_request *req,
                           struct ebb__httpd_response *res, void *arg)
{
    struct world *w = arg;
    ebb__httpd_add_header(res, "Content-Type", "application/json");
    if (strcmp(req->method, "POST") == 0 && strcmp(req->path, "/outbid") == 0) {
        outbid(w, res);
    } else if (strcmp(req->method, "GET") == 0 && strcmp(req->path, "/state") == 0) {
        json_t *doc = json_pack("{s:o, s:o, s:i}", "vast", vast_json(&w->vast),
                                "ecs", ecs_json(w), "outbids", w->outbids);
        char *text = json_dumps(doc, JSON_SORT_KEYS);
        ebb__httpd_set_body(res, text, strlen(text));
        free(text);
        json_decref(doc);
    } else {
        res->status = 404;
        ebb__httpd_set_bodyf(res, "{\"error\":\"POST /outbid or GET /state\"}");
    }
}

/* ---- life ---- */

static int write_ports(const struct world *w, const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "{\"ecs\": %u, \"vast\": %u, \"control\": %u}\n",
            ebb__httpd_port(w->ecs_srv), ebb__httpd_port(w->vast_srv),
            ebb__httpd_port(w->control_srv));
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

static void on_signal(uv_signal_t *s, int signum)
{
    (void)signum;
    struct world *w = s->data;
    ebb__httpd_close(w->ecs_srv, NULL, NULL);
    ebb__httpd_close(w->vast_srv, NULL, NULL);
    ebb__httpd_close(w->control_srv, NULL, NULL);
    uv_close((uv_handle_t *)&w->boot, NULL);
    uv_close((uv_handle_t *)&w->sigterm, NULL);
    uv_close((uv_handle_t *)&w->sigint, NULL);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fake_clouds PORTS_FILE\n");
        return 2;
    }
    static struct world w;
    w.loop = uv_default_loop();
    w.ecs.key_id = env_or_die("ALIBABA_CLOUD_ACCESS_KEY_ID");
    w.ecs.secret = env_or_die("ALIBABA_CLOUD_ACCESS_KEY_SECRET");
    w.vast.api_key = env_or_die("VAST_API_KEY");
    if (make_prices(&w) != 0)
        return 1;
    w.offer = (struct fake_offer){
        .ask_id = 90001, .machine_id = 4242, .gpu_name = "Tesla V100",
        .geolocation = "Oregon, US", .num_gpus = 1, .dph_base = VAST_RATE,
        .min_bid = VAST_MIN_BID, .storage_per_hour = VAST_DISK, .gpu_ram_mb = 16384, .cpu_ram_mb = 64000,
        .cpu_cores = 8,
    };
    w.vast.offers = &w.offer;
    w.vast.n_offers = 1;
    if (ebb__httpd_start(&w.ecs_srv, w.loop, ecs_handle, &w) != 0 ||
        ebb__httpd_start(&w.vast_srv, w.loop, vast_handle, &w) != 0 ||
        ebb__httpd_start(&w.control_srv, w.loop, control_handle, &w) != 0) {
        fprintf(stderr, "fake_clouds: cannot listen on 127.0.0.1\n");
        return 1;
    }
    uv_timer_init(w.loop, &w.boot);
    w.boot.data = &w;
    uv_timer_start(&w.boot, on_boot, BOOT_MS, BOOT_MS);
    uv_signal_init(w.loop, &w.sigterm);
    uv_signal_init(w.loop, &w.sigint);
    w.sigterm.data = w.sigint.data = &w;
    uv_signal_start(&w.sigterm, on_signal, SIGTERM);
    uv_signal_start(&w.sigint, on_signal, SIGINT);
    if (write_ports(&w, argv[1]) != 0) {
        perror("fake_clouds: writing the ports file");
        return 1;
    }
    uv_run(w.loop, UV_RUN_DEFAULT);
    int rc = uv_loop_close(w.loop);
    free(w.prices);
    return rc == 0 ? 0 : 1;
}
