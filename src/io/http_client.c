/* The HTTP client: libcurl's multi socket API on a libuv loop.
 *
 * The shape follows curl's docs/examples/multi-uv.c. libcurl tells us which
 * sockets to watch (CURLMOPT_SOCKETFUNCTION: one uv_poll_t per socket) and
 * when it next needs to run (CURLMOPT_TIMERFUNCTION: one uv_timer_t); that
 * glue is io/http_multi.c. Each poll or timer event is handed back through
 * curl_multi_socket_action(), after which finished transfers are always
 * collected (ebb__http_drain, here) with
 * curl_multi_info_read() -- also when no transfer is left running, because
 * the last one to finish is exactly the one that would be lost otherwise.
 *
 * A request keeps one easy handle for all its attempts; between attempts it
 * is out of the multi handle and a per-request uv_timer_t counts down the
 * backoff. The request's memory is freed in that timer's close callback, so
 * the client knows it has no handle left on the loop when the count of open
 * handles drops to zero.
 */
#include "io/http_client.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include <ebb/buf.h>
#include <ebb/list.h>

#include "base/log.h"
#include "ebb_build_config.h"
#include "io/http_retry.h"
#include "io/internal.h"

#define LOG_COMPONENT "http"

struct req {
    struct ebb__http *h;
    struct ebb_list node; /* on h->reqs */
    CURL *easy;
    struct curl_slist *headers;
    char *method;
    char *url;
    ebb_http_cb cb;
    void *arg;
    int attempts;
    int max_attempts;
    ebb_dur_ms backoff_base;
    ebb_http_prepare_fn prepare;
    ebb_http_classify_fn classify;
    void *hook_arg;
    bool in_multi;
    bool too_big;
    size_t max_response;
    /* A streamed transfer (ebb__http_request_stream), or NULL. */
    struct ebb__http_stream *stream;
    int64_t up_pos;        /* bytes of the upload sent in this attempt */
    enum { DOWN_UNKNOWN, DOWN_FILE, DOWN_MEMORY } down_mode; /* where the body goes */
    bool write_failed;
    bool read_failed;      /* a streamed upload's source failed: not retried */
    bool buf_full;         /* a 2xx body outgrew the stream's download_buf */
    uv_timer_t retry_timer;
    struct ebb_buf body;
    struct ebb_buf head;
    char errbuf[CURL_ERROR_SIZE];
};

static const char cancel_message[] = "canceled: the HTTP client was closed";

/* curl_global_init() is not thread-safe and neither is this flag; ebb
 * creates its clients on the one loop thread. */
static bool curl_ready;

/* splitmix64: tiny, fast and good enough for jitter. Seeded once per
 * client, so retries of many clients do not march in step. */
