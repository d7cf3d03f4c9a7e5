/* Job specs and backtest workloads (src/jobspec*.c).
 *
 * Good specs come from tests/data/jobs/ and examples/jobs/ (found through
 * EBB_SOURCE_ROOT); every error case is a small buffer named "job.yaml" or
 * "w.yaml" whose exact "file:line: message" is asserted, since users and
 * their scripts read those messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "jobs/jobspec.h"

static const char *src_path(const char *rel, char *buf, size_t size)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    snprintf(buf, size, "%s/%s", root != NULL ? root : ".", rel);
    return buf;
}

static ebb_time_ms T(const char *s)
{
    ebb_time_ms t = 0;
    assert_int_equal(ebb_parse_time(s, &t), 0);
    return t;
}

static int zeroed(const struct ebb__job_spec *s)
{
    static const struct ebb__job_spec zero;
    return memcmp(s, &zero, sizeof(zero)) == 0;
}

static void load_data(const char *rel, struct ebb__job_spec *s)
{
    char path[PATH_MAX];
    struct ebb_diag d;
    src_path(rel, path, sizeof(path));
    if (ebb__jobspec_load_file(path, s, &d) != 0)
        fail_msg("%s", d.msg);
}

static int load_text(const char *text, struct ebb__job_spec *s,
                     struct ebb_diag *d)
{
    ebb_diag_clear(d);
    return ebb__jobspec_load_buffer("job.yaml", text, strlen(text), s, d);
}

/* Loads `text` as a job spec, expects EBB_ECONFIG, exactly `msg` and an
 * empty spec. */
static void expect_error(const char *text, const char *msg)
{
    struct ebb__job_spec s;
    struct ebb_diag d;
    memset(&s, 0xa5, sizeof(s));
    int rc = load_text(text, &s, &d);
    if (rc != EBB_ECONFIG)
        fail_msg("rc %d for:\n%s", rc, text);
    assert_true(zeroed(&s));
    if (strcmp(d.msg, msg) != 0)
        fail_msg("for:\n%s\nwant: %s\ngot:  %s", text, msg, d.msg);
}

static void expect_workload_error(const char *text, const char *msg)
{
    struct ebb__workload *w = (struct ebb__workload *)&w;
    struct ebb_diag d;
    int rc = ebb__workload_load_buffer("w.yaml", text, strlen(text), &w, &d);
    if (rc != EBB_ECONFIG)
        fail_msg("rc %d for:\n%s", rc, text);
    assert_null(w);
    if (strcmp(d.msg, msg) != 0)
        fail_msg("for:\n%s\nwant: %s\ngot:  %s", text, msg, d.msg);
}

/* to_json -> from_json -> to_json gives the same text. */
static void round_trip(const struct ebb__job_spec *s)
{
    json_t *j1 = ebb__jobspec_to_json(s);
    assert_non_null(j1);
    struct ebb__job_spec back;
    struct ebb_diag d;
    if (ebb__jobspec_from_json(j1, &back, &d) != 0)
        fail_msg("%s", d.msg);
    json_t *j2 = ebb__jobspec_to_json(&back);
    assert_non_null(j2);
    char *t1 = json_dumps(j1, JSON_COMPACT);
    char *t2 = json_dumps(j2, JSON_COMPACT);
    assert_string_equal(t1, t2);
    assert_true(json_equal(j1, j2));
    free(t1);
    free(t2);
    json_decref(j1);
    json_decref(j2);
    ebb__jobspec_free(&back);
}

/* ---- good specs --------------------------------------------------------- */

static void every_key(void **state)
{
    (void)state;
    struct ebb__job_spec s;
    load_data("tests/data/jobs/full.yaml", &s);
    assert_string_equal(s.name, "resnet50.v2_run-3");
    assert_string_equal(s.run_as, "alice");
    assert_int_equal(s.argc, 6);
    assert_string_equal(s.argv[0], "python");
    assert_string_equal(s.argv[3], "90");
    assert_string_equal(s.argv[5], "/data/imagenet");
    assert_null(s.argv[6]);
    assert_false(s.shell);
    assert_int_equal(s.work, 8 * EBB_MS_PER_HOUR + 30 * EBB_MS_PER_MINUTE);
    assert_true(s.has_deadline);
    assert_false(s.deadline_is_relative);
    assert_int_equal(s.deadline_at, T("2026-12-01T06:00:00Z"));
    assert_true(s.has_budget);
    assert_int_equal(s.budget.amount, 40500000);
    assert_string_equal(s.budget.currency, "USD");
    assert_int_equal(s.restart_overhead, 7 * EBB_MS_PER_MINUTE);
    const struct ebb__job_resources *r = &s.resources;
    assert_int_equal(r->instance_types.n, 2);
    assert_string_equal(r->instance_types.items[1], "p3.8xlarge");
    assert_string_equal(r->gpu_model, "V100");
    assert_int_equal(r->gpu_count, 4);
    assert_true(r->gpu_memory_gb == 16.0);
    assert_int_equal(r->zones.n, 2);
    assert_string_equal(r->zones.items[0], "us-east-1a");
    assert_int_equal(r->regions.n, 1);
    assert_string_equal(r->regions.items[0], "us-east-1");
    assert_int_equal(r->providers.n, 1);
    assert_string_equal(r->providers.items[0], "aws");
    assert_int_equal(s.market, EBB_JOB_SPOT);
    assert_string_equal(s.checkpoint.dir, "/data/ckpt/resnet");
    assert_int_equal(s.checkpoint.signal, SIGUSR2);
    assert_string_equal(s.checkpoint.signal_name, "SIGUSR2");
    assert_int_equal(s.checkpoint.grace, 2 * EBB_MS_PER_MINUTE);
    assert_int_equal(s.checkpoint.every, 45 * EBB_MS_PER_MINUTE);
    assert_string_equal(s.policy, "uniform-progress");
    assert_string_equal(s.team, "vision");
    assert_int_equal(s.max_retries, 5);
    assert_int_equal(s.n_env, 3);
    assert_string_equal(s.env[0], "OMP_NUM_THREADS=4");
    assert_string_equal(s.env[1], "WANDB_MODE=offline");
    assert_string_equal(s.env[2], "EMPTY=");
    assert_null(s.env[3]);
    assert_false(s.has_submit);
    assert_non_null(strstr(s.file, "tests/data/jobs/full.yaml"));
    assert_int_equal(s.line, 2);
    /* An absolute deadline does not depend on the submission time. */
    assert_int_equal(ebb__jobspec_deadline(&s, T("2026-01-01")),
                     T("2026-12-01T06:00:00Z"));
    round_trip(&s);

    /* The JSON says it the way the YAML does. */
    json_t *j = ebb__jobspec_to_json(&s);
    assert_string_equal(json_string_value(json_object_get(j, "file")),
                        s.file);
    json_object_del(j, "file");
    char *text = json_dumps(j, JSON_COMPACT);
    assert_string_equal(
        text,
        "{\"name\":\"resnet50.v2_run-3\",\"run\":[\"python\",\"train.py\","
        "\"--epochs\",\"90\",\"--data\",\"/data/imagenet\"],\"shell\":false,"
        "\"work\":\"8h30m\",\"deadline\":\"2026-12-01T06:00:00Z\","
        "\"budget\":\"40.50 USD\",\"restart_overhead\":\"7m\","
        "\"stall_after\":null,\"resources\":{\"instance_types\":[\"p3.2xlarge\",\"p3.8xlarge\"],"
        "\"gpu\":{\"model\":\"V100\",\"count\":4,\"memory_gb\":16.0},"
        "\"zones\":[\"us-east-1a\",\"us-east-1b\"],\"regions\":"
        "[\"us-east-1\"],\"providers\":[\"aws\"]},\"market\":\"spot\","
        "\"checkpoint\":{\"dir\":\"/data/ckpt/resnet\",\"signal\":"
        "\"SIGUSR2\",\"grace\":\"2m\",\"every\":\"45m\"},\"policy\":"
        "\"uniform-progress\",\"team\":\"vision\",\"run_as\":\"alice\","
        "\"max_retries\":5,"
        "\"env\":{\"OMP_NUM_THREADS\":\"4\",\"WANDB_MODE\":\"offline\","
        "\"EMPTY\":\"\"},\"submit\":null,\"line\":2}");
    free(text);
    json_decref(j);
    ebb__jobspec_free(&s);
    assert_true(zeroed(&s));
    ebb__jobspec_free(&s);
    ebb__jobspec_free(NULL);
}

