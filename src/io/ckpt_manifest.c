/* The manifest's rules, its canonical form and MAC, and its writer
 * (ckpt_manifest.h); the reader is ckpt_manifest_read.c. */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <ebb/digest.h>
#include <ebb/units.h>

#include "io/ckpt_internal.h"
#include "io/ckpt_manifest.h"

#define COMPONENT_MAX 255

static bool has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
        if (*p < 0x20 || *p == 0x7f)
            return true;
    return false;
}

int ebb__ckpt_name_check(const char *name, const char **why)
{
    size_t n = strlen(name);
    *why = n == 0 || n > EBB__CKPT_NAME_MAX ? "has 1 to 255 bytes"
           : name[0] == '.'                 ? "does not start with '.' (a temporary)"
           : strchr(name, '/') != NULL      ? "has no '/'"
           : has_control(name)              ? "has no control characters"
                                            : NULL;
    return *why == NULL ? 0 : EBB_EINVAL;
}

int ebb__ckpt_path_check(const char *path, const char **why)
{
    size_t n = strlen(path);
    *why = NULL;
    if (n == 0 || n > EBB__CKPT_PATH_MAX)
        *why = "has 1 to 4096 bytes";
    else if (path[0] == '/')
        *why = "is relative (no leading '/')";
    else if (has_control(path))
        *why = "has no control characters";
    for (const char *p = path; *why == NULL && *p != '\0';) {
        size_t len = strcspn(p, "/");
        if (len == 0)
            *why = "has no empty component (\"//\" or a trailing '/')";
        else if (len > COMPONENT_MAX)
            *why = "has components of at most 255 bytes";
        else if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            *why = "has no \".\" or \"..\" component";
        p += len;
        if (*p == '/' && *why == NULL) {
            p++;
            if (*p == '\0')
                *why = "has no empty component (\"//\" or a trailing '/')";
        }
    }
    return *why == NULL ? 0 : EBB_EINVAL;
}

static bool printable_id(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > EBB__CKPT_JOB_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '/')
            return false;
    return true;
}

/* The order of paths in a manifest: byte by byte, with '/' before every
 * other byte (component by component: "a" < "a/b" < "a-b"). In that
 * order whatever lies below a path follows it at once, so checking each
 * path against the one before it finds every file that lies below
 * another ("a" and "a/b" cannot both be files), in linear time. Paths
 * hold no control bytes, so '/' can take the place of 1. */
static int path_cmp(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    int x = *a == '/' ? 1 : (unsigned char)*a, y = *b == '/' ? 1 : (unsigned char)*b;
    return x - y;
}

static int cmp_file(const void *a, const void *b)
{
    const struct ebb__ckpt_manifest_file *x = a, *y = b;
    return path_cmp(x->path, y->path);
}

/* Whether `inner` lies below `outer`. */
static bool below(const char *outer, const char *inner)
{
    size_t n = strlen(outer);
    return strncmp(outer, inner, n) == 0 && inner[n] == '/';
}

static int check_files(const struct ebb__ckpt_manifest *m, struct ebb__ckpt_error *err)
{
    for (size_t i = 0; i < m->n_files; i++) {
        const struct ebb__ckpt_manifest_file *f = &m->files[i];
        const char *why = NULL;
        if (f->path == NULL || ebb__ckpt_path_check(f->path, &why) != 0) {
            ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_INVALID, 0,
                           "files[%zu].path: a file's path %s", i,
                           why != NULL ? why : "is set");
            return EBB_EINVAL;
        }
        if (i > 0 && path_cmp(m->files[i - 1].path, f->path) >= 0) {
            ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_INVALID, 0,
                           "files[%zu].path: paths are unique and sorted, "
                           "'/' before every other byte", i);
            return EBB_EINVAL;
        }
        if (i > 0 && below(m->files[i - 1].path, f->path)) {
            ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_INVALID, 0,
                           "files[%zu].path: lies below another file's path", i);
            return EBB_EINVAL;
        }
        if (f->size > EBB__CKPT_FILE_MAX) {
            ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_INVALID, 0,
                           "files[%zu].size: at most %llu bytes", i,
                           (unsigned long long)EBB__CKPT_FILE_MAX);
            return EBB_EINVAL;
        }
        if (m->encrypt && f->stored_size != ebb__ckpt_stored_size(f->size)) {
            ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_INVALID, 0,
                           "files[%zu].stored_size: %llu bytes of plaintext are "
                           "stored as %llu bytes", i, (unsigned long long)f->size,
                           (unsigned long long)ebb__ckpt_stored_size(f->size));
            return EBB_EINVAL;
        }
    }
    return 0;
}

