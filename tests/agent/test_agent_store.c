/* ebb-agent's durable checkpoints, end to end: the real agent against the
 * fake ebbd with its store endpoints (fake_store.c) over a real object
 * store: a file:// directory, or the strict S3 fake (SigV4 of every
 * presigned URL recomputed by botocore, faults on request). Each run gets
 * a disk of its own (--disk), so a checkpoint comes back only through the
 * store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake.h"
#include "fake_store.h"

#define WATCHDOG_MS 60000
#define MARKER "PLAINTEXT-MARKER-8d1f"

static struct fake F;
static struct fake_store S;

/* Writes checkpoints $CKPTS (copies of $SRC/NAME, each into a temporary,
 * then renamed), one a second ($GAP); says what it resumed from and whether it
 * is bit-identical to the source. With $STOP_SLOW: the first periodic
 * signal writes ck1 slowly (1.2 s), the stop signal writes ck2, SIGTERM
 * says so and ends it. */
#define JOB_STORE \
    "#!/bin/sh\n" \
    "if [ -n \"$EBB_RESUME_FROM\" ]; then\n" \
    "  b=$(basename \"$EBB_RESUME_FROM\")\n" \
    "  if diff -r \"$EBB_RESUME_FROM\" \"$SRC/$b\" >/dev/null; then s=same; else s=differ; fi\n" \
    "  echo \"resumed=[$b] $s\"\n" \
    "else echo 'resumed=[]'; fi\n" \
    "save() { cp -r \"$SRC/$1\" \"$EBB_CHECKPOINT_DIR/.tmp-$1\" && " \
    "mv \"$EBB_CHECKPOINT_DIR/.tmp-$1\" \"$EBB_CHECKPOINT_DIR/$1\"; }\n" \
    "if [ -n \"$STOP_SLOW\" ]; then\n" \
    "  trap 'trap \"\" USR2; sleep 1.2; save ck1' USR2\n" \
    "  trap 'save ck2; exit 0' USR1\n" \
    "  trap 'echo got TERM; exit 3' TERM\n" \
    "  i=0; while [ $i -lt 400 ]; do i=$((i+1)); sleep 0.05; done; exit 9\n" \
    "fi\n" \
    "for c in $CKPTS; do save $c; sleep ${GAP:-1}; done\n"

static int setup(void **state)
{
    (void)state;
    fake_init(&F, WATCHDOG_MS);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fstore_close(&S);
    fake_close(&F);
    return 0;
}

static bool has(const struct ebb_buf *b, const char *needle)
{
    return b->data != NULL && strstr(b->data, needle) != NULL;
}

static void write_file(const char *path, const char *text, size_t random_bytes)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    FILE *r = random_bytes ? fopen("/dev/urandom", "r") : NULL;
    char buf[65536];
    while (random_bytes > 0) {
        size_t n = random_bytes < sizeof(buf) ? random_bytes : sizeof(buf);
        assert_int_equal(fread(buf, 1, n, r), n);
        assert_int_equal(fwrite(buf, 1, n, f), n);
        random_bytes -= n;
    }
    if (r != NULL)
        fclose(r);
    assert_int_equal(fclose(f), 0);
}

/* $SRC/NAME: a directory checkpoint with a nested file, an empty one and
 * `big` random bytes, each starting with MARKER. */
static void make_source(const char *name, size_t big)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/src", F.dir);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/src/%s", F.dir, name);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/src/%s/state.txt", F.dir, name);
    write_file(path, MARKER " step 42 of checkpoint\n", 0);
    snprintf(path, sizeof(path), "%s/src/%s/sub", F.dir, name);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/src/%s/sub/empty", F.dir, name);
    write_file(path, "", 0);
    snprintf(path, sizeof(path), "%s/src/%s/sub/model.bin", F.dir, name);
    write_file(path, MARKER, big);
}

/* The job document: checkpoint.dir "" (the disk's), `ckpt` more
 * checkpoint fields, the store's member. */
