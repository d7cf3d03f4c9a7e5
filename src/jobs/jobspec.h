/* Job specs: what `ebb submit job.yaml` sends to ebbd, and the workloads
 * that `ebb backtest --workload W.yaml` replays (examples/jobs/ shows both,
 * annotated).
 *
 * A job spec is one YAML mapping. The key names are fixed (users' scripts
 * depend on them): name, run, shell, work, deadline, budget,
 * restart_overhead, resources, market, checkpoint, policy, team,
 * max_retries, env, submit, run_as, notify, workdir, workdir_exclude,
 * priority, stall_after, min_gpu_util, nodes, gang. Every problem is reported once, as
 * "file:line: message" naming the line of the bad value (or of the mapping
 * for a missing key), e.g.
 *   job.yaml:7: job: unknown key "deadine" (known: name, run, ...)
 *   job.yaml:4: work: "8" is not a duration (no unit; example: 90s, 5m, 1h30m)
 *   job.yaml:5: can never finish: deadline 2h is shorter than work 8h plus
 *       restart overhead 5m
 *
 * A spec owns copies of everything it holds: the YAML document it came from
 * can be freed as soon as the spec is built.
 */
#ifndef EBB_JOBSPEC_H
#define EBB_JOBSPEC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ebb/common.h>
#include <ebb/config.h>
#include <ebb/diag.h>
#include <ebb/gang.h>
#include <ebb/policy.h>

#include "base/yaml_doc.h"
#include "base/yaml_read.h"

/* Defaults and limits of a spec's values. */
#define EBB__JOB_RESTART_OVERHEAD_DEFAULT (5 * EBB_MS_PER_MINUTE)
/* The GPU guard's window when the spec gives no stall_after. */
#define EBB__JOB_GPU_WINDOW_DEFAULT (10 * EBB_MS_PER_MINUTE)
/* The shortest stall_after a spec may give. */
#define EBB__JOB_STALL_AFTER_MIN EBB_MS_PER_MINUTE
#define EBB__JOB_GRACE_DEFAULT (90 * EBB_MS_PER_SECOND)
#define EBB__JOB_GRACE_MAX (10 * EBB_MS_PER_MINUTE)
/* checkpoint.every: 0 (none), or from EVERY_MIN to EVERY_MAX. The floor is
 * the agent's own (it never signals a job more often than once a second of
 * wall time): 1ms asked for a storm of checkpoint signals that killed
 * jobs, and a job signalled faster than it writes checkpoints does
 * nothing else. */
#define EBB__JOB_EVERY_MIN EBB_MS_PER_SECOND
#define EBB__JOB_EVERY_MAX (7 * EBB_MS_PER_DAY)
#define EBB__JOB_MAX_RETRIES_DEFAULT 2
#define EBB__JOB_MAX_RETRIES_MAX 1000
#define EBB__JOB_GPU_COUNT_MAX 1024
/* Memory per GPU a job may ask for, in GB: well above the largest GPUs
 * made (192 GB in 2025), so that only a value no instance can ever have
 * is refused (the catalog seldom says how much memory a type's GPUs have,
 * so the submit check cannot judge it against offers). */
#define EBB__JOB_GPU_MEMORY_GB_MAX 1024
#define EBB__JOB_NAME_MAX 64
/* priority: a name or an integer from 0 to EBB__JOB_PRIORITY_MAX; the
 * names stand for these (docs/budgets.md "Priorities"). */
#define EBB__JOB_PRIORITY_LOW 250
#define EBB__JOB_PRIORITY_NORMAL 500
#define EBB__JOB_PRIORITY_HIGH 750
#define EBB__JOB_PRIORITY_URGENT 1000
#define EBB__JOB_PRIORITY_MAX 1000
/* nodes: a gang's size (docs/gangs.md); 1 is a single instance. */
#define EBB__JOB_NODES_MAX EBB_GANG_MAX
/* resources.network: the most a spec may ask for, in Gbps (above any NIC
 * sold: 3200 Gbps is p5's EFA). */
#define EBB__JOB_NETWORK_GBPS_MAX 10000.0

