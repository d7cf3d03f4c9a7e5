/* TLS server sessions over memory BIOs; see tls.h. */
#include "io/tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

struct ebb__tls_ctx {
    SSL_CTX *ssl;
    char pin[EBB__TLS_PIN_SIZE];
    bool self_signed;
};

struct ebb__tls {
    SSL *ssl;
    BIO *in, *out; /* owned by ssl */
    char error[160];
};

/* The first queued OpenSSL error as text, after `what`; clears the queue. */
static void say_ssl(char *err, size_t errlen, const char *what)
{
    unsigned long e = ERR_get_error();
    char reason[120] = "no detail";
    if (e != 0)
        ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    snprintf(err, errlen, "%s: %s", what, reason);
}

static int pin_of(X509 *cert, char pin[EBB__TLS_PIN_SIZE])
{
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(X509_get0_pubkey(cert), &der);
    unsigned char md[32];
    unsigned int md_len = 0;
    int ok = n > 0 && EVP_Digest(der, (size_t)n, md, &md_len, EVP_sha256(), NULL) == 1 &&
             md_len == sizeof(md);
    OPENSSL_free(der);
    if (!ok)
        return EBB_EINVAL;
    memcpy(pin, "sha256//", 8);
    EVP_EncodeBlock((unsigned char *)pin + 8, md, (int)md_len);
    return 0;
}

int ebb__tls_pin_of_file(const char *cert_file, char pin[EBB__TLS_PIN_SIZE])
{
    FILE *f = fopen(cert_file, "re");
    X509 *cert = f != NULL ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f != NULL)
        fclose(f);
    int rc = cert != NULL ? pin_of(cert, pin) : EBB_EINVAL;
    X509_free(cert);
    ERR_clear_error();
    return rc;
}

/* Self-signed: the issuer is the subject and the certificate's own key
 * verifies its signature. */
static bool is_self_signed(X509 *cert)
{
    return X509_NAME_cmp(X509_get_subject_name(cert), X509_get_issuer_name(cert)) == 0 &&
           X509_verify(cert, X509_get0_pubkey(cert)) == 1;
}

