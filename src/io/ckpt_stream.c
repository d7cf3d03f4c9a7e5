/* Sealing and opening whole objects as streams, one chunk in memory at a
 * time (EBB__CKPT_STREAM_MEMORY bytes), hashing both sides as they pass. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "io/ckpt_object.h"
#include "io/ckpt_internal.h"

#define FULL ((size_t)EBB__CKPT_CHUNK_SIZE + EBB__CKPT_TAG_LEN)
/* The most chunks an object has: a bound for every loop below. */
#define MAX_CHUNKS (EBB__CKPT_FILE_MAX / EBB__CKPT_CHUNK_SIZE)

ssize_t ebb__ckpt_fd_read(void *arg, void *buf, size_t len)
{
    int fd = *(const int *)arg;
    for (;;) {
        ssize_t n = read(fd, buf, len);
        if (n >= 0)
            return n;
        if (errno != EINTR)
            return EBB_EIO;
    }
}

int ebb__ckpt_fd_write(void *arg, const void *buf, size_t len)
{
    int fd = *(const int *)arg;
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return EBB_EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One stream's state: its buffer, its two hashes and its ends. */
struct stream {
    unsigned char *buf;          /* FULL + 1 bytes: a chunk, its tag, a look-ahead byte */
    EVP_MD_CTX *plain, *stored;
    ebb__ckpt_read_fn rd;
    void *rd_arg;
    ebb__ckpt_write_fn wr;
    void *wr_arg;
    bool carry;                  /* buf[FULL] holds a byte read ahead */
    struct ebb__ckpt_sums *sums;
    struct ebb__ckpt_error *err;
};

static int stream_open(struct stream *s, ebb__ckpt_read_fn rd, void *rd_arg,
                       ebb__ckpt_write_fn wr, void *wr_arg,
                       struct ebb__ckpt_sums *sums, struct ebb__ckpt_error *err)
{
    *s = (struct stream){.rd = rd, .rd_arg = rd_arg, .wr = wr, .wr_arg = wr_arg,
                         .sums = sums, .err = err};
    memset(sums, 0, sizeof(*sums));
    if (err != NULL)
        memset(err, 0, sizeof(*err));
    s->buf = malloc(FULL + 1);
    s->plain = EVP_MD_CTX_new();
    s->stored = EVP_MD_CTX_new();
    if (s->buf == NULL || s->plain == NULL || s->stored == NULL ||
        EVP_DigestInit_ex(s->plain, EVP_sha256(), NULL) != 1 ||
        EVP_DigestInit_ex(s->stored, EVP_sha256(), NULL) != 1) {
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "out of memory");
        return EBB_ENOMEM;
    }
    return 0;
}

/* Finishes the hashes into `sums` when rc is 0; frees everything. */
static int stream_close(struct stream *s, int rc)
{
    unsigned int n = 0;
    if (rc == 0 && (EVP_DigestFinal_ex(s->plain, s->sums->sha256, &n) != 1 ||
                    EVP_DigestFinal_ex(s->stored, s->sums->stored_sha256, &n) != 1)) {
        ebb__ckpt_fail(s->err, EBB__CKPT_IO, 0, "SHA-256 failed (OpenSSL)");
        rc = EBB_EIO;
    }
    if (s->buf != NULL)
        OPENSSL_cleanse(s->buf, FULL + 1);
    free(s->buf);
    EVP_MD_CTX_free(s->plain);
    EVP_MD_CTX_free(s->stored);
    return rc;
}

/* Reads into `p` until `want` bytes are there or the input ends, starting
 * with the byte read ahead, if any. Sets *got. */
static int fill(struct stream *s, unsigned char *p, size_t want, size_t *got)
{
    size_t have = 0;
    if (s->carry && want > 0) {
        p[0] = s->buf[FULL];
        s->carry = false;
        have = 1;
    }
    while (have < want) {
        ssize_t n = s->rd(s->rd_arg, p + have, want - have);
        if (n < 0) {
            ebb__ckpt_fail(s->err, EBB__CKPT_IO, 0, "reading failed: %s",
                           ebb_strerror((int)n));
            return (int)n;
        }
        if (n == 0)
            break;
        have += (size_t)n;
    }
    *got = have;
    return 0;
}

/* Whether the input has ended: reads one byte ahead into buf[FULL]. */
static int at_end(struct stream *s, bool *end)
{
    size_t got = 0;
    int rc = fill(s, s->buf + FULL, 1, &got);
    s->carry = got == 1;
    *end = got == 0;
    return rc;
}

static int emit(struct stream *s, const unsigned char *p, size_t len)
{
    int rc = s->wr(s->wr_arg, p, len);
    if (rc != 0)
        ebb__ckpt_fail(s->err, EBB__CKPT_IO, 0, "writing failed: %s", ebb_strerror(rc));
    return rc;
}

static int hash(struct stream *s, EVP_MD_CTX *md, const unsigned char *p, size_t len)
{
    if (EVP_DigestUpdate(md, p, len) == 1)
        return 0;
    ebb__ckpt_fail(s->err, EBB__CKPT_IO, 0, "SHA-256 failed (OpenSSL)");
    return EBB_EIO;
}

