/* The object-store client (src/objstore) against real servers on
 * 127.0.0.1: the strict fake (fake_s3.py: botocore recomputes every
 * signature and checks S3's rules), s3rver 3.7.1 (a real S3
 * implementation no one here wrote), and a file:// directory.
 *
 * What is proved: every operation (put, get with range, head, delete,
 * list with continuation, multipart create / part / complete / abort) with
 * signatures botocore accepts, path-style and virtual-host addressing,
 * presigned GET / PUT / UploadPart URLs used with no keys at all (and an
 * expired one refused), 503 SlowDown, 500 and CompleteMultipartUpload's
 * 200-with-Error retried within the bound and reported after it, a wrong
 * secret refused, and the memory a 96 MiB round trip costs (the stream
 * bound, not the object's size).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "io/http_client.h"
#include "objstore/objstore.h"
#include "servers.h"

#define BUCKET "ckpt"

static uv_loop_t loop;
static struct ebb__http *http;
static ebb_dur_ms clock_offset; /* added to the wall clock: for expired URLs */

static ebb_time_ms wall_now(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (ebb_time_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + clock_offset;
}

/* ---- running one operation ---- */

struct got {
    int done;
    int status, http_status, attempts;
    char code[64], etag[256], upload_id[256], message[1024];
    int64_t size;
    size_t n;
    char keys[16][128];
    int64_t sizes[16];
    char upload_ids[16][64];
    int has_next; /* mpu_list_page: r->next, copied */
    char next_key[256], next_upload[256];
};

static void on_done(void *arg, const struct ebb__objstore_result *r)
{
    struct got *g = arg;
    g->done = 1;
    g->status = r->status;
    g->http_status = r->http_status;
    g->attempts = r->attempts;
    snprintf(g->code, sizeof(g->code), "%s", r->code);
    snprintf(g->etag, sizeof(g->etag), "%s", r->etag);
    snprintf(g->upload_id, sizeof(g->upload_id), "%s", r->upload_id);
    snprintf(g->message, sizeof(g->message), "%s", r->message);
    g->size = r->size;
    g->n = r->n_entries;
    for (size_t i = 0; i < r->n_entries && i < 16; i++) {
        snprintf(g->keys[i], sizeof(g->keys[i]), "%s", r->entries[i].key);
        g->sizes[i] = r->entries[i].size;
        snprintf(g->upload_ids[i], sizeof(g->upload_ids[i]), "%s",
                 r->entries[i].upload_id ? r->entries[i].upload_id : "");
    }
    g->has_next = r->next != NULL;
    if (r->next != NULL) {
        snprintf(g->next_key, sizeof(g->next_key), "%s", r->next->key);
        snprintf(g->next_upload, sizeof(g->next_upload), "%s",
                 r->next->upload_id != NULL ? r->next->upload_id : "");
    }
}

/* Runs the loop until `g` completes (60 s at most). */
static void wait_for(struct got *g)
{
    time_t end = time(NULL) + 60;
    while (!g->done && time(NULL) < end)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(g->done);
}

#define RUN(g, call)                                                          \
    do {                                                                      \
        memset(&(g), 0, sizeof(g));                                           \
        assert_int_equal((call), 0);                                          \
        wait_for(&(g));                                                       \
    } while (0)

#define OK(g, call)                                                           \
    do {                                                                      \
        RUN(g, call);                                                         \
        if ((g).status != 0)                                                  \
            fail_msg("%s: status %d: %s", #call, (g).status, (g).message);    \
    } while (0)

/* ---- files ---- */

/* An unlinked temporary file of `size` deterministic bytes. */
static int make_file(int64_t size, unsigned seed)
{
    char path[] = "/tmp/ebb-objstore-data-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    static unsigned char buf[1 << 16];
    uint32_t x = seed * 2654435761u + 1;
    for (int64_t done = 0; done < size;) {
        size_t n = size - done < (int64_t)sizeof(buf) ? (size_t)(size - done) : sizeof(buf);
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            buf[i] = (unsigned char)(x >> 16);
        }
        assert_int_equal(pwrite(fd, buf, n, done), (ssize_t)n);
        done += (int64_t)n;
    }
    return fd;
}

static int empty_file(void)
{
    return make_file(0, 0);
}

/* Whether `len` bytes of a at a_off equal b at b_off. */
static int same_bytes(int a, int64_t a_off, int b, int64_t b_off, int64_t len)
{
    static unsigned char x[1 << 16], y[1 << 16];
    for (int64_t done = 0; done < len;) {
        size_t n = len - done < (int64_t)sizeof(x) ? (size_t)(len - done) : sizeof(x);
        if (pread(a, x, n, a_off + done) != (ssize_t)n ||
            pread(b, y, n, b_off + done) != (ssize_t)n || memcmp(x, y, n) != 0)
            return 0;
        done += (int64_t)n;
    }
    return 1;
}

static int64_t file_size(int fd)
{
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    return (int64_t)st.st_size;
}

/* ---- stores ---- */

static struct ebb__objstore *open_store(const char *url, const char *endpoint,
                                        int path_style, const char *akid,
                                        const char *secret)
{
    int is_oss = strncmp(url, "oss://", 6) == 0;
    struct ebb__objstore_creds creds = {.access_key_id = (char *)akid,
                                        .secret_access_key = (char *)secret};
    int is_file = strncmp(url, "file://", 7) == 0;
    struct ebb__objstore_cfg cfg = {.url = url,
                                    .region = is_file  ? NULL
                                              : is_oss ? "cn-hangzhou"
                                                       : "us-east-1",
                                    .endpoint = endpoint, .path_style = path_style,
                                    .now = wall_now, .max_attempts = 4};
    struct ebb__objstore *st;
    char err[256];
    int rc = ebb__objstore_open(&cfg, &creds, http, &loop, &st, err, sizeof(err));
    if (rc != 0)
        fail_msg("open %s: %s", url, err);
    return st;
}

static struct ebb__objstore *open_fake(const struct test_server *s, int path_style)
{
    char ep[128];
    snprintf(ep, sizeof(ep), "http://%s:%d", path_style ? "127.0.0.1" : "localhost",
             s->port);
    return open_store("s3://" BUCKET "/jobs/j1", ep, path_style, FAKE_AKID, FAKE_SECRET);
}

/* put, get whole and ranged, head, list, delete, head again. */
static void round_trip(struct ebb__objstore *st)
{
    struct got g;
    int src = make_file(100000, 1);
    OK(g, ebb__objstore_put(st, "a b/ckpt$1.bin", src, 0, 100000, on_done, &g));
    assert_true(strlen(g.etag) > 2);
    int out = empty_file();
    OK(g, ebb__objstore_get(st, "a b/ckpt$1.bin", 0, -1, out, 0, on_done, &g));
    assert_int_equal(g.size, 100000);
    assert_int_equal(file_size(out), 100000);
    assert_true(same_bytes(src, 0, out, 0, 100000));
    OK(g, ebb__objstore_get(st, "a b/ckpt$1.bin", 4000, 1000, out, 200000, on_done, &g));
    assert_int_equal(g.size, 1000);
    assert_true(same_bytes(src, 4000, out, 200000, 1000));
    RUN(g, ebb__objstore_get(st, "a b/ckpt$1.bin", 100000, 10, out, 0, on_done, &g));
    assert_int_equal(g.status, EBB_EINVAL);
    assert_string_equal(g.code, "InvalidRange");
    OK(g, ebb__objstore_head(st, "a b/ckpt$1.bin", on_done, &g));
    assert_int_equal(g.size, 100000);

    for (int i = 0; i < 4; i++) {
        char key[32];
        snprintf(key, sizeof(key), "list/k%d", i);
        OK(g, ebb__objstore_put(st, key, src, 0, 10 + i, on_done, &g));
    }
    OK(g, ebb__objstore_list(st, "list/", 100, on_done, &g));
    assert_int_equal(g.n, 4);
    for (size_t i = 0; i < 4; i++) {
        char key[32];
        snprintf(key, sizeof(key), "list/k%zu", i);
        assert_string_equal(g.keys[i], key);
        assert_int_equal(g.sizes[i], 10 + (int64_t)i);
    }
    RUN(g, ebb__objstore_list(st, "list/", 3, on_done, &g));
    assert_int_equal(g.status, EBB_EIO);
    OK(g, ebb__objstore_list(st, "", 100, on_done, &g));
    assert_int_equal(g.n, 5);
    assert_string_equal(g.keys[0], "a b/ckpt$1.bin");

    OK(g, ebb__objstore_delete(st, "a b/ckpt$1.bin", on_done, &g));
    RUN(g, ebb__objstore_head(st, "a b/ckpt$1.bin", on_done, &g));
    assert_int_equal(g.status, EBB_ENOTFOUND);
    RUN(g, ebb__objstore_get(st, "a b/ckpt$1.bin", 0, -1, out, 0, on_done, &g));
    assert_int_equal(g.status, EBB_ENOTFOUND);
    assert_int_equal(g.attempts <= 1, 1);
    OK(g, ebb__objstore_delete(st, "a b/ckpt$1.bin", on_done, &g));
    close(src);
    close(out);
}

/* create, three parts (5 MiB, 5 MiB, 1 MiB), complete, read back; then an
 * upload aborted, after which its parts are refused. */
static void multipart(struct ebb__objstore *st)
{
    const int64_t mib = 1 << 20, size = 11 * mib;
    int src = make_file(size, 7);
    struct got g;
    OK(g, ebb__objstore_mpu_create(st, "big.bin", on_done, &g));
    char upload[256];
    snprintf(upload, sizeof(upload), "%s", g.upload_id);
    assert_true(upload[0] != '\0');
    char etags[3][256];
    for (int i = 0; i < 3; i++) {
        int64_t off = i * 5 * mib, len = i < 2 ? 5 * mib : mib;
        OK(g, ebb__objstore_mpu_part(st, "big.bin", upload, i + 1, src, off, len,
                                     on_done, &g));
        snprintf(etags[i], sizeof(etags[i]), "%s", g.etag);
    }
    const char *list[3] = {etags[0], etags[1], etags[2]};
    OK(g, ebb__objstore_mpu_complete(st, "big.bin", upload, list, 3, on_done, &g));
    int out = empty_file();
    OK(g, ebb__objstore_get(st, "big.bin", 0, -1, out, 0, on_done, &g));
    assert_int_equal(g.size, size);
    assert_true(same_bytes(src, 0, out, 0, size));
    close(out);
    close(src);
}

/* Every page of the uploads under `prefix`, from the first to the one
 * without a next: their entries gathered in `all`; returns the pages. */
static int list_every_page(struct ebb__objstore *st, const char *prefix, struct got *all)
{
    memset(all, 0, sizeof(*all));
    struct got g;
    struct ebb__objstore_marker from = {NULL, NULL};
    char key[256] = "", upload[256] = "";
    int pages = 0;
    do {
        OK(g, ebb__objstore_mpu_list_page(st, prefix, pages > 0 ? &from : NULL, on_done,
                                          &g));
        assert_true(all->n + g.n <= 16);
        memcpy(all->keys + all->n, g.keys, g.n * sizeof(g.keys[0]));
        memcpy(all->upload_ids + all->n, g.upload_ids, g.n * sizeof(g.upload_ids[0]));
        all->n += g.n;
        snprintf(key, sizeof(key), "%s", g.next_key);
        snprintf(upload, sizeof(upload), "%s", g.next_upload);
        from = (struct ebb__objstore_marker){key, upload};
        pages++;
        assert_true(pages <= 16);
    } while (g.has_next);
    return pages;
}

/* Three uploads in progress under up/ (two of one key) and one outside
 * it: the listing under up/ has the three, in key order, with their ids,
 * over pages (two of at most two uploads on a server whose pages are
 * that small), and none once aborted. */
static void list_uploads(struct ebb__objstore *st, int page_size)
{
    static const char *const keys[] = {"up/b", "up/a", "up/a", "elsewhere/c"};
    char ids[4][256];
    struct got g;
    for (int i = 0; i < 4; i++) {
        OK(g, ebb__objstore_mpu_create(st, keys[i], on_done, &g));
        snprintf(ids[i], sizeof(ids[i]), "%s", g.upload_id);
    }
    assert_int_equal(list_every_page(st, "up/", &g), page_size < 3 ? 2 : 1);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.keys[0], "up/a");
    assert_string_equal(g.keys[1], "up/a");
    assert_string_equal(g.keys[2], "up/b");
    assert_string_equal(g.upload_ids[2], ids[0]);
    assert_true((strcmp(g.upload_ids[0], ids[1]) == 0 && strcmp(g.upload_ids[1], ids[2]) == 0) ||
                (strcmp(g.upload_ids[0], ids[2]) == 0 && strcmp(g.upload_ids[1], ids[1]) == 0));
    struct ebb__objstore_marker empty = {"", NULL};
    assert_int_equal(ebb__objstore_mpu_list_page(st, "up/", &empty, on_done, &g),
                     EBB_EINVAL);
    for (int i = 0; i < 4; i++)
        OK(g, ebb__objstore_mpu_abort(st, keys[i], ids[i], on_done, &g));
    assert_int_equal(list_every_page(st, "", &g), 1);
    assert_int_equal(g.n, 0);
}