int ebb__ckpt_manifest_check(const struct ebb__ckpt_manifest *m,
                             struct ebb__ckpt_error *err)
{
    const char *why = NULL;
    const char *field = NULL;
    if (memchr(m->name, '\0', sizeof(m->name)) == NULL ||
        ebb__ckpt_name_check(m->name, &why) != 0)
        field = "checkpoint: a checkpoint's name";
    else if (memchr(m->job, '\0', sizeof(m->job)) == NULL || !printable_id(m->job)) {
        field = "job: a job id";
        why = "has 1 to 64 printable bytes, no space or '/'";
    } else if (m->created < 0 || m->created > EBB__CKPT_CREATED_MAX) {
        field = "created: the creation time";
        why = "lies in the years 1970 to 9999";
    } else if (m->kind != EBB__CKPT_KIND_FILE && m->kind != EBB__CKPT_KIND_DIRECTORY) {
        field = "kind";
        why = "is \"file\" or \"directory\"";
    } else if (m->key_version == 0 || m->key_version > INT32_MAX) {
        field = "key.version: a key's version";
        why = "is 1 to 2147483647";
    } else if (memchr(m->key_id, '\0', sizeof(m->key_id)) == NULL ||
               strlen(m->key_id) != EBB__CKPT_KEY_ID_SIZE - 1 ||
               strspn(m->key_id, "0123456789abcdef") != EBB__CKPT_KEY_ID_SIZE - 1) {
        field = "key.id: a key's id";
        why = "is 32 lower-case hex digits";
    } else if (m->n_files > EBB__CKPT_FILES_MAX || (m->n_files > 0 && m->files == NULL)) {
        field = "files: a checkpoint";
        why = "has at most 100000 files";
    } else if (m->kind == EBB__CKPT_KIND_FILE &&
               (m->n_files != 1 || m->files[0].path == NULL ||
                strcmp(m->files[0].path, m->name) != 0)) {
        field = "files: a checkpoint of kind \"file\"";
        why = "has one file, whose path is the checkpoint's name";
    }
    if (field != NULL) {
        ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_INVALID, 0, "%s %s", field, why);
        return EBB_EINVAL;
    }
    return check_files(m, err);
}

void ebb__ckpt_manifest_sort(struct ebb__ckpt_manifest *m)
{
    if (m->n_files > 1)
        qsort(m->files, m->n_files, sizeof(m->files[0]), cmp_file);
}

int ebb__ckpt_manifest_set_key(struct ebb__ckpt_manifest *m,
                               const struct ebb__ckpt_key *k, uint32_t version)
{
    m->key_version = version;
    return ebb__ckpt_key_id(k, m->key_id);
}

static json_t *hex_json(const unsigned char *b, size_t len)
{
    char hex[2 * 32 + 1];
    ebb_hex(b, len, hex);
    return json_string(hex);
}

static json_t *file_json(const struct ebb__ckpt_manifest_file *f, bool encrypt)
{
    json_t *o = json_object();
    json_object_set_new(o, "path", json_string(f->path));
    json_object_set_new(o, "size", json_integer((json_int_t)f->size));
    json_object_set_new(o, "sha256", hex_json(f->sha256, 32));
    if (encrypt) {
        json_object_set_new(o, "stored_size", json_integer((json_int_t)f->stored_size));
        json_object_set_new(o, "stored_sha256", hex_json(f->stored_sha256, 32));
    }
    return o;
}