/* Reads the next plaintext chunk: up to a full one, `last` when the input
 * ends with it; adds it to the plaintext's SHA-256. */
static int next_plain(struct stream *s, uint64_t index, size_t *len, bool *last)
{
    int rc = fill(s, s->buf, EBB__CKPT_CHUNK_SIZE, len);
    *last = true;
    if (rc == 0 && *len == EBB__CKPT_CHUNK_SIZE)
        rc = at_end(s, last);
    if (rc == 0 && (index + 1 > MAX_CHUNKS || (index + 1 == MAX_CHUNKS && !*last))) {
        ebb__ckpt_fail(s->err, EBB__CKPT_TOO_LARGE, index,
                       "the file is larger than the format's %llu bytes",
                       (unsigned long long)EBB__CKPT_FILE_MAX);
        rc = EBB_EINVAL;
    }
    if (rc == 0)
        rc = hash(s, s->plain, s->buf, *len);
    return rc;
}

int ebb__ckpt_encrypt_file(struct ebb__ckpt_file *f, ebb__ckpt_read_fn rd, void *rd_arg,
                           ebb__ckpt_write_fn wr, void *wr_arg,
                           struct ebb__ckpt_sums *sums, struct ebb__ckpt_error *err)
{
    struct stream s;
    int rc = stream_open(&s, rd, rd_arg, wr, wr_arg, sums, err);
    if (rc == 0)
        rc = hash(&s, s.stored, f->header, sizeof(f->header));
    if (rc == 0)
        rc = emit(&s, f->header, sizeof(f->header));
    sums->stored_size = sizeof(f->header);
    bool last = false;
    for (uint64_t i = 0; rc == 0 && !last && i < MAX_CHUNKS; i++) {
        size_t len = 0;
        rc = next_plain(&s, i, &len, &last);
        if (rc == 0 && ebb__ckpt_chunk_seal(f, i, last, s.buf, len, s.buf + len) != 0) {
            ebb__ckpt_fail(err, EBB__CKPT_IO, i, "sealing chunk %llu failed (OpenSSL)",
                           (unsigned long long)i);
            rc = EBB_EIO;
        }
        if (rc == 0)
            rc = hash(&s, s.stored, s.buf, len + EBB__CKPT_TAG_LEN);
        if (rc == 0)
            rc = emit(&s, s.buf, len + EBB__CKPT_TAG_LEN);
        sums->size += len;
        sums->stored_size += len + EBB__CKPT_TAG_LEN;
    }
    return stream_close(&s, rc);
}

int ebb__ckpt_encrypt(const struct ebb__ckpt_key *k, const char *name,
                      const char *path, ebb__ckpt_read_fn rd, void *rd_arg,
                      ebb__ckpt_write_fn wr, void *wr_arg,
                      struct ebb__ckpt_sums *sums, struct ebb__ckpt_error *err)
{
    struct ebb__ckpt_file f = {0};
    int rc = ebb__ckpt_file_seal(&f, k, name, path, err);
    if (rc != 0) {
        memset(sums, 0, sizeof(*sums));
        return rc;
    }
    rc = ebb__ckpt_encrypt_file(&f, rd, rd_arg, wr, wr_arg, sums, err);
    ebb__ckpt_file_close(&f);
    return rc;
}

int ebb__ckpt_copy(ebb__ckpt_read_fn rd, void *rd_arg, ebb__ckpt_write_fn wr,
                   void *wr_arg, struct ebb__ckpt_sums *sums,
                   struct ebb__ckpt_error *err)
{
    struct stream s;
    int rc = stream_open(&s, rd, rd_arg, wr, wr_arg, sums, err);
    bool last = false;
    for (uint64_t i = 0; rc == 0 && !last && i < MAX_CHUNKS; i++) {
        size_t len = 0;
        rc = next_plain(&s, i, &len, &last);
        if (rc == 0)
            rc = emit(&s, s.buf, len);
        sums->size += len;
    }
    sums->stored_size = sums->size;
    rc = stream_close(&s, rc);
    if (rc == 0)
        memcpy(sums->stored_sha256, sums->sha256, sizeof(sums->sha256));
    return rc;
}

/* Checks that `stored` is the size of some object: the header, then full
 * chunks, then a last one of a tag and at most a chunk. */
static bool stored_size_ok(int64_t stored)
{
    if (stored < (int64_t)(EBB__CKPT_HEADER_LEN + EBB__CKPT_TAG_LEN))
        return false;
    uint64_t body = (uint64_t)stored - EBB__CKPT_HEADER_LEN;
    uint64_t tail = body % FULL;
    uint64_t chunks = body / FULL + (tail != 0);
    return chunks <= MAX_CHUNKS && (tail == 0 || tail >= EBB__CKPT_TAG_LEN);
}

/* Opens the last chunk, which failed as the last: when it opens as a
 * chunk that was not sealed last, the object was cut on a chunk boundary
 * (its later chunks dropped), which is a truncation, not damage. */
