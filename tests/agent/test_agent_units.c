/* ebb-agent's pieces alone: the checkpoint directory, nvidia-smi's output
 * (the host probe's and the GPU utilisation samples'), progress lines, the job document, the job's environment (and ebbd's, in
 * its answer to `host`), backoff. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/ckpt.h"
#include "agent/ckpt_seal.h"
#include "agent/ckpt_walk.h"
#include "agent/gpuwatch.h"
#include "agent/hostprobe.h"
#include "agent/job.h"
#include "agent/jobdoc.h"
#include "agent/reporter.h"

static char dir[256];
/* A reader's chunk buffer, as the agent lends one. */
static unsigned char chunk_buf[EBB__CKPT_STREAM_MEMORY];
static int dfd = -1; /* dir, opened as the agent opens its checkpoint dir */

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "%s/ebb-ckpt.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
    char why[512];
    dfd = agent_dir_open_owned(dir, why, sizeof(why));
    assert_true(dfd >= 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(dfd);
    dfd = -1;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

static void make(const char *name, bool is_dir, time_t mtime)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (is_dir) {
        assert_int_equal(mkdir(path, 0700), 0);
        char inner[600];
        snprintf(inner, sizeof(inner), "%s/weights", path);
        FILE *f = fopen(inner, "w");
        assert_non_null(f);
        fputs("w", f);
        fclose(f);
    } else {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
    }
    struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static bool exists(const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

static void test_scan_orders_by_mtime_then_name(void **state)
{
    (void)state;
    make("b", true, 2000);
    make("a", true, 2000);
    make("z", false, 1000);
    make("c", true, 3000);
    make(".tmp-1", true, 9000);
    assert_int_equal(agent_ckpt_mark(dfd, "a", "j-1"), 0); /* markers are not listed */
    struct agent_ckpt_list l;
    assert_int_equal(agent_ckpt_scan(dfd, &l), 0);
    assert_int_equal(l.n, 4);
    assert_string_equal(l.items[0].name, "z");
    assert_string_equal(l.items[1].name, "a");
    assert_string_equal(l.items[2].name, "b");
    assert_string_equal(l.items[3].name, "c");
    assert_string_equal(agent_ckpt_latest(&l)->name, "c");
    assert_true(agent_ckpt_contains(&l, &l.items[1]));
    struct agent_ckpt other = {.name = "a", .mtime = {2001, 0}};
    assert_false(agent_ckpt_contains(&l, &other)); /* rewritten: new */
    agent_ckpt_list_free(&l);
}

static void test_scan_empty(void **state)
{
    (void)state;
    struct agent_ckpt_list l;
    assert_int_equal(agent_ckpt_scan(dfd, &l), 0);
    assert_int_equal(l.n, 0);
    assert_null(agent_ckpt_latest(&l));
    agent_ckpt_list_free(&l);
}

/* The checkpoint directory must be the agent's user's own directory and
 * not a link (#15 finding 1: a spec naming another user's home). */
static void test_dir_open_owned(void **state)
{
    (void)state;
    char why[512], path[400];
    snprintf(path, sizeof(path), "%s/nope", dir);
    assert_int_equal(agent_dir_open_owned(path, why, sizeof(why)), -ENOENT);
    snprintf(path, sizeof(path), "%s/link", dir);
    assert_int_equal(symlink(dir, path), 0);
    assert_int_equal(agent_dir_open_owned(path, why, sizeof(why)), -ELOOP);
    assert_non_null(strstr(why, "symbolic link"));
    /* Another user's directory: as root, one given to nobody; otherwise
     * root's own "/". */
    snprintf(path, sizeof(path), "%s/theirs", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    const char *foreign = path;
    if (geteuid() == 0)
        assert_int_equal(chown(path, 65534, 65534), 0);
    else
        foreign = "/";
    assert_int_equal(agent_dir_open_owned(foreign, why, sizeof(why)), -EPERM);
    assert_non_null(strstr(why, "not to the job's user"));
}

static void test_remove_temporaries_only_marked(void **state)
{
    (void)state;
    make(".tmp-a", true, 1000);
    make(".tmp-b", false, 1000);
    make(".bashrc", false, 1000);  /* the user's own: never marked */
    make(".ssh", true, 1000);
    make(".tmp-other", true, 1000); /* another job's */
    make("done", true, 1000);
    agent_ckpt_mark_temporaries(dfd, "j-1");
    assert_int_equal(agent_ckpt_mark(dfd, ".tmp-other", "j-2"), 0);
    /* .bashrc and .ssh were there before the job ran: only what the job
     * wrote while it ran is its. Marked by hand here, as j-2's. */
    char marker[300];
    snprintf(marker, sizeof(marker), "%s/" AGENT_CKPT_MARK ".bashrc", dir);
    assert_int_equal(unlink(marker), 0);
    snprintf(marker, sizeof(marker), "%s/" AGENT_CKPT_MARK ".ssh", dir);
    assert_int_equal(unlink(marker), 0);
    snprintf(marker, sizeof(marker), "%s/" AGENT_CKPT_MARK ".tmp-other", dir);
    assert_int_equal(unlink(marker), 0);
    assert_int_equal(agent_ckpt_mark(dfd, ".tmp-other", "j-2"), 0);
    size_t removed = 0;
    assert_int_equal(agent_ckpt_remove_temporaries(dfd, "j-1", &removed), 0);
    assert_int_equal(removed, 2);
    assert_false(exists(".tmp-a"));
    assert_false(exists(".tmp-b"));
    assert_false(exists(AGENT_CKPT_MARK ".tmp-a"));
    assert_true(exists(".bashrc"));
    assert_true(exists(".ssh/weights"));
    assert_true(exists(".tmp-other/weights"));
    assert_true(exists("done/weights"));
}

static void test_mark_temporaries_forgets_renamed(void **state)
{
    (void)state;
    make(".tmp-1", true, 1000);
    agent_ckpt_mark_temporaries(dfd, "j-1");
    assert_true(exists(AGENT_CKPT_MARK ".tmp-1"));
    char from[400], to[400];
    snprintf(from, sizeof(from), "%s/.tmp-1", dir);
    snprintf(to, sizeof(to), "%s/step-1", dir);
    assert_int_equal(rename(from, to), 0);
    agent_ckpt_mark_temporaries(dfd, "j-1");
    assert_false(exists(AGENT_CKPT_MARK ".tmp-1"));
}

static void test_prune_only_marked(void **state)
{
    (void)state;
    make("c1", true, 1000);
    make("c2", false, 2000);
    make("c3", true, 3000);
    make("c4", true, 4000);
    make("mine", true, 500);    /* unmarked and oldest: never pruned */
    make("theirs", true, 600);  /* another job's */
    make(".tmp", true, 500);
    for (int i = 1; i <= 4; i++) {
        char name[8];
        snprintf(name, sizeof(name), "c%d", i);
        assert_int_equal(agent_ckpt_mark(dfd, name, "j-1"), 0);
    }
    assert_int_equal(agent_ckpt_mark(dfd, "theirs", "j-2"), 0);
    /* A marker that is a link is no marker. */
    char target[400], link[400];
    snprintf(target, sizeof(target), "%s/" AGENT_CKPT_MARK "c1", dir);
    snprintf(link, sizeof(link), "%s/" AGENT_CKPT_MARK "mine", dir);
    assert_int_equal(symlink(target, link), 0);
    struct agent_ckpt_list l;
    assert_int_equal(agent_ckpt_scan(dfd, &l), 0);
    size_t removed = 0;
    assert_int_equal(agent_ckpt_prune(dfd, &l, 2, "j-1", NULL, 0, &removed), 0);
    assert_int_equal(removed, 2);
    assert_false(exists("c1"));
    assert_false(exists("c2"));
    assert_false(exists(AGENT_CKPT_MARK "c1"));
    assert_true(exists("c3"));
    assert_true(exists("c4"));
    assert_true(exists("mine/weights"));
    assert_true(exists("theirs/weights"));
    assert_true(exists(".tmp")); /* temporaries are not the pruner's */
    removed = 0;
    assert_int_equal(agent_ckpt_prune(dfd, &l, 10, "j-1", NULL, 0, &removed), 0);
    assert_int_equal(removed, 0);
    agent_ckpt_list_free(&l);
}

/* A gang's resume point and the checkpoint being stored are never pruned
 * and do not count among the `keep` newest. */
static void test_prune_spares_the_resume_point(void **state)
{
    (void)state;
    make("gang", true, 1000);
    make("up", true, 1500);
    make("c2", true, 2000);
    make("c3", true, 3000);
    const char *names[] = {"gang", "up", "c2", "c3"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(agent_ckpt_mark(dfd, names[i], "j-1"), 0);
    struct agent_ckpt_list l;
    assert_int_equal(agent_ckpt_scan(dfd, &l), 0);
    size_t removed = 0;
    const char *spare[] = {"gang", NULL, "up"};
    assert_int_equal(agent_ckpt_prune(dfd, &l, 1, "j-1", spare, 3, &removed), 0);
    agent_ckpt_list_free(&l);
    assert_int_equal(removed, 1);
    assert_true(exists("gang"));
    assert_true(exists("up"));
    assert_false(exists("c2"));
    assert_true(exists("c3"));
    assert_true(agent_ckpt_is_marked(dfd, "gang", "j-1"));
    assert_false(agent_ckpt_is_marked(dfd, "gang", "j-2"));
}

/* Removing a marked checkpoint never follows a link inside it. */
static void test_prune_never_follows_links(void **state)
{
    (void)state;
    char outside[300], link[400];
    snprintf(outside, sizeof(outside), "%s.outside", dir);
    assert_int_equal(mkdir(outside, 0700), 0);
    char keep[400];
    snprintf(keep, sizeof(keep), "%s/precious", outside);
    FILE *f = fopen(keep, "w");
    assert_non_null(f);
    fclose(f);
    make("old", true, 1000);
    make("new", true, 4000000000); /* newer than old once the link is in it */
    snprintf(link, sizeof(link), "%s/old/escape", dir);
    assert_int_equal(symlink(outside, link), 0);
    assert_int_equal(agent_ckpt_mark(dfd, "old", "j-1"), 0);
    assert_int_equal(agent_ckpt_mark(dfd, "new", "j-1"), 0);
    struct agent_ckpt_list l;
    assert_int_equal(agent_ckpt_scan(dfd, &l), 0);
    size_t removed = 0;
    assert_int_equal(agent_ckpt_prune(dfd, &l, 1, "j-1", NULL, 0, &removed), 0);
    agent_ckpt_list_free(&l);
    assert_int_equal(removed, 1);
    assert_false(exists("old"));
    assert_int_equal(access(keep, F_OK), 0);
    assert_int_equal(unlink(keep), 0);
    assert_int_equal(rmdir(outside), 0);
}

static void test_mkdir_parents(void **state)
{
    (void)state;
    char deep[400];
    snprintf(deep, sizeof(deep), "%s/x/y/z", dir);
    assert_int_equal(agent_ckpt_mkdir(deep), 0);
    assert_int_equal(agent_ckpt_mkdir(deep), 0);
    make("file", false, 1000);
    char notdir[400];
    snprintf(notdir, sizeof(notdir), "%s/file", dir);
    assert_int_not_equal(agent_ckpt_mkdir(notdir), 0);
}

static void test_nvidia_smi_parse(void **state)
{
    (void)state;
    struct agent_gpu g[4];
    int n = agent_hostprobe_parse("Tesla V100-SXM2-16GB, 16160, 16, 3, 535.104.05\n"
                                  "NVIDIA GeForce RTX 3090, 24576, 1, [N/A], [N/A]\n\n",
                                  g, 4);
    assert_int_equal(n, 2);
    assert_string_equal(g[0].model, "Tesla V100-SXM2-16GB");
    assert_int_equal(g[0].memory_mb, 16160);
    assert_int_equal(g[0].pcie_width, 16);
    assert_int_equal(g[0].pcie_gen, 3);
    assert_string_equal(g[0].driver, "535.104.05");
    assert_string_equal(g[1].model, "NVIDIA GeForce RTX 3090");
    assert_int_equal(g[1].pcie_width, 1);
    assert_int_equal(g[1].pcie_gen, 0);
    assert_string_equal(g[1].driver, "");
    assert_int_equal(agent_hostprobe_parse("", g, 4), 0);
    /* The query before driver_version was asked for: four fields. */
    assert_int_equal(agent_hostprobe_parse("A100, 40960, 16, 4\n", g, 4), EBB_EINVAL);
    assert_int_equal(agent_hostprobe_parse("A100, 40960, 16, 4, 535, 9\n", g, 4), EBB_EINVAL);
    /* More GPUs than room: the first `max` are kept. */
    assert_int_equal(agent_hostprobe_parse("a, 1, 1, 1, 1\nb, 2, 2, 2, 2\n", g, 1), 1);
}

static void test_nvidia_smi_cuda(void **state)
{
    (void)state;
    char cuda[32];
    agent_hostprobe_cuda("Tue Dec  1 10:00:00 2026\n+-----+\n| NVIDIA-SMI 535.104.05   "
                         "Driver Version: 535.104.05   CUDA Version: 12.2     |\n", cuda,
                         sizeof(cuda));
    assert_string_equal(cuda, "12.2");
    agent_hostprobe_cuda("| NVIDIA-SMI 550.54.14  Driver Version: 550.54.14  CUDA Version: "
                         "12.4|", cuda, sizeof(cuda));
    assert_string_equal(cuda, "12.4");
    agent_hostprobe_cuda("| Driver Version: 535.104.05 CUDA Version: N/A |", cuda, sizeof(cuda));
    assert_string_equal(cuda, "");
    agent_hostprobe_cuda("no header at all", cuda, sizeof(cuda));
    assert_string_equal(cuda, "");
    char tiny[3];
    agent_hostprobe_cuda("CUDA Version: 12.2", tiny, sizeof(tiny));
    assert_string_equal(tiny, "");
}

/* The mean over the GPUs that gave a percentage; a line that is not one
 * is left out, and a sample with none is no sample (-1), never "idle". */
static void test_gpu_util_parse(void **state)
{
    (void)state;
    assert_int_equal(agent_gpuwatch_parse("87\n"), 87);
    assert_int_equal(agent_gpuwatch_parse("100\n0\n"), 50);
    assert_int_equal(agent_gpuwatch_parse("10\r\n11\r\n"), 11); /* 10.5, rounded */
    assert_int_equal(agent_gpuwatch_parse("0\n"), 0);
    assert_int_equal(agent_gpuwatch_parse("90\n[N/A]\n"), 90);
    assert_int_equal(agent_gpuwatch_parse("  42  \n"), 42);
    assert_int_equal(agent_gpuwatch_parse(""), -1);
    assert_int_equal(agent_gpuwatch_parse("[Not Supported]\n"), -1);
    assert_int_equal(agent_gpuwatch_parse("101\n-1\n"), -1);
    assert_int_equal(agent_gpuwatch_parse("87 %\n"), -1);
    assert_int_equal(agent_gpuwatch_parse("87, 12\n"), -1);
    assert_int_equal(agent_gpuwatch_parse("\n\n\n"), -1);
    assert_int_equal(agent_gpuwatch_parse("99999999999999999999\n"), -1);
}

static void test_progress_parse(void **state)
{
    (void)state;
    double f = -1;
    assert_true(agent_progress_parse("EBB_PROGRESS 0.5", 16, &f));
    assert_true(f == 0.5);
    assert_true(agent_progress_parse("EBB_PROGRESS 1\r", 15, &f));
    assert_true(f == 1.0);
    assert_true(agent_progress_parse("EBB_PROGRESS 0", 14, &f));
    assert_true(f == 0.0);
    assert_false(agent_progress_parse("EBB_PROGRESS 1.01", 17, &f));
    assert_false(agent_progress_parse("EBB_PROGRESS -0.1", 17, &f));
    assert_false(agent_progress_parse("EBB_PROGRESS nan", 16, &f));
    assert_false(agent_progress_parse("EBB_PROGRESS ", 13, &f));
    assert_false(agent_progress_parse("EBB_PROGRESS 0.5 x", 18, &f));
    assert_false(agent_progress_parse(" EBB_PROGRESS 0.5", 17, &f));
}

static int progress_calls;
static double progress_last;
static void on_progress(void *arg, double fraction)
{
    (void)arg;
    progress_calls++;
    progress_last = fraction;
}

static void test_linescan_split_reads(void **state)
{
    (void)state;
    struct agent_linescan ls = {0};
    progress_calls = 0;
    agent_linescan_feed(&ls, "noise\nEBB_PROG", 14, on_progress, NULL);
    assert_int_equal(progress_calls, 0);
    agent_linescan_feed(&ls, "RESS 0.3", 8, on_progress, NULL);
    assert_int_equal(progress_calls, 0); /* no newline yet */
    agent_linescan_feed(&ls, "\n", 1, on_progress, NULL);
    assert_int_equal(progress_calls, 1);
    assert_true(progress_last == 0.3);
    /* An overlong line never counts, even if it ends like one. */
    char big[600];
    memset(big, 'x', sizeof(big));
    agent_linescan_feed(&ls, big, sizeof(big), on_progress, NULL);
    agent_linescan_feed(&ls, "EBB_PROGRESS 0.9\n", 17, on_progress, NULL);
    assert_int_equal(progress_calls, 1);
    agent_linescan_feed(&ls, "EBB_PROGRESS 0.9\n", 17, on_progress, NULL);
    assert_int_equal(progress_calls, 2);
}

#define DOC(ck, more) \
    "{\"job_id\": \"j-1\", \"argv\": [\"python3\", \"train.py\"], \"checkpoint\": {" ck "}" more "}"

static void test_jobdoc_defaults(void **state)
{
    (void)state;
    struct agent_jobdoc d;
    char err[256] = "";
    const char *text = DOC("\"dir\": \"/ck\"", "");
    assert_int_equal(agent_jobdoc_parse(text, strlen(text), &d, err, sizeof(err)), 0);
    assert_string_equal(d.argv[1], "train.py");
    assert_null(d.argv[2]);
    assert_null(d.env[0]);
    assert_false(d.shell);
    assert_int_equal(d.signal, SIGUSR1);
    assert_int_equal(d.periodic_signal, SIGUSR2);
    assert_int_equal(d.every_ms, 0);
    assert_int_equal(d.grace_ms, 120000);
    assert_int_equal(d.keep, 3);
    assert_int_equal(d.heartbeat_ms, 5000);
    agent_jobdoc_free(&d);

    text = DOC("\"dir\": \"/ck\", \"signal\": \"TERM\", \"periodic_signal\": \"SIGHUP\", "
               "\"every_ms\": 600000, \"grace_ms\": 1, \"keep\": 1",
               ", \"env\": {\"A\": \"1\"}, \"shell\": true, \"requirements\": {\"gpu_count\": 1}");
    assert_int_equal(agent_jobdoc_parse(text, strlen(text), &d, err, sizeof(err)), 0);
    assert_int_equal(d.signal, SIGTERM);
    assert_int_equal(d.periodic_signal, SIGHUP);
    assert_string_equal(d.env[0], "A=1");
    assert_true(d.shell);
    agent_jobdoc_free(&d);
}

static void expect_bad_doc(const char *text, const char *words)
{
    struct agent_jobdoc d;
    char err[256] = "";
    assert_int_equal(agent_jobdoc_parse(text, strlen(text), &d, err, sizeof(err)), EBB_EINVAL);
    if (strstr(err, words) == NULL)
        fail_msg("error \"%s\" does not say \"%s\"", err, words);
    agent_jobdoc_free(&d);
}

static void test_jobdoc_errors(void **state)
{
    (void)state;
    expect_bad_doc("not json", "not JSON");
    expect_bad_doc("[1]", "not a JSON object");
    expect_bad_doc("{\"argv\": [\"x\"], \"checkpoint\": {\"dir\": \"/c\"}}", "\"job_id\"");
    expect_bad_doc(DOC("\"dir\": \"/c\"", ", \"argv\": []"), "argv");
    expect_bad_doc("{\"job_id\": \"j\", \"argv\": [\"x\", 3], \"checkpoint\": {\"dir\": \"/c\"}}",
                   "argv[1]");
    expect_bad_doc("{\"job_id\": \"j\", \"argv\": [\"x\"]}", "\"checkpoint\"");
    expect_bad_doc(DOC("\"dir\": \"\"", ""), "checkpoint.dir");
    expect_bad_doc(DOC("\"dir\": \"/c\", \"signal\": \"SIGKILL\"", ""), "SIGKILL");
    expect_bad_doc(DOC("\"dir\": \"/c\", \"keep\": 0", ""), "\"keep\"");
    expect_bad_doc(DOC("\"dir\": \"/c\", \"grace_ms\": -5", ""), "\"grace_ms\"");
    expect_bad_doc(DOC("\"dir\": \"/c\"", ", \"env\": {\"A\": 1}"), "env.A");
    expect_bad_doc(DOC("\"dir\": \"/c\"", ", \"shell\": \"yes\""), "\"shell\"");
    expect_bad_doc(DOC("\"dir\": \"/c\"", ", \"heartbeat_ms\": 0"), "\"heartbeat_ms\"");
}

static void test_jobdoc_gang(void **state)
{
    (void)state;
    struct agent_jobdoc d;
    char err[256] = "";
    const char *text = DOC("\"dir\": \"/ck\", \"resume\": \"step-00000400\"",
                           ", \"gang\": {\"nodes\": 2, \"rank\": 1}");
    assert_int_equal(agent_jobdoc_parse(text, strlen(text), &d, err, sizeof(err)), 0);
    assert_true(d.has_resume);
    assert_string_equal(d.resume, "step-00000400");
    assert_int_equal(d.gang_nodes, 2);
    assert_int_equal(d.gang_rank, 1);
    agent_jobdoc_free(&d);
    /* "" is a resume point too: none. Without the key: no gang at all. */
    text = DOC("\"dir\": \"/ck\", \"resume\": \"\"", "");
    assert_int_equal(agent_jobdoc_parse(text, strlen(text), &d, err, sizeof(err)), 0);
    assert_true(d.has_resume);
    assert_string_equal(d.resume, "");
    assert_int_equal(d.gang_nodes, 0);
    agent_jobdoc_free(&d);
    text = DOC("\"dir\": \"/ck\"", "");
    assert_int_equal(agent_jobdoc_parse(text, strlen(text), &d, err, sizeof(err)), 0);
    assert_false(d.has_resume);
    agent_jobdoc_free(&d);
    expect_bad_doc(DOC("\"dir\": \"/c\", \"resume\": \"../x\"", ""), "checkpoint.resume");
    expect_bad_doc(DOC("\"dir\": \"/c\", \"resume\": \".tmp-1\"", ""), "checkpoint.resume");
    expect_bad_doc(DOC("\"dir\": \"/c\", \"resume\": 3", ""), "checkpoint.resume");
    expect_bad_doc(DOC("\"dir\": \"/c\"", ", \"gang\": {\"nodes\": 2, \"rank\": 2}"),
                   "\"gang\"");
    expect_bad_doc(DOC("\"dir\": \"/c\"", ", \"gang\": {\"nodes\": 65, \"rank\": 0}"),
                   "\"gang\"");
    expect_bad_doc(DOC("\"dir\": \"/c\"", ", \"gang\": 2"), "\"gang\"");
}

/* ebbd's env in its answer to `host`, strictly; the job document's as
 * before. */
static void expect_env(const char *json, bool strict, const char *words)
{
    json_t *env = json_loads(json, JSON_ALLOW_NUL, NULL);
    assert_non_null(env);
    char **out = NULL;
    char err[256] = "";
    int rc = agent_env_parse(env, "ebbd's env", strict, &out, err, sizeof(err));
    json_decref(env);
    agent_strv_free(out);
    if (words == NULL) {
        assert_int_equal(rc, 0);
    } else {
        assert_int_equal(rc, EBB_EINVAL);
        if (strstr(err, words) == NULL)
            fail_msg("error \"%s\" does not say \"%s\"", err, words);
    }
}

static void test_env_parse(void **state)
{
    (void)state;
    json_t *env = json_pack("{s:s, s:s}", "MASTER_ADDR", "10.0.0.1", "_X1", "");
    char **out = NULL;
    char err[256];
    assert_int_equal(agent_env_parse(env, "ebbd's env", true, &out, err, sizeof(err)), 0);
    json_decref(env);
    assert_string_equal(out[0], "MASTER_ADDR=10.0.0.1");
    assert_string_equal(out[1], "_X1=");
    assert_null(out[2]);
    agent_strv_free(out);
    assert_int_equal(agent_env_parse(NULL, "ebbd's env", true, &out, err, sizeof(err)), 0);
    assert_null(out[0]);
    agent_strv_free(out);
    expect_env("{\"1A\": \"x\"}", true, "\"1A\" is not a variable name");
    expect_env("{\"1A\": \"x\"}", false, NULL);
    expect_env("{\"A.B\": \"x\"}", true, "not a variable name");
    expect_env("{\"A=B\": \"x\"}", false, "contains '='");
    expect_env("{\"\": \"x\"}", false, "is empty");
    expect_env("{\"A\": \"x\\u0000y\"}", true, "NUL");
    expect_env("{\"A\": null}", true, "ebbd's env.A is not a string");
    expect_env("[]", true, "ebbd's env is not an object");
    json_t *many = json_object();
    for (int i = 0; i <= AGENT_ENV_MAX; i++) {
        char name[16];
        snprintf(name, sizeof(name), "V%d", i);
        json_object_set_new(many, name, json_string("x"));
    }
    assert_int_equal(agent_env_parse(many, "e", true, &out, err, sizeof(err)), EBB_EINVAL);
    assert_non_null(strstr(err, "65 variables, more than 64"));
    agent_strv_free(out);
    json_object_del(many, "V0");
    assert_int_equal(agent_env_parse(many, "e", true, &out, err, sizeof(err)), 0);
    agent_strv_free(out);
    json_decref(many);
    char *big = calloc(1, AGENT_ENV_VALUE_MAX + 2);
    assert_non_null(big);
    memset(big, 'x', AGENT_ENV_VALUE_MAX);
    json_t *one = json_pack("{s:s}", "BIG", big);
    assert_int_equal(agent_env_parse(one, "e", true, &out, err, sizeof(err)), 0);
    agent_strv_free(out);
    json_decref(one);
    big[AGENT_ENV_VALUE_MAX] = 'x';
    one = json_pack("{s:s}", "BIG", big);
    assert_int_equal(agent_env_parse(one, "e", true, &out, err, sizeof(err)), EBB_EINVAL);
    assert_non_null(strstr(err, "e.BIG is longer than 64 KiB"));
    agent_strv_free(out);
    json_decref(one);
    free(big);
}

#define KEY64 "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF"
#define STORE(fields) ", \"store\": {\"name\": \"ckpt\", \"kind\": \"s3\"" fields "}"

static void test_jobdoc_store(void **state)
{
    (void)state;
    struct agent_jobdoc d;
    char err[256] = "";
    /* checkpoint.dir "" is the disk's when the job has a store. */
    const char *text = DOC("\"dir\": \"\"", STORE(", \"key\": \"" KEY64 "\", "
                                                 "\"part_size\": 5242880, \"parallel\": 16"));
    assert_int_equal(agent_jobdoc_parse(text, strlen(text), &d, err, sizeof(err)), 0);
    assert_true(d.has_store);
    assert_string_equal(d.ckpt_dir, "");
    assert_string_equal(d.store.name, "ckpt");
    assert_int_equal(d.store.kind, AGENT_STORE_S3);
    assert_true(d.store.encrypt);
    assert_string_equal(d.store.key_hex, KEY64);
    assert_int_equal(d.store.part_size, 5 << 20);
    assert_int_equal(d.store.parallel, 16);
    assert_int_equal(d.store.key_version, 1);
    agent_jobdoc_free(&d);
    /* Defaults: 64 MiB parts, 4 at once; no key without encryption. */
    text = DOC("\"dir\": \"/c\"", ", \"store\": {\"name\": \"s\", \"kind\": \"file\", "
               "\"encrypt\": false}");
    assert_int_equal(agent_jobdoc_parse(text, strlen(text), &d, err, sizeof(err)), 0);
    assert_int_equal(d.store.kind, AGENT_STORE_FILE);
    assert_false(d.store.encrypt);
    assert_string_equal(d.store.key_hex, "");
    assert_int_equal(d.store.part_size, 64 << 20);
    assert_int_equal(d.store.parallel, 4);
    agent_jobdoc_free(&d);
}

static void test_jobdoc_store_errors(void **state)
{
    (void)state;
    expect_bad_doc(DOC("\"dir\": \"/c\"", ", \"store\": 3"), "\"store\"");
    expect_bad_doc(DOC("\"dir\": \"/c\"", STORE("")), "store.key");
    expect_bad_doc(DOC("\"dir\": \"/c\"", STORE(", \"key\": \"abc\"")), "store.key");
    expect_bad_doc(DOC("\"dir\": \"/c\"",
                       STORE(", \"key\": \"" KEY64 "\", \"part_size\": 5242879")),
                   "part_size");
    expect_bad_doc(DOC("\"dir\": \"/c\"",
                       STORE(", \"key\": \"" KEY64 "\", \"part_size\": 5368709121")),
                   "part_size");
    expect_bad_doc(DOC("\"dir\": \"/c\"", STORE(", \"key\": \"" KEY64 "\", \"parallel\": 17")),
                   "parallel");
    expect_bad_doc(DOC("\"dir\": \"/c\"", STORE(", \"key\": \"" KEY64 "\", \"parallel\": 0")),
                   "parallel");
    expect_bad_doc(DOC("\"dir\": \"/c\"", ", \"store\": {\"name\": \"s\", \"kind\": \"gcs\", "
                       "\"encrypt\": false}"), "store.kind");
    expect_bad_doc(DOC("\"dir\": \"/c\"", ", \"store\": {\"kind\": \"s3\"}"), "\"name\"");
    expect_bad_doc(DOC("\"dir\": \"/c\"", STORE(", \"encrypt\": \"yes\"")), "\"encrypt\"");
}

static void write_text(const char *rel, const char *text)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* A directory checkpoint is listed in the manifest's order ('/' first);
 * a link or a FIFO anywhere refuses it; a file checkpoint is itself. */
static void test_walk(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof(path), "%s/ck", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/ck/a", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    write_text("ck/a/b", "12345");
    write_text("ck/a-b", "x");
    write_text("ck/z", "");
    struct ebb__ckpt_manifest m;
    char why[256] = "";
    assert_int_equal(agent_ckpt_walk(dfd, "ck", &m, why, sizeof(why)), 0);
    assert_int_equal(m.kind, EBB__CKPT_KIND_DIRECTORY);
    assert_int_equal(m.n_files, 3);
    assert_string_equal(m.files[0].path, "a/b");
    assert_int_equal(m.files[0].size, 5);
    assert_string_equal(m.files[1].path, "a-b");
    assert_string_equal(m.files[2].path, "z");
    ebb__ckpt_manifest_clear(&m);

    write_text("one.pt", "weights");
    assert_int_equal(agent_ckpt_walk(dfd, "one.pt", &m, why, sizeof(why)), 0);
    assert_int_equal(m.kind, EBB__CKPT_KIND_FILE);
    assert_int_equal(m.n_files, 1);
    assert_string_equal(m.files[0].path, "one.pt");
    ebb__ckpt_manifest_clear(&m);

    assert_int_equal(symlinkat("/etc/passwd", dfd, "ck/a/link"), 0);
    assert_int_equal(agent_ckpt_walk(dfd, "ck", &m, why, sizeof(why)), EBB_EINVAL);
    assert_non_null(strstr(why, "a/link is a symbolic link"));
    assert_int_equal(m.n_files, 0);
    assert_int_equal(unlinkat(dfd, "ck/a/link", 0), 0);
    assert_int_equal(mkfifoat(dfd, "ck/fifo", 0600), 0);
    assert_int_equal(agent_ckpt_walk(dfd, "ck", &m, why, sizeof(why)), EBB_EINVAL);
    assert_non_null(strstr(why, "fifo is not a regular file"));
    assert_int_equal(symlinkat("ck", dfd, "ln"), 0);
    assert_int_equal(agent_ckpt_walk(dfd, "ln", &m, why, sizeof(why)), EBB_EINVAL);
    /* Opening beneath the directory follows no link on the way. */
    assert_int_equal(agent_open_beneath(dfd, "ln/z"), -ELOOP);
    int fd = agent_open_beneath(dfd, "ck/a/b");
    assert_true(fd >= 0);
    close(fd);
}

static int seen_check(void *arg, uint64_t chunk, const unsigned char *fp)
{
    return agent_seal_check(arg, chunk, fp);
}

/* File `i`'s stored object, read as two parts split at `split` in reads
 * of `step` bytes, as the transfers read it, into a new file `name`. */
static int read_object(struct agent_seal *s, size_t i, uint64_t split, size_t step,
                       const char *name)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int out = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(out >= 0);
    uint64_t size = s->m->files[i].stored_size, cut[3] = {0, split < size ? split : size, size};
    unsigned char *buf = malloc(step);
    assert_non_null(buf);
    for (int part = 0; part < 2; part++) {
        struct agent_seal_reader r;
        assert_int_equal(agent_seal_reader_open(&r, s, i, chunk_buf), 0);
        for (uint64_t at = cut[part]; at < cut[part + 1];) {
            size_t want = cut[part + 1] - at < step ? (size_t)(cut[part + 1] - at) : step;
            ssize_t n = agent_seal_read(&r, at, buf, want, seen_check, s);
            assert_true(n > 0 && (size_t)n <= want);
            assert_int_equal(pwrite(out, buf, (size_t)n, (off_t)at), n);
            at += (uint64_t)n;
        }
        agent_seal_reader_close(&r);
    }
    free(buf);
    return out;
}

static void sha256_of_fd(int fd, unsigned char out[32])
{
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "sha256sum /proc/self/fd/%d", fd);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char hex[65] = "";
    assert_int_equal(fscanf(p, "%64s", hex), 1);
    pclose(p);
    assert_int_equal(ebb__ckpt_unhex(hex, out, 32), 0);
}

/* Objects made as they are sent, in parts at any offset, are the ones the
 * hash pass hashed, hold no plaintext, and open back into the same tree;
 * one flipped byte fails. Three chunks in one file cross every boundary. */
static void test_seal_unseal(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof(path), "%s/ck", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/ck/d", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/ck/d/x", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < (9 << 20) / 16; i++)
        fputs("secret-bytes-xyz", f);
    assert_int_equal(fclose(f), 0);
    write_text("ck/y", "more-plaintext-words");
    struct ebb__ckpt_key key;
    assert_int_equal(ebb__ckpt_key_generate(&key), 0);
    struct ebb__ckpt_manifest m;
    char why[256] = "";
    assert_int_equal(agent_ckpt_walk(dfd, "ck", &m, why, sizeof(why)), 0);
    struct agent_seal s;
    assert_int_equal(agent_seal_prepare(&s, &m, dfd, &key, why, sizeof(why)), 0);
    assert_int_equal(m.files[0].stored_size, ebb__ckpt_stored_size(9 << 20));
    assert_int_equal(s.first_chunk[1], 3);
    assert_int_equal(s.first_chunk[2], 4);
    /* Half the chunks are sent before the hash pass is back. */
    int objects[2];
    objects[0] = read_object(&s, 0, 5 << 20, 131072, "obj0");
    struct ebb__ckpt_sums sums[2];
    assert_int_equal(agent_seal_hash(&s, sums, why, sizeof(why)), 0);
    size_t bad = 9;
    assert_int_equal(agent_seal_hashed(&s, &bad), 0);
    objects[1] = read_object(&s, 1, 50, 7, "obj1");
    for (size_t i = 0; i < 2; i++) {
        unsigned char sha[32];
        sha256_of_fd(objects[i], sha);
        assert_memory_equal(sha, sums[i].stored_sha256, 32);
        assert_int_equal(sums[i].stored_size, m.files[i].stored_size);
        memcpy(m.files[i].sha256, sums[i].sha256, 32);
        memcpy(m.files[i].stored_sha256, sums[i].stored_sha256, 32);
        size_t size = (size_t)m.files[i].stored_size;
        char *all = malloc(size);
        assert_non_null(all);
        assert_int_equal(pread(objects[i], all, size, 0), (ssize_t)size);
        assert_null(memmem(all, size, "secret-byte", 11));
        assert_null(memmem(all, size, "more-plain", 10));
        free(all);
    }
    struct ebb__ckpt_error err = {0};
    assert_int_equal(agent_ckpt_unstage_begin(dfd, ".back", &m, &err), 0);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(lseek(objects[i], 0, SEEK_SET), 0);
        assert_int_equal(agent_ckpt_unstage_file(dfd, ".back", &m, i, &key, ebb__ckpt_fd_read,
                                                 &objects[i], &err),
                         0);
    }
    assert_int_equal(agent_ckpt_unstage_end(dfd, ".back", &m, &err), 0);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "diff -r '%s/ck' '%s/.back'", dir, dir);
    assert_int_equal(system(cmd), 0);
    char byte;
    assert_int_equal(pread(objects[1], &byte, 1, 90), 1);
    byte ^= 1;
    assert_int_equal(pwrite(objects[1], &byte, 1, 90), 1);
    assert_int_equal(agent_ckpt_unstage_begin(dfd, ".back2", &m, &err), 0);
    assert_int_equal(lseek(objects[1], 0, SEEK_SET), 0);
    assert_int_not_equal(agent_ckpt_unstage_file(dfd, ".back2", &m, 1, &key, ebb__ckpt_fd_read,
                                                 &objects[1], &err),
                         0);
    assert_non_null(strstr(err.diag.msg, "y: "));
    close(objects[0]);
    close(objects[1]);
    agent_seal_free(&s);
    ebb__ckpt_manifest_clear(&m);
    ebb__ckpt_key_wipe(&key);
}

