/* Parsing the job document with jansson. */
#include "agent/jobdoc.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include <ebb/common.h>

#include "base/str.h"

#define DEFAULT_GRACE_MS INT64_C(120000)
#define DEFAULT_HEARTBEAT_MS INT64_C(5000)
#define DEFAULT_KEEP 3

int agent_signal_from_name(const char *name)
{
    static const struct {
        const char *name;
        int sig;
    } table[] = {
        {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGTERM", SIGTERM},
        {"SIGINT", SIGINT},   {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(table[i].name, name) == 0 || strcmp(table[i].name + 3, name) == 0)
            return table[i].sig;
    return 0;
}

static int fail(char *err, size_t err_size, const char *fmt, ...) EBB_PRINTF(3, 4);
static int fail(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    return EBB_EINVAL;
}

/* Copies the string member `key` of `obj` into `*out`: `def` when absent
 * (NULL def: required). */
static int get_string(json_t *obj, const char *key, const char *def, char **out,
                      char *err, size_t err_size)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_null(v)) {
        if (def == NULL)
            return fail(err, err_size, "the job document has no \"%s\"", key);
        *out = ebb_strfmt("%s", def);
    } else if (!json_is_string(v)) {
        return fail(err, err_size, "job document: \"%s\" is not a string", key);
    } else {
        *out = ebb_strfmt("%s", json_string_value(v));
    }
    return *out ? 0 : EBB_ENOMEM;
}

static int get_int(json_t *obj, const char *key, int64_t def, int64_t min,
                   int64_t *out, char *err, size_t err_size)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min)
        return fail(err, err_size, "job document: \"%s\" is not an integer >= %lld",
                    key, (long long)min);
    *out = json_integer_value(v);
    return 0;
}

static int get_signal(json_t *obj, const char *key, const char *def, char **name,
                      int *sig, char *err, size_t err_size)
{
    int rc = get_string(obj, key, def, name, err, err_size);
    if (rc != 0)
        return rc;
    *sig = agent_signal_from_name(*name);
    if (*sig == 0)
        return fail(err, err_size, "job document: \"%s\": \"%s\" is not one of "
                    "SIGUSR1, SIGUSR2, SIGTERM, SIGINT, SIGHUP, SIGQUIT", key, *name);
    return 0;
}

static int get_argv(json_t *root, struct agent_jobdoc *doc, char *err, size_t err_size)
{
    json_t *argv = json_object_get(root, "argv");
    if (!json_is_array(argv) || json_array_size(argv) == 0)
        return fail(err, err_size, "job document: \"argv\" must be a non-empty "
                    "array of strings");
    size_t n = json_array_size(argv);
    doc->argv = calloc(n + 1, sizeof(char *));
    if (doc->argv == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(argv, i);
        if (!json_is_string(a))
            return fail(err, err_size, "job document: argv[%zu] is not a string", i);
        doc->argv[i] = ebb_strfmt("%s", json_string_value(a));
        if (doc->argv[i] == NULL)
            return EBB_ENOMEM;
    }
    return 0;
}

