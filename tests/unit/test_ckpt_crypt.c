/* The checkpoint encryption format (base/ckpt_crypt.h): known answers
 * computed apart, with Python's `cryptography` (HKDF, AESGCM, HMAC), for
 * the object key, two sealed chunks and a manifest tag; then a whole
 * object sealed and opened, and every attack the format must catch: a
 * flipped byte, chunks swapped, a chunk moved to another file, the last
 * chunk dropped, a chunk appended, a wrong key, any manifest field
 * changed or objects reordered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/common.h>

#include "base/ckpt_crypt.h"

static void from_hex(const char *hex, uint8_t *out, size_t n)
{
    assert_int_equal(strlen(hex), 2 * n);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
}

static void job_key(uint8_t k[EBB__CC_KEY_LEN], uint8_t nonce[EBB__CC_NONCE_LEN])
{
    for (int i = 0; i < 32; i++) {
        k[i] = (uint8_t)i;
        nonce[i] = (uint8_t)(100 + i);
    }
}

static void test_known_answers(void **state)
{
    (void)state;
    uint8_t k[32], nonce[32], ko[32], want[64];
    job_key(k, nonce);
    assert_int_equal(ebb__cc_object_key(k, nonce, ko), 0);
    from_hex("0d9d508d74b1b2218711652e8943cecf305db9c929172d345e2155a299a5c47d", want, 32);
    assert_memory_equal(ko, want, 32);

    static const char pt[] = "ebb checkpoint chunk known answer";
    size_t len = strlen(pt);
    uint8_t sealed[64], opened[64];
    assert_int_equal(ebb__cc_seal_chunk(ko, 0, 0, (const uint8_t *)pt, len, sealed), 0);
    from_hex("e74dd74fcae9a4cba90536b7da4f484b76a6b7c4de9bd43a61beffcdc38aa448dc"
             "530ae43f69b03884981e6f3b53e25495", want, len + 16);
    assert_memory_equal(sealed, want, len + 16);
    assert_int_equal(ebb__cc_seal_chunk(ko, 1, 1, (const uint8_t *)pt, len, sealed), 0);
    from_hex("329d371891b9da380be966ca2beb6b5da1a5a34fdfa6ad242343a4fc897c2d27cc"
             "47651440032969f910959afd67537272", want, len + 16);
    assert_memory_equal(sealed, want, len + 16);
    assert_int_equal(ebb__cc_open_chunk(ko, 1, 1, sealed, len + 16, opened), 0);
    assert_memory_equal(opened, pt, len);

    struct ebb__cc_object objs[2] = {
        {.name = "model.pt", .size = 20000, .chunk_size = 4096},
        {.name = "opt.pt", .size = 0, .chunk_size = 8 << 20},
    };
    memcpy(objs[0].nonce, nonce, 32);
    uint8_t tag[32];
    assert_int_equal(ebb__cc_manifest_tag(k, "j-467c1813", "ckpt-000003", objs, 2, tag), 0);
    from_hex("7989af2c7a51d72467329e671cad6637cb4240305961f213a00f5cf92f0e76bb", want, 32);
    assert_memory_equal(tag, want, 32);
}

/* Seals `size` bytes of `plain` as a stored object; returns its bytes. */
static uint8_t *seal_object(const uint8_t ko[32], const uint8_t *plain, uint64_t size,
                            uint32_t cs, size_t *out_len)
{
    uint64_t n = ebb__cc_chunks(size, cs);
    uint8_t *obj = malloc(ebb__cc_sealed_size(size, cs));
    assert_non_null(obj);
    size_t at = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t len = i + 1 < n ? cs : (size_t)(size - i * cs);
        assert_int_equal(ebb__cc_seal_chunk(ko, i, i + 1 == n, plain + i * cs, len, obj + at), 0);
        at += len + EBB__CC_TAG_LEN;
    }
    *out_len = at;
    assert_int_equal(at, ebb__cc_sealed_size(size, cs));
    return obj;
}

/* Opens a stored object as a reader that trusts only the manifest's size
 * and chunk size: 0, or the first failure. */
