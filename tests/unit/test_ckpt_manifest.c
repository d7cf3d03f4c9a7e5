/* Checkpoint manifests (src/io/ckpt_manifest.c, ckpt_manifest_read.c):
 * written and read back, encrypted and not; a whole checkpoint sealed,
 * listed and verified; and the reader's refusals, each with the field it
 * names: missing keys, wrong types, unknown keys, huge counts, paths that
 * climb out, a tampered MAC, another key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ckpt_mem.h"
#include "io/ckpt_manifest.h"

static struct ebb__ckpt_key key_a, key_b;

static int setup(void **state)
{
    (void)state;
    return ebb__ckpt_key_generate(&key_a) || ebb__ckpt_key_generate(&key_b);
}

static void fill_sha(unsigned char out[32], unsigned seed)
{
    for (int i = 0; i < 32; i++)
        out[i] = (unsigned char)(seed * 31 + (unsigned)i);
}

/* A directory checkpoint of three files. */
static void sample(struct ebb__ckpt_manifest *m, bool encrypt)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "step-1000");
    snprintf(m->job, sizeof(m->job), "j-train-1a2b3c4d");
    m->kind = EBB__CKPT_KIND_DIRECTORY;
    m->created = INT64_C(1796177476123);
    m->encrypt = encrypt;
    assert_int_equal(ebb__ckpt_manifest_set_key(m, &key_a, 3), 0);
    static const char *paths[] = {"optim/state.pt", "model.pt", "rng"};
    static const uint64_t sizes[] = {5 << 20, 0, 17};
    m->n_files = 3;
    m->files = calloc(3, sizeof(m->files[0]));
    for (size_t i = 0; i < 3; i++) {
        m->files[i].path = strdup(paths[i]);
        m->files[i].size = sizes[i];
        fill_sha(m->files[i].sha256, (unsigned)i);
        if (encrypt) {
            m->files[i].stored_size = ebb__ckpt_stored_size(sizes[i]);
            fill_sha(m->files[i].stored_sha256, (unsigned)i + 10);
        }
    }
    ebb__ckpt_manifest_sort(m);
}

static char *write_sample(bool encrypt)
{
    struct ebb__ckpt_manifest m;
    sample(&m, encrypt);
    char *text;
    size_t len;
    struct ebb__ckpt_error err;
    if (ebb__ckpt_manifest_write(&m, &key_a, &text, &len, &err) != 0)
        fail_msg("write: %s", err.diag.msg);
    assert_int_equal(strlen(text), len);
    ebb__ckpt_manifest_clear(&m);
    return text;
}

static void test_round_trip(void **state)
{
    (void)state;
    for (int e = 0; e < 2; e++) {
        struct ebb__ckpt_manifest want;
        sample(&want, e == 1);
        char *text = write_sample(e == 1);
        struct ebb__ckpt_manifest *got;
        struct ebb__ckpt_error err;
        if (ebb__ckpt_manifest_read(text, strlen(text), &key_a, &got, &err) != 0)
            fail_msg("read: %s\n%s", err.diag.msg, text);
        assert_string_equal(got->name, want.name);
        assert_string_equal(got->job, want.job);
        assert_int_equal(got->kind, want.kind);
        assert_int_equal(got->created, want.created);
        assert_int_equal(got->encrypt, want.encrypt);
        assert_string_equal(got->key_id, want.key_id);
        assert_int_equal(got->key_version, 3);
        assert_int_equal(got->n_files, 3);
        for (size_t i = 0; i < 3; i++) {
            assert_string_equal(got->files[i].path, want.files[i].path);
            assert_int_equal(got->files[i].size, want.files[i].size);
            assert_memory_equal(got->files[i].sha256, want.files[i].sha256, 32);
            assert_int_equal(got->files[i].stored_size, want.files[i].stored_size);
            assert_memory_equal(got->files[i].stored_sha256, want.files[i].stored_sha256, 32);
        }
        /* The document says what decryption needs, and never the key. */
        char hex[EBB__CKPT_KEY_HEX_SIZE];
        ebb__ckpt_key_to_hex(&key_a, hex);
        assert_null(strstr(text, hex));
        assert_true((strstr(text, "\"chunk_size\": 4194304") != NULL) == (e == 1));
        assert_true((strstr(text, "AES-256-GCM") != NULL) == (e == 1));
        assert_true((strstr(text, "stored_sha256") != NULL) == (e == 1));
        assert_non_null(strstr(text, "\"created\": \"2026-12-02T"));
        ebb__ckpt_manifest_free(got);
        ebb__ckpt_manifest_clear(&want);
        free(text);
    }
}

