/* Checkpoint chunks sealed with AES-256-GCM, object keys and the manifest
 * key from HKDF-SHA256, the manifest tag with HMAC-SHA256 (format:
 * base/ckpt_crypt.h). */
#include "base/ckpt_crypt.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <ebb/buf.h>
#include <ebb/common.h>
#include <ebb/digest.h>

#define IV_LEN 12
#define AAD_LEN 13

int ebb__cc_random(uint8_t *out, size_t len)
{
    return len <= INT32_MAX && RAND_bytes(out, (int)len) == 1 ? 0 : EBB_EIO;
}

/* HKDF-SHA256 (RFC 5869) of `key` with `salt` (may be NULL) and `info`. */
static int hkdf(const uint8_t key[EBB__CC_KEY_LEN], const uint8_t *salt,
                size_t salt_len, const char *info, uint8_t out[EBB__CC_KEY_LEN])
{
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *ctx = kdf != NULL ? EVP_KDF_CTX_new(kdf) : NULL;
    EVP_KDF_free(kdf);
    if (ctx == NULL)
        return EBB_ENOMEM;
    OSSL_PARAM params[5];
    size_t n = 0;
    params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0);
    params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key,
                                                    EBB__CC_KEY_LEN);
    if (salt != NULL)
        params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                                                        (void *)salt, salt_len);
    params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info,
                                                    strlen(info));
    params[n] = OSSL_PARAM_construct_end();
    int ok = EVP_KDF_derive(ctx, out, EBB__CC_KEY_LEN, params) == 1;
    EVP_KDF_CTX_free(ctx);
    return ok ? 0 : EBB_ENOMEM;
}

int ebb__cc_object_key(const uint8_t key[EBB__CC_KEY_LEN],
                       const uint8_t nonce[EBB__CC_NONCE_LEN],
                       uint8_t out[EBB__CC_KEY_LEN])
{
    return hkdf(key, nonce, EBB__CC_NONCE_LEN, "ebb checkpoint object v1", out);
}

uint64_t ebb__cc_chunks(uint64_t size, uint32_t chunk_size)
{
    if (chunk_size < EBB__CC_CHUNK_MIN || chunk_size > EBB__CC_CHUNK_MAX)
        return 0;
    return size == 0 ? 1 : (size - 1) / chunk_size + 1;
}

uint64_t ebb__cc_sealed_size(uint64_t size, uint32_t chunk_size)
{
    uint64_t n = ebb__cc_chunks(size, chunk_size);
    return n == 0 ? 0 : size + n * EBB__CC_TAG_LEN;
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)(v & 0xff);
        v >>= 8;
    }
}

/* The IV and additional data of chunk `index`. */
static void chunk_iv_aad(uint64_t index, int final, uint8_t iv[IV_LEN],
                         uint8_t aad[AAD_LEN])
{
    memset(iv, 0, 4);
    put_be64(iv + 4, index);
    memcpy(aad, "ebb1", 4);
    put_be64(aad + 4, index);
    aad[12] = final ? 1 : 0;
}

/* One GCM pass: seal (enc 1) `len` bytes of `in` into `out` and the tag
 * into `tag`, or open (enc 0) them, checking `tag`. */
static int gcm(int enc, const uint8_t key[EBB__CC_KEY_LEN], uint64_t index,
               int final, const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag)
{
    if (len > (size_t)EBB__CC_CHUNK_MAX)
        return EBB_EINVAL;
    uint8_t iv[IV_LEN], aad[AAD_LEN];
    chunk_iv_aad(index, final, iv, aad);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        return EBB_ENOMEM;
    int n = 0, ok = EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, iv, enc) == 1 &&
                    EVP_CipherUpdate(ctx, NULL, &n, aad, AAD_LEN) == 1;
    if (ok && len > 0)
        ok = EVP_CipherUpdate(ctx, out, &n, in, (int)len) == 1;
    if (ok && !enc)
        ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, EBB__CC_TAG_LEN, tag) == 1;
    int rest = 0;
    int final_ok = ok && EVP_CipherFinal_ex(ctx, out + (len > 0 ? n : 0), &rest) == 1;
    if (final_ok && enc)
        final_ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, EBB__CC_TAG_LEN, tag) == 1;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok)
        return EBB_ENOMEM;
    return final_ok ? 0 : enc ? EBB_ENOMEM : EBB_EAUTH;
}

