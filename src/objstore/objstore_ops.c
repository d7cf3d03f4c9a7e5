/* The public operations of s3:// and oss:// stores (file:// ones go to
 * objstore_file.c): each checks its arguments, makes its `struct op` and
 * starts it (objstore_s3.c). */
#include "objstore/internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/buf.h>
#include <ebb/urlenc.h>

static int upload_args_ok(int fd, int64_t offset, int64_t len)
{
    return fd >= 0 && offset >= 0 && len >= 0 && len <= EBB__OBJSTORE_PART_MAX;
}

int ebb__objstore_put(struct ebb__objstore *st, const char *key, int fd,
                      int64_t offset, int64_t len, ebb__objstore_cb cb, void *arg)
{
    if (ebb__os_check_key(key) != 0 || !upload_args_ok(fd, offset, len) || cb == NULL)
        return EBB_EINVAL;
    if (st->kind == EBB__OBJSTORE_FILE)
        return ebb__os_file_put(st, key, fd, offset, len, cb, arg);
    struct op *o = ebb__os_op_new(st, OP_PUT, "PUT", key, cb, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    o->stream.upload_fd = fd;
    o->stream.upload_offset = offset;
    o->stream.upload_len = len;
    return ebb__os_op_start(o);
}

int ebb__objstore_get(struct ebb__objstore *st, const char *key, int64_t first,
                      int64_t len, int fd, int64_t fd_offset, ebb__objstore_cb cb,
                      void *arg)
{
    if (ebb__os_check_key(key) != 0 || fd < 0 || first < 0 || fd_offset < 0 ||
        len == 0 || cb == NULL)
        return EBB_EINVAL;
    if (st->kind == EBB__OBJSTORE_FILE)
        return ebb__os_file_get(st, key, first, len, fd, fd_offset, cb, arg);
    struct op *o = ebb__os_op_new(st, OP_GET, "GET", key, cb, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    o->stream.download_fd = fd;
    o->stream.download_offset = fd_offset;
    if (len > 0)
        snprintf(o->range, sizeof(o->range), "bytes=%" PRId64 "-%" PRId64, first,
                 first + len - 1);
    else if (first > 0)
        snprintf(o->range, sizeof(o->range), "bytes=%" PRId64 "-", first);
    return ebb__os_op_start(o);
}

int ebb__objstore_head(struct ebb__objstore *st, const char *key,
                       ebb__objstore_cb cb, void *arg)
{
    if (ebb__os_check_key(key) != 0 || cb == NULL)
        return EBB_EINVAL;
    if (st->kind == EBB__OBJSTORE_FILE)
        return ebb__os_file_head(st, key, cb, arg);
    struct op *o = ebb__os_op_new(st, OP_HEAD, "HEAD", key, cb, arg);
    return o != NULL ? ebb__os_op_start(o) : EBB_ENOMEM;
}

int ebb__objstore_delete(struct ebb__objstore *st, const char *key,
                         ebb__objstore_cb cb, void *arg)
{
    if (ebb__os_check_key(key) != 0 || cb == NULL)
        return EBB_EINVAL;
    if (st->kind == EBB__OBJSTORE_FILE)
        return ebb__os_file_delete(st, key, cb, arg);
    struct op *o = ebb__os_op_new(st, OP_DELETE, "DELETE", key, cb, arg);
    return o != NULL ? ebb__os_op_start(o) : EBB_ENOMEM;
}

/* A listing of the bucket under `prefix`: of objects, or one page of
 * uploads from `from` (may be NULL). */
static int start_listing(struct ebb__objstore *st, enum op_kind kind, const char *prefix,
                         size_t max, const struct ebb__objstore_marker *from,
                         ebb__objstore_cb cb, void *arg)
{
    struct op *o = ebb__os_op_new(st, kind, "GET", NULL, cb, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    o->max = max;
    o->list_prefix = st->prefix[0] != '\0' ? ebb_strfmt("%s/%s", st->prefix, prefix)
                                           : strdup(prefix);
    int copied = 1;
    if (from != NULL) {
        o->page.next_key_marker = strdup(from->key);
        copied = o->page.next_key_marker != NULL;
        if (copied && from->upload_id != NULL && from->upload_id[0] != '\0') {
            o->page.next_upload_marker = strdup(from->upload_id);
            copied = o->page.next_upload_marker != NULL;
        }
    }
    if (o->list_prefix == NULL || !copied || ebb__os_list_query(o) != 0) {
        ebb__os_op_free(o);
        return EBB_ENOMEM;
    }
    return ebb__os_op_start(o);
}

int ebb__objstore_list(struct ebb__objstore *st, const char *prefix, size_t max,
                       ebb__objstore_cb cb, void *arg)
{
    if (prefix == NULL || cb == NULL || max == 0 || ebb__os_check_prefix(prefix) != 0)
        return EBB_EINVAL;
    if (st->kind == EBB__OBJSTORE_FILE)
        return ebb__os_file_list(st, prefix, max, cb, arg);
    return start_listing(st, OP_LIST, prefix, max, NULL, cb, arg);
}

/* "uploadId=ENC" (and "partNumber=N&" before it) as the query. */
static int upload_query(struct op *o, const char *upload_id, int part)
{
    struct ebb_buf q = {0};
    ebb_buf_puts(&q, "");
    if (part > 0)
        ebb_buf_printf(&q, "partNumber=%d&", part);
    ebb_buf_puts(&q, "uploadId=");
    ebb_pct_encode(&q, upload_id, strlen(upload_id), 0);
    return ebb__os_op_take_query(o, &q);
}

static int remote_only(const struct ebb__objstore *st)
{
    /* Checkpoints to a directory are written whole (put); a file:// store
     * has no multipart uploads. */
    return st->kind != EBB__OBJSTORE_FILE;
}

int ebb__objstore_mpu_create(struct ebb__objstore *st, const char *key,
                             ebb__objstore_cb cb, void *arg)
{
    if (ebb__os_check_key(key) != 0 || cb == NULL)
        return EBB_EINVAL;
    if (!remote_only(st))
        return EBB_EUNSUPPORTED;
    struct op *o = ebb__os_op_new(st, OP_CREATE, "POST", key, cb, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    free(o->query);
    o->query = strdup("uploads=");
    o->content_type = "application/octet-stream";
    /* A POST without a body still sends one, empty, so that curl does
     * not read a form from nowhere. */
    o->body = strdup("");
    if (o->query == NULL || o->body == NULL) {
        ebb__os_op_free(o);
        return EBB_ENOMEM;
    }
    return ebb__os_op_start(o);
}

int ebb__objstore_mpu_part(struct ebb__objstore *st, const char *key,
                           const char *upload_id, int part, int fd,
                           int64_t offset, int64_t len, ebb__objstore_cb cb,
                           void *arg)
{
    if (ebb__os_check_key(key) != 0 || upload_id == NULL || upload_id[0] == '\0' ||
        part < 1 || part > EBB__OBJSTORE_PARTS_MAX || !upload_args_ok(fd, offset, len) ||
        cb == NULL)
        return EBB_EINVAL;
    if (!remote_only(st))
        return EBB_EUNSUPPORTED;
    struct op *o = ebb__os_op_new(st, OP_PART, "PUT", key, cb, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    o->stream.upload_fd = fd;
    o->stream.upload_offset = offset;
    o->stream.upload_len = len;
    if (upload_query(o, upload_id, part) != 0) {
        ebb__os_op_free(o);
        return EBB_ENOMEM;
    }
    return ebb__os_op_start(o);
}

/* The CompleteMultipartUpload document; ETags are quoted hex from the
 * server, but are escaped all the same. */
static char *complete_doc(const char *const *etags, size_t n)
{
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, "<CompleteMultipartUpload>");
    for (size_t i = 0; i < n; i++) {
        ebb_buf_printf(&b, "<Part><PartNumber>%zu</PartNumber><ETag>", i + 1);
        for (const char *p = etags[i]; *p != '\0'; p++) {
            if (*p == '&')
                ebb_buf_puts(&b, "&amp;");
            else if (*p == '<')
                ebb_buf_puts(&b, "&lt;");
            else if (*p == '"')
                ebb_buf_puts(&b, "&quot;");
            else
                ebb_buf_append(&b, p, 1);
        }
        ebb_buf_puts(&b, "</ETag></Part>");
    }
    ebb_buf_puts(&b, "</CompleteMultipartUpload>");
    if (b.failed) {
        ebb_buf_free(&b);
        return NULL;
    }
    return ebb_buf_take(&b);
}

int ebb__objstore_mpu_complete(struct ebb__objstore *st, const char *key,
                               const char *upload_id, const char *const *etags,
                               size_t n, ebb__objstore_cb cb, void *arg)
{
    if (ebb__os_check_key(key) != 0 || upload_id == NULL || upload_id[0] == '\0' ||
        n == 0 || n > EBB__OBJSTORE_PARTS_MAX || etags == NULL || cb == NULL)
        return EBB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (etags[i] == NULL || etags[i][0] == '\0')
            return EBB_EINVAL;
    if (!remote_only(st))
        return EBB_EUNSUPPORTED;
    struct op *o = ebb__os_op_new(st, OP_COMPLETE, "POST", key, cb, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    o->content_type = "application/xml";
    o->body = complete_doc(etags, n);
    if (o->body == NULL || upload_query(o, upload_id, 0) != 0) {
        ebb__os_op_free(o);
        return EBB_ENOMEM;
    }
    o->body_len = strlen(o->body);
    o->n_parts = n;
    return ebb__os_op_start(o);
}

int ebb__objstore_mpu_abort(struct ebb__objstore *st, const char *key,
                            const char *upload_id, ebb__objstore_cb cb, void *arg)
{
    if (ebb__os_check_key(key) != 0 || upload_id == NULL || upload_id[0] == '\0' ||
        cb == NULL)
        return EBB_EINVAL;
    if (!remote_only(st))
        return EBB_EUNSUPPORTED;
    struct op *o = ebb__os_op_new(st, OP_ABORT, "DELETE", key, cb, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    if (upload_query(o, upload_id, 0) != 0) {
        ebb__os_op_free(o);
        return EBB_ENOMEM;
    }
    return ebb__os_op_start(o);
}

int ebb__objstore_mpu_list_page(struct ebb__objstore *st, const char *prefix,
                                const struct ebb__objstore_marker *from,
                                ebb__objstore_cb cb, void *arg)
{
    if (prefix == NULL || cb == NULL || ebb__os_check_prefix(prefix) != 0 ||
        (from != NULL && (from->key == NULL || from->key[0] == '\0')))
        return EBB_EINVAL;
    if (!remote_only(st))
        return EBB_EUNSUPPORTED;
    return start_listing(st, OP_LIST_UPLOADS, prefix, EBB__OBJSTORE_UPLOADS_PAGE, from,
                         cb, arg);
}
