/* Reading job specs from YAML (see jobspec.h for the keys and
 * examples/jobs/train-resnet.yaml for an annotated spec).
 *
 * Single values are read by the helpers in jobspec_node.c, which use the
 * same parser as ebb.yaml; the keys that need more than one type (run,
 * deadline) or a fixed set of names (market, checkpoint.signal) are read
 * here, and the checks across keys are in jobspec_values.c.
 *
 * Workload defaults are handled by looking every key up in two mappings,
 * the job's own first and then the defaults, instead of building a merged
 * YAML tree: the node found still carries the file and line where the
 * value was written, so a bad default is reported at its own line.
 */
#include "jobs/jobspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/cfg_table.h"
#include "base/str.h"

struct ctx {
    struct ebb__job_spec *spec;
    struct ebb_diag *d;
    const struct ebb__ynode *job;
    struct ebb__jobspec_where where;
};

static int missing(const struct ctx *c, const char *key, const char *example)
{
    ebb_diag_set(c->d, c->job->file, c->job->line,
                  "job: missing required key \"%s\" (example: %s)", key,
                  example);
    return EBB_ECONFIG;
}

/* ---- keys --------------------------------------------------------------- */

static int do_name(struct ctx *c)
{
    const struct ebb__ynode *n = ebb__ymap_get(c->job, "name");
    if (ebb__ynode_is_null(n))
        return missing(c, "name", "name: train-resnet");
    int rc =
        ebb__cfg_parse_value(EBB_CFG_STRING, n, "name", &c->spec->name, c->d);
    if (rc == 0 && !ebb__job_name_valid(c->spec->name)) {
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_set(c->d, n->file, n->line,
                      "name: %s is not a valid job name (1 to 64 letters, "
                      "digits, '.', '_' and '-', not \".\" or \"..\"; "
                      "example: train-resnet)",
                      ebb_diag_quote(n->value, n->len, q, sizeof(q)));
        rc = EBB_ECONFIG;
    }
    return rc;
}

/* run: a list is exec'd as argv; a string only with shell: true, because a
 * string that is silently split on spaces, or silently given to a shell,
 * is the classic source of quoting bugs. */
static int do_run(struct ctx *c, const struct ebb__jy_layer *l)
{
    struct ebb__job_spec *s = c->spec;
    const struct ebb__ynode *sh = ebb__jy_get(l, "shell");
    if (sh != NULL) {
        int rc =
            ebb__cfg_parse_value(EBB_CFG_BOOL, sh, "shell", &s->shell, c->d);
        if (rc != 0)
            return rc;
    }
    const struct ebb__ynode *n = ebb__jy_get(l, "run");
    if (n == NULL)
        return missing(c, "run", "run: [python, train.py]");
    if (n->kind == EBB__YMAP) {
        ebb_diag_set(c->d, n->file, n->line,
                      "run: expected a list of strings (example: [python, "
                      "train.py]), not a mapping");
        return EBB_ECONFIG;
    }
    if (n->kind == EBB__YSCALAR) {
        if (!s->shell) {
            ebb_diag_set(c->d, n->file, n->line,
                          "run: a string is run by sh -c only with shell: "
                          "true; write a list (run: [python, train.py]) or "
                          "set shell: true");
            return EBB_ECONFIG;
        }
        s->argv = calloc(2, sizeof(*s->argv));
        if (s->argv == NULL)
            return ebb__yread_nomem(c->d);
        int rc = ebb__yread_text(n, "run", "\"python train.py | tee log\"",
                                 &s->argv[0], c->d);
        if (rc == 0)
            s->argc = 1;
        return rc;
    }
    if (s->shell) {
        ebb_diag_set(c->d, sh->file, sh->line,
                      "shell: true runs one string with sh -c, but run is a "
                      "list; write run as a string or remove shell: true");
        return EBB_ECONFIG;
    }
    if (n->n == 0) {
        ebb_diag_set(c->d, n->file, n->line,
                      "run: empty list; give the program and its arguments "
                      "(example: [python, train.py])");
        return EBB_ECONFIG;
    }
    struct ebb_string_list list = {0, NULL};
    int rc = ebb__cfg_parse_value(EBB_CFG_STRING_LIST, n, "run", &list, c->d);
    if (rc != 0)
        return rc;
    if (list.items[0][0] == '\0') {
        ebb__string_list_free(&list);
        ebb_diag_set(c->d, n->items[0]->file, n->items[0]->line,
                      "run[0]: empty program name");
        return EBB_ECONFIG;
    }
    char **argv = realloc(list.items, (list.n + 1) * sizeof(*argv));
    if (argv == NULL) {
        ebb__string_list_free(&list);
        return ebb__yread_nomem(c->d);
    }
    argv[list.n] = NULL;
    s->argv = argv;
    s->argc = list.n;
    return 0;
}

