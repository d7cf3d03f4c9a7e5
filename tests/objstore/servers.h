/* The S3 servers the object-store tests run on 127.0.0.1: the strict
 * fake (fake_s3.py, SigV4 recomputed with botocore) and s3rver 3.7.1
 * (npm, tests/objstore/package.json). Each is a child process in a temp
 * directory of its own, at a port the OS picked. */
#ifndef OBJSTORE_TEST_SERVERS_H
#define OBJSTORE_TEST_SERVERS_H

#include <sys/types.h>

struct test_server {
    pid_t pid;
    int port;
    char dir[256];    /* the server's temp directory */
    char log[320];    /* fake: its request log (JSON lines) */
    char faults[320]; /* fake: the faults file it reads */
};

/* Starts the fake for bucket `bucket` with key pair AKIDTEST / the secret
 * below, ListObjectsV2 pages of `page_size` keys and parts of at least
 * `min_part` bytes. Fails the test when it cannot. */
#define FAKE_AKID "AKIDTEST"
#define FAKE_SECRET "fake/secret+key"
void fake_start(struct test_server *s, const char *bucket, int page_size,
                long min_part);

/* The same as an OSS endpoint (flavour "oss": virtual host only, OSS V4
 * signatures, region cn-hangzhou) or S3 ("s3"). */
void fake_start_flavour(struct test_server *s, const char *flavour, const char *bucket,
                        int page_size, long min_part);

/* Starts s3rver with bucket `bucket` (keys S3RVER / S3RVER). */
void s3rver_start(struct test_server *s, const char *bucket);

/* Stops the server and removes its directory. */
void server_stop(struct test_server *s);

/* Writes the fake's faults file: a JSON list (see fake_s3.py). */
void fake_faults(const struct test_server *s, const char *json);

/* How many logged requests of operation `op` match `field` = `value`
 * (a JSON fragment such as "\"style\": \"virtual\""); `value` NULL
 * counts them all. */
int fake_count(const struct test_server *s, const char *op, const char *fragment);

#endif
