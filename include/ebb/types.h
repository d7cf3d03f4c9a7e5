/* ebb — value types shared by the core and plugins: prices, instances,
 * launches and the events a provider reports about its instances.
 *
 * Every struct here starts with `struct_size`, set by whoever fills it to
 * the sizeof() it was compiled with, and grows only by appending fields,
 * each with a comment saying so. The rules for its reader are those of
 * provider.h: refuse a struct smaller than its first version
 * (EBB_*_SIZE_V1 below), read an appended field only when struct_size
 * covers it (EBB_HAS()), and step through an array by its elements'
 * struct_size.
 *
 * "Instance" is deliberately abstract: a VM, a rented machine, a local
 * process tree, later a Kubernetes pod or a Slurm allocation. A launch may
 * ask for a gang of `count` members that start and stop as one unit
 * (gang.h: its instance's id names every member).
 */
#ifndef EBB_TYPES_H
#define EBB_TYPES_H

#include "common.h"

struct ebb_job_model;

/* What one instance of an offer is: the common shape every provider's
 * offer is normalised to, so policies compare an AWS p3.2xlarge with a
 * vast.ai V100 machine by cost per unit of work. */
struct ebb_shape {
    uint32_t struct_size;    /* sizeof(struct ebb_shape) in the plugin */
    const char *gpu_model;   /* normalised: "V100", "A100_80GB", "RTX_4090"; "" */
    uint32_t gpu_count;      /* 0 without GPUs */
    double gpu_memory_gb;    /* per GPU; 0 when unknown */
    uint32_t vcpus;          /* 0 when unknown */
    double memory_gb;        /* 0 when unknown */
    /* Appended: the provider's machine (vast.ai); "" otherwise, and when
     * struct_size does not cover it. */
    const char *machine_id;
};

/* One observed price. Strings are borrowed for the duration of a callback. */
struct ebb_price {
    uint32_t struct_size;      /* sizeof(struct ebb_price) in the plugin */
    /* Whose market this is: NULL means the plugin's own name. A plugin that
     * replays or aggregates other markets (sim) names them ("aws"). */
    const char *provider;
    const char *region;        /* "us-east-1"; "" when the market has none */
    const char *zone;          /* "us-east-1a"; "" when the market has none */
    const char *instance_type; /* "p3.2xlarge", "H100_80GB" */
    const char *product;       /* "Linux/UNIX", ... */
    enum ebb_market market;
    ebb_time_ms at;            /* when this price took effect */
    ebb_micros price_per_hour; /* in `currency` micro-units */
    const char *currency;      /* "USD" */
    /* Appended: spot capacity in instances from `at` on, when the provider
     * knows it (the sim market does): 0 = none; -1 = unknown or unlimited,
     * also when struct_size does not cover it. */
    int32_t capacity;
    /* Appended: what the offer is; NULL (also when struct_size does not
     * cover it): the shipped catalog's entry for the type. */
    const struct ebb_shape *shape;
};

/* A price series of one provider, as poll cursors name it: a NULL field
 * matches every value ("" is a market without regions or zones). Filled
 * by the plugin, read by the host. */
struct ebb_series_key {
    uint32_t struct_size;      /* sizeof(struct ebb_series_key) in the plugin */
    const char *region;
    const char *zone;
    const char *instance_type;
    const char *product;
};

enum ebb_instance_state {
    EBB_INSTANCE_PENDING = 0,  /* asked for, not yet running */
    EBB_INSTANCE_RUNNING = 1,
    EBB_INSTANCE_STOPPING = 2, /* terminate asked for, or notice given */
    EBB_INSTANCE_TERMINATED = 3,
};

/* How a provider bills an instance's running time. */
enum ebb_billing {
    /* Per second at the price in effect during each second (the sim's
     * default; GPU marketplaces). */
    EBB_BILLING_PER_SECOND = 0,
    /* AWS spot: the price in effect at the start of each instance-hour
     * applies to that hour, billed per second. */
    EBB_BILLING_HOURLY_START_PRICE = 1,
};

/* What a provider knows of one instance it runs for ebb. */
struct ebb_instance {
    uint32_t struct_size;      /* sizeof(struct ebb_instance) in the plugin */
    const char *id;            /* the provider's id ("i-0abc...") */
    const char *token;         /* ebb's idempotency token, from its tags */
    const char *job_id;        /* ebb's job id, from its tags */
    const char *region;
    const char *zone;
    const char *instance_type;
    enum ebb_market market;
    enum ebb_instance_state state;
    ebb_time_ms launched_at;   /* 0 when unknown */
    int preempted;             /* 1 when the provider took it away */
    enum ebb_billing billing;
};

/* A request to start an instance, filled by ebbd (struct_size is ebbd's
 * sizeof) and read by the provider. The token is written to the store
 * before launch() is called and must be passed to the provider's
 * idempotency mechanism (EC2 ClientToken, ...) and tags, so that a retried
 * or repeated launch after a crash never starts a second instance. */
