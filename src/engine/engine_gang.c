/* A gang's nodes (docs/gangs.md): their agents' tokens, the checks that
 * every node is alike before the job starts, the environment each node's
 * job gets, and when the gang's checkpoint and exit are whole. Verdicts
 * and bookkeeping only: engine_agent.c acts on them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/buf.h>
#include <ebb/gang.h>

#include "engine/internal.h"

int ebb__gang_nodes_alloc(struct ebb__attempt *a, unsigned n)
{
    a->nodes = calloc(n, sizeof(*a->nodes));
    if (a->nodes == NULL)
        return EBB_ENOMEM;
    a->n_nodes = n;
    return 0;
}

void ebb__gang_env_free(struct ebb__attempt *a)
{
    for (size_t r = 0; a->gang_env != NULL && r < a->n_nodes; r++) {
        for (size_t i = 0; a->gang_env[r] != NULL && i < a->n_gang_env; i++)
            free(a->gang_env[r][i]);
        free(a->gang_env[r]);
    }
    free(a->gang_env);
    a->gang_env = NULL;
}

void ebb__gang_free(struct ebb__attempt *a)
{
    ebb__gang_env_free(a);
    free(a->nodes);
    a->nodes = NULL;
    a->n_nodes = 0;
}

void ebb__gang_agent_token(const struct ebb__attempt *a, unsigned rank, char *out,
                           size_t len)
{
    if (a->n_nodes > 1)
        snprintf(out, len, "%s" EBB__GANG_RANK_SEP "%u", a->token, rank);
    else
        snprintf(out, len, "%s", a->token);
}

int ebb__gang_split_token(const char *agent_token, char token[EBB__TOKEN_SIZE],
                          unsigned *rank)
{
    const char *plus = strrchr(agent_token, EBB__GANG_RANK_SEP[0]);
    size_t n = plus != NULL ? (size_t)(plus - agent_token) : strlen(agent_token);
    if (n == 0 || n >= EBB__TOKEN_SIZE)
        return EBB_EINVAL;
    *rank = 0;
    if (plus != NULL) {
        const char *d = plus + 1;
        size_t nd = strlen(d);
        if (nd == 0 || nd > 2 || strspn(d, "0123456789") != nd || (nd > 1 && d[0] == '0'))
            return EBB_EINVAL;
        for (size_t i = 0; i < nd; i++)
            *rank = *rank * 10 + (unsigned)(d[i] - '0');
    }
    memcpy(token, agent_token, n);
    token[n] = '\0';
    return plus != NULL ? 1 : 0;
}

void ebb__gang_hashes(const struct ebb__attempt *a, char *out, size_t len)
{
    size_t at = 0;
    out[0] = '\0';
    for (unsigned r = 0; r < a->n_nodes && at < len; r++)
        at += (size_t)snprintf(out + at, len - at, "%s%s", r > 0 ? "," : "",
                               a->nodes[r].agent_hash);
}

int ebb__gang_hashes_parse(struct ebb__attempt *a, const char *joined)
{
    const char *p = joined != NULL ? joined : "";
    for (unsigned r = 0; r < a->n_nodes; r++) {
        const char *end = strchr(p, ',');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        if (n >= sizeof(a->nodes[r].agent_hash))
            return EBB_EINVAL;
        memcpy(a->nodes[r].agent_hash, p, n);
        a->nodes[r].agent_hash[n] = '\0';
        if (end == NULL && r + 1 < a->n_nodes)
            return EBB_EINVAL;
        p = end != NULL ? end + 1 : p + n;
    }
    return 0;
}

/* ---- a lost node's replacement ------------------------------------------- */

int ebb__gang_replacing(const struct ebb__attempt *a)
{
    for (unsigned r = 0; r < a->n_nodes; r++)
        if (a->nodes[r].replacing_at != 0)
            return (int)r;
    return -1;
}

