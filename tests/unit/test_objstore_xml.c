/* The object-store client's pure parts (src/objstore): S3 and OSS answers
 * read from real documents (botocore's and libcloud's fixtures in
 * tests/data/s3-oss), what every S3 error code in AWS's list means to
 * ebb, store URLs, and where requests go by default (virtual host,
 * path-style, each cloud's endpoint). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/objstore.h"
#include "objstore/objstore_xml.h"
#include "test_data.h"

/* A file of tests/data/s3-oss, its length in *len. */
static char *slurp(const char *rel, size_t *len)
{
    char path[1024];
    char s3_oss[512];
    snprintf(s3_oss, sizeof(s3_oss), "s3-oss/%s", rel);
    test_data_path(path, sizeof(path), s3_oss);
    char *s = test_slurp(path, len);
    assert_non_null(s);
    return s;
}

static void test_errors(void **state)
{
    (void)state;
    size_t len;
    char *xml = slurp("botocore-s3-fixtures/error-s3-list-objects.xml", &len);
    struct ebb__os_error e;
    assert_int_equal(ebb__os_parse_error(xml, len, &e), 0);
    assert_string_equal(e.code, "AccessDenied");
    assert_string_equal(e.message, "Access Denied");
    free(xml);
    /* Without an XML declaration (BucketAlreadyOwnedByYou). */
    xml = slurp("botocore-s3-fixtures/error-s3-create-bucket.xml", &len);
    assert_int_equal(ebb__os_parse_error(xml, len, &e), 0);
    assert_string_equal(e.code, "BucketAlreadyOwnedByYou");
    free(xml);
    /* OSS adds EC; S3's late error comes after blanks. */
    static const char oss[] =
        "  \n <?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InvalidArgument"
        "</Code><Message>aws-chunked encoding is not supported</Message>"
        "<EC>0017-00000804</EC></Error>";
    assert_int_equal(ebb__os_parse_error(oss, strlen(oss), &e), 0);
    assert_string_equal(e.code, "InvalidArgument");
    assert_string_equal(e.ec, "0017-00000804");
    /* Another document, garbage, nothing. */
    xml = slurp("libcloud-oss-fixtures/complete_multipart_upload.xml", &len);
    assert_int_equal(ebb__os_parse_error(xml, len, &e), EBB_ENOTFOUND);
    free(xml);
    assert_int_equal(ebb__os_parse_error("<Error><Code>x", 14, &e), EBB_EPROTO);
    assert_int_equal(ebb__os_parse_error("", 0, &e), EBB_EPROTO);
    assert_int_equal(ebb__os_parse_error(" \n", 2, &e), EBB_EPROTO);
}

/* Every code in S3's list with its status: a failure, of the kind its
 * status says, retried only when another try can help. */
static void test_every_s3_code(void **state)
{
    (void)state;
    size_t len;
    char *text = slurp("aws-s3-error-codes.txt", &len);
    char code[128] = "";
    int pairs = 0;
    for (char *p = text; p != NULL && *p != '\0';) {
        char *eol = strchr(p, '\n');
        if (eol != NULL)
            *eol = '\0';
        int status;
        if (sscanf(p, " Code: %127s", code) == 1 && strncmp(p, " HTTP", 5) != 0) {
            /* the next status line belongs to this code */
        } else if (sscanf(p, " HTTP Status Code: %d", &status) == 1 && code[0] != '\0') {
            int rc = ebb__os_status_of(status, code);
            int retry = ebb__os_retryable(status, code);
            pairs++;
            if (rc == 0)
                fail_msg("%s (%d) read as success", code, status);
            if (status == 404 && rc != EBB_ENOTFOUND)
                fail_msg("%s (404) is not ENOTFOUND: %d", code, rc);
            if (status == 403 && rc != EBB_EAUTH)
                fail_msg("%s (403) is not EAUTH: %d", code, rc);
            if (status == 503 && rc != EBB_ETHROTTLED)
                fail_msg("%s (503) is not ETHROTTLED: %d", code, rc);
            int transient = status == 500 || status == 503 ||
                            strcmp(code, "RequestTimeout") == 0 ||
                            strcmp(code, "BadDigest") == 0;
            if (retry != transient)
                fail_msg("%s (%d): retried %d", code, status, retry);
            code[0] = '\0';
        }
        p = eol != NULL ? eol + 1 : NULL;
    }
    free(text);
    assert_true(pairs >= 85);
    /* Without a body (HEAD): the status decides. */
    assert_int_equal(ebb__os_status_of(404, ""), EBB_ENOTFOUND);
    assert_int_equal(ebb__os_status_of(403, ""), EBB_EAUTH);
    assert_int_equal(ebb__os_status_of(502, ""), EBB_EIO);
    assert_int_equal(ebb__os_status_of(200, ""), 0);
    assert_int_equal(ebb__os_status_of(200, "InternalError"), EBB_EIO);
    assert_true(ebb__os_retryable(502, ""));
    assert_false(ebb__os_retryable(501, ""));
    assert_false(ebb__os_retryable(400, "InvalidPart"));
}