static void defaults(void **state)
{
    (void)state;
    struct ebb__job_spec s;
    load_data("tests/data/jobs/minimal.yaml", &s);
    assert_string_equal(s.name, "tiny");
    assert_int_equal(s.argc, 1);
    assert_string_equal(s.argv[0], "./job");
    assert_null(s.argv[1]);
    assert_false(s.shell);
    assert_int_equal(s.work, 30 * EBB_MS_PER_MINUTE);
    assert_false(s.has_deadline);
    assert_int_equal(ebb__jobspec_deadline(&s, T("2026-01-01")), 0);
    assert_false(s.has_budget);
    assert_int_equal(s.restart_overhead, 5 * EBB_MS_PER_MINUTE);
    assert_int_equal(s.resources.instance_types.n, 0);
    assert_int_equal(s.resources.zones.n, 0);
    assert_int_equal(s.resources.regions.n, 0);
    assert_int_equal(s.resources.providers.n, 0);
    assert_null(s.resources.gpu_model);
    assert_int_equal(s.resources.gpu_count, 0);
    assert_true(s.resources.gpu_memory_gb == 0);
    assert_int_equal(s.market, EBB_JOB_SPOT_FALLBACK);
    assert_null(s.checkpoint.dir);
    assert_int_equal(s.checkpoint.signal, SIGUSR1);
    assert_string_equal(s.checkpoint.signal_name, "SIGUSR1");
    assert_int_equal(s.checkpoint.grace, 90 * EBB_MS_PER_SECOND);
    assert_int_equal(s.checkpoint.every, 0);
    assert_null(s.policy);
    assert_null(s.team);
    assert_int_equal(s.max_retries, 2);
    assert_int_equal(s.n_env, 0);
    assert_null(s.env);
    assert_false(s.has_submit);
    assert_int_equal(s.line, 2);
    round_trip(&s);

    json_t *j = ebb__jobspec_to_json(&s);
    json_object_del(j, "file");
    char *text = json_dumps(j, JSON_COMPACT);
    assert_string_equal(
        text,
        "{\"name\":\"tiny\",\"run\":[\"./job\"],\"shell\":false,\"work\":"
        "\"30m\",\"deadline\":null,\"budget\":null,\"restart_overhead\":"
        "\"5m\",\"stall_after\":null,\"resources\":{\"instance_types\":[],\"gpu\":null,\"zones\":"
        "[],\"regions\":[],\"providers\":[]},\"market\":\"spot-fallback\","
        "\"checkpoint\":{\"dir\":null,\"signal\":\"SIGUSR1\",\"grace\":"
        "\"1m30s\",\"every\":null},\"policy\":null,\"team\":null,"
        "\"run_as\":null,\"max_retries\":2,\"env\":{},\"submit\":null,\"line\":2}");
    free(text);
    json_decref(j);
    ebb__jobspec_free(&s);

    /* Null values and empty mappings mean "the default" too. */
    struct ebb_diag d;
    assert_int_equal(load_text("name: n\nrun: [x]\nwork: 1h\nbudget:\n"
                               "resources: {}\ncheckpoint: ~\nenv: {}\n"
                               "market: null\n",
                               &s, &d),
                     0);
    assert_false(s.has_budget);
    assert_int_equal(s.market, EBB_JOB_SPOT_FALLBACK);
    assert_int_equal(s.checkpoint.grace, 90 * EBB_MS_PER_SECOND);
    assert_int_equal(s.n_env, 0);
    ebb__jobspec_free(&s);

    /* A gpu mapping without count asks for one GPU. */
    assert_int_equal(load_text("name: n\nrun: [x]\nwork: 1h\n"
                               "resources: {gpu: {model: A100}}\n",
                               &s, &d),
                     0);
    assert_int_equal(s.resources.gpu_count, 1);
    assert_string_equal(s.resources.gpu_model, "A100");
    round_trip(&s);
    ebb__jobspec_free(&s);
}

static void run_forms_and_deadlines(void **state)
{
    (void)state;
    struct ebb__job_spec s;
    load_data("tests/data/jobs/shell.yaml", &s);
    assert_true(s.shell);
    assert_int_equal(s.argc, 1);
    assert_string_equal(s.argv[0], "python prep.py && python train.py 2>&1 "
                                   "| tee train.log\n");
    assert_null(s.argv[1]);
    assert_int_equal(s.market, EBB_JOB_ON_DEMAND);
    assert_true(s.has_deadline);
    assert_true(s.deadline_is_relative);
    assert_int_equal(s.deadline_in, 36 * EBB_MS_PER_HOUR);
    assert_int_equal(ebb__jobspec_deadline(&s, T("2026-01-01T00:00:00Z")),
                     T("2026-01-02T12:00:00Z"));
    round_trip(&s);
    json_t *j = ebb__jobspec_to_json(&s);
    assert_string_equal(json_string_value(json_object_get(j, "run")),
                        s.argv[0]);
    assert_string_equal(json_string_value(json_object_get(j, "deadline")),
                        "1d12h");
    json_decref(j);
    ebb__jobspec_free(&s);

    /* A list without shell, written in block style; signals by short name
     * and in any case; shell: false with a list. */
    struct ebb_diag d;
    assert_int_equal(load_text("name: n\nshell: false\nrun:\n  - /bin/echo\n"
                               "  - hello world\nwork: 90s\n"
                               "checkpoint: {signal: term}\n",
                               &s, &d),
                     0);
    assert_int_equal(s.argc, 2);
    assert_string_equal(s.argv[1], "hello world");
    assert_int_equal(s.checkpoint.signal, SIGTERM);
    assert_string_equal(s.checkpoint.signal_name, "SIGTERM");
    ebb__jobspec_free(&s);

    static const struct {
        const char *text;
        int signo;
    } sigs[] = {{"SIGUSR1", SIGUSR1}, {"usr2", SIGUSR2}, {"SIGINT", SIGINT},
                {"HUP", SIGHUP},      {"SigQuit", SIGQUIT}};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        int signo = 0;
        char name[16];
        assert_int_equal(ebb__job_signal_parse(sigs[i].text, &signo, name),
                         0);
        assert_int_equal(signo, sigs[i].signo);
        assert_int_equal(strncmp(name, "SIG", 3), 0);
    }

    /* Deadlines with an offset; a relative deadline with room to spare. */
    assert_int_equal(load_text("name: n\nrun: [x]\nwork: 8h\n"
                               "deadline: 2026-12-01T14:00:00+08:00\n",
                               &s, &d),
                     0);
    assert_int_equal(s.deadline_at, T("2026-12-01T06:00:00Z"));
    ebb__jobspec_free(&s);
    assert_int_equal(load_text("name: n\nrun: [x]\nwork: 8h\n"
                               "deadline: 8h5m1s\n", &s, &d),
                     0);
    assert_int_equal(ebb__jobspec_deadline(&s, 1000), 1000 + 29101000);
    ebb__jobspec_free(&s);
}

/* ---- errors ------------------------------------------------------------- */

#define HEAD "name: n\nrun: [x]\n"

/* workdir and workdir_exclude: read, round-tripped through JSON, checked
 * at the line of the bad value; and what the patterns leave out. */