static int do_work(struct ctx *c, const struct ebb__jy_layer *l)
{
    const struct ebb__ynode *n = ebb__jy_get(l, "work");
    if (n == NULL)
        return missing(c, "work", "work: 8h");
    c->where.work = n->line;
    return ebb__cfg_parse_value(EBB_CFG_DURATION, n, "work", &c->spec->work,
                                c->d);
}

/* An absolute time or a duration from submission. Which one the user
 * meant decides which parser's complaint is shown. */
static int do_deadline(struct ctx *c, const struct ebb__jy_layer *l)
{
    struct ebb__job_spec *s = c->spec;
    const struct ebb__ynode *n = ebb__jy_get(l, "deadline");
    if (n == NULL)
        return 0;
    c->where.deadline = n->line;
    int rc = ebb__yread_scalar(n, "deadline", "a time or a duration", c->d);
    if (rc != 0)
        return rc;
    const char *v = n->value;
    if (ebb_parse_time(v, &s->deadline_at) == 0) {
        s->has_deadline = 1;
        return 0;
    }
    if (ebb_parse_duration(v, &s->deadline_in) == 0) {
        s->has_deadline = 1;
        s->deadline_is_relative = 1;
        return 0;
    }
    const char *why;
    int looks_like_date = n->len >= 5 && v[4] == '-';
    for (int i = 0; looks_like_date && i < 4; i++)
        looks_like_date = v[i] >= '0' && v[i] <= '9';
    if (looks_like_date) {
        ebb_parse_time_why(v, &s->deadline_at, &why);
        return ebb__yread_not_a(n, "deadline", "a time", why,
                                "2026-12-01T06:00:00Z", c->d);
    }
    ebb_parse_duration_why(v, &s->deadline_in, &why);
    return ebb__yread_not_a(n, "deadline", "a time or a duration", why,
                            "2026-12-01T06:00:00Z or 36h", c->d);
}

static int do_budget(struct ctx *c, const struct ebb__jy_layer *l)
{
    struct ebb__job_spec *s = c->spec;
    const struct ebb__ynode *n = ebb__jy_get(l, "budget");
    if (n == NULL)
        return 0;
    int rc = ebb__cfg_parse_value(EBB_CFG_MONEY, n, "budget", &s->budget, c->d);
    if (rc != 0)
        return rc;
    if (s->budget.amount <= 0) {
        ebb_diag_set(c->d, n->file, n->line,
                      "budget: must be more than 0 (leave budget out for no "
                      "cap)");
        return EBB_ECONFIG;
    }
    s->has_budget = 1;
    return 0;
}

static int do_restart_overhead(struct ctx *c, const struct ebb__jy_layer *l)
{
    const struct ebb__ynode *n = ebb__jy_get(l, "restart_overhead");
    c->spec->restart_overhead = EBB__JOB_RESTART_OVERHEAD_DEFAULT;
    if (n == NULL)
        return 0;
    return ebb__cfg_parse_value(EBB_CFG_DURATION, n, "restart_overhead",
                                &c->spec->restart_overhead, c->d);
}