static void set_job(const char *ckpts, bool stop_slow, const char *ckpt)
{
    const char *job = fake_script(&F, "job.sh", JOB_STORE);
    fake_set_job(&F, "{\"job_id\": \"" FSTORE_JOB "\", \"instance_id\": \"local-3\", "
                 "\"argv\": [\"%s\"], \"env\": {\"SRC\": \"%s/src\", \"CKPTS\": \"%s\"%s}, "
                 "\"workdir\": \"%s\", \"checkpoint\": {\"dir\": \"\"%s}, "
                 "\"heartbeat_ms\": 150%s}", job, F.dir, ckpts,
                 stop_slow ? ", \"STOP_SLOW\": \"1\"" : "", F.dir, ckpt, fstore_doc(&S));
}

/* Runs the agent on disk F.dir/`disk` to its end. */
static void run_agent(const char *disk)
{
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/%s", F.dir, disk);
    const char *extra[] = {"--disk", dir, NULL};
    json_array_clear(F.events);
    ebb_buf_free(&F.out);
    ebb_buf_free(&F.err);
    ebb_buf_free(&F.agent_out);
    ebb_buf_free(&F.agent_err);
    F.agent_exited = false;
    fake_start_agent(&F, FAKE_TOKEN, NULL, extra);
    fake_run_until(&F, fake_agent_done);
}

static void dump(void)
{
    char *kinds = fake_kinds(&F);
    fprintf(stderr, "events: %s\njob said: %s\nagent said:\n%s\n", kinds,
            F.out.data ? F.out.data : "", F.agent_err.data ? F.agent_err.data : "");
    free(kinds);
}

/* No stored byte of any checkpoint is plaintext. */
static void assert_no_plaintext(void)
{
    for (size_t i = 0; fstore_row(&S, i) != NULL; i++) {
        json_t *row = fstore_row(&S, i);
        size_t n = json_array_size(json_object_get(row, "files"));
        for (size_t k = 0; k < n; k++) {
            char key[512];
            size_t len = 0;
            char *data = fstore_get(&S, fstore_key(row, (int)k, key, sizeof(key)), &len);
            assert_non_null(data);
            assert_null(memmem(data, len, MARKER, strlen(MARKER)));
            assert_null(memmem(data, len, "step 42", 7));
            free(data);
        }
    }
}

/* Nothing is staged on the disk: it holds the checkpoints and nothing
 * else, and beside them no hidden file but their markers. */
static void assert_nothing_staged(const char *disk)
{
    char cmd[900];
    snprintf(cmd, sizeof(cmd), "cd '%s/%s' && test \"$(ls -A)\" = checkpoints && "
             "test -z \"$(find checkpoints -name '.*' ! -name '.ebb-checkpoint.*')\"", F.dir, disk);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof(cmd), "cd '%s/%s' && ls -laR >&2", F.dir, disk);
        (void)!system(cmd);
        fail_msg("%s holds more than its checkpoints", disk);
    }
}

static size_t count(const char *kind)
{
    return fake_count(&F, kind);
}

/* ---- round trips ---- */

/* Two directory checkpoints stored through a file:// store, the newest
 * brought back on another disk bit for bit; no `checkpoint` event (the
 * commit stands for it), nothing in the store is plaintext. */
static void test_file_store_round_trip(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_FILE, 5 << 20, 4, true);
    make_source("ck1", 1000);
    make_source("ck2", 200000);
    set_job("ck1 ck2", false, "");
    run_agent("disk1");
    if (fstore_count(&S, "durable") != 2)
        dump();
    assert_int_equal(F.agent_status, 0);
    assert_int_equal(fstore_count(&S, "durable"), 2);
    assert_int_equal(S.commits, 2);
    assert_int_equal(count("checkpoint"), 0);
    assert_true(has(&F.out, "resumed=[]"));
    json_t *st = fake_event(&F, "started", 0);
    assert_null(json_object_get(st, "resume_id"));
    /* The commit lists every file with its sums, in the manifest's order. */
    json_t *files = json_object_get(json_object_get(fstore_row(&S, 1), "commit"), "files");
    assert_int_equal(json_array_size(files), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(files, 0), "path")),
                        "state.txt");
    assert_string_equal(json_string_value(json_object_get(json_array_get(files, 2), "path")),
                        "sub/model.bin");
    /* No progress was reported: the commit claims none. */
    assert_null(json_object_get(json_object_get(fstore_row(&S, 1), "commit"), "fraction"));
    assert_no_plaintext();
    assert_nothing_staged("disk1");

    set_job("", false, "");
    run_agent("disk2");
    if (!has(&F.out, "resumed=[ck2] same"))
        dump();
    assert_true(has(&F.out, "resumed=[ck2] same"));
    st = fake_event(&F, "started", 0);
    assert_int_equal(json_integer_value(json_object_get(st, "resume_id")), 2);
    assert_true(json_integer_value(json_object_get(st, "download_bytes")) > 200000);
    assert_true(json_is_integer(json_object_get(st, "download_ms")));
    assert_int_equal(count("checkpoint_fallback"), 0);
    /* What came back is known: it is not uploaded again. */
    assert_int_equal(S.posts, 2);
}