static void workdir_keys(void **state)
{
    (void)state;
    struct ebb__job_spec s;
    struct ebb_diag d;
    assert_int_equal(load_text("name: n\nrun: [x]\nwork: 1h\nworkdir: .\n"
                               "workdir_exclude: [.git, \"*.pt\", data/, /top, src/gen/*.c]\n",
                               &s, &d), 0);
    assert_string_equal(s.workdir_src, ".");
    assert_int_equal(s.workdir_line, 4);
    assert_int_equal(s.workdir_exclude.n, 5);
    assert_string_equal(s.workdir_exclude.items[2], "data/");
    round_trip(&s);
    json_t *j = ebb__jobspec_to_json(&s);
    assert_string_equal(json_string_value(json_object_get(j, "workdir")), ".");
    assert_int_equal(json_array_size(json_object_get(j, "workdir_exclude")), 5);
    json_decref(j);
    const struct ebb_string_list *ex = &s.workdir_exclude;
    assert_true(ebb__workdir_excluded(ex, ".git", 1));
    assert_true(ebb__workdir_excluded(ex, "sub/.git", 1));
    assert_true(ebb__workdir_excluded(ex, "model.pt", 0));
    assert_true(ebb__workdir_excluded(ex, "runs/a/.best.pt", 0));
    assert_false(ebb__workdir_excluded(ex, "model.pth", 0));
    assert_true(ebb__workdir_excluded(ex, "data", 1));
    assert_true(ebb__workdir_excluded(ex, "x/data", 1));
    assert_false(ebb__workdir_excluded(ex, "data", 0)); /* data/: directories only */
    assert_true(ebb__workdir_excluded(ex, "top", 0));
    assert_false(ebb__workdir_excluded(ex, "sub/top", 0)); /* anchored */
    assert_true(ebb__workdir_excluded(ex, "src/gen/a.c", 0));
    assert_false(ebb__workdir_excluded(ex, "src/gen/deep/a.c", 0)); /* * stops at / */
    assert_false(ebb__workdir_excluded(ex, "train.py", 0));
    ebb__jobspec_free(&s);

    /* Absent: nothing in the JSON, so older stored specs read the same. */
    assert_int_equal(load_text("name: n\nrun: [x]\nwork: 1h\n", &s, &d), 0);
    assert_null(s.workdir_src);
    j = ebb__jobspec_to_json(&s);
    assert_null(json_object_get(j, "workdir"));
    assert_null(json_object_get(j, "workdir_exclude"));
    json_decref(j);
    ebb__jobspec_free(&s);

    expect_error("name: n\nrun: [x]\nwork: 1h\nworkdir_exclude: [.git]\n",
                 "job.yaml:4: workdir_exclude: leaves out files of the workdir, but "
                 "the job has no workdir: (add workdir: . or remove this key)");
    expect_error("name: n\nrun: [x]\nwork: 1h\nworkdir: \"\"\n",
                 "job.yaml:4: workdir: empty (example: . (the spec file's "
                 "directory))");
    expect_error("name: n\nrun: [x]\nwork: 1h\nworkdir: .\nworkdir_exclude:\n"
                 "  - ok\n  - \"!keep.pt\"\n",
                 "job.yaml:7: workdir_exclude[1]: \"!keep.pt\" negates: \"!\" patterns "
                 "are not supported (leave the file out of the other patterns "
                 "instead) (examples: .git, \"*.pt\", data/)");
    expect_error("name: n\nrun: [x]\nwork: 1h\nworkdir: .\nworkdir_exclude: [\"a/../b\"]\n",
                 "job.yaml:5: workdir_exclude[0]: \"a/../b\" holds a \".\" or \"..\" part "
                 "(patterns name paths inside the workdir) (examples: .git, \"*.pt\", data/)");
    expect_error("name: n\nrun: [x]\nwork: 1h\nworkdir: .\nworkdir_exclude: [\"**/x\"]\n",
                 "job.yaml:5: workdir_exclude[0]: \"**/x\" holds \"**\", which is not "
                 "supported (a pattern without \"/\" already matches at any depth) "
                 "(examples: .git, \"*.pt\", data/)");
    expect_error("name: n\nrun: [x]\nwork: 1h\nworkdir: .\nworkdir_exclude: [\"\"]\n",
                 "job.yaml:5: workdir_exclude[0]: empty");

    /* The JSON reader checks the same. */
    json_t *bad = json_pack("{s:s,s:[s],s:s,s:[s]}", "name", "n", "run", "x", "work",
                            "1h", "workdir_exclude", ".git");
    assert_int_equal(ebb__jobspec_from_json(bad, &s, &d), EBB_ECONFIG);
    assert_non_null(strstr(d.msg, "workdir_exclude: the job has no workdir"));
    json_object_set_new(bad, "workdir", json_string("."));
    json_array_set_new(json_object_get(bad, "workdir_exclude"), 0, json_string("!x"));
    assert_int_equal(ebb__jobspec_from_json(bad, &s, &d), EBB_ECONFIG);
    assert_non_null(strstr(d.msg, "workdir_exclude[0]: negates"));
    json_decref(bad);
}

