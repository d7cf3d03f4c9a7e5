/* Where a store's requests go (virtual host or path-style, the
 * canonical path each flavour signs) and signing them: Authorization
 * headers for the client's own requests, presigned URLs for others'. */
#include "objstore/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/buf.h>
#include <ebb/urlenc.h>

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* ---- addressing and signing ---- */

ebb_time_ms ebb__os_now(const struct ebb__objstore *st)
{
    return st->now(st->now_ctx) + st->skew;
}

char *ebb__os_full_key(const struct ebb__objstore *st, const char *key)
{
    if (st->prefix == NULL || st->prefix[0] == '\0')
        return strdup(key);
    return ebb_strfmt("%s/%s", st->prefix, key);
}

/* The Host header, the path as sent (encoded) and the raw path the
 * signature covers for `full_key` (NULL: the bucket). */
static int address(const struct ebb__objstore *st, const char *full_key,
                   char **host, struct ebb_buf *wire, char **canonical)
{
    int virtual_host = !st->path_style;
    *host = virtual_host ? ebb_strfmt("%s.%s", st->bucket, st->host)
                         : strdup(st->host);
    ebb_buf_puts(wire, "/");
    if (!virtual_host) {
        ebb_buf_puts(wire, st->bucket);
        if (full_key != NULL)
            ebb_buf_puts(wire, "/");
    }
    if (full_key != NULL)
        ebb_pct_encode(wire, full_key, strlen(full_key), 1);
    /* OSS V4 always signs /BUCKET/KEY, whatever the host says. */
    if (st->kind == EBB__OBJSTORE_OSS)
        *canonical = ebb_strfmt("/%s/%s", st->bucket, full_key != NULL ? full_key : "");
    else if (!virtual_host)
        *canonical = ebb_strfmt("/%s%s%s", st->bucket, full_key != NULL ? "/" : "",
                                full_key != NULL ? full_key : "");
    else
        *canonical = ebb_strfmt("/%s", full_key != NULL ? full_key : "");
    return *host != NULL && *canonical != NULL && !wire->failed ? 0 : EBB_ENOMEM;
}

static struct ebb_sigv4_scope scope_of(const struct ebb__objstore *st,
                                       const char *amz_date)
{
    return (struct ebb_sigv4_scope){
        .flavour = st->kind == EBB__OBJSTORE_OSS ? EBB_SIGV4_OSS : EBB_SIGV4_AWS,
        .access_key_id = st->creds.access_key_id,
        .secret_access_key = st->creds.secret_access_key,
        .region = st->region,
        .service = st->kind == EBB__OBJSTORE_OSS ? "oss" : "s3",
        .amz_date = amz_date,
    };
}

void ebb__os_signed_free(struct os_signed *s)
{
    free(s->url);
    for (size_t i = 0; i < s->n; i++)
        free(s->lines[i]);
    memset(s, 0, sizeof(*s));
}

int ebb__os_sign(const struct ebb__objstore *st, const char *method,
                 const char *key, const char *query, const char *payload_hash,
                 const struct ebb_sigv4_header *extra, size_t n_extra,
                 struct os_signed *out)
{
    memset(out, 0, sizeof(*out));
    if (n_extra > OS_MAX_HEADERS - 5)
        return EBB_EINVAL;
    char *full = key != NULL ? ebb__os_full_key(st, key) : NULL;
    char *host = NULL, *canonical = NULL;
    struct ebb_buf wire = {0};
    int rc = key != NULL && full == NULL ? EBB_ENOMEM
                                         : address(st, full, &host, &wire, &canonical);
    char amz_date[17];
    ebb_sigv4_amz_date(ebb__os_now(st), amz_date);
    int oss = st->kind == EBB__OBJSTORE_OSS;
    const char *hash = oss ? EBB_SIGV4_UNSIGNED_PAYLOAD
                       : payload_hash != NULL ? payload_hash : EMPTY_SHA256;
    struct ebb_sigv4_header h[OS_MAX_HEADERS];
    size_t n = 0;
    h[n++] = (struct ebb_sigv4_header){"Host", host};
    h[n++] = (struct ebb_sigv4_header){oss ? "x-oss-date" : "x-amz-date", amz_date};
    h[n++] = (struct ebb_sigv4_header){oss ? "x-oss-content-sha256"
                                           : "x-amz-content-sha256", hash};
    if (st->creds.session_token != NULL)
        h[n++] = (struct ebb_sigv4_header){oss ? "x-oss-security-token"
                                               : "x-amz-security-token",
                                           st->creds.session_token};
    for (size_t i = 0; i < n_extra; i++)
        h[n++] = extra[i];
    struct ebb_sigv4_request req = {
        .method = method, .path = canonical, .query = query != NULL ? query : "",
        .headers = h, .n_headers = n, .payload_hash = hash, .s3_path = 1,
    };
    struct ebb_sigv4_scope scope = scope_of(st, amz_date);
    struct ebb_sigv4_result sig = {0};
    if (rc == 0)
        rc = ebb_sigv4_sign(&req, &scope, &sig);
    if (rc == 0) {
        out->url = ebb_strfmt("%s://%s%s%s%s", st->scheme, host, wire.data,
                              query != NULL && query[0] != '\0' ? "?" : "",
                              query != NULL ? query : "");
        for (size_t i = 0; i < n; i++)
            out->lines[out->n++] = ebb_strfmt("%s: %s", h[i].name, h[i].value);
        out->lines[out->n++] = ebb_strfmt("Authorization: %s", sig.authorization);
        for (size_t i = 0; i < out->n; i++)
            if (out->lines[i] == NULL)
                rc = EBB_ENOMEM;
        if (out->url == NULL)
            rc = EBB_ENOMEM;
        if (rc != 0)
            ebb__os_signed_free(out);
    }
    ebb_sigv4_result_free(&sig);
    ebb_buf_free(&wire);
    free(full);
    free(host);
    free(canonical);
    return rc;
}

