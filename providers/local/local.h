/* The `local` provider: each "instance" is a process tree on this machine,
 * ebb-agent and the job it runs, in its own session, started and stopped
 * through the provider ABI with the same idempotency tokens as a cloud.
 *
 * Each instance has a state file PLUGIN_DIR/<key>.json (pid, process
 * start time, job id), written before launch() answers, so an ebbd started
 * again finds, lists and terminates instances it launched before it died;
 * the process start time guards against a recycled pid. Its key is its
 * launch's token; a gang (ebb/gang.h) is one instance per member, member
 * k's key "<token>+<k>", each with its own agent, agent token, state file,
 * disk and metadata path, reported as one instance. A join
 * (ebb_launch.join_gang) starts a new member under the key of one that
 * ended.
 *
 * With `disk: private` (the default) each instance also has a directory
 * of its own, PLUGIN_DIR/disks/<key>, handed to the agent as --disk and
 * removed when the instance ends (local_disk.c).
 */
#ifndef EBB_PROVIDER_LOCAL_H
#define EBB_PROVIDER_LOCAL_H

#include <sys/types.h>

#include <ebb/gang.h>
#include <ebb/list.h>
#include <ebb/ops.h>
#include <ebb/provider.h>
#include <ebb/runas.h>

struct local_cfg {
    char *agent;             /* path of ebb-agent */
    int64_t slots;           /* instances at once */
    ebb_dur_ms watch_interval;
    struct ebb_money price;  /* what an hour of this machine is worth */
    char *disk;              /* "private" (a disk per instance) or "shared" */
};

/* One instance, or one member of a gang, as its state file says. */
struct local_inst {
    char token[96];          /* its launch's */
    char key[104];           /* token, or a gang's member's "<token>+<rank>" */
    char id[112];            /* "local-" + key */
    unsigned rank, size;     /* its rank in a gang of `size`; 1: single */
    char job_id[64];
    pid_t pid;               /* the agent; leader of its session and group */
    unsigned long long start_ticks; /* its start time, /proc/PID/stat field 22 */
    ebb_time_ms launched_at;
    int joined;              /* a replacement member, started by a join */
    int ours;                /* a child of this ebbd: reap with waitpid */
    int gone;                /* its processes are no more */
    int announce;            /* new: say RUNNING once its launch answered */
    struct ebb_list node;    /* in l->insts, newest first */
};

struct local {
    const struct ebb_host *host;
    const struct local_cfg *cfg;
    const char *dir;         /* plugin_dir(), NULL until first needed */
    char *agent;             /* the ebb-agent to run */
    struct ebb_list insts;   /* struct local_inst */
    struct ebb_ops ops;      /* struct local_call (local.c): pending callbacks */
    int64_t watch_timer;
    int loaded;              /* state files read */
    int private_disks;       /* cfg->disk is "private" */
    /* Children killed but not yet reaped (a terminated instance's agent
     * exits only once the SIGKILL lands): waited for without blocking on
     * each watch, so none stays a zombie. */
    pid_t *reap;
    size_t n_reap, cap_reap;
};

/* local_proc.c */
/* Sets l->agent: the configured path, or ebb-agent beside the running
 * program; it must be executable. Returns 0, or EBB_ECONFIG (logged). */
int local_find_agent(struct local *l);
/* Starts ebb-agent for `inst` of launch `req` in a new session as the user
 * `who` (see ebb/runas.h; prepared by the caller), its enrolment token
 * `agent_token` in its environment, with its own disk as
 * --disk when disks are private (local_disk_create), told to trust ebbd by
 * the request's CA (PEM text, written to DIR/ebbd-ca.pem and handed to the
 * agent as an open descriptor, since the job's user may not enter ebbd's
 * state directory) or else its pin. Returns 0, or EBB_EPERM (the user
 * cannot be become) or EBB_EIO with the reason logged. */
int local_spawn(struct local *l, struct local_inst *inst, const struct ebb_launch *req,
                const char *agent_token, const struct ebb_runas *who);
/* Whether inst's agent still runs (reaping it when it is our child). */
int local_alive(struct local_inst *inst);
/* Reaps child `pid` now if it has exited, else on a later local_reap(). */
void local_reap_later(struct local *l, pid_t pid);
/* Reaps every child handed to local_reap_later() that has exited since. */
void local_reap(struct local *l);
/* Kills the instance's whole process tree: the agent's group, the groups
 * of its children (the job, in a session of its own) and of every process
 * that carries its EBB_LOCAL_INSTANCE mark. */
void local_kill(const struct local_inst *inst);
/* The start time of process `pid` in clock ticks since boot; 0 if none. */
unsigned long long local_start_ticks(pid_t pid);

/* local_disk.c: private disks, PLUGIN_DIR/disks/<key> */
/* Makes inst's disk, empty, owned by `who`, mode 0700; *path (caller
 * frees) is where, or NULL when `who` could not reach it (the instance
 * then runs without one, logged). Returns 0, or EBB_EIO, logged. */
int local_disk_create(struct local *l, const struct local_inst *inst,
                      const struct ebb_runas *who, char **path);
/* Removes the disk of instance `key` with all in it, if there is one
 * (links removed, never followed). */
void local_disk_remove(struct local *l, const char *key);
/* Removes every disk that no instance of l->insts owns (their instances
 * ended while no ebbd ran). */
void local_disk_sweep(struct local *l);

/* local.c: the instance launched with `token` (by_id 0; a gang's member
 * with it), or the instance whose id is `id` (by_id 1); NULL when none. */
struct local_inst *local_find(struct local *l, const char *token_or_id, int by_id);

/* local_join.c: replacement members (ebb_launch.join_gang; refusals
 * through ebb_gang_join_refuse) */
/* The gang a join goes into, found by the members of req->join_gang still
 * here: 0 with its `size` and *at, the member in the join's rank now
 * (NULL when none; one that still runs is one a join started: the join
 * is a repeat), or EBB_EINVAL (logged): a count above 1, no member named
 * is here, it is a single instance, the token is not the gang's, the rank
 * is out of range, no other member runs, or the rank's own member still
 * runs. */
int local_join_target(struct local *l, const struct ebb_launch *req, unsigned *size,
                      struct local_inst **at);

/* local_state.c */
int local_state_save(struct local *l, const struct local_inst *inst);
void local_state_remove(struct local *l, const struct local_inst *inst);
/* Reads every state file of PLUGIN_DIR into l->insts (once). */
void local_state_load(struct local *l);

#endif
