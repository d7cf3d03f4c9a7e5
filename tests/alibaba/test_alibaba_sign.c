/* Alibaba Cloud signatures against known answers, and the names of GPU
 * instance types.
 *
 * The vectors come from /work/shared/research/alibaba-ecs/
 * signature-test-vectors.txt, which recomputed each of them:
 *  - V1 GET: Alibaba Cloud's "Request signature" documentation (RPC),
 *    ECS DescribeRegions with AccessKeyId testid / secret testsecret;
 *  - V1 POST: the same parameters signed for POST (computed there);
 *  - V1 empty method: aliyun/darabonba-openapi-util @39c4804f,
 *    golang/service/service_test.go Test_GetRPCSignature (Apache-2.0);
 *  - ACS3 RunInstances: Alibaba Cloud's "Request syntax and signature
 *    method V3" documentation;
 *  - ACS3 merged headers: darabonba-openapi-util Test_GetAuthorization.
 * The fake ECS server's own V1 code is checked against the same vectors,
 * so the provider tests' signature checks mean something.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <ebb/digest.h>

#include "alibaba.h"
#include "fake_ecs.h"

static void doc_params(struct ali_params *p)
{
    /* In the documentation's (unsorted) order. */
    ali_params_add(p, "Timestamp", "2016-02-23T12:46:24Z");
    ali_params_add(p, "Format", "XML");
    ali_params_add(p, "AccessKeyId", "testid");
    ali_params_add(p, "Action", "DescribeRegions");
    ali_params_add(p, "SignatureMethod", "HMAC-SHA1");
    ali_params_add(p, "SignatureNonce", "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf");
    ali_params_add(p, "Version", "2014-05-26");
    ali_params_add(p, "SignatureVersion", "1.0");
}

static void v1_canonical_query(void **state)
{
    (void)state;
    struct ali_params p = {0};
    doc_params(&p);
    char *q = ali_canonical_query(&p);
    assert_string_equal(q, "AccessKeyId=testid&Action=DescribeRegions&Format=XML&"
                           "SignatureMethod=HMAC-SHA1&SignatureNonce="
                           "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf&SignatureVersion=1.0&"
                           "Timestamp=2016-02-23T12%3A46%3A24Z&Version=2014-05-26");
    free(q);
    ali_params_free(&p);
}

static void v1_documented_get_and_post(void **state)
{
    (void)state;
    struct ali_params p = {0};
    doc_params(&p);
    char sig[ALI_SIG_V1_LEN];
    assert_int_equal(ali_sign_v1("GET", &p, "testsecret", sig), 0);
    assert_string_equal(sig, "OLeaidS1JvxuMvnyHOwuJ+uX5qY=");
    assert_int_equal(ali_sign_v1("POST", &p, "testsecret", sig), 0);
    assert_string_equal(sig, "MxbnVAM4w6sft9xjVpe/GCKueuk=");
    ali_params_free(&p);
}

static void v1_sdk_vector(void **state)
{
    (void)state;
    struct ali_params p = {0};
    ali_params_add(&p, "test", "ok");
    char sig[ALI_SIG_V1_LEN];
    assert_int_equal(ali_sign_v1("", &p, "accessKeySecret", sig), 0);
    assert_string_equal(sig, "jHx/oHoHNrbVfhncHEvPdHXZwHU=");
    ali_params_free(&p);
}

/* RFC 3986 as Alibaba wants it: space %20 (not +), '*' %2A, '~' kept,
 * UTF-8 bytes escaped one by one. */
static void v1_encoding(void **state)
{
    (void)state;
    struct ali_params p = {0};
    ali_params_add(&p, "b", "a b*c~d+e/f");
    ali_params_add(&p, "a", "\xc3\xa9");
    char *q = ali_canonical_query(&p);
    assert_string_equal(q, "a=%C3%A9&b=a%20b%2Ac~d%2Be%2Ff");
    free(q);
    ali_params_free(&p);
}

static void fake_server_agrees_with_the_vectors(void **state)
{
    (void)state;
    const char *keys[] = {"Timestamp", "Format", "AccessKeyId", "Action",
                          "SignatureMethod", "SignatureNonce", "Version",
                          "SignatureVersion"};
    const char *values[] = {"2016-02-23T12:46:24Z", "XML", "testid",
                            "DescribeRegions", "HMAC-SHA1",
                            "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf", "2014-05-26",
                            "1.0"};
    char sig[29];
    fake_ecs_v1_signature("GET", keys, values, 8, "testsecret", sig);
    assert_string_equal(sig, "OLeaidS1JvxuMvnyHOwuJ+uX5qY=");
    fake_ecs_v1_signature("POST", keys, values, 8, "testsecret", sig);
    assert_string_equal(sig, "MxbnVAM4w6sft9xjVpe/GCKueuk=");
    const char *k1[] = {"test"}, *v1[] = {"ok"};
    fake_ecs_v1_signature("", k1, v1, 1, "accessKeySecret", sig);
    assert_string_equal(sig, "jHx/oHoHNrbVfhncHEvPdHXZwHU=");
}