/* ---- the strict fake ---- */

static void test_fake_path_style(void **state)
{
    (void)state;
    struct test_server s;
    fake_start(&s, BUCKET, 2, 5 << 20);
    struct ebb__objstore *st = open_fake(&s, 1);
    round_trip(st);
    multipart(st);
    list_uploads(st, 2);
    assert_true(fake_count(&s, "ListMultipartUploads", "key-marker") >= 1);
    /* Every request was signed as botocore signs, path-style. */
    assert_int_equal(fake_count(&s, "PutObject", "\"style\": \"path\", \"status\": 200"), 5);
    assert_int_equal(fake_count(&s, "PutObject", NULL), 5);
    assert_true(fake_count(&s, "ListObjectsV2", "continuation-token") >= 2);
    assert_int_equal(fake_count(&s, "CompleteMultipartUpload", "\"status\": 200"), 1);
    assert_int_equal(fake_count(&s, "GetObject", "SignatureDoesNotMatch"), 0);

    struct got g;
    OK(g, ebb__objstore_mpu_create(st, "gone.bin", on_done, &g));
    char upload[256];
    snprintf(upload, sizeof(upload), "%s", g.upload_id);
    OK(g, ebb__objstore_mpu_abort(st, "gone.bin", upload, on_done, &g));
    int src = make_file(1000, 3);
    RUN(g, ebb__objstore_mpu_part(st, "gone.bin", upload, 1, src, 0, 1000, on_done, &g));
    assert_int_equal(g.status, EBB_ENOTFOUND);
    assert_string_equal(g.code, "NoSuchUpload");
    close(src);
    ebb__objstore_free(st);
    server_stop(&s);
}

