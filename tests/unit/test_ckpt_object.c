/* The checkpoint format's stored objects (src/io/ckpt_object.c,
 * ckpt_stream.c, ckpt_key.c): round trips at the chunk boundaries, every
 * kind of tampering refused with its own fault, no (key, nonce) pair used
 * twice, and the plain copy of `encrypt: false`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <ebb/digest.h>

#include "ckpt_mem.h"
#include "io/ckpt_object.h"

#define CHUNK ((size_t)EBB__CKPT_CHUNK_SIZE)
#define FULL (CHUNK + EBB__CKPT_TAG_LEN)
#define HDR ((size_t)EBB__CKPT_HEADER_LEN)

static struct ebb__ckpt_key key_a, key_b;

static int setup(void **state)
{
    (void)state;
    return ebb__ckpt_key_generate(&key_a) || ebb__ckpt_key_generate(&key_b);
}

/* A sealed object in memory. */
struct obj {
    unsigned char *p;
    size_t len;
    struct ebb__ckpt_sums sums;
};

static struct obj seal(const struct ebb__ckpt_key *k, const char *name, const char *path,
                       const unsigned char *plain, size_t n)
{
    struct ckpt_mem_src src = {.p = plain, .len = n, .step = 1000003};
    struct ckpt_mem_sink sink = {0};
    struct obj o = {0};
    struct ebb__ckpt_error err;
    int rc = ebb__ckpt_encrypt(k, name, path, ckpt_mem_read, &src, ckpt_mem_write, &sink,
                               &o.sums, &err);
    if (rc != 0)
        fail_msg("encrypt: %s", err.diag.msg);
    o.p = sink.p;
    o.len = sink.len;
    return o;
}

/* Opens `len` bytes at `p`; returns the fault (EBB__CKPT_OK on success)
 * and, when `plain` is set, the plaintext there (the caller frees it). */
static enum ebb__ckpt_fault open_obj(const struct ebb__ckpt_key *k, const char *name,
                                     const char *path, const unsigned char *p, size_t len,
                                     int64_t expect, struct ckpt_mem_sink *plain,
                                     struct ebb__ckpt_error *err)
{
    struct ckpt_mem_src src = {.p = p, .len = len, .step = 777777};
    struct ckpt_mem_sink sink = {0};
    struct ebb__ckpt_sums sums;
    int rc = ebb__ckpt_decrypt(k, name, path, expect, ckpt_mem_read, &src, ckpt_mem_write,
                               &sink, &sums, err);
    assert_true((rc == 0) == (err->fault == EBB__CKPT_OK));
    if (rc != 0)
        assert_true(err->diag.msg[0] != '\0');
    if (plain != NULL)
        *plain = sink;
    else
        free(sink.p);
    return err->fault;
}

static void sha256(const unsigned char *p, size_t n, unsigned char out[32])
{
    unsigned int len = 0;
    assert_int_equal(EVP_Digest(p, n, out, &len, EVP_sha256(), NULL), 1);
}

static void check_round_trip(size_t n)
{
    unsigned char *plain = ckpt_mem_pattern(n, (unsigned)n);
    struct obj o = seal(&key_a, "step-100", "model/weights.pt", plain, n);
    assert_int_equal(o.len, ebb__ckpt_stored_size(n));
    assert_int_equal(o.sums.stored_size, o.len);
    assert_int_equal(o.sums.size, n);
    unsigned char h[32];
    sha256(plain, n, h);
    assert_memory_equal(o.sums.sha256, h, 32);
    sha256(o.p, o.len, h);
    assert_memory_equal(o.sums.stored_sha256, h, 32);
    /* With the size from a manifest and without it. */
    int64_t expects[] = {(int64_t)o.len, -1};
    for (size_t i = 0; i < 2; i++) {
        struct ckpt_mem_sink out;
        struct ebb__ckpt_error err;
        enum ebb__ckpt_fault f = open_obj(&key_a, "step-100", "model/weights.pt", o.p,
                                          o.len, expects[i], &out, &err);
        if (f != EBB__CKPT_OK)
            fail_msg("%zu bytes: %s", n, err.diag.msg);
        assert_int_equal(out.len, n);
        if (n > 0)
            assert_memory_equal(out.p, plain, n);
        free(out.p);
    }
    free(plain);
    free(o.p);
}

