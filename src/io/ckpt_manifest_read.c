/* The strict manifest reader: every key known, every type and bound
 * checked, and the MAC verified over the canonical form of what was read
 * (see ckpt_manifest.h for why not over the bytes). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include <ebb/units.h>

#include "io/ckpt_internal.h"
#include "io/ckpt_manifest.h"

#define HEX64 64

/* Refuses with "manifest: WHEREKEY: ..." (where is "" or "files[3]."). */
static int bad(struct ebb__ckpt_error *err, const char *where, const char *key,
               const char *fmt, ...) EBB_PRINTF(4, 5);
static int bad(struct ebb__ckpt_error *err, const char *where, const char *key,
               const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_INVALID, 0, "manifest: %s%s: %s", where, key, msg);
    return EBB_EPROTO;
}

/* Refuses any key of `o` not in `keys` (NULL-terminated). */
static int only_keys(json_t *o, const char *const *keys, const char *where,
                     struct ebb__ckpt_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        bool known = false;
        for (size_t i = 0; keys[i] != NULL && !known; i++)
            known = strcmp(keys[i], k) == 0;
        if (!known) {
            char q[EBB_DIAG_QUOTE_SIZE];
            return bad(err, where, ebb_diag_quote(k, strlen(k), q, sizeof(q)),
                       "unknown key");
        }
    }
    return 0;
}

static int get(json_t *o, const char *key, json_type type, const char *what,
               const char *where, json_t **out, struct ebb__ckpt_error *err)
{
    *out = json_object_get(o, key);
    if (*out == NULL)
        return bad(err, where, key, "missing (%s)", what);
    /* jansson types true and false apart; "a boolean" asks for either. */
    bool is_bool = type == JSON_TRUE && json_is_boolean(*out);
    if (json_typeof(*out) != type && !is_bool)
        return bad(err, where, key, "is not %s", what);
    return 0;
}

/* A string of 1..max bytes without NUL. */
static int get_str(json_t *o, const char *key, size_t max, const char *where,
                   const char **out, struct ebb__ckpt_error *err)
{
    json_t *v;
    int rc = get(o, key, JSON_STRING, "a string", where, &v, err);
    if (rc != 0)
        return rc;
    *out = json_string_value(v);
    size_t n = json_string_length(v);
    if (n != strlen(*out))
        return bad(err, where, key, "holds a NUL byte");
    if (n == 0 || n > max)
        return bad(err, where, key, "has 1 to %zu bytes", max);
    return 0;
}

/* A string that must be exactly `want`. */
static int get_const(json_t *o, const char *key, const char *want, const char *where,
                     struct ebb__ckpt_error *err)
{
    const char *s;
    int rc = get_str(o, key, 64, where, &s, err);
    if (rc == 0 && strcmp(s, want) != 0)
        rc = bad(err, where, key, "is \"%s\" in format version 1", want);
    return rc;
}

static int get_int(json_t *o, const char *key, int64_t min, int64_t max, const char *where,
                   int64_t *out, struct ebb__ckpt_error *err)
{
    json_t *v;
    int rc = get(o, key, JSON_INTEGER, "an integer", where, &v, err);
    if (rc != 0)
        return rc;
    *out = json_integer_value(v);
    if (*out < min || *out > max)
        return bad(err, where, key, "is %lld to %lld", (long long)min, (long long)max);
    return 0;
}

static int get_sha(json_t *o, const char *key, const char *where, unsigned char out[32],
                   struct ebb__ckpt_error *err)
{
    const char *s;
    int rc = get_str(o, key, HEX64, where, &s, err);
    if (rc == 0 && (strlen(s) != HEX64 || strspn(s, "0123456789abcdef") != HEX64 ||
                    ebb__ckpt_unhex(s, out, 32) != 0))
        rc = bad(err, where, key, "is 64 lower-case hex digits");
    return rc;
}