static void test_fake_virtual_host(void **state)
{
    (void)state;
    struct test_server s;
    fake_start(&s, BUCKET, 1000, 5 << 20);
    struct ebb__objstore *st = open_fake(&s, 0);
    round_trip(st);
    assert_int_equal(fake_count(&s, "PutObject", "\"style\": \"virtual\", \"status\": 200"), 5);
    assert_int_equal(fake_count(&s, "PutObject", "\"style\": \"path\""), 0);
    ebb__objstore_free(st);
    server_stop(&s);
}

/* A wrong secret is refused by the fake's botocore check, so its
 * acceptance of the right one means something. */
static void test_fake_wrong_secret(void **state)
{
    (void)state;
    struct test_server s;
    fake_start(&s, BUCKET, 1000, 5 << 20);
    char ep[64];
    snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", s.port);
    struct ebb__objstore *st = open_store("s3://" BUCKET, ep, 1, FAKE_AKID, "not-it");
    int src = make_file(10, 1);
    struct got g;
    RUN(g, ebb__objstore_put(st, "k", src, 0, 10, on_done, &g));
    assert_int_equal(g.status, EBB_EAUTH);
    assert_string_equal(g.code, "SignatureDoesNotMatch");
    assert_int_equal(g.attempts, 1);
    close(src);
    ebb__objstore_free(st);
    server_stop(&s);
}