/* A gang's member brings back the stored checkpoint its job document
 * names (checkpoint.resume), though a newer one is stored; "" brings
 * nothing back, not even asking; a name the store does not hold is not
 * on this node, and the job does not start. */
static void test_gang_resume_by_name(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_FILE, 5 << 20, 4, true);
    make_source("ck1", 1000);
    make_source("ck2", 2000);
    set_job("ck1 ck2", false, "");
    run_agent("disk1");
    assert_int_equal(fstore_count(&S, "durable"), 2);

    set_job("", false, ", \"resume\": \"ck1\"");
    run_agent("disk2");
    if (!has(&F.out, "resumed=[ck1] same"))
        dump();
    assert_true(has(&F.out, "resumed=[ck1] same"));
    assert_int_equal(json_integer_value(json_object_get(fake_event(&F, "started", 0),
                                                        "resume_id")), 1);

    int gets = S.resume_gets;
    set_job("", false, ", \"resume\": \"\"");
    run_agent("disk3");
    assert_true(has(&F.out, "resumed=[]"));
    assert_int_equal(S.resume_gets, gets);

    set_job("", false, ", \"resume\": \"ck9\"");
    run_agent("disk4");
    assert_int_equal(F.agent_status, 127);
    assert_string_equal(json_string_value(json_object_get(fake_event(&F, "exited", 0), "error")),
                        "cannot start the job: checkpoint ck9 is not on this node");
    assert_null(F.out.data);
}

/* Without encryption the objects are the files themselves; the manifest
 * still authenticates them. */
static void test_file_store_plain(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_FILE, 5 << 20, 4, false);
    make_source("ck1", 5000);
    set_job("ck1", false, "");
    run_agent("disk1");
    if (fstore_count(&S, "durable") != 1)
        dump();
    assert_int_equal(fstore_count(&S, "durable"), 1);
    set_job("", false, "");
    run_agent("disk2");
    if (!has(&F.out, "resumed=[ck1] same"))
        dump();
    assert_true(has(&F.out, "resumed=[ck1] same"));
}

/* What AddressSanitizer's shadow memory, redzones and quarantine add to a
 * process's peak RSS (57 MiB measured for the upload below, against 31
 * MiB without it): the bound is the build's, not a sanitizer's. */
#ifdef __SANITIZE_ADDRESS__
#define SANITIZER_RSS_KIB (32 * 1024)
#else
#define SANITIZER_RSS_KIB 0
#endif

/* A 40 MiB file in 5 MiB parts, three at once, through presigned URLs
 * the strict S3 fake verifies; two parts meet 503 SlowDown and are
 * retried (and sealed again, the same). The agent's memory stays below
 * the file's size: three parts' chunks and the hash pass's (4 MiB each),
 * libcurl's buffers, the program. */
static void test_s3_multipart_parallel(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_S3, 5 << 20, 3, true);
    make_source("big", (size_t)40 << 20);
    fstore_faults(&S, "[{\"op\": \"UploadPart\", \"status\": 503, \"code\": \"SlowDown\", "
                      "\"count\": 2}]");
    set_job("big", false, "");
    run_agent("disk1");
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_CHILDREN, &ru), 0);
    if (fstore_count(&S, "durable") != 1)
        dump();
    assert_int_equal(fstore_count(&S, "durable"), 1);
    /* 40 MiB and its tags: 9 parts, 2 of them twice. */
    assert_int_equal(fstore_s3_count(&S, "UploadPart"), 11);
    assert_int_equal(fstore_s3_count(&S, "CompleteMultipartUpload"), 1);
    fprintf(stderr, "peak RSS of the agent (and the job's tools): %ld KiB for a 40 MiB "
            "checkpoint\n", ru.ru_maxrss);
    assert_true(ru.ru_maxrss < 40 * 1024 + SANITIZER_RSS_KIB);
    assert_no_plaintext();
    assert_nothing_staged("disk1");

    set_job("", false, "");
    run_agent("disk2");
    if (!has(&F.out, "resumed=[big] same"))
        dump();
    assert_true(has(&F.out, "resumed=[big] same"));
}

