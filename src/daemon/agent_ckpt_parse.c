/* The checkpoint endpoints' request bodies (see agent_ckpt_parse.h). */
#include "daemon/agent_ckpt_parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Agents' durations beyond a week are not measurements. */
#define CKPT_MS_MAX ((int64_t)7 * 24 * 3600 * 1000)

static int refuse(char *why, size_t len, const char *fmt, ...) EBB_PRINTF(3, 4);
static int refuse(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return EBB_EINVAL;
}

/* A non-negative integer at `key` of `o` no larger than `max`. */
static int get_size(const json_t *o, const char *key, uint64_t max, uint64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) > max)
        return EBB_EINVAL;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

int64_t ebb__ckpt_parts_of(int64_t stored_size, int64_t part_size, bool multipart)
{
    if (!multipart || part_size <= 0 || stored_size <= part_size)
        return 0;
    return (stored_size + part_size - 1) / part_size;
}

int ebb__agent_ckpt_offer_parse(const json_t *body,
                                const struct ebb__ckpt_offer_rules *rules,
                                struct ebb__ckpt_manifest *m, char *why,
                                size_t why_len)
{
    memset(m, 0, sizeof(*m));
    const char *name = json_string_value(json_object_get(body, "name"));
    const char *kind = json_string_value(json_object_get(body, "kind"));
    const json_t *files = json_object_get(body, "files");
    if (!json_is_object(body) || name == NULL || strlen(name) > EBB__CKPT_NAME_MAX ||
        strlen(name) != json_string_length(json_object_get(body, "name")))
        return refuse(why, why_len, "\"name\" is missing, not a string or longer "
                      "than %d bytes", EBB__CKPT_NAME_MAX);
    if (kind != NULL && strcmp(kind, "file") != 0 && strcmp(kind, "directory") != 0)
        return refuse(why, why_len, "\"kind\" is \"file\" or \"directory\"");
    if (!json_is_array(files) || json_array_size(files) == 0 ||
        json_array_size(files) > EBB__CKPT_FILES_MAX)
        return refuse(why, why_len, "\"files\" is an array of 1 to %d files",
                      EBB__CKPT_FILES_MAX);
    if (strlen(rules->job_id) > EBB__CKPT_JOB_MAX ||
        strlen(rules->key_id) != EBB__CKPT_KEY_ID_SIZE - 1)
        return refuse(why, why_len, "the job cannot store checkpoints");
    snprintf(m->name, sizeof(m->name), "%s", name);
    snprintf(m->job, sizeof(m->job), "%s", rules->job_id);
    memcpy(m->key_id, rules->key_id, EBB__CKPT_KEY_ID_SIZE);
    m->key_version = rules->key_version;
    m->encrypt = rules->encrypt;
    m->kind = kind != NULL && strcmp(kind, "file") == 0 ? EBB__CKPT_KIND_FILE
                                                         : EBB__CKPT_KIND_DIRECTORY;
    size_t n = json_array_size(files);
    m->files = calloc(n, sizeof(m->files[0]));
    if (m->files == NULL)
        return EBB_ENOMEM;
    m->n_files = n;
    int64_t urls = 0;
    int64_t max_object = rules->multipart ? rules->part_size * EBB__OBJSTORE_PARTS_MAX
                                          : EBB__OBJSTORE_PART_MAX;
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_array_get(files, i);
        const json_t *path = json_object_get(f, "path");
        struct ebb__ckpt_manifest_file *mf = &m->files[i];
        if (!json_is_string(path) || json_string_length(path) > EBB__CKPT_PATH_MAX ||
            strlen(json_string_value(path)) != json_string_length(path))
            return refuse(why, why_len, "files[%zu].path is missing, not a string or "
                          "longer than %d bytes", i, EBB__CKPT_PATH_MAX);
        if (get_size(f, "size", EBB__CKPT_FILE_MAX, &mf->size) != 0 ||
            get_size(f, "stored_size", EBB__CKPT_FILE_MAX + EBB__CKPT_HEADER_LEN +
                     (EBB__CKPT_FILE_MAX / EBB__CKPT_CHUNK_SIZE + 1) * EBB__CKPT_TAG_LEN,
                     &mf->stored_size) != 0)
            return refuse(why, why_len, "files[%zu]: \"size\" and \"stored_size\" are "
                          "integers from 0 to the format's 16 TiB", i);
        if ((int64_t)mf->stored_size > max_object)
            return refuse(why, why_len, "files[%zu]: %llu bytes is more than one object "
                          "of this store holds (%lld)", i,
                          (unsigned long long)mf->stored_size, (long long)max_object);
        int64_t parts = ebb__ckpt_parts_of((int64_t)mf->stored_size, rules->part_size,
                                           rules->multipart);
        urls += parts > 0 ? parts : 1;
        if (urls > EBB__CKPT_URLS_MAX)
            return refuse(why, why_len, "the files need more than %d uploads (parts "
                          "and PUTs) in all", EBB__CKPT_URLS_MAX);
        mf->path = strdup(json_string_value(path));
        if (mf->path == NULL)
            return EBB_ENOMEM;
    }
    struct ebb__ckpt_error err = {0};
    if (ebb__ckpt_manifest_check(m, &err) != 0)
        return refuse(why, why_len, "%s", err.diag.msg);
    return 0;
}

/* `n` bytes of SHA-256 as 64 hex digits at `key` of `o` into `out`. */
static int get_sha(const json_t *o, const char *key, unsigned char out[32])
{
    const char *hex = json_string_value(json_object_get(o, key));
    return hex != NULL && strlen(hex) == 64 && ebb__ckpt_unhex(hex, out, 32) == 0
               ? 0 : EBB_EINVAL;
}