static void errors(void **state)
{
    (void)state;
    expect_error("name: n\nrun: [x]\nwork: 1h\ndeadine: 2h\n",
                 "job.yaml:4: job: unknown key \"deadine\" (known: name, "
                 "run, shell, work, deadline, budget, restart_overhead, "
                 "resources, market, checkpoint, policy, team, max_retries, "
                 "env, submit, run_as, notify, workdir, workdir_exclude, priority, "
                 "stall_after, min_gpu_util, nodes, gang)");
    /* run_as names a user (whether one exists is ebbd's to say). */
    expect_error("name: n\nrun: [x]\nwork: 1h\nrun_as: \"-rf\"\n",
                 "job.yaml:4: run_as: \"-rf\" is not a user name (1 to 32 "
                 "letters, digits, ., _ and -; example: alice)");
    expect_error("name: n\nrun: [x]\nwork: 1h\nrun_as: \"a b\"\n",
                 "job.yaml:4: run_as: \"a b\" is not a user name (1 to 32 "
                 "letters, digits, ., _ and -; example: alice)");
    /* Wrong types. */
    expect_error(HEAD "work: [1h]\n",
                 "job.yaml:3: work: expected a duration, not a list "
                 "(example: 90s, 5m, 1h30m)");
    expect_error("name: [a]\nrun: [x]\nwork: 1h\n",
                 "job.yaml:1: name: expected a string, not a list (example: "
                 "\"some text\")");
    expect_error("name: n\nrun: {a: b}\nwork: 1h\n",
                 "job.yaml:2: run: expected a list of strings (example: "
                 "[python, train.py]), not a mapping");
    expect_error("name: n\nrun: [x, [y]]\nwork: 1h\n",
                 "job.yaml:2: run[1]: expected a string, not a list "
                 "(example: \"some text\")");
    expect_error(HEAD "work: 1h\nshell: maybe\n",
                 "job.yaml:4: shell: \"maybe\" is not a boolean (example: "
                 "true or false)");
    expect_error(HEAD "work: 1h\nresources: [a]\n",
                 "job.yaml:4: resources: expected a mapping, not a list");
    expect_error(HEAD "work: 1h\nresources: {zones: us-east-1a}\n",
                 "job.yaml:4: resources.zones: expected a string list, not a "
                 "single value (example: [a, b])");
    expect_error(HEAD "work: 1h\nresources: {regions: [\"\"]}\n",
                 "job.yaml:4: resources.regions[0]: empty");
    expect_error(HEAD "work: 1h\nmax_retries: many\n",
                 "job.yaml:4: max_retries: \"many\" is not an integer "
                 "(example: 42)");
    expect_error(HEAD "work: 1h\nmax_retries: -1\n",
                 "job.yaml:4: max_retries: -1 must be between 0 and 1000");
    expect_error(HEAD "work: 1h\nresources:\n  gpu: {count: 0}\n",
                 "job.yaml:5: resources.gpu.count: 0 must be between 1 and "
                 "1024");
    expect_error(HEAD "work: 1h\nresources:\n  gpu: {memory_gb: 0}\n",
                 "job.yaml:5: resources.gpu.memory_gb: must be more than 0 "
                 "(example: 16)");
    expect_error(HEAD "work: 1h\nresources:\n  gpu: {memory_gb: lots}\n",
                 "job.yaml:5: resources.gpu.memory_gb: \"lots\" is not a "
                 "number (example: 0.5)");
    expect_error(HEAD "work: 1h\nresources:\n  gpu: 4\n",
                 "job.yaml:5: resources.gpu: expected a mapping, not a single "
                 "value");
    /* Unknown keys below the top. */
    expect_error(HEAD "work: 1h\nresources:\n  gpus: 1\n",
                 "job.yaml:5: resources: unknown key \"gpus\" (known: "
                 "instance_types, gpu, zones, regions, providers, network)");
    expect_error(HEAD "work: 1h\nresources:\n  gpu:\n    type: V100\n",
                 "job.yaml:6: resources.gpu: unknown key \"type\" (known: "
                 "model, count, memory_gb)");
    expect_error(HEAD "work: 1h\ncheckpoint:\n  path: /x\n",
                 "job.yaml:5: checkpoint: unknown key \"path\" (known: dir, "
                 "signal, grace, every, store, encrypt, keep)");
    /* Bad values. */
    expect_error(HEAD "work: 8\n",
                 "job.yaml:3: work: \"8\" is not a duration (no unit; use d, "
                 "h, m, s or ms; example: 90s, 5m, 1h30m)");
    expect_error(HEAD "work: 9223372036854775807ms\n",
                 "job.yaml:3: work: \"9223372036854775807ms\" is not a "
                 "duration (longer than 100 years (36525d); example: 90s, 5m, "
                 "1h30m)");
    expect_error(HEAD "work: 0s\n",
                 "job.yaml:3: work: must be more than 0s (example: 8h)");
    expect_error(HEAD "work: 1h\nrestart_overhead: soon\n",
                 "job.yaml:4: restart_overhead: \"soon\" is not a duration "
                 "(example: 90s, 5m, 1h30m)");
    expect_error(HEAD "work: 1h\nbudget: 40 dollars\n",
                 "job.yaml:4: budget: \"40 dollars\" is not an amount (the "
                 "currency must be a 3-letter upper-case code such as USD; "
                 "example: 40 USD)");
    expect_error(HEAD "work: 1h\nbudget: 1000000000.000001 USD\n",
                 "job.yaml:4: budget: \"1000000000.000001 USD\" is not an "
                 "amount (more than 1000000000, the largest amount ebb takes; "
                 "example: 40 USD)");
    expect_error(HEAD "work: 1h\nresources:\n  gpu: {count: 1025}\n",
                 "job.yaml:5: resources.gpu.count: 1025 must be between 1 and "
                 "1024");
    expect_error(HEAD "work: 1h\nresources:\n  gpu: {memory_gb: 1e12}\n",
                 "job.yaml:5: resources.gpu.memory_gb: \"1e12\" is not a "
                 "number (outside -1000000000 to 1000000000; example: 0.5)");
    expect_error(HEAD "work: 1h\nresources:\n  gpu: {memory_gb: 100000}\n",
                 "job.yaml:5: resources.gpu.memory_gb: 100000 is more than "
                 "any GPU has (at most 1024 GB per GPU; example: 16)");
    expect_error(HEAD "work: 1h\nmax_retries: 1001\n",
                 "job.yaml:4: max_retries: 1001 must be between 0 and 1000");
    expect_error(HEAD "work: 1h\nbudget: 0 USD\n",
                 "job.yaml:4: budget: must be more than 0 (leave budget out "
                 "for no cap)");
    expect_error(HEAD "work: 1h\ndeadline: 2026-13-01T00:00:00Z\n",
                 "job.yaml:4: deadline: \"2026-13-01T00:00:00Z\" is not a "
                 "time (month out of range; example: 2026-12-01T06:00:00Z)");
    expect_error(HEAD "work: 1h\ndeadline: 2026-12-01T06:00:00\n",
                 "job.yaml:4: deadline: \"2026-12-01T06:00:00\" is not a "
                 "time (no time zone; add Z for UTC or an offset such as "
                 "+08:00; example: 2026-12-01T06:00:00Z)");
    expect_error(HEAD "work: 1h\ndeadline: tomorrow\n",
                 "job.yaml:4: deadline: \"tomorrow\" is not a time or a "
                 "duration (example: 2026-12-01T06:00:00Z or 36h)");
    expect_error(HEAD "work: 1h\ndeadline: 36\n",
                 "job.yaml:4: deadline: \"36\" is not a time or a duration "
                 "(no unit; use d, h, m, s or ms; example: "
                 "2026-12-01T06:00:00Z or 36h)");
    expect_error(HEAD "work: 1h\nmarket: cheap\n",
                 "job.yaml:4: market: \"cheap\" is not one of spot, "
                 "on-demand, spot-fallback");
    expect_error("name: my job\nrun: [x]\nwork: 1h\n",
                 "job.yaml:1: name: \"my job\" is not a valid job name (1 to "
                 "64 letters, digits, '.', '_' and '-', not \".\" or \"..\"; "
                 "example: train-resnet)");
    expect_error("name: ..\nrun: [x]\nwork: 1h\n",
                 "job.yaml:1: name: \"..\" is not a valid job name (1 to 64 "
                 "letters, digits, '.', '_' and '-', not \".\" or \"..\"; "
                 "example: train-resnet)");
    expect_error("name: "
                 "a123456789b123456789c123456789d123456789e123456789f123456789"
                 "g1234\nrun: [x]\nwork: 1h\n",
                 "job.yaml:1: name: \"a123456789b123456789c123456789d1234567"
                 "89e123456789f123456789\"... is not a valid job name (1 to "
                 "64 letters, digits, '.', '_' and '-', not \".\" or \"..\"; "
                 "example: train-resnet)");
    expect_error(HEAD "work: 1h\npolicy: \"my policy\"\n",
                 "job.yaml:4: policy: \"my policy\" is not a valid name (1 "
                 "to 64 letters, digits, - and _; example: "
                 "uniform-progress)");
    expect_error(HEAD "work: 1h\nteam: \"\"\n",
                 "job.yaml:4: team: empty (example: vision)");
    expect_error(HEAD "work: 1h\nenv: [A=1]\n",
                 "job.yaml:4: env: expected a mapping, not a list");
    expect_error(HEAD "work: 1h\nenv:\n  1X: a\n",
                 "job.yaml:5: env: \"1X\" is not an environment variable name "
                 "(letters, digits and _, not starting with a digit)");
    expect_error(HEAD "work: 1h\nenv:\n  EBB_JOB_ID: a\n",
                 "job.yaml:5: env.EBB_JOB_ID: names starting with EBB_ are "
                 "set by ebb itself");
    expect_error(HEAD "work: 1h\nenv:\n  A:\n",
                 "job.yaml:5: env.A: no value (write \"\" for an empty "
                 "string)");
    expect_error(HEAD "work: 1h\nenv:\n  A: [1]\n",
                 "job.yaml:5: env.A: expected a string, not a list (example: "
                 "\"some text\")");
    /* run and shell. */
    expect_error("name: n\nrun: python train.py\nwork: 1h\n",
                 "job.yaml:2: run: a string is run by sh -c only with shell: "
                 "true; write a list (run: [python, train.py]) or set shell: "
                 "true");
    expect_error("name: n\nrun: [python, train.py]\nshell: true\nwork: 1h\n",
                 "job.yaml:3: shell: true runs one string with sh -c, but run "
                 "is a list; write run as a string or remove shell: true");
    expect_error("name: n\nrun: []\nwork: 1h\n",
                 "job.yaml:2: run: empty list; give the program and its "
                 "arguments (example: [python, train.py])");
    expect_error("name: n\nrun: [\"\", a]\nwork: 1h\n",
                 "job.yaml:2: run[0]: empty program name");
    expect_error("name: n\nshell: true\nrun: \"\"\nwork: 1h\n",
                 "job.yaml:3: run: empty (example: \"python train.py | tee "
                 "log\")");
    /* Checkpoints. */
    expect_error(HEAD "work: 1h\ncheckpoint:\n  signal: SIGKILL\n",
                 "job.yaml:5: checkpoint.signal: \"SIGKILL\" is not a signal a "
                 "job can catch to checkpoint (one of SIGUSR1, SIGUSR2, "
                 "SIGTERM, SIGINT, SIGHUP, SIGQUIT)");
    expect_error(HEAD "work: 1h\ncheckpoint:\n  signal: 10\n",
                 "job.yaml:5: checkpoint.signal: \"10\" is not a signal a job "
                 "can catch to checkpoint (one of SIGUSR1, SIGUSR2, SIGTERM, "
                 "SIGINT, SIGHUP, SIGQUIT)");
    expect_error(HEAD "work: 1h\ncheckpoint:\n  dir: /c\n  grace: 15m\n",
                 "job.yaml:6: checkpoint.grace: 15m is longer than the limit "
                 "of 10m");
    /* Deadlines that cannot be met. */
    expect_error(HEAD "work: 8h\ndeadline: 2h\n",
                 "job.yaml:4: can never finish: deadline 2h is shorter than "
                 "work 8h plus restart overhead 5m");
    expect_error(HEAD "work: 8h\nrestart_overhead: 30m\ndeadline: 8h10m\n",
                 "job.yaml:5: can never finish: deadline 8h10m is shorter "
                 "than work 8h plus restart overhead 30m");
    expect_error(HEAD "work: 8h\ndeadline: 8h5m\n",
                 "job.yaml:4: can never finish in time: deadline 8h5m leaves "
                 "no time beyond work 8h plus restart overhead 5m (make it "
                 "longer)");
    /* Missing keys name the mapping's line. */
    expect_error("# a job\n\nrun: [x]\nwork: 1h\n",
                 "job.yaml:3: job: missing required key \"name\" (example: "
                 "name: train-resnet)");
    expect_error("name: n\nrun: [x]\n",
                 "job.yaml:1: job: missing required key \"work\" (example: "
                 "work: 8h)");
    expect_error("name: n\nwork: 1h\n",
                 "job.yaml:1: job: missing required key \"run\" (example: "
                 "run: [python, train.py])");
    expect_error("name: n\nrun: [x]\nwork:\n",
                 "job.yaml:1: job: missing required key \"work\" (example: "
                 "work: 8h)");
    /* submit belongs to workloads. */
    expect_error(HEAD "work: 1h\nsubmit: 2020-01-01T00:00:00Z\n",
                 "job.yaml:4: submit: only a workload for ebb backtest says "
                 "when a job is submitted; ebb submit uses the time it runs "
                 "(remove this line)");
    /* The document itself. */
    expect_error("", "job.yaml: empty; a job spec is a mapping such as "
                     "{name: train, run: [python, train.py], work: 8h}");
    expect_error("- a\n", "job.yaml:1: expected a job spec (a mapping of keys "
                          "such as name, run, work), not a list");
    expect_error("jobs: []\n", "job.yaml:1: this is a workload (it has "
                               "jobs:), not a job spec; give it to ebb "
                               "backtest --workload");
    expect_error("name: n\n  bad: indent\n",
                 "job.yaml:2: mapping values are not allowed in this context");
}

static void file_errors(void **state)
{
    (void)state;
    struct ebb__job_spec s;
    struct ebb_diag d;
    memset(&s, 1, sizeof(s));
    assert_int_equal(ebb__jobspec_load_file("/nonexistent/job.yaml", &s, &d),
                     EBB_ENOTFOUND);
    assert_true(zeroed(&s));
    assert_string_equal(d.msg, "/nonexistent/job.yaml: cannot open: No such "
                               "file or directory");
    struct ebb__workload *w = (struct ebb__workload *)&w;
    assert_int_equal(ebb__workload_load_file("/nonexistent/w.yaml", &w, &d),
                     EBB_ENOTFOUND);
    assert_null(w);
}