static int read_file(json_t *v, size_t i, bool encrypt, struct ebb__ckpt_manifest_file *f,
                     struct ebb__ckpt_error *err)
{
    static const char *const plain_keys[] = {"path", "size", "sha256", NULL};
    static const char *const enc_keys[] = {"path", "size", "sha256", "stored_size",
                                           "stored_sha256", NULL};
    char name[32], where[34];
    snprintf(name, sizeof(name), "files[%zu]", i);
    snprintf(where, sizeof(where), "%s.", name);
    if (!json_is_object(v))
        return bad(err, "", name, "is not an object");
    const char *path;
    int64_t size = 0, stored = 0;
    int rc = only_keys(v, encrypt ? enc_keys : plain_keys, where, err);
    if (rc == 0)
        rc = get_str(v, "path", EBB__CKPT_PATH_MAX, where, &path, err);
    if (rc == 0)
        rc = get_int(v, "size", 0, (int64_t)EBB__CKPT_FILE_MAX, where, &size, err);
    if (rc == 0)
        rc = get_sha(v, "sha256", where, f->sha256, err);
    if (rc == 0 && encrypt)
        rc = get_int(v, "stored_size", 0, INT64_MAX, where, &stored, err);
    if (rc == 0 && encrypt)
        rc = get_sha(v, "stored_sha256", where, f->stored_sha256, err);
    if (rc != 0)
        return rc;
    f->size = (uint64_t)size;
    f->stored_size = (uint64_t)stored;
    f->path = strdup(path);
    return f->path == NULL ? EBB_ENOMEM : 0;
}

static int read_files(json_t *root, struct ebb__ckpt_manifest *m,
                      struct ebb__ckpt_error *err)
{
    json_t *files;
    int rc = get(root, "files", JSON_ARRAY, "an array", "", &files, err);
    if (rc != 0)
        return rc;
    size_t n = json_array_size(files);
    if (n > EBB__CKPT_FILES_MAX)
        return bad(err, "", "files", "holds %zu files; a checkpoint has at most %d", n,
                   EBB__CKPT_FILES_MAX);
    m->files = calloc(n > 0 ? n : 1, sizeof(m->files[0]));
    if (m->files == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = read_file(json_array_get(files, i), i, m->encrypt, &m->files[i], err);
        m->n_files = i + 1;
    }
    return rc;
}

/* "encryption" (when "encrypt" is true), "key" and "mac". */
static int read_params(json_t *root, struct ebb__ckpt_manifest *m, unsigned char mac[32],
                       struct ebb__ckpt_error *err)
{
    static const char *const enc_keys[] = {"algorithm", "kdf", "chunk_size", NULL};
    static const char *const key_keys[] = {"id", "version", NULL};
    static const char *const mac_keys[] = {"algorithm", "value", NULL};
    json_t *e = NULL, *key, *mo;
    int64_t v = 0;
    const char *id;
    int rc = 0;
    if (m->encrypt) {
        rc = get(root, "encryption", JSON_OBJECT, "an object", "", &e, err);
        if (rc == 0)
            rc = only_keys(e, enc_keys, "encryption.", err);
        if (rc == 0)
            rc = get_const(e, "algorithm", "AES-256-GCM", "encryption.", err);
        if (rc == 0)
            rc = get_const(e, "kdf", "HKDF-SHA256", "encryption.", err);
        if (rc == 0)
            rc = get_int(e, "chunk_size", EBB__CKPT_CHUNK_SIZE, EBB__CKPT_CHUNK_SIZE,
                         "encryption.", &v, err);
    }
    if (rc == 0)
        rc = get(root, "key", JSON_OBJECT, "an object", "", &key, err);
    if (rc == 0)
        rc = only_keys(key, key_keys, "key.", err);
    if (rc == 0)
        rc = get_str(key, "id", EBB__CKPT_KEY_ID_SIZE - 1, "key.", &id, err);
    if (rc == 0)
        rc = get_int(key, "version", 1, INT32_MAX, "key.", &v, err);
    if (rc != 0)
        return rc;
    memcpy(m->key_id, id, strlen(id) + 1);
    m->key_version = (uint32_t)v;
    rc = get(root, "mac", JSON_OBJECT, "an object", "", &mo, err);
    if (rc == 0)
        rc = only_keys(mo, mac_keys, "mac.", err);
    if (rc == 0)
        rc = get_const(mo, "algorithm", "HMAC-SHA256", "mac.", err);
    if (rc == 0)
        rc = get_sha(mo, "value", "mac.", mac, err);
    return rc;
}