char *ebb__gang_splice(const char *ids, unsigned rank, const char *id)
{
    struct ebb_buf b = {0};
    size_t n = ebb_gang_size(ids);
    for (size_t r = 0; r < n || r <= rank; r++) {
        char member[256];
        if (r == rank)
            ebb_gang_append(&b, id);
        else if (r < n && ebb_gang_member(ids, r, member, sizeof(member)) == 0)
            ebb_gang_append(&b, member);
    }
    if (b.failed) {
        ebb_buf_free(&b);
        return NULL;
    }
    return ebb_buf_take(&b);
}

int ebb__gang_node_renew(struct ebb__attempt *a, unsigned rank, ebb_time_ms now)
{
    struct ebb__node *n = &a->nodes[rank];
    struct ebb__node fresh = {.replacing_at = now};
    if (ebb__random_hex(fresh.agent_secret, sizeof(fresh.agent_secret)) != 0 ||
        ebb__enrol_secret_hash(fresh.agent_secret, fresh.agent_hash) != 0)
        return EBB_EIO;
    *n = fresh;
    return 0;
}

/* ---- the checks before the job starts ------------------------------------ */

void ebb__gang_note_host(struct ebb__attempt *a, unsigned rank,
                         const struct ebb__agent_report *r)
{
    struct ebb__node *n = &a->nodes[rank];
    n->host_reported = 1;
    n->n_gpus = r->nvidia_smi ? r->n_gpus : 0;
    snprintf(n->gpu_model, sizeof(n->gpu_model), "%s",
             r->nvidia_smi && r->gpu_model ? r->gpu_model : "");
    snprintf(n->driver, sizeof(n->driver), "%s", r->driver_version ? r->driver_version : "");
    snprintf(n->cuda, sizeof(n->cuda), "%s", r->cuda_version ? r->cuda_version : "");
    n->link_mbps = r->link_mbps;
    snprintf(n->addr, sizeof(n->addr), "%s", r->addr ? r->addr : "");
    n->port = r->port;
}

unsigned ebb__gang_hosts_reported(const struct ebb__attempt *a)
{
    unsigned k = 0;
    for (unsigned r = 0; r < a->n_nodes; r++)
        k += a->nodes[r].host_reported != 0;
    return k;
}

/* Node `r`'s `what` differs from node 0's: why, into why[len]. */
static int differs(const char *what, unsigned r, const char *mine, const char *first,
                   char *why, size_t len)
{
    if (strcmp(mine, first) == 0)
        return 0;
    snprintf(why, len, "the gang's nodes differ: node %u's %s is %s, node 0's %s", r,
             what, mine[0] ? mine : "unknown", first[0] ? first : "unknown");
    return 1;
}

int ebb__gang_check(const struct ebb__job *job, const struct ebb__attempt *a,
                    char *why, size_t len)
{
    const struct ebb__node *first = &a->nodes[0];
    double need_mbps = job->spec.resources.network_gbps * 1000.0;
    for (unsigned r = 0; r < a->n_nodes; r++) {
        const struct ebb__node *n = &a->nodes[r];
        if (n->addr[0] == '\0' || n->port <= 0) {
            snprintf(why, len, "node %u's agent gave no address for its peers", r);
            return 1;
        }
        if (n->n_gpus != first->n_gpus) {
            snprintf(why, len, "the gang's nodes differ: node %u has %zu GPUs, node 0 "
                     "%zu", r, n->n_gpus, first->n_gpus);
            return 1;
        }
        if (differs("GPU", r, n->gpu_model, first->gpu_model, why, len) ||
            differs("driver version", r, n->driver, first->driver, why, len) ||
            differs("CUDA version", r, n->cuda, first->cuda, why, len))
            return 1;
        if (need_mbps > 0 && n->link_mbps > 0 && (double)n->link_mbps < need_mbps) {
            snprintf(why, len, "node %u's network link is %lld Mbps, the job needs "
                     "%.0f (resources.network)", r, (long long)n->link_mbps, need_mbps);
            return 1;
        }
    }
    return 0;
}