/* ---- workloads ---------------------------------------------------------- */

static void workload(void **state)
{
    (void)state;
    char path[PATH_MAX];
    struct ebb__workload *w;
    struct ebb_diag d;
    src_path("tests/data/jobs/workload.yaml", path, sizeof(path));
    if (ebb__workload_load_file(path, &w, &d) != 0)
        fail_msg("%s", d.msg);
    assert_int_equal(w->n, 3);
    assert_string_equal(w->file, path);

    /* File order, not submit order. */
    const struct ebb__job_spec *a = &w->jobs[0], *b = &w->jobs[1],
                               *c = &w->jobs[2];
    assert_string_equal(a->name, "first");
    assert_string_equal(b->name, "second");
    assert_string_equal(c->name, "third");
    assert_true(a->has_submit);
    assert_int_equal(a->submit, T("2020-01-06T09:00:00Z"));
    assert_int_equal(c->submit, T("2020-01-05T00:00:00Z"));
    assert_int_equal(a->line, 17);

    /* Defaults apply under each job's own keys. */
    assert_int_equal(a->restart_overhead, 10 * EBB_MS_PER_MINUTE);
    assert_int_equal(a->market, EBB_JOB_SPOT);
    assert_int_equal(b->market, EBB_JOB_SPOT_FALLBACK);
    assert_int_equal(a->checkpoint.signal, SIGTERM);
    assert_int_equal(a->checkpoint.every, EBB_MS_PER_HOUR);
    assert_null(a->checkpoint.dir);
    /* Mappings merge key by key. */
    assert_string_equal(b->checkpoint.dir, "/ckpt/b");
    assert_int_equal(b->checkpoint.signal, SIGTERM);
    assert_int_equal(b->checkpoint.every, EBB_MS_PER_HOUR);
    assert_int_equal(a->n_env, 2);
    assert_string_equal(a->env[0], "DATA=/data");
    assert_string_equal(a->env[1], "MODE=fast");
    assert_int_equal(b->n_env, 3);
    assert_string_equal(b->env[0], "DATA=/data");
    assert_string_equal(b->env[1], "MODE=slow");
    assert_string_equal(b->env[2], "EXTRA=1");
    assert_int_equal(a->resources.regions.n, 2);
    assert_string_equal(a->resources.gpu_model, "V100");
    assert_int_equal(a->resources.gpu_count, 1);
    /* Lists are replaced whole. */
    assert_int_equal(b->resources.regions.n, 1);
    assert_string_equal(b->resources.regions.items[0], "eu-west-1");
    assert_string_equal(b->resources.gpu_model, "V100");
    assert_int_equal(b->resources.gpu_count, 2);

    /* Both deadline forms resolve against the job's own submit. */
    assert_int_equal(ebb__jobspec_deadline(a, a->submit),
                     T("2020-01-06T21:00:00Z"));
    assert_int_equal(ebb__jobspec_deadline(b, b->submit),
                     T("2020-01-08T09:00:00Z"));
    assert_int_equal(ebb__jobspec_deadline(c, c->submit), 0);

    for (size_t i = 0; i < w->n; i++)
        round_trip(&w->jobs[i]);
    json_t *j = ebb__jobspec_to_json(b);
    assert_string_equal(json_string_value(json_object_get(j, "submit")),
                        "2020-01-07T09:00:00Z");
    json_decref(j);
    ebb__workload_free(w);
    ebb__workload_free(NULL);
}

static void workload_errors(void **state)
{
    (void)state;
    expect_workload_error("jobs:\n"
                          "  - name: a\n"
                          "    submit: 2020-01-01T00:00:00Z\n"
                          "    run: [x]\n"
                          "    work: 1h\n"
                          "  - name: b\n"
                          "    submit: 2020-01-01T00:00:00Z\n"
                          "    run: [x]\n"
                          "    work: 1h\n"
                          "  - name: a\n"
                          "    submit: 2020-01-02T00:00:00Z\n"
                          "    run: [x]\n"
                          "    work: 1h\n",
                          "w.yaml:10: name: \"a\" is already the name of the "
                          "job at line 2; job names must be unique in a "
                          "workload");
    expect_workload_error("jobs:\n"
                          "  - {name: b, submit: 2020-01-01, run: [x], work: 1h}\n"
                          "  - {name: a, submit: 2020-01-01, run: [x], work: 1h}\n"
                          "  - {name: b, submit: 2020-01-01, run: [x], work: 1h}\n"
                          "  - {name: a, submit: 2020-01-01, run: [x], work: 1h}\n"
                          "  - {name: b, submit: 2020-01-01, run: [x], work: 1h}\n",
                          "w.yaml:4: name: \"b\" is already the name of the "
                          "job at line 2; job names must be unique in a "
                          "workload");
    expect_workload_error("jobs:\n"
                          "  - name: a\n"
                          "    run: [x]\n"
                          "    work: 1h\n",
                          "w.yaml:2: job: missing required key \"submit\" "
                          "(example: submit: 2020-01-06T09:00:00Z)");
    expect_workload_error("jobs:\n"
                          "  - name: a\n"
                          "    submit: 2020-01-06 09:00\n"
                          "    run: [x]\n"
                          "    work: 1h\n",
                          "w.yaml:3: submit: \"2020-01-06 09:00\" is not a "
                          "time (expected YYYY-MM-DD or "
                          "YYYY-MM-DDTHH:MM:SSZ; example: "
                          "2020-01-06T09:00:00Z)");
    expect_workload_error("jobs:\n"
                          "  - name: a\n"
                          "    submit: 2020-01-06T09:00:00Z\n"
                          "    run: [x]\n"
                          "    work: 1h\n"
                          "    deadline: 2020-01-06T08:00:00Z\n",
                          "w.yaml:6: deadline: 2020-01-06T08:00:00Z is not "
                          "after submit 2020-01-06T09:00:00Z");
    expect_workload_error("jobs:\n"
                          "  - name: a\n"
                          "    submit: 2020-01-06T09:00:00Z\n"
                          "    run: [x]\n"
                          "    work: 8h\n"
                          "    deadline: 2020-01-06T11:00:00Z\n",
                          "w.yaml:6: can never finish: deadline "
                          "2020-01-06T11:00:00Z is 2h after submit, shorter "
                          "than work 8h plus restart overhead 5m");
    /* A bad default is reported where the default is written. */
    expect_workload_error("defaults:\n"
                          "  checkpoint: {grace: 11m}\n"
                          "jobs:\n"
                          "  - {name: a, submit: 2020-01-01, run: [x], work: 1h}\n",
                          "w.yaml:2: checkpoint.grace: 11m is longer than the "
                          "limit of 10m");
    expect_workload_error("defaults:\n"
                          "  work: 8\n"
                          "jobs:\n"
                          "  - {name: a, submit: 2020-01-01, run: [x]}\n",
                          "w.yaml:2: work: \"8\" is not a duration (no unit; "
                          "use d, h, m, s or ms; example: 90s, 5m, 1h30m)");
    expect_workload_error("defaults:\n"
                          "  name: x\n"
                          "jobs:\n"
                          "  - {name: a, submit: 2020-01-01, run: [x], work: 1h}\n",
                          "w.yaml:2: defaults: name cannot have a default; "
                          "every job needs its own");
    expect_workload_error("defaults:\n"
                          "  wrok: 1h\n"
                          "jobs:\n"
                          "  - {name: a, submit: 2020-01-01, run: [x], work: 1h}\n",
                          "w.yaml:2: defaults: unknown key \"wrok\" (known: "
                          "name, run, shell, work, deadline, budget, "
                          "restart_overhead, resources, market, checkpoint, "
                          "policy, team, max_retries, env, submit, run_as, notify, "
                          "workdir, workdir_exclude, priority, stall_after, "
                          "min_gpu_util, nodes, gang)");
    expect_workload_error("defaults: [a]\njobs: []\n",
                          "w.yaml:1: defaults: expected a mapping of job "
                          "keys, not a list");
    expect_workload_error("job: []\n",
                          "w.yaml:1: workload: unknown key \"job\" (known: "
                          "defaults, jobs)");
    expect_workload_error("defaults: {}\n",
                          "w.yaml:1: workload: missing required key \"jobs\" "
                          "(a list of job specs, each with submit:)");
    expect_workload_error("jobs: {a: 1}\n",
                          "w.yaml:1: jobs: expected a list of job specs, not "
                          "a mapping");
    expect_workload_error("jobs: []\n",
                          "w.yaml:1: jobs: empty; a workload needs at least "
                          "one job");
    expect_workload_error("jobs:\n  - a\n",
                          "w.yaml:2: jobs[0]: expected a job spec (a "
                          "mapping), not a single value");
    expect_workload_error("# nothing\n",
                          "w.yaml: empty; a workload is a mapping with jobs: "
                          "(a list of job specs, each with submit:)");
    expect_workload_error("[1]\n", "w.yaml:1: expected a workload (a mapping "
                                   "with jobs:), not a list");
}

