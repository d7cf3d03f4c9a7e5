/* TLS for ebbd's listeners: OpenSSL server sessions over memory BIOs.
 *
 * The socket stays libuv's: a session never touches a file descriptor.
 * httpd_conn.c hands what it reads to ebb__tls_feed(), takes the
 * plaintext out with ebb__tls_read(), passes what it would write to
 * ebb__tls_write(), and sends whatever ebb__tls_take() gives it (handshake
 * records, encrypted answers, close_notify). The handshake runs inside
 * ebb__tls_read(). TLS 1.2 is the least version spoken; renegotiation and
 * session tickets are off, so after the handshake a session writes only
 * when asked to.
 *
 * A context holds one certificate (with its chain) and key; sessions
 * borrow it, so it is freed only after the last of them. tls_cert.c makes
 * the self-signed certificate ebbd uses when none is configured.
 */
#ifndef EBB_IO_TLS_H
#define EBB_IO_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <ebb/common.h>

struct ebb__tls_ctx;
struct ebb__tls;

/* The length of a pin, "sha256//" and 44 base64 characters, with its NUL. */
#define EBB__TLS_PIN_SIZE 53

/* Loads a server context from PEM files: `cert_file` (the certificate,
 * then any intermediates) and `key_file` (its private key). Returns 0 and
 * sets `*out`, or EBB_EINVAL with a message naming the file in `err`
 * (unreadable, not PEM, key and certificate do not match), or
 * EBB_ENOMEM. Free it with ebb__tls_ctx_free(). */
int ebb__tls_ctx_new(struct ebb__tls_ctx **out, const char *cert_file,
                     const char *key_file, char *err, size_t errlen);

/* Frees a context no session uses any more; NULL is a no-op. */
void ebb__tls_ctx_free(struct ebb__tls_ctx *ctx);

/* The certificate's public-key pin: "sha256//" and the base64 SHA-256 of
 * its DER SubjectPublicKeyInfo, the form curl's CURLOPT_PINNEDPUBLICKEY
 * takes. Owned by the context. */
const char *ebb__tls_ctx_pin(const struct ebb__tls_ctx *ctx);

/* Whether the certificate is self-signed (its issuer is its subject and
 * its own key verifies it): agents can only pin it, not verify a chain. */
bool ebb__tls_ctx_self_signed(const struct ebb__tls_ctx *ctx);

/* Computes the pin of the PEM certificate at `cert_file` into `pin`
 * (EBB__TLS_PIN_SIZE bytes). Returns 0, or EBB_EINVAL when the file holds
 * no certificate. */
int ebb__tls_pin_of_file(const char *cert_file, char pin[EBB__TLS_PIN_SIZE]);

/* A server session on `ctx`, waiting for the client's hello. Returns NULL
 * when out of memory. Free it with ebb__tls_free(). */
struct ebb__tls *ebb__tls_new(struct ebb__tls_ctx *ctx);

/* Frees a session; NULL is a no-op. */
void ebb__tls_free(struct ebb__tls *t);

/* Hands the session `len` bytes read from the peer (copied). Returns 0 or
 * EBB_ENOMEM. */
int ebb__tls_feed(struct ebb__tls *t, const void *data, size_t len);

/* Runs the handshake as far as the bytes fed allow, then decrypts up to
 * `cap` bytes of application data into `buf`. Returns 0 with `*got` set
 * (0: nothing more until more bytes are fed; call again while it is
 * `cap`), EBB_EPROTO when the peer broke the protocol (plain HTTP, a bad
 * record, a failed handshake: ebb__tls_error() says which), or
 * EBB_ESHUTDOWN once the peer sent close_notify. Either error means the
 * connection is over; what ebb__tls_take() still holds may be an alert
 * worth sending first. */
int ebb__tls_read(struct ebb__tls *t, void *buf, size_t cap, size_t *got);

/* Encrypts `len` bytes for the peer (once the handshake is done). Returns
 * 0, or EBB_EPROTO. The records wait for ebb__tls_take(). */
int ebb__tls_write(struct ebb__tls *t, const void *data, size_t len);

/* Queues close_notify for the peer. */
void ebb__tls_shutdown(struct ebb__tls *t);

/* What the session has for the peer, in a new buffer of `*len` bytes that
 * the caller frees; NULL (and *len 0) when there is nothing, or when out
 * of memory. */
char *ebb__tls_take(struct ebb__tls *t, size_t *len);

/* Why the latest call failed, for the log; "" when none did. Owned by the
 * session. */
const char *ebb__tls_error(const struct ebb__tls *t);

/* tls_cert.c: makes sure the directory `dir` holds ebbd's own agent
 * certificate and key, and sets `*cert_file` and `*key_file` to their
 * paths (new strings the caller frees). The key (EC P-256, `agent-tls.key`,
 * mode 0600, ours and no one else's) is made once and kept: restarts reuse
 * it, so the pin agents are given stays the same. The certificate
 * (`agent-tls.crt`, self-signed, ten years) names `host` (an IP address or
 * a DNS name) as its subjectAltName; one that does not is made again with
 * the same key. Files are written beside their final names with
 * O_EXCL|O_NOFOLLOW and renamed into place, so a crash leaves the old
 * file or the new one. Returns 0, or EBB_EIO / EBB_EPERM / EBB_ENOMEM
 * with a message in `err`. */
int ebb__tls_cert_ensure(const char *dir, const char *host, char **cert_file,
                         char **key_file, char *err, size_t errlen);

#endif