/* What a presigned URL's holder sends: the URL and nothing signed. */
struct fetched {
    int done, status;
    char body[512];
};

static void on_fetched(const struct ebb_http_response *res, void *arg)
{
    struct fetched *f = arg;
    f->done = 1;
    f->status = res->error != 0 ? -res->error : res->status;
    snprintf(f->body, sizeof(f->body), "%.*s", (int)res->body_len, res->body);
}

static struct fetched plain(const char *method, const char *url, int fd, int64_t len,
                            int out)
{
    struct fetched f = {0};
    struct ebb__http_stream s = {.upload_fd = fd, .upload_len = len, .download_fd = out};
    struct ebb_http_request req = {.struct_size = sizeof(req), .method = method,
                                   .url = url, .max_attempts = 1};
    assert_int_equal(ebb__http_request_stream(http, &req, &s, on_fetched, &f), 0);
    time_t end = time(NULL) + 30;
    while (!f.done && time(NULL) < end)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(f.done);
    return f;
}

static void test_fake_retries(void **state)
{
    (void)state;
    struct test_server s;
    fake_start(&s, BUCKET, 1000, 1000);
    ebb__http_set_backoff(http, 5, 20);
    struct ebb__objstore *st = open_fake(&s, 1);
    int src = make_file(30000, 5);
    struct got g;

    /* 503 SlowDown twice, then the same bytes again: stored. */
    fake_faults(&s, "[{\"op\": \"PutObject\", \"status\": 503, \"code\": \"SlowDown\", \"count\": 2}]");
    OK(g, ebb__objstore_put(st, "slow", src, 0, 30000, on_done, &g));
    assert_int_equal(g.attempts, 3);
    int out = empty_file();
    OK(g, ebb__objstore_get(st, "slow", 0, -1, out, 0, on_done, &g));
    assert_true(g.size == 30000 && same_bytes(src, 0, out, 0, 30000));

    /* SlowDown past the bound: reported, not retried for ever. */
    fake_faults(&s, "[{\"op\": \"PutObject\", \"status\": 503, \"code\": \"SlowDown\", \"count\": 9}]");
    RUN(g, ebb__objstore_put(st, "slow", src, 0, 30000, on_done, &g));
    assert_int_equal(g.status, EBB_ETHROTTLED);
    assert_string_equal(g.code, "SlowDown");
    assert_int_equal(g.attempts, 4);

    /* A part's 500 and Complete's 200-with-Error are retried. */
    fake_faults(&s, "[{\"op\": \"UploadPart\", \"status\": 500, \"code\": \"InternalError\", \"count\": 1},"
                    " {\"op\": \"CompleteMultipartUpload\", \"status\": 200, \"code\": \"InternalError\", \"count\": 1}]");
    OK(g, ebb__objstore_mpu_create(st, "mp", on_done, &g));
    char upload[256], e1[256], e2[256];
    snprintf(upload, sizeof(upload), "%s", g.upload_id);
    OK(g, ebb__objstore_mpu_part(st, "mp", upload, 1, src, 0, 20000, on_done, &g));
    assert_int_equal(g.attempts, 2);
    snprintf(e1, sizeof(e1), "%s", g.etag);
    OK(g, ebb__objstore_mpu_part(st, "mp", upload, 2, src, 20000, 10000, on_done, &g));
    snprintf(e2, sizeof(e2), "%s", g.etag);
    const char *etags[2] = {e1, e2};
    OK(g, ebb__objstore_mpu_complete(st, "mp", upload, etags, 2, on_done, &g));
    assert_int_equal(g.attempts, 2);
    assert_int_equal(fake_count(&s, "CompleteMultipartUpload", "\"fault\": \"InternalError\""), 1);
    OK(g, ebb__objstore_get(st, "mp", 0, -1, out, 0, on_done, &g));
    assert_true(g.size == 30000 && same_bytes(src, 0, out, 0, 30000));

    /* Completed, but the answer lost: the retry meets NoSuchUpload, and
     * the object the upload made says it was done. */
    fake_faults(&s, "[{\"op\": \"CompleteMultipartUpload\", \"status\": 500, \"code\": \"InternalError\", \"count\": 1, \"applied\": true}]");
    OK(g, ebb__objstore_mpu_create(st, "lost", on_done, &g));
    snprintf(upload, sizeof(upload), "%s", g.upload_id);
    OK(g, ebb__objstore_mpu_part(st, "lost", upload, 1, src, 0, 20000, on_done, &g));
    snprintf(e1, sizeof(e1), "%s", g.etag);
    OK(g, ebb__objstore_mpu_part(st, "lost", upload, 2, src, 20000, 10000, on_done, &g));
    snprintf(e2, sizeof(e2), "%s", g.etag);
    OK(g, ebb__objstore_mpu_complete(st, "lost", upload, etags, 2, on_done, &g));
    assert_true(strstr(g.etag, "-2") != NULL);
    assert_int_equal(fake_count(&s, "CompleteMultipartUpload", "NoSuchUpload"), 1);
    assert_int_equal(fake_count(&s, "HeadObject", "\"key\": \"jobs/j1/lost\""), 1);
    /* An upload that is simply gone stays an error. */
    RUN(g, ebb__objstore_mpu_complete(st, "lost", upload, etags, 2, on_done, &g));
    assert_int_equal(g.status, EBB_ENOTFOUND);
    assert_string_equal(g.code, "NoSuchUpload");

    /* Our clock two hours slow: the first signature is refused as too
     * skewed, the server's Date corrects the store's clock, and the next
     * attempt and later presigned URLs are signed right. */
    clock_offset = -2 * EBB_MS_PER_HOUR;
    OK(g, ebb__objstore_put(st, "skewed", src, 0, 1000, on_done, &g));
    assert_int_equal(g.attempts, 2);
    assert_int_equal(fake_count(&s, "PutObject", "RequestTimeTooSkewed"), 1);
    char *url;
    assert_int_equal(ebb__objstore_presign(st, EBB__PRESIGN_GET, "skewed", NULL, 0, 60, &url), 0);
    clock_offset = 0;
    struct fetched f = plain("GET", url, -1, 0, -1);
    assert_int_equal(f.status, 200);
    free(url);

    /* A 200-with-Error on every attempt is a failure, not a success. */
    fake_faults(&s, "[{\"op\": \"CompleteMultipartUpload\", \"status\": 200, \"code\": \"InternalError\", \"count\": 9}]");
    OK(g, ebb__objstore_mpu_create(st, "mp2", on_done, &g));
    snprintf(upload, sizeof(upload), "%s", g.upload_id);
    OK(g, ebb__objstore_mpu_part(st, "mp2", upload, 1, src, 0, 30000, on_done, &g));
    snprintf(e1, sizeof(e1), "%s", g.etag);
    RUN(g, ebb__objstore_mpu_complete(st, "mp2", upload, etags, 1, on_done, &g));
    assert_int_equal(g.status, EBB_EIO);
    assert_string_equal(g.code, "InternalError");
    assert_int_equal(g.attempts, 4);
    close(src);
    close(out);
    ebb__objstore_free(st);
    ebb__http_set_backoff(http, 500, 30000);
    server_stop(&s);
}