/* ebb__jobspec_from_node() on a node of the caller's own document: the
 * spec outlives the document. */
static void from_node(void **state)
{
    (void)state;
    static const char text[] = "# spec\n"
                               "name: n\n"
                               "run: [x]\n"
                               "work: 1h\n"
                               "submit: 2020-01-06T09:00:00Z\n"
                               "deadline: 2020-01-06T12:00:00Z\n";
    struct ebb__ydoc *doc;
    struct ebb_diag d;
    assert_int_equal(ebb__ydoc_load_buffer("n.yaml", text, strlen(text), &doc,
                                           &d),
                     0);
    struct ebb__job_spec s;
    assert_int_equal(ebb__jobspec_from_node(ebb__ydoc_root(doc), 1, &s, &d),
                     0);
    assert_int_equal(ebb__jobspec_from_node(ebb__ydoc_root(doc), 0,
                                            &(struct ebb__job_spec){0}, &d),
                     EBB_ECONFIG);
    assert_string_equal(d.msg, "n.yaml:5: submit: only a workload for ebb "
                               "backtest says when a job is submitted; ebb "
                               "submit uses the time it runs (remove this "
                               "line)");
    ebb__ydoc_free(doc);
    assert_string_equal(s.file, "n.yaml");
    assert_int_equal(s.line, 2);
    assert_true(s.has_submit);
    assert_int_equal(s.submit, T("2020-01-06T09:00:00Z"));
    assert_int_equal(ebb__jobspec_deadline(&s, s.submit),
                     T("2020-01-06T12:00:00Z"));
    round_trip(&s);
    ebb__jobspec_free(&s);
}

/* ---- JSON --------------------------------------------------------------- */

static void expect_json_error(const char *text, const char *msg)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    if (j == NULL)
        fail_msg("bad test JSON: %s", jerr.text);
    struct ebb__job_spec s;
    struct ebb_diag d;
    memset(&s, 0x5a, sizeof(s));
    assert_int_equal(ebb__jobspec_from_json(j, &s, &d), EBB_ECONFIG);
    assert_true(zeroed(&s));
    if (strcmp(d.msg, msg) != 0)
        fail_msg("for %s\nwant: %s\ngot:  %s", text, msg, d.msg);
    json_decref(j);
}

static void json_reader(void **state)
{
    (void)state;
    /* The smallest JSON spec takes the same defaults as the YAML one. */
    json_t *j = json_loads("{\"name\":\"tiny\",\"run\":[\"./job\"],"
                           "\"work\":\"30m\",\"line\":2}",
                           0, NULL);
    struct ebb__job_spec s, y;
    struct ebb_diag d;
    assert_int_equal(ebb__jobspec_from_json(j, &s, &d), 0);
    json_decref(j);
    load_data("tests/data/jobs/minimal.yaml", &y);
    free(y.file);
    y.file = NULL;
    json_t *js = ebb__jobspec_to_json(&s), *jy = ebb__jobspec_to_json(&y);
    assert_true(json_equal(js, jy));
    json_decref(js);
    json_decref(jy);
    ebb__jobspec_free(&s);
    ebb__jobspec_free(&y);

    expect_json_error("[]", "job spec JSON: job: expected an object");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"wrok\":1}",
                      "job spec JSON: job: unknown key \"wrok\"");
    expect_json_error("{\"run\":[\"x\"],\"work\":\"1h\"}",
                      "job spec JSON: missing required key \"name\"");
    expect_json_error("{\"name\":\"a b\",\"run\":[\"x\"],\"work\":\"1h\"}",
                      "job spec JSON: name: \"a b\" is not a valid job name");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"8\"}",
                      "job spec JSON: work: \"8\" is not a duration (no "
                      "unit; use d, h, m, s or ms)");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"]}",
                      "job spec JSON: missing required key \"work\"");
    expect_json_error("{\"name\":\"a\",\"run\":\"x\",\"work\":\"1h\"}",
                      "job spec JSON: run: a string needs shell: true");
    expect_json_error("{\"name\":\"a\",\"run\":[],\"work\":\"1h\"}",
                      "job spec JSON: run: expected a non-empty list of "
                      "strings");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\", 3],\"work\":\"1h\"}",
                      "job spec JSON: run[1]: expected a string");
    expect_json_error("{\"name\":\"a\",\"run\":[\"\", \"x\"],\"work\":\"1h\"}",
                      "job spec JSON: run[0]: empty program name");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"8h\","
                      "\"deadline\":\"2h\"}",
                      "job spec JSON: can never finish: deadline 2h is "
                      "shorter than work 8h plus restart overhead 5m");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"checkpoint\":{\"grace\":\"11m\"}}",
                      "job spec JSON: checkpoint.grace: 11m is longer than "
                      "the limit of 10m");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"resources\":{\"gpu\":{\"count\":0}}}",
                      "job spec JSON: resources.gpu.count: 0 must be between "
                      "1 and 1024");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"env\":{\"EBB_X\":\"1\"}}",
                      "job spec JSON: env: \"EBB_X\" is not a name a job may "
                      "set");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"budget\":\"1000000001 USD\"}",
                      "job spec JSON: budget: \"1000000001 USD\" is not an "
                      "amount more than 0 (more than 1000000000, the largest "
                      "amount ebb takes)");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"max_retries\":1001}",
                      "job spec JSON: max_retries: 1001 must be between 0 "
                      "and 1000");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"budget\":\"0 USD\"}",
                      "job spec JSON: budget: \"0 USD\" is not an amount "
                      "more than 0");
}

/* ---- shipped examples and robustness ------------------------------------ */

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Checks the promises examples/jobs/workload-small.yaml makes about itself
 * in its comments, so the file and its comments cannot drift apart. */
/* checkpoint.every is 0 or at least a second, with the allowed range in
 * the message (#16 point 8: 1ms had the agent signal a job to death), in
 * both readers and in workload defaults. */
/* priority: the four names stand for 250, 500, 750 and 1000, an integer
 * from 0 to 1000 for itself; absent, normal. JSON carries it as the
 * integer, and leaves out normal (so specs stored before it read alike). */
static void priorities(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int want;
        const char *name;
    } good[] = {
        {"low", 250, "low"},       {"normal", 500, "normal"}, {"high", 750, "high"},
        {"urgent", 1000, "urgent"}, {"0", 0, NULL},           {"1000", 1000, "urgent"},
        {"600", 600, NULL},        {"007", 7, NULL},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "name: n\nrun: [x]\nwork: 1h\npriority: %s\n",
                 good[i].text);
        struct ebb__job_spec s;
        struct ebb_diag d;
        if (load_text(text, &s, &d) != 0)
            fail_msg("%s: %s", good[i].text, d.msg);
        assert_int_equal(s.priority, good[i].want);
        if (good[i].name != NULL)
            assert_string_equal(ebb__job_priority_name(s.priority), good[i].name);
        else
            assert_null(ebb__job_priority_name(s.priority));
        json_t *j = ebb__jobspec_to_json(&s);
        json_t *p = json_object_get(j, "priority");
        if (good[i].want == EBB__JOB_PRIORITY_NORMAL)
            assert_null(p);
        else
            assert_int_equal(json_integer_value(p), good[i].want);
        json_decref(j);
        round_trip(&s);
        ebb__jobspec_free(&s);
    }
    struct ebb__job_spec s;
    struct ebb_diag d;
    assert_int_equal(load_text("name: n\nrun: [x]\nwork: 1h\n", &s, &d), 0);
    assert_int_equal(s.priority, EBB__JOB_PRIORITY_NORMAL);
    ebb__jobspec_free(&s);

    static const char *const bad[] = {"extreme", "1001", "-1", "+5", "High", "2.5",
                                      "10000", "\"\""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[128], msg[256], shown[32];
        snprintf(text, sizeof(text), "name: n\nrun: [x]\nwork: 1h\npriority: %s\n",
                 bad[i]);
        snprintf(shown, sizeof(shown), "%s", strcmp(bad[i], "\"\"") == 0 ? "" : bad[i]);
        snprintf(msg, sizeof(msg), "job.yaml:4: priority: \"%s\" is not a priority "
                 "(low, normal, high, urgent or an integer from 0 to 1000; example: "
                 "high)", shown);
        expect_error(text, msg);
    }
    expect_error("name: n\nrun: [x]\nwork: 1h\npriority: [high]\n",
                 "job.yaml:4: priority: expected a priority, not a list");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"priority\":1001}",
                      "job spec JSON: priority: 1001 must be between 0 and 1000");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"priority\":\"high\"}",
                      "job spec JSON: priority: expected an integer");
}