/* The same through Alibaba OSS (virtual-host addressing, OSS V4
 * presigned URLs the fake recomputes): the agent sends nothing a
 * presigned URL did not sign. */
static void test_oss_multipart_round_trip(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_OSS, 5 << 20, 2, true);
    make_source("ck1", (size_t)11 << 20);
    set_job("ck1", false, "");
    run_agent("disk1");
    if (fstore_count(&S, "durable") != 1)
        dump();
    assert_int_equal(fstore_count(&S, "durable"), 1);
    assert_int_equal(fstore_s3_count(&S, "UploadPart"), 3);
    assert_no_plaintext();
    set_job("", false, "");
    run_agent("disk2");
    if (!has(&F.out, "resumed=[ck1] same"))
        dump();
    assert_true(has(&F.out, "resumed=[ck1] same"));
}

/* Checkpoints that complete while one uploads wait, and only the newest
 * of them is stored next. */
static void test_newest_waiting_wins(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_FILE, 5 << 20, 4, true);
    /* ck1's upload is still being offered when ck2 and ck3 complete (0.1 s
     * apart): on a fast machine a small upload is done before the next.
     * With `keep: 1` ck1 would be pruned then; being stored, it is not. */
    S.post_delay_ms = 800;
    make_source("ck1", 1000);
    make_source("ck2", 1000);
    make_source("ck3", 1000);
    const char *job = fake_script(&F, "job.sh", JOB_STORE);
    fake_set_job(&F, "{\"job_id\": \"" FSTORE_JOB "\", \"argv\": [\"%s\"], \"env\": "
                 "{\"SRC\": \"%s/src\", \"CKPTS\": \"ck1 ck2 ck3\", \"GAP\": \"0.1\"}, "
                 "\"checkpoint\": {\"dir\": \"\", \"keep\": 1}%s}", job, F.dir,
                 fstore_doc(&S));
    run_agent("disk1");
    assert_int_equal(F.agent_status, 0);
    if (fstore_count(&S, "durable") != 2)
        dump();
    assert_int_equal(S.posts, 2);
    assert_int_equal(fstore_count(&S, "durable"), 2);
    assert_string_equal(json_string_value(json_object_get(fstore_row(&S, 0), "name")), "ck1");
    assert_string_equal(json_string_value(json_object_get(fstore_row(&S, 1), "name")), "ck3");
    assert_true(has(&F.agent_err, "checkpoint ck2 is not stored: ck3 is newer"));
}

/* 300 files with 64 descriptors: an upload holds one object per transfer
 * in flight and one for the hash pass, a resume one object at a time,
 * whatever the number of files. */
static void test_many_files_few_descriptors(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_S3, 5 << 20, 4, true);
    make_source("ck1", 10);
    for (int i = 0; i < 300; i++) {
        char path[700];
        snprintf(path, sizeof(path), "%s/src/ck1/sub/f%03d", F.dir, i);
        write_file(path, MARKER, (size_t)i);
    }
    char wrapper[4096];
    snprintf(wrapper, sizeof(wrapper), "#!/bin/sh\nulimit -n 64\nexec '%s' \"$@\"\n",
             getenv("EBB_AGENT"));
    char *agent = strdup(getenv("EBB_AGENT"));
    assert_non_null(agent);
    setenv("EBB_AGENT", fake_script(&F, "agent-64-fds.sh", wrapper), 1);
    set_job("ck1", false, "");
    run_agent("disk1");
    bool stored = fstore_count(&S, "durable") == 1;
    set_job("", false, "");
    run_agent("disk2");
    setenv("EBB_AGENT", agent, 1);
    free(agent);
    if (!stored || !has(&F.out, "resumed=[ck1] same"))
        dump();
    assert_true(stored);
    assert_true(has(&F.out, "resumed=[ck1] same"));
}

/* ---- faults ---- */

