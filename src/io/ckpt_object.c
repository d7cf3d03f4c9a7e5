/* One stored object of a checkpoint: its header, its keys and its chunks
 * (the layout is in ckpt_object.h and docs/checkpoint-format.md).
 *
 * Why a key per file from a random salt, and the chunk index as nonce:
 * GCM fails badly when one key seals two messages under one nonce (the
 * keystreams cancel and the tags can be forged), and a checkpoint of the
 * same name and path is sealed again after a restart, perhaps with other
 * bytes. A key derived only from the names, or a nonce counter kept by the
 * agent, would repeat then. A fresh 256-bit salt per encryption makes each
 * object's key new with overwhelming probability (two salts collide with
 * probability about n^2 / 2^257 after n objects), so counting chunks from 0
 * within the object never repeats a (key, nonce) pair, and no state
 * survives between runs. Random 96-bit nonce prefixes under the one job
 * key would bound the job to about 2^32 objects (NIST SP 800-38D 8.3) and
 * still share one GCM key across everything; per-object keys do neither.
 * The header carries the salt and an HMAC of itself under a second
 * derived key (the key check), which tells a wrong key, or an object of
 * another checkpoint or file, from a damaged chunk before any chunk is
 * opened, and commits the object to one key (GCM alone does not). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "io/ckpt_object.h"
#include "io/ckpt_internal.h"

static const unsigned char MAGIC[8] = {'E', 'B', 'B', '-', 'C', 'K', 'P', 'T'};
#define VERSION 1
#define ALG_AES_256_GCM 1
/* Offsets in the header. */
#define OFF_VERSION 8
#define OFF_ALG 9
#define OFF_CHUNK 12
#define OFF_SALT 16
#define OFF_CHECK 48

void ebb__ckpt_fail(struct ebb__ckpt_error *err, enum ebb__ckpt_fault fault,
                    uint64_t chunk, const char *fmt, ...)
{
    if (err == NULL)
        return;
    err->fault = fault;
    err->chunk = chunk;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->diag.msg, sizeof(err->diag.msg), fmt, ap);
    va_end(ap);
}

static void put_be(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--) {
        p[i] = (unsigned char)(v & 0xff);
        v >>= 8;
    }
}

static uint64_t get_be(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

uint64_t ebb__ckpt_stored_size(uint64_t size)
{
    uint64_t chunks = size == 0 ? 1 : (size + EBB__CKPT_CHUNK_SIZE - 1) / EBB__CKPT_CHUNK_SIZE;
    return EBB__CKPT_HEADER_LEN + size + chunks * EBB__CKPT_TAG_LEN;
}

/* SHA-256 of the name and the path, each after its length (so that
 * ("a", "bc") and ("ab", "c") differ): what binds an object and its chunks
 * to one file of one checkpoint. */
static int file_id(const char *name, const char *path, unsigned char out[32],
                   struct ebb__ckpt_error *err)
{
    size_t nl = strlen(name), pl = strlen(path);
    if (nl == 0 || nl > EBB__CKPT_NAME_MAX || pl == 0 || pl > EBB__CKPT_PATH_MAX) {
        ebb__ckpt_fail(err, EBB__CKPT_TOO_LARGE, 0,
                       "a checkpoint name has 1 to %d bytes and a file path 1 to %d",
                       EBB__CKPT_NAME_MAX, EBB__CKPT_PATH_MAX);
        return EBB_EINVAL;
    }
    unsigned char len[4];
    unsigned int n = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int ok = c != NULL && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1;
    put_be(len, nl, 4);
    ok = ok && EVP_DigestUpdate(c, len, 4) == 1 && EVP_DigestUpdate(c, name, nl) == 1;
    put_be(len, pl, 4);
    ok = ok && EVP_DigestUpdate(c, len, 4) == 1 && EVP_DigestUpdate(c, path, pl) == 1 &&
         EVP_DigestFinal_ex(c, out, &n) == 1 && n == 32;
    EVP_MD_CTX_free(c);
    if (!ok) {
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "SHA-256 failed (OpenSSL)");
        return EBB_EIO;
    }
    return 0;
}

/* Derives the object's encryption key into f->enc_key and its key check
 * (HMAC of the header's first OFF_CHECK bytes) into `check`. */
