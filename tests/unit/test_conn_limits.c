/* The connection limits of the HTTP server (src/io/httpd.c) and of the API
 * socket's server (src/io/api_server.c): caps, buffers that stay bounded
 * when a client pipelines without reading, and the header and idle
 * timeouts (#15 finding 5).
 *
 * The servers run on a real loop with real sockets, their deadlines on a
 * virtual clock that each test steps, so no test sleeps: a timeout fires
 * exactly when the test moves the clock past it. Clients are plain
 * non-blocking sockets in the test's own thread; the loop is turned until
 * what the test waits for is true, within a watchdog of a few seconds.
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
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "io/api_server.h"
#include "io/clock.h"
#include "io/httpd.h"

#define WATCHDOG_NS (5ull * 1000 * 1000 * 1000)
#define HEADER_MS 5000
#define IDLE_MS 20000

struct fx {
    uv_loop_t loop;
    struct ebb__clock clock;
    struct ebb__httpd *srv;
    int srv_closed;
    uint16_t port;
};

static void on_closed(void *arg)
{
    (*(int *)arg)++;
}

static void handler(const struct ebb__httpd_request *req,
                    struct ebb__httpd_response *res, void *arg)
{
    (void)arg;
    if (strcmp(req->path, "/big") == 0) {
        static char big[4096];
        memset(big, 'x', sizeof(big));
        ebb__httpd_set_body(res, big, sizeof(big));
        return;
    }
    ebb__httpd_set_bodyf(res, "ok");
}

static struct fx *start(unsigned max_connections)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    ebb__clock_init_virtual(&f->clock, 1000000);
    assert_int_equal(ebb__httpd_start(&f->srv, &f->loop, handler, f), 0);
    struct ebb__httpd_limits lim = {.max_connections = max_connections,
                                    .header_timeout = HEADER_MS,
                                    .idle_timeout = IDLE_MS,
                                    .clock = &f->clock};
    assert_int_equal(ebb__httpd_set_limits(f->srv, &lim), 0);
    f->port = ebb__httpd_port(f->srv);
    return f;
}

static void stop(struct fx *f)
{
    ebb__httpd_close(f->srv, on_closed, &f->srv_closed);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(f->srv_closed, 1);
    ebb__clock_close(&f->clock, NULL);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
}

/* Turns the loop (without blocking) until `cond` holds; fails after the
 * watchdog. */