/* A link inside a checkpoint: the store could not bring it back as it
 * was, so it is not stored, and ebbd hears why. */
static void test_link_in_checkpoint_is_not_stored(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_FILE, 5 << 20, 4, true);
    make_source("ck1", 10);
    char path[700];
    snprintf(path, sizeof(path), "%s/src/ck1/sub/passwd", F.dir);
    assert_int_equal(symlink("/etc/passwd", path), 0);
    set_job("ck1", false, "");
    run_agent("disk1");
    assert_int_equal(F.agent_status, 0);
    assert_int_equal(S.posts, 0);
    assert_int_equal(count("checkpoint_skipped"), 1);
    json_t *sk = fake_event(&F, "checkpoint_skipped", 0);
    assert_string_equal(json_string_value(json_object_get(sk, "name")), "ck1");
    assert_non_null(strstr(json_string_value(json_object_get(sk, "reason")),
                           "sub/passwd is a symbolic link"));
}

/* The store refuses the first URLs (403, as for expired ones): the agent
 * asks ebbd for fresh ones and the upload goes on. */
static void test_refused_urls_are_refreshed(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_S3, 5 << 20, 2, true);
    make_source("ck1", (size_t)6 << 20);
    S.spoil_urls = 1;
    set_job("ck1", false, "");
    run_agent("disk1");
    if (fstore_count(&S, "durable") != 1)
        dump();
    assert_int_equal(fstore_count(&S, "durable"), 1);
    assert_int_equal(S.url_gets, 2);
    assert_true(has(&F.agent_err, "asking ebbd for fresh ones"));
}

/* A fault on GetObject of checkpoint `nth`'s model.bin: `count` 403s. */
static void refuse_model_gets(size_t nth, int count)
{
    char key[512], faults[1024];
    fstore_key(fstore_row(&S, nth), 2, key, sizeof(key));
    snprintf(faults, sizeof(faults), "[{\"op\": \"GetObject\", \"status\": 403, "
             "\"code\": \"AccessDenied\", \"count\": %d, \"key_contains\": \"%s\"}]",
             count, key);
    fstore_faults(&S, faults);
}

/* The store refuses a download URL mid-resume (403, as when it expired
 * during a long download): the agent asks ebbd for fresh ones and goes
 * on where it was, asking again only for the range refused. */
static void test_expired_download_url_is_refreshed(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_S3, 5 << 20, 2, true);
    make_source("ck1", (size_t)20 << 20);
    set_job("ck1", false, "");
    run_agent("disk1");
    assert_int_equal(fstore_count(&S, "durable"), 1);
    int gets = fstore_s3_count(&S, "GetObject"), lists = S.resume_gets;
    refuse_model_gets(0, 1);
    set_job("", false, "");
    run_agent("disk2");
    if (!has(&F.out, "resumed=[ck1] same"))
        dump();
    assert_true(has(&F.out, "resumed=[ck1] same"));
    assert_int_equal(count("checkpoint_fallback"), 0);
    assert_int_equal(S.resume_gets - lists, 2);
    assert_true(has(&F.agent_err, "asking ebbd for fresh ones"));
    /* The manifest, state.txt, sub/empty, model.bin's 3 ranges (20 MiB
     * and tags in 8 MiB) and the one refused again. */
    assert_int_equal(fstore_s3_count(&S, "GetObject") - gets, 7);
}

/* Refused again after every fresh URL: after 3 the checkpoint is refused
 * with an event saying why, and the one before it comes back. */
static void test_refused_downloads_fall_back(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_S3, 5 << 20, 2, true);
    make_source("ck1", 1000);
    make_source("ck2", (size_t)20 << 20);
    set_job("ck1 ck2", false, "");
    run_agent("disk1");
    assert_int_equal(fstore_count(&S, "durable"), 2);
    int lists = S.resume_gets;
    refuse_model_gets(1, 100);
    set_job("", false, "");
    run_agent("disk2");
    if (!has(&F.out, "resumed=[ck1] same"))
        dump();
    assert_true(has(&F.out, "resumed=[ck1] same"));
    assert_int_equal(S.resume_gets - lists, 4);
    assert_int_equal(count("checkpoint_fallback"), 1);
    json_t *fb = fake_event(&F, "checkpoint_fallback", 0);
    assert_string_equal(json_string_value(json_object_get(fb, "name")), "ck2");
    assert_non_null(strstr(json_string_value(json_object_get(fb, "reason")),
                           "downloading sub/model.bin: the store refused its URL (HTTP 403) "
                           "after 3 fresh ones from ebbd"));
}