/* Where the job may run. Empty lists mean "anywhere"; gpu_count 0 means
 * no GPU requirement (a `gpu:` mapping without `count` means 1). */
struct ebb__job_resources {
    struct ebb_string_list instance_types, zones, regions, providers;
    char *gpu_model;      /* NULL: any model */
    int gpu_count;        /* per instance; 0 when no `gpu:` was given */
    double gpu_memory_gb; /* per GPU; 0: any */
    /* resources.network: the least bandwidth between a gang's nodes, in
     * Gbps (the catalog's network_gbps of a type); 0: any. */
    double network_gbps;
};

/* gang.restart: what a gang does when it loses a node (docs/gangs.md). */
enum ebb__gang_restart {
    EBB__GANG_WHOLE = 0,        /* every node checkpoints, the gang resumes together */
    EBB__GANG_REPLACE_LOST = 1, /* only the lost node is replaced (elastic jobs) */
};

/* How the agent asks the job to save its state. */
struct ebb__job_checkpoint {
    char *dir;            /* NULL: ebb chooses (EBB_CHECKPOINT_DIR) */
    int signal;           /* SIGUSR1 unless set */
    char signal_name[16]; /* canonical: "SIGUSR1" */
    ebb_dur_ms grace;     /* time allowed to finish a checkpoint; <= 10m */
    ebb_dur_ms every;     /* periodic checkpoint interval; 0: none */
    /* The ebb.yaml store (stores:) its checkpoints go to; NULL: none, they
     * stay on the instance's disk. Checked against ebb.yaml at submit. */
    char *store;
    int encrypt;          /* 1 unless `encrypt: false` (only with a store) */
    int has_encrypt;      /* `encrypt:` was written */
    int keep;             /* durable checkpoints kept in the store: 1..100 */
    int store_line, encrypt_line; /* 0: unknown or absent, for ebbd's refusals */
};

/* checkpoint.keep: its default and bounds. */
#define EBB__JOB_KEEP_DEFAULT 3
#define EBB__JOB_KEEP_MAX 100

struct ebb__job_spec {
    char *name;
    /* NULL-terminated. Without shell, the program and its arguments (argc
     * >= 1), exec'd directly. With shell, argc is 1 and argv[0] is the
     * script the runner gives to `/bin/sh -c`. */
    char **argv;
    size_t argc;
    int shell;

    ebb_dur_ms work; /* on the reference instance; > 0 */
    /* deadline: absolute (deadline_at) or relative to submission
     * (deadline_in); see ebb__jobspec_deadline(). */
    int has_deadline;
    int deadline_is_relative;
    ebb_time_ms deadline_at;
    ebb_dur_ms deadline_in;

    int has_budget; /* 0: no cap */
    struct ebb_money budget;
    ebb_dur_ms restart_overhead;
    /* The stall guard (docs/agent.md "Stall guard"): a job whose progress
     * stops this long is moved; 0: the engine's default, from the job's
     * own interval between progress lines. */
    ebb_dur_ms stall_after;
    /* The GPU guard (same section): a job whose host's GPU utilisation
     * stays under this percentage (0..100) for stall_after (default
     * EBB__JOB_GPU_WINDOW_DEFAULT) is moved; 0: off. */
    int min_gpu_util;

    struct ebb__job_resources resources;
    enum ebb_job_market market;
    struct ebb__job_checkpoint checkpoint;

    char *policy; /* NULL: ebbd's default_policy */
    char *team;   /* NULL: none */
    /* The user a local job runs as, when not its owner (root's or an
     * admin's choice, checked by ebbd at submit); NULL: its owner. */
    char *run_as;
    int max_retries;
    /* 0 to EBB__JOB_PRIORITY_MAX; EBB__JOB_PRIORITY_NORMAL unless given. */
    int priority;
    /* nodes: instances that run the job together, 1..EBB__JOB_NODES_MAX
     * (1 unless given); gang.restart: how a gang of 2 or more restarts. */
    int nodes;
    enum ebb__gang_restart gang_restart;
    /* notify: the ebb.yaml channels (notify:) its events go to. has_notify
     * 0: the key is absent and notify.defaults apply; 1: exactly these
     * (an empty list: none). Checked against ebb.yaml at submit. */
    int has_notify;
    struct ebb_string_list notify;
    char **env;   /* "NAME=value", NULL-terminated; NULL when n_env is 0 */
    size_t n_env;
    /* workdir: the directory packed at submit and unpacked as the job's
     * working directory on each instance, as written (relative to the spec
     * file's directory); NULL: absent. workdir_exclude: what the packing
     * leaves out (see ebb__workdir_pattern_check()). */
    char *workdir_src;
    struct ebb_string_list workdir_exclude;

