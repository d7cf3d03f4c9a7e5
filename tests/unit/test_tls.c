/* TLS for ebbd's listeners (src/io/tls.c, tls_cert.c, and httpd's use of
 * them): ebbd's own certificate is made once and kept; a session shakes
 * hands with a real OpenSSL client over memory, and answers garbage by
 * failing, not crashing; the HTTP server over TLS answers a client that
 * pins its key, and nothing else: a wrong pin, plain HTTP and garbage all
 * end without an answer while the server lives on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "io/http_client.h"
#include "io/httpd.h"
#include "io/tls.h"

#define WATCHDOG_MS 8000

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

struct dir {
    char path[64];
};

static void dir_make(struct dir *d)
{
    snprintf(d->path, sizeof(d->path), "/tmp/ebb-tls-XXXXXX");
    assert_non_null(mkdtemp(d->path));
}

static void dir_remove(struct dir *d)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
    assert_int_equal(system(cmd), 0);
}

/* ---- the certificate ------------------------------------------------- */

/* Made with a 0600 key the first time; the same key and certificate the
 * next; a new certificate for the same key (so the same pin) when the
 * host changes. */
static void cert_made_once_and_kept(void **state)
{
    (void)state;
    struct dir d;
    dir_make(&d);
    char err[256] = "";
    char *cert = NULL, *key = NULL;
    assert_int_equal(ebb__tls_cert_ensure(d.path, "10.1.2.3", &cert, &key, err,
                                          sizeof(err)), 0);
    struct stat st;
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char *key_text = read_file(key), *cert_text = read_file(cert);
    char pin1[EBB__TLS_PIN_SIZE], pin2[EBB__TLS_PIN_SIZE], pin3[EBB__TLS_PIN_SIZE];
    assert_int_equal(ebb__tls_pin_of_file(cert, pin1), 0);
    assert_int_equal(strncmp(pin1, "sha256//", 8), 0);
    assert_int_equal(strlen(pin1), EBB__TLS_PIN_SIZE - 1);

    struct ebb__tls_ctx *ctx = NULL;
    assert_int_equal(ebb__tls_ctx_new(&ctx, cert, key, err, sizeof(err)), 0);
    assert_string_equal(ebb__tls_ctx_pin(ctx), pin1);
    assert_true(ebb__tls_ctx_self_signed(ctx));
    ebb__tls_ctx_free(ctx);
    free(cert);
    free(key);

    assert_int_equal(ebb__tls_cert_ensure(d.path, "10.1.2.3", &cert, &key, err,
                                          sizeof(err)), 0);
    char *again = read_file(key), *cert_again = read_file(cert);
    assert_string_equal(again, key_text);
    assert_string_equal(cert_again, cert_text);
    assert_int_equal(ebb__tls_pin_of_file(cert, pin2), 0);
    assert_string_equal(pin2, pin1);
    free(again);
    free(cert_again);
    free(cert);
    free(key);

    assert_int_equal(ebb__tls_cert_ensure(d.path, "agents.example.org", &cert, &key,
                                          err, sizeof(err)), 0);
    cert_again = read_file(cert);
    assert_string_not_equal(cert_again, cert_text);
    assert_int_equal(ebb__tls_pin_of_file(cert, pin3), 0);
    assert_string_equal(pin3, pin1);
    free(cert_again);
    free(key_text);
    free(cert_text);

    /* A key others may read, or a symlink where the key should be, is
     * refused, not used. */
    assert_int_equal(chmod(key, 0644), 0);
    assert_int_not_equal(ebb__tls_cert_ensure(d.path, "10.1.2.3", &cert, &key, err,
                                              sizeof(err)), 0);
    assert_non_null(strstr(err, "readable by others"));
    free(cert);
    free(key);
    dir_remove(&d);

    dir_make(&d);
    char link[128];
    snprintf(link, sizeof(link), "%s/agent-tls.key", d.path);
    assert_int_equal(symlink("/etc/passwd", link), 0);
    err[0] = '\0';
    assert_int_not_equal(ebb__tls_cert_ensure(d.path, "10.1.2.3", &cert, &key, err,
                                              sizeof(err)), 0);
    assert_non_null(strstr(err, "agent-tls.key"));
    dir_remove(&d);
}

/* ---- a session over memory -------------------------------------------- */

struct pair {
    struct dir d;
    struct ebb__tls_ctx *ctx;
    struct ebb__tls *server;
    SSL_CTX *client_ctx;
    SSL *client;
    BIO *c_in, *c_out;
};