static uint64_t rng_next(struct ebb__http *h)
{
    h->rng += UINT64_C(0x9E3779B97F4A7C15);
    uint64_t z = h->rng;
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Appends to a response buffer; 0, or EBB_ENOMEM. */
static int buf_append(struct ebb_buf *b, const char *p, size_t n)
{
    ebb_buf_append(b, p, n);
    return b->failed ? EBB_ENOMEM : 0;
}

void ebb__http_handle_closed(struct ebb__http *h)
{
    if (--h->handles > 0 || !h->closing)
        return;
    void (*closed)(void *) = h->closed;
    void *arg = h->closed_arg;
    free(h->ca_file);
    free(h->pinned_key);
    free(h);
    if (closed != NULL)
        closed(arg);
}

static void req_closed(uv_handle_t *handle)
{
    struct req *r = handle->data;
    struct ebb__http *h = r->h;
    ebb_buf_free(&r->body);
    ebb_buf_free(&r->head);
    free(r->method);
    free(r->url);
    free(r);
    ebb__http_handle_closed(h);
}

/* Releases a request that is out of the multi handle and off the list. */
static void req_release(struct req *r)
{
    curl_easy_cleanup(r->easy);
    r->easy = NULL;
    curl_slist_free_all(r->headers);
    r->headers = NULL;
    uv_close((uv_handle_t *)&r->retry_timer, req_closed);
}

static void req_unlink(struct req *r)
{
    ebb_list_remove(&r->node);
}

static void req_detach(struct req *r)
{
    if (r->in_multi) {
        curl_multi_remove_handle(r->h->multi, r->easy);
        r->in_multi = false;
    }
}

/* Completes a request: its callback runs once, then it is released. */
static void req_finish(struct req *r, int error, const char *message, int status)
{
    req_detach(r);
    req_unlink(r);
    struct ebb_http_response res = {
        .struct_size = sizeof(struct ebb_http_response),
        .status = error ? 0 : status,
        .error = error,
        .error_message = error ? message : "",
        .body = (!error && r->body.data) ? r->body.data : "",
        .body_len = error ? 0 : r->body.len,
        .headers = r->head.data ? r->head.data : "",
        .attempts = r->attempts,
    };
    r->cb(&res, r->arg);
    req_release(r);
}

#define STREAM_ERROR_BODY_DEFAULT ((size_t)64 << 10)

/* A streamed download's bytes: a 2xx body goes to the file at its offset,
 * anything else (an error document) to memory, capped. Returns what curl
 * expects: n, or 0 to fail the transfer. */
static size_t stream_body(struct req *r, const char *ptr, size_t n)
{
    struct ebb__http_stream *s = r->stream;
    if (r->down_mode == DOWN_UNKNOWN) {
        long status = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        r->down_mode = status >= 200 && status < 300 ? DOWN_FILE : DOWN_MEMORY;
    }
    if (r->down_mode == DOWN_MEMORY) {
        size_t cap = s->max_error_body ? s->max_error_body : STREAM_ERROR_BODY_DEFAULT;
        if (r->body.len + n > cap) {
            r->too_big = true;
            return 0;
        }
        return buf_append(&r->body, ptr, n) == 0 ? n : 0;
    }
    if (s->download_fd < 0) {
        if ((uint64_t)s->downloaded + n > s->download_cap) {
            r->buf_full = true;
            return 0;
        }
        memcpy(s->download_buf + s->downloaded, ptr, n);
        s->downloaded += (int64_t)n;
        return n;
    }
    for (size_t done = 0; done < n;) {
        ssize_t w = pwrite(s->download_fd, ptr + done, n - done,
                           (off_t)(s->download_offset + s->downloaded));
        if (w <= 0) {
            r->write_failed = true;
            return 0;
        }
        done += (size_t)w;
        s->downloaded += w;
    }
    return n;
}

static bool streams_upload(const struct ebb__http_stream *s)
{
    return s != NULL && (s->upload_fd >= 0 || s->upload_read != NULL);
}

/* A streamed upload's bytes, read where this attempt has got to. */
static size_t stream_read(char *buf, size_t size, size_t nitems, void *userdata)
{
    struct req *r = userdata;
    const struct ebb__http_stream *s = r->stream;
    int64_t left = s->upload_len - r->up_pos;
    size_t want = size * nitems;
    if (left <= 0)
        return 0;
    if ((int64_t)want > left)
        want = (size_t)left;
    ssize_t n = s->upload_fd >= 0
                    ? pread(s->upload_fd, buf, want, (off_t)(s->upload_offset + r->up_pos))
                    : s->upload_read(s->upload_arg, r->up_pos, buf, want);
    if (n <= 0 || (size_t)n > want) { /* the source shrank or failed: never send short */
        r->read_failed = true;
        return CURL_READFUNC_ABORT;
    }
    r->up_pos += n;
    return (size_t)n;
}

/* curl rewinds an upload it must resend on a new connection. */
static int stream_seek(void *userdata, curl_off_t offset, int origin)
{
    struct req *r = userdata;
    if (origin != SEEK_SET || offset < 0 || offset > r->stream->upload_len)
        return CURL_SEEKFUNC_FAIL;
    r->up_pos = offset;
    return CURL_SEEKFUNC_OK;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct req *r = userdata;
    size_t n = size * nmemb;
    if (r->stream != NULL && (r->stream->download_fd >= 0 || r->stream->download_buf != NULL))
        return stream_body(r, ptr, n);
    if (r->head.len + r->body.len + n > r->max_response) {
        r->too_big = true;
        return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
    }
    return buf_append(&r->body, ptr, n) == 0 ? n : 0;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct req *r = userdata;
    size_t n = size * nmemb;
    /* A status line starts a new response (after "100 Continue", or a
     * proxy's reply to CONNECT); keep only the last one. */
    if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
        ebb_buf_clear(&r->head);
        r->down_mode = DOWN_UNKNOWN;
    }
    if (r->head.len + r->body.len + n > r->max_response) {
        r->too_big = true;
        return 0;
    }
    return buf_append(&r->head, ptr, n) == 0 ? n : 0;
}

