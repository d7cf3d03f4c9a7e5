/* The one SigV4 signer (src/base/sigv4.c, ebb/sigv4.h) against the AWS
 * test suites and its limits (the S3 and OSS known answers:
 * test_sigv4_s3_oss.c):
 *
 * - every case of the AWS test suite as botocore copies it
 *   (tests/data/sigv4): canonical request, string to sign and
 *   Authorization header byte for byte; a bad date, a bad query escape;
 * - every case of the aws-c-auth suite (tests/data/sigv4-aws-c-auth) in
 *   both forms, the Authorization header and the presigned URL, the
 *   `*-unnormalized` cases with S3's path rule;
 * - the limits: presigned expiry 1..604800 s, a malformed payload hash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <jansson.h>

#include <ebb/digest.h>
#include <ebb/sigv4.h>

#include "base/str.h"
#include "test_data.h"

/* ---- the botocore copy of the AWS suite ---- */

/* The X-Amz-Security-Token value in a signed request, or NULL. */
static char *token_in(const char *sreq)
{
    const char *t = strstr(sreq, "\nX-Amz-Security-Token:");
    if (t == NULL)
        return NULL;
    t += strlen("\nX-Amz-Security-Token:");
    return strndup(t, strcspn(t, "\n"));
}

static int has_header(const struct test_req *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcasecmp(p->names[i], name) == 0)
            return 1;
    return 0;
}

/* Signs <dir>/<name>.req and compares the canonical request, string to
 * sign and Authorization header with .creq, .sts and .authz. Temporary
 * credentials: where the signed request (.sreq) carries an
 * X-Amz-Security-Token header the .req lacks, the token is signed as a
 * header, except in post-sts-header-after, whose point is a token added
 * after signing. */
static int run_botocore_case(const char *dir, const char *name)
{
    char path[2400];
    char *ext[5];
    static const char *const exts[5] = {"req", "creq", "sts", "authz", "sreq"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof(path), "%s/%s.%s", dir, name, exts[i]);
        ext[i] = test_slurp(path, NULL);
        assert_non_null(ext[i]);
    }
    struct test_req p;
    test_req_parse(ext[0], &p);
    char *token = token_in(ext[4]);
    if (token != NULL && !has_header(&p, "X-Amz-Security-Token") &&
        strcmp(name, "post-sts-header-after") != 0)
        test_req_add(&p, "X-Amz-Security-Token", token);
    free(token);
    test_req_headers(&p);

    struct ebb_sigv4_request req = {
        .method = p.method, .path = p.path, .query = p.query,
        .headers = p.h, .n_headers = p.n,
        .payload = p.body, .payload_len = strlen(p.body),
    };
    struct ebb_sigv4_scope scope = {
        .access_key_id = "AKIDEXAMPLE",
        .secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        .region = "us-east-1",
        .service = "service",
        .amz_date = "20150830T123600Z",
    };
    struct ebb_sigv4_result r;
    int failed = 0;
    if (ebb_sigv4_sign(&req, &scope, &r) != 0) {
        print_error("%s: signing failed\n", name);
        failed = 1;
    } else {
        const char *got[3] = {r.canonical_request, r.string_to_sign, r.authorization};
        for (int i = 0; i < 3; i++) {
            if (strcmp(got[i], ext[i + 1]) != 0) {
                print_error("%s.%s differs:\n--- expected\n%s\n--- got\n%s\n",
                            name, exts[i + 1], ext[i + 1], got[i]);
                failed = 1;
            }
        }
        ebb_sigv4_result_free(&r);
    }
    test_req_free(&p);
    for (int i = 0; i < 5; i++)
        free(ext[i]);
    return failed;
}

/* Visits every case directory (one holding <dirname>.req) below `dir`. */
static void walk_botocore(const char *dir, int *cases, int *failures)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[1100], req[2400];
        snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(sub, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        snprintf(req, sizeof(req), "%s/%s.req", sub, e->d_name);
        if (stat(req, &st) == 0) {
            (*cases)++;
            *failures += run_botocore_case(sub, e->d_name);
        }
        walk_botocore(sub, cases, failures);
    }
    closedir(d);
}

static void test_botocore_suite(void **state)
{
    (void)state;
    char dir[1024];
    test_data_path(dir, sizeof(dir), "sigv4");
    int cases = 0, failures = 0;
    walk_botocore(dir, &cases, &failures);
    /* All 34 cases ran; none may fail. */
    assert_int_equal(cases, 34);
    assert_int_equal(failures, 0);
}

