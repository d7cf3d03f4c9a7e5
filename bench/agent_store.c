/* bench-agent-store: a checkpoint of one MIB-MiB file (default 1024) up
 * to the store and back through the real ebb-agent, against curl doing
 * the same transfers to the same server in the same run.
 *
 * The store is the strict S3 fake of tests/objstore (python3-botocore;
 * every presigned URL verified), behind the fake ebbd's store endpoints
 * of tests/agent (fake_store.c): 64 MiB parts, 4 at once, encrypted. The
 * agent's figures: the transfer (the commit's upload_ms: every part
 * sealed as it is sent, beside the hash pass), the whole upload from the
 * complete checkpoint to `durable` and, within it, ebbd's completion
 * (CompleteMultipartUpload, which the Python fake does in about 1.5 s
 * per GiB, and the manifest), and the resume (download,
 * every chunk opened and verified, written into the checkpoint
 * directory and flushed to its disk: `started`'s download_ms). curl: one
 * presigned PUT of the plaintext file, one presigned GET of the agent's
 * stored object into a file (not flushed), and that GET again with its
 * file fsync()ed (sync FILE), as the resume's are. The disk is sync()ed
 * before the resume and before each of curl's GETs, so that none pays
 * for the write-back of what came before. Peak RSS of the agent over
 * both runs (and its job's cp). Figures only; it fails only when a
 * transfer fails.
 *
 * Usage: bench-agent-store [MIB]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake.h"
#include "fake_store.h"
#include "objstore/objstore.h"

static struct fake F;
static struct fake_store S;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run_agent(const char *disk, const char *ckpts)
{
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/%s", F.dir, disk);
    const char *job = fake_script(&F, "job.sh",
                                  "#!/bin/sh\n"
                                  "for c in $CKPTS; do cp -r \"$SRC/$c\" \"$EBB_CHECKPOINT_DIR/.t\" && "
                                  "mv \"$EBB_CHECKPOINT_DIR/.t\" \"$EBB_CHECKPOINT_DIR/$c\"; done\n");
    fake_set_job(&F, "{\"job_id\": \"" FSTORE_JOB "\", \"argv\": [\"%s\"], \"env\": "
                 "{\"SRC\": \"%s/src\", \"CKPTS\": \"%s\"}, \"checkpoint\": {\"dir\": \"\"}%s}",
                 job, F.dir, ckpts, fstore_doc(&S));
    const char *extra[] = {"--disk", dir, getenv("BENCH_VERBOSE") ? "--log-level" : NULL,
                           "debug", NULL};
    json_array_clear(F.events);
    ebb_buf_free(&F.agent_err);
    F.agent_exited = false;
    fake_start_agent(&F, FAKE_TOKEN, NULL, extra);
    fake_run_until(&F, fake_agent_done);
}

/* The number after `key` in the agent's log ("... 1234 ms in all"). */
static double log_number_before(const char *words)
{
    const char *at = F.agent_err.data ? strstr(F.agent_err.data, words) : NULL;
    if (at == NULL)
        return -1;
    const char *p = at;
    while (p > F.agent_err.data && p[-1] == ' ')
        p--;
    while (p > F.agent_err.data && p[-1] >= '0' && p[-1] <= '9')
        p--;
    return strtod(p, NULL);
}

static double curl(const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "curl -sSf %s", args);
    double t0 = now_s();
    if (system(cmd) != 0) {
        fprintf(stderr, "curl failed: %s\n", cmd);
        exit(1);
    }
    return now_s() - t0;
}