/* ck2's object altered: the agent says why and resumes from ck1. Then
 * ck1's manifest cut short as well: no checkpoint is left, the job
 * starts afresh. */
static void test_tampered_falls_back(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_FILE, 5 << 20, 4, true);
    make_source("ck1", 1000);
    make_source("ck2", 1000);
    set_job("ck1 ck2", false, "");
    run_agent("disk1");
    assert_int_equal(fstore_count(&S, "durable"), 2);

    char key[512];
    size_t len = 0;
    json_t *ck2 = fstore_row(&S, 1);
    char *data = fstore_get(&S, fstore_key(ck2, 2, key, sizeof(key)), &len);
    assert_non_null(data);
    data[len / 2] ^= 0x01;
    fstore_put(&S, key, data, len);
    free(data);
    set_job("", false, "");
    run_agent("disk2");
    if (!has(&F.out, "resumed=[ck1] same"))
        dump();
    assert_true(has(&F.out, "resumed=[ck1] same"));
    assert_int_equal(count("checkpoint_fallback"), 1);
    json_t *fb = fake_event(&F, "checkpoint_fallback", 0);
    assert_string_equal(json_string_value(json_object_get(fb, "name")), "ck2");
    assert_non_null(strstr(json_string_value(json_object_get(fb, "reason")),
                           "sub/model.bin"));
    assert_int_equal(json_integer_value(json_object_get(fake_event(&F, "started", 0),
                                                        "resume_id")), 1);

    json_t *ck1 = fstore_row(&S, 0);
    data = fstore_get(&S, fstore_key(ck1, -1, key, sizeof(key)), &len);
    assert_non_null(data);
    fstore_put(&S, key, data, len - 10);
    free(data);
    run_agent("disk3");
    if (!has(&F.out, "resumed=[]"))
        dump();
    assert_true(has(&F.out, "resumed=[]"));
    assert_int_equal(count("checkpoint_fallback"), 2);
    fb = fake_event(&F, "checkpoint_fallback", 1);
    assert_string_equal(json_string_value(json_object_get(fb, "name")), "ck1");
    assert_non_null(strstr(json_string_value(json_object_get(fb, "reason")), "manifest"));
    assert_true(has(&F.agent_err, "starts from the beginning"));
    /* Nothing half-downloaded is left in the checkpoint directory. */
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s/disk3/checkpoints/" FSTORE_JOB
             "' | grep -v '^.ebb-checkpoint')\"", F.dir);
    assert_int_equal(system(cmd), 0);
}

/* Through S3: ck3's object gone, ck2's cut short: both refused, saying
 * why, and ck1 comes back. */
static void test_missing_and_truncated_objects_fall_back(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_S3, 5 << 20, 4, true);
    make_source("ck1", 1000);
    make_source("ck2", 1000);
    make_source("ck3", 1000);
    set_job("ck1 ck2 ck3", false, "");
    run_agent("disk1");
    assert_int_equal(fstore_count(&S, "durable"), 3);
    char key[512];
    size_t len = 0;
    char *data = fstore_get(&S, fstore_key(fstore_row(&S, 1), 0, key, sizeof(key)), &len);
    assert_non_null(data);
    fstore_put(&S, key, data, len - 20);
    free(data);
    fstore_delete(&S, fstore_key(fstore_row(&S, 2), 2, key, sizeof(key)));
    set_job("", false, "");
    run_agent("disk2");
    if (!has(&F.out, "resumed=[ck1] same"))
        dump();
    assert_true(has(&F.out, "resumed=[ck1] same"));
    assert_int_equal(count("checkpoint_fallback"), 2);
    json_t *fb3 = fake_event(&F, "checkpoint_fallback", 0);
    json_t *fb2 = fake_event(&F, "checkpoint_fallback", 1);
    assert_string_equal(json_string_value(json_object_get(fb3, "name")), "ck3");
    assert_string_equal(json_string_value(json_object_get(fb2, "name")), "ck2");
    assert_non_null(strstr(json_string_value(json_object_get(fb3, "reason")),
                           "downloading sub/model.bin: HTTP 404"));
    assert_non_null(strstr(json_string_value(json_object_get(fb2, "reason")), "state.txt"));
}