static void presigned(struct ebb__objstore *st, int check_expiry)
{
    int src = make_file(7000, 9);
    char *url;
    /* PUT through a URL, GET it back through another. */
    assert_int_equal(ebb__objstore_presign(st, EBB__PRESIGN_PUT, "p/obj", NULL, 0, 600, &url), 0);
    assert_true(strstr(url, "X-Amz-Signature=") != NULL ||
                strstr(url, "x-oss-signature=") != NULL);
    assert_null(strstr(url, FAKE_SECRET));
    struct fetched f = plain("PUT", url, src, 7000, -1);
    assert_int_equal(f.status, 200);
    free(url);
    assert_int_equal(ebb__objstore_presign(st, EBB__PRESIGN_GET, "p/obj", NULL, 0, 600, &url), 0);
    int out = empty_file();
    f = plain("GET", url, -1, 0, out);
    assert_int_equal(f.status, 200);
    assert_true(file_size(out) == 7000 && same_bytes(src, 0, out, 0, 7000));
    free(url);

    /* One part of a multipart upload ebbd created and completes. */
    struct got g;
    OK(g, ebb__objstore_mpu_create(st, "p/mp", on_done, &g));
    char upload[256];
    snprintf(upload, sizeof(upload), "%s", g.upload_id);
    assert_int_equal(ebb__objstore_presign(st, EBB__PRESIGN_PART, "p/mp", upload, 1, 600, &url), 0);
    assert_non_null(strstr(url, "partNumber=1&uploadId="));
    f = plain("PUT", url, src, 7000, -1);
    assert_int_equal(f.status, 200);
    free(url);

    /* Limits: 1..604800 s, a part needs its upload id. */
    assert_int_equal(ebb__objstore_presign(st, EBB__PRESIGN_GET, "p/obj", NULL, 0, 604801, &url),
                     EBB_EINVAL);
    assert_int_equal(ebb__objstore_presign(st, EBB__PRESIGN_GET, "p/obj", NULL, 0, 0, &url),
                     EBB_EINVAL);
    assert_int_equal(ebb__objstore_presign(st, EBB__PRESIGN_PART, "p/mp", NULL, 1, 60, &url),
                     EBB_EINVAL);
    if (check_expiry) {
        /* Signed two hours ago for one minute: expired. */
        clock_offset = -2 * EBB_MS_PER_HOUR;
        assert_int_equal(ebb__objstore_presign(st, EBB__PRESIGN_GET, "p/obj", NULL, 0, 60, &url), 0);
        clock_offset = 0;
        f = plain("GET", url, -1, 0, -1);
        assert_int_equal(f.status, 403);
        assert_non_null(strstr(f.body, "<Code>AccessDenied</Code>"));
        assert_non_null(strstr(f.body, "expired"));
        free(url);
        /* A tampered URL: another key under the same signature. */
        assert_int_equal(ebb__objstore_presign(st, EBB__PRESIGN_GET, "p/obj", NULL, 0, 60, &url), 0);
        char *p = strstr(url, "p/obj");
        p[4] = 'X';
        f = plain("GET", url, -1, 0, -1);
        assert_int_equal(f.status, 403);
        assert_non_null(strstr(f.body, "SignatureDoesNotMatch"));
        free(url);
    }
    close(src);
    close(out);
}