/* A whole checkpoint: each file sealed, the manifest made from what the
 * streams saw, then everything read back and checked against it; an
 * object swapped for a fresh sealing of the same file is caught by its
 * hash, another file's object by its key check. */
static void test_checkpoint(void **state)
{
    (void)state;
    static const char *paths[] = {"a.bin", "b/c.bin"};
    size_t sizes[] = {EBB__CKPT_CHUNK_SIZE + 3, 1000};
    unsigned char *plain[2];
    struct ckpt_mem_sink stored[2] = {{0}};
    struct ebb__ckpt_manifest m = {.kind = EBB__CKPT_KIND_DIRECTORY, .encrypt = true,
                                   .created = 1000, .n_files = 2};
    snprintf(m.name, sizeof(m.name), "ck");
    snprintf(m.job, sizeof(m.job), "j-1");
    assert_int_equal(ebb__ckpt_manifest_set_key(&m, &key_a, 1), 0);
    m.files = calloc(2, sizeof(m.files[0]));
    struct ebb__ckpt_error err;
    for (size_t i = 0; i < 2; i++) {
        plain[i] = ckpt_mem_pattern(sizes[i], (unsigned)i);
        struct ckpt_mem_src src = {.p = plain[i], .len = sizes[i]};
        struct ebb__ckpt_sums sums;
        assert_int_equal(ebb__ckpt_encrypt(&key_a, m.name, paths[i], ckpt_mem_read, &src,
                                           ckpt_mem_write, &stored[i], &sums, &err), 0);
        m.files[i] = (struct ebb__ckpt_manifest_file){
            .path = strdup(paths[i]), .size = sums.size, .stored_size = sums.stored_size};
        memcpy(m.files[i].sha256, sums.sha256, 32);
        memcpy(m.files[i].stored_sha256, sums.stored_sha256, 32);
    }
    char *text;
    size_t len;
    assert_int_equal(ebb__ckpt_manifest_write(&m, &key_a, &text, &len, &err), 0);
    struct ebb__ckpt_manifest *got;
    assert_int_equal(ebb__ckpt_manifest_read(text, len, &key_a, &got, &err), 0);
    for (size_t i = 0; i < 2; i++) {
        const struct ebb__ckpt_manifest_file *f = &got->files[i];
        struct ckpt_mem_src src = {.p = stored[i].p, .len = stored[i].len};
        struct ckpt_mem_sink out = {0};
        struct ebb__ckpt_sums sums;
        assert_int_equal(ebb__ckpt_decrypt(&key_a, got->name, f->path,
                                           (int64_t)f->stored_size, ckpt_mem_read, &src,
                                           ckpt_mem_write, &out, &sums, &err), 0);
        assert_int_equal(ebb__ckpt_manifest_match(f, true, &sums, &err), 0);
        assert_memory_equal(out.p, plain[i], sizes[i]);
        free(out.p);
    }
    /* b/c.bin sealed again (a valid object, but not the listed one). */
    struct ckpt_mem_src src = {.p = plain[1], .len = sizes[1]};
    struct ckpt_mem_sink again = {0};
    struct ebb__ckpt_sums sums;
    assert_int_equal(ebb__ckpt_encrypt(&key_a, "ck", "b/c.bin", ckpt_mem_read, &src,
                                       ckpt_mem_write, &again, &sums, &err), 0);
    struct ckpt_mem_src asrc = {.p = again.p, .len = again.len};
    struct ckpt_mem_sink out = {0};
    assert_int_equal(ebb__ckpt_decrypt(&key_a, "ck", "b/c.bin", (int64_t)again.len,
                                       ckpt_mem_read, &asrc, ckpt_mem_write, &out, &sums,
                                       &err), 0);
    assert_int_equal(ebb__ckpt_manifest_match(&got->files[1], true, &sums, &err), EBB_EAUTH);
    assert_int_equal(err.fault, EBB__CKPT_MISMATCH);
    assert_non_null(strstr(err.diag.msg, "b/c.bin: the stored object's SHA-256 differs"));
    free(out.p);
    free(again.p);
    /* a.bin's object downloaded as b/c.bin. */
    struct ckpt_mem_src wrong = {.p = stored[0].p, .len = stored[0].len};
    out = (struct ckpt_mem_sink){0};
    assert_int_equal(ebb__ckpt_decrypt(&key_a, "ck", "b/c.bin", -1, ckpt_mem_read, &wrong,
                                       ckpt_mem_write, &out, &sums, &err), EBB_EAUTH);
    assert_int_equal(err.fault, EBB__CKPT_KEY_MISMATCH);
    free(out.p);
    ebb__ckpt_manifest_free(got);
    ebb__ckpt_manifest_clear(&m);
    free(text);
    for (size_t i = 0; i < 2; i++) {
        free(plain[i]);
        free(stored[i].p);
    }
}