/* A file the job changes after its checkpoint was complete: a chunk read
 * again with other bytes is refused before any of it is handed out (no
 * second ciphertext under one nonce), whichever read came first; with
 * encryption or without. A file that grew or shrank fails the hash pass. */
static void test_seal_changed_file(void **state)
{
    (void)state;
    for (int encrypt = 0; encrypt < 2; encrypt++) {
        write_text("c1", "first version of the bytes");
        struct ebb__ckpt_key key;
        assert_int_equal(ebb__ckpt_key_generate(&key), 0);
        struct ebb__ckpt_manifest m;
        char why[256] = "";
        assert_int_equal(agent_ckpt_walk(dfd, "c1", &m, why, sizeof(why)), 0);
        struct agent_seal s;
        assert_int_equal(agent_seal_prepare(&s, &m, dfd, encrypt ? &key : NULL, why,
                                            sizeof(why)), 0);
        struct agent_seal_reader r;
        unsigned char buf[256];
        uint64_t body = encrypt ? EBB__CKPT_HEADER_LEN : 0;
        assert_int_equal(agent_seal_reader_open(&r, &s, 0, chunk_buf), 0);
        assert_true(agent_seal_read(&r, body, buf, sizeof(buf), seen_check, &s) > 0);
        agent_seal_reader_close(&r);
        write_text("c1", "other version of the bytes");  /* same size */
        assert_int_equal(agent_seal_reader_open(&r, &s, 0, chunk_buf), 0);
        memset(buf, 0, sizeof(buf));
        assert_int_equal(agent_seal_read(&r, body, buf, sizeof(buf), seen_check, &s),
                         EBB_EINVAL);
        assert_non_null(strstr(r.why, "c1 changed while it was read"));
        static const unsigned char zero[256];
        assert_memory_equal(buf, zero, sizeof(buf));
        agent_seal_reader_close(&r);
        /* The hash pass read the new bytes: they do not match the sent ones. */
        struct ebb__ckpt_sums sums[1];
        assert_int_equal(agent_seal_hash(&s, sums, why, sizeof(why)), 0);
        size_t bad = 9;
        assert_int_equal(agent_seal_hashed(&s, &bad), EBB_EINVAL);
        assert_int_equal(bad, 0);
        write_text("c1", "a longer version of the bytes");
        assert_int_equal(agent_seal_hash(&s, sums, why, sizeof(why)), EBB_EINVAL);
        assert_non_null(strstr(why, "c1 changed while it was read"));
        write_text("c1", "short");
        assert_int_equal(agent_seal_hash(&s, sums, why, sizeof(why)), EBB_EINVAL);
        assert_non_null(strstr(why, "then fewer"));
        assert_int_equal(agent_seal_reader_open(&r, &s, 0, chunk_buf), 0);
        assert_int_equal(agent_seal_read(&r, body, buf, sizeof(buf), seen_check, &s), EBB_EIO);
        assert_non_null(strstr(r.why, "shorter"));
        agent_seal_reader_close(&r);
        agent_seal_free(&s);
        ebb__ckpt_manifest_clear(&m);
        ebb__ckpt_key_wipe(&key);
        char path[600];
        snprintf(path, sizeof(path), "%s/c1", dir);
        unlink(path);
    }
}

