/* Agents' secrets: the random bytes of an attempt's bearer secret and of
 * a metadata session token, and the SHA-256 of a secret, which is all the
 * store keeps of it. The only OpenSSL the engine calls. */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "engine/internal.h"

static void to_hex(const unsigned char *raw, size_t n, char *hex)
{
    for (size_t i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
}

int ebb__random_hex(char *hex, size_t size)
{
    unsigned char raw[64];
    size_t n = size / 2;
    if (n == 0 || n > sizeof(raw) || RAND_bytes(raw, (int)n) != 1)
        return EBB_EIO;
    to_hex(raw, n, hex);
    return 0;
}

void ebb__engine_thread_done(void)
{
    OPENSSL_thread_stop();
}

/* Hex SHA-256 of `prefix` followed by `secret`. */
static int digest(const char *prefix, const char *secret, char hash[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(ctx, prefix, strlen(prefix)) == 1 &&
             EVP_DigestUpdate(ctx, secret, strlen(secret)) == 1 &&
             EVP_DigestFinal_ex(ctx, md, &n) == 1 && n == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return EBB_EIO;
    to_hex(md, n, hash);
    return 0;
}

int ebb__agent_secret_hash(const char *secret, char hash[65])
{
    return digest("", secret, hash);
}

/* The prefix keeps the two kinds of hash apart: an enrolment secret never
 * authenticates a request, and a session secret never enrols. */
int ebb__enrol_secret_hash(const char *secret, char hash[65])
{
    return digest(EBB__ENROL_PREFIX, secret, hash);
}

int ebb__secret_hash_equal(const char *a, const char *b)
{
    return CRYPTO_memcmp(a, b, 64) == 0;
}