/* stall_after: at least a minute, since progress lines come at most every
 * few seconds, and a shorter guard would move jobs that only checkpoint. */
static int do_stall_guard(struct ctx *c, const struct ebb__jy_layer *l)
{
    const struct ebb__ynode *n = ebb__jy_get(l, "min_gpu_util");
    c->spec->min_gpu_util = 0;
    if (n != NULL && ebb__yread_int(n, "min_gpu_util", 0, 100, &c->spec->min_gpu_util,
                                    c->d) != 0)
        return EBB_ECONFIG;
    n = ebb__jy_get(l, "stall_after");
    c->spec->stall_after = 0;
    if (n == NULL)
        return 0;
    int rc = ebb__cfg_parse_value(EBB_CFG_DURATION, n, "stall_after",
                                  &c->spec->stall_after, c->d);
    if (rc == 0 && c->spec->stall_after < EBB__JOB_STALL_AFTER_MIN) {
        ebb_diag_set(c->d, n->file, n->line, "stall_after: must be at least 1m "
                     "(leave it out for the default)");
        return EBB_ECONFIG;
    }
    return rc;
}

static int do_gpu(struct ctx *c, const struct ebb__jy_layer *res)
{
    struct ebb__job_resources *r = &c->spec->resources;
    struct ebb__jy_layer l;
    int rc = ebb__jy_sub(res, "gpu", ebb__jobspec_gpu_keys, "resources.gpu", &l,
                         c->d);
    if (rc != 0 || (l.own == NULL && l.dflt == NULL))
        return rc;
    r->gpu_count = 1;
    const struct ebb__ynode *n = ebb__jy_get(&l, "model");
    if (n != NULL)
        rc = ebb__yread_text(n, "resources.gpu.model", "V100", &r->gpu_model,
                             c->d);
    n = ebb__jy_get(&l, "count");
    if (rc == 0 && n != NULL)
        rc = ebb__yread_int(n, "resources.gpu.count", 1,
                            EBB__JOB_GPU_COUNT_MAX, &r->gpu_count, c->d);
    n = ebb__jy_get(&l, "memory_gb");
    if (rc == 0 && n != NULL) {
        rc = ebb__cfg_parse_value(EBB_CFG_DOUBLE, n, "resources.gpu.memory_gb",
                                  &r->gpu_memory_gb, c->d);
        if (rc == 0 && !(r->gpu_memory_gb > 0)) {
            ebb_diag_set(c->d, n->file, n->line,
                          "resources.gpu.memory_gb: must be more than 0 "
                          "(example: 16)");
            rc = EBB_ECONFIG;
        } else if (rc == 0 && r->gpu_memory_gb > EBB__JOB_GPU_MEMORY_GB_MAX) {
            ebb_diag_set(c->d, n->file, n->line,
                          "resources.gpu.memory_gb: %.15g is more than any GPU has "
                          "(at most %d GB per GPU; example: 16)",
                          r->gpu_memory_gb, EBB__JOB_GPU_MEMORY_GB_MAX);
            rc = EBB_ECONFIG;
        }
    }
    return rc;
}