    int has_submit; /* workloads only */
    ebb_time_ms submit;

    char *file; /* where the spec was read from, for later messages */
    int line;   /* line of its mapping; 0 when unknown */
    /* Lines of `policy:` and `team:` (0: unknown or absent), for the
     * messages ebbd gives when it cannot honour them at submit. */
    int policy_line, team_line;
    int workdir_line; /* of `workdir:`, for the packing's messages */
};

/* Reads the job spec in the file at `path` (the path is the name in
 * messages). The spec must not have `submit:` (ebb submit uses the time of
 * submission). On success fills *out, which the caller frees with
 * ebb__jobspec_free(), and returns 0. Returns EBB_ECONFIG for bad content,
 * EBB_ENOTFOUND / EBB_EIO when the file cannot be read, EBB_ENOMEM; then
 * *out is zeroed, nothing leaks and d says "file:line: what". */
int ebb__jobspec_load_file(const char *path, struct ebb__job_spec *out,
                           struct ebb_diag *d);

/* As ebb__jobspec_load_file() for `len` bytes at `buf`; `name` (copied)
 * is the file name shown in messages. This is how ebbd reads what users
 * send, so it holds the text to ebb__ylimits_spec (base/yaml_doc.h: 256 KiB,
 * 20000 nodes, 1000 keys per mapping or items per list, 16 levels;
 * EBB_ECONFIG beyond). */
int ebb__jobspec_load_buffer(const char *name, const char *buf, size_t len,
                             struct ebb__job_spec *out, struct ebb_diag *d);

/* Builds a spec from a YAML mapping `node` (borrowed; nothing of it is kept).
 * With want_submit, `submit:` is required (a workload's job); without, it
 * is an error. Returns as ebb__jobspec_load_buffer(). */
int ebb__jobspec_from_node(const struct ebb__ynode *node, int want_submit,
                           struct ebb__job_spec *out, struct ebb_diag *d);

/* As ebb__jobspec_from_node(), with `defaults` (a mapping, or NULL) under
 * the job's own keys: a key the job leaves out (or sets to null) is taken
 * from defaults; the mappings resources, resources.gpu, checkpoint and env
 * are merged key by key the same way; lists and other values are replaced
 * whole. `name` may not be given a default. Used for workloads. */
int ebb__jobspec_from_node_defaults(const struct ebb__ynode *node,
                                    const struct ebb__ynode *defaults,
                                    int want_submit,
                                    struct ebb__job_spec *out,
                                    struct ebb_diag *d);

/* Frees everything the spec owns and zeroes it. A zeroed spec and NULL are
 * allowed. */
void ebb__jobspec_free(struct ebb__job_spec *spec);

/* The absolute deadline of a spec submitted at `submitted_at`: deadline_at,
 * or submitted_at + deadline_in for a relative one. 0 when the spec has no
 * deadline. */
ebb_time_ms ebb__jobspec_deadline(const struct ebb__job_spec *spec,
                                  ebb_time_ms submitted_at);

/* Every field as JSON, keys in the order of the YAML keys: times as
 * "2026-12-01T06:00:00Z", durations as "8h", money as "40.00 USD", absent
 * optional values as null, plus "file" and "line". Returns a new
 * reference (caller json_decref()s it), or NULL when out of memory. */
json_t *ebb__jobspec_to_json(const struct ebb__job_spec *spec);

/* Reads what ebb__jobspec_to_json() writes (for specs stored in the
 * database or sent over the API), with the same checks and defaults as the
 * YAML reader; absent or null optional keys take their defaults, unknown
 * keys are rejected. `j` is borrowed. Returns 0 and fills *out (free with
 * ebb__jobspec_free()), or EBB_ECONFIG / EBB_ENOMEM with *out zeroed and
 * d->msg starting "job spec JSON: ". */
