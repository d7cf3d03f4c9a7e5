/* The HTTP client against the loopback test server, on one uv loop.
 *
 * Every test gets its own loop, server and client, and ends by closing
 * both and checking that uv_loop_close() succeeds, so a handle leaked by
 * either shows up as a failure. A watchdog timer bounds each test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ebb_build_config.h"
#include "io/http_client.h"
#include "io/http_head.h"
#include "io/httpd.h"

#define WATCHDOG_MS 8000
#define N_CONCURRENT 200

struct fx {
    uv_loop_t loop;
    uv_timer_t watchdog;
    bool watchdog_fired;
    struct ebb__httpd *srv;
    struct ebb__http *http;
    int http_closed;
    int srv_closed;
    int completed;
    char base[64];
    /* What the server saw. */
    int flaky_hits;
    int throttle_hits;
    int ratelimit_hits;
    uint64_t ratelimit_at[4];
    char seen_method[16];
    char seen_ua[64];
    char seen_x_test[16];
    char seen_body[64];
};

struct result {
    struct fx *f;
    int calls;
    int status;
    int error;
    int attempts;
    size_t body_len;
    char body[128];
    char headers[512];
    char message[256];
    bool close_client; /* close the client from inside the callback */
};

static void copy_str(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

static void handler(const struct ebb__httpd_request *req,
                    struct ebb__httpd_response *res, void *arg)
{
    struct fx *f = arg;
    if (strcmp(req->path, "/echo") == 0) {
        copy_str(f->seen_method, sizeof(f->seen_method), req->method);
        copy_str(f->seen_ua, sizeof(f->seen_ua),
                 ebb__httpd_header(req, "user-agent"));
        copy_str(f->seen_x_test, sizeof(f->seen_x_test),
                 ebb__httpd_header(req, "X-TEST"));
        copy_str(f->seen_body, sizeof(f->seen_body), req->body);
        ebb__httpd_add_header(res, "X-Reply", "yes");
        ebb__httpd_set_bodyf(res, "echo:%s", req->query);
    } else if (strcmp(req->path, "/throttle") == 0) {
        /* Throttles in the server's own words (a 400 and a code, as ECS
         * does) twice, then echoes. */
        copy_str(f->seen_body, sizeof(f->seen_body), req->body);
        copy_str(f->seen_x_test, sizeof(f->seen_x_test),
                 ebb__httpd_header(req, "X-TEST"));
        bool throttled = f->throttle_hits++ < 2;
        res->status = throttled ? 400 : 200;
        ebb__httpd_set_bodyf(res, "%s", throttled ? "{\"Code\":\"Throttling.User\"}"
                                                  : "ok");
    } else if (strcmp(req->path, "/slow") == 0) {
        res->delay_ms = 3000;
        ebb__httpd_set_bodyf(res, "late");
    } else if (strcmp(req->path, "/flaky") == 0) {
        bool first = f->flaky_hits++ == 0;
        res->status = first ? 503 : 200;
        ebb__httpd_set_bodyf(res, "%s", first ? "busy" : "ok");
    } else if (strcmp(req->path, "/ratelimit") == 0) {
        if (f->ratelimit_hits < 4)
            f->ratelimit_at[f->ratelimit_hits] = uv_hrtime();
        bool first = f->ratelimit_hits++ == 0;
        res->status = first ? 429 : 200;
        if (first)
            ebb__httpd_add_header(res, "Retry-After", "1");
        ebb__httpd_set_bodyf(res, "%s", first ? "slow down" : "ok");
    } else if (strcmp(req->path, "/down") == 0) {
        res->status = 503;
        ebb__httpd_set_bodyf(res, "down %llu", (unsigned long long)req->seq);
    } else if (strcmp(req->path, "/drop") == 0) {
        res->drop = true;
    } else if (strcmp(req->path, "/big") == 0) {
        char big[4096];
        memset(big, 'x', sizeof(big));
        ebb__httpd_set_body(res, big, sizeof(big));
    } else {
        res->status = 404;
        ebb__httpd_set_bodyf(res, "no such path: %s", req->path);
    }
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
    assert_int_equal(ebb__httpd_start(&f->srv, &f->loop, handler, f), 0);
    assert_int_equal(ebb__http_init(&f->http, &f->loop), 0);
    /* Short backoff keeps retry tests fast; Retry-After still applies. */
    ebb__http_set_backoff(f->http, 1, 10);
    copy_str(f->base, sizeof(f->base), ebb__httpd_url(f->srv));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->http != NULL)
        ebb__http_close(f->http, on_closed, &f->http_closed);
    ebb__httpd_close(f->srv, on_closed, &f->srv_closed);
    uv_close((uv_handle_t *)&f->watchdog, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(f->http_closed, 1);
    assert_int_equal(f->srv_closed, 1);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
    return 0;
}

/* Runs the loop until `*count` reaches `target`; fails on the watchdog. */
static void run_until(struct fx *f, const int *count, int target)
{
    while (*count < target && !f->watchdog_fired)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_false(f->watchdog_fired);
}

static void on_result(const struct ebb_http_response *res, void *arg)
{
    struct result *r = arg;
    assert_int_equal(res->struct_size, sizeof(*res));
    r->calls++;
    r->status = res->status;
    r->error = res->error;
    r->attempts = res->attempts;
    r->body_len = res->body_len;
    assert_non_null(res->body);
    assert_int_equal(res->body[res->body_len], '\0');
    copy_str(r->body, sizeof(r->body), res->body);
    copy_str(r->headers, sizeof(r->headers), res->headers);
    copy_str(r->message, sizeof(r->message), res->error_message);
    r->f->completed++;
    if (r->close_client) {
        ebb__http_close(r->f->http, on_closed, &r->f->http_closed);
        r->f->http = NULL;
    }
}

static void get(struct fx *f, const char *path, int max_attempts, ebb_dur_ms timeout,
                struct result *r)
{
    char url[128];
    snprintf(url, sizeof(url), "%s%s", f->base, path);
    struct ebb_http_request req = {
        .method = "GET", .url = url, .timeout = timeout, .max_attempts = max_attempts};
    r->f = f;
    assert_int_equal(ebb__http_request(f->http, &req, on_result, r), 0);
}

/* get(), then runs the loop until that request has completed. */
static void fetch(struct fx *f, const char *path, int max_attempts,
                  ebb_dur_ms timeout, struct result *r)
{
    int calls = r->calls;
    get(f, path, max_attempts, timeout, r);
    run_until(f, &r->calls, calls + 1);
}

/* Not checked by expect_result(). */
#define ANY INT_MIN

/* Checks a completed request's error, HTTP status and attempts. */
static void expect_result(const struct result *r, int error, int status,
                          int attempts)
{
    if (error != ANY)
        assert_int_equal(r->error, error);
    if (status != ANY)
        assert_int_equal(r->status, status);
    if (attempts != ANY)
        assert_int_equal(r->attempts, attempts);
}

static void many_concurrent(void **state)
{
    struct fx *f = *state;
    static struct result r[N_CONCURRENT];
    memset(r, 0, sizeof(r));
    for (int i = 0; i < N_CONCURRENT; i++) {
        char path[32];
        snprintf(path, sizeof(path), "/echo?%d", i);
        get(f, path, 0, 0, &r[i]);
    }
    run_until(f, &f->completed, N_CONCURRENT);
    for (int i = 0; i < N_CONCURRENT; i++) {
        char want[32];
        snprintf(want, sizeof(want), "echo:%d", i);
        assert_int_equal(r[i].calls, 1);
        expect_result(&r[i], 0, 200, 1);
        assert_string_equal(r[i].body, want);
    }
    assert_int_equal(ebb__httpd_requests(f->srv), N_CONCURRENT);
}

static void post_roundtrip(void **state)
{
    struct fx *f = *state;
    char url[128];
    snprintf(url, sizeof(url), "%s/echo?posted", f->base);
    const char *headers[] = {"X-Test: 42", "Content-Type: text/plain"};
    char body[] = "payload";
    struct ebb_http_request req = {.method = "POST", .url = url, .headers = headers,
                                   .n_headers = 2, .body = body,
                                   .body_len = strlen(body)};
    struct result r = {.f = f};
    assert_int_equal(ebb__http_request(f->http, &req, on_result, &r), 0);
    body[0] = 'X'; /* the client copied it */
    run_until(f, &r.calls, 1);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "echo:posted");
    assert_non_null(strstr(r.headers, "X-Reply: yes"));
    assert_string_equal(f->seen_method, "POST");
    assert_string_equal(f->seen_ua, "ebb/" EBB_VERSION);
    assert_string_equal(f->seen_x_test, "42");
    assert_string_equal(f->seen_body, "payload");
}