static void test_job_environ(void **state)
{
    (void)state;
    setenv("EBB_AGENT_TOKEN", "secret", 1);
    setenv("EBB_TEST_KEEP", "kept", 1);
    setenv("EBB_TEST_OVER", "old", 1);
    char a[] = "EBB_TEST_OVER=new", b[] = "EBB_JOB_ID=j-1", c[] = "EBB_JOB_ID=j-2";
    char *extra[] = {a, b, c};
    char **env = agent_job_environ(extra, 3);
    assert_non_null(env);
    int keep = 0, over = 0, id = 0;
    for (char **e = env; *e != NULL; e++) {
        assert_true(strncmp(*e, "EBB_AGENT_TOKEN=", 16) != 0);
        keep += strcmp(*e, "EBB_TEST_KEEP=kept") == 0;
        over += strncmp(*e, "EBB_TEST_OVER=", 14) == 0;
        assert_true(strcmp(*e, "EBB_TEST_OVER=old") != 0);
        id += strncmp(*e, "EBB_JOB_ID=", 11) == 0;
        assert_true(strcmp(*e, "EBB_JOB_ID=j-1") != 0);
    }
    assert_int_equal(keep, 1);
    assert_int_equal(over, 1);
    assert_int_equal(id, 1);
    free(env);
}