int ebb__jobspec_from_json(const json_t *j, struct ebb__job_spec *out,
                           struct ebb_diag *d);

/* ---- shared by the YAML and JSON readers -------------------------------- */

/* "spot", "on-demand" or "spot-fallback". Static. */
const char *ebb__job_market_name(enum ebb_job_market m);

/* Parses a market name. Returns 0 or EBB_EINVAL. */
int ebb__job_market_parse(const char *s, enum ebb_job_market *out);

/* Parses a priority: "low", "normal", "high", "urgent" or an integer from
 * 0 to EBB__JOB_PRIORITY_MAX written in decimal. Returns 0 or EBB_EINVAL. */
int ebb__job_priority_parse(const char *s, int *out);

/* The name of priority `p` ("high"), or NULL when no name stands for it. */
const char *ebb__job_priority_name(int p);

/* Parses a bandwidth: a number more than 0 and a unit, Mbps, Gbps or Tbps
 * (any case, a space allowed between): "25Gbps" is 25. Into *gbps;
 * returns 0 or EBB_EINVAL (no unit, not a number, more than
 * EBB__JOB_NETWORK_GBPS_MAX). */
int ebb__job_network_parse(const char *s, double *gbps);

/* "whole" or "replace_lost". Static. */
const char *ebb__gang_restart_name(enum ebb__gang_restart r);
/* Parses a gang.restart name. Returns 0 or EBB_EINVAL. */
int ebb__gang_restart_parse(const char *s, enum ebb__gang_restart *out);

/* Parses a checkpoint signal: "SIGUSR1" or "USR1" (any case) for SIGUSR1,
 * SIGUSR2, SIGTERM, SIGINT, SIGHUP, SIGQUIT. Stores the number and the
 * canonical name ("SIGUSR1", fits in 16 bytes). Returns 0 or EBB_EINVAL. */
int ebb__job_signal_parse(const char *s, int *signo, char name[16]);

/* The keys of a job spec and of its mappings, in documentation order,
 * each list ending with NULL. */
extern const char *const ebb__jobspec_keys[];
extern const char *const ebb__jobspec_resource_keys[];
extern const char *const ebb__jobspec_gpu_keys[];
extern const char *const ebb__jobspec_checkpoint_keys[];
extern const char *const ebb__jobspec_gang_keys[];

/* 1 when `s` is a valid policy or team name: 1 to 64 letters, digits, -
 * and _ (what ebb.yaml allows for them). */
int ebb__job_ident_valid(const char *s);

/* 1 when the `len` bytes at `s` are an environment variable name: letters,
 * digits and _, not starting with a digit. */
int ebb__job_env_name_valid(const char *s, size_t len);

/* 1 when `s` is a user name run_as may hold: 1 to 32 of [A-Za-z0-9._-],
 * not starting with "-" (POSIX's portable user names). */
int ebb__job_user_valid(const char *s);

/* 1 when `s` is a valid job name: 1 to 64 of [A-Za-z0-9._-], and neither
 * "." nor ".." (names become directory names). */
int ebb__job_name_valid(const char *s);

/* The most workdir_exclude patterns, and the longest. */
#define EBB__WORKDIR_EXCLUDE_MAX 1000
#define EBB__WORKDIR_PATTERN_MAX 255

/* Whether `p` is a workdir_exclude pattern: gitignore's simple forms, a
 * name or glob (`.git`, `*.pt`: any file or directory of that name, at
 * any depth), one ending in "/" (`data/`: directories only), one holding
 * "/" (`src/gen/x.c`, globs allowed: that path from the workdir; a
 * leading "/" anchors it too). Globs are fnmatch(3)'s (*, ?, [...]; * never crosses a "/").
 * Refused, with why (static): "", ".", "..", a ".." part, "!" negation,
 * "**", longer than EBB__WORKDIR_PATTERN_MAX. Returns 1 or 0. */
int ebb__workdir_pattern_check(const char *p, const char **why);