static void pair_open(struct pair *p)
{
    dir_make(&p->d);
    char err[256];
    char *cert, *key;
    assert_int_equal(ebb__tls_cert_ensure(p->d.path, "127.0.0.1", &cert, &key, err,
                                          sizeof(err)), 0);
    assert_int_equal(ebb__tls_ctx_new(&p->ctx, cert, key, err, sizeof(err)), 0);
    free(cert);
    free(key);
    p->server = ebb__tls_new(p->ctx);
    assert_non_null(p->server);
    p->client_ctx = SSL_CTX_new(TLS_client_method());
    p->client = SSL_new(p->client_ctx);
    p->c_in = BIO_new(BIO_s_mem());
    p->c_out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(p->c_in, -1);
    SSL_set_bio(p->client, p->c_in, p->c_out);
    SSL_set_connect_state(p->client);
}

static void pair_close(struct pair *p)
{
    SSL_free(p->client);
    SSL_CTX_free(p->client_ctx);
    ebb__tls_free(p->server);
    ebb__tls_ctx_free(p->ctx);
    dir_remove(&p->d);
}

/* Moves what the client wrote to the server and back; the plaintext the
 * server decrypted goes to `plain`. Returns the server's read status. */
static int pump(struct pair *p, char *plain, size_t cap, size_t *plain_len)
{
    char buf[16384];
    int n = BIO_read(p->c_out, buf, sizeof(buf));
    if (n > 0)
        assert_int_equal(ebb__tls_feed(p->server, buf, (size_t)n), 0);
    size_t got = 0;
    int rc = ebb__tls_read(p->server, plain, cap, &got);
    if (plain_len != NULL)
        *plain_len = got;
    size_t len;
    char *out = ebb__tls_take(p->server, &len);
    if (out != NULL)
        assert_int_equal(BIO_write(p->c_in, out, (int)len), (int)len);
    free(out);
    return rc;
}

static void handshake_and_data(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    char plain[256];
    int done = 0;
    for (int i = 0; i < 10 && !done; i++) {
        done = SSL_do_handshake(p.client) == 1;
        assert_int_equal(pump(&p, plain, sizeof(plain), NULL), 0);
    }
    assert_true(done);
    assert_int_equal(SSL_version(p.client) >= TLS1_2_VERSION, 1);

    /* The key the client saw is the one the pin names. */
    X509 *seen = SSL_get1_peer_certificate(p.client);
    assert_non_null(seen);
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(X509_get0_pubkey(seen), &der);
    unsigned char md[32];
    unsigned int md_len;
    assert_int_equal(EVP_Digest(der, (size_t)n, md, &md_len, EVP_sha256(), NULL), 1);
    char want[EBB__TLS_PIN_SIZE] = "sha256//";
    EVP_EncodeBlock((unsigned char *)want + 8, md, (int)md_len);
    assert_string_equal(ebb__tls_ctx_pin(p.ctx), want);
    OPENSSL_free(der);
    X509_free(seen);

    assert_int_equal(SSL_write(p.client, "GET / HTTP/1.1\r\n\r\n", 18), 18);
    size_t got = 0;
    assert_int_equal(pump(&p, plain, sizeof(plain), &got), 0);
    assert_int_equal(got, 18);
    assert_memory_equal(plain, "GET / HTTP/1.1\r\n\r\n", 18);

    assert_int_equal(ebb__tls_write(p.server, "HTTP/1.1 200 OK\r\n", 17), 0);
    ebb__tls_shutdown(p.server);
    size_t len;
    char *out = ebb__tls_take(p.server, &len);
    assert_non_null(out);
    BIO_write(p.c_in, out, (int)len);
    free(out);
    char reply[64];
    assert_int_equal(SSL_read(p.client, reply, sizeof(reply)), 17);
    assert_int_equal(SSL_read(p.client, reply, sizeof(reply)), 0);
    assert_int_equal(SSL_get_error(p.client, 0), SSL_ERROR_ZERO_RETURN);

    /* The client's close_notify ends the server's side. */
    SSL_shutdown(p.client);
    assert_int_equal(pump(&p, plain, sizeof(plain), NULL), EBB_ESHUTDOWN);
    pair_close(&p);
}