/* A bad X-Amz-Date and a malformed query escape are refused. */
static void test_rejects(void **state)
{
    (void)state;
    struct ebb_sigv4_header h[1] = {{"Host", "example.amazonaws.com"}};
    struct ebb_sigv4_request req = {.method = "GET", .path = "/", .query = "",
                                    .headers = h, .n_headers = 1};
    struct ebb_sigv4_scope scope = {.access_key_id = "AKID",
                                    .secret_access_key = "secret",
                                    .region = "us-east-1", .service = "ec2",
                                    .amz_date = "2015-08-30T12:36:00Z"};
    struct ebb_sigv4_result r;
    assert_int_equal(ebb_sigv4_sign(&req, &scope, &r), EBB_EINVAL);
    scope.amz_date = "20150830T123600Z";
    req.query = "a=%zz";
    assert_int_equal(ebb_sigv4_sign(&req, &scope, &r), EBB_EINVAL);
}

static void test_amz_date(void **state)
{
    (void)state;
    char d[17];
    ebb_sigv4_amz_date(INT64_C(1440938160000), d); /* 2015-08-30T12:36:00Z */
    assert_string_equal(d, "20150830T123600Z");
    ebb_sigv4_amz_date(INT64_C(1440938160999), d); /* milliseconds dropped */
    assert_string_equal(d, "20150830T123600Z");
    ebb_sigv4_amz_date(-1, d); /* before 1970: the day before */
    assert_string_equal(d, "19691231T235959Z");
    ebb_sigv4_amz_date(INT64_C(253402300799000), d);
    assert_string_equal(d, "99991231T235959Z");
}

/* ---- aws-c-auth suite ---- */

/* Compares `got` with the file `dir/file`; prints and counts a mismatch. */
static int expect_file(const char *dir, const char *file, const char *got)
{
    char path[1600];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    char *want = test_slurp(path, NULL);
    assert_non_null(want);
    int bad = strcmp(want, got) != 0;
    if (bad)
        print_error("%s differs:\n--- expected\n%s\n--- got\n%s\n", path, want, got);
    free(want);
    return bad;
}

static int run_c_auth_case(const char *dir)
{
    char path[1600];
    snprintf(path, sizeof(path), "%s/context.json", dir);
    json_t *ctx = json_load_file(path, 0, NULL);
    assert_non_null(ctx);
    json_t *cred = json_object_get(ctx, "credentials");
    const char *token = json_string_value(json_object_get(cred, "token"));
    int omit_token = json_is_true(json_object_get(ctx, "omit_session_token"));
    int sign_body = json_is_true(json_object_get(ctx, "sign_body"));
    int normalize = json_is_true(json_object_get(ctx, "normalize"));
    snprintf(path, sizeof(path), "%s/request.txt", dir);
    char *text = test_slurp(path, NULL);
    assert_non_null(text);
    struct test_req p;
    test_req_parse(text, &p);

    struct ebb_sigv4_scope scope = {
        .flavour = EBB_SIGV4_AWS,
        .access_key_id = json_string_value(json_object_get(cred, "access_key_id")),
        .secret_access_key = json_string_value(json_object_get(cred, "secret_access_key")),
        .region = json_string_value(json_object_get(ctx, "region")),
        .service = json_string_value(json_object_get(ctx, "service")),
        .amz_date = "20150830T123600Z",
    };
    char body_hash[65] = "";
    struct ebb_sigv4_request req = {
        .method = p.method, .path = p.path, .query = p.query,
        .payload = sign_body ? p.body : "",
        .payload_len = sign_body ? strlen(p.body) : 0,
        .s3_path = !normalize,
    };
    int failed = 0;

    /* The presigned form: the request's own headers only. */
    test_req_headers(&p);
    req.headers = p.h;
    req.n_headers = p.n;
    scope.session_token = token != NULL && !omit_token ? token : NULL;
    struct ebb_sigv4_result r;
    int64_t expires = json_integer_value(json_object_get(ctx, "expiration_in_seconds"));
    assert_int_equal(ebb_sigv4_presign(&req, &scope, expires, &r), 0);
    failed += expect_file(dir, "query-canonical-request.txt", r.canonical_request);
    failed += expect_file(dir, "query-string-to-sign.txt", r.string_to_sign);
    failed += expect_file(dir, "query-signature.txt", r.signature);
    char *want_sig = ebb_strfmt("&X-Amz-Signature=%s", r.signature);
    size_t ql = strlen(r.authorization), sl = strlen(want_sig);
    assert_true(ql > sl && strcmp(r.authorization + ql - sl, want_sig) == 0);
    free(want_sig);
    ebb_sigv4_result_free(&r);

    /* The header form: X-Amz-Date, the body's hash and the token join
     * the signed headers as the suite's signer adds them. */
    scope.session_token = NULL;
    test_req_add(&p, "X-Amz-Date", scope.amz_date);
    if (sign_body) {
        assert_int_equal(ebb_sha256_hex(p.body, strlen(p.body), body_hash), 0);
        test_req_add(&p, "x-amz-content-sha256", body_hash);
    }
    if (token != NULL && !omit_token)
        test_req_add(&p, "X-Amz-Security-Token", token);
    test_req_headers(&p);
    req.n_headers = p.n;
    assert_int_equal(ebb_sigv4_sign(&req, &scope, &r), 0);
    failed += expect_file(dir, "header-canonical-request.txt", r.canonical_request);
    failed += expect_file(dir, "header-string-to-sign.txt", r.string_to_sign);
    failed += expect_file(dir, "header-signature.txt", r.signature);
    ebb_sigv4_result_free(&r);

    test_req_free(&p);
    free(text);
    json_decref(ctx);
    return failed;
}

