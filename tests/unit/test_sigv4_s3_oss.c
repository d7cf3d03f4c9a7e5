/* The one SigV4 signer (src/base/sigv4.c, ebb/sigv4.h) against the S3
 * and OSS known answers (the AWS test suites and the limits:
 * test_sigv4.c):
 *
 * - S3's documented known answers (tests/data/s3-oss/aws-s3-sigv4-
 *   vectors.json): x-amz-content-sha256, the path encoded once, presigned
 *   GET with UNSIGNED-PAYLOAD, botocore's unnormalised presign;
 * - OSS V4 (OSS4-HMAC-SHA256) header and presigned vectors
 *   (oss-signature-vectors.json).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebb/buf.h>
#include <ebb/sigv4.h>
#include <ebb/urlenc.h>

#include "base/str.h"
#include "test_data.h"

/* ---- S3 known answers ---- */

static json_t *vectors(const char *file)
{
    char path[1024];
    test_data_path(path, sizeof(path), file);
    json_t *j = json_load_file(path, 0, NULL);
    assert_non_null(j);
    return j;
}

static json_t *find_vector(json_t *list, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
            return v;
    }
    fail_msg("no vector %s", name);
    return NULL;
}

static const char *str(json_t *v, const char *key)
{
    return json_string_value(json_object_get(v, key));
}

static struct ebb_sigv4_scope scope_of(json_t *v, enum ebb_sigv4_flavour fl,
                                       const char *date_key)
{
    return (struct ebb_sigv4_scope){
        .flavour = fl,
        .access_key_id = str(v, "access_key_id"),
        .secret_access_key = fl == EBB_SIGV4_AWS ? str(v, "secret_access_key")
                                                 : str(v, "access_key_secret"),
        .region = str(v, "region"),
        .service = fl == EBB_SIGV4_AWS ? str(v, "service") : str(v, "product"),
        .amz_date = str(v, date_key),
    };
}

static void check(json_t *v, const struct ebb_sigv4_result *r)
{
    assert_string_equal(r->canonical_request, str(v, "canonical_request"));
    assert_string_equal(r->string_to_sign, str(v, "string_to_sign"));
    assert_string_equal(r->signature, str(v, "signature"));
}

/* The documented examples, signed as the S3 client signs: the raw key as
 * the path (test$file.text becomes /test%24file.text once, not twice),
 * x-amz-content-sha256 the body's hash, a value-less sub-resource
 * written "lifecycle=". */