/* `encrypt: false`: hashes of the plaintext only, checked the same way. */
static void test_plain_match(void **state)
{
    (void)state;
    struct ebb__ckpt_manifest_file f = {.path = "x", .size = 3};
    struct ebb__ckpt_sums sums = {.size = 3, .stored_size = 3};
    fill_sha(f.sha256, 1);
    fill_sha(sums.sha256, 1);
    struct ebb__ckpt_error err;
    assert_int_equal(ebb__ckpt_manifest_match(&f, false, &sums, &err), 0);
    sums.size = 4;
    assert_int_equal(ebb__ckpt_manifest_match(&f, false, &sums, &err), EBB_EAUTH);
    assert_non_null(strstr(err.diag.msg, "x: the size differs"));
}

/* Reads `doc` (dumped) and expects refusal `fault` with `words`. */
static void expect_refusal_text(const char *text, size_t len, const struct ebb__ckpt_key *k,
                                enum ebb__ckpt_fault fault, const char *words)
{
    struct ebb__ckpt_manifest *m = (void *)1;
    struct ebb__ckpt_error err;
    int rc = ebb__ckpt_manifest_read(text, len, k, &m, &err);
    if (rc == 0)
        fail_msg("accepted, want \"%s\"", words);
    assert_null(m);
    assert_int_equal(rc, fault == EBB__CKPT_MANIFEST_INVALID ? EBB_EPROTO : EBB_EAUTH);
    if (err.fault != fault || strstr(err.diag.msg, words) == NULL)
        fail_msg("fault %d \"%s\", want %d \"%s\"", err.fault, err.diag.msg, fault, words);
}

static void expect_refusal(json_t *doc, enum ebb__ckpt_fault fault, const char *words)
{
    char *text = json_dumps(doc, JSON_INDENT(1));
    assert_non_null(text);
    expect_refusal_text(text, strlen(text), &key_a, fault, words);
    free(text);
    json_decref(doc);
}

static json_t *sample_json(bool encrypt)
{
    char *text = write_sample(encrypt);
    json_t *doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    free(text);
    return doc;
}

static json_t *file0(json_t *doc)
{
    return json_array_get(json_object_get(doc, "files"), 0);
}