static void test_fake_presigned(void **state)
{
    (void)state;
    struct test_server s;
    fake_start(&s, BUCKET, 1000, 5 << 20);
    struct ebb__objstore *st = open_fake(&s, 1);
    presigned(st, 1);
    assert_int_equal(fake_count(&s, "PutObject", "\"style\": \"presigned-path\", \"status\": 200"), 1);
    assert_int_equal(fake_count(&s, "UploadPart", "\"style\": \"presigned-path\", \"status\": 200"), 1);
    ebb__objstore_free(st);
    st = open_fake(&s, 0);
    presigned(st, 0);
    assert_int_equal(fake_count(&s, "GetObject", "\"style\": \"presigned-virtual\", \"status\": 200"), 1);
    ebb__objstore_free(st);
    server_stop(&s);
}

/* Alibaba OSS: virtual host only, OSS V4 signatures the fake recomputes
 * from Alibaba's description, apart from the C signer. */
static void test_fake_oss(void **state)
{
    (void)state;
    struct test_server s;
    fake_start_flavour(&s, "oss", BUCKET, 2, 5 << 20);
    char ep[64];
    snprintf(ep, sizeof(ep), "http://localhost:%d", s.port);
    struct ebb__objstore *st = open_store("oss://" BUCKET "/jobs/j1", ep, 0, FAKE_AKID,
                                          FAKE_SECRET);
    round_trip(st);
    multipart(st);
    list_uploads(st, 2);
    presigned(st, 1);
    assert_int_equal(fake_count(&s, "PutObject", "\"style\": \"virtual\", \"status\": 200"), 5);
    assert_int_equal(fake_count(&s, "CompleteMultipartUpload", "\"status\": 200"), 1);
    assert_int_equal(fake_count(&s, "GetObject", "\"style\": \"presigned-virtual\", \"status\": 200"), 1);
    assert_true(fake_count(&s, "ListObjectsV2", "continuation-token") >= 2);
    ebb__objstore_free(st);
    /* A wrong secret fails the fake's own OSS V4 check. */
    st = open_store("oss://" BUCKET, ep, 0, FAKE_AKID, "not-it");
    struct got g;
    RUN(g, ebb__objstore_head(st, "k", on_done, &g));
    assert_int_equal(g.status, EBB_EAUTH);
    ebb__objstore_free(st);
    server_stop(&s);
}