json_t *ebb__ckpt_manifest_body(const struct ebb__ckpt_manifest *m)
{
    char created[40];
    json_t *o = json_object();
    json_t *files = json_array();
    json_t *key = json_object();
    json_object_set_new(o, "format", json_string(EBB__CKPT_MANIFEST_FORMAT));
    json_object_set_new(o, "version", json_integer(1));
    json_object_set_new(o, "checkpoint", json_string(m->name));
    json_object_set_new(o, "kind", json_string(m->kind == EBB__CKPT_KIND_FILE ? "file"
                                                                            : "directory"));
    json_object_set_new(o, "job", json_string(m->job));
    json_object_set_new(o, "created",
                        json_string(ebb_format_time_exact(m->created, created, sizeof(created))));
    json_object_set_new(o, "encrypt", json_boolean(m->encrypt));
    if (m->encrypt) {
        json_t *e = json_object();
        json_object_set_new(e, "algorithm", json_string("AES-256-GCM"));
        json_object_set_new(e, "kdf", json_string("HKDF-SHA256"));
        json_object_set_new(e, "chunk_size", json_integer(EBB__CKPT_CHUNK_SIZE));
        json_object_set_new(o, "encryption", e);
    }
    json_object_set_new(key, "id", json_string(m->key_id));
    json_object_set_new(key, "version", json_integer(m->key_version));
    json_object_set_new(o, "key", key);
    for (size_t i = 0; i < m->n_files; i++)
        json_array_append_new(files, file_json(&m->files[i], m->encrypt));
    json_object_set_new(o, "files", files);
    /* jansson's setters fail only on allocation: count what arrived. */
    if (json_object_size(o) != (m->encrypt ? 10u : 9u) ||
        json_array_size(files) != m->n_files) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int ebb__ckpt_manifest_mac(json_t *body, const struct ebb__ckpt_key *k,
                           unsigned char mac[32])
{
    char *canon = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
    if (canon == NULL)
        return EBB_ENOMEM;
    unsigned char key[32];
    unsigned int n = 0;
    int rc = ebb__ckpt_manifest_key(k, key);
    if (rc == 0 && HMAC(EVP_sha256(), key, sizeof(key), (const unsigned char *)canon,
                        strlen(canon), mac, &n) == NULL)
        rc = EBB_EIO;
    OPENSSL_cleanse(key, sizeof(key));
    free(canon);
    return rc;
}

int ebb__ckpt_manifest_write(const struct ebb__ckpt_manifest *m,
                             const struct ebb__ckpt_key *k, char **out,
                             size_t *len, struct ebb__ckpt_error *err)
{
    *out = NULL;
    char id[EBB__CKPT_KEY_ID_SIZE];
    int rc = ebb__ckpt_manifest_check(m, err);
    if (rc != 0)
        return rc;
    if (ebb__ckpt_key_id(k, id) != 0 || strcmp(id, m->key_id) != 0) {
        ebb__ckpt_fail(err, EBB__CKPT_MANIFEST_KEY, 0,
                       "key.id: the manifest names key %s, not the one given", m->key_id);
        return EBB_EINVAL;
    }
    json_t *body = ebb__ckpt_manifest_body(m);
    unsigned char mac[32];
    rc = body == NULL ? EBB_ENOMEM : ebb__ckpt_manifest_mac(body, k, mac);
    if (rc == 0) {
        json_t *mo = json_object();
        json_object_set_new(mo, "algorithm", json_string("HMAC-SHA256"));
        json_object_set_new(mo, "value", hex_json(mac, sizeof(mac)));
        json_object_set_new(body, "mac", mo);
        *out = json_object_size(mo) == 2 ? json_dumps(body, JSON_INDENT(2) | JSON_SORT_KEYS)
                                         : NULL;
        rc = *out == NULL ? EBB_ENOMEM : 0;
    }
    json_decref(body);
    if (rc != 0) {
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "writing the manifest failed: %s",
                       ebb_strerror(rc));
        return rc;
    }
    *len = strlen(*out);
    return 0;
}

int ebb__ckpt_manifest_match(const struct ebb__ckpt_manifest_file *f, bool encrypted,
                             const struct ebb__ckpt_sums *sums,
                             struct ebb__ckpt_error *err)
{
    const char *what = NULL;
    if (encrypted && sums->stored_size != f->stored_size)
        what = "the stored object's size";
    else if (encrypted && CRYPTO_memcmp(sums->stored_sha256, f->stored_sha256, 32) != 0)
        what = "the stored object's SHA-256";
    else if (sums->size != f->size)
        what = "the size";
    else if (CRYPTO_memcmp(sums->sha256, f->sha256, 32) != 0)
        what = "the SHA-256";
    if (what == NULL)
        return 0;
    ebb__ckpt_fail(err, EBB__CKPT_MISMATCH, 0, "%s: %s differs from the manifest's",
                   f->path, what);
    return EBB_EAUTH;
}

void ebb__ckpt_manifest_clear(struct ebb__ckpt_manifest *m)
{
    for (size_t i = 0; i < m->n_files; i++)
        free(m->files[i].path);
    free(m->files);
    m->files = NULL;
    m->n_files = 0;
}

void ebb__ckpt_manifest_free(struct ebb__ckpt_manifest *m)
{
    if (m == NULL)
        return;
    ebb__ckpt_manifest_clear(m);
    free(m);
}