/* Whether `path` (relative to the workdir, "a/b/c", no leading "./"), a
 * directory when is_dir, is left out by `exclude`. A directory left out
 * takes everything below it. */
int ebb__workdir_excluded(const struct ebb_string_list *exclude, const char *path,
                          int is_dir);

/* Where the values that the cross-field checks look at were written, for
 * ebb__jobspec_check(). A line of 0 means "unknown". */
struct ebb__jobspec_where {
    const char *file; /* NULL: no file (messages start with `prefix`) */
    const char *prefix; /* used when file is NULL, e.g. "job spec JSON" */
    int job, work, deadline, grace, every, dir, nodes;
};

/* The checks that involve more than one value: work > 0, grace <= 10m,
 * every 0 or within EBB__JOB_EVERY_MIN..MAX, nodes within
 * 1..EBB__JOB_NODES_MAX (replace_lost only for a gang), a checkpoint dir whose ".."
 * never climbs out of where it starts, deadline after submit, and a deadline that leaves time for
 * the work plus one restart. Returns 0 or EBB_ECONFIG with d set. */
int ebb__jobspec_check(const struct ebb__job_spec *spec,
                       const struct ebb__jobspec_where *where,
                       struct ebb_diag *d);

/* ---- internal to src/jobspec*.c: reading one YAML value ----------------- */

/* A mapping seen through workload defaults: `own` (the job's, may be NULL)
 * over `dflt` (the defaults', may be NULL). */
struct ebb__jy_layer {
    const struct ebb__ynode *own;
    const struct ebb__ynode *dflt;
};

/* Each of these checks one node and, on a problem, sets d to
 * "file:line: what: ..." at that node and returns EBB_ECONFIG (EBB_ENOMEM
 * when out of memory); the readers that know nothing of jobs are
 * yaml_read.h's ebb__yread_*. Strings they store are newly allocated. */

/* The value of `key`: the job's own unless absent or null, else the
 * default's unless absent or null, else NULL. Borrowed. */
const struct ebb__ynode *ebb__jy_get(const struct ebb__jy_layer *l,
                                     const char *key);

/* The layer of the mappings under `key` in both of l's mappings (a null
 * value counts as absent), each required to be a mapping and, unless
 * `keys` is NULL, to hold only those keys. */
int ebb__jy_sub(const struct ebb__jy_layer *l, const char *key,
                const char *const *keys, const char *what,
                struct ebb__jy_layer *out, struct ebb_diag *d);

/* A policy or team name (see ebb__job_ident_valid()) into *out. */
int ebb__jy_ident(const struct ebb__ynode *n, const char *what,
                  const char *example, char **out, struct ebb_diag *d);

/* An ISO 8601 time into *out. */
int ebb__jy_time(const struct ebb__ynode *n, const char *what,
                 ebb_time_ms *out, struct ebb_diag *d);

/* ---- workloads for `ebb backtest` --------------------------------------- */

/* A workload file is a mapping with `jobs:` (a list of job specs, each
 * with `submit:`) and optionally `defaults:` (a mapping of job keys applied
 * under every job's own keys, see ebb__jobspec_from_node_defaults()). Job
 * names are unique within a workload. */
struct ebb__workload {
    struct ebb__job_spec *jobs; /* in file order */
    size_t n;
    char *file;
};

/* Reads the workload file at `path`. On success *out is a new workload the
 * caller frees with ebb__workload_free(); the YAML document is freed before
 * this returns. Returns 0, EBB_ECONFIG, EBB_ENOTFOUND, EBB_EIO or
 * EBB_ENOMEM; on failure *out is NULL, nothing leaks and d says
 * "file:line: what". */
int ebb__workload_load_file(const char *path, struct ebb__workload **out,
                            struct ebb_diag *d);

/* As ebb__workload_load_file() for `len` bytes at `buf`; `name` (copied)
 * is the file name shown in messages. */
int ebb__workload_load_buffer(const char *name, const char *buf, size_t len,
                              struct ebb__workload **out, struct ebb_diag *d);

/* Frees the workload and its jobs. NULL is allowed. */
void ebb__workload_free(struct ebb__workload *w);

#endif