static int set_headers(struct req *r, const char *const *lines, size_t n);
static int set_body(struct req *r, const void *body, size_t len);

/* What this attempt sends, when the request has a prepare hook. */
static int prepare_attempt(struct req *r)
{
    if (r->prepare == NULL)
        return 0;
    struct ebb_http_attempt a = {.struct_size = sizeof(a), .attempt = r->attempts};
    int rc = r->prepare(r->hook_arg, &a);
    if (rc == 0 && a.body != NULL && streams_upload(r->stream))
        rc = EBB_EINVAL;
    if (rc == 0 && a.headers != NULL)
        rc = set_headers(r, a.headers, a.n_headers);
    if (rc == 0 && a.body != NULL)
        rc = set_body(r, a.body, a.body_len);
    return rc;
}

static int attempt_start(struct req *r)
{
    r->attempts++;
    r->too_big = false;
    r->write_failed = false;
    r->read_failed = false;
    r->buf_full = false;
    r->down_mode = DOWN_UNKNOWN;
    r->up_pos = 0;
    if (r->stream != NULL)
        r->stream->downloaded = 0;
    r->errbuf[0] = '\0';
    ebb_buf_clear(&r->body);
    ebb_buf_clear(&r->head);
    int err = prepare_attempt(r);
    if (err != 0)
        return err;
    CURLMcode rc = curl_multi_add_handle(r->h->multi, r->easy);
    if (rc != CURLM_OK)
        return rc == CURLM_OUT_OF_MEMORY ? EBB_ENOMEM : EBB_EIO;
    r->in_multi = true;
    return 0;
}

static void on_retry(uv_timer_t *timer)
{
    struct req *r = timer->data;
    int err = attempt_start(r);
    if (err != 0)
        req_finish(r, err, "could not restart the request", 0);
}

/* Whether the attempt that just ended is tried again. */
static bool retry_it(struct req *r, CURLcode result, long status, const char *why)
{
    if (r->attempts >= r->max_attempts)
        return false;
    const struct ebb_http_response view = {
        .status = result == CURLE_OK ? (int)status : 0,
        .error = result == CURLE_OK ? 0 : ebb__http_error_of(result),
        .error_message = result == CURLE_OK ? "" : why,
        .body = result == CURLE_OK && r->body.data ? r->body.data : "",
        .body_len = result == CURLE_OK ? r->body.len : 0,
        .headers = r->head.data ? r->head.data : "",
        .attempts = r->attempts,
    };
    return ebb__http_should_retry(result, status, &view, r->classify, r->hook_arg);
}

static void on_transfer_done(struct req *r, CURLcode result)
{
    struct ebb__http *h = r->h;
    req_detach(r);

    long status = 0;
    if (result == CURLE_OK)
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);

    if (r->write_failed) {
        req_finish(r, EBB_EIO, "could not write the response to its file", 0);
        return;
    }
    if (r->read_failed) {
        req_finish(r, EBB_EIO, "could not read the body to send", 0);
        return;
    }
    if (r->buf_full) {
        char msg[128];
        snprintf(msg, sizeof(msg), "response longer than the %zu bytes asked for",
                 r->stream->download_cap);
        req_finish(r, EBB_EIO, msg, 0);
        return;
    }
    if (r->too_big || result == CURLE_FILESIZE_EXCEEDED) {
        char msg[128];
        snprintf(msg, sizeof(msg),
                 "response larger than the %zu-byte limit; ask the server "
                 "for less (paginate or filter)",
                 r->max_response);
        req_finish(r, EBB_EIO, msg, 0);
        return;
    }

    const char *why = r->errbuf[0] ? r->errbuf : curl_easy_strerror(result);
    char url[256];
    if (retry_it(r, result, status, why)) {
        ebb_dur_ms delay = ebb__http_retry_delay(r->backoff_base, h->backoff_cap,
                                                 r->attempts, rng_next(h));
        ebb_dur_ms server_asked;
        if (result == CURLE_OK &&
            ebb__http_parse_retry_after(r->head.data, &server_asked) == 0 &&
            server_asked > delay)
            delay = server_asked;
        char code[32];
        snprintf(code, sizeof(code), "HTTP %ld", status);
        ebb__http_loggable_url(r->url, url, sizeof(url));
        ebb__log(EBB_LOG_INFO, LOG_COMPONENT,
                 "%s %s: %s; retrying in %lld ms (attempt %d of %d)", r->method,
                 url, result == CURLE_OK ? code : why, (long long)delay,
                 r->attempts + 1, r->max_attempts);
        uv_timer_start(&r->retry_timer, on_retry, (uint64_t)delay, 0);
        return;
    }

    if (result != CURLE_OK) {
        ebb__http_loggable_url(r->url, url, sizeof(url));
        ebb__log(EBB_LOG_DEBUG, LOG_COMPONENT, "%s %s failed after %d attempt(s): %s",
                 r->method, url, r->attempts, why);
        req_finish(r, ebb__http_error_of(result), why, 0);
        return;
    }
    req_finish(r, 0, "", (int)status);
}

