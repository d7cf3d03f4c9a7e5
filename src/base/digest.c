/* SHA-256, HMAC-SHA256 and hex with OpenSSL's one-shot calls. */
#include <ebb/digest.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <ebb/common.h>

void ebb_hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

int ebb_sha256(const void *data, size_t len, unsigned char out[EBB_SHA256_LEN])
{
    unsigned int md_len = 0;
    if (EVP_Digest(data != NULL ? data : "", len, out, &md_len, EVP_sha256(),
                   NULL) != 1 ||
        md_len != EBB_SHA256_LEN)
        return EBB_ENOMEM;
    return 0;
}

int ebb_sha256_hex(const void *data, size_t len, char out[EBB_SHA256_HEX_LEN])
{
    unsigned char md[EBB_SHA256_LEN];
    int rc = ebb_sha256(data, len, md);
    if (rc == 0)
        ebb_hex(md, sizeof(md), out);
    return rc;
}

int ebb_hmac_sha256(const void *key, size_t key_len, const void *msg,
                    size_t len, unsigned char out[EBB_SHA256_LEN])
{
    unsigned int md_len = 0;
    if (HMAC(EVP_sha256(), key, (int)key_len,
             (const unsigned char *)(msg != NULL ? msg : ""), len, out,
             &md_len) == NULL ||
        md_len != EBB_SHA256_LEN)
        return EBB_ENOMEM;
    return 0;
}