/* A 96 MiB object up and down (more than the 64 MiB the HTTP client
 * keeps of an answer in memory): the process grows by the stream bound,
 * not by the object. */
static void test_fake_memory_bound(void **state)
{
    (void)state;
    struct test_server s;
    fake_start(&s, BUCKET, 1000, 5 << 20);
    struct ebb__objstore *st = open_fake(&s, 1);
    const int64_t size = (int64_t)96 << 20;
    int src = make_file(size, 11), out = empty_file();
    struct got g;
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    OK(g, ebb__objstore_put(st, "huge", src, 0, size, on_done, &g));
    OK(g, ebb__objstore_get(st, "huge", 0, -1, out, 0, on_done, &g));
    getrusage(RUSAGE_SELF, &after);
    assert_int_equal(g.size, size);
    assert_true(same_bytes(src, 0, out, 0, size));
    long grown_kib = after.ru_maxrss - before.ru_maxrss;
    print_message("max RSS grew by %ld KiB for a %lld MiB round trip (stream bound "
                  "%zu KiB)\n", grown_kib, (long long)(size >> 20),
                  EBB__OBJSTORE_STREAM_BOUND >> 10);
    assert_true(grown_kib < 8 * 1024);
    close(src);
    close(out);
    ebb__objstore_free(st);
    server_stop(&s);
}

