/* Job specs as JSON, for the store and the API. The JSON uses the YAML key
 * names and the same text forms ("8h", "40.00 USD", ISO-8601 times), so a
 * stored spec reads like the file it came from, and the reader applies the
 * same checks: a spec that passes one reader passes the other. */
#include "jobs/jobspec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/cfg_table.h"
#include "base/str.h"

#define PREFIX "job spec JSON"

/* ---- writing ------------------------------------------------------------ */

static json_t *jdur(ebb_dur_ms v)
{
    char buf[EBB_DURATION_BUFSZ];
    return json_string(ebb_format_duration(v, buf, sizeof(buf)));
}

/* A spec's times are read back from this JSON, so they keep what the
 * user wrote, milliseconds too. */
static json_t *jtime(ebb_time_ms v)
{
    char buf[EBB_TIME_BUFSZ];
    return json_string(ebb_format_time_exact(v, buf, sizeof(buf)));
}

static json_t *jstr_or_null(const char *s)
{
    return s != NULL ? json_string(s) : json_null();
}

static json_t *jlist(char *const *items, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < n; i++) {
        if (json_array_append_new(a, json_string(items[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

/* json_object_set_new() takes the reference also when it fails (and fails
 * for a NULL value), so the results can simply be or-ed together. */
static int put(json_t *o, const char *key, json_t *v)
{
    return json_object_set_new(o, key, v) != 0;
}

static json_t *resources_json(const struct ebb__job_resources *r)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    int bad = put(o, "instance_types",
                  jlist(r->instance_types.items, r->instance_types.n));
    json_t *gpu = json_null();
    if (r->gpu_count > 0) {
        gpu = json_object();
        if (gpu != NULL) {
            bad |= put(gpu, "model", jstr_or_null(r->gpu_model));
            bad |= put(gpu, "count", json_integer(r->gpu_count));
            bad |= put(gpu, "memory_gb", r->gpu_memory_gb > 0
                                             ? json_real(r->gpu_memory_gb)
                                             : json_null());
        }
    }
    bad |= put(o, "gpu", gpu);
    bad |= put(o, "zones", jlist(r->zones.items, r->zones.n));
    bad |= put(o, "regions", jlist(r->regions.items, r->regions.n));
    bad |= put(o, "providers", jlist(r->providers.items, r->providers.n));
    /* Written only when given: specs stored before gangs read the same. */
    if (r->network_gbps > 0) {
        char bw[48];
        snprintf(bw, sizeof(bw), "%.15gGbps", r->network_gbps);
        bad |= put(o, "network", json_string(bw));
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *checkpoint_json(const struct ebb__job_checkpoint *cp)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    int bad = put(o, "dir", jstr_or_null(cp->dir));
    bad |= put(o, "signal", json_string(cp->signal_name));
    bad |= put(o, "grace", jdur(cp->grace));
    bad |= put(o, "every", cp->every > 0 ? jdur(cp->every) : json_null());
    /* Written only when set, so a spec without them reads as before. */
    if (cp->store != NULL)
        bad |= put(o, "store", json_string(cp->store));
    if (cp->has_encrypt)
        bad |= put(o, "encrypt", json_boolean(cp->encrypt));
    if (cp->keep != EBB__JOB_KEEP_DEFAULT)
        bad |= put(o, "keep", json_integer(cp->keep));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *env_json(char *const *env, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; o != NULL && i < n; i++) {
        const char *eq = strchr(env[i], '=');
        size_t klen = eq != NULL ? (size_t)(eq - env[i]) : strlen(env[i]);
        if (json_object_setn_new(o, env[i], klen,
                                 json_string(eq != NULL ? eq + 1 : "")) !=
            0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

json_t *ebb__jobspec_to_json(const struct ebb__job_spec *s)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    char buf[EBB_MONEY_BUFSZ];
    int bad = put(o, "name", json_string(s->name));
    if (s->shell)
        bad |= put(o, "run", json_string(s->argc > 0 ? s->argv[0] : ""));
    else
        bad |= put(o, "run", jlist(s->argv, s->argc));
    bad |= put(o, "shell", json_boolean(s->shell));
    bad |= put(o, "work", jdur(s->work));
    if (!s->has_deadline)
        bad |= put(o, "deadline", json_null());
    else if (s->deadline_is_relative)
        bad |= put(o, "deadline", jdur(s->deadline_in));
    else
        bad |= put(o, "deadline", jtime(s->deadline_at));
    bad |= put(o, "budget",
               s->has_budget
                   ? json_string(ebb_format_money(s->budget.amount,
                                                   s->budget.currency, buf,
                                                   sizeof(buf)))
                   : json_null());
    bad |= put(o, "restart_overhead", jdur(s->restart_overhead));
    bad |= put(o, "stall_after", s->stall_after > 0 ? jdur(s->stall_after) : json_null());
    if (s->min_gpu_util > 0)
        bad |= put(o, "min_gpu_util", json_integer(s->min_gpu_util));
    bad |= put(o, "resources", resources_json(&s->resources));
    bad |= put(o, "market", json_string(ebb__job_market_name(s->market)));
    bad |= put(o, "checkpoint", checkpoint_json(&s->checkpoint));
    bad |= put(o, "policy", jstr_or_null(s->policy));
    bad |= put(o, "team", jstr_or_null(s->team));
    bad |= put(o, "run_as", jstr_or_null(s->run_as));
    bad |= put(o, "max_retries", json_integer(s->max_retries));
    /* Written only when not normal: specs stored before priorities
     * existed read, and print, the same. */
    if (s->priority != EBB__JOB_PRIORITY_NORMAL)
        bad |= put(o, "priority", json_integer(s->priority));
    /* Written only for a gang: single-instance specs read and print as
     * before. */
    if (s->nodes > 1) {
        bad |= put(o, "nodes", json_integer(s->nodes));
        bad |= put(o, "gang", json_pack("{s:s}", "restart",
                                        ebb__gang_restart_name(s->gang_restart)));
    }
    /* Written only when the spec has it: absent means notify.defaults. */
    if (s->has_notify)
        bad |= put(o, "notify", jlist(s->notify.items, s->notify.n));
    bad |= put(o, "env", env_json(s->env, s->n_env));
    /* Written only when the spec has them: specs stored before they
     * existed read the same. */
    if (s->workdir_src != NULL)
        bad |= put(o, "workdir", jstr_or_null(s->workdir_src));
    if (s->workdir_exclude.n > 0)
        bad |= put(o, "workdir_exclude",
                   jlist(s->workdir_exclude.items, s->workdir_exclude.n));
    bad |= put(o, "submit", s->has_submit ? jtime(s->submit) : json_null());
    /* A path need not be UTF-8; losing it only costs later messages their
     * file name. */
    json_t *file = jstr_or_null(s->file);
    bad |= put(o, "file", file != NULL ? file : json_null());
    bad |= put(o, "line", json_integer(s->line));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---- reading ------------------------------------------------------------ */

static int fail(struct ebb_diag *d, const char *fmt, ...) EBB_PRINTF(2, 3);

static int fail(struct ebb_diag *d, const char *fmt, ...)
{
    char msg[sizeof(d->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ebb_diag_set(d, NULL, 0, "%s: %s", PREFIX, msg);
    return EBB_ECONFIG;
}

static int nomem(struct ebb_diag *d)
{
    ebb_diag_set(d, NULL, 0, "out of memory");
    return EBB_ENOMEM;
}

/* The value of `key`, NULL when absent or null. */
static const json_t *jget(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_null(v) ? NULL : v;
}

static int check_keys(const json_t *o, const char *const *keys,
                      const char *const *extra, const char *what,
                      struct ebb_diag *d)
{
    if (!json_is_object(o))
        return fail(d, "%s: expected an object", what);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        int found = 0;
        for (size_t k = 0; !found && keys[k] != NULL; k++)
            found = strcmp(key, keys[k]) == 0;
        for (size_t k = 0; !found && extra != NULL && extra[k] != NULL; k++)
            found = strcmp(key, extra[k]) == 0;
        if (!found) {
            char q[EBB_DIAG_QUOTE_SIZE];
            return fail(d, "%s: unknown key %s", what,
                        ebb_diag_quote(key, strlen(key), q, sizeof(q)));
        }
    }
    return 0;
}

/* A string value without NUL bytes; *out NULL when absent or null. */
static int jtext(const json_t *o, const char *key, const char *what,
                 const char **out, struct ebb_diag *d)
{
    const json_t *v = jget(o, key);
    *out = NULL;
    if (v == NULL)
        return 0;
    if (!json_is_string(v) ||
        strlen(json_string_value(v)) != json_string_length(v))
        return fail(d, "%s: expected a string", what);
    *out = json_string_value(v);
    return 0;
}

static int jcopy(const json_t *o, const char *key, const char *what,
                 char **out, struct ebb_diag *d)
{
    const char *s;
    int rc = jtext(o, key, what, &s, d);
    if (rc != 0 || s == NULL)
        return rc;
    if (s[0] == '\0')
        return fail(d, "%s: empty", what);
    *out = strdup(s);
    return *out == NULL ? nomem(d) : 0;
}

static int jdur_get(const json_t *o, const char *key, const char *what,
                    ebb_dur_ms *out, struct ebb_diag *d)
{
    const char *s, *why;
    int rc = jtext(o, key, what, &s, d);
    if (rc != 0 || s == NULL)
        return rc;
    if (ebb_parse_duration_why(s, out, &why) != 0) {
        char q[EBB_DIAG_QUOTE_SIZE];
        return fail(d, "%s: %s is not a duration%s%s%s", what,
                    ebb_diag_quote(s, strlen(s), q, sizeof(q)),
                    why != NULL ? " (" : "", why != NULL ? why : "",
                    why != NULL ? ")" : "");
    }
    return 0;
}

static int jtime_get(const json_t *o, const char *key, const char *what,
                     int *has, ebb_time_ms *out, struct ebb_diag *d)
{
    const char *s, *why;
    int rc = jtext(o, key, what, &s, d);
    if (rc != 0 || s == NULL)
        return rc;
    if (ebb_parse_time_why(s, out, &why) != 0) {
        char q[EBB_DIAG_QUOTE_SIZE];
        return fail(d, "%s: %s is not a time%s%s%s", what,
                    ebb_diag_quote(s, strlen(s), q, sizeof(q)),
                    why != NULL ? " (" : "", why != NULL ? why : "",
                    why != NULL ? ")" : "");
    }
    *has = 1;
    return 0;
}

static int jint(const json_t *o, const char *key, const char *what,
                json_int_t lo, json_int_t hi, int *out, struct ebb_diag *d)
{
    const json_t *v = jget(o, key);
    if (v == NULL)
        return 0;
    if (!json_is_integer(v))
        return fail(d, "%s: expected an integer", what);
    json_int_t i = json_integer_value(v);
    if (i < lo || i > hi)
        return fail(d, "%s: %lld must be between %lld and %lld", what,
                    (long long)i, (long long)lo, (long long)hi);
    *out = (int)i;
    return 0;
}

static int jlist_get(const json_t *o, const char *key, const char *what,
                     struct ebb_string_list *out, struct ebb_diag *d)
{
    const json_t *a = jget(o, key);
    if (a == NULL)
        return 0;
    if (!json_is_array(a))
        return fail(d, "%s: expected a list of strings", what);
    size_t n = json_array_size(a);
    if (n == 0)
        return 0;
    out->items = calloc(n + 1, sizeof(*out->items));
    if (out->items == NULL)
        return nomem(d);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(a, i);
        /* Empty strings are allowed, as in the YAML lists (an argument
         * "" is an argument); a NUL would cut the string short. */
        if (!json_is_string(v))
            return fail(d, "%s[%zu]: expected a string", what, i);
        if (strlen(json_string_value(v)) != json_string_length(v))
            return fail(d, "%s[%zu]: contains a NUL byte", what, i);
        out->items[i] = strdup(json_string_value(v));
        if (out->items[i] == NULL)
            return nomem(d);
        out->n = i + 1;
    }
    return 0;
}

static int read_run(const json_t *j, struct ebb__job_spec *s,
                    struct ebb_diag *d)
{
    const json_t *sh = jget(j, "shell");
    if (sh != NULL && !json_is_boolean(sh))
        return fail(d, "shell: expected true or false");
    s->shell = json_is_true(sh);
    const json_t *run = jget(j, "run");
    if (run == NULL)
        return fail(d, "missing required key \"run\"");
    if (json_is_string(run)) {
        if (!s->shell)
            return fail(d, "run: a string needs shell: true");
        s->argv = calloc(2, sizeof(*s->argv));
        if (s->argv == NULL)
            return nomem(d);
        int rc = jcopy(j, "run", "run", &s->argv[0], d);
        if (rc == 0)
            s->argc = 1;
        return rc;
    }
    if (s->shell)
        return fail(d, "run: shell: true needs run as a string");
    struct ebb_string_list list = {0, NULL};
    int rc = jlist_get(j, "run", "run", &list, d);
    /* jlist_get allocated n + 1 slots, so the list is NULL-terminated. */
    s->argv = list.items;
    s->argc = list.n;
    if (rc == 0 && s->argc == 0)
        return fail(d, "run: expected a non-empty list of strings");
    if (rc == 0 && s->argv[0][0] == '\0')
        return fail(d, "run[0]: empty program name");
    return rc;
}

static int read_deadline(const json_t *j, struct ebb__job_spec *s,
                         struct ebb_diag *d)
{
    const char *v;
    int rc = jtext(j, "deadline", "deadline", &v, d);
    if (rc != 0 || v == NULL)
        return rc;
    s->has_deadline = 1;
    if (ebb_parse_time(v, &s->deadline_at) == 0)
        return 0;
    s->deadline_is_relative = 1;
    if (ebb_parse_duration(v, &s->deadline_in) == 0)
        return 0;
    char q[EBB_DIAG_QUOTE_SIZE];
    return fail(d, "deadline: %s is not a time or a duration",
                ebb_diag_quote(v, strlen(v), q, sizeof(q)));
}

static int read_resources(const json_t *j, struct ebb__job_resources *r,
                          struct ebb_diag *d)
{
    const json_t *o = jget(j, "resources");
    if (o == NULL)
        return 0;
    int rc = check_keys(o, ebb__jobspec_resource_keys, NULL, "resources", d);
    if (rc == 0)
        rc = jlist_get(o, "instance_types", "resources.instance_types",
                       &r->instance_types, d);
    if (rc == 0)
        rc = jlist_get(o, "zones", "resources.zones", &r->zones, d);
    if (rc == 0)
        rc = jlist_get(o, "regions", "resources.regions", &r->regions, d);
    if (rc == 0)
        rc = jlist_get(o, "providers", "resources.providers", &r->providers,
                       d);
    const char *network = NULL;
    if (rc == 0)
        rc = jtext(o, "network", "resources.network", &network, d);
    if (rc == 0 && network != NULL && ebb__job_network_parse(network, &r->network_gbps) != 0)
        return fail(d, "resources.network: not a bandwidth (example: 25Gbps)");
    const json_t *gpu = jget(o, "gpu");
    if (rc != 0 || gpu == NULL)
        return rc;
    rc = check_keys(gpu, ebb__jobspec_gpu_keys, NULL, "resources.gpu", d);
    r->gpu_count = 1;
    if (rc == 0)
        rc = jcopy(gpu, "model", "resources.gpu.model", &r->gpu_model, d);
    if (rc == 0)
        rc = jint(gpu, "count", "resources.gpu.count", 1,
                  EBB__JOB_GPU_COUNT_MAX, &r->gpu_count, d);
    const json_t *mem = jget(gpu, "memory_gb");
    if (rc == 0 && mem != NULL) {
        if (!json_is_number(mem) || !(json_number_value(mem) > 0))
            return fail(d, "resources.gpu.memory_gb: expected a number more "
                           "than 0");
        r->gpu_memory_gb = json_number_value(mem);
    }
    return rc;
}

static int read_gang(const json_t *j, struct ebb__job_spec *s, struct ebb_diag *d)
{
    const json_t *o = jget(j, "gang");
    if (o == NULL)
        return 0;
    const char *restart = NULL;
    int rc = check_keys(o, ebb__jobspec_gang_keys, NULL, "gang", d);
    if (rc == 0)
        rc = jtext(o, "restart", "gang.restart", &restart, d);
    if (rc == 0 && restart != NULL && ebb__gang_restart_parse(restart, &s->gang_restart) != 0)
        return fail(d, "gang.restart: not one of whole, replace_lost");
    return rc;
}

static int read_checkpoint(const json_t *j, struct ebb__job_checkpoint *cp,
                           struct ebb_diag *d)
{
    const json_t *o = jget(j, "checkpoint");
    if (o == NULL)
        return 0;
    int rc = check_keys(o, ebb__jobspec_checkpoint_keys, NULL, "checkpoint",
                        d);
    if (rc == 0)
        rc = jcopy(o, "dir", "checkpoint.dir", &cp->dir, d);
    const char *sig = NULL;
    if (rc == 0)
        rc = jtext(o, "signal", "checkpoint.signal", &sig, d);
    if (rc == 0 && sig != NULL &&
        ebb__job_signal_parse(sig, &cp->signal, cp->signal_name) != 0) {
        char q[EBB_DIAG_QUOTE_SIZE];
        return fail(d, "checkpoint.signal: %s is not one of SIGUSR1, SIGUSR2, "
                       "SIGTERM, SIGINT, SIGHUP, SIGQUIT",
                    ebb_diag_quote(sig, strlen(sig), q, sizeof(q)));
    }
    if (rc == 0)
        rc = jdur_get(o, "grace", "checkpoint.grace", &cp->grace, d);
    if (rc == 0)
        rc = jdur_get(o, "every", "checkpoint.every", &cp->every, d);
    if (rc == 0)
        rc = jcopy(o, "store", "checkpoint.store", &cp->store, d);
    if (rc == 0 && cp->store != NULL && !ebb__job_ident_valid(cp->store))
        return fail(d, "checkpoint.store: not a valid name");
    const json_t *enc = jget(o, "encrypt");
    if (rc == 0 && enc != NULL && !json_is_boolean(enc))
        return fail(d, "checkpoint.encrypt: expected true or false");
    cp->has_encrypt = enc != NULL;
    cp->encrypt = enc != NULL ? json_is_true(enc) : cp->store != NULL;
    if (rc == 0)
        rc = jint(o, "keep", "checkpoint.keep", 1, EBB__JOB_KEEP_MAX, &cp->keep, d);
    return rc;
}

static int read_env(const json_t *j, struct ebb__job_spec *s,
                    struct ebb_diag *d)
{
    const json_t *o = jget(j, "env");
    if (o == NULL)
        return 0;
    if (!json_is_object(o))
        return fail(d, "env: expected an object");
    size_t n = json_object_size(o);
    if (n == 0)
        return 0;
    s->env = calloc(n + 1, sizeof(*s->env));
    if (s->env == NULL)
        return nomem(d);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        char q[EBB_DIAG_QUOTE_SIZE];
        if (!ebb__job_env_name_valid(key, strlen(key)) ||
            strncmp(key, "EBB_", 4) == 0)
            return fail(d, "env: %s is not a name a job may set",
                        ebb_diag_quote(key, strlen(key), q, sizeof(q)));
        if (!json_is_string(v) ||
            strlen(json_string_value(v)) != json_string_length(v))
            return fail(d, "env.%s: expected a string", key);
        s->env[s->n_env] = ebb_strfmt("%s=%s", key, json_string_value(v));
        if (s->env[s->n_env] == NULL)
            return nomem(d);
        s->n_env++;
    }
    return 0;
}

static int read_workdir(const json_t *j, struct ebb__job_spec *s, struct ebb_diag *d)
{
    int rc = jcopy(j, "workdir", "workdir", &s->workdir_src, d);
    if (rc == 0)
        rc = jlist_get(j, "workdir_exclude", "workdir_exclude", &s->workdir_exclude, d);
    if (rc != 0)
        return rc;
    if (s->workdir_src == NULL && s->workdir_exclude.n > 0)
        return fail(d, "workdir_exclude: the job has no workdir");
    if (s->workdir_exclude.n > EBB__WORKDIR_EXCLUDE_MAX)
        return fail(d, "workdir_exclude: more than %d patterns", EBB__WORKDIR_EXCLUDE_MAX);
    for (size_t i = 0; i < s->workdir_exclude.n; i++) {
        const char *why;
        if (!ebb__workdir_pattern_check(s->workdir_exclude.items[i], &why))
            return fail(d, "workdir_exclude[%zu]: %s", i, why);
    }
    return 0;
}

static int read_spec(const json_t *j, struct ebb__job_spec *s,
                     struct ebb_diag *d)
{
    static const char *const extra[] = {"file", "line", NULL};
    int rc = check_keys(j, ebb__jobspec_keys, extra, "job", d);
    if (rc != 0)
        return rc;
    const char *name;
    rc = jtext(j, "name", "name", &name, d);
    if (rc != 0)
        return rc;
    if (name == NULL)
        return fail(d, "missing required key \"name\"");
    if (!ebb__job_name_valid(name)) {
        char q[EBB_DIAG_QUOTE_SIZE];
        return fail(d, "name: %s is not a valid job name",
                    ebb_diag_quote(name, strlen(name), q, sizeof(q)));
    }
    s->name = strdup(name);
    if (s->name == NULL)
        return nomem(d);
    rc = read_run(j, s, d);
    if (rc == 0 && jget(j, "work") == NULL)
        return fail(d, "missing required key \"work\"");
    if (rc == 0)
        rc = jdur_get(j, "work", "work", &s->work, d);
    if (rc == 0)
        rc = read_deadline(j, s, d);
    const char *budget = NULL, *why;
    if (rc == 0)
        rc = jtext(j, "budget", "budget", &budget, d);
    if (rc == 0 && budget != NULL) {
        char q[EBB_DIAG_QUOTE_SIZE];
        if (ebb_parse_money_why(budget, &s->budget, &why) != 0 ||
            s->budget.amount <= 0)
            return fail(d, "budget: %s is not an amount more than 0%s%s%s",
                        ebb_diag_quote(budget, strlen(budget), q,
                                        sizeof(q)),
                        why != NULL ? " (" : "", why != NULL ? why : "",
                        why != NULL ? ")" : "");
        s->has_budget = 1;
    }
    s->restart_overhead = EBB__JOB_RESTART_OVERHEAD_DEFAULT;
    if (rc == 0)
        rc = jdur_get(j, "restart_overhead", "restart_overhead",
                      &s->restart_overhead, d);
    s->stall_after = 0;
    if (rc == 0)
        rc = jdur_get(j, "stall_after", "stall_after", &s->stall_after, d);
    s->min_gpu_util = 0;
    if (rc == 0)
        rc = jint(j, "min_gpu_util", "min_gpu_util", 0, 100, &s->min_gpu_util, d);
    if (rc == 0)
        rc = read_resources(j, &s->resources, d);
    const char *market = NULL;
    s->market = EBB_JOB_SPOT_FALLBACK;
    if (rc == 0)
        rc = jtext(j, "market", "market", &market, d);
    if (rc == 0 && market != NULL &&
        ebb__job_market_parse(market, &s->market) != 0)
        return fail(d, "market: not one of spot, on-demand, spot-fallback");
    ebb__job_signal_parse("SIGUSR1", &s->checkpoint.signal,
                          s->checkpoint.signal_name);
    s->checkpoint.grace = EBB__JOB_GRACE_DEFAULT;
    s->checkpoint.keep = EBB__JOB_KEEP_DEFAULT;
    if (rc == 0)
        rc = read_checkpoint(j, &s->checkpoint, d);
    if (rc == 0)
        rc = jcopy(j, "policy", "policy", &s->policy, d);
    if (rc == 0 && s->policy != NULL && !ebb__job_ident_valid(s->policy))
        return fail(d, "policy: not a valid name");
    if (rc == 0)
        rc = jcopy(j, "team", "team", &s->team, d);
    if (rc == 0 && s->team != NULL && !ebb__job_ident_valid(s->team))
        return fail(d, "team: not a valid name");
    if (rc == 0)
        rc = jcopy(j, "run_as", "run_as", &s->run_as, d);
    if (rc == 0 && s->run_as != NULL && !ebb__job_user_valid(s->run_as))
        return fail(d, "run_as: not a user name");
    s->max_retries = EBB__JOB_MAX_RETRIES_DEFAULT;
    if (rc == 0)
        rc = jint(j, "max_retries", "max_retries", 0,
                  EBB__JOB_MAX_RETRIES_MAX, &s->max_retries, d);
    /* Specs stored before priorities existed have none: normal. */
    s->priority = EBB__JOB_PRIORITY_NORMAL;
    if (rc == 0)
        rc = jint(j, "priority", "priority", 0, EBB__JOB_PRIORITY_MAX,
                  &s->priority, d);
    s->nodes = 1;
    if (rc == 0)
        rc = jint(j, "nodes", "nodes", 1, EBB__JOB_NODES_MAX, &s->nodes, d);
    s->gang_restart = EBB__GANG_WHOLE;
    if (rc == 0)
        rc = read_gang(j, s, d);
    s->has_notify = json_is_array(jget(j, "notify"));
    if (rc == 0)
        rc = jlist_get(j, "notify", "notify", &s->notify, d);
    if (rc == 0)
        rc = read_env(j, s, d);
    if (rc == 0)
        rc = read_workdir(j, s, d);
    if (rc == 0)
        rc = jtime_get(j, "submit", "submit", &s->has_submit, &s->submit, d);
    if (rc == 0)
        rc = jtext(j, "file", "file", &name, d);
    if (rc == 0 && name != NULL) {
        s->file = strdup(name);
        if (s->file == NULL)
            return nomem(d);
    }
    if (rc == 0)
        rc = jint(j, "line", "line", 0, INT32_MAX, &s->line, d);
    if (rc != 0)
        return rc;
    struct ebb__jobspec_where where = {.prefix = PREFIX};
    return ebb__jobspec_check(s, &where, d);
}

int ebb__jobspec_from_json(const json_t *j, struct ebb__job_spec *out,
                           struct ebb_diag *d)
{
    memset(out, 0, sizeof(*out));
    int rc = read_spec(j, out, d);
    if (rc != 0)
        ebb__jobspec_free(out);
    return rc;
}