static int open_object(const uint8_t ko[32], const uint8_t *obj, size_t obj_len,
                       uint64_t size, uint32_t cs, uint8_t *plain)
{
    if (obj_len != ebb__cc_sealed_size(size, cs))
        return EBB_EIO; /* truncated or extended: the count is not met */
    uint64_t n = ebb__cc_chunks(size, cs);
    size_t at = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t len = (i + 1 < n ? cs : (size_t)(size - i * cs)) + EBB__CC_TAG_LEN;
        int rc = ebb__cc_open_chunk(ko, i, i + 1 == n, obj + at, len, plain + i * cs);
        if (rc != 0)
            return rc;
        at += len;
    }
    return 0;
}

static void test_attacks(void **state)
{
    (void)state;
    uint8_t k[32], nonce[32], ko[32], ko2[32];
    job_key(k, nonce);
    assert_int_equal(ebb__cc_object_key(k, nonce, ko), 0);
    const uint32_t cs = 4096;
    const uint64_t size = 3 * cs + 100;
    uint8_t *plain = malloc(size), *back = malloc(size);
    for (uint64_t i = 0; i < size; i++)
        plain[i] = (uint8_t)(i * 31 + 7);
    size_t len;
    uint8_t *obj = seal_object(ko, plain, size, cs, &len);
    assert_int_equal(ebb__cc_chunks(size, cs), 4);
    /* No plaintext in the stored bytes: each chunk's bytes match the
     * plaintext's in place about once in 256, as random bytes do. */
    size_t same = 0;
    for (uint64_t i = 0; i < size; i++)
        same += obj[(i / cs) * (cs + EBB__CC_TAG_LEN) + i % cs] == plain[i];
    assert_true(same < size / 64);
    assert_int_equal(open_object(ko, obj, len, size, cs, back), 0);
    assert_memory_equal(back, plain, size);

    /* A flipped byte, in data and in a tag. */
    obj[5000] ^= 1;
    assert_int_equal(open_object(ko, obj, len, size, cs, back), EBB_EAUTH);
    obj[5000] ^= 1;
    obj[cs + EBB__CC_TAG_LEN - 1] ^= 0x80;
    assert_int_equal(open_object(ko, obj, len, size, cs, back), EBB_EAUTH);
    obj[cs + EBB__CC_TAG_LEN - 1] ^= 0x80;

    /* Chunks 0 and 1 swapped (same length). */
    size_t c = cs + EBB__CC_TAG_LEN;
    uint8_t *tmp = malloc(c);
    memcpy(tmp, obj, c);
    memmove(obj, obj + c, c);
    memcpy(obj + c, tmp, c);
    assert_int_equal(open_object(ko, obj, len, size, cs, back), EBB_EAUTH);
    memcpy(obj + c, obj, c);
    memcpy(obj, tmp, c);
    assert_int_equal(open_object(ko, obj, len, size, cs, back), 0);

    /* The last chunk dropped: the count is not met, and the chunk now last
     * was not sealed as final either. */
    size_t cut = 3 * c;
    assert_int_equal(open_object(ko, obj, cut, size, cs, back), EBB_EIO);
    assert_int_equal(open_object(ko, obj, cut, 3 * cs, cs, back), EBB_EAUTH);
    /* A chunk appended. */
    uint8_t *longer = malloc(len + c);
    memcpy(longer, obj, len);
    memcpy(longer + len, obj, c);
    assert_int_equal(open_object(ko, longer, len + c, size, cs, back), EBB_EIO);
    free(longer);

    /* Another file's key (another nonce), another job's key. */
    uint8_t other[32];
    memcpy(other, nonce, 32);
    other[0] ^= 1;
    assert_int_equal(ebb__cc_object_key(k, other, ko2), 0);
    assert_int_equal(open_object(ko2, obj, len, size, cs, back), EBB_EAUTH);
    k[31] ^= 1;
    assert_int_equal(ebb__cc_object_key(k, nonce, ko2), 0);
    assert_int_equal(open_object(ko2, obj, len, size, cs, back), EBB_EAUTH);
    k[31] ^= 1;
    /* A refused chunk leaves no plaintext behind. */
    uint8_t out[4096];
    memset(out, 0xAA, sizeof(out));
    obj[0] ^= 1;
    assert_int_equal(ebb__cc_open_chunk(ko, 0, 0, obj, c, out), EBB_EAUTH);
    for (size_t i = 0; i < sizeof(out); i++)
        assert_int_equal(out[i], 0);
    assert_int_equal(ebb__cc_open_chunk(ko, 0, 0, obj, 15, out), EBB_EINVAL);

    /* An empty file is one empty chunk, sealed as final. */
    uint8_t empty[EBB__CC_TAG_LEN];
    assert_int_equal(ebb__cc_sealed_size(0, cs), EBB__CC_TAG_LEN);
    assert_int_equal(ebb__cc_seal_chunk(ko, 0, 1, NULL, 0, empty), 0);
    assert_int_equal(ebb__cc_open_chunk(ko, 0, 1, empty, sizeof(empty), out), 0);
    assert_int_equal(ebb__cc_open_chunk(ko, 0, 0, empty, sizeof(empty), out), EBB_EAUTH);
    assert_int_equal(ebb__cc_chunks(10, 100), 0);
    assert_int_equal(ebb__cc_chunks(10, EBB__CC_CHUNK_MAX + 1), 0);
    free(tmp);
    free(obj);
    free(plain);
    free(back);
}