/* Everything but the files and the MAC's parameters. */
static int read_head(json_t *root, struct ebb__ckpt_manifest *m, struct ebb__ckpt_error *err)
{
    static const char *const keys[] = {"format", "version", "checkpoint", "kind", "job",
                                       "created", "encrypt", "encryption", "key",
                                       "files", "mac", NULL};
    const char *name, *kind, *job, *created;
    json_t *enc;
    int64_t version = 0;
    int rc = only_keys(root, keys, "", err);
    if (rc == 0)
        rc = get_const(root, "format", EBB__CKPT_MANIFEST_FORMAT, "", err);
    if (rc == 0)
        rc = get_int(root, "version", 1, 1, "", &version, err);
    if (rc == 0)
        rc = get_str(root, "checkpoint", EBB__CKPT_NAME_MAX, "", &name, err);
    if (rc == 0)
        rc = get_str(root, "kind", 16, "", &kind, err);
    if (rc == 0 && strcmp(kind, "file") != 0 && strcmp(kind, "directory") != 0)
        rc = bad(err, "", "kind", "is \"file\" or \"directory\"");
    if (rc == 0)
        rc = get_str(root, "job", EBB__CKPT_JOB_MAX, "", &job, err);
    if (rc == 0)
        rc = get_str(root, "created", 64, "", &created, err);
    if (rc == 0 && ebb_parse_time(created, &m->created) != 0)
        rc = bad(err, "", "created", "is a time such as \"2026-12-02T02:11:16Z\"");
    if (rc == 0)
        rc = get(root, "encrypt", JSON_TRUE, "a boolean", "", &enc, err);
    if (rc != 0)
        return rc;
    m->encrypt = json_is_true(enc);
    if (!m->encrypt && json_object_get(root, "encryption") != NULL)
        return bad(err, "", "encryption", "is left out when \"encrypt\" is false");
    memcpy(m->name, name, strlen(name) + 1);
    memcpy(m->job, job, strlen(job) + 1);
    m->kind = strcmp(kind, "file") == 0 ? EBB__CKPT_KIND_FILE : EBB__CKPT_KIND_DIRECTORY;
    return 0;
}

/* Checks the MAC over the canonical form of `m`, after the key's id. */
static int verify(const struct ebb__ckpt_manifest *m, const struct ebb__ckpt_key *k,
                  const unsigned char mac[32], struct ebb__ckpt_error *err)
{
    char id[EBB__CKPT_KEY_ID_SIZE];
    if (ebb__ckpt_key_id(k, id) != 0)
        return EBB_EIO;
    if (strcmp(id, m->key_id) != 0) {
        ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_KEY, 0,
                       "manifest: written under key %s (version %u), not this job's key %s",
                       m->key_id, (unsigned)m->key_version, id);
        return EBB_EAUTH;
    }
    json_t *body = ebb__ckpt_manifest_body(m);
    unsigned char want[32];
    int rc = body == NULL ? EBB_ENOMEM : ebb__ckpt_manifest_mac(body, k, want);
    json_decref(body);
    if (rc == 0 && CRYPTO_memcmp(want, mac, 32) != 0) {
        ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_MAC, 0,
                       "manifest: its MAC does not match: it was altered after it was written");
        rc = EBB_EAUTH;
    }
    return rc;
}

int ebb__ckpt_manifest_read(const char *text, size_t len,
                            const struct ebb__ckpt_key *k,
                            struct ebb__ckpt_manifest **out,
                            struct ebb__ckpt_error *err)
{
    *out = NULL;
    if (err != NULL)
        memset(err, 0, sizeof(*err));
    if (len > EBB__CKPT_MANIFEST_MAX) {
        ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_INVALID, 0,
                       "manifest: %zu bytes; a manifest has at most %u", len,
                       EBB__CKPT_MANIFEST_MAX);
        return EBB_EPROTO;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL) {
        ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_INVALID, 0,
                       "manifest: not JSON: line %d, column %d: %s", je.line, je.column,
                       je.text);
        return EBB_EPROTO;
    }
    struct ebb__ckpt_manifest *m = calloc(1, sizeof(*m));
    unsigned char mac[32];
    int rc = m == NULL ? EBB_ENOMEM : 0;
    if (rc == 0 && !json_is_object(root))
        rc = bad(err, "", "(document)", "is not a JSON object");
    if (rc == 0)
        rc = read_head(root, m, err);
    if (rc == 0)
        rc = read_params(root, m, mac, err);
    if (rc == 0)
        rc = read_files(root, m, err);
    if (rc == 0 && ebb__ckpt_manifest_check(m, err) != 0) {
        /* The same rules as the writer's, reported as a refused manifest. */
        char msg[sizeof(err->diag.msg)];
        snprintf(msg, sizeof(msg), "%s", err != NULL ? err->diag.msg : "");
        ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_INVALID, 0, "manifest: %s", msg);
        rc = EBB_EPROTO;
    }
    if (rc == 0)
        rc = verify(m, k, mac, err);
    json_decref(root);
    if (rc == EBB_ENOMEM)
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "manifest: out of memory");
    if (rc != 0) {
        ebb__ckpt_manifest_free(m);
        return rc;
    }
    *out = m;
    return 0;
}
