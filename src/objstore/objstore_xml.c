/* S3's and OSS's XML answers as element paths (ebb/xml.h). Namespaces
 * are not relied on: s3rver writes another one than AWS, OSS none, and
 * expat without namespace processing hands over the plain names. */
#include "objstore/objstore_xml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/xml.h>

#include "base/str.h"

/* S3 may keep a connection alive with blanks before a late <Error>
 * (CompleteMultipartUpload); an XML declaration must come first, so they
 * are skipped. */
static const char *skip_blanks(const char *body, size_t *len)
{
    while (*len > 0 && (*body == ' ' || *body == '\t' || *body == '\r' ||
                        *body == '\n')) {
        body++;
        (*len)--;
    }
    return body;
}

static void copy_text(char *dst, size_t size, const char *text, size_t len)
{
    if (len >= size)
        len = size - 1;
    memcpy(dst, text, len);
    dst[len] = '\0';
}

/* ---- <Error> ---- */

struct err_state {
    struct ebb__os_error *e;
    int is_error;
    int failed;
};

static void err_start(void *ud, const struct ebb_xml_path *p)
{
    struct err_state *s = ud;
    if (p->depth == 1)
        s->is_error = strcmp(p->name[0], "Error") == 0;
}

static void err_end(void *ud, const struct ebb_xml_path *p, const char *text,
                    size_t len)
{
    struct err_state *s = ud;
    if (!s->is_error || p->depth != 2)
        return;
    const char *name = p->name[1];
    if (strcmp(name, "Code") == 0)
        copy_text(s->e->code, sizeof(s->e->code), text, len);
    else if (strcmp(name, "Message") == 0)
        copy_text(s->e->message, sizeof(s->e->message), text, len);
    else if (strcmp(name, "EC") == 0)
        copy_text(s->e->ec, sizeof(s->e->ec), text, len);
}

int ebb__os_parse_error(const char *body, size_t len, struct ebb__os_error *e)
{
    memset(e, 0, sizeof(*e));
    body = skip_blanks(body, &len);
    if (len == 0)
        return EBB_EPROTO;
    struct err_state s = {.e = e};
    struct ebb_xml_handler h = {err_start, err_end, &s.failed};
    int rc = ebb_xml_parse(body, len, &h, &s);
    if (rc != 0)
        return rc;
    return s.is_error ? 0 : EBB_ENOTFOUND;
}

/* ---- what codes mean ---- */

struct code_class {
    const char *code;
    int status;
};

/* The codes whose meaning the status alone does not carry, from S3's
 * list (tests/data/s3-oss/aws-s3-error-codes.txt) and OSS's pages. */
static const struct code_class classes[] = {
    {"NoSuchKey", EBB_ENOTFOUND},
    {"NoSuchBucket", EBB_ENOTFOUND},
    {"NoSuchUpload", EBB_ENOTFOUND},
    {"AccessDenied", EBB_EAUTH},
    {"AllAccessDisabled", EBB_EAUTH},
    {"AccountProblem", EBB_EAUTH},
    {"InvalidAccessKeyId", EBB_EAUTH},
    {"SignatureDoesNotMatch", EBB_EAUTH},
    {"ExpiredToken", EBB_EAUTH},
    {"InvalidToken", EBB_EAUTH},
    {"TokenRefreshRequired", EBB_EAUTH},
    {"RequestTimeTooSkewed", EBB_EAUTH},
    {"AuthorizationHeaderMalformed", EBB_EAUTH},
    {"AuthorizationQueryParametersError", EBB_EAUTH},
    {"InvalidSecurity", EBB_EAUTH},
    {"SlowDown", EBB_ETHROTTLED},
    {"Throttling", EBB_ETHROTTLED},
    {"ServiceUnavailable", EBB_ETHROTTLED},
    {"RequestTimeout", EBB_ETIMEDOUT},
    {"InvalidRange", EBB_EINVAL},
    {"InvalidArgument", EBB_EINVAL},
    {"InvalidPart", EBB_EINVAL},
    {"InvalidPartOrder", EBB_EINVAL},
    {"EntityTooSmall", EBB_EINVAL},
    {"EntityTooLarge", EBB_EINVAL},
    {"MalformedXML", EBB_EINVAL},
    {"InvalidRequest", EBB_EINVAL},
    {"InvalidBucketName", EBB_EINVAL},
    {"KeyTooLongError", EBB_EINVAL},
    {"BadDigest", EBB_EIO},
    {"InternalError", EBB_EIO},
    {"PreconditionFailed", EBB_EEXISTS},
};

