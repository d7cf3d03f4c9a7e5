/* A provider built against another version of the provider ABI than this
 * ebb's, to show that the size rules of include/ebb/provider.h hold: the
 * same source is built twice,
 * - as abi_v1 (ABI_NEXT 0): every struct it fills has only the first
 *   version's fields, so its struct_size is smaller than this ebb's;
 * - as abi_next (ABI_NEXT 1): every struct it fills has this ebb's fields
 *   and one more appended that this ebb does not know, so its struct_size
 *   is larger; and it reads the launch by struct_size, as a plugin built
 *   with a launch field this ebb does not send must.
 * The layouts are declared here, as an older or newer include/ebb would
 * have declared them; static assertions pin them to the SDK's prefix.
 *
 * Every call answers through a host timer, like a real provider: a poll
 * with two prices (so the core must step by struct_size), a launch with
 * the instance and a CHECKPOINT event, a list with two instances. The key
 * `price_struct_size` makes it lie about its prices' size, for the test
 * that the core refuses prices smaller than the first version.
 */
#include <stdio.h>
#include <stdlib.h>

#include <ebb/provider.h>

#ifndef ABI_NEXT
#error "build with -DABI_NEXT=0 or 1 and -DABI_NAME"
#endif

/* ---- the layouts this plugin was "built" with ------------------------- */

struct t_shape {
    uint32_t struct_size;
    const char *gpu_model;
    uint32_t gpu_count;
    double gpu_memory_gb;
    uint32_t vcpus;
    double memory_gb;
    const char *machine_id;
    double next_field; /* appended in the next version */
};

struct t_price {
    uint32_t struct_size;
    const char *provider;
    const char *region;
    const char *zone;
    const char *instance_type;
    const char *product;
    enum ebb_market market;
    ebb_time_ms at;
    ebb_micros price_per_hour;
    const char *currency;
#if ABI_NEXT
    int32_t capacity;
    const struct t_shape *shape;
    uint64_t next_field;
#endif
};

struct t_instance {
    uint32_t struct_size;
    const char *id;
    const char *token;
    const char *job_id;
    const char *region;
    const char *zone;
    const char *instance_type;
    enum ebb_market market;
    enum ebb_instance_state state;
    ebb_time_ms launched_at;
    int preempted;
    enum ebb_billing billing;
#if ABI_NEXT
    const char *next_field;
#endif
};

struct t_event {
    uint32_t struct_size;
    enum ebb_instance_event_kind kind;
    const char *instance_id;
    const char *token;
    ebb_time_ms at;
    ebb_time_ms deadline;
    int exit_status;
    ebb_dur_ms work_done;
    const char *reason;
#if ABI_NEXT
    const char *checkpoint_path;
    int32_t rank;
    int64_t next_field;
#endif
};

/* The launch as this plugin reads it: ebbd's fields, and in the next
 * version one more that this ebb does not send. */
struct t_launch {
    uint32_t struct_size;
    const char *token;
    const char *job_id;
    const char *provider;
    const char *region;
    const char *zone;
    const char *instance_type;
    enum ebb_market market;
    ebb_micros max_price_per_hour;
    const char *currency;
    unsigned count;
    const char *agent_url;
    const char *agent_token;
    const char *const *argv;
    size_t argc;
#if ABI_NEXT
    const struct ebb_job_model *model;
    const char *agent_tls_pin;
    const char *agent_tls_ca;
    int64_t run_uid;
    const char *const *agent_tokens;
    const char *join_gang;
    unsigned join_rank;
    const char *next_field;
#endif
};

struct t_provider {
    uint32_t abi;
    uint32_t struct_size;
    const char *name;
    const char *description;
    const struct ebb_cfg_key *config_keys;
    size_t config_size;
    int (*create)(const struct ebb_host *host, const void *config, void **self);
    void (*destroy)(void *self);
    int (*poll_prices)(void *self, ebb_prices_cb cb, void *arg);
    int (*launch)(void *self, const struct ebb_launch *req, ebb_launch_cb cb,
                  void *arg);
    int (*terminate)(void *self, const char *instance_id, ebb_done_cb cb,
                     void *arg);
    int (*list_instances)(void *self, ebb_list_cb cb, void *arg);
#if ABI_NEXT
    int (*stop_job)(void *self, const char *instance_id, ebb_dur_ms grace,
                    ebb_done_cb cb, void *arg);
    uint32_t flags;
    int (*next_hook)(void *self);
#endif
};