struct ebb_launch {
    uint32_t struct_size;      /* sizeof(struct ebb_launch) in ebbd */
    const char *token;
    const char *job_id;
    const char *provider;      /* the market, as in ebb_price.provider */
    const char *region;
    const char *zone;          /* "" lets the provider choose */
    const char *instance_type;
    enum ebb_market market;
    ebb_micros max_price_per_hour; /* spot bid or limit; 0 = provider default */
    const char *currency;
    /* Gang size; 1 for a single instance. A provider without
     * EBB_PROVIDER_GANGS refuses more with EBB_EINVAL; one with it starts
     * all `count` in `zone` (placed close together: a cluster placement
     * group), or none, and answers with one instance for the gang
     * (gang.h). */
    unsigned count;
    /* How the agent on the instance reaches ebbd, and its secret. */
    const char *agent_url;
    const char *agent_token;
    /* The job's command, for providers that run it directly (local). */
    const char *const *argv;
    size_t argc;
    /* Appended: the job as a model, for providers that simulate it (sim;
     * see job_model.h). ebbd always fills it; real providers never read
     * it. NULL when struct_size does not cover it. */
    const struct ebb_job_model *model;
    /* Appended: how the agent trusts ebbd's TLS certificate; NULL when
     * struct_size does not cover them and for a plain http:// agent_url.
     * `agent_tls_pin` is "sha256//<base64>", the SHA-256 of the
     * certificate's SubjectPublicKeyInfo (ebb-agent --ebbd-pin PIN);
     * `agent_tls_ca` is the PEM text of the CA its chain ends in (write it
     * to a file: ebb-agent --ebbd-ca FILE). Give the agent the CA when
     * there is one, else the pin; with neither an https:// URL is checked
     * against the instance's own CAs. agent_token is then a one-time
     * enrolment token ("enrol:..."), useless once the agent has used it. */
    const char *agent_tls_pin;
    const char *agent_tls_ca;
    /* Appended: the uid the job runs as where the provider runs it on
     * this machine (local): its spec's run_as, else its owner's (the
     * submitter's, from SO_PEERCRED). -1: unknown, also when struct_size
     * does not cover it; such a provider then refuses with EBB_EPERM.
     * Cloud providers ignore it: there the job runs as the agent's user
     * on the instance. */
    int64_t run_uid;
    /* Appended: a gang's agent tokens, `count` of them in rank order (each
     * member's agent has its own, as `agent_token` is a single instance's);
     * NULL for a single instance, and when struct_size does not cover it. */
    const char *const *agent_tokens;
    /* Appended: a replacement member (gang.restart: replace_lost): launch
     * one instance (count 1) to take rank `join_rank` of the running gang
     * `join_gang` (its id, gang.h; the lost member's id may still be in
     * it), placed with the others (their zone; AWS: their placement
     * group) and tagged with the gang's `token` and that rank, its agent
     * given `agent_token`. The answer is the new member alone, whose id
     * ebbd puts in the gang's at that rank. NULL for any other launch, and
     * when struct_size does not cover it; a provider without
     * EBB_PROVIDER_GANG_REPLACE refuses it with EBB_EINVAL. */
    const char *join_gang;
    unsigned join_rank;
};

enum ebb_instance_event_kind {
    EBB_EVENT_RUNNING = 0,     /* the instance is up; its overhead begins */
    EBB_EVENT_NOTICE = 1,      /* it will be taken away at `deadline` */
    EBB_EVENT_LOST = 2,        /* it is gone (preempted or failed) */
    EBB_EVENT_EXITED = 3,      /* its job ended with `exit_status` */
    EBB_EVENT_PROGRESS = 4,    /* the job has done `work_done` here so far */
    EBB_EVENT_CHECKPOINT = 5,  /* a checkpoint holding `work_done` is complete */
};

/* exit_status of a job that exited because it was asked to stop, after
 * writing its checkpoint. */
#define EBB_EXIT_STOPPED (-1)
/* exit_status of a job whose program could not be started at all (no
 * such program, its working directory missing); `reason` says why. ebbd
 * fails the job at once: starting it again would fail the same way. */
#define EBB_EXIT_NOT_STARTED (-2)

struct ebb_instance_event {
    uint32_t struct_size; /* sizeof(struct ebb_instance_event) in the plugin */
    enum ebb_instance_event_kind kind;
    const char *instance_id;
    const char *token;
    ebb_time_ms at;
    ebb_time_ms deadline;      /* NOTICE: when the instance goes */
    int exit_status;           /* EXITED: the job's status, EBB_EXIT_STOPPED
                                * or EBB_EXIT_NOT_STARTED */
    /* PROGRESS, CHECKPOINT: reference work done on this instance since it
     * started (not counting the checkpoint it resumed from). */
    ebb_dur_ms work_done;
    const char *reason;        /* human words, e.g. "spot capacity reclaimed" */
    /* Appended: CHECKPOINT: where it is; NULL: unknown, also when
     * struct_size does not cover it. */
    const char *checkpoint_path;
    /* Appended: the gang member (its rank) a NOTICE or LOST is about: the
     * others run on; -1: the whole instance, also when struct_size does not
     * cover it. */
    int32_t rank;
};

/* The sizes of the first versions: the least struct_size a reader
 * accepts. */
#define EBB_SHAPE_SIZE_V1                                                     \
    (offsetof(struct ebb_shape, memory_gb) + sizeof(double))
#define EBB_SERIES_KEY_SIZE_V1                                                \
    (offsetof(struct ebb_series_key, product) + sizeof(const char *))
#define EBB_PRICE_SIZE_V1                                                     \
    (offsetof(struct ebb_price, currency) + sizeof(const char *))
#define EBB_INSTANCE_SIZE_V1                                                  \
    (offsetof(struct ebb_instance, billing) + sizeof(enum ebb_billing))
#define EBB_LAUNCH_SIZE_V1                                                    \
    (offsetof(struct ebb_launch, argc) + sizeof(size_t))
#define EBB_INSTANCE_EVENT_SIZE_V1                                            \
    (offsetof(struct ebb_instance_event, reason) + sizeof(const char *))

#endif