static void v3_documented_run_instances(void **state)
{
    (void)state;
    const char *empty_hash =
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    char hash[65];
    assert_int_equal(ebb_sha256_hex("", 0, hash), 0);
    assert_string_equal(hash, empty_hash);
    struct ali_params q = {0};
    ali_params_add(&q, "RegionId", "cn-shanghai");
    ali_params_add(&q, "ImageId",
                   "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd");
    const char *headers[] = {
        "host: ecs.cn-shanghai.aliyuncs.com",
        "x-acs-action: RunInstances",
        "x-acs-version: 2014-05-26",
        "x-acs-date: 2023-10-26T10:22:32Z",
        "x-acs-signature-nonce: 3156853299f313e23d1673dc12e1703d",
        "x-acs-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca"
        "495991b7852b855",
        "Accept: application/json", /* not signed */
    };
    char *auth = ali_sign_v3("POST", "/", &q, headers, 7, empty_hash,
                             "YourAccessKeyId", "YourAccessKeySecret");
    assert_string_equal(
        auth, "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,SignedHeaders=host;"
              "x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;"
              "x-acs-version,Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d8539"
              "12eee15083a6f0f3283c0");
    free(auth);
    ali_params_free(&q);
}

static void v3_sdk_merged_headers(void **state)
{
    (void)state;
    struct ali_params q = {0};
    ali_params_add(&q, "test", "ok");
    ali_params_add(&q, "empty", "");
    const char *headers[] = {"x-acs-test: http", "x-acs-TEST: https"};
    char *auth = ali_sign_v3(
        "", "", &q, headers, 2,
        "55e12e91650d2fec56ec74e1d3e4ddbfce2ef3a65890c2a19ecf88a307e76a23",
        "acesskey", "secret");
    assert_string_equal(auth, "ACS3-HMAC-SHA256 Credential=acesskey,SignedHeaders="
                              "x-acs-test,Signature=4ab59fffe3c5738ff8a2729f90cc04fe"
                              "18b02a4b15b2102cbaf92f9ff3df2ea3");
    free(auth);
    ali_params_free(&q);
}

static void shapes_from_type_names(void **state)
{
    (void)state;
    struct ebb_shape s;
    assert_int_equal(ali_shape_of("ecs.gn6v-c8g1.2xlarge", &s), 1);
    assert_string_equal(s.gpu_model, "V100");
    assert_int_equal(s.gpu_count, 1);
    assert_int_equal(s.vcpus, 8);
    assert_true(s.gpu_memory_gb == 16);
    assert_int_equal(ali_shape_of("ecs.gn6v-c8g1.16xlarge", &s), 1);
    assert_int_equal(s.gpu_count, 8);
    assert_int_equal(s.vcpus, 64);
    assert_int_equal(ali_shape_of("ecs.gn6i-c4g1.xlarge", &s), 1);
    assert_string_equal(s.gpu_model, "T4");
    assert_int_equal(s.gpu_count, 1);
    assert_int_equal(ali_shape_of("ecs.gn7i-c16g1.4xlarge", &s), 1);
    assert_string_equal(s.gpu_model, "A10");
    assert_int_equal(s.vcpus, 16);
    /* Unknown families and CPU types have no shape here. */
    assert_int_equal(ali_shape_of("ecs.g7.large", &s), 0);
    assert_int_equal(ali_shape_of("ecs.gn9x-c8g1.2xlarge", &s), 0);
    assert_int_equal(ali_shape_of("ecs.gn6v-c8g1.huge", &s), 0);
    assert_int_equal(ali_shape_of("p3.2xlarge", &s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(v1_canonical_query),
        cmocka_unit_test(v1_documented_get_and_post),
        cmocka_unit_test(v1_sdk_vector),
        cmocka_unit_test(v1_encoding),
        cmocka_unit_test(fake_server_agrees_with_the_vectors),
        cmocka_unit_test(v3_documented_run_instances),
        cmocka_unit_test(v3_sdk_merged_headers),
        cmocka_unit_test(shapes_from_type_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