static void timeout_fires(void **state)
{
    struct fx *f = *state;
    struct result r = {0};
    uint64_t start = uv_hrtime();
    fetch(f, "/slow", 1, 200, &r);
    uint64_t took_ms = (uv_hrtime() - start) / 1000000;
    expect_result(&r, EBB_ETIMEDOUT, 0, 1);
    assert_true(r.message[0] != '\0');
    assert_true(took_ms >= 150 && took_ms < 2000);
}

static void retry_then_success(void **state)
{
    struct fx *f = *state;
    struct result r = {0};
    fetch(f, "/flaky", 0, 0, &r);
    expect_result(&r, 0, 200, 2);
    assert_string_equal(r.body, "ok");
    assert_int_equal(ebb__httpd_requests(f->srv), 2);
}

static void retry_after_is_honoured(void **state)
{
    struct fx *f = *state;
    struct result r = {0};
    fetch(f, "/ratelimit", 0, 0, &r);
    expect_result(&r, ANY, 200, 2);
    assert_int_equal(f->ratelimit_hits, 2);
    uint64_t waited_ms = (f->ratelimit_at[1] - f->ratelimit_at[0]) / 1000000;
    assert_true(waited_ms >= 950);
}

static void retries_stop_at_max_attempts(void **state)
{
    struct fx *f = *state;
    struct result r = {0};
    fetch(f, "/down", 3, 0, &r);
    expect_result(&r, 0, 503, 3);
    assert_string_equal(r.body, "down 3");
    assert_non_null(strstr(r.headers, "503"));
    assert_int_equal(ebb__httpd_requests(f->srv), 3);

    /* max_attempts 1 means no retry at all. */
    struct result once = {0};
    fetch(f, "/down", 1, 0, &once);
    assert_int_equal(once.attempts, 1);
    assert_int_equal(ebb__httpd_requests(f->srv), 4);
}