#define SPIN_UNTIL(f, cond)                                                   \
    do {                                                                      \
        uint64_t spin_end_ = uv_hrtime() + WATCHDOG_NS;                       \
        while (!(cond) && uv_hrtime() < spin_end_) {                          \
            uv_run(&(f)->loop, UV_RUN_NOWAIT);                                \
            usleep(200);                                                      \
        }                                                                     \
        if (!(cond))                                                          \
            fail_msg("timed out waiting for: %s", #cond);                     \
    } while (0)

/* Steps the virtual clock by `ms` and runs what fell due. */
static void advance(struct fx *f, ebb_dur_ms ms)
{
    ebb__clock_run_until(&f->clock, ebb__clock_now(&f->clock) + ms);
}

static int tcp_client(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
    return fd;
}

/* Sends all of `text`, then turns the loop until the peer's kernel has it
 * and the server has had a turn to read it. */
static void send_all(struct fx *f, int fd, const char *text)
{
    size_t len = strlen(text);
    assert_int_equal(send(fd, text, len, MSG_NOSIGNAL), (ssize_t)len);
    int queued = 1;
    SPIN_UNTIL(f, ioctl(fd, SIOCOUTQ, &queued) == 0 && queued == 0);
    for (int i = 0; i < 3; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
}

/* 1 once the server closed `fd` (EOF or reset), 0 while it is open and
 * has nothing to read; what it could read is appended to buf. */
static int peer_closed(int fd, char *buf, size_t size)
{
    size_t used = strlen(buf);
    ssize_t n = recv(fd, buf + used, size - 1 - used, MSG_DONTWAIT);
    if (n > 0) {
        buf[used + (size_t)n] = '\0';
        return 0;
    }
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

static void expect_open(struct fx *f, int fd)
{
    char buf[256] = "";
    for (int i = 0; i < 3; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(peer_closed(fd, buf, sizeof(buf)), 0);
}

static void expect_closed(struct fx *f, int fd, const char *answer_prefix)
{
    char buf[4096] = "";
    SPIN_UNTIL(f, peer_closed(fd, buf, sizeof(buf)));
    assert_int_equal(strncmp(buf, answer_prefix, strlen(answer_prefix)), 0);
}

/* ---- httpd --------------------------------------------------------------- */

static void httpd_caps_connections(void **state)
{
    (void)state;
    struct fx *f = start(2);
    int a = tcp_client(f->port), b = tcp_client(f->port);
    SPIN_UNTIL(f, ebb__httpd_stats(f->srv).open == 2);
    int c = tcp_client(f->port);
    SPIN_UNTIL(f, ebb__httpd_stats(f->srv).refused == 1);
    expect_closed(f, c, ""); /* accepted and closed: no answer */
    close(c);
    assert_int_equal(ebb__httpd_stats(f->srv).open, 2);

    /* A slot freed is a slot taken, and the two still open are served. */
    close(a);
    SPIN_UNTIL(f, ebb__httpd_stats(f->srv).open == 1);
    int d = tcp_client(f->port);
    SPIN_UNTIL(f, ebb__httpd_stats(f->srv).open == 2);
    char buf[256] = "";
    send_all(f, d, "GET / HTTP/1.1\r\n\r\n");
    SPIN_UNTIL(f, (peer_closed(d, buf, sizeof(buf)), strstr(buf, "\r\n\r\nok") != NULL));
    assert_int_equal(strncmp(buf, "HTTP/1.1 200 OK\r\n", 17), 0);
    assert_int_equal(ebb__httpd_stats(f->srv).refused, 1);
    close(b);
    close(d);
    stop(f);
}

static void httpd_header_timeout(void **state)
{
    (void)state;
    struct fx *f = start(0);
    /* Nothing sent at all: closed at the header timeout. */
    int quiet = tcp_client(f->port);
    SPIN_UNTIL(f, ebb__httpd_stats(f->srv).open == 1);
    advance(f, HEADER_MS - 1);
    expect_open(f, quiet);
    advance(f, 1);
    expect_closed(f, quiet, "");
    close(quiet);

    /* A head sent a byte now and then: its bytes do not move the
     * deadline, counted from the accept; it gets a 408. */
    int slow = tcp_client(f->port);
    SPIN_UNTIL(f, ebb__httpd_stats(f->srv).open == 1);
    send_all(f, slow, "GET / HT");
    advance(f, HEADER_MS / 2);
    send_all(f, slow, "TP/1.1\r\nHost: a\r\n");
    advance(f, HEADER_MS / 2 - 1);
    expect_open(f, slow);
    advance(f, 1);
    expect_closed(f, slow, "HTTP/1.1 408 Request Timeout\r\n");
    close(slow);

    /* A body that stops coming: closed an idle timeout after its last byte. */
    int body = tcp_client(f->port);
    send_all(f, body, "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n12345");
    advance(f, IDLE_MS - 1);
    expect_open(f, body);
    send_all(f, body, "6");
    advance(f, IDLE_MS - 1);
    expect_open(f, body);
    advance(f, 1);
    expect_closed(f, body, "HTTP/1.1 408 ");
    close(body);
    assert_int_equal(ebb__httpd_stats(f->srv).timed_out, 3);
    stop(f);
}

static void httpd_idle_timeout(void **state)
{
    (void)state;
    struct fx *f = start(0);
    int fd = tcp_client(f->port);
    char buf[512] = "";
    send_all(f, fd, "GET / HTTP/1.1\r\n\r\n");
    SPIN_UNTIL(f, (peer_closed(fd, buf, sizeof(buf)), strstr(buf, "\r\n\r\nok") != NULL));
    /* Kept alive: the idle timeout, not the header timeout, applies. */
    advance(f, IDLE_MS - 1);
    expect_open(f, fd);
    advance(f, 1);
    expect_closed(f, fd, "");
    close(fd);
    assert_int_equal(ebb__httpd_stats(f->srv).timed_out, 1);
    stop(f);
}

/* A client pipelines requests for 4 KiB answers and reads none: the server
 * stops reading once its answer cannot be written, so the client's sends
 * stall after the kernel's socket buffers fill (a few MiB on loopback,
 * far below the 64 MiB the client would send); the server keeps at most
 * 128 KiB of input and closes the connection at the idle timeout. */
static void httpd_pipelining_bounded(void **state)
{
    (void)state;
    struct fx *f = start(0);
    int fd = tcp_client(f->port);
    static const char req[] = "GET /big HTTP/1.1\r\n\r\n";
    size_t sent = 0, stalled = 0;
    char chunk[64 * 1024];
    for (size_t i = 0; i + sizeof(req) - 1 <= sizeof(chunk); i += sizeof(req) - 1)
        memcpy(chunk + i, req, sizeof(req) - 1);
    size_t chunk_len = sizeof(chunk) / (sizeof(req) - 1) * (sizeof(req) - 1);
    while (sent < ((size_t)64 << 20) && stalled < 200) {
        ssize_t n = send(fd, chunk, chunk_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        stalled = n > 0 ? 0 : stalled + 1;
        sent += n > 0 ? (size_t)n : 0;
        uv_run(&f->loop, UV_RUN_NOWAIT);
        if (n <= 0)
            usleep(500);
    }
    struct ebb__httpd_stats st = ebb__httpd_stats(f->srv);
    print_message("sent %zu bytes of requests; %llu answered; input peak %zu\n",
                  sent, (unsigned long long)ebb__httpd_requests(f->srv), st.input_peak);
    assert_true(stalled >= 200); /* the server stopped taking requests */
    assert_true(sent < ((size_t)64 << 20));
    assert_true(st.input_peak <= 128 * 1024);
    advance(f, IDLE_MS);
    SPIN_UNTIL(f, ebb__httpd_stats(f->srv).open == 0);
    assert_int_equal(ebb__httpd_stats(f->srv).timed_out, 1);
    close(fd);
    stop(f);
}

/* ---- api_server ------------------------------------------------------------ */

struct afx {
    uv_loop_t loop;
    struct ebb__clock clock;
    struct ebb__api_server *srv;
    char path[108];
    int closed;
    int calls;
};

static void api_echo(void *ctx, struct ebb__api_call *call)
{
    struct afx *f = ctx;
    f->calls++;
    static char big[4096];
    memset(big, 'x', sizeof(big) - 1);
    ebb__api_reply(call, json_pack("{s:s}", "text", big));
}

/* An answer of more than EBB__API_MAX_MESSAGE. */
static void api_huge(void *ctx, struct ebb__api_call *call)
{
    struct afx *f = ctx;
    f->calls++;
    size_t len = EBB__API_MAX_MESSAGE + 1024;
    char *big = malloc(len + 1);
    assert_non_null(big);
    memset(big, 'x', len);
    big[len] = '\0';
    ebb__api_reply(call, json_pack("{s:s}", "text", big));
    free(big);
}

static const struct ebb__api_method api_methods[] = {
    {"echo", api_echo},
    {"huge", api_huge},
    {NULL, NULL},
};

static struct afx *api_start(unsigned max_connections)
{
    struct afx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    ebb__clock_init_virtual(&f->clock, 1000000);
    snprintf(f->path, sizeof(f->path), "/tmp/ebb-test-limits-%ld.sock", (long)getpid());
    char err[256];
    assert_int_equal(ebb__api_server_start(&f->srv, &f->loop, f->path, 0600, NULL,
                                           api_methods, f, err, sizeof(err)),
                     0);
    struct ebb__api_limits lim = {.max_connections = max_connections,
                                  .request_timeout = HEADER_MS,
                                  .idle_timeout = IDLE_MS,
                                  .clock = &f->clock};
    assert_int_equal(ebb__api_server_set_limits(f->srv, &lim), 0);
    return f;
}

static void api_stop(struct afx *f)
{
    ebb__api_server_close(f->srv, on_closed, &f->closed);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(f->closed, 1);
    ebb__clock_close(&f->clock, NULL);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
}

static int unix_client(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
    return fd;
}

static void api_advance(struct afx *f, ebb_dur_ms ms)
{
    ebb__clock_run_until(&f->clock, ebb__clock_now(&f->clock) + ms);
}

/* As send_all, for the API server's loop. */
static void api_send(struct afx *f, int fd, const char *text)
{
    size_t len = strlen(text);
    assert_int_equal(send(fd, text, len, MSG_NOSIGNAL), (ssize_t)len);
    int queued = 1;
    SPIN_UNTIL(f, ioctl(fd, SIOCOUTQ, &queued) == 0 && queued == 0);
    for (int i = 0; i < 3; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
}

static void api_expect_open(struct afx *f, int fd)
{
    char buf[256] = "";
    for (int i = 0; i < 3; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(peer_closed(fd, buf, sizeof(buf)), 0);
}

static void api_caps_connections(void **state)
{
    (void)state;
    /* A cap of 4: one user (this test's) may hold 2 of them. */
    struct afx *f = api_start(4);
    int a = unix_client(f->path), b = unix_client(f->path);
    SPIN_UNTIL(f, ebb__api_server_stats(f->srv).open == 2);
    int c = unix_client(f->path);
    char buf[1024] = "";
    SPIN_UNTIL(f, peer_closed(c, buf, sizeof(buf)));
    assert_non_null(strstr(buf, "\"code\":\"busy\""));
    assert_non_null(strstr(buf, "this user has half of the API connections ebbd "
                                "allows open (api.max_connections)"));
    assert_int_equal(ebb__api_server_stats(f->srv).refused, 1);
    close(c);

    /* The two open ones are served; a closed one frees its slot. */
    char answer[8192] = "";
    api_send(f, a, "{\"id\":7,\"method\":\"echo\"}\n");
    SPIN_UNTIL(f, (peer_closed(a, answer, sizeof(answer)), strchr(answer, '\n') != NULL));
    assert_non_null(strstr(answer, "\"id\":7"));
    assert_non_null(strstr(answer, "\"result\""));
    close(b);
    SPIN_UNTIL(f, ebb__api_server_stats(f->srv).open == 1);
    int d = unix_client(f->path);
    SPIN_UNTIL(f, ebb__api_server_stats(f->srv).open == 2);
    close(a);
    close(d);
    api_stop(f);
}

static void api_timeouts(void **state)
{
    (void)state;
    struct afx *f = api_start(0);
    /* Half a message: closed at the request timeout from the accept. */
    int half = unix_client(f->path);
    SPIN_UNTIL(f, ebb__api_server_stats(f->srv).open == 1);
    api_send(f, half, "{\"id\":1,\"meth");
    api_advance(f, HEADER_MS - 1);
    api_expect_open(f, half);
    api_advance(f, 1);
    char buf[8192] = "";
    SPIN_UNTIL(f, peer_closed(half, buf, sizeof(buf)));
    assert_string_equal(buf, "");
    close(half);
    assert_int_equal(f->calls, 0);

    /* After an answer the idle timeout applies. */
    int idle = unix_client(f->path);
    api_send(f, idle, "{\"id\":2,\"method\":\"echo\"}\n");
    SPIN_UNTIL(f, (peer_closed(idle, buf, sizeof(buf)), strchr(buf, '\n') != NULL));
    api_advance(f, IDLE_MS - 1);
    api_expect_open(f, idle);
    api_advance(f, 1);
    buf[0] = '\0';
    SPIN_UNTIL(f, peer_closed(idle, buf, sizeof(buf)));
    close(idle);
    assert_int_equal(ebb__api_server_stats(f->srv).timed_out, 2);
    SPIN_UNTIL(f, ebb__api_server_stats(f->srv).open == 0);
    api_stop(f);
}

/* A request of EBB__API_MAX_REQUEST bytes is answered; a longer one is
 * answered bad_request without being kept. */
static void api_request_size(void **state)
{
    (void)state;
    struct afx *f = api_start(0);
    size_t max = EBB__API_MAX_REQUEST;
    char *big = malloc(max + 3);
    assert_non_null(big);
    static const char head[] = "{\"id\":3,\"method\":\"echo\",\"params\":{\"pad\":\"";
    memcpy(big, head, sizeof(head) - 1);
    memset(big + sizeof(head) - 1, 'p', max - (sizeof(head) - 1) - 4);
    memcpy(big + max - 4, "\"}}\n", 4);
    int fd = unix_client(f->path);
    char buf[8192] = "";
    size_t sent = 0;
    while (sent < max) {
        ssize_t n = send(fd, big + sent, max - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        sent += n > 0 ? (size_t)n : 0;
        uv_run(&f->loop, UV_RUN_NOWAIT);
    }
    SPIN_UNTIL(f, (peer_closed(fd, buf, sizeof(buf)), strchr(buf, '\n') != NULL));
    assert_non_null(strstr(buf, "\"id\":3"));
    close(fd);

    /* One byte more: read to its end, dropped and answered; the
     * connection goes on. */
    memset(big, 'x', max + 1);
    big[max + 1] = '\n';
    fd = unix_client(f->path);
    sent = 0;
    while (sent < max + 2) {
        ssize_t n = send(fd, big + sent, max + 2 - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        sent += n > 0 ? (size_t)n : 0;
        uv_run(&f->loop, UV_RUN_NOWAIT);
    }
    buf[0] = '\0';
    SPIN_UNTIL(f, (peer_closed(fd, buf, sizeof(buf)), strchr(buf, '\n') != NULL));
    assert_non_null(strstr(buf, "\"code\":\"bad_request\""));
    if (strstr(buf, "a request may be at most 1024 KiB") == NULL)
        fail_msg("answer: %s", buf);
    buf[0] = '\0';
    api_send(f, fd, "{\"id\":4,\"method\":\"echo\"}\n");
    SPIN_UNTIL(f, (peer_closed(fd, buf, sizeof(buf)), strchr(buf, '\n') != NULL));
    assert_non_null(strstr(buf, "\"id\":4"));
    close(fd);
    free(big);
    assert_int_equal(f->calls, 2);
    api_stop(f);
}

/* An answer over EBB__API_MAX_MESSAGE, which no client reads, is replaced
 * by the error too_large ("answer too large: N bytes, ..."); the
 * connection goes on (#16 point 11). */
static void api_answer_size(void **state)
{
    (void)state;
    struct afx *f = api_start(0);
    int fd = unix_client(f->path);
    char buf[8192] = "";
    api_send(f, fd, "{\"id\":8,\"method\":\"huge\"}\n");
    SPIN_UNTIL(f, (peer_closed(fd, buf, sizeof(buf)), strchr(buf, '\n') != NULL));
    assert_non_null(strstr(buf, "\"id\":8"));
    assert_non_null(strstr(buf, "\"code\":\"too_large\""));
    if (strstr(buf, "answer too large: 16778269 bytes, more than the 16 MiB an answer "
                    "may hold") == NULL)
        fail_msg("answer: %.300s", buf);
    buf[0] = '\0';
    api_send(f, fd, "{\"id\":9,\"method\":\"echo\"}\n");
    SPIN_UNTIL(f, (peer_closed(fd, buf, sizeof(buf)), strchr(buf, '\n') != NULL));
    assert_non_null(strstr(buf, "\"id\":9"));
    close(fd);
    api_stop(f);
}

/* A client sends calls for 4 KiB answers and reads none: ebbd stops taking
 * calls once 4 MiB of answers wait, its sends stall, and the connection is
 * dropped at the idle timeout with what was queued. */
static void api_pipelining_bounded(void **state)
{
    (void)state;
    struct afx *f = api_start(0);
    int fd = unix_client(f->path);
    static const char req[] = "{\"id\":1,\"method\":\"echo\"}\n";
    char chunk[64 * 1024];
    size_t per = sizeof(req) - 1, chunk_len = sizeof(chunk) / per * per;
    for (size_t i = 0; i < chunk_len; i += per)
        memcpy(chunk + i, req, per);
    size_t sent = 0, stalled = 0;
    while (sent < ((size_t)64 << 20) && stalled < 200) {
        ssize_t n = send(fd, chunk, chunk_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        stalled = n > 0 ? 0 : stalled + 1;
        sent += n > 0 ? (size_t)n : 0;
        uv_run(&f->loop, UV_RUN_NOWAIT);
        if (n <= 0)
            usleep(500);
    }
    print_message("sent %zu calls; %d answered\n", sent / per, f->calls);
    assert_true(stalled >= 200);
    /* 4 MiB of 4 KiB answers, what the socket holds, and MAX_CALLS. */
    assert_true(f->calls < 2000);
    api_advance(f, IDLE_MS);
    SPIN_UNTIL(f, ebb__api_server_stats(f->srv).open == 0);
    assert_int_equal(ebb__api_server_stats(f->srv).timed_out, 1);
    close(fd);
    api_stop(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(httpd_caps_connections),
        cmocka_unit_test(httpd_header_timeout),
        cmocka_unit_test(httpd_idle_timeout),
        cmocka_unit_test(httpd_pipelining_bounded),
        cmocka_unit_test(api_caps_connections),
        cmocka_unit_test(api_timeouts),
        cmocka_unit_test(api_request_size),
        cmocka_unit_test(api_pipelining_bounded),
        cmocka_unit_test(api_answer_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