static void test_c_auth_suite(void **state)
{
    (void)state;
    char dir[1024];
    test_data_path(dir, sizeof(dir), "sigv4-aws-c-auth/v4");
    DIR *d = opendir(dir);
    assert_non_null(d);
    int cases = 0, failures = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[1300];
        snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(sub, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        cases++;
        failures += run_c_auth_case(sub);
    }
    closedir(d);
    assert_int_equal(cases, 38);
    assert_int_equal(failures, 0);
}

/* ---- limits ---- */

static void test_limits(void **state)
{
    (void)state;
    struct ebb_sigv4_header h[1] = {{"Host", "b.s3.amazonaws.com"}};
    struct ebb_sigv4_request req = {.method = "GET", .path = "/k", .headers = h,
                                    .n_headers = 1, .s3_path = 1,
                                    .payload_hash = EBB_SIGV4_UNSIGNED_PAYLOAD};
    struct ebb_sigv4_scope scope = {.access_key_id = "AKID",
                                    .secret_access_key = "secret",
                                    .region = "us-east-1", .service = "s3",
                                    .amz_date = "20260101T000000Z"};
    struct ebb_sigv4_result r;
    assert_int_equal(ebb_sigv4_presign(&req, &scope, 0, &r), EBB_EINVAL);
    assert_null(r.authorization);
    assert_int_equal(ebb_sigv4_presign(&req, &scope, 604801, &r), EBB_EINVAL);
    assert_int_equal(ebb_sigv4_presign(&req, &scope, 1, &r), 0);
    ebb_sigv4_result_free(&r);
    assert_int_equal(ebb_sigv4_presign(&req, &scope, 604800, &r), 0);
    assert_non_null(strstr(r.authorization, "X-Amz-Expires=604800&"));
    ebb_sigv4_result_free(&r);
    /* Neither UNSIGNED-PAYLOAD nor 64 lower-case hex digits. */
    req.payload_hash = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
    assert_int_equal(ebb_sigv4_sign(&req, &scope, &r), EBB_EINVAL);
    req.payload_hash = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855";
    assert_int_equal(ebb_sigv4_sign(&req, &scope, &r), EBB_EINVAL);
    /* A session token travels signed in the presigned query. */
    req.payload_hash = EBB_SIGV4_UNSIGNED_PAYLOAD;
    scope.session_token = "tok/en";
    assert_int_equal(ebb_sigv4_presign(&req, &scope, 60, &r), 0);
    assert_non_null(strstr(r.authorization, "X-Amz-Security-Token=tok%2Fen&"));
    assert_non_null(strstr(r.canonical_request, "X-Amz-Security-Token=tok%2Fen"));
    ebb_sigv4_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_botocore_suite),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_amz_date),
        cmocka_unit_test(test_c_auth_suite),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