static int derive(struct ebb__ckpt_file *f, const struct ebb__ckpt_key *k,
                  unsigned char check[32])
{
    static const char label[] = "ebb ckpt v1 file";
    unsigned char info[sizeof(label) - 1 + 32];
    memcpy(info, label, sizeof(label) - 1);
    memcpy(info + sizeof(label) - 1, f->file_id, 32);
    unsigned char okm[64];
    int rc = ebb__ckpt_hkdf(k->bytes, sizeof(k->bytes), f->header + OFF_SALT,
                            EBB__CKPT_SALT_LEN, info, sizeof(info), okm, sizeof(okm));
    unsigned int n = 0;
    if (rc == 0 && HMAC(EVP_sha256(), okm + 32, 32, f->header, OFF_CHECK, check, &n) == NULL)
        rc = EBB_EIO;
    memcpy(f->enc_key, okm, 32);
    OPENSSL_cleanse(okm, sizeof(okm));
    return rc;
}

static int start(struct ebb__ckpt_file *f, const char *name, const char *path,
                 struct ebb__ckpt_error *err)
{
    memset(f, 0, sizeof(*f));
    int rc = file_id(name, path, f->file_id, err);
    if (rc != 0)
        return rc;
    f->evp = EVP_CIPHER_CTX_new();
    if (f->evp == NULL) {
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "out of memory");
        return EBB_ENOMEM;
    }
    return 0;
}

int ebb__ckpt_file_seal(struct ebb__ckpt_file *f, const struct ebb__ckpt_key *k,
                        const char *name, const char *path,
                        struct ebb__ckpt_error *err)
{
    int rc = start(f, name, path, err);
    if (rc != 0)
        return rc;
    memcpy(f->header, MAGIC, sizeof(MAGIC));
    f->header[OFF_VERSION] = VERSION;
    f->header[OFF_ALG] = ALG_AES_256_GCM;
    put_be(f->header + OFF_CHUNK, EBB__CKPT_CHUNK_SIZE, 4);
    if (RAND_bytes(f->header + OFF_SALT, EBB__CKPT_SALT_LEN) != 1 ||
        derive(f, k, f->header + OFF_CHECK) != 0) {
        ebb__ckpt_file_close(f);
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "drawing the salt or deriving the keys failed (OpenSSL)");
        return EBB_EIO;
    }
    return 0;
}

int ebb__ckpt_file_open(struct ebb__ckpt_file *f, const struct ebb__ckpt_key *k,
                        const char *name, const char *path,
                        const unsigned char *header, struct ebb__ckpt_error *err)
{
    int rc = start(f, name, path, err);
    if (rc != 0)
        return rc;
    memcpy(f->header, header, EBB__CKPT_HEADER_LEN);
    uint64_t chunk = get_be(header + OFF_CHUNK, 4);
    if (memcmp(header, MAGIC, sizeof(MAGIC)) != 0 || header[OFF_VERSION] != VERSION ||
        header[OFF_ALG] != ALG_AES_256_GCM || header[10] != 0 || header[11] != 0 ||
        chunk != EBB__CKPT_CHUNK_SIZE) {
        ebb__ckpt_file_close(f);
        ebb__ckpt_fail(err, EBB__CKPT_BAD_HEADER, 0,
                       "%s: not an ebb checkpoint object of format version %d "
                       "(AES-256-GCM, %u-byte chunks)", path, VERSION,
                       (unsigned)EBB__CKPT_CHUNK_SIZE);
        return EBB_EPROTO;
    }
    unsigned char check[32];
    if (derive(f, k, check) != 0) {
        ebb__ckpt_file_close(f);
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "deriving the keys failed (OpenSSL)");
        return EBB_EIO;
    }
    if (CRYPTO_memcmp(check, header + OFF_CHECK, 32) != 0) {
        ebb__ckpt_file_close(f);
        ebb__ckpt_fail(err, EBB__CKPT_KEY_MISMATCH, 0,
                       "%s: the object's key check fails: it was sealed under "
                       "another job key, or for another checkpoint or file", path);
        return EBB_EAUTH;
    }
    return 0;
}