static int do_resources(struct ctx *c, const struct ebb__jy_layer *l)
{
    struct ebb__job_resources *r = &c->spec->resources;
    struct ebb__jy_layer res;
    int rc = ebb__jy_sub(l, "resources", ebb__jobspec_resource_keys,
                         "resources", &res, c->d);
    if (rc != 0)
        return rc;
    static const char *const keys[] = {"instance_types", "zones", "regions",
                                       "providers"};
    static const char *const whats[] = {"resources.instance_types",
                                        "resources.zones", "resources.regions",
                                        "resources.providers"};
    struct ebb_string_list *dst[] = {&r->instance_types, &r->zones, &r->regions,
                                     &r->providers};
    for (size_t i = 0; rc == 0 && i < sizeof(keys) / sizeof(keys[0]); i++) {
        const struct ebb__ynode *n = ebb__jy_get(&res, keys[i]);
        if (n != NULL)
            rc = ebb__yread_list(n, whats[i], dst[i], c->d);
    }
    const struct ebb__ynode *n = ebb__jy_get(&res, "network");
    if (rc == 0 && n != NULL)
        rc = ebb__yread_scalar(n, "resources.network", "a bandwidth", c->d);
    if (rc == 0 && n != NULL && ebb__job_network_parse(n->value, &r->network_gbps) != 0)
        rc = ebb__yread_not_a(n, "resources.network", "a bandwidth",
                              "a number and Mbps, Gbps or Tbps", "25Gbps", c->d);
    return rc != 0 ? rc : do_gpu(c, &res);
}

/* nodes and gang (docs/gangs.md). */
static int do_gang(struct ctx *c, const struct ebb__jy_layer *l)
{
    struct ebb__job_spec *s = c->spec;
    s->nodes = 1;
    s->gang_restart = EBB__GANG_WHOLE;
    int rc = 0;
    const struct ebb__ynode *n = ebb__jy_get(l, "nodes");
    if (n != NULL) {
        c->where.nodes = n->line;
        rc = ebb__yread_int(n, "nodes", 1, EBB__JOB_NODES_MAX, &s->nodes, c->d);
    }
    struct ebb__jy_layer g;
    if (rc == 0)
        rc = ebb__jy_sub(l, "gang", ebb__jobspec_gang_keys, "gang", &g, c->d);
    n = rc == 0 ? ebb__jy_get(&g, "restart") : NULL;
    if (n != NULL)
        rc = ebb__yread_scalar(n, "gang.restart", "whole or replace_lost", c->d);
    if (rc == 0 && n != NULL && ebb__gang_restart_parse(n->value, &s->gang_restart) != 0)
        rc = ebb__yread_not_a(n, "gang.restart", "a restart mode",
                              "one of whole, replace_lost", "whole", c->d);
    return rc;
}

static int do_market(struct ctx *c, const struct ebb__jy_layer *l)
{
    const struct ebb__ynode *n = ebb__jy_get(l, "market");
    c->spec->market = EBB_JOB_SPOT_FALLBACK;
    if (n == NULL)
        return 0;
    int rc = ebb__yread_scalar(n, "market",
                               "one of spot, on-demand, spot-fallback", c->d);
    if (rc == 0 && ebb__job_market_parse(n->value, &c->spec->market) != 0) {
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_set(c->d, n->file, n->line,
                      "market: %s is not one of spot, on-demand, "
                      "spot-fallback",
                      ebb_diag_quote(n->value, n->len, q, sizeof(q)));
        rc = EBB_ECONFIG;
    }
    return rc;
}

