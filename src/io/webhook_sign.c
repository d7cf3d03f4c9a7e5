/* Webhook signatures (webhook_sign.h) with libcrypto's HMAC. */
#include "io/webhook_sign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <ebb/common.h>

int ebb__webhook_signature(const void *secret, size_t secret_len,
                           int64_t timestamp, const void *body, size_t body_len,
                           char out[EBB__WEBHOOK_SIG_SIZE])
{
    out[0] = '\0';
    if (secret == NULL || secret_len == 0 || secret_len > INT32_MAX ||
        (body == NULL && body_len > 0))
        return EBB_EINVAL;
    char prefix[32];
    int n = snprintf(prefix, sizeof(prefix), "%lld.", (long long)timestamp);
    if (n <= 0 || (size_t)n >= sizeof(prefix))
        return EBB_EINVAL;
    /* One buffer for HMAC()'s one-shot call: the incremental HMAC_CTX
     * calls are deprecated in OpenSSL 3, and bodies are small. */
    unsigned char *msg = malloc((size_t)n + body_len + 1);
    if (msg == NULL)
        return EBB_ENOMEM;
    memcpy(msg, prefix, (size_t)n);
    if (body_len > 0)
        memcpy(msg + n, body, body_len);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    int ok = HMAC(EVP_sha256(), secret, (int)secret_len, msg,
                  (size_t)n + body_len, mac, &mac_len) != NULL &&
             mac_len == 32;
    free(msg);
    if (!ok)
        return EBB_EIO;
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "v1=", 3);
    for (unsigned i = 0; i < mac_len; i++) {
        out[3 + 2 * i] = hex[mac[i] >> 4];
        out[3 + 2 * i + 1] = hex[mac[i] & 15];
    }
    out[3 + 2 * mac_len] = '\0';
    return 0;
}