extern char **environ;

/* A large environment, on both sides: 100,000 variables of the agent's
 * own and 100,000 set by the job document, half of them overriding the
 * agent's and some set twice. Every name comes out once with the value
 * that wins, in the agent's order then the document's (#16 point 11:
 * the merge compared every entry with every other; bench-env times it). */
#define BIG 100000
static void test_job_environ_large(void **state)
{
    (void)state;
    char **own = calloc(BIG + 2, sizeof(*own));
    char **extra = calloc(BIG, sizeof(*extra));
    assert_non_null(own);
    assert_non_null(extra);
    for (size_t i = 0; i < BIG; i++) {
        own[i] = malloc(32);
        extra[i] = malloc(32);
        snprintf(own[i], 32, "V%06zu=own", i);
        /* Even i override the agent's V; the rest set D names, each twice. */
        if (i % 2 == 0)
            snprintf(extra[i], 32, "V%06zu=doc", i);
        else
            snprintf(extra[i], 32, "D%06zu=%s", i / 4, i % 4 == 1 ? "first" : "last");
    }
    own[BIG] = (char *)"EBB_AGENT_TOKEN=secret";
    char **saved = environ;
    environ = own;
    char **env = agent_job_environ(extra, BIG);
    environ = saved;
    assert_non_null(env);
    size_t n = 0, own_kept = 0, doc_v = 0, doc_d = 0;
    for (; env[n] != NULL; n++) {
        const char *e = env[n];
        assert_true(strncmp(e, "EBB_AGENT_TOKEN=", 16) != 0);
        size_t i = strtoul(e + 1, NULL, 10);
        if (strcmp(e + 7, "=own") == 0) {
            assert_true(i % 2 == 1);           /* not overridden */
            assert_int_equal(n, own_kept);     /* the agent's come first, in order */
            assert_int_equal(i, 2 * own_kept + 1);
            own_kept++;
        } else if (e[0] == 'V') {
            assert_string_equal(e + 7, "=doc");
            doc_v++;
        } else {
            assert_string_equal(e + 7, "=last"); /* the later of the two wins */
            doc_d++;
        }
    }
    assert_int_equal(own_kept, BIG / 2);
    assert_int_equal(doc_v, BIG / 2);
    assert_int_equal(doc_d, BIG / 4);
    assert_int_equal(n, BIG / 2 + BIG / 2 + BIG / 4);
    free(env);
    for (size_t i = 0; i < BIG; i++) {
        free(own[i]);
        free(extra[i]);
    }
    free(own);
    free(extra);
}