static int do_checkpoint(struct ctx *c, const struct ebb__jy_layer *l)
{
    struct ebb__job_checkpoint *cp = &c->spec->checkpoint;
    ebb__job_signal_parse("SIGUSR1", &cp->signal, cp->signal_name);
    cp->grace = EBB__JOB_GRACE_DEFAULT;
    cp->keep = EBB__JOB_KEEP_DEFAULT;
    struct ebb__jy_layer ck;
    int rc = ebb__jy_sub(l, "checkpoint", ebb__jobspec_checkpoint_keys,
                         "checkpoint", &ck, c->d);
    if (rc != 0)
        return rc;
    const struct ebb__ynode *n = ebb__jy_get(&ck, "dir");
    if (n != NULL) {
        c->where.dir = n->line;
        rc = ebb__yread_text(n, "checkpoint.dir", "/data/ckpt/resnet",
                             &cp->dir, c->d);
    }
    n = ebb__jy_get(&ck, "signal");
    if (rc == 0 && n != NULL) {
        rc = ebb__yread_scalar(n, "checkpoint.signal", "a signal name", c->d);
        if (rc == 0 && ebb__job_signal_parse(n->value, &cp->signal,
                                             cp->signal_name) != 0) {
            char q[EBB_DIAG_QUOTE_SIZE];
            ebb_diag_set(c->d, n->file, n->line,
                          "checkpoint.signal: %s is not a signal a job can "
                          "catch to checkpoint (one of SIGUSR1, SIGUSR2, "
                          "SIGTERM, SIGINT, SIGHUP, SIGQUIT)",
                          ebb_diag_quote(n->value, n->len, q, sizeof(q)));
            rc = EBB_ECONFIG;
        }
    }
    n = ebb__jy_get(&ck, "grace");
    if (rc == 0 && n != NULL) {
        c->where.grace = n->line;
        rc = ebb__cfg_parse_value(EBB_CFG_DURATION, n, "checkpoint.grace",
                                  &cp->grace, c->d);
    }
    n = ebb__jy_get(&ck, "every");
    if (rc == 0 && n != NULL) {
        c->where.every = n->line;
        rc = ebb__cfg_parse_value(EBB_CFG_DURATION, n, "checkpoint.every",
                                  &cp->every, c->d);
    }
    n = ebb__jy_get(&ck, "store");
    if (rc == 0 && n != NULL) {
        cp->store_line = n->line;
        rc = ebb__jy_ident(n, "checkpoint.store", "ckpt", &cp->store, c->d);
    }
    n = ebb__jy_get(&ck, "encrypt");
    if (rc == 0 && n != NULL) {
        cp->encrypt_line = n->line;
        cp->has_encrypt = 1;
        rc = ebb__cfg_parse_value(EBB_CFG_BOOL, n, "checkpoint.encrypt",
                                  &cp->encrypt, c->d);
    }
    n = ebb__jy_get(&ck, "keep");
    if (rc == 0 && n != NULL)
        rc = ebb__yread_int(n, "checkpoint.keep", 1, EBB__JOB_KEEP_MAX, &cp->keep,
                            c->d);
    if (!cp->has_encrypt)
        cp->encrypt = cp->store != NULL;
    return rc;
}

static int do_small(struct ctx *c, const struct ebb__jy_layer *l)
{
    struct ebb__job_spec *s = c->spec;
    const struct ebb__ynode *n = ebb__jy_get(l, "policy");
    int rc = 0;
    if (n != NULL) {
        s->policy_line = n->line;
        rc = ebb__jy_ident(n, "policy", "uniform-progress", &s->policy, c->d);
    }
    n = ebb__jy_get(l, "team");
    if (rc == 0 && n != NULL) {
        s->team_line = n->line;
        rc = ebb__jy_ident(n, "team", "vision", &s->team, c->d);
    }
    n = ebb__jy_get(l, "run_as");
    if (rc == 0 && n != NULL)
        rc = ebb__yread_text(n, "run_as", "alice", &s->run_as, c->d);
    if (rc == 0 && s->run_as != NULL && !ebb__job_user_valid(s->run_as)) {
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_set(c->d, n->file, n->line, "run_as: %s is not a user name "
                     "(1 to 32 letters, digits, ., _ and -; example: alice)",
                     ebb__yread_quote(n, q, sizeof(q)));
        rc = EBB_ECONFIG;
    }
    n = ebb__jy_get(l, "notify");
    if (rc == 0 && n != NULL) {
        s->has_notify = 1;
        rc = ebb__yread_list(n, "notify", &s->notify, c->d);
    }
    s->max_retries = EBB__JOB_MAX_RETRIES_DEFAULT;
    n = ebb__jy_get(l, "max_retries");
    if (rc == 0 && n != NULL)
        rc = ebb__yread_int(n, "max_retries", 0, EBB__JOB_MAX_RETRIES_MAX,
                            &s->max_retries, c->d);
    s->priority = EBB__JOB_PRIORITY_NORMAL;
    n = ebb__jy_get(l, "priority");
    if (rc == 0 && n != NULL)
        rc = ebb__yread_scalar(n, "priority", "a priority", c->d);
    if (rc == 0 && n != NULL && ebb__job_priority_parse(n->value, &s->priority) != 0)
        rc = ebb__yread_not_a(n, "priority", "a priority", "low, normal, high, "
                              "urgent or an integer from 0 to 1000", "high", c->d);
    return rc;
}