static void client_errors_not_retried(void **state)
{
    struct fx *f = *state;
    struct result r = {0};
    fetch(f, "/missing", 0, 0, &r);
    expect_result(&r, 0, 404, 1);
    assert_string_equal(r.body, "no such path: /missing");
}

static void connection_refused(void **state)
{
    struct fx *f = *state;
    uint16_t port;
    assert_int_equal(ebb__httpd_unused_port(&port), 0);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/x", (unsigned)port);
    struct ebb_http_request req = {.method = "GET", .url = url, .max_attempts = 3};
    struct result r = {.f = f};
    assert_int_equal(ebb__http_request(f->http, &req, on_result, &r), 0);
    run_until(f, &r.calls, 1);
    expect_result(&r, EBB_EIO, 0, 3);
    assert_true(r.message[0] != '\0');
}

static void dropped_connection(void **state)
{
    struct fx *f = *state;
    struct result r = {0};
    fetch(f, "/drop", 0, 0, &r);
    expect_result(&r, EBB_EPROTO, ANY, 1);
    assert_int_equal(ebb__httpd_requests(f->srv), 1);
}

static void response_size_capped(void **state)
{
    struct fx *f = *state;
    ebb__http_set_max_response(f->http, 1024);
    struct result r = {0};
    fetch(f, "/big", 0, 0, &r);
    expect_result(&r, EBB_EIO, ANY, 1);
    assert_non_null(strstr(r.message, "limit"));
}

/* A streamed download into the caller's buffer: a 2xx body fills it,
 * one longer fails, an error answer stays out of it. */