static void test_round_trip(void **state)
{
    (void)state;
    size_t sizes[] = {0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 3 * CHUNK + 5};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        check_round_trip(sizes[i]);
}

/* Through real file descriptors: what the agent does with a checkpoint's
 * file and the object it uploads. */
static void test_fd_round_trip(void **state)
{
    (void)state;
    size_t n = 2 * CHUNK + 12345;
    unsigned char *plain = ckpt_mem_pattern(n, 7);
    int in = memfd_create("plain", 0), enc = memfd_create("enc", 0),
        out = memfd_create("out", 0);
    assert_true(in >= 0 && enc >= 0 && out >= 0);
    assert_int_equal(write(in, plain, n), (ssize_t)n);
    assert_int_equal(lseek(in, 0, SEEK_SET), 0);
    struct ebb__ckpt_sums s1, s2;
    struct ebb__ckpt_error err;
    assert_int_equal(ebb__ckpt_encrypt(&key_a, "c", "f", ebb__ckpt_fd_read, &in,
                                       ebb__ckpt_fd_write, &enc, &s1, &err), 0);
    assert_int_equal(lseek(enc, 0, SEEK_CUR), (off_t)s1.stored_size);
    assert_int_equal(lseek(enc, 0, SEEK_SET), 0);
    assert_int_equal(ebb__ckpt_decrypt(&key_a, "c", "f", (int64_t)s1.stored_size,
                                       ebb__ckpt_fd_read, &enc, ebb__ckpt_fd_write, &out,
                                       &s2, &err), 0);
    assert_int_equal(s2.size, n);
    assert_memory_equal(s1.sha256, s2.sha256, 32);
    assert_memory_equal(s1.stored_sha256, s2.stored_sha256, 32);
    unsigned char *back = malloc(n);
    assert_int_equal(pread(out, back, n, 0), (ssize_t)n);
    assert_memory_equal(back, plain, n);

    /* Truncating the stored file, inside a chunk and inside the header. */
    off_t cuts[] = {(off_t)(HDR + FULL + 100), (off_t)(HDR - 1), 0};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(ftruncate(enc, cuts[i]), 0);
        assert_int_equal(lseek(enc, 0, SEEK_SET), 0);
        assert_int_equal(ebb__ckpt_decrypt(&key_a, "c", "f", (int64_t)s1.stored_size,
                                           ebb__ckpt_fd_read, &enc, ebb__ckpt_fd_write,
                                           &out, &s2, &err), EBB_EPROTO);
        assert_int_equal(err.fault, EBB__CKPT_TRUNCATED);
    }
    free(back);
    free(plain);
    close(in);
    close(enc);
    close(out);
}

/* No byte of the plaintext reaches the object: a marker repeated through
 * the file appears nowhere in what is stored. */
static void test_no_plaintext(void **state)
{
    (void)state;
    static const char marker[] = "EBB-PLAINTEXT-MARKER-0123456789";
    size_t n = CHUNK + 4096;
    unsigned char *plain = malloc(n);
    for (size_t i = 0; i < n; i++)
        plain[i] = (unsigned char)marker[i % (sizeof(marker) - 1)];
    struct obj o = seal(&key_a, "c", "f", plain, n);
    assert_null(memmem(o.p, o.len, marker, 8));
    free(plain);
    free(o.p);
}

