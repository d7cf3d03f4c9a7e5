/* The job document: what GET /v1/agent/job answers (docs/agent-protocol.md). */
#ifndef EBB_AGENT_JOBDOC_H
#define EBB_AGENT_JOBDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* The packed workdir to unpack as the job's working directory
 * (workdir.c); url NULL: none. */
struct agent_workdir_archive {
    char *url;            /* file:///PATH or a presigned http(s) GET */
    char sha256[65];      /* of the plaintext tar, lowercase hex */
    uint64_t size;        /* of the plaintext tar */
    uint64_t stored_size; /* of the stored object */
    char key[65];         /* hex; "": stored unencrypted */
};

/* The job's checkpoint store, when it has one (docs/agent-protocol.md):
 * the agent uploads each complete checkpoint through presigned URLs ebbd
 * hands out, and downloads the newest durable one at the start. */
enum agent_store_kind { AGENT_STORE_S3, AGENT_STORE_OSS, AGENT_STORE_FILE };

#define AGENT_PART_MIN ((int64_t)5 << 20)   /* S3's smallest part */
#define AGENT_PART_MAX ((int64_t)5 << 30)   /* and its largest */
#define AGENT_PARALLEL_MAX 16

struct agent_store {
    char *name;
    enum agent_store_kind kind;
    bool encrypt;
    char key_hex[65];     /* 64 hex digits (required when encrypt), or "" */
    int64_t key_version;
    int64_t part_size;    /* AGENT_PART_MIN..AGENT_PART_MAX */
    int parallel;         /* 1..AGENT_PARALLEL_MAX transfers at once */
};

struct agent_jobdoc {
    char *job_id;
    char *instance_id;
    char **argv;          /* NULL-terminated, at least one element */
    bool shell;           /* run argv[0] with /bin/sh -c */
    char **env;           /* NULL-terminated "NAME=value" strings */
    char *workdir;        /* "" = the agent's own */
    char *ckpt_dir;       /* "": the agent chooses (below) */
    char *ckpt_default_dir; /* where, without a disk of the instance's own;
                             * "": <disk>/checkpoints/<job id> */
    char *signal_name;    /* checkpoint-and-stop signal, "SIGUSR1" */
    int signal;
    char *periodic_signal_name; /* checkpoint-and-continue signal, "SIGUSR2" */
    int periodic_signal;
    int64_t every_ms;     /* 0: no periodic checkpoints */
    int64_t grace_ms;
    int keep;             /* complete checkpoints kept, >= 1 */
    bool has_resume;      /* checkpoint.resume given (a gang member) */
    char *resume;         /* its name: the one to resume from, "": none */
    int gang_nodes;       /* gang.nodes, 0: not a gang member */
    int gang_rank;        /* gang.rank, 0..gang_nodes-1 */
    char *progress_file;  /* "" = none */
    int64_t heartbeat_ms;
    struct agent_workdir_archive workdir_archive;
    bool has_store;
    struct agent_store store;  /* when has_store */
};

/* Parses the JSON `text`. Absent optional fields take the protocol's
 * defaults (SIGUSR1, SIGUSR2, no periodic checkpoints, 120 s grace, keep 3,
 * heartbeat 5 s). checkpoint.dir may be "" only for a job with a store
 * (the agent then picks <disk>/checkpoints/<job id>). Returns 0, or EBB_EINVAL with a sentence in `err` saying
 * which field is wrong; `*doc` needs agent_jobdoc_free() either way. */
int agent_jobdoc_parse(const char *text, size_t len, struct agent_jobdoc *doc,
                       char *err, size_t err_size);

void agent_jobdoc_free(struct agent_jobdoc *doc);

/* What ebbd's env in its answer to `host` may hold. */
#define AGENT_ENV_MAX 64
#define AGENT_ENV_VALUE_MAX (64 * 1024)

/* The JSON object `env` (NULL or null: none) as NULL-terminated
 * "NAME=value" strings in `*out` (agent_strv_free; set even on failure).
 * Names must be non-empty without '=' and values strings; `strict`
 * (ebbd's answer to `host`) also wants names of letters, digits and '_'
 * not starting with a digit, at most AGENT_ENV_MAX of them, and values of
 * at most AGENT_ENV_VALUE_MAX bytes without NUL. `what` names the object
 * in errors ("job document: env"). Returns 0, EBB_ENOMEM, or EBB_EINVAL
 * with a sentence in `err`. */
int agent_env_parse(json_t *env, const char *what, bool strict, char ***out, char *err,
                    size_t err_size);

void agent_strv_free(char **v);

/* The number of a signal named "SIGUSR1" or "USR1" (SIGUSR1, SIGUSR2,
 * SIGTERM, SIGINT, SIGHUP, SIGQUIT), or 0 when it is none of these. */
int agent_signal_from_name(const char *name);

#endif