static void test_s3_header_vectors(void **state)
{
    (void)state;
    json_t *all = vectors("s3-oss/aws-s3-sigv4-vectors.json");
    json_t *list = json_object_get(all, "vectors");
    static const char empty[] =
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    struct {
        const char *name, *method, *path, *query;
        struct ebb_sigv4_header h[5];
        size_t n;
        const char *body;
    } cases[] = {
        {"s3-doc-get-object-range", "GET", "/test.txt", "",
         {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"},
          {"x-amz-content-sha256", empty}, {"x-amz-date", "20130524T000000Z"}},
         4, ""},
        {"s3-doc-put-object", "PUT", "/test$file.text", "",
         {{"Host", "examplebucket.s3.amazonaws.com"},
          {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
          {"x-amz-date", "20130524T000000Z"},
          {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
          {"x-amz-content-sha256",
           "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"}},
         5, "Welcome to Amazon S3."},
        {"s3-doc-get-bucket-lifecycle", "GET", "/", "lifecycle",
         {{"Host", "examplebucket.s3.amazonaws.com"},
          {"x-amz-date", "20130524T000000Z"}, {"x-amz-content-sha256", empty}},
         3, ""},
        {"s3-doc-list-objects", "GET", "/", "max-keys=2&prefix=J",
         {{"Host", "examplebucket.s3.amazonaws.com"},
          {"x-amz-date", "20130524T000000Z"}, {"x-amz-content-sha256", empty}},
         3, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *v = find_vector(list, cases[i].name);
        struct ebb_sigv4_scope scope = scope_of(v, EBB_SIGV4_AWS, "x_amz_date");
        struct ebb_sigv4_request req = {
            .method = cases[i].method, .path = cases[i].path,
            .query = cases[i].query, .headers = cases[i].h,
            .n_headers = cases[i].n, .payload = cases[i].body,
            .payload_len = strlen(cases[i].body), .s3_path = 1,
        };
        struct ebb_sigv4_result r;
        assert_int_equal(ebb_sigv4_sign(&req, &scope, &r), 0);
        check(v, &r);
        /* The header as AWS's SDKs send it: ", " between the parts. */
        char *want = ebb_strfmt(", Signature=%s", str(v, "signature"));
        assert_non_null(strstr(r.authorization, want));
        free(want);
        ebb_sigv4_result_free(&r);
    }
    json_decref(all);
}

static void test_s3_presign_vectors(void **state)
{
    (void)state;
    json_t *all = vectors("s3-oss/aws-s3-sigv4-vectors.json");
    json_t *list = json_object_get(all, "vectors");

    json_t *v = find_vector(list, "s3-doc-presigned-get");
    struct ebb_sigv4_header h[1] = {{"Host", "examplebucket.s3.amazonaws.com"}};
    struct ebb_sigv4_request req = {
        .method = "GET", .path = "/test.txt", .headers = h, .n_headers = 1,
        .payload_hash = EBB_SIGV4_UNSIGNED_PAYLOAD, .s3_path = 1,
    };
    struct ebb_sigv4_scope scope = scope_of(v, EBB_SIGV4_AWS, "x_amz_date");
    struct ebb_sigv4_result r;
    assert_int_equal(ebb_sigv4_presign(&req, &scope, 86400, &r), 0);
    check(v, &r);
    const char *url = str(v, "url");
    assert_string_equal(strchr(url, '?') + 1, r.authorization);
    ebb_sigv4_result_free(&r);

    v = find_vector(list, "botocore-s3-presign-unnormalized-path");
    h[0].value = "s3.us-west-2.amazonaws.com";
    req.path = "/mybucket/keyname/.bar";
    scope = scope_of(v, EBB_SIGV4_AWS, "x_amz_date");
    assert_int_equal(ebb_sigv4_presign(&req, &scope, 60, &r), 0);
    check(v, &r);
    ebb_sigv4_result_free(&r);
    json_decref(all);
}

/* ---- OSS V4 ---- */

/* Fills headers and query from an OSS vector ("query_given" holds the
 * presign parameters too; those are left to the signer). */
static size_t oss_headers(json_t *v, struct ebb_sigv4_header *h, size_t max)
{
    size_t n = 0;
    const char *name;
    json_t *value;
    json_object_foreach(json_object_get(v, "request_headers_given"), name, value) {
        assert_true(n < max);
        h[n++] = (struct ebb_sigv4_header){name, json_string_value(value)};
    }
    return n;
}

static char *oss_query(json_t *v)
{
    struct ebb_buf q = {0};
    ebb_buf_puts(&q, "");
    size_t i;
    json_t *kv;
    json_array_foreach(json_object_get(v, "query_given"), i, kv) {
        const char *k = json_string_value(json_array_get(kv, 0));
        const char *val = json_string_value(json_array_get(kv, 1));
        if (strncmp(k, "x-oss-", 6) == 0)
            continue;
        ebb_buf_printf(&q, "%s", q.len ? "&" : "");
        ebb_pct_encode(&q, k, strlen(k), 0);
        if (val[0] != '\0') {
            ebb_buf_puts(&q, "=");
            ebb_pct_encode(&q, val, strlen(val), 0);
        }
    }
    return ebb_buf_take(&q);
}

static void oss_case(json_t *v, int presign)
{
    struct ebb_sigv4_header h[16];
    size_t n = oss_headers(v, h, 14);
    const char *date = str(v, "x_oss_date");
    if (!presign)
        h[n++] = (struct ebb_sigv4_header){"x-oss-date", date};
    const char *token = str(v, "security_token");
    if (!presign && token != NULL)
        h[n++] = (struct ebb_sigv4_header){"x-oss-security-token", token};
    char *path = ebb_strfmt("/%s/%s", str(v, "bucket"), str(v, "key"));
    char *query = oss_query(v);
    struct ebb_buf extra = {0};
    ebb_buf_puts(&extra, "");
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(v, "additional_headers"), i, a)
        ebb_buf_printf(&extra, "%s%s", i ? ";" : "", json_string_value(a));
    struct ebb_sigv4_request req = {
        .method = "PUT", .path = path, .query = query, .headers = h,
        .n_headers = n, .payload_hash = EBB_SIGV4_UNSIGNED_PAYLOAD,
        .s3_path = 1, .additional_headers = extra.data,
    };
    struct ebb_sigv4_scope scope = scope_of(v, EBB_SIGV4_OSS, "x_oss_date");
    struct ebb_sigv4_result r;
    if (presign) {
        scope.session_token = token;
        assert_int_equal(ebb_sigv4_presign(&req, &scope, 599, &r), 0);
    } else {
        assert_int_equal(ebb_sigv4_sign(&req, &scope, &r), 0);
        assert_string_equal(r.authorization, str(v, "authorization"));
    }
    check(v, &r);
    ebb_sigv4_result_free(&r);
    ebb_buf_free(&extra);
    free(path);
    free(query);
}

static void test_oss_vectors(void **state)
{
    (void)state;
    json_t *all = vectors("s3-oss/oss-signature-vectors.json");
    json_t *list = json_object_get(all, "v4");
    static const char *const header_cases[] = {
        "v4-header", "v4-header-sts-token", "v4-header-additional-headers",
        "v4-header-cloudbox"};
    for (size_t i = 0; i < 4; i++)
        oss_case(find_vector(list, header_cases[i]), 0);
    oss_case(find_vector(list, "v4-query"), 1);
    oss_case(find_vector(list, "v4-query-sts-token"), 1);
    json_decref(all);

    /* A presigned URL that signs no header (OSS does not sign Host): the
     * header block is empty, not an empty line (the OSS fake found it). */
    struct ebb_sigv4_header h[1] = {{"Host", "b.oss-cn-hangzhou.aliyuncs.com"}};
    struct ebb_sigv4_request req = {.method = "GET", .path = "/b/k", .headers = h,
                                    .n_headers = 1, .s3_path = 1,
                                    .payload_hash = EBB_SIGV4_UNSIGNED_PAYLOAD};
    struct ebb_sigv4_scope scope = {.flavour = EBB_SIGV4_OSS, .access_key_id = "ak",
                                    .secret_access_key = "sk", .region = "cn-hangzhou",
                                    .service = "oss", .amz_date = "20231217T025437Z"};
    struct ebb_sigv4_result r;
    assert_int_equal(ebb_sigv4_presign(&req, &scope, 60, &r), 0);
    assert_string_equal(r.canonical_request,
                        "GET\n/b/k\nx-oss-credential=ak%2F20231217%2Fcn-hangzhou%2Foss%2F"
                        "aliyun_v4_request&x-oss-date=20231217T025437Z&x-oss-expires=60&"
                        "x-oss-signature-version=OSS4-HMAC-SHA256\n\n\nUNSIGNED-PAYLOAD");
    ebb_sigv4_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s3_header_vectors),
        cmocka_unit_test(test_s3_presign_vectors),
        cmocka_unit_test(test_oss_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