static void body_into_buffer(void **state)
{
    struct fx *f = *state;
    static unsigned char buf[4096];
    char url[128];
    const char *paths[] = {"/big", "/big", "/nope"};
    size_t caps[] = {sizeof(buf), sizeof(buf) - 1, sizeof(buf)};
    for (int i = 0; i < 3; i++) {
        memset(buf, 0, sizeof(buf));
        snprintf(url, sizeof(url), "%s%s", f->base, paths[i]);
        struct ebb_http_request req = {.method = "GET", .url = url, .max_attempts = 1};
        struct ebb__http_stream s = {.upload_fd = -1, .download_fd = -1,
                                     .download_buf = buf, .download_cap = caps[i]};
        struct result r = {.f = f};
        assert_int_equal(ebb__http_request_stream(f->http, &req, &s, on_result, &r), 0);
        run_until(f, &r.calls, 1);
        if (i == 0) {
            expect_result(&r, 0, 200, 1);
            assert_int_equal(s.downloaded, (int64_t)sizeof(buf));
            assert_int_equal(buf[0], 'x');
            assert_int_equal(buf[sizeof(buf) - 1], 'x');
            assert_int_equal(r.body_len, 0);
        } else if (i == 1) {
            expect_result(&r, EBB_EIO, ANY, 1);
            assert_non_null(strstr(r.message, "longer than the 4095 bytes asked for"));
        } else {
            expect_result(&r, 0, 404, 1);
            assert_int_equal(s.downloaded, 0);
            assert_int_equal(buf[0], 0);
            assert_non_null(strstr(r.body, "no such path"));
        }
    }
    struct ebb_http_request req = {.method = "GET", .url = url};
    struct ebb__http_stream both = {.upload_fd = -1, .download_fd = 0, .download_buf = buf,
                                    .download_cap = sizeof(buf)};
    struct result r = {.f = f};
    assert_int_equal(ebb__http_request_stream(f->http, &req, &both, on_result, &r),
                     EBB_EINVAL);
}

/* A streamed upload made by the caller as it is sent: read at the
 * offsets the attempt has got to, in as many calls as it likes; a source
 * that fails ends the request at once, not retried; a source with a file
 * as well is refused. */
struct made {
    const char *text;
    int calls;
    int64_t fail_at;   /* -1: never */
};

static ssize_t make_body(void *arg, int64_t offset, void *buf, size_t len)
{
    struct made *m = arg;
    m->calls++;
    if (m->fail_at >= 0 && offset >= m->fail_at)
        return EBB_EIO;
    size_t left = strlen(m->text) - (size_t)offset;
    size_t n = len < 3 ? len : 3;   /* short reads, to be asked again */
    n = n < left ? n : left;
    memcpy(buf, m->text + offset, n);
    return (ssize_t)n;
}

static void upload_made_as_sent(void **state)
{
    struct fx *f = *state;
    char url[128];
    snprintf(url, sizeof(url), "%s/echo", f->base);
    for (int fail = 0; fail < 2; fail++) {
        struct made m = {.text = "sealed as it goes", .fail_at = fail ? 6 : -1};
        struct ebb_http_request req = {.method = "PUT", .url = url, .max_attempts = 4};
        struct ebb__http_stream s = {.upload_fd = -1, .upload_read = make_body,
                                     .upload_arg = &m,
                                     .upload_len = (int64_t)strlen(m.text),
                                     .download_fd = -1};
        struct result r = {.f = f};
        f->seen_body[0] = '\0';
        assert_int_equal(ebb__http_request_stream(f->http, &req, &s, on_result, &r), 0);
        run_until(f, &r.calls, 1);
        if (!fail) {
            expect_result(&r, 0, 200, 1);
            assert_string_equal(f->seen_method, "PUT");
            assert_string_equal(f->seen_body, "sealed as it goes");
            assert_int_equal(m.calls, 6);
        } else {
            expect_result(&r, EBB_EIO, ANY, 1);
            assert_non_null(strstr(r.message, "could not read the body"));
            assert_int_equal(m.calls, 3);
        }
    }
    struct made m = {.text = "x", .fail_at = -1};
    struct ebb_http_request req = {.method = "PUT", .url = url};
    struct ebb__http_stream both = {.upload_fd = 0, .upload_read = make_body, .upload_arg = &m,
                                    .upload_len = 1, .download_fd = -1};
    struct result r = {.f = f};
    assert_int_equal(ebb__http_request_stream(f->http, &req, &both, on_result, &r),
                     EBB_EINVAL);
}