/* Appends "KEY=value" from one entry of an env mapping. */
static int env_add(struct ctx *c, const struct ebb__ynode *key,
                   const struct ebb__ynode *v)
{
    struct ebb__job_spec *s = c->spec;
    char q[EBB_DIAG_QUOTE_SIZE];
    if (!ebb__job_env_name_valid(key->value, key->len)) {
        ebb_diag_set(c->d, key->file, key->line,
                      "env: %s is not an environment variable name (letters, "
                      "digits and _, not starting with a digit)",
                      ebb_diag_quote(key->value, key->len, q, sizeof(q)));
        return EBB_ECONFIG;
    }
    if (strncmp(key->value, "EBB_", 4) == 0) {
        ebb_diag_set(c->d, key->file, key->line,
                      "env.%s: names starting with EBB_ are set by ebb itself",
                      key->value);
        return EBB_ECONFIG;
    }
    char what[128];
    snprintf(what, sizeof(what), "env.%s", key->value);
    if (ebb__ynode_is_null(v)) {
        ebb_diag_set(c->d, v->file, v->line,
                      "%s: no value (write \"\" for an empty string)", what);
        return EBB_ECONFIG;
    }
    char *value = NULL;
    int rc = ebb__cfg_parse_value(EBB_CFG_STRING, v, what, &value, c->d);
    if (rc != 0)
        return rc;
    char *kv = ebb_strfmt("%s=%s", key->value, value);
    free(value);
    if (kv == NULL)
        return ebb__yread_nomem(c->d);
    s->env[s->n_env++] = kv;
    return 0;
}

/* env merges per variable: the defaults' variables first (those the job
 * does not set), then the job's own, each in file order. */
static int do_env(struct ctx *c, const struct ebb__jy_layer *l)
{
    struct ebb__jy_layer env;
    int rc = ebb__jy_sub(l, "env", NULL, "env", &env, c->d);
    if (rc != 0)
        return rc;
    size_t n = (env.own != NULL ? env.own->n : 0) +
               (env.dflt != NULL ? env.dflt->n : 0);
    if (n == 0)
        return 0;
    c->spec->env = calloc(n + 1, sizeof(*c->spec->env));
    if (c->spec->env == NULL)
        return ebb__yread_nomem(c->d);
    for (size_t i = 0; rc == 0 && env.dflt != NULL && i < env.dflt->n; i++) {
        const struct ebb__ynode *key = env.dflt->keys[i];
        int overridden = 0;
        for (size_t j = 0; !overridden && env.own != NULL && j < env.own->n;
             j++) {
            const struct ebb__ynode *k2 = env.own->keys[j];
            overridden = k2->len == key->len &&
                         memcmp(k2->value, key->value, key->len) == 0;
        }
        if (!overridden)
            rc = env_add(c, key, env.dflt->items[i]);
    }
    for (size_t i = 0; rc == 0 && env.own != NULL && i < env.own->n; i++)
        rc = env_add(c, env.own->keys[i], env.own->items[i]);
    return rc;
}

/* workdir and workdir_exclude: the directory packed at submit, and what
 * it leaves out (each pattern checked at its own line). */