static void test_multipart_answers(void **state)
{
    (void)state;
    size_t len;
    char *xml = slurp("libcloud-oss-fixtures/initiate_multipart_upload.xml", &len);
    char *id = NULL;
    assert_int_equal(ebb__os_parse_upload_id(xml, len, &id), 0);
    assert_string_equal(id, "0004B9894A22E5B1888A1E29F8236E2D");
    free(id);
    free(xml);
    xml = slurp("libcloud-oss-fixtures/complete_multipart_upload.xml", &len);
    char *etag = NULL;
    struct ebb__os_error e;
    assert_int_equal(ebb__os_parse_complete(xml, len, &etag, &e), 0);
    assert_string_equal(etag, "B864DB6A936D376F9F8D3ED3BBE540DD-3");
    free(etag);
    free(xml);
    /* S3's 200 that failed late: blanks, then an <Error>. */
    static const char late[] = "      \n<Error><Code>SlowDown</Code><Message>Please "
                               "reduce your request rate.</Message></Error>";
    assert_int_equal(ebb__os_parse_complete(late, strlen(late), &etag, &e), EBB_EIO);
    assert_string_equal(e.code, "SlowDown");
    assert_null(etag);
    /* Cut short: not a success either. */
    static const char cut[] = "<CompleteMultipartUploadResult><ETag>\"ab";
    assert_int_equal(ebb__os_parse_complete(cut, strlen(cut), &etag, &e), EBB_EPROTO);
    assert_int_equal(ebb__os_parse_upload_id(late, strlen(late), &id), EBB_EPROTO);
}

static void test_lists(void **state)
{
    (void)state;
    size_t len;
    struct ebb__os_list_page page = {0};
    char *xml = slurp("botocore-s3-fixtures/s3-list-objects.xml", &len);
    assert_int_equal(ebb__os_parse_list(xml, len, &page), 0);
    assert_int_equal(page.n, 2);
    assert_string_equal(page.v[0].key, "key1");
    assert_int_equal(page.v[0].size, 10000);
    assert_string_equal(page.v[0].etag, "\"1d921b22129502cbbe5cbaf2c8bac682\"");
    assert_false(page.truncated);
    free(xml);
    /* OSS's listing appends to the same page. */
    xml = slurp("libcloud-oss-fixtures/list_container_objects.xml", &len);
    assert_int_equal(ebb__os_parse_list(xml, len, &page), 0);
    assert_int_equal(page.n, 4);
    free(xml);
    ebb__os_list_page_free(&page);

    static const char v2[] =
        "<ListBucketResult xmlns=\"http://doc.s3.amazonaws.com/2006-03-01/\">"
        "<IsTruncated>true</IsTruncated><NextContinuationToken>1ueGcxLPRx1Tr/XYE"
        "</NextContinuationToken><Contents><Key>a/b</Key><Size>3</Size></Contents>"
        "<CommonPrefixes><Prefix>a/c/</Prefix></CommonPrefixes></ListBucketResult>";
    assert_int_equal(ebb__os_parse_list(v2, strlen(v2), &page), 0);
    assert_true(page.truncated);
    assert_string_equal(page.next_token, "1ueGcxLPRx1Tr/XYE");
    assert_int_equal(page.n, 1);
    ebb__os_list_page_free(&page);
    static const char *const bad[] = {
        /* truncated without a token */
        "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
        "<ListBucketResult><Contents><Size>3</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key><Size>99999999999999999999</Size>"
        "</Contents></ListBucketResult>",
        "<Error><Code>AccessDenied</Code></Error>",
        "<ListBucketResult><Contents>",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(ebb__os_parse_list(bad[i], strlen(bad[i]), &page), EBB_EPROTO);
        ebb__os_list_page_free(&page);
    }
}

