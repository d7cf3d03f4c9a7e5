/* The XML S3 and OSS answer with, read by pure functions over ebb/xml.h
 * (expat): error documents, multipart answers, ListObjectsV2 and
 * ListMultipartUploads pages,
 * and what an error code means to ebb. The client (objstore_s3.c) and
 * the tests call them; nothing here does I/O. */
#ifndef EBB_OBJSTORE_XML_H
#define EBB_OBJSTORE_XML_H

#include <stddef.h>
#include <stdint.h>

#include "objstore/objstore.h"

/* An <Error> document: Code, Message and, from OSS, EC. */
struct ebb__os_error {
    char code[64];
    char message[256];
    char ec[32];
};

/* Reads `len` bytes of `body` (leading blanks skipped: S3 may send blanks
 * before a late error). Returns 0 with `e` filled when the root is
 * <Error>; EBB_ENOTFOUND when it is another document; EBB_EPROTO for
 * malformed XML or no document. */
int ebb__os_parse_error(const char *body, size_t len, struct ebb__os_error *e);

/* What an answer means: 0 for 2xx, else an EBB_E* code from the error
 * code when there is one (NoSuchKey, NoSuchBucket, NoSuchUpload:
 * EBB_ENOTFOUND; AccessDenied, SignatureDoesNotMatch, InvalidAccessKeyId,
 * ExpiredToken, RequestTimeTooSkewed ...: EBB_EAUTH; SlowDown:
 * EBB_ETHROTTLED; InvalidRange, InvalidArgument, EntityTooSmall,
 * InvalidPart ...: EBB_EINVAL; PreconditionFailed: EBB_EEXISTS), else
 * from the HTTP status (404 ENOTFOUND, 401/403 EAUTH, 429/503
 * ETHROTTLED, 5xx EIO, other 4xx EHTTP). */
int ebb__os_status_of(int http_status, const char *code);

/* Whether another attempt may succeed: 500, 502, 503, 504, 429, and the
 * codes S3 marks transient whatever the status (SlowDown, RequestTimeout,
 * InternalError, ServiceUnavailable, Throttling, ...). */
int ebb__os_retryable(int http_status, const char *code);

/* InitiateMultipartUploadResult's UploadId into a new string (*id).
 * Returns 0, EBB_EPROTO (no UploadId, or an <Error>) or EBB_ENOMEM. */
int ebb__os_parse_upload_id(const char *body, size_t len, char **id);

/* A CompleteMultipartUpload answer, which may be an <Error> although the
 * status is 200: returns 0 with the ETag in *etag (new string);
 * EBB_EIO with `e` filled for an <Error> root; EBB_EPROTO
 * for anything else (S3 says a 200 can carry invalid XML: the caller
 * treats both as a failed attempt). */
int ebb__os_parse_complete(const char *body, size_t len, char **etag,
                           struct ebb__os_error *e);

/* One ListObjectsV2 or ListMultipartUploads page. Keys keep the store's
 * prefix; the caller strips it. Strings owned (ebb__os_list_page_free). */
struct ebb__os_list_page {
    struct ebb__objstore_entry *v;
    size_t n, cap;
    int truncated;
    char *next_token;      /* NextContinuationToken, or NULL */
    char *next_key_marker; /* uploads: NextKeyMarker, NextUploadIdMarker */
    char *next_upload_marker;
};

/* Appends the page's entries to `page` (which may hold earlier pages').
 * Returns 0, EBB_EPROTO (malformed, an entry without Key or with a bad
 * Size, truncated without a token) or EBB_ENOMEM. */
int ebb__os_parse_list(const char *body, size_t len, struct ebb__os_list_page *page);

/* The same for a ListMultipartUploadsResult page: each Upload's Key and
 * UploadId (both required); truncated needs NextKeyMarker. */
int ebb__os_parse_uploads(const char *body, size_t len, struct ebb__os_list_page *page);
void ebb__os_list_page_free(struct ebb__os_list_page *page);

#endif