static void kill_agent(struct fake_store *fs)
{
    if (!fs->f->agent_exited)
        uv_process_kill(&fs->f->agent, SIGKILL);
    fs->on_uploading = NULL;
}

/* The job rewrites a file of its complete checkpoint (same size) while
 * the agent stores it: ebbd has just made the upload, the hash pass has
 * most likely read the old bytes, the parts will read the new ones.
 * Either the checkpoint is not stored (`checkpoint_skipped` says which
 * file changed, nothing is committed), or, when both read the new bytes,
 * it is durable and comes back verified. Never a durable checkpoint
 * whose objects are not the ones its manifest lists. */
static void rewrite_model(struct fake_store *fs)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/disk1/checkpoints/%s/ck1/sub/model.bin", fs->f->dir,
             FSTORE_JOB);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "REWRITTEN", 9, 0), 9);
    close(fd);
    fs->on_uploading = NULL;
}

static void test_checkpoint_changed_while_stored(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_S3, 5 << 20, 2, true);
    make_source("ck1", (size_t)12 << 20);
    S.on_uploading = rewrite_model;
    set_job("ck1", false, "");
    run_agent("disk1");
    json_t *sk = fake_event(&F, "checkpoint_skipped", 0);
    fprintf(stderr, "a checkpoint rewritten during its upload: %s\n",
            sk ? "not stored" : "stored as rewritten");
    if (sk != NULL) {
        assert_string_equal(json_string_value(json_object_get(sk, "reason")),
                            "sub/model.bin changed while it was read");
        assert_int_equal(S.commits, 0);
        assert_int_equal(fstore_count(&S, "durable"), 0);
        set_job("", false, "");
        run_agent("disk2");
        assert_true(has(&F.out, "resumed=[]"));
        return;
    }
    assert_int_equal(fstore_count(&S, "durable"), 1);
    set_job("", false, "");
    run_agent("disk2");
    assert_int_equal(json_integer_value(json_object_get(fake_event(&F, "started", 0),
                                                        "resume_id")), 1);
    assert_true(has(&F.out, "resumed=[ck1] differ"));
}

/* SIGKILL while the objects travel: there is never a commit, nothing is
 * offered for resume, and nothing is left on the disk but the checkpoint. */
static void test_sigkill_mid_upload_never_commits(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_S3, 5 << 20, 2, true);
    make_source("ck1", (size_t)12 << 20);
    S.on_uploading = kill_agent;
    set_job("ck1", false, "");
    run_agent("disk1");
    assert_int_equal(F.agent_signal, SIGKILL);
    fake_run_for(&F, 1500);
    assert_int_equal(S.commits, 0);
    assert_int_equal(fstore_count(&S, "durable"), 0);
    assert_int_equal(fstore_s3_count(&S, "CompleteMultipartUpload"), 0);
    assert_nothing_staged("disk1");

    set_job("", false, "");
    run_agent("disk2");
    assert_true(has(&F.out, "resumed=[]"));
    assert_int_equal(count("checkpoint_fallback"), 0);
}

/* SIGTERM while the stored checkpoints are being listed: the job never
 * starts, nothing is signalled, ebbd hears a stopped run. */
static void test_stop_before_the_job_started(void **state)
{
    (void)state;
    fstore_init(&S, &F, FSTORE_FILE, 5 << 20, 4, true);
    S.resume_delay_ms = 3000;
    set_job("", false, "");
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/disk1", F.dir);
    const char *extra[] = {"--disk", dir, NULL};
    fake_start_agent(&F, FAKE_TOKEN, NULL, extra);
    while (S.resume_gets == 0 && !F.watchdog_fired)
        uv_run(&F.loop, UV_RUN_ONCE);
    uv_process_kill(&F.agent, SIGTERM);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 4);
    assert_int_equal(count("started"), 0);
    json_t *ex = fake_event(&F, "exited", 0);
    assert_non_null(ex);
    assert_true(json_is_true(json_object_get(ex, "stopped")));
    assert_int_equal(json_integer_value(json_object_get(ex, "status")), -1);
    assert_false(has(&F.out, "resumed="));
}