static void test_backoff_is_capped(void **state)
{
    (void)state;
    for (int i = 0; i < 100; i++) {
        int64_t d1 = agent_backoff_ms(250, 30000, 1);
        assert_true(d1 >= 125 && d1 <= 250);
        int64_t d3 = agent_backoff_ms(250, 30000, 3);
        assert_true(d3 >= 500 && d3 <= 1000);
        int64_t d50 = agent_backoff_ms(250, 30000, 50);
        assert_true(d50 >= 15000 && d50 <= 30000);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scan_orders_by_mtime_then_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scan_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_open_owned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove_temporaries_only_marked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mark_temporaries_forgets_renamed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_only_marked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_spares_the_resume_point, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_never_follows_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mkdir_parents, setup, teardown),
        cmocka_unit_test(test_nvidia_smi_parse),
        cmocka_unit_test(test_nvidia_smi_cuda),
        cmocka_unit_test(test_gpu_util_parse),
        cmocka_unit_test(test_progress_parse),
        cmocka_unit_test(test_linescan_split_reads),
        cmocka_unit_test(test_jobdoc_defaults),
        cmocka_unit_test(test_jobdoc_errors),
        cmocka_unit_test(test_jobdoc_gang),
        cmocka_unit_test(test_env_parse),
        cmocka_unit_test(test_jobdoc_store),
        cmocka_unit_test(test_jobdoc_store_errors),
        cmocka_unit_test_setup_teardown(test_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seal_unseal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seal_changed_file, setup, teardown),
        cmocka_unit_test(test_job_environ),
        cmocka_unit_test(test_job_environ_large),
        cmocka_unit_test(test_backoff_is_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