/* Plain HTTP, and random bytes, are a protocol error, nothing worse. */
static void garbage_fails(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    static const char plain_http[] = "GET /v1/agent/job HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(ebb__tls_feed(p.server, plain_http, sizeof(plain_http) - 1), 0);
    char plain[256];
    size_t got = 1;
    assert_int_equal(ebb__tls_read(p.server, plain, sizeof(plain), &got), EBB_EPROTO);
    assert_int_equal(got, 0);
    assert_non_null(strstr(ebb__tls_error(p.server), "handshake"));
    ebb__tls_free(p.server);

    /* A record header that announces a huge record, then noise. */
    p.server = ebb__tls_new(p.ctx);
    unsigned char noise[4096];
    noise[0] = 0x16, noise[1] = 0x03, noise[2] = 0x01, noise[3] = 0xff, noise[4] = 0xff;
    for (size_t i = 5; i < sizeof(noise); i++)
        noise[i] = (unsigned char)(i * 131u + 7u);
    assert_int_equal(ebb__tls_feed(p.server, noise, sizeof(noise)), 0);
    assert_int_equal(ebb__tls_read(p.server, plain, sizeof(plain), &got), EBB_EPROTO);
    pair_close(&p);
}

/* ---- the HTTP server over TLS ------------------------------------------- */

struct fx {
    uv_loop_t loop;
    uv_timer_t watchdog;
    bool watchdog_fired;
    struct dir d;
    struct ebb__tls_ctx *ctx;
    struct ebb__httpd *srv;
    struct ebb__http *http;
    int closed;
    bool saw_tls;
};

struct result {
    int calls, status, error;
    char body[64];
    char message[256];
};

static void handler(const struct ebb__httpd_request *req,
                    struct ebb__httpd_response *res, void *arg)
{
    struct fx *f = arg;
    f->saw_tls = req->tls;
    if (strcmp(req->path, "/big") == 0) {
        size_t ok = 0;
        for (size_t i = 0; i < req->body_len; i++)
            ok += req->body[i] == (char)('a' + i % 26);
        ebb__httpd_set_bodyf(res, "%zu of %zu", ok, req->body_len);
        return;
    }
    ebb__httpd_set_bodyf(res, "hello %s", req->path);
}

static void on_watchdog(uv_timer_t *t)
{
    struct fx *f = t->data;
    f->watchdog_fired = true;
}