static void test_missing_and_types(void **state)
{
    (void)state;
    static const char *top[] = {"format", "version", "checkpoint", "kind", "job",
                                "created", "encrypt", "encryption", "key", "files", "mac"};
    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++) {
        json_t *doc = sample_json(true);
        json_object_del(doc, top[i]);
        char words[64];
        snprintf(words, sizeof(words), "manifest: %s: missing", top[i]);
        expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, words);
    }
    static const char *per_file[] = {"path", "size", "sha256", "stored_size", "stored_sha256"};
    for (size_t i = 0; i < 5; i++) {
        json_t *doc = sample_json(true);
        json_object_del(file0(doc), per_file[i]);
        char words[64];
        snprintf(words, sizeof(words), "files[0].%s: missing", per_file[i]);
        expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, words);
    }
    json_t *doc = sample_json(true);
    json_object_set_new(file0(doc), "size", json_string("17"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "files[0].size: is not an integer");
    doc = sample_json(true);
    json_object_set_new(file0(doc), "size", json_real(17.0));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "files[0].size: is not an integer");
    doc = sample_json(true);
    json_object_set_new(file0(doc), "size", json_integer(-1));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "files[0].size: is 0 to");
    doc = sample_json(true);
    json_object_set_new(doc, "encrypt", json_string("yes"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "encrypt: is not a boolean");
    doc = sample_json(true);
    json_object_set_new(doc, "files", json_object());
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "files: is not an array");
    doc = sample_json(true);
    json_array_set_new(json_object_get(doc, "files"), 1, json_integer(3));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "files[1]: is not an object");
    doc = sample_json(true);
    json_object_set_new(doc, "version", json_integer(2));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "version: is 1 to 1");
    doc = sample_json(true);
    json_object_set_new(json_object_get(doc, "encryption"), "chunk_size", json_integer(1024));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "encryption.chunk_size");
    doc = sample_json(true);
    json_object_set_new(json_object_get(doc, "encryption"), "algorithm",
                        json_string("AES-128-CTR"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "encryption.algorithm: is \"AES-256-GCM\"");
    doc = sample_json(true);
    json_object_set_new(file0(doc), "sha256", json_string("ABCD"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "files[0].sha256: is 64 lower-case hex");
    doc = sample_json(true);
    json_object_set_new(doc, "created", json_string("yesterday"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "created: is a time");
    doc = sample_json(true);
    json_object_set_new(doc, "kind", json_string("tree"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "kind: is \"file\" or \"directory\"");
    doc = sample_json(true);
    json_object_set_new(file0(doc), "stored_size", json_integer(5 << 20));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "files[0].stored_size");
    doc = sample_json(false);
    json_object_set_new(doc, "encryption", json_object());
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "encryption: is left out");
    doc = sample_json(false);
    json_object_set_new(file0(doc), "stored_size", json_integer(80));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "files[0].\"stored_size\": unknown key");
    doc = sample_json(true);
    json_object_set_new(doc, "comment", json_string("hi"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "\"comment\": unknown key");
    doc = sample_json(true);
    json_object_set_new(json_object_get(doc, "key"), "secret", json_string("x"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "key.\"secret\": unknown key");
    doc = sample_json(true);
    json_object_set_new(doc, "checkpoint", json_string(".tmp-1"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "checkpoint's name does not start with '.'");
    doc = sample_json(true);
    json_object_set_new(doc, "job", json_string("j 1"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "job: a job id has 1 to 64");
}

static void test_not_json(void **state)
{
    (void)state;
    char *text = write_sample(true);
    size_t n = strlen(text);
    expect_refusal_text(text, n / 2, &key_a, EBB__CKPT_MANIFEST_INVALID, "not JSON");
    text[n - 1] = '\0';   /* the closing brace */
    expect_refusal_text(text, n - 1, &key_a, EBB__CKPT_MANIFEST_INVALID, "not JSON");
    free(text);
    const char trailing[] = "{} {}";
    expect_refusal_text(trailing, sizeof(trailing) - 1, &key_a, EBB__CKPT_MANIFEST_INVALID,
                        "not JSON");
    const char array[] = "[1]";
    expect_refusal_text(array, sizeof(array) - 1, &key_a, EBB__CKPT_MANIFEST_INVALID,
                        "is not a JSON object");
    const char dup[] = "{\"job\": \"a\", \"job\": \"b\"}";
    expect_refusal_text(dup, sizeof(dup) - 1, &key_a, EBB__CKPT_MANIFEST_INVALID, "duplicate");
    const char nul[] = "{\"format\": \"ebb\\u0000x\"}";
    expect_refusal_text(nul, sizeof(nul) - 1, &key_a, EBB__CKPT_MANIFEST_INVALID, "not JSON");
}

static void test_huge(void **state)
{
    (void)state;
    json_t *doc = sample_json(true);
    json_t *files = json_array();
    for (int i = 0; i <= EBB__CKPT_FILES_MAX; i++)
        json_array_append_new(files, json_object());
    json_object_set_new(doc, "files", files);
    char *text = json_dumps(doc, JSON_COMPACT);
    expect_refusal_text(text, strlen(text), &key_a, EBB__CKPT_MANIFEST_INVALID,
                        "files: holds 100001 files; a checkpoint has at most 100000");
    free(text);
    json_decref(doc);
    size_t big = EBB__CKPT_MANIFEST_MAX + 1;
    char *blob = malloc(big);
    memset(blob, ' ', big);
    expect_refusal_text(blob, big, &key_a, EBB__CKPT_MANIFEST_INVALID, "a manifest has at most");
    free(blob);
    doc = sample_json(true);
    char long_name[300];
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    json_object_set_new(doc, "checkpoint", json_string(long_name));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "checkpoint: has 1 to 255 bytes");
}

static void test_paths(void **state)
{
    (void)state;
    struct { const char *path; const char *words; } cases[] = {
        {"../x", "has no \".\" or \"..\" component"},
        {"a/../../x", "has no \".\" or \"..\" component"},
        {"a/..", "has no \".\" or \"..\" component"},
        {"./a", "has no \".\" or \"..\" component"},
        {"/etc/passwd", "is relative"},
        {"a//b", "has no empty component"},
        {"a/", "has no empty component"},
        {"a\nb", "has no control characters"},
        {"", "has 1 to 4096 bytes"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *doc = sample_json(false);
        json_object_set_new(file0(doc), "path", json_string(cases[i].path));
        char words[128];
        snprintf(words, sizeof(words), "files[0].path: a file's path %s", cases[i].words);
        if (cases[i].path[0] == '\0')
            snprintf(words, sizeof(words), "files[0].path: %s", cases[i].words);
        expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, words);
    }
    /* Sorted, unique, and no file below another. */
    json_t *doc = sample_json(false);
    json_object_set_new(file0(doc), "path", json_string("rng"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "files[1].path: paths are unique and sorted");
    doc = sample_json(false);
    json_object_set_new(json_array_get(json_object_get(doc, "files"), 1), "path",
                        json_string("model.pt/x"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "files[1].path: lies below another");
    /* The order puts '/' before every other byte, so that what lies
     * below a path follows it at once. */
    struct ebb__ckpt_manifest m;
    sample(&m, false);
    const char *order[][3] = {{"a", "a/b", "a-b"}, {"a", "a/a", "a/b/c"},
                              {"a/b", "a-b", "a.b"}, {"a-b", "a/b", "b"}};
    const char *want[] = {"files[1].path: lies below another",
                          "files[1].path: lies below another", NULL,
                          "files[1].path: paths are unique and sorted"};
    for (size_t i = 0; i < 4; i++) {
        for (size_t j = 0; j < 3; j++) {
            free(m.files[j].path);
            m.files[j].path = strdup(order[i][j]);
        }
        struct ebb__ckpt_error err;
        int rc = ebb__ckpt_manifest_check(&m, &err);
        if (want[i] == NULL)
            assert_int_equal(rc, 0);
        else if (rc == 0 || strstr(err.diag.msg, want[i]) == NULL)
            fail_msg("%s %s %s: \"%s\"", order[i][0], order[i][1], order[i][2],
                     rc == 0 ? "accepted" : err.diag.msg);
    }
    /* Sorting puts them in that order. */
    static const char *shuffled[] = {"a.b", "a/b", "a-b"};
    for (size_t j = 0; j < 3; j++) {
        free(m.files[j].path);
        m.files[j].path = strdup(shuffled[j]);
    }
    ebb__ckpt_manifest_sort(&m);
    assert_string_equal(m.files[0].path, "a/b");
    assert_string_equal(m.files[1].path, "a-b");
    assert_string_equal(m.files[2].path, "a.b");
    ebb__ckpt_manifest_clear(&m);
    /* A file checkpoint holds one file named as the checkpoint. */
    doc = sample_json(false);
    json_object_set_new(doc, "kind", json_string("file"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_INVALID, "checkpoint of kind \"file\" has one file");
    const char *why;
    assert_int_equal(ebb__ckpt_path_check("a/b.c/..d/...", &why), 0);
    assert_int_equal(ebb__ckpt_path_check("model.pt", &why), 0);
}

/* Any change to what the MAC covers, under the same key, is refused; so is
 * the right document under another key, which is told apart by its id. */
static void test_mac(void **state)
{
    (void)state;
    json_t *doc = sample_json(false);
    json_object_set_new(file0(doc), "size", json_integer(18));
    expect_refusal(doc, EBB__CKPT_MANIFEST_MAC, "MAC does not match");
    doc = sample_json(true);
    json_object_set_new(doc, "job", json_string("j-other"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_MAC, "MAC does not match");
    doc = sample_json(false);
    json_array_remove(json_object_get(doc, "files"), 2);
    expect_refusal(doc, EBB__CKPT_MANIFEST_MAC, "MAC does not match");
    doc = sample_json(false);
    json_object_set_new(doc, "created", json_string("2026-12-02T02:11:17.123Z"));
    expect_refusal(doc, EBB__CKPT_MANIFEST_MAC, "MAC does not match");
    doc = sample_json(true);
    json_t *mac = json_object_get(doc, "mac");
    char value[65];
    snprintf(value, sizeof(value), "%s", json_string_value(json_object_get(mac, "value")));
    value[0] = value[0] == '0' ? '1' : '0';
    json_object_set_new(mac, "value", json_string(value));
    expect_refusal(doc, EBB__CKPT_MANIFEST_MAC, "MAC does not match");
    /* Dropping encryption and the stored hashes forges nothing either. */
    doc = sample_json(true);
    json_object_set_new(doc, "encrypt", json_false());
    json_object_del(doc, "encryption");
    for (size_t i = 0; i < 3; i++) {
        json_t *f = json_array_get(json_object_get(doc, "files"), i);
        json_object_del(f, "stored_size");
        json_object_del(f, "stored_sha256");
    }
    expect_refusal(doc, EBB__CKPT_MANIFEST_MAC, "MAC does not match");

    char *text = write_sample(true);
    expect_refusal_text(text, strlen(text), &key_b, EBB__CKPT_MANIFEST_KEY,
                        "not this job's key");
    /* Layout is not content: the same document reformatted still reads. */
    json_t *re = json_loads(text, 0, NULL);
    char *compact = json_dumps(re, JSON_COMPACT);
    struct ebb__ckpt_manifest *m;
    struct ebb__ckpt_error err;
    assert_int_equal(ebb__ckpt_manifest_read(compact, strlen(compact), &key_a, &m, &err), 0);
    ebb__ckpt_manifest_free(m);
    free(compact);
    json_decref(re);
    free(text);
}

/* The writer holds itself to the reader's rules. */
static void test_writer_refuses(void **state)
{
    (void)state;
    struct ebb__ckpt_manifest m;
    sample(&m, true);
    free(m.files[0].path);
    m.files[0].path = strdup("../escape");
    char *text = (char *)1;
    size_t len;
    struct ebb__ckpt_error err;
    assert_int_equal(ebb__ckpt_manifest_write(&m, &key_a, &text, &len, &err), EBB_EINVAL);
    assert_null(text);
    assert_int_equal(err.fault, EBB__CKPT_MANIFEST_INVALID);
    assert_non_null(strstr(err.diag.msg, "files[0].path"));
    ebb__ckpt_manifest_clear(&m);
    sample(&m, true);
    assert_int_equal(ebb__ckpt_manifest_write(&m, &key_b, &text, &len, &err), EBB_EINVAL);
    assert_int_equal(err.fault, EBB__CKPT_MANIFEST_KEY);
    ebb__ckpt_manifest_clear(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_checkpoint),
        cmocka_unit_test(test_plain_match),
        cmocka_unit_test(test_missing_and_types),
        cmocka_unit_test(test_not_json),
        cmocka_unit_test(test_huge),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_mac),
        cmocka_unit_test(test_writer_refuses),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