/* An ETag: 1 to EBB__CKPT_ETAG_MAX printable ASCII bytes. */
static const char *get_etag(const json_t *v)
{
    const char *s = json_string_value(v);
    if (s == NULL || s[0] == '\0' || json_string_length(v) > EBB__CKPT_ETAG_MAX ||
        strlen(s) != json_string_length(v))
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
        if (*p < 0x20 || *p > 0x7e)
            return NULL;
    return s;
}

static int get_ms(const json_t *o, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (v == NULL) {
        *out = 0;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > CKPT_MS_MAX)
        return EBB_EINVAL;
    *out = json_integer_value(v);
    return 0;
}

/* One file's ETag or parts into a new JSON value (*out), or a refusal. */
static int file_etags(const json_t *f, size_t i, int64_t parts, bool multipart,
                      json_t **out, char *why, size_t why_len)
{
    *out = NULL;
    if (parts == 0) {
        const json_t *e = json_object_get(f, "etag");
        const char *etag = e != NULL ? get_etag(e) : "";
        if (etag == NULL || (multipart && etag[0] == '\0'))
            return refuse(why, why_len, "files[%zu].etag is the ETag its PUT "
                          "answered (1 to %d printable bytes)", i, EBB__CKPT_ETAG_MAX);
        *out = json_string(etag);
        return *out == NULL ? EBB_ENOMEM : 0;
    }
    const json_t *list = json_object_get(f, "parts");
    if (!json_is_array(list) || (int64_t)json_array_size(list) != parts)
        return refuse(why, why_len, "files[%zu].parts lists its %lld parts", i,
                      (long long)parts);
    json_t *tags = json_array();
    if (tags == NULL)
        return EBB_ENOMEM;
    for (size_t k = 0; k < json_array_size(list); k++) {
        const json_t *p = json_array_get(list, k);
        const char *etag = get_etag(json_object_get(p, "etag"));
        const json_t *num = json_object_get(p, "number");
        if (etag == NULL || !json_is_integer(num) ||
            json_integer_value(num) != (json_int_t)k + 1) {
            json_decref(tags);
            return refuse(why, why_len, "files[%zu].parts[%zu] is {\"number\": %zu, "
                          "\"etag\": ETAG} (parts in order from 1)", i, k, k + 1);
        }
        if (json_array_append_new(tags, json_string(etag)) != 0) {
            json_decref(tags);
            return EBB_ENOMEM;
        }
    }
    *out = tags;
    return 0;
}

int ebb__agent_ckpt_commit_parse(const json_t *body, struct ebb__ckpt_manifest *m,
                                 int64_t part_size, bool multipart,
                                 json_t **etags, struct ebb__ckpt_commit_meta *meta,
                                 char *why, size_t why_len)
{
    *etags = NULL;
    *meta = (struct ebb__ckpt_commit_meta){.fraction = -1};
    const json_t *files = json_object_get(body, "files");
    if (!json_is_object(body) || !json_is_array(files) ||
        json_array_size(files) != m->n_files)
        return refuse(why, why_len, "\"files\" lists the checkpoint's %zu files",
                      m->n_files);
    if (get_ms(body, "upload_ms", &meta->upload_ms) != 0 ||
        get_ms(body, "duration_ms", &meta->duration_ms) != 0)
        return refuse(why, why_len, "\"upload_ms\" and \"duration_ms\" are "
                      "milliseconds (0 to a week)");
    meta->periodic = json_is_true(json_object_get(body, "periodic"));
    const json_t *fr = json_object_get(body, "fraction");
    if (json_is_number(fr) && json_number_value(fr) >= 0 && json_number_value(fr) <= 1)
        meta->fraction = json_number_value(fr);
    json_t *out = json_array();
    if (out == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < m->n_files; i++) {
        const json_t *f = json_array_get(files, i);
        struct ebb__ckpt_manifest_file *mf = &m->files[i];
        const char *path = json_string_value(json_object_get(f, "path"));
        uint64_t size = 0, stored = 0;
        int rc = 0;
        if (path == NULL || strcmp(path, mf->path) != 0 ||
            get_size(f, "size", UINT64_MAX >> 1, &size) != 0 || size != mf->size ||
            get_size(f, "stored_size", UINT64_MAX >> 1, &stored) != 0 ||
            stored != mf->stored_size)
            rc = refuse(why, why_len, "files[%zu] is not the file offered there "
                        "(path, size and stored_size as in the offer)", i);
        else if (get_sha(f, "sha256", mf->sha256) != 0 ||
                 (m->encrypt ? get_sha(f, "stored_sha256", mf->stored_sha256)
                             : (memcpy(mf->stored_sha256, mf->sha256, 32), 0)) != 0)
            rc = refuse(why, why_len, "files[%zu]: \"sha256\"%s is 64 hex digits", i,
                        m->encrypt ? " and \"stored_sha256\"" : "");
        json_t *tags = NULL;
        if (rc == 0)
            rc = file_etags(f, i, ebb__ckpt_parts_of((int64_t)stored, part_size, multipart),
                            multipart, &tags, why, why_len);
        if (rc == 0 && json_array_append_new(out, tags) != 0)
            rc = EBB_ENOMEM;
        if (rc != 0) {
            json_decref(out);
            return rc;
        }
    }
    *etags = out;
    return 0;
}