static void on_closed(void *arg)
{
    int *count = arg;
    (*count)++;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    uv_timer_init(&f->loop, &f->watchdog);
    f->watchdog.data = f;
    uv_timer_start(&f->watchdog, on_watchdog, WATCHDOG_MS, 0);
    dir_make(&f->d);
    char err[256];
    char *cert, *key;
    assert_int_equal(ebb__tls_cert_ensure(f->d.path, "127.0.0.1", &cert, &key, err,
                                          sizeof(err)), 0);
    assert_int_equal(ebb__tls_ctx_new(&f->ctx, cert, key, err, sizeof(err)), 0);
    free(cert);
    free(key);
    assert_int_equal(ebb__httpd_start(&f->srv, &f->loop, handler, f), 0);
    ebb__httpd_set_tls(f->srv, f->ctx);
    assert_int_equal(strncmp(ebb__httpd_url(f->srv), "https://127.0.0.1:", 18), 0);
    assert_int_equal(ebb__http_init(&f->http, &f->loop), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    ebb__http_close(f->http, on_closed, &f->closed);
    ebb__httpd_close(f->srv, on_closed, &f->closed);
    uv_close((uv_handle_t *)&f->watchdog, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(f->closed, 2);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    ebb__tls_ctx_free(f->ctx);
    dir_remove(&f->d);
    free(f);
    return 0;
}

static void on_result(const struct ebb_http_response *res, void *arg)
{
    struct result *r = arg;
    r->calls++;
    r->status = res->status;
    r->error = res->error;
    snprintf(r->body, sizeof(r->body), "%s", res->body ? res->body : "");
    snprintf(r->message, sizeof(r->message), "%s",
             res->error_message ? res->error_message : "");
}

static void fetch(struct fx *f, const char *scheme, const char *path, struct result *r)
{
    char url[128];
    const char *base = strstr(ebb__httpd_url(f->srv), "://");
    snprintf(url, sizeof(url), "%s%s%s", scheme, base, path);
    struct ebb_http_request req = {
        .struct_size = sizeof(req), .method = "GET", .url = url, .max_attempts = 1,
    };
    *r = (struct result){0};
    assert_int_equal(ebb__http_request(f->http, &req, on_result, r), 0);
    while (r->calls == 0 && !f->watchdog_fired)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_false(f->watchdog_fired);
}

/* The right pin gets the answer; a wrong one, no pin (the chain is not
 * trusted), and plain HTTP get none. */
static void pinned_client(void **state)
{
    struct fx *f = *state;
    struct result r;
    assert_int_equal(ebb__http_set_pinned_key(f->http, ebb__tls_ctx_pin(f->ctx)), 0);
    fetch(f, "https", "/job", &r);
    assert_int_equal(r.error, 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "hello /job");
    assert_true(f->saw_tls);

    uint64_t answered = ebb__httpd_requests(f->srv);
    assert_int_equal(ebb__http_set_pinned_key(f->http,
        "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="), 0);
    fetch(f, "https", "/job", &r);
    assert_int_not_equal(r.error, 0);
    assert_int_equal(r.status, 0);

    assert_int_equal(ebb__http_set_pinned_key(f->http, NULL), 0);
    fetch(f, "https", "/job", &r);
    assert_int_not_equal(r.error, 0);

    fetch(f, "http", "/job", &r);
    assert_int_not_equal(r.error, 0);
    assert_int_equal(r.status, 0);
    assert_int_equal(ebb__httpd_requests(f->srv), answered);

    assert_int_equal(ebb__http_set_pinned_key(f->http, ebb__tls_ctx_pin(f->ctx)), 0);
    fetch(f, "https", "/again", &r);
    assert_int_equal(r.status, 200);
}

/* A body of many TLS records arrives whole, also when the client then
 * only waits for the answer. */
static void large_body(void **state)
{
    struct fx *f = *state;
    enum { N = 300 * 1024 };
    char *body = malloc(N);
    assert_non_null(body);
    for (size_t i = 0; i < N; i++)
        body[i] = (char)('a' + i % 26);
    char url[128];
    snprintf(url, sizeof(url), "%s/big", ebb__httpd_url(f->srv));
    struct ebb_http_request req = {
        .struct_size = sizeof(req), .method = "POST", .url = url,
        .body = body, .body_len = N, .max_attempts = 1,
    };
    struct result r = {0};
    assert_int_equal(ebb__http_set_pinned_key(f->http, ebb__tls_ctx_pin(f->ctx)), 0);
    assert_int_equal(ebb__http_request(f->http, &req, on_result, &r), 0);
    while (r.calls == 0 && !f->watchdog_fired)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_false(f->watchdog_fired);
    free(body);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "307200 of 307200");
}

struct raw {
    uint16_t port;
    size_t answered;
    uv_async_t async;
    int done;
};

/* Sends noise, then reads until the server hangs up. */
static void raw_thread(void *arg)
{
    struct raw *r = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(r->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        unsigned char noise[2048];
        for (size_t i = 0; i < sizeof(noise); i++)
            noise[i] = (unsigned char)(i * 197u + 3u);
        send(fd, noise, sizeof(noise), MSG_NOSIGNAL);
        char buf[256];
        for (;;) {
            ssize_t n = recv(fd, buf, sizeof(buf), 0);
            if (n <= 0)
                break;
            r->answered += (size_t)n;
        }
    }
    if (fd >= 0)
        close(fd);
    uv_async_send(&r->async);
}

static void on_raw_done(uv_async_t *a)
{
    struct raw *r = a->data;
    r->done = 1;
    uv_close((uv_handle_t *)a, NULL);
}

static void garbage_closes_connection(void **state)
{
    struct fx *f = *state;
    struct raw r = {.port = ebb__httpd_port(f->srv)};
    assert_int_equal(uv_async_init(&f->loop, &r.async, on_raw_done), 0);
    r.async.data = &r;
    uv_thread_t t;
    assert_int_equal(uv_thread_create(&t, raw_thread, &r), 0);
    while (!r.done && !f->watchdog_fired)
        uv_run(&f->loop, UV_RUN_ONCE);
    uv_thread_join(&t);
    assert_false(f->watchdog_fired);
    assert_int_equal(ebb__httpd_requests(f->srv), 0);

    struct result ok;
    assert_int_equal(ebb__http_set_pinned_key(f->http, ebb__tls_ctx_pin(f->ctx)), 0);
    fetch(f, "https", "/after", &ok);
    assert_int_equal(ok.status, 200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cert_made_once_and_kept),
        cmocka_unit_test(handshake_and_data),
        cmocka_unit_test(garbage_fails),
        cmocka_unit_test_setup_teardown(pinned_client, setup, teardown),
        cmocka_unit_test_setup_teardown(large_body, setup, teardown),
        cmocka_unit_test_setup_teardown(garbage_closes_connection, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
