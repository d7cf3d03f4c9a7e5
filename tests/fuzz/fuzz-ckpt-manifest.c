/* Fuzz target: checkpoint manifests (io/ckpt_manifest_read.c), which ebbd
 * and the agent read back from a store anyone with the bucket's
 * credentials can write. The key is fixed, so the checked-in corpus can
 * hold manifests that verify.
 *
 * Invariants: a refusal leaves no manifest and says why, with one of the
 * manifest faults; an accepted manifest passes the writer's own checks,
 * and writing it again gives a text that reads back to the same fields
 * and writes to the same bytes (one canonical form). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/ckpt_manifest.h"

static void same(const struct ebb__ckpt_manifest *a, const struct ebb__ckpt_manifest *b)
{
    FUZZ_CHECK(strcmp(a->name, b->name) == 0 && strcmp(a->job, b->job) == 0);
    FUZZ_CHECK(a->kind == b->kind && a->created == b->created && a->encrypt == b->encrypt);
    FUZZ_CHECK(strcmp(a->key_id, b->key_id) == 0 && a->key_version == b->key_version);
    FUZZ_CHECK(a->n_files == b->n_files);
    for (size_t i = 0; i < a->n_files; i++) {
        const struct ebb__ckpt_manifest_file *x = &a->files[i], *y = &b->files[i];
        FUZZ_CHECK(strcmp(x->path, y->path) == 0 && x->size == y->size);
        FUZZ_CHECK(memcmp(x->sha256, y->sha256, 32) == 0);
        FUZZ_CHECK(x->stored_size == y->stored_size);
        FUZZ_CHECK(memcmp(x->stored_sha256, y->stored_sha256, 32) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ebb__ckpt_key k;
    for (size_t i = 0; i < sizeof(k.bytes); i++)
        k.bytes[i] = (unsigned char)i;
    struct ebb__ckpt_manifest *m = NULL;
    struct ebb__ckpt_error err;
    int rc = ebb__ckpt_manifest_read((const char *)data, size, &k, &m, &err);
    if (rc != 0) {
        FUZZ_CHECK(m == NULL && err.diag.msg[0] != '\0');
        FUZZ_CHECK(err.fault == EBB__CKPT_MANIFEST_INVALID ||
                   err.fault == EBB__CKPT_MANIFEST_KEY ||
                   err.fault == EBB__CKPT_MANIFEST_MAC || rc == EBB_ENOMEM);
        return 0;
    }
    FUZZ_CHECK(ebb__ckpt_manifest_check(m, &err) == 0);
    char *text = NULL, *again = NULL;
    size_t len = 0, len2 = 0;
    FUZZ_CHECK(ebb__ckpt_manifest_write(m, &k, &text, &len, &err) == 0);
    struct ebb__ckpt_manifest *back = NULL;
    FUZZ_CHECK(ebb__ckpt_manifest_read(text, len, &k, &back, &err) == 0);
    same(m, back);
    FUZZ_CHECK(ebb__ckpt_manifest_write(back, &k, &again, &len2, &err) == 0);
    FUZZ_CHECK(len == len2 && memcmp(text, again, len) == 0);
    free(text);
    free(again);
    ebb__ckpt_manifest_free(back);
    ebb__ckpt_manifest_free(m);
    return 0;
}