static void test_list_uploads(void **state)
{
    (void)state;
    size_t len;
    struct ebb__os_list_page page = {0};
    char *xml = slurp("botocore-s3-fixtures/s3-list-multipart-uploads-2.xml", &len);
    assert_int_equal(ebb__os_parse_uploads(xml, len, &page), 0);
    assert_int_equal(page.n, 3);
    assert_string_equal(page.v[0].key, "my-divisor");
    assert_string_equal(page.v[0].upload_id,
                        "XMgbGlrZSBlbHZpbmcncyBub3QgaGF2aW5nIG11Y2ggbHVjaw");
    assert_string_equal(page.v[2].key, "my-movie.m2ts");
    assert_true(page.truncated);
    assert_string_equal(page.next_key_marker, "my-movie.m2ts");
    assert_string_equal(page.next_upload_marker,
                        "YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ");
    free(xml);
    ebb__os_list_page_free(&page);
    /* No uploads, only common prefixes; OSS's listing reads the same. */
    xml = slurp("botocore-s3-fixtures/s3-list-multipart-uploads.xml", &len);
    assert_int_equal(ebb__os_parse_uploads(xml, len, &page), 0);
    assert_int_equal(page.n, 0);
    assert_false(page.truncated);
    free(xml);
    xml = slurp("libcloud-oss-fixtures/ex_iterate_multipart_uploads_p1.xml", &len);
    assert_int_equal(ebb__os_parse_uploads(xml, len, &page), 0);
    assert_true(page.n > 0);
    assert_non_null(page.v[0].upload_id);
    free(xml);
    ebb__os_list_page_free(&page);
    static const char *const bad[] = {
        /* truncated without a key marker */
        "<ListMultipartUploadsResult><IsTruncated>true</IsTruncated>"
        "</ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><Upload><Key>k</Key></Upload>"
        "</ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><Upload><UploadId>u</UploadId></Upload>"
        "</ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><Upload><Key>k</Key><UploadId></UploadId></Upload>"
        "</ListMultipartUploadsResult>",
        /* an object listing is not an upload listing */
        "<ListBucketResult><Contents><Key>k</Key><Size>3</Size></Contents></ListBucketResult>",
        "<Error><Code>AccessDenied</Code></Error>",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(ebb__os_parse_uploads(bad[i], strlen(bad[i]), &page), EBB_EPROTO);
        ebb__os_list_page_free(&page);
    }
}

static void test_urls(void **state)
{
    (void)state;
    struct ebb__objstore_url u;
    char err[256];
    assert_int_equal(ebb__objstore_url_parse("s3://ml-ckpt/ebb/runs/", &u, err, sizeof(err)), 0);
    assert_int_equal(u.kind, EBB__OBJSTORE_S3);
    assert_string_equal(u.bucket, "ml-ckpt");
    assert_string_equal(u.prefix, "ebb/runs");
    ebb__objstore_url_free(&u);
    assert_int_equal(ebb__objstore_url_parse("oss://b12", &u, err, sizeof(err)), 0);
    assert_int_equal(u.kind, EBB__OBJSTORE_OSS);
    assert_string_equal(u.prefix, "");
    ebb__objstore_url_free(&u);
    assert_int_equal(ebb__objstore_url_parse("file:///srv/ckpt//", &u, err, sizeof(err)), 0);
    assert_string_equal(u.dir, "/srv/ckpt");
    ebb__objstore_url_free(&u);
    static const char *const bad[] = {"s3://", "s3://ab", "s3://-ab/x", "s3://a_b/x",
                                      "s3://bucket//x", "s3://bucket/./x",
                                      "oss://bucket/a\tb", "file://", "file://x",
                                      "file:///a/../b", "http://bucket", "", NULL};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(ebb__objstore_url_parse(bad[i], &u, err, sizeof(err)), EBB_EINVAL);
        assert_true(err[0] != '\0');
    }
}