static void expect_fault(const unsigned char *p, size_t len, int64_t expect,
                         enum ebb__ckpt_fault want, uint64_t chunk, const char *words)
{
    struct ebb__ckpt_error err;
    enum ebb__ckpt_fault got = open_obj(&key_a, "c", "f", p, len, expect, NULL, &err);
    if (got != want)
        fail_msg("fault %d, want %d: %s", got, want, err.diag.msg);
    if (want == EBB__CKPT_CHUNK_AUTH || want == EBB__CKPT_TRUNCATED)
        assert_int_equal(err.chunk, chunk);
    if (strstr(err.diag.msg, words) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", err.diag.msg, words);
}

/* A flipped byte anywhere: in each chunk's ciphertext, in a tag, in the
 * header's salt, key check or magic. */
static void test_flip(void **state)
{
    (void)state;
    size_t n = 2 * CHUNK + 100;
    unsigned char *plain = ckpt_mem_pattern(n, 1);
    struct obj o = seal(&key_a, "c", "f", plain, n);
    struct { size_t at; enum ebb__ckpt_fault fault; uint64_t chunk; const char *words; } cases[] = {
        {HDR + 5, EBB__CKPT_CHUNK_AUTH, 0, "chunk 0 fails authentication"},
        {HDR + CHUNK + 3, EBB__CKPT_CHUNK_AUTH, 0, "chunk 0"},            /* its tag */
        {HDR + FULL + 17, EBB__CKPT_CHUNK_AUTH, 1, "chunk 1 fails"},
        {HDR + 2 * FULL + 99, EBB__CKPT_CHUNK_AUTH, 2, "chunk 2 fails"},
        {o.len - 1, EBB__CKPT_CHUNK_AUTH, 2, "chunk 2 fails"},            /* last tag */
        {20, EBB__CKPT_KEY_MISMATCH, 0, "key check fails"},                /* salt */
        {60, EBB__CKPT_KEY_MISMATCH, 0, "key check fails"},                /* key check */
        {1, EBB__CKPT_BAD_HEADER, 0, "not an ebb checkpoint object"},      /* magic */
        {14, EBB__CKPT_BAD_HEADER, 0, "not an ebb checkpoint object"},     /* chunk size */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        o.p[cases[i].at] ^= 0x40;
        expect_fault(o.p, o.len, (int64_t)o.len, cases[i].fault, cases[i].chunk,
                     cases[i].words);
        expect_fault(o.p, o.len, -1, cases[i].fault, cases[i].chunk, cases[i].words);
        o.p[cases[i].at] ^= 0x40;
    }
    expect_fault(o.p, o.len, (int64_t)o.len, EBB__CKPT_OK, 0, "");
    free(plain);
    free(o.p);
}

/* Dropping the last chunk leaves an object that ends on a chunk boundary:
 * with the manifest's size it is short; without it, the chunk now last
 * was not sealed as the last. Both for a short last chunk and a full one. */
static void test_drop_last(void **state)
{
    (void)state;
    size_t sizes[] = {2 * CHUNK + 100, 2 * CHUNK};
    for (size_t i = 0; i < 2; i++) {
        unsigned char *plain = ckpt_mem_pattern(sizes[i], 2);
        struct obj o = seal(&key_a, "c", "f", plain, sizes[i]);
        size_t cut = HDR + 2 * FULL;
        if (sizes[i] == 2 * CHUNK)
            cut = HDR + FULL;
        expect_fault(o.p, cut, (int64_t)o.len, EBB__CKPT_TRUNCATED, 1 + (cut > HDR + FULL),
                     "ends inside chunk");
        expect_fault(o.p, cut, -1, EBB__CKPT_TRUNCATED, (cut - HDR) / FULL - 1,
                     "which was not its last");
        /* Only the header left. */
        expect_fault(o.p, HDR, -1, EBB__CKPT_TRUNCATED, 0, "ends inside chunk 0");
        free(plain);
        free(o.p);
    }
}

static void test_swap_chunks(void **state)
{
    (void)state;
    size_t n = 3 * CHUNK;
    unsigned char *plain = ckpt_mem_pattern(n, 3);
    struct obj o = seal(&key_a, "c", "f", plain, n);
    unsigned char *tmp = malloc(FULL);
    memcpy(tmp, o.p + HDR, FULL);
    memcpy(o.p + HDR, o.p + HDR + FULL, FULL);
    memcpy(o.p + HDR + FULL, tmp, FULL);
    expect_fault(o.p, o.len, (int64_t)o.len, EBB__CKPT_CHUNK_AUTH, 0, "chunk 0 fails");
    expect_fault(o.p, o.len, -1, EBB__CKPT_CHUNK_AUTH, 0, "chunk 0 fails");
    free(tmp);
    free(plain);
    free(o.p);
}

/* A chunk taken from another file of the same checkpoint, or from the
 * same file of another checkpoint, under the same job key, at the same
 * index. */
static void test_move_chunk(void **state)
{
    (void)state;
    size_t n = 2 * CHUNK + 1;
    unsigned char *plain = ckpt_mem_pattern(n, 4);
    struct obj target = seal(&key_a, "c", "f", plain, n);
    struct obj other_file = seal(&key_a, "c", "g", plain, n);
    struct obj other_ckpt = seal(&key_a, "d", "f", plain, n);
    struct obj *donors[] = {&other_file, &other_ckpt};
    for (size_t i = 0; i < 2; i++) {
        unsigned char *p = malloc(target.len);
        memcpy(p, target.p, target.len);
        memcpy(p + HDR + FULL, donors[i]->p + HDR + FULL, FULL);
        expect_fault(p, target.len, (int64_t)target.len, EBB__CKPT_CHUNK_AUTH, 1,
                     "chunk 1 fails");
        free(p);
    }
    /* A whole object opened as another file or checkpoint's. */
    struct ebb__ckpt_error err;
    assert_int_equal(open_obj(&key_a, "c", "g", target.p, target.len, -1, NULL, &err),
                     EBB__CKPT_KEY_MISMATCH);
    assert_int_equal(open_obj(&key_a, "d", "f", target.p, target.len, -1, NULL, &err),
                     EBB__CKPT_KEY_MISMATCH);
    free(plain);
    free(target.p);
    free(other_file.p);
    free(other_ckpt.p);
}

static void test_wrong_key(void **state)
{
    (void)state;
    unsigned char *plain = ckpt_mem_pattern(1000, 5);
    struct obj o = seal(&key_a, "c", "f", plain, 1000);
    struct ebb__ckpt_error err;
    assert_int_equal(open_obj(&key_b, "c", "f", o.p, o.len, (int64_t)o.len, NULL, &err),
                     EBB__CKPT_KEY_MISMATCH);
    assert_non_null(strstr(err.diag.msg, "another job key"));
    free(plain);
    free(o.p);
}

static void test_trailing(void **state)
{
    (void)state;
    unsigned char *plain = ckpt_mem_pattern(CHUNK + 9, 6);
    struct obj o = seal(&key_a, "c", "f", plain, CHUNK + 9);
    unsigned char *p = malloc(o.len + 3);
    memcpy(p, o.p, o.len);
    memcpy(p + o.len, "xyz", 3);
    expect_fault(p, o.len + 3, (int64_t)o.len, EBB__CKPT_TRAILING, 0, "bytes follow");
    /* Without the manifest's size the extra bytes land in the last chunk. */
    expect_fault(p, o.len + 3, -1, EBB__CKPT_CHUNK_AUTH, 1, "chunk 1 fails");
    /* A size no object has. */
    expect_fault(o.p, o.len, (int64_t)HDR + 3, EBB__CKPT_MISMATCH, 0, "not the size");
    free(p);
    free(plain);
    free(o.p);
}

/* GCM breaks when a key seals two chunks under one nonce: the two
 * ciphertexts XOR to the XOR of the plaintexts. Sealing zeros shows the
 * keystream itself, so every chunk of every object (the same file sealed
 * again, as after a restart; other files; other checkpoints) must begin
 * with a keystream block of its own. */
static void test_nonce_unique(void **state)
{
    (void)state;
    size_t n = 3 * CHUNK;
    unsigned char *zeros = calloc(1, n);
    const char *names[][2] = {{"c", "f"}, {"c", "f"}, {"c", "f"}, {"c", "g"}, {"d", "f"}};
    enum { N_OBJ = 5, N_CHUNK = 3 };
    unsigned char blocks[N_OBJ * N_CHUNK][16];
    for (size_t i = 0; i < N_OBJ; i++) {
        struct obj o = seal(&key_a, names[i][0], names[i][1], zeros, n);
        for (size_t c = 0; c < N_CHUNK; c++)
            memcpy(blocks[i * N_CHUNK + c], o.p + HDR + c * FULL, 16);
        free(o.p);
    }
    for (size_t i = 0; i < N_OBJ * N_CHUNK; i++)
        for (size_t j = i + 1; j < N_OBJ * N_CHUNK; j++)
            assert_memory_not_equal(blocks[i], blocks[j], 16);
    free(zeros);
}

/* The chunk primitives refuse a short chunk that is not the last. */
static void test_chunk_shape(void **state)
{
    (void)state;
    struct ebb__ckpt_file f;
    struct ebb__ckpt_error err;
    assert_int_equal(ebb__ckpt_file_seal(&f, &key_a, "c", "f", &err), 0);
    unsigned char buf[64] = {0}, tag[16];
    assert_int_equal(ebb__ckpt_chunk_seal(&f, 0, false, buf, sizeof(buf), tag), EBB_EINVAL);
    assert_int_equal(ebb__ckpt_chunk_seal(&f, 0, true, buf, sizeof(buf), tag), 0);
    assert_int_equal(ebb__ckpt_chunk_open(&f, 0, false, buf, sizeof(buf), tag, &err),
                     EBB_EAUTH);
    ebb__ckpt_file_close(&f);
    char long_path[EBB__CKPT_PATH_MAX + 2];
    memset(long_path, 'a', sizeof(long_path) - 1);
    long_path[sizeof(long_path) - 1] = '\0';
    assert_int_equal(ebb__ckpt_file_seal(&f, &key_a, "c", long_path, &err), EBB_EINVAL);
    assert_int_equal(ebb__ckpt_file_seal(&f, &key_a, "", "f", &err), EBB_EINVAL);
}

/* Parts sealed apart, as a parallel multipart upload would: one context
 * seals the header and chunk 2, another opened on that header seals
 * chunks 1 and 0, out of order; the stream opens the assembled object. */
static void test_parallel_parts(void **state)
{
    (void)state;
    size_t n = 2 * CHUNK + 333;
    unsigned char *plain = ckpt_mem_pattern(n, 10);
    unsigned char *obj = malloc(ebb__ckpt_stored_size(n));
    struct ebb__ckpt_file a, b;
    struct ebb__ckpt_error err;
    assert_int_equal(ebb__ckpt_file_seal(&a, &key_a, "c", "f", &err), 0);
    assert_int_equal(ebb__ckpt_file_open(&b, &key_a, "c", "f", a.header, &err), 0);
    memcpy(obj, a.header, HDR);
    struct { struct ebb__ckpt_file *f; uint64_t i; } order[] = {{&a, 2}, {&b, 1}, {&b, 0}};
    for (size_t j = 0; j < 3; j++) {
        uint64_t i = order[j].i;
        size_t len = i == 2 ? 333 : CHUNK;
        unsigned char *at = obj + HDR + i * FULL;
        memcpy(at, plain + i * CHUNK, len);
        assert_int_equal(ebb__ckpt_chunk_seal(order[j].f, i, i == 2, at, len, at + len), 0);
    }
    ebb__ckpt_file_close(&a);
    ebb__ckpt_file_close(&b);
    struct ckpt_mem_sink out;
    assert_int_equal(open_obj(&key_a, "c", "f", obj, ebb__ckpt_stored_size(n),
                              (int64_t)ebb__ckpt_stored_size(n), &out, &err),
                     EBB__CKPT_OK);
    assert_int_equal(out.len, n);
    assert_memory_equal(out.p, plain, n);
    free(out.p);
    free(obj);
    free(plain);
}

/* `encrypt: false`: the bytes pass unchanged, hashed. */
static void test_copy(void **state)
{
    (void)state;
    size_t sizes[] = {0, CHUNK, CHUNK + 1};
    for (size_t i = 0; i < 3; i++) {
        unsigned char *plain = ckpt_mem_pattern(sizes[i], 8);
        struct ckpt_mem_src src = {.p = plain, .len = sizes[i], .step = 65536};
        struct ckpt_mem_sink sink = {0};
        struct ebb__ckpt_sums sums;
        struct ebb__ckpt_error err;
        assert_int_equal(ebb__ckpt_copy(ckpt_mem_read, &src, ckpt_mem_write, &sink, &sums,
                                        &err), 0);
        assert_int_equal(sink.len, sizes[i]);
        if (sizes[i] > 0)
            assert_memory_equal(sink.p, plain, sizes[i]);
        unsigned char h[32];
        sha256(plain, sizes[i], h);
        assert_memory_equal(sums.sha256, h, 32);
        assert_memory_equal(sums.stored_sha256, h, 32);
        assert_int_equal(sums.size, sizes[i]);
        assert_int_equal(sums.stored_size, sizes[i]);
        free(sink.p);
        free(plain);
    }
}

/* A failing sink stops the stream with an I/O fault and its code. */
static void test_write_error(void **state)
{
    (void)state;
    unsigned char *plain = ckpt_mem_pattern(CHUNK + 1, 9);
    struct ckpt_mem_src src = {.p = plain, .len = CHUNK + 1};
    struct ckpt_mem_sink sink = {.fail_after = 1000};
    struct ebb__ckpt_sums sums;
    struct ebb__ckpt_error err;
    assert_int_equal(ebb__ckpt_encrypt(&key_a, "c", "f", ckpt_mem_read, &src,
                                       ckpt_mem_write, &sink, &sums, &err), EBB_EIO);
    assert_int_equal(err.fault, EBB__CKPT_IO);
    assert_non_null(strstr(err.diag.msg, "writing failed"));
    free(sink.p);
    free(plain);
}

static void test_keys(void **state)
{
    (void)state;
    assert_memory_not_equal(key_a.bytes, key_b.bytes, EBB__CKPT_KEY_LEN);
    char hex[EBB__CKPT_KEY_HEX_SIZE];
    ebb__ckpt_key_to_hex(&key_a, hex);
    assert_int_equal(strlen(hex), 64);
    struct ebb__ckpt_key back;
    assert_int_equal(ebb__ckpt_key_from_hex(hex, &back), 0);
    assert_memory_equal(back.bytes, key_a.bytes, EBB__CKPT_KEY_LEN);
    hex[10] = 'g';
    assert_int_equal(ebb__ckpt_key_from_hex(hex, &back), EBB_EINVAL);
    assert_int_equal(ebb__ckpt_key_from_hex("abcd", &back), EBB_EINVAL);
    char id_a[EBB__CKPT_KEY_ID_SIZE], id_a2[EBB__CKPT_KEY_ID_SIZE],
        id_b[EBB__CKPT_KEY_ID_SIZE];
    assert_int_equal(ebb__ckpt_key_id(&key_a, id_a), 0);
    assert_int_equal(ebb__ckpt_key_id(&key_a, id_a2), 0);
    assert_int_equal(ebb__ckpt_key_id(&key_b, id_b), 0);
    assert_string_equal(id_a, id_a2);
    assert_string_not_equal(id_a, id_b);
    assert_int_equal(strlen(id_a), 32);
    /* The id says nothing of the key: it is not a piece of its hex. */
    ebb__ckpt_key_to_hex(&key_a, hex);
    assert_null(strstr(hex, id_a));
    ebb__ckpt_key_wipe(&back);
    static const unsigned char zero[EBB__CKPT_KEY_LEN];
    assert_memory_equal(back.bytes, zero, EBB__CKPT_KEY_LEN);
}

/* A workdir's key: HKDF-SHA256(secret, "ebb workdir v1" || sha256), the
 * same for the same tar and secret, another for another of either. The
 * expected bytes were computed with Python's hmac (RFC 5869 by hand). */
static void test_workdir_key(void **state)
{
    (void)state;
    unsigned char secret[EBB__CKPT_KEY_LEN], sha[32], other[32];
    for (size_t i = 0; i < sizeof(secret); i++)
        secret[i] = (unsigned char)i;
    static const char abc[] = "abc";
    ebb_sha256(abc, 3, sha);
    memcpy(other, sha, sizeof(other));
    other[31] ^= 1;
    struct ebb__ckpt_key k, again, k_other, k_secret;
    assert_int_equal(ebb__ckpt_workdir_key(secret, sha, &k), 0);
    char hex[EBB__CKPT_KEY_HEX_SIZE];
    ebb__ckpt_key_to_hex(&k, hex);
    assert_string_equal(hex, "5f63be257c39e8e8dbc08f0d3984083298d37b91f97fa037d4c4b2ebc04f0a06");
    assert_int_equal(ebb__ckpt_workdir_key(secret, sha, &again), 0);
    assert_memory_equal(k.bytes, again.bytes, EBB__CKPT_KEY_LEN);
    assert_int_equal(ebb__ckpt_workdir_key(secret, other, &k_other), 0);
    assert_memory_not_equal(k.bytes, k_other.bytes, EBB__CKPT_KEY_LEN);
    secret[0] ^= 1;
    assert_int_equal(ebb__ckpt_workdir_key(secret, sha, &k_secret), 0);
    assert_memory_not_equal(k.bytes, k_secret.bytes, EBB__CKPT_KEY_LEN);
    /* A tar sealed under one tar's key opens only under that key. */
    unsigned char plain[100];
    memset(plain, 'w', sizeof(plain));
    struct ckpt_mem_src src = {plain, sizeof(plain), 0, 0};
    struct ckpt_mem_sink sealed = {0}, back = {0};
    struct ebb__ckpt_sums sums;
    struct ebb__ckpt_error err = {0};
    assert_int_equal(ebb__ckpt_encrypt(&k, "workdir", hex, ckpt_mem_read, &src,
                                       ckpt_mem_write, &sealed, &sums, &err), 0);
    struct ckpt_mem_src in = {sealed.p, sealed.len, 0, 0};
    assert_int_equal(ebb__ckpt_decrypt(&k_other, "workdir", hex, (int64_t)sealed.len,
                                       ckpt_mem_read, &in, ckpt_mem_write, &back, &sums,
                                       &err), EBB_EAUTH);
    in.off = 0;
    assert_int_equal(ebb__ckpt_decrypt(&again, "workdir", hex, (int64_t)sealed.len,
                                       ckpt_mem_read, &in, ckpt_mem_write, &back, &sums,
                                       &err), 0);
    assert_int_equal(back.len, sizeof(plain));
    assert_memory_equal(back.p, plain, sizeof(plain));
    free(sealed.p);
    free(back.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_fd_round_trip),
        cmocka_unit_test(test_no_plaintext),
        cmocka_unit_test(test_flip),
        cmocka_unit_test(test_drop_last),
        cmocka_unit_test(test_swap_chunks),
        cmocka_unit_test(test_move_chunk),
        cmocka_unit_test(test_wrong_key),
        cmocka_unit_test(test_trailing),
        cmocka_unit_test(test_nonce_unique),
        cmocka_unit_test(test_chunk_shape),
        cmocka_unit_test(test_parallel_parts),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_write_error),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_workdir_key),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