/* ---- each node's environment --------------------------------------------- */

int ebb__gang_build_env(struct ebb__attempt *a)
{
    enum { N_VARS = 6 };
    ebb__gang_env_free(a);
    size_t nodes_len = 1;
    for (unsigned r = 0; r < a->n_nodes; r++)
        nodes_len += strlen(a->nodes[r].addr) + 16;
    char *nodes = calloc(1, nodes_len);
    a->gang_env = calloc(a->n_nodes, sizeof(*a->gang_env));
    if (nodes == NULL || a->gang_env == NULL) {
        free(nodes);
        free(a->gang_env);
        a->gang_env = NULL;
        return EBB_ENOMEM;
    }
    size_t at = 0;
    for (unsigned r = 0; r < a->n_nodes; r++) {
        const struct ebb__node *n = &a->nodes[r];
        /* An IPv6 address is bracketed, so that the port stays apart. */
        int v6 = strchr(n->addr, ':') != NULL;
        at += (size_t)snprintf(nodes + at, nodes_len - at, "%s%s%s%s:%d",
                               r > 0 ? "," : "", v6 ? "[" : "", n->addr,
                               v6 ? "]" : "", n->port);
    }
    a->n_gang_env = N_VARS;
    int rc = 0;
    for (unsigned r = 0; rc == 0 && r < a->n_nodes; r++) {
        char **env = calloc(N_VARS, sizeof(*env));
        a->gang_env[r] = env;
        if (env == NULL) {
            rc = EBB_ENOMEM;
            break;
        }
        env[0] = ebb_strfmt("MASTER_ADDR=%s", a->nodes[0].addr);
        env[1] = ebb_strfmt("MASTER_PORT=%d", a->nodes[0].port);
        env[2] = ebb_strfmt("NNODES=%u", a->n_nodes);
        env[3] = ebb_strfmt("NODE_RANK=%u", r);
        env[4] = ebb_strfmt("WORLD_SIZE=%u", a->n_nodes);
        env[5] = ebb_strfmt("EBB_NODES=%s", nodes);
        for (size_t i = 0; i < N_VARS; i++)
            if (env[i] == NULL)
                rc = EBB_ENOMEM;
    }
    free(nodes);
    if (rc != 0)
        ebb__gang_env_free(a);
    return rc;
}

/* ---- checkpoints and exits ----------------------------------------------- */

/* The last path component of `path`. */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

int ebb__gang_checkpoint(struct ebb__attempt *a, unsigned rank, const char *path)
{
    const char *name = base_name(path);
    struct ebb__node *n = &a->nodes[rank];
    memmove(n->ckpts[1], n->ckpts[0], sizeof(n->ckpts[0]) * (EBB__NODE_CKPTS - 1));
    snprintf(n->ckpts[0], sizeof(n->ckpts[0]), "%s", name);
    for (unsigned r = 0; r < a->n_nodes; r++) {
        int has = 0;
        for (size_t i = 0; i < EBB__NODE_CKPTS && !has; i++)
            has = strcmp(a->nodes[r].ckpts[i], name) == 0;
        if (!has)
            return 0;
    }
    return 1;
}

int ebb__gang_exit(struct ebb__attempt *a, unsigned rank, int status, int *gang_status)
{
    a->nodes[rank].exited = 1;
    a->nodes[rank].exit_status = status;
    /* A node that failed ends the gang at once: its peers would wait for
     * it for ever. */
    if (status != 0 && status != EBB_EXIT_STOPPED) {
        *gang_status = status;
        return 1;
    }
    int stopped = 0;
    for (unsigned r = 0; r < a->n_nodes; r++) {
        if (!a->nodes[r].exited)
            return 0;
        stopped |= a->nodes[r].exit_status == EBB_EXIT_STOPPED;
    }
    *gang_status = stopped ? EBB_EXIT_STOPPED : 0;
    return 1;
}