static int do_workdir(struct ctx *c, const struct ebb__jy_layer *l)
{
    struct ebb__job_spec *s = c->spec;
    const struct ebb__ynode *n = ebb__jy_get(l, "workdir");
    const struct ebb__ynode *ex = ebb__jy_get(l, "workdir_exclude");
    int rc = 0;
    if (n != NULL) {
        s->workdir_line = n->line;
        rc = ebb__yread_text(n, "workdir", ". (the spec file's directory)",
                             &s->workdir_src, c->d);
    }
    if (rc != 0 || ex == NULL)
        return rc;
    if (n == NULL) {
        ebb_diag_set(c->d, ex->file, ex->line, "workdir_exclude: leaves out "
                     "files of the workdir, but the job has no workdir: (add "
                     "workdir: . or remove this key)");
        return EBB_ECONFIG;
    }
    rc = ebb__yread_list(ex, "workdir_exclude", &s->workdir_exclude, c->d);
    for (size_t i = 0; rc == 0 && i < s->workdir_exclude.n; i++) {
        const char *why;
        if (!ebb__workdir_pattern_check(s->workdir_exclude.items[i], &why)) {
            const struct ebb__ynode *item = ex->kind == EBB__YSEQ ? ex->items[i] : ex;
            char q[EBB_DIAG_QUOTE_SIZE];
            ebb_diag_set(c->d, item->file, item->line, "workdir_exclude[%zu]: "
                         "%s %s (examples: .git, \"*.pt\", data/)", i,
                         ebb__yread_quote(item, q, sizeof(q)), why);
            rc = EBB_ECONFIG;
        }
    }
    if (rc == 0 && s->workdir_exclude.n > EBB__WORKDIR_EXCLUDE_MAX) {
        ebb_diag_set(c->d, ex->file, ex->line, "workdir_exclude: %zu patterns; at "
                     "most %d", s->workdir_exclude.n, EBB__WORKDIR_EXCLUDE_MAX);
        rc = EBB_ECONFIG;
    }
    return rc;
}

static int do_submit(struct ctx *c, const struct ebb__jy_layer *l,
                     int want_submit)
{
    const struct ebb__ynode *n = ebb__jy_get(l, "submit");
    if (!want_submit && n != NULL) {
        ebb_diag_set(c->d, n->file, n->line,
                      "submit: only a workload for ebb backtest says when a "
                      "job is submitted; ebb submit uses the time it runs "
                      "(remove this line)");
        return EBB_ECONFIG;
    }
    if (!want_submit)
        return 0;
    if (n == NULL)
        return missing(c, "submit", "submit: 2020-01-06T09:00:00Z");
    c->spec->has_submit = 1;
    return ebb__jy_time(n, "submit", &c->spec->submit, c->d);
}

static int build(struct ctx *c, const struct ebb__ynode *defaults,
                 int want_submit)
{
    struct ebb__jy_layer l = {c->job, defaults};
    int rc = ebb__yread_check_keys(c->job, ebb__jobspec_keys, "job", c->d);
    if (rc == 0 && defaults != NULL) {
        rc = ebb__yread_check_keys(defaults, ebb__jobspec_keys, "defaults",
                                   c->d);
        const struct ebb__ynode *nm = NULL;
        for (size_t i = 0; rc == 0 && i < defaults->n; i++) {
            if (ebb__yread_is_key(defaults->keys[i], "name"))
                nm = defaults->keys[i];
        }
        if (rc == 0 && nm != NULL) {
            ebb_diag_set(c->d, nm->file, nm->line,
                          "defaults: name cannot have a default; every job "
                          "needs its own");
            rc = EBB_ECONFIG;
        }
    }
    c->spec->file = strdup(c->job->file);
    if (rc == 0 && c->spec->file == NULL)
        rc = ebb__yread_nomem(c->d);
    c->spec->line = c->job->line;
    if (rc == 0)
        rc = do_name(c);
    if (rc == 0)
        rc = do_run(c, &l);
    if (rc == 0)
        rc = do_work(c, &l);
    if (rc == 0)
        rc = do_deadline(c, &l);
    if (rc == 0)
        rc = do_budget(c, &l);
    if (rc == 0)
        rc = do_restart_overhead(c, &l);
    if (rc == 0)
        rc = do_stall_guard(c, &l);
    if (rc == 0)
        rc = do_resources(c, &l);
    if (rc == 0)
        rc = do_gang(c, &l);
    if (rc == 0)
        rc = do_market(c, &l);
    if (rc == 0)
        rc = do_checkpoint(c, &l);
    if (rc == 0)
        rc = do_small(c, &l);
    if (rc == 0)
        rc = do_env(c, &l);
    if (rc == 0)
        rc = do_workdir(c, &l);
    if (rc == 0)
        rc = do_submit(c, &l, want_submit);
    if (rc == 0)
        rc = ebb__jobspec_check(c->spec, &c->where, c->d);
    return rc;
}