char *ebb__objstore_object_url(const struct ebb__objstore *st, const char *key)
{
    if (st->kind == EBB__OBJSTORE_FILE)
        return NULL;
    char *full = ebb__os_full_key(st, key);
    char *host = NULL, *canonical = NULL, *url = NULL;
    struct ebb_buf wire = {0};
    if (full != NULL && address(st, full, &host, &wire, &canonical) == 0)
        url = ebb_strfmt("%s://%s%s", st->scheme, host, wire.data);
    ebb_buf_free(&wire);
    free(full);
    free(host);
    free(canonical);
    return url;
}

int ebb__objstore_presign(const struct ebb__objstore *st,
                          enum ebb__objstore_presign_op op, const char *key,
                          const char *upload_id, int part, int64_t expires_s,
                          char **url)
{
    *url = NULL;
    if (st->kind == EBB__OBJSTORE_FILE)
        return EBB_EUNSUPPORTED;
    if (ebb__os_check_key(key) != 0 ||
        (op == EBB__PRESIGN_PART &&
         (upload_id == NULL || upload_id[0] == '\0' || part < 1 ||
          part > EBB__OBJSTORE_PARTS_MAX)))
        return EBB_EINVAL;
    struct ebb_buf q = {0};
    ebb_buf_puts(&q, "");
    if (op == EBB__PRESIGN_PART) {
        ebb_buf_printf(&q, "partNumber=%d&uploadId=", part);
        ebb_pct_encode(&q, upload_id, strlen(upload_id), 0);
    }
    char *full = ebb__os_full_key(st, key);
    char *host = NULL, *canonical = NULL;
    struct ebb_buf wire = {0};
    int rc = full == NULL || q.failed ? EBB_ENOMEM
                                      : address(st, full, &host, &wire, &canonical);
    char amz_date[17];
    ebb_sigv4_amz_date(ebb__os_now(st), amz_date);
    struct ebb_sigv4_header h[1] = {{"Host", host}};
    struct ebb_sigv4_request req = {
        .method = op == EBB__PRESIGN_GET ? "GET" : "PUT",
        .path = canonical, .query = q.data, .headers = h, .n_headers = 1,
        .payload_hash = EBB_SIGV4_UNSIGNED_PAYLOAD, .s3_path = 1,
    };
    struct ebb_sigv4_scope scope = scope_of(st, amz_date);
    scope.session_token = st->creds.session_token;
    struct ebb_sigv4_result sig = {0};
    if (rc == 0)
        rc = ebb_sigv4_presign(&req, &scope, expires_s, &sig);
    if (rc == 0) {
        *url = ebb_strfmt("%s://%s%s?%s", st->scheme, host, wire.data,
                          sig.authorization);
        rc = *url != NULL ? 0 : EBB_ENOMEM;
    }
    ebb_sigv4_result_free(&sig);
    ebb_buf_free(&q);
    ebb_buf_free(&wire);
    free(full);
    free(host);
    free(canonical);
    return rc;
}
