/* The checkpoint endpoints' request bodies (daemon/agent_ckpt_parse.c):
 * what a hostile agent may not get past ebbd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/agent_ckpt_parse.h"

#define KEY_ID "0123456789abcdef0123456789abcdef"
#define PART ((int64_t)64 << 20)

static const struct ebb__ckpt_offer_rules rules = {
    .job_id = "j-1", .encrypt = true, .key_id = KEY_ID, .key_version = 1,
    .part_size = PART, .multipart = true,
};

static int offer(const char *text, struct ebb__ckpt_manifest *m, char *why)
{
    json_t *j = json_loads(text, JSON_ALLOW_NUL, NULL);
    assert_non_null(j);
    int rc = ebb__agent_ckpt_offer_parse(j, &rules, m, why, 256);
    json_decref(j);
    return rc;
}

static void refused(const char *text, const char *want)
{
    struct ebb__ckpt_manifest m;
    char why[256] = "";
    int rc = offer(text, &m, why);
    ebb__ckpt_manifest_clear(&m);
    if (rc != EBB_EINVAL || strstr(why, want) == NULL)
        fail_msg("%s\nwant %d with \"%s\", got %d \"%s\"", text, EBB_EINVAL, want, rc, why);
}

static void offers(void **state)
{
    (void)state;
    struct ebb__ckpt_manifest m;
    char why[256];
    /* 1000 bytes seal into 1096 (header 80, one tag). */
    int rc = offer("{\"name\":\"step-1\",\"kind\":\"directory\",\"files\":["
                   "{\"path\":\"a\",\"size\":1000,\"stored_size\":1096},"
                   "{\"path\":\"b/c\",\"size\":0,\"stored_size\":96}]}", &m, why);
    if (rc != 0)
        fail_msg("%s", why);
    assert_string_equal(m.name, "step-1");
    assert_string_equal(m.job, "j-1");
    assert_int_equal(m.n_files, 2);
    assert_int_equal(m.files[0].stored_size, 1096);
    ebb__ckpt_manifest_clear(&m);

    refused("{\"files\":[]}", "\"name\"");
    refused("{\"name\":\"x\",\"files\":[]}", "1 to 100000 files");
    refused("{\"name\":\"x\",\"kind\":\"link\",\"files\":[]}", "\"kind\"");
    refused("{\"name\":\"../x\",\"files\":[{\"path\":\"a\",\"size\":0,\"stored_size\":96}]}",
            "checkpoint");
    refused("{\"name\":\".tmp\",\"files\":[{\"path\":\"a\",\"size\":0,\"stored_size\":96}]}",
            "checkpoint");
    /* Paths that climb out, are absolute or out of order. */
    refused("{\"name\":\"x\",\"files\":[{\"path\":\"../a\",\"size\":0,\"stored_size\":96}]}",
            "..");
    refused("{\"name\":\"x\",\"files\":[{\"path\":\"/etc/x\",\"size\":0,\"stored_size\":96}]}",
            "relative");
    refused("{\"name\":\"x\",\"files\":[{\"path\":\"b\",\"size\":0,\"stored_size\":96},"
            "{\"path\":\"a\",\"size\":0,\"stored_size\":96}]}", "sorted");
    refused("{\"name\":\"x\",\"files\":[{\"path\":\"a\",\"size\":0,\"stored_size\":96},"
            "{\"path\":\"a/b\",\"size\":0,\"stored_size\":96}]}", "below another");
    /* Sizes: negative, not integers, a stored size that is not the
     * plaintext's sealed, beyond what one object of the store holds. */
    refused("{\"name\":\"x\",\"files\":[{\"path\":\"a\",\"size\":-1,\"stored_size\":96}]}",
            "integers");
    refused("{\"name\":\"x\",\"files\":[{\"path\":\"a\",\"size\":\"1\",\"stored_size\":96}]}",
            "integers");
    refused("{\"name\":\"x\",\"files\":[{\"path\":\"a\",\"size\":10,\"stored_size\":10}]}",
            "stored");
    refused("{\"name\":\"x\",\"files\":[{\"path\":\"a\",\"size\":687194767360,"
            "\"stored_size\":687357624400}]}", "more than one object");
    /* Sizes that need more uploads than one checkpoint may have: 11 files
     * of 10000 parts each. */
    char many[2048];
    size_t used = (size_t)snprintf(many, sizeof(many), "{\"name\":\"x\",\"files\":[");
    for (int i = 0; i < 11; i++) {
        int64_t size = PART * 9999;
        used += (size_t)snprintf(many + used, sizeof(many) - used,
                                 "%s{\"path\":\"f%02d\",\"size\":%lld,\"stored_size\":%lld}",
                                 i ? "," : "", i, (long long)size,
                                 (long long)(size + 80 + 16 * ((size + (4 << 20) - 1) / (4 << 20))));
    }
    snprintf(many + used, sizeof(many) - used, "]}");
    refused(many, "more than 100000 uploads");
    /* A path with a NUL inside. */
    refused("{\"name\":\"x\",\"files\":[{\"path\":\"a\\u0000b\",\"size\":0,\"stored_size\":96}]}",
            "path");
}