int main(int argc, char **argv)
{
    char *end = NULL;
    long mib = argc > 1 ? strtol(argv[1], &end, 10) : 1024;
    if (mib < 1 || mib > (1L << 20) || (end != NULL && *end != '\0')) {
        fprintf(stderr, "usage: bench-agent-store [MIB]\n");
        return 2;
    }
    setenv("EBB_AGENT", EBB_BENCH_AGENT, 0);
    setenv("EBB_SOURCE_ROOT", EBB_BENCH_SOURCE_ROOT, 0);
    fake_init(&F, 3600 * 1000);
    fstore_init(&S, &F, FSTORE_S3, (int64_t)64 << 20, 4, true);
    char path[800];
    snprintf(path, sizeof(path), "mkdir -p '%s/src/big' && head -c %ldM /dev/urandom > "
             "'%s/src/big/model.bin'", F.dir, mib, F.dir);
    if (system(path) != 0)
        return 1;

    run_agent("disk1", "big");
    json_t *row = fstore_row(&S, 0);
    if (row == NULL || fstore_count(&S, "durable") != 1) {
        fprintf(stderr, "the upload failed:\n%s\n", F.agent_err.data ? F.agent_err.data : "");
        return 1;
    }
    if (getenv("BENCH_VERBOSE") != NULL)
        fprintf(stderr, "%s", F.agent_err.data ? F.agent_err.data : "");
    double up_all = log_number_before(" ms in all") / 1000.0;
    const char *done = F.agent_err.data ? strstr(F.agent_err.data, "ebbd completed it in ") : NULL;
    double up_commit = done ? strtod(done + strlen("ebbd completed it in "), NULL) / 1000.0 : -1;
    double up_xfer = (double)json_integer_value(json_object_get(
                         json_object_get(row, "commit"), "upload_ms")) / 1000.0;

    /* The upload's dirty pages (source, copy) go to the disk
     * first, so that the resume does not pay for their write-back, nor
     * curl later for the resume's. */
    sync();
    run_agent("disk2", "");
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    json_t *st = fake_event(&F, "started", 0);
    if (json_integer_value(json_object_get(st, "resume_id")) != 1) {
        fprintf(stderr, "the resume failed (agent status %d, signal %d):\n%s\n",
                (int)F.agent_status, F.agent_signal, F.agent_err.data ? F.agent_err.data : "");
        return 1;
    }
    if (getenv("BENCH_VERBOSE") != NULL)
        fprintf(stderr, "%s", F.agent_err.data ? F.agent_err.data : "");
    double down = (double)json_integer_value(json_object_get(st, "download_ms")) / 1000.0;

    char key[512], *put = NULL, *get = NULL, args[4096];
    if (ebb__objstore_presign(S.os, EBB__PRESIGN_PUT, "bench/curl", NULL, 0, 3600, &put) != 0 ||
        ebb__objstore_presign(S.os, EBB__PRESIGN_GET, fstore_key(row, 0, key, sizeof(key)),
                              NULL, 0, 3600, &get) != 0)
        return 1;
    /* No "Expect: 100-continue": the fake answers none, and curl would wait
     * a second for it. */
    snprintf(args, sizeof(args), "-H 'Expect:' -o /dev/null -T '%s/src/big/model.bin' '%s'",
             F.dir, put);
    double cput = curl(args);
    snprintf(args, sizeof(args), "-o '%s/curl.out' '%s'", F.dir, get);
    sync();
    double cget = curl(args);
    /* The same GET made durable as the resume is: its file fsync()ed. */
    snprintf(args, sizeof(args), "-o '%s/curl2.out' '%s' && sync '%s/curl2.out'", F.dir, get,
             F.dir);
    sync();
    double cdurable = curl(args);
    free(put);
    free(get);

    printf("%ld MiB checkpoint, one file, to the S3 fake (tests/objstore/fake_s3.py) on "
           "127.0.0.1 and back\n", mib);
    printf("%-34s %9s %9s %9s\n", "", "ebb s", "curl s", "ebb/curl");
    printf("%-34s %9.2f %9.2f %9.2f\n", "upload: transfer (64 MiB parts, 4)", up_xfer, cput,
           up_xfer / cput);
    printf("%-34s %9.2f %9s %9.2f\n", "upload: all, to durable", up_all, "", up_all / cput);
    printf("%-34s %9.2f %9s %9.2f\n", "  less ebbd's completion", up_all - up_commit, "",
           (up_all - up_commit) / cput);
    printf("%-34s %9.2f %9.2f %9.2f\n", "resume: download + open + write", down, cget,
           down / cget);
    printf("%-34s %9.2f %9.2f %9.2f\n", "  against curl + fsync of its file", down, cdurable,
           down / cdurable);
    printf("peak RSS of the agent, either run (and its job's cp): %ld KiB\n", ru.ru_maxrss);
    fstore_close(&S);
    fake_close(&F);
    return 0;
}