int ebb__tls_ctx_new(struct ebb__tls_ctx **out, const char *cert_file,
                     const char *key_file, char *err, size_t errlen)
{
    struct ebb__tls_ctx *c = calloc(1, sizeof(*c));
    SSL_CTX *ssl = c != NULL ? SSL_CTX_new(TLS_server_method()) : NULL;
    if (ssl == NULL) {
        free(c);
        return EBB_ENOMEM;
    }
    c->ssl = ssl;
    /* Tickets and renegotiation would make a session write on its own
     * after the handshake; nothing here needs either. */
    SSL_CTX_set_min_proto_version(c->ssl, TLS1_2_VERSION);
    SSL_CTX_set_options(c->ssl, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION |
                                    SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_num_tickets(c->ssl, 0);
    SSL_CTX_set_session_cache_mode(c->ssl, SSL_SESS_CACHE_OFF);
    char what[600];
    int rc = 0;
    if (SSL_CTX_use_certificate_chain_file(c->ssl, cert_file) != 1) {
        snprintf(what, sizeof(what), "%s: not a readable PEM certificate", cert_file);
        rc = EBB_EINVAL;
    } else if (SSL_CTX_use_PrivateKey_file(c->ssl, key_file, SSL_FILETYPE_PEM) != 1) {
        snprintf(what, sizeof(what), "%s: not a readable PEM private key", key_file);
        rc = EBB_EINVAL;
    } else if (SSL_CTX_check_private_key(c->ssl) != 1) {
        snprintf(what, sizeof(what), "%s is not the key of %s", key_file, cert_file);
        rc = EBB_EINVAL;
    } else if (pin_of(SSL_CTX_get0_certificate(c->ssl), c->pin) != 0) {
        snprintf(what, sizeof(what), "%s: cannot hash its public key", cert_file);
        rc = EBB_EINVAL;
    }
    if (rc != 0) {
        say_ssl(err, errlen, what);
        ebb__tls_ctx_free(c);
        return rc;
    }
    c->self_signed = is_self_signed(SSL_CTX_get0_certificate(c->ssl));
    ERR_clear_error();
    *out = c;
    return 0;
}

void ebb__tls_ctx_free(struct ebb__tls_ctx *ctx)
{
    if (ctx == NULL)
        return;
    SSL_CTX_free(ctx->ssl);
    free(ctx);
}

const char *ebb__tls_ctx_pin(const struct ebb__tls_ctx *ctx)
{
    return ctx->pin;
}

bool ebb__tls_ctx_self_signed(const struct ebb__tls_ctx *ctx)
{
    return ctx->self_signed;
}

struct ebb__tls *ebb__tls_new(struct ebb__tls_ctx *ctx)
{
    struct ebb__tls *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->ssl = SSL_new(ctx->ssl);
    t->in = BIO_new(BIO_s_mem());
    t->out = BIO_new(BIO_s_mem());
    if (t->ssl == NULL || t->in == NULL || t->out == NULL) {
        BIO_free(t->in);
        BIO_free(t->out);
        SSL_free(t->ssl);
        free(t);
        ERR_clear_error();
        return NULL;
    }
    /* An empty input BIO means "not yet", not end of file. */
    BIO_set_mem_eof_return(t->in, -1);
    SSL_set_bio(t->ssl, t->in, t->out);
    SSL_set_accept_state(t->ssl);
    return t;
}

void ebb__tls_free(struct ebb__tls *t)
{
    if (t == NULL)
        return;
    SSL_free(t->ssl);
    free(t);
}

int ebb__tls_feed(struct ebb__tls *t, const void *data, size_t len)
{
    size_t done = 0;
    while (done < len) {
        size_t chunk = len - done > (size_t)INT32_MAX ? (size_t)INT32_MAX : len - done;
        int n = BIO_write(t->in, (const char *)data + done, (int)chunk);
        if (n <= 0)
            return EBB_ENOMEM;
        done += (size_t)n;
    }
    return 0;
}

int ebb__tls_read(struct ebb__tls *t, void *buf, size_t cap, size_t *got)
{
    *got = 0;
    if (cap == 0)
        return 0;
    size_t n = 0;
    if (SSL_read_ex(t->ssl, buf, cap, &n) == 1) {
        *got = n;
        return 0;
    }
    int e = SSL_get_error(t->ssl, 0);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        ERR_clear_error();
        return 0;
    }
    if (e == SSL_ERROR_ZERO_RETURN) {
        snprintf(t->error, sizeof(t->error), "the peer closed the session");
        ERR_clear_error();
        return EBB_ESHUTDOWN;
    }
    say_ssl(t->error, sizeof(t->error),
            SSL_is_init_finished(t->ssl) ? "TLS error" : "TLS handshake failed");
    return EBB_EPROTO;
}

int ebb__tls_write(struct ebb__tls *t, const void *data, size_t len)
{
    size_t n = 0;
    if (len == 0)
        return 0;
    if (SSL_write_ex(t->ssl, data, len, &n) != 1 || n != len) {
        say_ssl(t->error, sizeof(t->error), "TLS write failed");
        return EBB_EPROTO;
    }
    return 0;
}

void ebb__tls_shutdown(struct ebb__tls *t)
{
    if (SSL_is_init_finished(t->ssl))
        SSL_shutdown(t->ssl);
    ERR_clear_error();
}

char *ebb__tls_take(struct ebb__tls *t, size_t *len)
{
    *len = 0;
    size_t pending = BIO_ctrl_pending(t->out);
    if (pending == 0)
        return NULL;
    char *data = malloc(pending);
    if (data == NULL)
        return NULL;
    int n = BIO_read(t->out, data, (int)pending);
    if (n <= 0) {
        free(data);
        return NULL;
    }
    *len = (size_t)n;
    return data;
}

const char *ebb__tls_error(const struct ebb__tls *t)
{
    return t->error;
}