/* Collects every finished transfer. A completion callback may close the
 * client, which cancels the rest and destroys the multi handle, so the
 * loop checks for that before each read. */
void ebb__http_drain(struct ebb__http *h)
{
    for (;;) {
        if (h->closing)
            return;
        int left;
        CURLMsg *msg = curl_multi_info_read(h->multi, &left);
        if (msg == NULL)
            return;
        if (msg->msg != CURLMSG_DONE)
            continue;
        /* The message is freed by curl_multi_remove_handle(); copy it. */
        CURL *easy = msg->easy_handle;
        CURLcode result = msg->data.result;
        char *priv = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
        on_transfer_done((struct req *)(void *)priv, result);
    }
}

int ebb__http_init(struct ebb__http **out, uv_loop_t *loop)
{
    if (out == NULL || loop == NULL)
        return EBB_EINVAL;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return EBB_EIO;
        curl_ready = true;
    }
    struct ebb__http *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return EBB_ENOMEM;
    h->multi = curl_multi_init();
    if (h->multi == NULL) {
        free(h);
        return EBB_ENOMEM;
    }
    h->loop = loop;
    ebb_list_init(&h->reqs);
    ebb_list_init(&h->socks);
    h->backoff_base = EBB__HTTP_BACKOFF_BASE_MS;
    h->backoff_cap = EBB__HTTP_BACKOFF_CAP_MS;
    h->connect_timeout = EBB__HTTP_CONNECT_TIMEOUT_MS;
    h->max_response = EBB__HTTP_MAX_RESPONSE;
    if (getrandom(&h->rng, sizeof(h->rng), GRND_NONBLOCK) != (ssize_t)sizeof(h->rng))
        h->rng = uv_hrtime() ^ (uint64_t)(uintptr_t)h;

    ebb__http_multi_init(h);
    h->handles = 1;
    *out = h;
    return 0;
}

static void timer_closed(uv_handle_t *handle)
{
    ebb__http_handle_closed(handle->data);
}

void ebb__http_close(struct ebb__http *h, void (*closed)(void *arg), void *arg)
{
    if (h == NULL || h->closing)
        return;
    h->closing = true;
    h->closed = closed;
    h->closed_arg = arg;
    /* Callbacks may start requests (refused now) but cannot add to the
     * list, so this ends. */
    while (!ebb_list_empty(&h->reqs)) {
        struct req *r = ebb_list_entry(ebb_list_first(&h->reqs), struct req, node);
        uv_timer_stop(&r->retry_timer);
        req_finish(r, EBB_ECANCELED, cancel_message, 0);
    }
    /* Cleanup may still report sockets to remove (the connection cache);
     * on_socket closes their polls. Whatever curl did not report is closed
     * after it. */
    CURLM *multi = h->multi;
    h->multi = NULL;
    curl_multi_cleanup(multi);
    ebb__http_multi_close_socks(h);
    uv_close((uv_handle_t *)&h->timer, timer_closed);
}

static bool has_crlf(const char *s)
{
    return strpbrk(s, "\r\n") != NULL;
}