int ebb__jobspec_from_node_defaults(const struct ebb__ynode *node,
                                    const struct ebb__ynode *defaults,
                                    int want_submit, struct ebb__job_spec *out,
                                    struct ebb_diag *d)
{
    memset(out, 0, sizeof(*out));
    int rc = ebb__yread_expect_map(node, "job", d);
    if (rc == 0 && defaults != NULL)
        rc = ebb__yread_expect_map(defaults, "defaults", d);
    if (rc != 0)
        return rc;
    struct ctx c = {.spec = out, .d = d, .job = node};
    c.where.file = node->file;
    c.where.job = node->line;
    rc = build(&c, defaults, want_submit);
    if (rc != 0)
        ebb__jobspec_free(out);
    return rc;
}

int ebb__jobspec_from_node(const struct ebb__ynode *node, int want_submit,
                           struct ebb__job_spec *out, struct ebb_diag *d)
{
    return ebb__jobspec_from_node_defaults(node, NULL, want_submit, out, d);
}

static int from_doc(struct ebb__ydoc *doc, struct ebb__job_spec *out,
                    struct ebb_diag *d)
{
    const struct ebb__ynode *root = ebb__ydoc_root(doc);
    int rc;
    if (ebb__ynode_is_null(root)) {
        ebb_diag_set(d, ebb__ydoc_name(doc), 0,
                      "empty; a job spec is a mapping such as "
                      "{name: train, run: [python, train.py], work: 8h}");
        rc = EBB_ECONFIG;
    } else if (root->kind != EBB__YMAP) {
        ebb_diag_set(d, root->file, root->line,
                      "expected a job spec (a mapping of keys such as name, "
                      "run, work), not %s",
                      ebb__ykind_name(root->kind));
        rc = EBB_ECONFIG;
    } else if (ebb__ymap_get(root, "jobs") != NULL &&
               ebb__ymap_get(root, "name") == NULL) {
        ebb_diag_set(d, root->file, root->line,
                      "this is a workload (it has jobs:), not a job spec; "
                      "give it to ebb backtest --workload");
        rc = EBB_ECONFIG;
    } else {
        rc = ebb__jobspec_from_node(root, 0, out, d);
    }
    ebb__ydoc_free(doc);
    return rc;
}

int ebb__jobspec_load_buffer(const char *name, const char *buf, size_t len,
                             struct ebb__job_spec *out, struct ebb_diag *d)
{
    memset(out, 0, sizeof(*out));
    struct ebb__ydoc *doc;
    int rc = ebb__ydoc_load_bounded(name, buf, len, &ebb__ylimits_spec, &doc, d);
    if (rc != 0)
        return rc;
    return from_doc(doc, out, d);
}

int ebb__jobspec_load_file(const char *path, struct ebb__job_spec *out,
                           struct ebb_diag *d)
{
    memset(out, 0, sizeof(*out));
    struct ebb__ydoc *doc;
    int rc = ebb__ydoc_load_file(path, &doc, d);
    if (rc != 0)
        return rc;
    return from_doc(doc, out, d);
}