int ebb__cc_seal_chunk(const uint8_t okey[EBB__CC_KEY_LEN], uint64_t index,
                       int final, const uint8_t *in, size_t len, uint8_t *out)
{
    if ((in == NULL && len > 0) || out == NULL)
        return EBB_EINVAL;
    return gcm(1, okey, index, final, in, len, out, out + len);
}

int ebb__cc_open_chunk(const uint8_t okey[EBB__CC_KEY_LEN], uint64_t index,
                       int final, const uint8_t *in, size_t len, uint8_t *out)
{
    if (in == NULL || len < EBB__CC_TAG_LEN || out == NULL)
        return EBB_EINVAL;
    size_t plain = len - EBB__CC_TAG_LEN;
    uint8_t tag[EBB__CC_TAG_LEN];
    memcpy(tag, in + plain, sizeof(tag));
    int rc = gcm(0, okey, index, final, in, plain, out, tag);
    /* GCM decrypts before it checks: nothing of a refused chunk stays. */
    if (rc != 0)
        OPENSSL_cleanse(out, plain);
    return rc;
}

/* Appends a 64-bit length and then the bytes. */
static void field(struct ebb_buf *b, const void *p, size_t len)
{
    uint8_t n[8];
    put_be64(n, len);
    ebb_buf_append(b, (const char *)n, sizeof(n));
    ebb_buf_append(b, p, len);
}

static int manifest_bytes(const char *job_id, const char *name,
                          const struct ebb__cc_object *objects, size_t n,
                          struct ebb_buf *b)
{
    if (job_id == NULL || name == NULL || (n > 0 && objects == NULL))
        return EBB_EINVAL;
    ebb_buf_append(b, "ebb checkpoint manifest v1", 26);
    field(b, job_id, strlen(job_id));
    field(b, name, strlen(name));
    uint8_t count[8];
    put_be64(count, n);
    ebb_buf_append(b, (const char *)count, sizeof(count));
    for (size_t i = 0; i < n; i++) {
        const struct ebb__cc_object *o = &objects[i];
        if (o->name == NULL || ebb__cc_chunks(o->size, o->chunk_size) == 0)
            return EBB_EINVAL;
        uint8_t sizes[12];
        put_be64(sizes, o->size);
        sizes[8] = (uint8_t)(o->chunk_size >> 24);
        sizes[9] = (uint8_t)(o->chunk_size >> 16);
        sizes[10] = (uint8_t)(o->chunk_size >> 8);
        sizes[11] = (uint8_t)o->chunk_size;
        field(b, o->name, strlen(o->name));
        ebb_buf_append(b, (const char *)sizes, sizeof(sizes));
        ebb_buf_append(b, (const char *)o->nonce, EBB__CC_NONCE_LEN);
    }
    return b->failed ? EBB_ENOMEM : 0;
}

int ebb__cc_manifest_tag(const uint8_t key[EBB__CC_KEY_LEN], const char *job_id,
                         const char *name, const struct ebb__cc_object *objects,
                         size_t n, uint8_t out[32])
{
    struct ebb_buf b = {0};
    uint8_t mkey[EBB__CC_KEY_LEN];
    int rc = manifest_bytes(job_id, name, objects, n, &b);
    if (rc == 0)
        rc = hkdf(key, NULL, 0, "ebb checkpoint manifest v1", mkey);
    if (rc == 0)
        rc = ebb_hmac_sha256(mkey, sizeof(mkey), b.data, b.len, out);
    OPENSSL_cleanse(mkey, sizeof(mkey));
    ebb_buf_free(&b);
    return rc;
}

int ebb__cc_manifest_verify(const uint8_t key[EBB__CC_KEY_LEN], const char *job_id,
                            const char *name, const struct ebb__cc_object *objects,
                            size_t n, const uint8_t tag[32])
{
    uint8_t want[32];
    int rc = ebb__cc_manifest_tag(key, job_id, name, objects, n, want);
    if (rc != 0)
        return rc;
    return CRYPTO_memcmp(want, tag, sizeof(want)) == 0 ? 0 : EBB_EAUTH;
}