static void test_manifest(void **state)
{
    (void)state;
    uint8_t k[32], nonce[32], tag[32];
    job_key(k, nonce);
    struct ebb__cc_object objs[2] = {
        {.name = "model.pt", .size = 20000, .chunk_size = 4096},
        {.name = "opt.pt", .size = 77, .chunk_size = 4096},
    };
    memcpy(objs[0].nonce, nonce, 32);
    assert_int_equal(ebb__cc_manifest_tag(k, "j-1", "ckpt-1", objs, 2, tag), 0);
    assert_int_equal(ebb__cc_manifest_verify(k, "j-1", "ckpt-1", objs, 2, tag), 0);
    /* Every field counts. */
    assert_int_equal(ebb__cc_manifest_verify(k, "j-2", "ckpt-1", objs, 2, tag), EBB_EAUTH);
    assert_int_equal(ebb__cc_manifest_verify(k, "j-1", "ckpt-2", objs, 2, tag), EBB_EAUTH);
    assert_int_equal(ebb__cc_manifest_verify(k, "j-1", "ckpt-1", objs, 1, tag), EBB_EAUTH);
    objs[1].size = 76;
    assert_int_equal(ebb__cc_manifest_verify(k, "j-1", "ckpt-1", objs, 2, tag), EBB_EAUTH);
    objs[1].size = 77;
    objs[0].chunk_size = 8192;
    assert_int_equal(ebb__cc_manifest_verify(k, "j-1", "ckpt-1", objs, 2, tag), EBB_EAUTH);
    objs[0].chunk_size = 4096;
    objs[0].nonce[9] ^= 1;
    assert_int_equal(ebb__cc_manifest_verify(k, "j-1", "ckpt-1", objs, 2, tag), EBB_EAUTH);
    objs[0].nonce[9] ^= 1;
    struct ebb__cc_object swapped[2] = {objs[1], objs[0]};
    assert_int_equal(ebb__cc_manifest_verify(k, "j-1", "ckpt-1", swapped, 2, tag), EBB_EAUTH);
    /* Names cannot slide into one another ("ab"+"c" vs "a"+"bc"). */
    objs[0].name = "model.ptopt";
    objs[1].name = ".pt";
    assert_int_equal(ebb__cc_manifest_verify(k, "j-1", "ckpt-1", objs, 2, tag), EBB_EAUTH);
    objs[0].name = "model.pt";
    objs[1].name = "opt.pt";
    k[0] ^= 1;
    assert_int_equal(ebb__cc_manifest_verify(k, "j-1", "ckpt-1", objs, 2, tag), EBB_EAUTH);
    objs[0].chunk_size = 10;
    assert_int_equal(ebb__cc_manifest_tag(k, "j-1", "ckpt-1", objs, 2, tag), EBB_EINVAL);

    /* Random keys differ. */
    uint8_t a[32], b[32];
    assert_int_equal(ebb__cc_random(a, 32), 0);
    assert_int_equal(ebb__cc_random(b, 32), 0);
    assert_memory_not_equal(a, b, 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_attacks),
        cmocka_unit_test(test_manifest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