static void bad_requests_refused(void **state)
{
    struct fx *f = *state;
    struct result r = {.f = f};
    struct ebb_http_request no_url = {.method = "GET"};
    assert_int_equal(ebb__http_request(f->http, &no_url, on_result, &r), EBB_EINVAL);
    char url[128];
    snprintf(url, sizeof(url), "%s/echo", f->base);
    const char *evil[] = {"X-A: 1\r\nX-Injected: 1"};
    struct ebb_http_request inject = {.method = "GET", .url = url, .headers = evil,
                                      .n_headers = 1};
    assert_int_equal(ebb__http_request(f->http, &inject, on_result, &r), EBB_EINVAL);
    assert_int_equal(r.calls, 0);

    /* Only http and https are spoken. */
    struct ebb_http_request file = {.method = "GET", .url = "file:///etc/passwd"};
    assert_int_equal(ebb__http_request(f->http, &file, on_result, &r), 0);
    run_until(f, &r.calls, 1);
    expect_result(&r, EBB_EINVAL, ANY, 1);
}

/* ---- raw requests to the server ---------------------------------------- */

/* Bytes sent as they are, from a thread with a blocking socket while the
 * loop serves them; the first bytes of the answer come back. */
struct raw {
    uint16_t port;
    const char *data;
    size_t len;
    char answer[64];
    uv_async_t async;
    int done;
};

