/* A job's checkpoint key: generating it, naming it, its hex form, and the
 * keys HKDF-SHA256 derives from it, a packed workdir's among them (see
 * ckpt_object.h). */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include <ebb/digest.h>

#include "base/str.h"
#include "io/ckpt_object.h"
#include "io/ckpt_internal.h"

int ebb__ckpt_key_generate(struct ebb__ckpt_key *out)
{
    if (RAND_bytes(out->bytes, (int)sizeof(out->bytes)) != 1) {
        OPENSSL_cleanse(out->bytes, sizeof(out->bytes));
        return EBB_EIO;
    }
    return 0;
}

void ebb__ckpt_key_wipe(struct ebb__ckpt_key *k)
{
    OPENSSL_cleanse(k->bytes, sizeof(k->bytes));
}

int ebb__ckpt_hkdf(const unsigned char *ikm, size_t ikm_len,
                   const unsigned char *salt, size_t salt_len,
                   const unsigned char *info, size_t info_len,
                   unsigned char *out, size_t out_len)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    size_t n = out_len;
    int ok = c != NULL && EVP_PKEY_derive_init(c) == 1 &&
             EVP_PKEY_CTX_set_hkdf_md(c, EVP_sha256()) == 1 &&
             EVP_PKEY_CTX_set1_hkdf_key(c, ikm, (int)ikm_len) == 1 &&
             (salt_len == 0 ||
              EVP_PKEY_CTX_set1_hkdf_salt(c, salt, (int)salt_len) == 1) &&
             EVP_PKEY_CTX_add1_hkdf_info(c, info, (int)info_len) == 1 &&
             EVP_PKEY_derive(c, out, &n) == 1 && n == out_len;
    EVP_PKEY_CTX_free(c);
    if (!ok) {
        OPENSSL_cleanse(out, out_len);
        return EBB_EIO;
    }
    return 0;
}

static int derive_label(const struct ebb__ckpt_key *k, const char *label,
                        unsigned char *out, size_t len)
{
    return ebb__ckpt_hkdf(k->bytes, sizeof(k->bytes), NULL, 0,
                          (const unsigned char *)label, strlen(label), out, len);
}

int ebb__ckpt_key_id(const struct ebb__ckpt_key *k, char *out)
{
    unsigned char id[16];
    int rc = derive_label(k, "ebb ckpt v1 key id", id, sizeof(id));
    if (rc != 0)
        return rc;
    ebb_hex(id, sizeof(id), out);
    return 0;
}

int ebb__ckpt_manifest_key(const struct ebb__ckpt_key *k, unsigned char out[32])
{
    return derive_label(k, "ebb ckpt v1 manifest", out, 32);
}

int ebb__ckpt_workdir_key(const unsigned char secret[EBB__CKPT_KEY_LEN],
                          const unsigned char sha256[32], struct ebb__ckpt_key *out)
{
    static const char label[] = "ebb workdir v1";
    unsigned char info[sizeof(label) - 1 + 32];
    memcpy(info, label, sizeof(label) - 1);
    memcpy(info + sizeof(label) - 1, sha256, 32);
    return ebb__ckpt_hkdf(secret, EBB__CKPT_KEY_LEN, NULL, 0, info, sizeof(info),
                          out->bytes, sizeof(out->bytes));
}

int ebb__ckpt_unhex(const char *hex, unsigned char *out, size_t len)
{
    if (strlen(hex) != 2 * len)
        return EBB_EINVAL;
    for (size_t i = 0; i < len; i++) {
        int hi = ebb__hex_digit(hex[2 * i]), lo = ebb__hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return EBB_EINVAL;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

void ebb__ckpt_key_to_hex(const struct ebb__ckpt_key *k, char *out)
{
    ebb_hex(k->bytes, sizeof(k->bytes), out);
}

int ebb__ckpt_key_from_hex(const char *hex, struct ebb__ckpt_key *out)
{
    int rc = ebb__ckpt_unhex(hex, out->bytes, sizeof(out->bytes));
    if (rc != 0)
        ebb__ckpt_key_wipe(out);
    return rc;
}