static int diagnose_last(struct stream *s, struct ebb__ckpt_file *f, uint64_t i,
                         size_t len)
{
    if (len == EBB__CKPT_CHUNK_SIZE &&
        ebb__ckpt_chunk_unopen(f, i, true, s->buf, len) == 0 &&
        ebb__ckpt_chunk_open(f, i, false, s->buf, len, s->buf + len, NULL) == 0) {
        ebb__ckpt_fail(s->err, EBB__CKPT_TRUNCATED, i,
                       "the object ends after chunk %llu, which was not its last: "
                       "the chunks after it are missing", (unsigned long long)i);
        return EBB_EPROTO;
    }
    return EBB_EAUTH;
}

/* Reads the next stored chunk: `last` from the expected size when it is
 * known, else from the end of the input. */
static int next_stored(struct stream *s, int64_t expect, uint64_t i, size_t *got,
                       bool *last)
{
    size_t want = FULL;
    if (expect >= 0) {
        uint64_t left = (uint64_t)expect - s->sums->stored_size;
        *last = left <= FULL;
        want = *last ? (size_t)left : FULL;
    }
    int rc = fill(s, s->buf, want, got);
    if (rc != 0)
        return rc;
    if (expect < 0) {
        *last = true;
        if (*got == FULL)
            rc = at_end(s, last);
    }
    if (rc == 0 && ((expect >= 0 && *got < want) || *got < EBB__CKPT_TAG_LEN)) {
        ebb__ckpt_fail(s->err, EBB__CKPT_TRUNCATED, i,
                       "the object ends inside chunk %llu, after %llu bytes%s",
                       (unsigned long long)i,
                       (unsigned long long)(s->sums->stored_size + *got),
                       expect >= 0 ? " (its manifest lists more)" : "");
        rc = EBB_EPROTO;
    }
    if (rc == 0 && !*last && i + 1 >= MAX_CHUNKS) {
        ebb__ckpt_fail(s->err, EBB__CKPT_TOO_LARGE, i,
                       "the object is larger than the format allows");
        rc = EBB_EPROTO;
    }
    return rc;
}

/* Reads and opens the header into `f`. */
static int open_header(struct stream *s, struct ebb__ckpt_file *f,
                       const struct ebb__ckpt_key *k, const char *name,
                       const char *path)
{
    unsigned char header[EBB__CKPT_HEADER_LEN];
    size_t got = 0;
    int rc = fill(s, header, sizeof(header), &got);
    if (rc == 0 && got < sizeof(header)) {
        ebb__ckpt_fail(s->err, EBB__CKPT_TRUNCATED, 0,
                       "the object ends inside its header, after %zu bytes", got);
        rc = EBB_EPROTO;
    }
    if (rc == 0)
        rc = hash(s, s->stored, header, sizeof(header));
    if (rc == 0)
        rc = ebb__ckpt_file_open(f, k, name, path, header, s->err);
    s->sums->stored_size = got;
    return rc;
}

int ebb__ckpt_decrypt(const struct ebb__ckpt_key *k, const char *name,
                      const char *path, int64_t expect_stored,
                      ebb__ckpt_read_fn rd, void *rd_arg,
                      ebb__ckpt_write_fn wr, void *wr_arg,
                      struct ebb__ckpt_sums *sums, struct ebb__ckpt_error *err)
{
    struct stream s;
    struct ebb__ckpt_file f = {0};
    int rc = stream_open(&s, rd, rd_arg, wr, wr_arg, sums, err);
    if (rc == 0 && expect_stored >= 0 && !stored_size_ok(expect_stored)) {
        ebb__ckpt_fail(err, EBB__CKPT_MISMATCH, 0,
                       "%lld bytes is not the size of any stored object",
                       (long long)expect_stored);
        rc = EBB_EINVAL;
    }
    if (rc == 0)
        rc = open_header(&s, &f, k, name, path);
    bool last = false;
    for (uint64_t i = 0; rc == 0 && !last && i < MAX_CHUNKS; i++) {
        size_t got = 0;
        rc = next_stored(&s, expect_stored, i, &got, &last);
        if (rc != 0)
            break;
        size_t len = got - EBB__CKPT_TAG_LEN;
        rc = hash(&s, s.stored, s.buf, got);
        if (rc == 0 && ebb__ckpt_chunk_open(&f, i, last, s.buf, len, s.buf + len, err) != 0)
            rc = last ? diagnose_last(&s, &f, i, len) : EBB_EAUTH;
        if (rc == 0)
            rc = hash(&s, s.plain, s.buf, len);
        if (rc == 0)
            rc = emit(&s, s.buf, len);
        sums->size += len;
        sums->stored_size += got;
    }
    bool end = true;
    if (rc == 0 && expect_stored >= 0)
        rc = at_end(&s, &end);
    if (rc == 0 && !end) {
        ebb__ckpt_fail(err, EBB__CKPT_TRAILING, 0,
                       "bytes follow the object's last chunk (its manifest lists %lld bytes)",
                       (long long)expect_stored);
        rc = EBB_EPROTO;
    }
    ebb__ckpt_file_close(&f);
    return stream_close(&s, rc);
}