/* Sends `lines` ("Name: value") as the request's headers from now on. */
static int set_headers(struct req *r, const char *const *lines, size_t n)
{
    struct curl_slist *list = NULL;
    bool has_expect = false;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *line = lines[i];
        if (line == NULL || has_crlf(line)) {
            rc = EBB_EINVAL; /* would let a value smuggle in headers */
            break;
        }
        if (strncasecmp(line, "Expect:", 7) == 0)
            has_expect = true;
        struct curl_slist *l = curl_slist_append(list, line);
        if (l == NULL)
            rc = EBB_ENOMEM;
        else
            list = l;
    }
    /* curl would send "Expect: 100-continue" for large bodies and wait for
     * an interim reply that many servers never send. */
    if (rc == 0 && !has_expect) {
        struct curl_slist *l = curl_slist_append(list, "Expect:");
        if (l == NULL)
            rc = EBB_ENOMEM;
        else
            list = l;
    }
    if (rc != 0) {
        curl_slist_free_all(list);
        return rc;
    }
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, list);
    curl_slist_free_all(r->headers);
    r->headers = list;
    return 0;
}

/* Sends `body` from now on. COPYPOSTFIELDS copies, so the caller's buffer
 * may go away; its size must be set first so that binary bodies work. */
static int set_body(struct req *r, const void *body, size_t len)
{
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    return curl_easy_setopt(r->easy, CURLOPT_COPYPOSTFIELDS, (const char *)body) ==
                   CURLE_OK
               ? 0
               : EBB_ENOMEM;
}

/* Applies everything about the request to its easy handle. Returns 0 or
 * a negative code. */
static int req_setup(struct req *r, const struct ebb_http_request *req)
{
    struct ebb__http *h = r->h;
    CURL *e = r->easy;
    ebb_dur_ms timeout = req->timeout > 0 ? req->timeout : EBB__HTTP_TIMEOUT_MS;
    ebb_dur_ms connect = h->connect_timeout < timeout ? h->connect_timeout : timeout;
    int rc = set_headers(r, req->headers, req->n_headers);
    if (rc != 0)
        return rc;

    if (curl_easy_setopt(e, CURLOPT_URL, r->url) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_USERAGENT, "ebb/" EBB_VERSION) != CURLE_OK)
        return EBB_ENOMEM;
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    if (h->ca_file != NULL &&
        curl_easy_setopt(e, CURLOPT_CAINFO, h->ca_file) != CURLE_OK)
        return EBB_ENOMEM;
    curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)r);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    /* A pinned key stands in for the chain: ebbd's own certificate is
     * self-signed, so only its key can vouch for it, and the name check
     * goes with the chain. The pin is checked on every TLS connection. */
    bool pinned = h->pinned_key != NULL;
    if (pinned &&
        curl_easy_setopt(e, CURLOPT_PINNEDPUBLICKEY, h->pinned_key) != CURLE_OK)
        return EBB_EUNSUPPORTED;
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, pinned ? 0L : 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, pinned ? 0L : 2L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)connect);
    /* A body streamed to a file is bounded by the file, not by memory; a
     * HEAD's answer has none (its Content-Length is the object's size,
     * which the limit would refuse above 64 MiB). */
    bool to_file = r->stream != NULL &&
                   (r->stream->download_fd >= 0 || r->stream->download_buf != NULL);
    bool no_body = strcmp(r->method, "HEAD") == 0;
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE,
                     (curl_off_t)(to_file || no_body ? 0 : r->max_response));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, (void *)r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);

    /* curl picks the method from the options (GET, POST with a body, HEAD
     * with NOBODY); any other method, or a body on another method, needs
     * CUSTOMREQUEST on top. */
    bool is_head = strcmp(r->method, "HEAD") == 0;
    bool upload = streams_upload(r->stream);
    bool has_body = !is_head && !upload &&
                    (req->body != NULL || strcmp(r->method, "POST") == 0);
    /* Streamed bodies move in 128 KiB steps (curl's own tool uses 100
     * KiB): eight times fewer callbacks and system calls than the 16 KiB
     * default, for a bounded cost per transfer. */
    if (r->stream != NULL) {
        curl_easy_setopt(e, CURLOPT_BUFFERSIZE, (long)EBB__HTTP_STREAM_BUFFER);
        curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, (long)EBB__HTTP_STREAM_BUFFER);
    }
    if (upload) {
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE,
                         (curl_off_t)r->stream->upload_len);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, stream_read);
        curl_easy_setopt(e, CURLOPT_READDATA, (void *)r);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, stream_seek);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, (void *)r);
    } else if (is_head) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (has_body) {
        rc = set_body(r, req->body ? req->body : "", req->body_len);
        if (rc != 0)
            return rc;
    } else {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    }
    const char *natural = upload ? "PUT" : is_head ? "HEAD" : has_body ? "POST" : "GET";
    if (strcmp(r->method, natural) != 0 &&
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method) != CURLE_OK)
        return EBB_ENOMEM;
    return 0;
}