/* ---- the notice ---- */

/* The agent has heard that ck1 is durable (and measured its upload). */
static bool durable_one(struct fake *f)
{
    return has(&f->agent_err, "checkpoint ck1 is durable") || fake_agent_done(f);
}

/* ck1 (written in 1.2 s after the periodic signal) is durable, ebbd
 * taking `complete_ms` to answer its commit; then a notice with
 * `grace_ms` left. */
static void run_notice(int grace_ms, int complete_ms)
{
    fstore_init(&S, &F, FSTORE_FILE, 5 << 20, 4, true);
    S.commit_delay_ms = complete_ms;
    make_source("ck1", 1000);
    make_source("ck2", 1000);
    char ckpt[128];
    snprintf(ckpt, sizeof(ckpt), ", \"every_ms\": 1500, \"grace_ms\": %d", grace_ms);
    set_job("", true, ckpt);
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/disk1", F.dir);
    const char *extra[] = {"--disk", dir, NULL};
    fake_start_agent(&F, FAKE_TOKEN, NULL, extra);
    fake_run_until(&F, durable_one);
    assert_int_equal(fstore_count(&S, "durable"), 1);
    fake_post_notice(&F);
    fake_run_until(&F, fake_agent_done);
}

/* The final checkpoint would take longer than the notice leaves: it is
 * not asked for, `checkpoint_skipped` says why, ck1 stays the resume
 * point. */
static void test_notice_too_short_skips_final(void **state)
{
    (void)state;
    run_notice(1000, 0);
    if (count("checkpoint_skipped") != 1)
        dump();
    assert_int_equal(count("checkpoint_skipped"), 1);
    json_t *sk = fake_event(&F, "checkpoint_skipped", 0);
    assert_string_equal(json_string_value(json_object_get(sk, "name")), "ck1");
    assert_non_null(strstr(json_string_value(json_object_get(sk, "reason")), "1000 ms are left"));
    assert_true(has(&F.out, "got TERM"));
    assert_int_equal(S.posts, 1);
    json_t *ex = fake_event(&F, "exited", 0);
    assert_true(json_is_true(json_object_get(ex, "stopped")));
    assert_false(json_is_true(json_object_get(ex, "checkpointed")));
}

/* Enough time: the final checkpoint is taken and stored before `exited`,
 * which says a durable checkpoint was made. */
static void test_notice_long_enough_stores_final(void **state)
{
    (void)state;
    run_notice(8000, 0);
    if (fstore_count(&S, "durable") != 2)
        dump();
    assert_int_equal(count("checkpoint_skipped"), 0);
    assert_int_equal(fstore_count(&S, "durable"), 2);
    json_t *ex = fake_event(&F, "exited", 0);
    assert_true(json_is_true(json_object_get(ex, "stopped")));
    assert_true(json_is_true(json_object_get(ex, "checkpointed")));
    assert_int_equal(json_integer_value(json_object_get(ex, "status")), 0);
}

/* The transfer and the job's write fit the notice, the time ebbd took to
 * complete the last upload does not: the final checkpoint is not asked
 * for, and the reason counts ebbd's part. */
static void test_notice_counts_ebbds_completion(void **state)
{
    (void)state;
    run_notice(4000, 3500);
    if (count("checkpoint_skipped") != 1)
        dump();
    assert_int_equal(count("checkpoint_skipped"), 1);
    const char *why = json_string_value(json_object_get(fake_event(&F, "checkpoint_skipped", 0),
                                                        "reason"));
    assert_non_null(strstr(why, "ms to complete); 4000 ms are left"));
    assert_true(has(&F.out, "got TERM"));
    assert_int_equal(S.posts, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* First: its peak RSS counts only the processes reaped before it. */
        cmocka_unit_test_setup_teardown(test_s3_multipart_parallel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_store_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_store_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gang_resume_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oss_multipart_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newest_waiting_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_files_few_descriptors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_urls_are_refreshed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_link_in_checkpoint_is_not_stored, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_expired_download_url_is_refreshed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_refused_downloads_fall_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tampered_falls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_and_truncated_objects_fall_back, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_changed_while_stored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigkill_mid_upload_never_commits, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stop_before_the_job_started, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notice_too_short_skips_final, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notice_counts_ebbds_completion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notice_long_enough_stores_final, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