/* nodes, resources.network and gang.restart (docs/gangs.md): read from
 * YAML, carried through JSON, refused with the line of the bad value. */
static void gangs(void **state)
{
    (void)state;
    struct ebb__job_spec s;
    struct ebb_diag d;
    if (load_text("name: n\nrun: [x]\nwork: 1h\nnodes: 2\n"
                  "resources: {instance_types: [p3.16xlarge], network: 25Gbps}\n"
                  "gang: {restart: replace_lost}\n", &s, &d) != 0)
        fail_msg("%s", d.msg);
    assert_int_equal(s.nodes, 2);
    assert_true(s.resources.network_gbps == 25.0);
    assert_int_equal(s.gang_restart, EBB__GANG_REPLACE_LOST);
    json_t *j = ebb__jobspec_to_json(&s);
    assert_int_equal(json_integer_value(json_object_get(j, "nodes")), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(j, "resources"), "network")), "25Gbps");
    json_decref(j);
    round_trip(&s);
    ebb__jobspec_free(&s);

    /* Absent: one node, whole, any network; JSON leaves them out. */
    assert_int_equal(load_text("name: n\nrun: [x]\nwork: 1h\n", &s, &d), 0);
    assert_int_equal(s.nodes, 1);
    assert_int_equal(s.gang_restart, EBB__GANG_WHOLE);
    assert_true(s.resources.network_gbps == 0);
    j = ebb__jobspec_to_json(&s);
    assert_null(json_object_get(j, "nodes"));
    assert_null(json_object_get(j, "gang"));
    assert_null(json_object_get(json_object_get(j, "resources"), "network"));
    json_decref(j);
    ebb__jobspec_free(&s);

    static const struct {
        const char *text;
        double gbps;
    } bw[] = {{"25Gbps", 25}, {"100 gbps", 100}, {"800Mbps", 0.8}, {"3.2Tbps", 3200}};
    for (size_t i = 0; i < sizeof(bw) / sizeof(bw[0]); i++) {
        double v = 0;
        assert_int_equal(ebb__job_network_parse(bw[i].text, &v), 0);
        assert_true(fabs(v - bw[i].gbps) < 1e-9);
    }
    static const char *const bad_bw[] = {"25", "Gbps", "-1Gbps", "0Gbps", "25GB",
                                         "20Tbps", "nanGbps", " 25Gbps", "25  Gbps"};
    for (size_t i = 0; i < sizeof(bad_bw) / sizeof(bad_bw[0]); i++) {
        double v = 0;
        if (ebb__job_network_parse(bad_bw[i], &v) == 0)
            fail_msg("\"%s\" was taken for %g Gbps", bad_bw[i], v);
    }
    expect_error("name: n\nrun: [x]\nwork: 1h\nresources:\n  network: 25\n",
                 "job.yaml:5: resources.network: \"25\" is not a bandwidth (a number "
                 "and Mbps, Gbps or Tbps; example: 25Gbps)");
    expect_error("name: n\nrun: [x]\nwork: 1h\nnodes: 0\n",
                 "job.yaml:4: nodes: 0 must be between 1 and 64");
    expect_error("name: n\nrun: [x]\nwork: 1h\nnodes: 65\n",
                 "job.yaml:4: nodes: 65 must be between 1 and 64");
    expect_error("name: n\nrun: [x]\nwork: 1h\ngang: {restart: half}\n",
                 "job.yaml:4: gang.restart: \"half\" is not a restart mode (one of "
                 "whole, replace_lost; example: whole)");
    expect_error("name: n\nrun: [x]\nwork: 1h\ngang: {restrat: whole}\n",
                 "job.yaml:4: gang: unknown key \"restrat\" (known: restart)");
    expect_error("name: n\nrun: [x]\nwork: 1h\ngang: {restart: replace_lost}\n",
                 "job.yaml:1: gang.restart: replace_lost needs a gang: nodes is 1 "
                 "(example: nodes: 2)");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"nodes\":100}",
                      "job spec JSON: nodes: 100 must be between 1 and 64");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"nodes\":2,\"gang\":{\"restart\":\"all\"}}",
                      "job spec JSON: gang.restart: not one of whole, replace_lost");
}

static void checkpoint_every_bounds(void **state)
{
    (void)state;
    expect_error(HEAD "work: 1h\ncheckpoint:\n  every: 1ms\n",
                 "job.yaml:5: checkpoint.every: 1ms is outside the allowed range "
                 "(0 (none), or from 1s to 7d)");
    expect_error(HEAD "work: 1h\ncheckpoint: {every: 999ms}\n",
                 "job.yaml:4: checkpoint.every: 999ms is outside the allowed range "
                 "(0 (none), or from 1s to 7d)");
    expect_error(HEAD "work: 1h\ncheckpoint: {every: 8d}\n",
                 "job.yaml:4: checkpoint.every: 8d is outside the allowed range "
                 "(0 (none), or from 1s to 7d)");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"checkpoint\":{\"every\":\"1ms\"}}",
                      "job spec JSON: checkpoint.every: 1ms is outside the allowed "
                      "range (0 (none), or from 1s to 7d)");
    static const char *const fine[] = {"0s", "1s", "7d", "30m"};
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), HEAD "work: 1h\ncheckpoint: {every: %s}\n",
                 fine[i]);
        struct ebb__job_spec sp;
        struct ebb_diag d;
        if (load_text(text, &sp, &d) != 0)
            fail_msg("every: %s: %s", fine[i], d.msg);
        ebb__jobspec_free(&sp);
    }
}

/* min_gpu_util: a whole percentage, 0 (the default) turning the guard
 * off, kept through the JSON ebbd stores, and left out of it when off. */
static void min_gpu_util(void **state)
{
    (void)state;
    struct ebb__job_spec sp;
    struct ebb_diag d;
    if (load_text(HEAD "work: 1h\nmin_gpu_util: 40\nstall_after: 20m\n", &sp, &d) != 0)
        fail_msg("%s", d.msg);
    assert_int_equal(sp.min_gpu_util, 40);
    assert_int_equal(sp.stall_after, 20 * EBB_MS_PER_MINUTE);
    json_t *j = ebb__jobspec_to_json(&sp);
    assert_int_equal(json_integer_value(json_object_get(j, "min_gpu_util")), 40);
    json_decref(j);
    round_trip(&sp);
    ebb__jobspec_free(&sp);
    static const char *const off[] = {HEAD "work: 1h\n", HEAD "work: 1h\nmin_gpu_util: 0\n"};
    for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
        if (load_text(off[i], &sp, &d) != 0)
            fail_msg("%s", d.msg);
        assert_int_equal(sp.min_gpu_util, 0);
        j = ebb__jobspec_to_json(&sp);
        assert_null(json_object_get(j, "min_gpu_util"));
        json_decref(j);
        ebb__jobspec_free(&sp);
    }

    expect_error(HEAD "work: 1h\nmin_gpu_util: -1\n",
                 "job.yaml:4: min_gpu_util: -1 must be between 0 and 100");
    expect_error(HEAD "work: 1h\nmin_gpu_util: 101\n",
                 "job.yaml:4: min_gpu_util: 101 must be between 0 and 100");
    expect_error(HEAD "work: 1h\nmin_gpu_util: 50%\n",
                 "job.yaml:4: min_gpu_util: \"50%\" is not an integer (example: 42)");
    expect_error(HEAD "work: 1h\nmin_gpu_util: [50]\n",
                 "job.yaml:4: min_gpu_util: expected an integer, not a list (example: 42)");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"min_gpu_util\":101}",
                      "job spec JSON: min_gpu_util: 101 must be between 0 and 100");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"min_gpu_util\":\"50\"}",
                      "job spec JSON: min_gpu_util: expected an integer");
}

/* A checkpoint.dir whose ".." climbs out of where it starts is refused at
 * parse time: "relative/../../../x" once had root create /x (#16 point 7).
 * A ".." that only takes back what the path added is fine. */
static void checkpoint_dir_dots(void **state)
{
    (void)state;
    expect_error(HEAD "work: 1h\ncheckpoint:\n  dir: relative/../../../x\n",
                 "job.yaml:5: checkpoint.dir: \"relative/../../../x\" climbs out "
                 "of the job's working directory with \"..\" (write a path without "
                 "it, e.g. ckpt or /data/ckpt)");
    expect_error(HEAD "work: 1h\ncheckpoint: {dir: /../x}\n",
                 "job.yaml:4: checkpoint.dir: \"/../x\" climbs out of / with "
                 "\"..\" (write a path without it, e.g. ckpt or /data/ckpt)");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"checkpoint\":{\"dir\":\"../ckpt\"}}",
                      "job spec JSON: checkpoint.dir: \"../ckpt\" climbs out of the "
                      "job's working directory with \"..\" (write a path without "
                      "it, e.g. ckpt or /data/ckpt)");
    struct ebb__job_spec sp;
    struct ebb_diag d;
    if (load_text(HEAD "work: 1h\ncheckpoint: {dir: runs/a/../b}\n", &sp, &d) != 0)
        fail_msg("%s", d.msg);
    assert_string_equal(sp.checkpoint.dir, "runs/a/../b"); /* as written */
    ebb__jobspec_free(&sp);
}

