/* Fuzz target: the bodies of ebbd's checkpoint endpoints
 * (daemon/agent_ckpt_parse.c; docs/agent-protocol.md "Checkpoint
 * transfer (ebbd)"), on a listener that faces the network. Each input is
 * read as an offer (POST /v1/agent/checkpoints) and, once one is
 * accepted, its "commit" member as that checkpoint's commit.
 *
 * Invariants: a refusal says why; an accepted offer passes the manifest
 * reader's own checks (so object keys built from its name and indexes
 * stay inside the job's prefix), has 1..100000 files each within the
 * format's and the store's sizes, and at most EBB__CKPT_URLS_MAX uploads; an accepted commit has one ETag (or
 * one per part, in part order) per file, each 1..128 printable bytes. */
#include <string.h>

#include <jansson.h>

#include "daemon/agent_ckpt_parse.h"
#include "fuzz.h"

#define PART ((int64_t)64 << 20)

static void check_etag(const json_t *e, bool multipart)
{
    const char *s = json_string_value(e);
    FUZZ_CHECK(s != NULL && strlen(s) <= EBB__CKPT_ETAG_MAX);
    FUZZ_CHECK(!multipart || s[0] != '\0');
    for (const char *p = s; *p != '\0'; p++)
        FUZZ_CHECK(*p >= 0x20 && *p <= 0x7e);
}

static void one(json_t *body, bool multipart)
{
    const struct ebb__ckpt_offer_rules rules = {
        .job_id = "j-fuzz", .encrypt = multipart, .key_id = "0123456789abcdef0123456789abcdef",
        .key_version = 1, .part_size = PART, .multipart = multipart,
    };
    struct ebb__ckpt_manifest m;
    char why[256] = "";
    if (ebb__agent_ckpt_offer_parse(body, &rules, &m, why, sizeof(why)) != 0) {
        FUZZ_CHECK(why[0] != '\0');
        ebb__ckpt_manifest_clear(&m);
        return;
    }
    FUZZ_CHECK(m.n_files >= 1 && m.n_files <= EBB__CKPT_FILES_MAX);
    FUZZ_CHECK(ebb__ckpt_manifest_check(&m, NULL) == 0);
    FUZZ_CHECK(strchr(m.name, '/') == NULL && m.name[0] != '.');
    int64_t urls = 0;
    for (size_t i = 0; i < m.n_files; i++) {
        FUZZ_CHECK((int64_t)m.files[i].stored_size <=
                   (multipart ? PART * EBB__OBJSTORE_PARTS_MAX : EBB__OBJSTORE_PART_MAX));
        int64_t parts = ebb__ckpt_parts_of((int64_t)m.files[i].stored_size, PART, multipart);
        urls += parts > 0 ? parts : 1;
    }
    FUZZ_CHECK(urls <= EBB__CKPT_URLS_MAX);
    json_t *etags = NULL;
    struct ebb__ckpt_commit_meta meta;
    why[0] = '\0';
    if (ebb__agent_ckpt_commit_parse(json_object_get(body, "commit"), &m, PART, multipart,
                                     &etags, &meta, why, sizeof(why)) != 0) {
        FUZZ_CHECK(why[0] != '\0' && etags == NULL);
    } else {
        FUZZ_CHECK(json_array_size(etags) == m.n_files);
        FUZZ_CHECK(meta.upload_ms >= 0 && meta.duration_ms >= 0);
        for (size_t i = 0; i < m.n_files; i++) {
            json_t *e = json_array_get(etags, i);
            int64_t parts = ebb__ckpt_parts_of((int64_t)m.files[i].stored_size, PART,
                                               multipart);
            if (parts == 0) {
                check_etag(e, multipart);
                continue;
            }
            FUZZ_CHECK((int64_t)json_array_size(e) == parts);
            for (size_t k = 0; k < json_array_size(e); k++)
                check_etag(json_array_get(e, k), true);
        }
    }
    json_decref(etags);
    ebb__ckpt_manifest_clear(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = json_loadb((const char *)data, size, 0, NULL);
    if (json_is_object(body)) {
        one(body, true);
        one(body, false);
    }
    json_decref(body);
    return 0;
}