/* A name of letters, digits and '_', not starting with a digit. */
static bool env_name_ok(const char *name)
{
    static const char word[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
    size_t n = strlen(name);
    return n > 0 && strspn(name, word) == n && !(name[0] >= '0' && name[0] <= '9');
}

int agent_env_parse(json_t *env, const char *what, bool strict, char ***out, char *err,
                    size_t err_size)
{
    *out = NULL;
    if (env != NULL && !json_is_null(env) && !json_is_object(env))
        return fail(err, err_size, "%s is not an object", what);
    size_t n = json_is_object(env) ? json_object_size(env) : 0;
    if (strict && n > AGENT_ENV_MAX)
        return fail(err, err_size, "%s has %zu variables, more than %d", what, n,
                    AGENT_ENV_MAX);
    *out = calloc(n + 1, sizeof(char *));
    if (*out == NULL)
        return EBB_ENOMEM;
    size_t i = 0;
    const char *key;
    json_t *v;
    json_object_foreach(env, key, v) {
        if (!json_is_string(v))
            return fail(err, err_size, "%s.%.64s is not a string", what, key);
        if (key[0] == '\0' || strchr(key, '=') != NULL)
            return fail(err, err_size, "%s name \"%.64s\" is empty or contains '='", what,
                        key);
        if (strict && !env_name_ok(key))
            return fail(err, err_size, "%s name \"%.64s\" is not a variable name "
                        "(letters, digits and '_', not starting with a digit)", what, key);
        size_t len = json_string_length(v);
        if (strict && (len > AGENT_ENV_VALUE_MAX || strlen(json_string_value(v)) != len))
            return fail(err, err_size, "%s.%.64s is %s", what, key,
                        len > AGENT_ENV_VALUE_MAX ? "longer than 64 KiB"
                                                  : "a value with a NUL byte");
        (*out)[i] = ebb_strfmt("%s=%s", key, json_string_value(v));
        if ((*out)[i++] == NULL)
            return EBB_ENOMEM;
    }
    return 0;
}

/* Copies `n` lowercase hex digits of string member `key` into out. */
static int get_hex(json_t *obj, const char *key, size_t n, char *out)
{
    const char *v = json_string_value(json_object_get(obj, key));
    if (v == NULL || strlen(v) != n || strspn(v, "0123456789abcdef") != n)
        return -1;
    memcpy(out, v, n + 1);
    return 0;
}

/* workdir_archive {url, sha256, size, stored_size[, key]}, when present. */
static int get_workdir_archive(json_t *root, struct agent_workdir_archive *w, char *err,
                               size_t err_size)
{
    json_t *o = json_object_get(root, "workdir_archive");
    if (o == NULL || json_is_null(o))
        return 0;
    json_t *size = json_object_get(o, "size"), *stored = json_object_get(o, "stored_size");
    const char *url = json_string_value(json_object_get(o, "url"));
    json_t *key = json_object_get(o, "key");
    if (!json_is_object(o) || url == NULL ||
        (strncmp(url, "file:///", 8) != 0 && strncmp(url, "https://", 8) != 0 &&
         strncmp(url, "http://", 7) != 0) ||
        get_hex(o, "sha256", 64, w->sha256) != 0 || !json_is_integer(size) ||
        json_integer_value(size) <= 0 || !json_is_integer(stored) ||
        json_integer_value(stored) < json_integer_value(size) ||
        (key != NULL && !json_is_null(key) && get_hex(o, "key", 64, w->key) != 0))
        return fail(err, err_size, "job document: \"workdir_archive\" is not {url "
                    "(file:///, http:// or https://), sha256 (64 hex digits), size, "
                    "stored_size (>= size), key (64 hex digits, optional)}");
    w->size = (uint64_t)json_integer_value(size);
    w->stored_size = (uint64_t)json_integer_value(stored);
    w->url = ebb_strfmt("%s", url);
    return w->url ? 0 : EBB_ENOMEM;
}

static int get_bool(json_t *obj, const char *key, bool def, bool *out, char *err,
                    size_t err_size)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return fail(err, err_size, "job document: \"%s\" is not true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* "store": {name, kind, encrypt, key, key_version, part_size, parallel}. */
static int get_store(json_t *root, struct agent_jobdoc *doc, char *err, size_t err_size)
{
    json_t *st = json_object_get(root, "store");
    if (st == NULL || json_is_null(st))
        return 0;
    if (!json_is_object(st))
        return fail(err, err_size, "job document: \"store\" is not an object");
    struct agent_store *s = &doc->store;
    doc->has_store = true;
    char *kind = NULL;
    int64_t parallel = 0;
    int rc = get_string(st, "name", NULL, &s->name, err, err_size);
    if (rc == 0)
        rc = get_string(st, "kind", NULL, &kind, err, err_size);
    if (rc == 0)
        rc = get_bool(st, "encrypt", true, &s->encrypt, err, err_size);
    if (rc == 0)
        rc = get_int(st, "key_version", 1, 1, &s->key_version, err, err_size);
    if (rc == 0)
        rc = get_int(st, "part_size", (int64_t)64 << 20, 1, &s->part_size, err, err_size);
    if (rc == 0)
        rc = get_int(st, "parallel", 4, 1, &parallel, err, err_size);
    if (rc != 0) {
        free(kind);
        return rc;
    }
    if (strcmp(kind, "s3") == 0)
        s->kind = AGENT_STORE_S3;
    else if (strcmp(kind, "oss") == 0)
        s->kind = AGENT_STORE_OSS;
    else if (strcmp(kind, "file") == 0)
        s->kind = AGENT_STORE_FILE;
    else
        rc = fail(err, err_size, "job document: store.kind \"%.32s\" is not s3, oss "
                  "or file", kind);
    free(kind);
    if (rc != 0)
        return rc;
    if (s->name[0] == '\0')
        return fail(err, err_size, "job document: store.name is empty");
    if (s->part_size < AGENT_PART_MIN || s->part_size > AGENT_PART_MAX)
        return fail(err, err_size, "job document: store.part_size %lld is not between "
                    "5 MiB and 5 GiB", (long long)s->part_size);
    if (parallel > AGENT_PARALLEL_MAX)
        return fail(err, err_size, "job document: store.parallel %lld is not between "
                    "1 and %d", (long long)parallel, AGENT_PARALLEL_MAX);
    s->parallel = (int)parallel;
    if (s->key_version > UINT32_MAX)
        return fail(err, err_size, "job document: store.key_version is too large");
    /* Without encryption the key still authenticates the manifests, when
     * ebbd sends it. */
    json_t *key = json_object_get(st, "key");
    if (!s->encrypt && (key == NULL || json_is_null(key)))
        return 0;
    const char *hex = json_string_value(key);
    size_t n = hex ? strlen(hex) : 0;
    bool ok = n == 64;
    for (size_t i = 0; ok && i < n; i++)
        ok = ebb__hex_digit(hex[i]) >= 0;
    if (!ok)
        return fail(err, err_size, "job document: store.key is not 64 hex digits");
    memcpy(s->key_hex, hex, 65);
    return 0;
}

/* checkpoint.resume: a gang member's checkpoint to resume from, by name
 * ("" = none); a plain entry name of the directory, never a path. */
static int get_resume(json_t *ck, struct agent_jobdoc *doc, char *err, size_t err_size)
{
    json_t *v = json_object_get(ck, "resume");
    if (v == NULL || json_is_null(v))
        return 0;
    const char *name = json_string_value(v);
    if (name == NULL || strlen(name) != json_string_length(v) || strlen(name) > 255 ||
        strchr(name, '/') != NULL || name[0] == '.')
        return fail(err, err_size, "job document: checkpoint.resume is not a checkpoint's "
                    "name (a string without '/', not starting with '.')");
    doc->has_resume = true;
    doc->resume = ebb_strfmt("%s", name);
    return doc->resume ? 0 : EBB_ENOMEM;
}

/* gang: {nodes, rank}, when the job is a gang's member. */
static int get_gang(json_t *root, struct agent_jobdoc *doc, char *err, size_t err_size)
{
    json_t *g = json_object_get(root, "gang");
    if (g == NULL || json_is_null(g))
        return 0;
    json_t *nodes = json_object_get(g, "nodes"), *rank = json_object_get(g, "rank");
    if (!json_is_object(g) || !json_is_integer(nodes) || !json_is_integer(rank) ||
        json_integer_value(nodes) < 1 || json_integer_value(nodes) > 64 ||
        json_integer_value(rank) < 0 || json_integer_value(rank) >= json_integer_value(nodes))
        return fail(err, err_size, "job document: \"gang\" is not {nodes (1..64), "
                    "rank (0..nodes-1)}");
    doc->gang_nodes = (int)json_integer_value(nodes);
    doc->gang_rank = (int)json_integer_value(rank);
    return 0;
}

static int parse_root(json_t *root, struct agent_jobdoc *doc, char *err, size_t err_size)
{
    int rc = get_string(root, "job_id", NULL, &doc->job_id, err, err_size);
    if (rc == 0)
        rc = get_string(root, "instance_id", "", &doc->instance_id, err, err_size);
    if (rc == 0)
        rc = get_argv(root, doc, err, err_size);
    if (rc == 0)
        rc = agent_env_parse(json_object_get(root, "env"), "job document: env", false,
                             &doc->env, err, err_size);
    if (rc == 0)
        rc = get_string(root, "workdir", "", &doc->workdir, err, err_size);
    if (rc == 0)
        rc = get_string(root, "progress_file", "", &doc->progress_file, err, err_size);
    if (rc == 0)
        rc = get_int(root, "heartbeat_ms", DEFAULT_HEARTBEAT_MS, 1, &doc->heartbeat_ms,
                     err, err_size);
    if (rc == 0)
        rc = get_workdir_archive(root, &doc->workdir_archive, err, err_size);
    if (rc == 0)
        rc = get_store(root, doc, err, err_size);
    if (rc != 0)
        return rc;
    json_t *shell = json_object_get(root, "shell");
    if (shell != NULL && !json_is_null(shell) && !json_is_boolean(shell))
        return fail(err, err_size, "job document: \"shell\" is not true or false");
    doc->shell = json_is_true(shell);

    json_t *ck = json_object_get(root, "checkpoint");
    if (!json_is_object(ck))
        return fail(err, err_size, "the job document has no \"checkpoint\" object");
    int64_t keep = 0;
    rc = get_string(ck, "dir", NULL, &doc->ckpt_dir, err, err_size);
    if (rc == 0)
        rc = get_string(ck, "default_dir", "", &doc->ckpt_default_dir, err, err_size);
    if (rc == 0)
        rc = get_signal(ck, "signal", "SIGUSR1", &doc->signal_name, &doc->signal,
                        err, err_size);
    if (rc == 0)
        rc = get_signal(ck, "periodic_signal", "SIGUSR2", &doc->periodic_signal_name,
                        &doc->periodic_signal, err, err_size);
    if (rc == 0)
        rc = get_int(ck, "every_ms", 0, 0, &doc->every_ms, err, err_size);
    if (rc == 0)
        rc = get_int(ck, "grace_ms", DEFAULT_GRACE_MS, 0, &doc->grace_ms, err, err_size);
    if (rc == 0)
        rc = get_int(ck, "keep", DEFAULT_KEEP, 1, &keep, err, err_size);
    if (rc != 0)
        return rc;
    if (doc->ckpt_dir[0] == '\0' && doc->ckpt_default_dir[0] == '\0' && !doc->has_store)
        return fail(err, err_size, "job document: checkpoint.dir and "
                    "checkpoint.default_dir are empty");
    if (keep > 1000000)
        return fail(err, err_size, "job document: checkpoint.keep is too large");
    doc->keep = (int)keep;
    rc = get_resume(ck, doc, err, err_size);
    return rc == 0 ? get_gang(root, doc, err, err_size) : rc;
}

int agent_jobdoc_parse(const char *text, size_t len, struct agent_jobdoc *doc,
                       char *err, size_t err_size)
{
    *doc = (struct agent_jobdoc){0};
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (root == NULL)
        return fail(err, err_size, "the job document is not JSON: %s (line %d)",
                    jerr.text, jerr.line);
    int rc = json_is_object(root)
                 ? parse_root(root, doc, err, err_size)
                 : fail(err, err_size, "the job document is not a JSON object");
    json_decref(root);
    if (rc == EBB_ENOMEM)
        snprintf(err, err_size, "out of memory reading the job document");
    return rc;
}

void agent_strv_free(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

void agent_jobdoc_free(struct agent_jobdoc *doc)
{
    free(doc->job_id);
    free(doc->instance_id);
    agent_strv_free(doc->argv);
    agent_strv_free(doc->env);
    free(doc->resume);
    free(doc->workdir);
    free(doc->ckpt_dir);
    free(doc->ckpt_default_dir);
    free(doc->signal_name);
    free(doc->periodic_signal_name);
    free(doc->progress_file);
    free(doc->workdir_archive.url);
    OPENSSL_cleanse(doc->workdir_archive.key, sizeof(doc->workdir_archive.key));
    free(doc->store.name);
    explicit_bzero(doc->store.key_hex, sizeof(doc->store.key_hex));
    *doc = (struct agent_jobdoc){0};
}