static void raw_thread(void *arg)
{
    struct raw *r = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(r->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        size_t sent = 0;
        while (sent < r->len) {
            ssize_t n = send(fd, r->data + sent, r->len - sent, MSG_NOSIGNAL);
            if (n <= 0)
                break;
            sent += (size_t)n;
        }
        size_t got = 0;
        while (got < sizeof(r->answer) - 1) {
            ssize_t n = recv(fd, r->answer + got, sizeof(r->answer) - 1 - got, 0);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        r->answer[got] = '\0';
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

/* Sends `len` bytes of `data` to the server and returns the first bytes
 * of its answer in `r->answer` ("" when it closed without a word). */
static void send_raw(struct fx *f, struct raw *r, const char *data, size_t len)
{
    unsigned port = 0;
    assert_int_equal(sscanf(f->base, "http://127.0.0.1:%u", &port), 1);
    *r = (struct raw){.port = (uint16_t)port, .data = data, .len = len};
    assert_int_equal(uv_async_init(&f->loop, &r->async, on_raw_done), 0);
    r->async.data = r;
    uv_thread_t t;
    assert_int_equal(uv_thread_create(&t, raw_thread, r), 0);
    run_until(f, &r->done, 1);
    uv_thread_join(&t);
}

/* A NUL in the request line or a header is a 400, and a head over the
 * 64 KiB cap a 431 even when it arrives whole; the server lives on and
 * answers the next request. */
static void hostile_heads_refused(void **state)
{
    struct fx *f = *state;
    struct raw r;
    static const char nul_line[] = "GET /echo\0x HTTP/1.1\r\nHost: a\r\n\r\n";
    send_raw(f, &r, nul_line, sizeof(nul_line) - 1);
    assert_int_equal(strncmp(r.answer, "HTTP/1.1 400 Bad Request\r\n", 26), 0);
    static const char nul_header[] = "GET /echo HTTP/1.1\r\nX-A: a\0b\r\n\r\n";
    send_raw(f, &r, nul_header, sizeof(nul_header) - 1);
    assert_int_equal(strncmp(r.answer, "HTTP/1.1 400 Bad Request\r\n", 26), 0);

    size_t big = 70 * 1024;
    char *head = malloc(big + 64);
    assert_non_null(head);
    int n = snprintf(head, 64, "GET /echo HTTP/1.1\r\nX-Big: ");
    memset(head + n, 'a', big);
    memcpy(head + n + big, "\r\n\r\n", 4);
    send_raw(f, &r, head, (size_t)n + big + 4);
    free(head);
    assert_int_equal(strncmp(r.answer, "HTTP/1.1 431 ", 13), 0);

    struct result ok = {.f = f};
    get(f, "/echo", 1, 0, &ok);
    run_until(f, &ok.calls, 1);
    expect_result(&ok, 0, 200, 1);
}

/* The head parser on its own, as a fuzzer sees it: bytes in, a status out. */
static int parse(const char *text, size_t len, struct ebb__http_head *h)
{
    return ebb__http_parse_head(text, len, h);
}

static void head_parser_statuses(void **state)
{
    (void)state;
    struct ebb__http_head h;
    static const char ok[] = "GET /a/b?x=1&y HTTP/1.1\r\nHost:  h \r\nContent-Length: 3\r\n\r\nabcGET";
    assert_int_equal(parse(ok, sizeof(ok) - 1, &h), EBB__HTTP_HEAD_DONE);
    assert_string_equal(h.method, "GET");
    assert_string_equal(h.target, "/a/b?x=1&y");
    assert_string_equal(h.path, "/a/b");
    assert_string_equal(h.query, "x=1&y");
    assert_string_equal(h.version, "HTTP/1.1");
    assert_string_equal(ebb__http_head_header(&h, "host"), "h");
    assert_int_equal(h.head_len, sizeof(ok) - 1 - 6);
    assert_int_equal(h.body_len, 3);
    assert_true(h.keep_alive);
    assert_false(h.head_only);
    ebb__http_head_free(&h);
    ebb__http_head_free(&h);

    /* Every prefix of a head is incomplete, not an error. */
    for (size_t n = 0; n < sizeof(ok) - 1 - 9; n++)
        assert_int_equal(parse(ok, n, &h), EBB__HTTP_HEAD_MORE);

    static const char http10[] = "HEAD / HTTP/1.0\r\n\r\n";
    assert_int_equal(parse(http10, sizeof(http10) - 1, &h), EBB__HTTP_HEAD_DONE);
    assert_false(h.keep_alive);
    assert_true(h.head_only);
    ebb__http_head_free(&h);

    static const struct {
        const char *text;
        size_t len;
        int status;
    } bad[] = {
        {"GET /\0 HTTP/1.1\r\n\r\n", 19, 400},
        {"GET / HTTP/1.1\r\nA: \0\r\n\r\n", 24, 400},
        {"GET/HTTP/1.1\r\n\r\n", 16, 400},
        {"\r\n\r\n", 4, 400},
        {"GET / HTTP/1.1\r\nno colon\r\n\r\n", 28, 400},
        {"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 38, 400},
        {"GET / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", 38, 400},
        {"GET / HTTP/1.1\r\nContent-Length: 16777217\r\n\r\n", 44, 400},
        {"GET / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 56, 400},
        {"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 46, 501},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(parse(bad[i].text, bad[i].len, &h), bad[i].status);

    /* 101 headers are too many, 100 are not. */
    char many[4096];
    size_t n = (size_t)snprintf(many, sizeof(many), "GET / HTTP/1.1\r\n");
    for (int i = 0; i < EBB__HTTP_HEADERS_MAX; i++)
        n += (size_t)snprintf(many + n, sizeof(many) - n, "H%d: v\r\n", i);
    memcpy(many + n, "\r\n", 2);
    assert_int_equal(parse(many, n + 2, &h), EBB__HTTP_HEAD_DONE);
    ebb__http_head_free(&h);
    n += (size_t)snprintf(many + n, sizeof(many) - n, "X: v\r\n\r\n");
    assert_int_equal(parse(many, n, &h), 400);

    /* The cap: a head of exactly EBB__HTTP_HEAD_MAX bytes passes; one byte
     * more is 431, and so is as much without an end. */
    size_t max = EBB__HTTP_HEAD_MAX;
    char *big = malloc(max + 2);
    assert_non_null(big);
    int top = snprintf(big, 64, "GET / HTTP/1.1\r\nX: ");
    memset(big + top, 'a', max + 1 - (size_t)top);
    memcpy(big + max - 4, "\r\n\r\n", 4);
    assert_int_equal(parse(big, max, &h), EBB__HTTP_HEAD_DONE);
    assert_int_equal(h.head_len, max);
    ebb__http_head_free(&h);
    big[max - 4] = 'a';
    memcpy(big + max - 3, "\r\n\r\n", 4);
    assert_int_equal(parse(big, max + 1, &h), 431);
    assert_int_equal(parse(big, max - 1, &h), EBB__HTTP_HEAD_MORE);
    memset(big + top, 'a', max + 1 - (size_t)top);
    assert_int_equal(parse(big, max, &h), 431);
    free(big);
}

static void close_cancels_in_flight(void **state)
{
    struct fx *f = *state;
    enum { N = 20 };
    struct result slow[N] = {0};
    struct result backing_off = {0};
    ebb__http_set_backoff(f->http, 5000, 5000);
    for (int i = 0; i < N; i++)
        get(f, "/slow", 0, 0, &slow[i]);
    get(f, "/down", 0, 0, &backing_off); /* will wait in its backoff timer */
    while (ebb__httpd_requests(f->srv) < N + 1 && !f->watchdog_fired)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_false(f->watchdog_fired);

    struct ebb__http *h = f->http;
    f->http = NULL;
    ebb__http_close(h, on_closed, &f->http_closed);
    for (int i = 0; i < N; i++) {
        assert_int_equal(slow[i].calls, 1);
        expect_result(&slow[i], EBB_ECANCELED, 0, ANY);
    }
    assert_int_equal(backing_off.calls, 1);
    expect_result(&backing_off, EBB_ECANCELED, ANY, 1);

    /* Closing has started: new requests are refused. */
    struct result late = {.f = f};
    struct ebb_http_request req = {.method = "GET", .url = f->base};
    assert_int_equal(ebb__http_request(h, &req, on_result, &late), EBB_ESHUTDOWN);
    ebb__http_close(h, on_closed, &f->http_closed); /* a second close is a no-op */
    run_until(f, &f->http_closed, 1);
    assert_int_equal(late.calls, 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(slow[i].calls, 1);
}

static void close_from_callback(void **state)
{
    struct fx *f = *state;
    enum { N = 5 };
    struct result fast = {.close_client = true};
    struct result slow[N] = {0};
    for (int i = 0; i < N; i++)
        get(f, "/slow", 0, 0, &slow[i]);
    get(f, "/echo?first", 0, 0, &fast);
    run_until(f, &f->http_closed, 1);
    assert_int_equal(fast.calls, 1);
    assert_int_equal(fast.status, 200);
    for (int i = 0; i < N; i++) {
        assert_int_equal(slow[i].calls, 1);
        assert_int_equal(slow[i].error, EBB_ECANCELED);
    }
    assert_int_equal(f->completed, N + 1);
}

static void parse_retry_after(void **state)
{
    (void)state;
    ebb_dur_ms ms = -1;
    assert_int_equal(ebb__http_parse_retry_after("HTTP/1.1 429 x\r\nretry-after: 7\r\n\r\n", &ms), 0);
    assert_int_equal(ms, 7000);
    assert_int_equal(ebb__http_parse_retry_after("HTTP/1.1 503 x\r\nRetry-After: 0\r\n\r\n", &ms), 0);
    assert_int_equal(ms, 0);
    /* Capped at 5 minutes, also for absurd values. */
    assert_int_equal(ebb__http_parse_retry_after(
                         "Retry-After: 99999999999999999999999\r\n", &ms), 0);
    assert_int_equal(ms, EBB__HTTP_RETRY_AFTER_CAP_MS);
    /* An HTTP-date counts from the response's own Date. */
    assert_int_equal(ebb__http_parse_retry_after(
                         "HTTP/1.1 503 x\r\n"
                         "Date: Wed, 21 Oct 2015 07:28:00 GMT\r\n"
                         "Retry-After: Wed, 21 Oct 2015 07:28:42 GMT\r\n\r\n",
                         &ms),
                     0);
    assert_int_equal(ms, 42000);
    assert_int_equal(ebb__http_parse_retry_after(
                         "Date: Wed, 21 Oct 2015 07:28:00 GMT\r\n"
                         "Retry-After: Wed, 21 Oct 2015 07:27:00 GMT\r\n",
                         &ms),
                     0);
    assert_int_equal(ms, 0);
    /* No Date to measure from, garbage, or nothing at all. */
    assert_int_equal(ebb__http_parse_retry_after(
                         "Retry-After: Wed, 21 Oct 2015 07:28:42 GMT\r\n", &ms),
                     EBB_ENOTFOUND);
    assert_int_equal(ebb__http_parse_retry_after("Retry-After: 5s\r\n", &ms),
                     EBB_ENOTFOUND);
    assert_int_equal(ebb__http_parse_retry_after("X-Retry-After: 5\r\n", &ms),
                     EBB_ENOTFOUND);
    assert_int_equal(ebb__http_parse_retry_after("", &ms), EBB_ENOTFOUND);
}

/* The hooks of one request: a body and header per attempt, and a
 * classifier that knows the server's throttling words. */
struct hooks {
    int prepared, classified, fail_at;
    char body[32], header[32];
    const char *lines[1];
};

static int prepare_attempt(void *arg, struct ebb_http_attempt *a)
{
    struct hooks *h = arg;
    assert_int_equal(a->struct_size, sizeof(*a));
    h->prepared++;
    if (a->attempt == h->fail_at)
        return EBB_EPERM;
    snprintf(h->body, sizeof(h->body), "attempt=%d", a->attempt);
    snprintf(h->header, sizeof(h->header), "X-Test: %d", a->attempt);
    h->lines[0] = h->header;
    a->body = h->body;
    a->body_len = strlen(h->body);
    a->headers = h->lines;
    a->n_headers = 1;
    return 0;
}

static int classify_throttling(void *arg, const struct ebb_http_response *res)
{
    struct hooks *h = arg;
    h->classified++;
    if (res->status == 400 && strstr(res->body, "Throttling") != NULL)
        return 1;
    return res->status == 503 ? 0 : -1;
}

static int post_hooked(struct fx *f, const char *path, struct hooks *h,
                       struct result *r)
{
    char url[128];
    snprintf(url, sizeof(url), "%s%s", f->base, path);
    struct ebb_http_request req = {
        .method = "POST", .url = url, .max_attempts = 4,
        .prepare = prepare_attempt, .classify = classify_throttling, .hook_arg = h};
    r->f = f;
    return ebb__http_request(f->http, &req, on_result, r);
}

/* Each attempt is prepared afresh; a 400 the classifier calls throttling
 * is retried like a 503 would be. */
static void prepare_and_classify_each_attempt(void **state)
{
    struct fx *f = *state;
    struct hooks h = {0};
    struct result r = {0};
    assert_int_equal(post_hooked(f, "/throttle", &h, &r), 0);
    run_until(f, &r.calls, 1);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.attempts, 3);
    assert_int_equal(h.prepared, 3);
    assert_int_equal(h.classified, 3); /* the good answer too */
    assert_string_equal(f->seen_body, "attempt=3");
    assert_string_equal(f->seen_x_test, "3");
}

/* The classifier may refuse a retry the host would make (a 503), and a
 * prepare hook that fails ends the request with its error. */
static void classifier_and_prepare_can_stop(void **state)
{
    struct fx *f = *state;
    struct hooks h = {0};
    struct result r = {0};
    assert_int_equal(post_hooked(f, "/down", &h, &r), 0);
    run_until(f, &r.calls, 1);
    assert_int_equal(r.status, 503);
    assert_int_equal(r.attempts, 1);
    struct hooks fail = {.fail_at = 2};
    struct result r2 = {0};
    assert_int_equal(post_hooked(f, "/throttle", &fail, &r2), 0);
    run_until(f, &r2.calls, 1);
    assert_int_equal(r2.error, EBB_EPERM);
    assert_int_equal(r2.attempts, 2);
    /* Failing the first attempt fails the call itself. */
    struct hooks first = {.fail_at = 1};
    assert_int_equal(post_hooked(f, "/throttle", &first, &r2), EBB_EPERM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_retry_after),
        cmocka_unit_test_setup_teardown(many_concurrent, setup, teardown),
        cmocka_unit_test_setup_teardown(post_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(timeout_fires, setup, teardown),
        cmocka_unit_test_setup_teardown(retry_then_success, setup, teardown),
        cmocka_unit_test_setup_teardown(prepare_and_classify_each_attempt, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(classifier_and_prepare_can_stop, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(retry_after_is_honoured, setup, teardown),
        cmocka_unit_test_setup_teardown(retries_stop_at_max_attempts, setup, teardown),
        cmocka_unit_test_setup_teardown(client_errors_not_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(connection_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(dropped_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(response_size_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(body_into_buffer, setup, teardown),
        cmocka_unit_test_setup_teardown(upload_made_as_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_requests_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(hostile_heads_refused, setup, teardown),
        cmocka_unit_test(head_parser_statuses),
        cmocka_unit_test_setup_teardown(close_cancels_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(close_from_callback, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