int ebb__http_request(struct ebb__http *h, const struct ebb_http_request *req,
                      ebb_http_cb cb, void *arg)
{
    return ebb__http_request_stream(h, req, NULL, cb, arg);
}

int ebb__http_request_stream(struct ebb__http *h, const struct ebb_http_request *req,
                             struct ebb__http_stream *s, ebb_http_cb cb, void *arg)
{
    if (s != NULL && ((streams_upload(s) && (req->body != NULL || s->upload_len < 0 ||
                                             s->upload_offset < 0)) ||
                      (s->upload_fd >= 0 && s->upload_read != NULL) ||
                      (s->download_fd >= 0 && s->download_offset < 0) ||
                      (s->download_fd >= 0 && s->download_buf != NULL)))
        return EBB_EINVAL;
    if (h == NULL || req == NULL || cb == NULL || req->method == NULL ||
        req->url == NULL || req->method[0] == '\0' || has_crlf(req->method) ||
        (req->body == NULL && req->body_len != 0) ||
        (req->n_headers > 0 && req->headers == NULL))
        return EBB_EINVAL;
    if (h->closing)
        return EBB_ESHUTDOWN;

    struct req *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return EBB_ENOMEM;
    r->h = h;
    r->cb = cb;
    r->arg = arg;
    r->max_attempts = req->max_attempts > 0 ? req->max_attempts : EBB__HTTP_MAX_ATTEMPTS;
    r->backoff_base = req->retry_backoff > 0 ? req->retry_backoff : h->backoff_base;
    r->prepare = req->prepare;
    r->classify = req->classify;
    r->hook_arg = req->hook_arg;
    r->max_response = h->max_response;
    r->stream = s;
    r->method = strdup(req->method);
    r->url = strdup(req->url);
    r->easy = curl_easy_init();
    int err = EBB_ENOMEM;
    if (r->method != NULL && r->url != NULL && r->easy != NULL)
        err = req_setup(r, req);
    if (err != 0) {
        curl_easy_cleanup(r->easy);
        curl_slist_free_all(r->headers);
        free(r->method);
        free(r->url);
        free(r);
        return err;
    }

    uv_timer_init(h->loop, &r->retry_timer);
    r->retry_timer.data = r;
    h->handles++;
    ebb_list_insert_head(&h->reqs, &r->node);

    err = attempt_start(r);
    if (err != 0) {
        req_unlink(r);
        req_release(r);
        return err;
    }
    return 0;
}

void ebb__http_set_backoff(struct ebb__http *h, ebb_dur_ms base, ebb_dur_ms cap)
{
    h->backoff_base = base > 0 ? base : 0;
    h->backoff_cap = cap > 0 ? cap : 0;
}

void ebb__http_set_connect_timeout(struct ebb__http *h, ebb_dur_ms timeout)
{
    h->connect_timeout = timeout > 0 ? timeout : EBB__HTTP_CONNECT_TIMEOUT_MS;
}

/* Replaces the string in *slot with a copy of `value` (NULL clears it).
 * Returns 0, or EBB_ENOMEM with *slot unchanged. */
static int replace_string(char **slot, const char *value)
{
    char *copy = NULL;
    if (value != NULL) {
        copy = strdup(value);
        if (copy == NULL)
            return EBB_ENOMEM;
    }
    free(*slot);
    *slot = copy;
    return 0;
}

int ebb__http_set_ca_file(struct ebb__http *h, const char *path)
{
    return replace_string(&h->ca_file, path);
}

int ebb__http_set_pinned_key(struct ebb__http *h, const char *pin)
{
    return replace_string(&h->pinned_key, pin);
}

void ebb__http_set_max_response(struct ebb__http *h, size_t bytes)
{
    h->max_response = bytes > 0 ? bytes : EBB__HTTP_MAX_RESPONSE;
}
