/* ebbd's own agent certificate: a P-256 key made once in the state
 * directory and a self-signed certificate for it; see tls.h. */
#include "io/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/str.h"

#define CERT_DAYS 3650

/* Opens `path` for reading without following a symlink. For the key it
 * must be a regular file of ours that no one else may read. Returns the
 * stream, or NULL with errno ENOENT (there is none) or a message. */
static FILE *open_existing(const char *path, bool secret, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e != ENOENT)
            snprintf(err, errlen, "%s: %s", path, strerror(e));
        errno = e;
        return NULL;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (secret && st.st_uid != geteuid())
        why = "not owned by ebbd's user";
    else if (secret && (st.st_mode & 077) != 0)
        why = "readable by others (chmod 600 it, or remove it and the "
              "certificate beside it for a new key)";
    FILE *f = why == NULL ? fdopen(fd, "r") : NULL;
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, why ? why : strerror(errno));
        close(fd);
        errno = EPERM;
    }
    return f;
}

/* Writes `path` through `path.new` (O_EXCL|O_NOFOLLOW, `mode`) and a
 * rename, with `write_pem(f, obj)`. */
static int write_atomic(const char *path, mode_t mode, int (*write_pem)(FILE *, void *),
                        void *obj, char *err, size_t errlen)
{
    char *tmp = ebb_strfmt("%s.new", path);
    if (tmp == NULL)
        return EBB_ENOMEM;
    /* A leftover from a crash is ours to replace; unlink() removes a
     * symlink itself, never what it points to. */
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int ok = f != NULL && fchmod(fd, mode) == 0 && write_pem(f, obj) == 1 &&
             fflush(f) == 0 && fsync(fd) == 0;
    int e = errno;
    if (f != NULL)
        ok = fclose(f) == 0 && ok;
    else if (fd >= 0)
        close(fd);
    if (ok)
        ok = rename(tmp, path) == 0;
    else
        errno = e;
    if (!ok) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    ERR_clear_error();
    return ok ? 0 : EBB_EIO;
}

static int write_key(FILE *f, void *key)
{
    return PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
}

static int write_cert(FILE *f, void *cert)
{
    return PEM_write_X509(f, cert);
}

static EVP_PKEY *ensure_key(const char *path, char *err, size_t errlen)
{
    FILE *f = open_existing(path, true, err, errlen);
    if (f != NULL) {
        EVP_PKEY *key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
        fclose(f);
        if (key == NULL)
            snprintf(err, errlen, "%s: not a PEM private key (remove it, and the "
                     "certificate beside it, for a new one)", path);
        ERR_clear_error();
        return key;
    }
    if (errno != ENOENT)
        return NULL;
    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (key == NULL) {
        snprintf(err, errlen, "cannot make a P-256 key");
        ERR_clear_error();
        return NULL;
    }
    if (write_atomic(path, 0600, write_key, key, err, errlen) != 0) {
        EVP_PKEY_free(key);
        return NULL;
    }
    return key;
}

/* Whether `cert` is for `key` and names `host`. */
static bool cert_fits(X509 *cert, EVP_PKEY *key, const char *host, bool is_ip)
{
    bool fits = X509_check_private_key(cert, key) == 1 &&
                (is_ip ? X509_check_ip_asc(cert, host, 0) == 1
                       : X509_check_host(cert, host, 0, 0, NULL) == 1);
    ERR_clear_error();
    return fits;
}

static int add_ext(X509 *cert, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, cert, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    int ok = ext != NULL && X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok ? 0 : EBB_EINVAL;
}

static X509 *make_cert(EVP_PKEY *key, const char *host, bool is_ip)
{
    X509 *cert = X509_new();
    X509_NAME *name = X509_NAME_new();
    unsigned char serial[8];
    BIGNUM *bn = NULL;
    char *san = ebb_strfmt("%s:%s", is_ip ? "IP" : "DNS", host);
    int ok = cert != NULL && name != NULL && san != NULL &&
             RAND_bytes(serial, sizeof(serial)) == 1;
    serial[0] &= 0x7f; /* a positive serial number */
    if (ok)
        bn = BN_bin2bn(serial, sizeof(serial), NULL);
    if (ok)
        ok = bn != NULL &&
             BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != NULL &&
             X509_set_version(cert, 2) == 1 &&
             X509_gmtime_adj(X509_getm_notBefore(cert), -3600) != NULL &&
             X509_gmtime_adj(X509_getm_notAfter(cert), (long)CERT_DAYS * 86400) != NULL &&
             X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                        (const unsigned char *)"ebbd agent API",
                                        -1, -1, 0) == 1 &&
             X509_set_subject_name(cert, name) == 1 &&
             X509_set_issuer_name(cert, name) == 1 &&
             X509_set_pubkey(cert, key) == 1 &&
             add_ext(cert, NID_subject_alt_name, san) == 0 &&
             add_ext(cert, NID_basic_constraints, "critical,CA:FALSE") == 0 &&
             add_ext(cert, NID_key_usage, "critical,digitalSignature") == 0 &&
             add_ext(cert, NID_ext_key_usage, "serverAuth") == 0 &&
             X509_sign(cert, key, EVP_sha256()) > 0;
    BN_free(bn);
    X509_NAME_free(name);
    free(san);
    ERR_clear_error();
    if (!ok) {
        X509_free(cert);
        return NULL;
    }
    return cert;
}

int ebb__tls_cert_ensure(const char *dir, const char *host, char **cert_file,
                         char **key_file, char *err, size_t errlen)
{
    unsigned char addr[16];
    bool is_ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
    char *key_path = ebb_strfmt("%s/agent-tls.key", dir);
    char *cert_path = ebb_strfmt("%s/agent-tls.crt", dir);
    EVP_PKEY *key = key_path && cert_path ? ensure_key(key_path, err, errlen) : NULL;
    int rc = key != NULL ? 0 : (key_path && cert_path ? EBB_EIO : EBB_ENOMEM);
    X509 *cert = NULL;
    if (rc == 0) {
        FILE *f = open_existing(cert_path, false, err, errlen);
        if (f == NULL && errno != ENOENT)
            rc = EBB_EIO;
        if (f != NULL) {
            cert = PEM_read_X509(f, NULL, NULL, NULL);
            fclose(f);
            ERR_clear_error();
        }
    }
    if (rc == 0 && (cert == NULL || !cert_fits(cert, key, host, is_ip))) {
        X509_free(cert);
        cert = make_cert(key, host, is_ip);
        if (cert == NULL) {
            snprintf(err, errlen, "cannot make a certificate for %s", host);
            rc = EBB_EIO;
        } else {
            rc = write_atomic(cert_path, 0644, write_cert, cert, err, errlen);
        }
    }
    X509_free(cert);
    EVP_PKEY_free(key);
    if (rc != 0) {
        free(key_path);
        free(cert_path);
        return rc;
    }
    *cert_file = cert_path;
    *key_file = key_path;
    return 0;
}