int ebb__os_status_of(int http_status, const char *code)
{
    if (http_status >= 200 && http_status < 300 && (code == NULL || code[0] == '\0'))
        return 0;
    for (size_t i = 0; code != NULL && i < sizeof(classes) / sizeof(classes[0]); i++)
        if (strcmp(code, classes[i].code) == 0)
            return classes[i].status;
    if (http_status == 404)
        return EBB_ENOTFOUND;
    if (http_status == 401 || http_status == 403)
        return EBB_EAUTH;
    if (http_status == 429 || http_status == 503)
        return EBB_ETHROTTLED;
    if (http_status >= 500 || (http_status >= 200 && http_status < 300))
        return EBB_EIO; /* a 200 that carried an <Error> */
    return EBB_EHTTP;
}

int ebb__os_retryable(int http_status, const char *code)
{
    static const char *const transient[] = {
        "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable",
        "Throttling", "ThrottlingException", "RequestLimitExceeded",
        "TooManyRequestsException", "PriorRequestNotComplete", "BadDigest",
    };
    /* As botocore's standard mode: not 501, which another try will not
     * change. */
    if (http_status == 500 || http_status == 502 || http_status == 503 ||
        http_status == 504 || http_status == 429)
        return 1;
    for (size_t i = 0; code != NULL && i < sizeof(transient) / sizeof(transient[0]); i++)
        if (strcmp(code, transient[i]) == 0)
            return 1;
    return 0;
}

/* ---- one text element under a given root ---- */

struct leaf_state {
    const char *root, *leaf;
    char *value;
    int root_seen, root_ok;
    int failed;
};

static void leaf_start(void *ud, const struct ebb_xml_path *p)
{
    struct leaf_state *s = ud;
    if (p->depth == 1) {
        s->root_seen = 1;
        s->root_ok = strcmp(p->name[0], s->root) == 0;
    }
}

static void leaf_end(void *ud, const struct ebb_xml_path *p, const char *text,
                     size_t len)
{
    struct leaf_state *s = ud;
    if (!s->root_ok || p->depth != 2 || strcmp(p->name[1], s->leaf) != 0)
        return;
    free(s->value);
    s->value = strndup(text, len);
    if (s->value == NULL)
        s->failed = EBB_ENOMEM;
}

static int parse_leaf(const char *body, size_t len, const char *root,
                      const char *leaf, char **out, int *root_ok)
{
    *out = NULL;
    body = skip_blanks(body, &len);
    struct leaf_state s = {.root = root, .leaf = leaf};
    struct ebb_xml_handler h = {leaf_start, leaf_end, &s.failed};
    int rc = len > 0 ? ebb_xml_parse(body, len, &h, &s) : EBB_EPROTO;
    *root_ok = s.root_ok;
    if (rc == 0 && (s.value == NULL || s.value[0] == '\0'))
        rc = EBB_EPROTO;
    if (rc != 0) {
        free(s.value);
        return rc;
    }
    *out = s.value;
    return 0;
}

int ebb__os_parse_upload_id(const char *body, size_t len, char **id)
{
    int root_ok;
    return parse_leaf(body, len, "InitiateMultipartUploadResult", "UploadId", id,
                      &root_ok);
}

int ebb__os_parse_complete(const char *body, size_t len, char **etag,
                           struct ebb__os_error *e)
{
    memset(e, 0, sizeof(*e));
    *etag = NULL;
    if (ebb__os_parse_error(body, len, e) == 0)
        return EBB_EIO;
    int root_ok;
    int rc = parse_leaf(body, len, "CompleteMultipartUploadResult", "ETag", etag,
                        &root_ok);
    return rc == EBB_ENOMEM ? rc : rc != 0 ? EBB_EPROTO : 0;
}

/* ---- ListObjectsV2 ---- */

/* Both listings: ListObjectsV2 (Contents: Key, Size, ETag) and
 * ListMultipartUploads (Upload: Key, UploadId). */
struct list_doc {
    const char *root, *entry;
    int uploads;
};

static const struct list_doc OBJECTS = {"ListBucketResult", "Contents", 0};
static const struct list_doc UPLOADS = {"ListMultipartUploadsResult", "Upload", 1};

struct list_state {
    const struct list_doc *doc;
    struct ebb__os_list_page *page;
    struct ebb__objstore_entry cur;
    int have_size;
    int root_ok;
    int failed;
};

static void entry_free(struct ebb__objstore_entry *e)
{
    free(e->key);
    free(e->etag);
    free(e->upload_id);
}

static void list_start(void *ud, const struct ebb_xml_path *p)
{
    struct list_state *s = ud;
    if (p->depth == 1)
        s->root_ok = strcmp(p->name[0], s->doc->root) == 0;
    if (p->depth == 2 && strcmp(p->name[1], s->doc->entry) == 0) {
        entry_free(&s->cur);
        s->cur = (struct ebb__objstore_entry){0};
        s->have_size = 0;
    }
}

