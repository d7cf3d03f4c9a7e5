/* bench-objstore ENDPOINT BUCKET FILE AKID SECRET: the object-store client
 * (src/objstore) moving FILE to an S3 server already running at ENDPOINT
 * (path-style) and back: one PutObject (its SHA-256 computed first, as S3
 * signing requires) and one GetObject into FILE.ebb. Prints the seconds
 * each took, the process's peak RSS, and presigned PUT and GET URLs of
 * the same key for the script that times curl on the same transfers
 * (bench/objstore.sh). Never fails on a figure; exits 1 when a transfer
 * fails. */
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

static ebb_time_ms wall_now(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (ebb_time_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct done {
    int done, status;
    int64_t size;
    char message[512];
};

static void on_done(void *arg, const struct ebb__objstore_result *r)
{
    struct done *d = arg;
    d->done = 1;
    d->status = r->status;
    d->size = r->size;
    snprintf(d->message, sizeof(d->message), "%s", r->message);
}

static int run(uv_loop_t *loop, struct done *d, const char *what)
{
    while (!d->done)
        uv_run(loop, UV_RUN_ONCE);
    if (d->status != 0)
        fprintf(stderr, "bench-objstore: %s: %s\n", what, d->message);
    return d->status;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: bench-objstore ENDPOINT BUCKET FILE AKID SECRET\n");
        return 2;
    }
    const char *file = argv[3];
    int in = open(file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (in < 0 || fstat(in, &st) != 0) {
        perror(file);
        return 1;
    }
    char out_path[1024];
    snprintf(out_path, sizeof(out_path), "%s.ebb", file);
    int out = open(out_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) {
        perror(out_path);
        return 1;
    }
    uv_loop_t loop;
    struct ebb__http *http;
    uv_loop_init(&loop);
    if (ebb__http_init(&http, &loop) != 0)
        return 1;
    char url[256];
    snprintf(url, sizeof(url), "s3://%s/bench", argv[2]);
    struct ebb__objstore_creds creds = {.access_key_id = argv[4],
                                        .secret_access_key = argv[5]};
    struct ebb__objstore_cfg cfg = {.url = url, .region = "us-east-1",
                                    .endpoint = argv[1], .path_style = 1,
                                    .now = wall_now, .max_attempts = 1};
    struct ebb__objstore *store;
    char err[256];
    if (ebb__objstore_open(&cfg, &creds, http, &loop, &store, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench-objstore: %s\n", err);
        return 1;
    }
    struct done d = {0};
    double t0 = seconds();
    int rc = ebb__objstore_put(store, "ckpt.bin", in, 0, (int64_t)st.st_size, on_done, &d);
    if (rc != 0 || run(&loop, &d, "put") != 0)
        return 1;
    double put_s = seconds() - t0;
    memset(&d, 0, sizeof(d));
    t0 = seconds();
    rc = ebb__objstore_get(store, "ckpt.bin", 0, -1, out, 0, on_done, &d);
    if (rc != 0 || run(&loop, &d, "get") != 0)
        return 1;
    double get_s = seconds() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    char *put_url = NULL, *get_url = NULL;
    if (ebb__objstore_presign(store, EBB__PRESIGN_PUT, "curl.bin", NULL, 0, 3600, &put_url) != 0 ||
        ebb__objstore_presign(store, EBB__PRESIGN_GET, "curl.bin", NULL, 0, 3600, &get_url) != 0)
        return 1;
    printf("bytes %lld\nebb_put_s %.3f\nebb_get_s %.3f\nebb_max_rss_kib %ld\n"
           "put_url %s\nget_url %s\n",
           (long long)st.st_size, put_s, get_s, ru.ru_maxrss, put_url, get_url);
    free(put_url);
    free(get_url);
    ebb__objstore_free(store);
    ebb__http_close(http, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    close(in);
    close(out);
    return d.size == (int64_t)st.st_size ? 0 : 1;
}