#define SAME_PREFIX(t, sdk, f)                                                \
    _Static_assert(offsetof(struct t, f) == offsetof(struct sdk, f),         \
                   #t "." #f " is where the SDK has it")
SAME_PREFIX(t_shape, ebb_shape, machine_id);
SAME_PREFIX(t_price, ebb_price, currency);
SAME_PREFIX(t_instance, ebb_instance, billing);
SAME_PREFIX(t_event, ebb_instance_event, reason);
SAME_PREFIX(t_launch, ebb_launch, argc);
SAME_PREFIX(t_provider, ebb_provider, list_instances);
#if ABI_NEXT
SAME_PREFIX(t_price, ebb_price, shape);
SAME_PREFIX(t_event, ebb_instance_event, checkpoint_path);
SAME_PREFIX(t_launch, ebb_launch, model);
SAME_PREFIX(t_launch, ebb_launch, run_uid);
SAME_PREFIX(t_launch, ebb_launch, agent_tokens);
SAME_PREFIX(t_launch, ebb_launch, join_rank);
SAME_PREFIX(t_event, ebb_instance_event, rank);
SAME_PREFIX(t_provider, ebb_provider, stop_job);
SAME_PREFIX(t_provider, ebb_provider, flags);
_Static_assert(sizeof(struct t_price) > sizeof(struct ebb_price), "wider");
_Static_assert(sizeof(struct t_instance) > sizeof(struct ebb_instance), "wider");
_Static_assert(sizeof(struct t_event) > sizeof(struct ebb_instance_event), "wider");
#else
_Static_assert(sizeof(struct t_price) < sizeof(struct ebb_price), "narrower");
/* struct ebb_instance has only its first version's fields so far. */
_Static_assert(sizeof(struct t_instance) == sizeof(struct ebb_instance), "same");
_Static_assert(sizeof(struct t_event) < sizeof(struct ebb_instance_event),
               "narrower");
#endif

/* ---- the provider ----------------------------------------------------- */

struct t_cfg {
    int64_t price_struct_size; /* 0: sizeof(struct t_price) */
};

static const struct ebb_cfg_key t_keys[] = {
    {"price_struct_size", EBB_CFG_INT, "0",
     offsetof(struct t_cfg, price_struct_size),
     "the struct_size its prices claim; 0: their real size"},
    EBB_CFG_END,
};

enum t_kind { T_PRICES, T_LAUNCH, T_LIST, T_N };

struct t_self {
    const struct ebb_host *host;
    const struct t_cfg *cfg;
    /* One pending call of each kind, answered by its timer. */
    struct {
        int64_t timer;
        void *arg;
        union {
            ebb_prices_cb prices;
            ebb_launch_cb launch;
            ebb_list_cb list;
        } cb;
    } pending[T_N];
    char token[64];
    char instance_type[64];
};

static struct t_self *fired(void *arg, enum t_kind kind)
{
    struct t_self *t = arg;
    t->pending[kind].timer = 0;
    return t;
}

static void answer_prices(void *arg)
{
    struct t_self *t = fired(arg, T_PRICES);
    ebb_time_ms now = t->host->now(t->host->ctx);
    struct t_price p[2];
    for (int i = 0; i < 2; i++) {
        p[i] = (struct t_price){
            .struct_size = t->cfg->price_struct_size > 0
                               ? (uint32_t)t->cfg->price_struct_size
                               : sizeof(struct t_price),
            .region = "r-1",
            .zone = "r-1a",
            .instance_type = i == 0 ? "t.a" : "t.b",
            .product = "Linux/UNIX",
            .market = EBB_MARKET_SPOT,
            .at = now,
            .price_per_hour = (i + 1) * 100000,
            .currency = "USD",
        };
    }
#if ABI_NEXT
    static const struct t_shape shape = {
        .struct_size = sizeof(struct t_shape),
        .gpu_model = "V100",
        .gpu_count = 1,
        .machine_id = "m-7",
        .next_field = 1.5,
    };
    for (int i = 0; i < 2; i++) {
        p[i].capacity = 3;
        p[i].shape = &shape;
        p[i].next_field = UINT64_MAX;
    }
#endif
    t->pending[T_PRICES].cb.prices(t->pending[T_PRICES].arg, 0,
                                   (const struct ebb_price *)(const void *)p, 2);
}

static struct t_instance instance(const struct t_self *t, const char *id)
{
    struct t_instance v = {
        .struct_size = sizeof(struct t_instance),
        .id = id,
        .token = t->token,
        .job_id = "j-1",
        .region = "r-1",
        .zone = "r-1a",
        .instance_type = t->instance_type,
        .market = EBB_MARKET_SPOT,
        .state = EBB_INSTANCE_RUNNING,
        .launched_at = t->host->now(t->host->ctx),
    };
    v.billing = EBB_BILLING_HOURLY_START_PRICE;
#if ABI_NEXT
    v.next_field = "unknown to this ebb";
#endif
    return v;
}

static void answer_launch(void *arg)
{
    struct t_self *t = fired(arg, T_LAUNCH);
    struct t_instance v = instance(t, "i-1");
    t->pending[T_LAUNCH].cb.launch(t->pending[T_LAUNCH].arg, 0,
                                   (const struct ebb_instance *)(const void *)&v);
    struct t_event ev = {
        .struct_size = sizeof(struct t_event),
        .kind = EBB_EVENT_CHECKPOINT,
        .instance_id = "i-1",
        .token = t->token,
        .at = t->host->now(t->host->ctx),
        .work_done = 42,
        .reason = "checkpointed",
    };
#if ABI_NEXT
    ev.checkpoint_path = "/ck";
    ev.next_field = -1;
#endif
    t->host->instance_event(t->host->ctx,
                            (const struct ebb_instance_event *)(const void *)&ev);
}

static void answer_list(void *arg)
{
    struct t_self *t = fired(arg, T_LIST);
    struct t_instance v[2] = {instance(t, "i-1"), instance(t, "i-2")};
    t->pending[T_LIST].cb.list(t->pending[T_LIST].arg, 0,
                               (const struct ebb_instance *)(const void *)v, 2);
}

static int start(struct t_self *t, enum t_kind kind, void *arg)
{
    static const ebb_timer_fn answer[T_N] = {answer_prices, answer_launch,
                                             answer_list};
    if (t->pending[kind].timer != 0)
        return EBB_EBUSY;
    int64_t id = t->host->timer_start(t->host->ctx, t->host->now(t->host->ctx),
                                      answer[kind], t);
    if (id < 0)
        return (int)id;
    t->pending[kind].timer = id;
    t->pending[kind].arg = arg;
    return 0;
}

static int t_create(const struct ebb_host *host, const void *config, void **self)
{
    struct t_self *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return EBB_ENOMEM;
    t->host = host;
    t->cfg = config;
    *self = t;
    return 0;
}

static void t_destroy(void *self)
{
    struct t_self *t = self;
    for (int k = 0; k < T_N; k++) {
        if (t->pending[k].timer == 0)
            continue;
        t->host->timer_stop(t->host->ctx, t->pending[k].timer);
        void *arg = t->pending[k].arg;
        if (k == T_PRICES)
            t->pending[k].cb.prices(arg, EBB_ECANCELED, NULL, 0);
        else if (k == T_LAUNCH)
            t->pending[k].cb.launch(arg, EBB_ECANCELED, NULL);
        else
            t->pending[k].cb.list(arg, EBB_ECANCELED, NULL, 0);
    }
    free(t);
}

static int t_poll_prices(void *self, ebb_prices_cb cb, void *arg)
{
    struct t_self *t = self;
    int rc = start(t, T_PRICES, arg);
    if (rc == 0)
        t->pending[T_PRICES].cb.prices = cb;
    return rc;
}

static int t_launch(void *self, const struct ebb_launch *sdk_req,
                    ebb_launch_cb cb, void *arg)
{
    struct t_self *t = self;
    const struct t_launch *req = (const void *)sdk_req;
    if (req->struct_size < EBB_LAUNCH_SIZE_V1)
        return EBB_EINVAL;
    /* Read by struct_size: a field ebbd did not send is absent. */
    const char *type = req->instance_type;
#if ABI_NEXT
    if (EBB_HAS(struct t_launch, req, next_field))
        type = "read a field ebbd never sent";
#endif
    int rc = start(t, T_LAUNCH, arg);
    if (rc != 0)
        return rc;
    t->pending[T_LAUNCH].cb.launch = cb;
    snprintf(t->token, sizeof(t->token), "%s", req->token);
    snprintf(t->instance_type, sizeof(t->instance_type), "%s", type);
    return 0;
}

static int t_terminate(void *self, const char *id, ebb_done_cb cb, void *arg)
{
    return EBB_EUNSUPPORTED;
}

static int t_list(void *self, ebb_list_cb cb, void *arg)
{
    struct t_self *t = self;
    int rc = start(t, T_LIST, arg);
    if (rc == 0)
        t->pending[T_LIST].cb.list = cb;
    return rc;
}

#if ABI_NEXT
static int t_stop_job(void *self, const char *id, ebb_dur_ms grace,
                      ebb_done_cb cb, void *arg)
{
    return EBB_EUNSUPPORTED;
}

static int t_next_hook(void *self)
{
    return 0;
}
#endif

static const struct t_provider t_provider = {
    .abi = EBB_PROVIDER_ABI,
    .struct_size = sizeof(struct t_provider),
    .name = ABI_NAME,
    .description = "test provider built against another ABI version",
    .config_keys = t_keys,
    .config_size = sizeof(struct t_cfg),
    .create = t_create,
    .destroy = t_destroy,
    .poll_prices = t_poll_prices,
    .launch = t_launch,
    .terminate = t_terminate,
    .list_instances = t_list,
#if ABI_NEXT
    .stop_job = t_stop_job,
    .next_hook = t_next_hook,
#endif
};

const struct ebb_provider *ebb_provider_entry(void)
{
    return (const struct ebb_provider *)(const void *)&t_provider;
}