static int parse_size(const char *text, int64_t *out)
{
    if (text[0] < '0' || text[0] > '9')
        return EBB_EPROTO;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return EBB_EPROTO;
    *out = v;
    return 0;
}

static int push_entry(struct list_state *s)
{
    struct ebb__os_list_page *pg = s->page;
    int whole = s->doc->uploads ? s->cur.upload_id != NULL && s->cur.upload_id[0] != '\0'
                                : s->have_size;
    if (s->cur.key == NULL || !whole)
        return EBB_EPROTO;
    struct ebb__objstore_entry *v = ebb__grow(pg->v, &pg->cap, pg->n, sizeof(*v), 64);
    if (v == NULL)
        return EBB_ENOMEM;
    pg->v = v;
    pg->v[pg->n++] = s->cur;
    s->cur = (struct ebb__objstore_entry){0};
    return 0;
}

/* The slot a text element of the document goes to, or NULL. */
static char **list_slot(struct list_state *s, const struct ebb_xml_path *p, int in_entry)
{
    const char *name = p->name[p->depth - 1];
    if (in_entry && strcmp(name, "Key") == 0)
        return &s->cur.key;
    if (in_entry && !s->doc->uploads && strcmp(name, "ETag") == 0)
        return &s->cur.etag;
    if (in_entry && s->doc->uploads && strcmp(name, "UploadId") == 0)
        return &s->cur.upload_id;
    if (p->depth != 2)
        return NULL;
    if (!s->doc->uploads && strcmp(name, "NextContinuationToken") == 0)
        return &s->page->next_token;
    if (s->doc->uploads && strcmp(name, "NextKeyMarker") == 0)
        return &s->page->next_key_marker;
    if (s->doc->uploads && strcmp(name, "NextUploadIdMarker") == 0)
        return &s->page->next_upload_marker;
    return NULL;
}

static void list_end(void *ud, const struct ebb_xml_path *p, const char *text,
                     size_t len)
{
    struct list_state *s = ud;
    if (!s->root_ok)
        return;
    int in_entry = p->depth == 3 && strcmp(p->name[1], s->doc->entry) == 0;
    const char *name = p->name[p->depth - 1];
    char **slot = list_slot(s, p, in_entry);
    if (slot != NULL) {
        free(*slot);
        *slot = strndup(text, len);
        if (*slot == NULL)
            s->failed = EBB_ENOMEM;
    } else if (in_entry && !s->doc->uploads && strcmp(name, "Size") == 0) {
        s->failed = parse_size(text, &s->cur.size);
        s->have_size = s->failed == 0;
    } else if (p->depth == 2 && strcmp(name, "IsTruncated") == 0) {
        s->page->truncated = strcmp(text, "true") == 0;
    } else if (p->depth == 2 && strcmp(name, s->doc->entry) == 0) {
        s->failed = push_entry(s);
    }
}

static int parse_listing(const struct list_doc *doc, const char *body, size_t len,
                         struct ebb__os_list_page *page)
{
    body = skip_blanks(body, &len);
    char **next[] = {&page->next_token, &page->next_key_marker, &page->next_upload_marker};
    for (size_t i = 0; i < sizeof(next) / sizeof(next[0]); i++) {
        free(*next[i]);
        *next[i] = NULL;
    }
    page->truncated = 0;
    struct list_state s = {.doc = doc, .page = page};
    struct ebb_xml_handler h = {list_start, list_end, &s.failed};
    int rc = len > 0 ? ebb_xml_parse(body, len, &h, &s) : EBB_EPROTO;
    entry_free(&s.cur);
    if (rc == 0 && !s.root_ok)
        rc = EBB_EPROTO;
    const char *marker = doc->uploads ? page->next_key_marker : page->next_token;
    if (rc == 0 && page->truncated && (marker == NULL || marker[0] == '\0'))
        rc = EBB_EPROTO;
    return rc;
}

int ebb__os_parse_list(const char *body, size_t len, struct ebb__os_list_page *page)
{
    return parse_listing(&OBJECTS, body, len, page);
}

int ebb__os_parse_uploads(const char *body, size_t len, struct ebb__os_list_page *page)
{
    return parse_listing(&UPLOADS, body, len, page);
}

void ebb__os_list_page_free(struct ebb__os_list_page *page)
{
    for (size_t i = 0; i < page->n; i++)
        entry_free(&page->v[i]);
    free(page->v);
    free(page->next_token);
    free(page->next_key_marker);
    free(page->next_upload_marker);
    memset(page, 0, sizeof(*page));
}