/* checkpoint.store, encrypt and keep: defaults, bounds with file:line,
 * and the JSON round trip (written only when set). */
static void checkpoint_store_keys(void **state)
{
    (void)state;
    struct ebb__job_spec sp;
    struct ebb_diag d;
    if (load_text(HEAD "work: 1h\n", &sp, &d) != 0)
        fail_msg("%s", d.msg);
    assert_null(sp.checkpoint.store);
    assert_false(sp.checkpoint.encrypt);
    assert_int_equal(sp.checkpoint.keep, EBB__JOB_KEEP_DEFAULT);
    ebb__jobspec_free(&sp);
    if (load_text(HEAD "work: 1h\ncheckpoint: {store: ckpt, keep: 5}\n", &sp, &d) != 0)
        fail_msg("%s", d.msg);
    assert_string_equal(sp.checkpoint.store, "ckpt");
    assert_true(sp.checkpoint.encrypt); /* the default with a store */
    assert_false(sp.checkpoint.has_encrypt);
    assert_int_equal(sp.checkpoint.keep, 5);
    assert_int_equal(sp.checkpoint.store_line, 4);
    json_t *j = ebb__jobspec_to_json(&sp);
    char *text = json_dumps(json_object_get(j, "checkpoint"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"dir\":null,\"every\":null,\"grace\":\"1m30s\","
                              "\"keep\":5,\"signal\":\"SIGUSR1\",\"store\":\"ckpt\"}");
    free(text);
    struct ebb__job_spec back;
    if (ebb__jobspec_from_json(j, &back, &d) != 0)
        fail_msg("%s", d.msg);
    assert_string_equal(back.checkpoint.store, "ckpt");
    assert_true(back.checkpoint.encrypt);
    assert_int_equal(back.checkpoint.keep, 5);
    ebb__jobspec_free(&back);
    json_decref(j);
    ebb__jobspec_free(&sp);
    if (load_text(HEAD "work: 1h\ncheckpoint:\n  store: s3\n  encrypt: false\n", &sp, &d) != 0)
        fail_msg("%s", d.msg);
    assert_false(sp.checkpoint.encrypt);
    assert_true(sp.checkpoint.has_encrypt);
    assert_int_equal(sp.checkpoint.encrypt_line, 6);
    j = ebb__jobspec_to_json(&sp);
    if (ebb__jobspec_from_json(j, &back, &d) != 0)
        fail_msg("%s", d.msg);
    assert_false(back.checkpoint.encrypt);
    assert_true(back.checkpoint.has_encrypt);
    ebb__jobspec_free(&back);
    json_decref(j);
    ebb__jobspec_free(&sp);
    expect_error(HEAD "work: 1h\ncheckpoint:\n  keep: 0\n",
                 "job.yaml:5: checkpoint.keep: 0 must be between 1 and 100");
    expect_error(HEAD "work: 1h\ncheckpoint:\n  keep: 101\n",
                 "job.yaml:5: checkpoint.keep: 101 must be between 1 and 100");
    expect_error(HEAD "work: 1h\ncheckpoint:\n  encrypt: maybe\n",
                 "job.yaml:5: checkpoint.encrypt: \"maybe\" is not a boolean (example: "
                 "true or false)");
    expect_error(HEAD "work: 1h\ncheckpoint:\n  store: \"a/b\"\n",
                 "job.yaml:5: checkpoint.store: \"a/b\" is not a valid name (1 to 64 "
                 "letters, digits, - and _; example: ckpt)");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"checkpoint\":{\"keep\":1000}}",
                      "job spec JSON: checkpoint.keep: 1000 must be between 1 and 100");
    expect_json_error("{\"name\":\"a\",\"run\":[\"x\"],\"work\":\"1h\","
                      "\"checkpoint\":{\"encrypt\":\"no\"}}",
                      "job spec JSON: checkpoint.encrypt: expected true or false");
}

static void check_small_workload(const struct ebb__workload *w)
{
    assert_true(w->n >= 8 && w->n <= 12);
    for (size_t i = 0; i < w->n; i++) {
        const struct ebb__job_spec *s = &w->jobs[i];
        assert_true(s->submit >= T("2020-01-01") &&
                    s->submit < T("2020-03-01"));
        assert_true(s->work >= 2 * EBB_MS_PER_HOUR &&
                    s->work <= 20 * EBB_MS_PER_HOUR);
        assert_true(s->has_deadline);
        ebb_dur_ms span = ebb__jobspec_deadline(s, s->submit) - s->submit;
        if (span * 2 < s->work * 3 || span > s->work * 3)
            fail_msg("%s: deadline is not 1.5x-3x its work", s->name);
        assert_true(ebb__jobspec_deadline(s, s->submit) <=
                    T("2020-02-29T23:59:59Z"));
        assert_true(s->restart_overhead >= 5 * EBB_MS_PER_MINUTE &&
                    s->restart_overhead <= 10 * EBB_MS_PER_MINUTE);
        assert_true(s->checkpoint.every >= 30 * EBB_MS_PER_MINUTE &&
                    s->checkpoint.every <= EBB_MS_PER_HOUR);
    }
}

static void examples_load(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 256];
    src_path("examples/jobs", dir, sizeof(dir));
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    int specs = 0, workloads = 0;
    struct dirent *de;
    for (de = readdir(dp); de != NULL; de = readdir(dp)) {
        if (!has_suffix(de->d_name, ".yaml"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct ebb_diag d;
        if (strncmp(de->d_name, "workload", 8) == 0) {
            struct ebb__workload *w;
            if (ebb__workload_load_file(path, &w, &d) != 0)
                fail_msg("%s", d.msg);
            for (size_t i = 0; i < w->n; i++)
                round_trip(&w->jobs[i]);
            if (strcmp(de->d_name, "workload-small.yaml") == 0)
                check_small_workload(w);
            ebb__workload_free(w);
            workloads++;
        } else {
            struct ebb__job_spec s;
            if (ebb__jobspec_load_file(path, &s, &d) != 0)
                fail_msg("%s", d.msg);
            round_trip(&s);
            if (strcmp(de->d_name, "train-shell.yaml") == 0)
                assert_true(s.shell);
            ebb__jobspec_free(&s);
            specs++;
        }
    }
    closedir(dp);
    assert_true(specs >= 2);
    assert_true(workloads >= 1);
}

/* Every prefix of the good files either loads or fails with a message;
 * under ASan this also shows that no error path leaks. */
static void truncated_inputs(void **state)
{
    (void)state;
    static const char *const files[] = {"tests/data/jobs/full.yaml",
                                        "tests/data/jobs/workload.yaml"};
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        char path[PATH_MAX];
        FILE *fp = fopen(src_path(files[f], path, sizeof(path)), "rb");
        assert_non_null(fp);
        char buf[8192];
        size_t len = fread(buf, 1, sizeof(buf), fp);
        fclose(fp);
        for (size_t n = 0; n <= len; n++) {
            struct ebb_diag d;
            ebb_diag_clear(&d);
            if (f == 0) {
                struct ebb__job_spec s;
                if (ebb__jobspec_load_buffer("t.yaml", buf, n, &s, &d) == 0)
                    ebb__jobspec_free(&s);
                else
                    assert_int_equal(strncmp(d.msg, "t.yaml", 6), 0);
            } else {
                struct ebb__workload *w;
                if (ebb__workload_load_buffer("t.yaml", buf, n, &w, &d) == 0)
                    ebb__workload_free(w);
                else
                    assert_int_equal(strncmp(d.msg, "t.yaml", 6), 0);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_key),
        cmocka_unit_test(defaults),
        cmocka_unit_test(run_forms_and_deadlines),
        cmocka_unit_test(errors),
        cmocka_unit_test(file_errors),
        cmocka_unit_test(workload),
        cmocka_unit_test(workload_errors),
        cmocka_unit_test(from_node),
        cmocka_unit_test(json_reader),
        cmocka_unit_test(priorities),
        cmocka_unit_test(gangs),
        cmocka_unit_test(checkpoint_every_bounds),
        cmocka_unit_test(min_gpu_util),
        cmocka_unit_test(checkpoint_dir_dots),
        cmocka_unit_test(checkpoint_store_keys),
        cmocka_unit_test(examples_load),
        cmocka_unit_test(truncated_inputs),
        cmocka_unit_test(workdir_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