/* The nonce (the chunk's index) and the additional data (header, file id,
 * index, last flag) of one chunk. The file id is in the object's key as
 * well; binding it in the AAD too keeps a chunk tied to its checkpoint
 * and file by GCM's own check, whatever the key derivation. */
#define AAD_LEN (EBB__CKPT_HEADER_LEN + 32 + 8 + 1)
static void chunk_params(const struct ebb__ckpt_file *f, uint64_t index, bool last,
                         unsigned char iv[12], unsigned char aad[AAD_LEN])
{
    memset(iv, 0, 12);
    put_be(iv + 4, index, 8);
    memcpy(aad, f->header, EBB__CKPT_HEADER_LEN);
    memcpy(aad + EBB__CKPT_HEADER_LEN, f->file_id, 32);
    put_be(aad + EBB__CKPT_HEADER_LEN + 32, index, 8);
    aad[AAD_LEN - 1] = last ? 1 : 0;
}

/* Whether a chunk of `len` bytes may stand at `index`: full unless last,
 * and within the largest file. */
static bool chunk_fits(uint64_t index, bool last, size_t len)
{
    return len <= EBB__CKPT_CHUNK_SIZE && (len == EBB__CKPT_CHUNK_SIZE || last) &&
           index < EBB__CKPT_FILE_MAX / EBB__CKPT_CHUNK_SIZE;
}

/* Runs AES-256-GCM over one chunk in place: seals (enc, writing `tag`) or
 * opens (checking `tag`). Returns whether it succeeded. */
static bool run_gcm(struct ebb__ckpt_file *f, int enc, uint64_t index, bool last,
                    unsigned char *buf, size_t len, unsigned char *tag)
{
    unsigned char iv[12], aad[AAD_LEN];
    chunk_params(f, index, last, iv, aad);
    EVP_CIPHER_CTX *c = f->evp;
    int n = 0, fin = 0;
    bool ok = EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, f->enc_key, iv, enc) == 1 &&
              EVP_CipherUpdate(c, NULL, &n, aad, (int)sizeof(aad)) == 1 &&
              (len == 0 || EVP_CipherUpdate(c, buf, &n, buf, (int)len) == 1);
    if (ok && !enc)
        ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, EBB__CKPT_TAG_LEN, tag) == 1;
    ok = ok && EVP_CipherFinal_ex(c, buf + len, &fin) == 1 && fin == 0;
    if (ok && enc)
        ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, EBB__CKPT_TAG_LEN, tag) == 1;
    return ok;
}

int ebb__ckpt_chunk_seal(struct ebb__ckpt_file *f, uint64_t index, bool last,
                         unsigned char *buf, size_t len, unsigned char *tag)
{
    if (!chunk_fits(index, last, len))
        return EBB_EINVAL;
    return run_gcm(f, 1, index, last, buf, len, tag) ? 0 : EBB_EIO;
}

int ebb__ckpt_chunk_open(struct ebb__ckpt_file *f, uint64_t index, bool last,
                         unsigned char *buf, size_t len, const unsigned char *tag,
                         struct ebb__ckpt_error *err)
{
    unsigned char t[EBB__CKPT_TAG_LEN];
    memcpy(t, tag, sizeof(t));
    if (chunk_fits(index, last, len) && run_gcm(f, 0, index, last, buf, len, t))
        return 0;
    ebb__ckpt_fail(err, EBB__CKPT_CHUNK_AUTH, index,
                   "chunk %llu fails authentication: it was altered, or "
                   "moved from another place, file or checkpoint",
                   (unsigned long long)index);
    return EBB_EAUTH;
}

int ebb__ckpt_chunk_unopen(struct ebb__ckpt_file *f, uint64_t index, bool last,
                           unsigned char *buf, size_t len)
{
    unsigned char t[EBB__CKPT_TAG_LEN];
    if (!chunk_fits(index, last, len))
        return EBB_EINVAL;
    return run_gcm(f, 1, index, last, buf, len, t) ? 0 : EBB_EIO;
}

void ebb__ckpt_file_close(struct ebb__ckpt_file *f)
{
    EVP_CIPHER_CTX_free(f->evp);
    f->evp = NULL;
    OPENSSL_cleanse(f->enc_key, sizeof(f->enc_key));
}