static ebb_time_ms fixed_now(void *ctx)
{
    (void)ctx;
    return INT64_C(1764547200000); /* 2025-12-01T00:00:00Z */
}

static char *url_of(const char *store, const char *region, const char *endpoint,
                    int path_style, const char *key)
{
    struct ebb__objstore_creds creds = {.access_key_id = "AK", .secret_access_key = "SK"};
    struct ebb__objstore_cfg cfg = {.url = store, .region = region, .endpoint = endpoint,
                                    .path_style = path_style, .now = fixed_now};
    struct ebb__objstore *st;
    char err[256];
    /* The HTTP client is not used to build URLs; any non-NULL handle does. */
    struct ebb__http *http = (struct ebb__http *)&cfg;
    assert_int_equal(ebb__objstore_open(&cfg, &creds, http, NULL, &st, err, sizeof(err)), 0);
    char *url = ebb__objstore_object_url(st, key);
    ebb__objstore_free(st);
    return url;
}

static void expect_url(const char *store, const char *region, const char *endpoint,
                       int path_style, const char *key, const char *want)
{
    char *got = url_of(store, region, endpoint, path_style, key);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_addressing(void **state)
{
    (void)state;
    expect_url("s3://ml-ckpt/ebb", "us-east-1", NULL, 0, "j1/ckpt 1.bin",
               "https://ml-ckpt.s3.us-east-1.amazonaws.com/ebb/j1/ckpt%201.bin");
    expect_url("s3://ml-ckpt", "eu-west-1", NULL, 1, "k",
               "https://s3.eu-west-1.amazonaws.com/ml-ckpt/k");
    expect_url("s3://ml-ckpt", "cn-north-1", NULL, 0, "k",
               "https://ml-ckpt.s3.cn-north-1.amazonaws.com.cn/k");
    /* A dotted bucket does not fit the TLS wildcard: path-style. */
    expect_url("s3://my.ckpt", "us-east-1", NULL, 0, "k",
               "https://s3.us-east-1.amazonaws.com/my.ckpt/k");
    /* An IP endpoint cannot carry the bucket in its name. */
    expect_url("s3://ckpt/p", "us-east-1", "http://127.0.0.1:9000", 0, "k$1",
               "http://127.0.0.1:9000/ckpt/p/k%241");
    expect_url("s3://ckpt", "us-east-1", "http://minio.lan:9000/", 0, "k",
               "http://ckpt.minio.lan:9000/k");
    expect_url("oss://ali-ckpt/x", "cn-hangzhou", NULL, 0, "k+1",
               "https://ali-ckpt.oss-cn-hangzhou.aliyuncs.com/x/k%2B1");

    /* OSS presigned URLs carry OSS V4's own parameters. */
    struct ebb__objstore_creds creds = {.access_key_id = "AK", .secret_access_key = "SK"};
    struct ebb__objstore_cfg cfg = {.url = "oss://ali-ckpt", .region = "cn-hangzhou",
                                    .now = fixed_now};
    struct ebb__objstore *st;
    char err[256];
    assert_int_equal(ebb__objstore_open(&cfg, &creds, (struct ebb__http *)&cfg, NULL,
                                        &st, err, sizeof(err)), 0);
    char *url;
    assert_int_equal(ebb__objstore_presign(st, EBB__PRESIGN_PART, "k", "up/1", 3, 900, &url), 0);
    assert_non_null(strstr(url, "https://ali-ckpt.oss-cn-hangzhou.aliyuncs.com/k?"
                                "partNumber=3&uploadId=up%2F1&x-oss-signature-version="
                                "OSS4-HMAC-SHA256&x-oss-credential=AK%2F20251201%2F"
                                "cn-hangzhou%2Foss%2Faliyun_v4_request&x-oss-date="
                                "20251201T000000Z&x-oss-expires=900&x-oss-signature="));
    free(url);
    ebb__objstore_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_every_s3_code),
        cmocka_unit_test(test_multipart_answers),
        cmocka_unit_test(test_lists),
        cmocka_unit_test(test_list_uploads),
        cmocka_unit_test(test_urls),
        cmocka_unit_test(test_addressing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