static void commits(void **state)
{
    (void)state;
    struct ebb__ckpt_manifest m;
    char why[256] = "";
    int64_t big = PART + 10; /* stored: two parts */
    char text[512];
    snprintf(text, sizeof(text), "{\"name\":\"c\",\"files\":[{\"path\":\"a\",\"size\":1,"
             "\"stored_size\":97},{\"path\":\"b\",\"size\":%lld,\"stored_size\":%lld}]}",
             (long long)big, (long long)(big + 80 + 17 * 16));
    assert_int_equal(offer(text, &m, why), 0);
    const char *sha = "\"" "00000000000000000000000000000000"
                      "00000000000000000000000000000000" "\"";
    char body[2048];
    snprintf(body, sizeof(body),
             "{\"files\":[{\"path\":\"a\",\"size\":1,\"stored_size\":97,\"sha256\":%s,"
             "\"stored_sha256\":%s,\"etag\":\"\\\"e1\\\"\"},{\"path\":\"b\",\"size\":%lld,"
             "\"stored_size\":%lld,\"sha256\":%s,\"stored_sha256\":%s,\"parts\":["
             "{\"number\":1,\"etag\":\"p1\"},{\"number\":2,\"etag\":\"p2\"}]}],"
             "\"upload_ms\":1200,\"periodic\":true,\"duration_ms\":30}",
             sha, sha, (long long)big, (long long)(big + 80 + 17 * 16), sha, sha);
    json_t *j = json_loads(body, 0, NULL), *etags = NULL;
    assert_non_null(j);
    struct ebb__ckpt_commit_meta meta;
    assert_int_equal(ebb__agent_ckpt_commit_parse(j, &m, PART, true, &etags, &meta, why,
                                                  sizeof(why)), 0);
    assert_int_equal(json_array_size(etags), 2);
    assert_string_equal(json_string_value(json_array_get(etags, 0)), "\"e1\"");
    assert_int_equal(json_array_size(json_array_get(etags, 1)), 2);
    assert_int_equal(meta.upload_ms, 1200);
    assert_true(meta.periodic);
    json_decref(etags);
    json_decref(j);

    /* Another size than offered, parts missing or out of order, a long
     * ETag, a bad hash: each refused. */
    static const char *const bad[] = {
        "{\"files\":[{\"path\":\"a\",\"size\":2}]}",
        "{\"files\":[1,2]}",
        "{\"files\":[]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        j = json_loads(bad[i], 0, NULL);
        assert_int_equal(ebb__agent_ckpt_commit_parse(j, &m, PART, true, &etags, &meta,
                                                      why, sizeof(why)), EBB_EINVAL);
        json_decref(j);
    }
    char *edits[][2] = {
        {"{\"number\":2,\"etag\":\"p2\"}", "{\"number\":3,\"etag\":\"p2\"}"},
        {",{\"number\":2,\"etag\":\"p2\"}", ""},
        {"\"etag\":\"p1\"", "\"etag\":\"pppppppppppppppppppppppppppppppppppppppppppppppppppp"
                            "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                            "pppppppppppppppppppppppp\""},
        {"\"upload_ms\":1200", "\"upload_ms\":-5"},
        {"\"etag\":\"\\\"e1\\\"\"", "\"etag\":\"\""},
    };
    for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        char copy[2048];
        const char *at = strstr(body, edits[i][0]);
        assert_non_null(at);
        snprintf(copy, sizeof(copy), "%.*s%s%s", (int)(at - body), body, edits[i][1],
                 at + strlen(edits[i][0]));
        j = json_loads(copy, 0, NULL);
        assert_non_null(j);
        why[0] = '\0';
        if (ebb__agent_ckpt_commit_parse(j, &m, PART, true, &etags, &meta, why,
                                         sizeof(why)) != EBB_EINVAL || why[0] == '\0')
            fail_msg("accepted: %s", copy);
        json_decref(j);
    }
    ebb__ckpt_manifest_clear(&m);
}

static void parts(void **state)
{
    (void)state;
    assert_int_equal(ebb__ckpt_parts_of(PART, PART, true), 0);
    assert_int_equal(ebb__ckpt_parts_of(PART + 1, PART, true), 2);
    assert_int_equal(ebb__ckpt_parts_of(3 * PART, PART, true), 3);
    assert_int_equal(ebb__ckpt_parts_of(3 * PART, PART, false), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(offers),
        cmocka_unit_test(commits),
        cmocka_unit_test(parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