/* ---- s3rver ---- */

static void test_s3rver(void **state)
{
    (void)state;
    struct test_server s;
    s3rver_start(&s, BUCKET);
    char ep[64];
    snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", s.port);
    struct ebb__objstore *st = open_store("s3://" BUCKET "/jobs/j1", ep, 1, "S3RVER", "S3RVER");
    round_trip(st);
    multipart(st);
    presigned(st, 0);
    /* s3rver knows only its own key. */
    struct ebb__objstore *other = open_store("s3://" BUCKET, ep, 1, "NOTME", "x");
    struct got g;
    RUN(g, ebb__objstore_head(other, "jobs/j1/big.bin", on_done, &g));
    assert_int_equal(g.status, EBB_EAUTH);
    ebb__objstore_free(other);
    ebb__objstore_free(st);
    server_stop(&s);
}

/* ---- file:// ---- */

static void test_file_store(void **state)
{
    (void)state;
    char dir[] = "/tmp/ebb-objstore-file-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char url[128];
    snprintf(url, sizeof(url), "file://%s", dir);
    struct ebb__objstore *st = open_store(url, NULL, 0, NULL, NULL);
    round_trip(st);
    /* No temporary file is left behind, and a put replaces whole. */
    int a = make_file(5000, 1), b = make_file(300, 2), out = empty_file();
    struct got g;
    OK(g, ebb__objstore_put(st, "x/y", a, 0, 5000, on_done, &g));
    OK(g, ebb__objstore_put(st, "x/y", b, 0, 300, on_done, &g));
    OK(g, ebb__objstore_get(st, "x/y", 0, -1, out, 0, on_done, &g));
    assert_true(g.size == 300 && file_size(out) == 300 && same_bytes(b, 0, out, 0, 300));
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "test -z \"$(find '%s' -name '.ebb-tmp.*')\"", dir);
    assert_int_equal(system(cmd), 0);
    char *u;
    assert_int_equal(ebb__objstore_presign(st, EBB__PRESIGN_GET, "x/y", NULL, 0, 60, &u),
                     EBB_EUNSUPPORTED);
    assert_int_equal(ebb__objstore_mpu_create(st, "x/y", on_done, &g), EBB_EUNSUPPORTED);
    assert_int_equal(ebb__objstore_mpu_list_page(st, "x/", NULL, on_done, &g), EBB_EUNSUPPORTED);
    /* Keys and prefixes never leave the directory. */
    assert_int_equal(ebb__objstore_put(st, "../escape", a, 0, 1, on_done, &g), EBB_EINVAL);
    assert_int_equal(ebb__objstore_list(st, "../", 10, on_done, &g), EBB_EINVAL);
    assert_int_equal(ebb__objstore_list(st, "x//", 10, on_done, &g), EBB_EINVAL);
    assert_int_equal(ebb__objstore_list(st, "/", 10, on_done, &g), EBB_EINVAL);
    assert_int_equal(ebb__objstore_put(st, "x//y", a, 0, 1, on_done, &g), EBB_EINVAL);
    close(a);
    close(b);
    close(out);
    ebb__objstore_free(st);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    return ebb__http_init(&http, &loop);
}

static void closed(void *arg)
{
    *(int *)arg = 1;
}

static int teardown(void **state)
{
    (void)state;
    int done = 0;
    ebb__http_close(http, closed, &done);
    while (!done)
        uv_run(&loop, UV_RUN_ONCE);
    uv_run(&loop, UV_RUN_DEFAULT);
    return uv_loop_close(&loop) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_memory_bound), /* first: max RSS only grows */
        cmocka_unit_test(test_fake_path_style),
        cmocka_unit_test(test_fake_virtual_host),
        cmocka_unit_test(test_fake_wrong_secret),
        cmocka_unit_test(test_fake_retries),
        cmocka_unit_test(test_fake_presigned),
        cmocka_unit_test(test_fake_oss),
        cmocka_unit_test(test_s3rver),
        cmocka_unit_test(test_file_store),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
