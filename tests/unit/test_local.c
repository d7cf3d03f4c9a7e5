/* The local provider (providers/local) launching gangs, opened from the
 * build tree by the real plugin loader, configured through its own table
 * from YAML, driven by a real host on a virtual clock (so the watch runs
 * when the test says), with real processes: the agent is a shell script
 * that writes what it was given (its arguments, its agent token, its
 * instance mark, its pid) to its log, the agent's stdout, and then sleeps.
 * Waits for processes are bounded polls of a condition, never sleeps that
 * race the machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ebb/provider.h>
#include <ebb/units.h>

#include "base/cfg_table.h"
#include "base/yaml_doc.h"
#include "io/clock.h"
#include "plugin/plugin.h"
#include "plugin/plugin_host.h"

#define T0 ((ebb_time_ms)1577836800000) /* 2020-01-01T00:00:00Z */

struct ev {
    enum ebb_instance_event_kind kind;
    char id[128];
    int32_t rank;
};

struct fx {
    char dir[64];    /* the state directory: plugins_dir */
    char pdir[96];   /* dir/local */
    struct ebb__clock clock;
    struct ebb__host_env env;
    struct ebb__host host;
    struct ebb__plugin *plugin;
    const struct ebb_provider *p;
    void *cfg;
    void *self;
    struct ev ev[16];
    size_t n_ev;
};

static void sink_event(void *sink, const char *provider,
                       const struct ebb_instance_event *e)
{
    struct fx *f = sink;
    assert_string_equal(provider, "local");
    assert_true(f->n_ev < sizeof(f->ev) / sizeof(f->ev[0]));
    struct ev *r = &f->ev[f->n_ev++];
    r->kind = e->kind;
    r->rank = e->rank;
    snprintf(r->id, sizeof(r->id), "%s", e->instance_id);
}

/* The fake agent: tells its log what it got, then waits to be killed. */
static const char agent_sh[] =
    "#!/bin/sh\n"
    "echo \"args $*\"\n"
    "echo \"token $EBB_AGENT_TOKEN\"\n"
    "echo \"mark $EBB_LOCAL_INSTANCE\"\n"
    "echo \"pid $$\"\n"
    "exec sleep 1000\n";

/* Creates the provider on the state directory f->dir (made and given the
 * agent the first time). */
static void fx_create(struct fx *f)
{
    struct ebb__plugin_path path;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__plugin_path_init(&path, NULL), 0);
    int rc = ebb__plugin_open(EBB__PLUGIN_PROVIDER, "local", &path, &f->plugin, &d);
    ebb__plugin_path_free(&path);
    if (rc != 0)
        fail_msg("%s", d.msg);
    f->p = f->plugin->provider;
    char yaml[512];
    snprintf(yaml, sizeof(yaml), "agent: %s/agent.sh\nslots: 3\n", f->dir);
    struct ebb__ydoc *doc;
    assert_int_equal(ebb__ydoc_load_buffer("ebb.yaml", yaml, strlen(yaml), &doc, &d), 0);
    rc = ebb__cfg_apply(ebb__plugin_config_keys(f->plugin),
                        ebb__plugin_config_size(f->plugin),
                        ebb__ydoc_root(doc), "providers.local", &f->cfg, &d);
    ebb__ydoc_free(doc);
    if (rc != 0)
        fail_msg("%s", d.msg);
    f->env = (struct ebb__host_env){
        .clock = &f->clock, .plugins_dir = f->dir, .sink = f,
        .instance_event = sink_event,
    };
    assert_int_equal(ebb__host_init(&f->host, &f->env, "local"), 0);
    assert_int_equal(f->p->create(&f->host.host, f->cfg, &f->self), 0);
    assert_true(f->p->flags & EBB_PROVIDER_GANGS);
}

static void fx_destroy(struct fx *f)
{
    f->p->destroy(f->self);
    ebb__host_fini(&f->host);
    ebb__cfg_free(ebb__plugin_config_keys(f->plugin), f->cfg);
    ebb__plugin_close(f->plugin);
}

static void fx_open(struct fx *f)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/ebb-test-local-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->pdir, sizeof(f->pdir), "%s/local", f->dir);
    char path[128];
    snprintf(path, sizeof(path), "%s/agent.sh", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(agent_sh, fp);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(chmod(path, 0755), 0);
    ebb__clock_init_virtual(&f->clock, T0);
    fx_create(f);
}

static void fx_close(struct fx *f)
{
    fx_destroy(f);
    ebb__clock_close(&f->clock, NULL);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
}

static void run_to(struct fx *f, ebb_time_ms t)
{
    ebb__clock_run_until(&f->clock, t);
}

/* ---- calls ---- */

struct res {
    int calls, status;
    char id[128];
    enum ebb_instance_state state;
    ebb_time_ms launched_at;
    size_t n;
};

static void on_launch(void *arg, int status, const struct ebb_instance *in)
{
    struct res *r = arg;
    r->calls++;
    r->status = status;
    if (in != NULL) {
        snprintf(r->id, sizeof(r->id), "%s", in->id);
        r->launched_at = in->launched_at;
    }
}

static void on_done(void *arg, int status)
{
    struct res *r = arg;
    r->calls++;
    r->status = status;
}

static void on_list(void *arg, int status, const struct ebb_instance *v, size_t n)
{
    struct res *r = arg;
    r->calls++;
    r->status = status;
    r->n = n;
    if (n > 0) {
        snprintf(r->id, sizeof(r->id), "%s", v[0].id);
        r->state = v[0].state;
        r->launched_at = v[0].launched_at;
    }
}

static const char *const tokens_a[] = {"enrol:ga+0.secret0", "enrol:ga+1.secret1"};
static const char *const tokens_b[] = {"enrol:gb+0.secret0", "enrol:gb+1.secret1"};

static struct ebb_launch gang(const char *token, unsigned count,
                              const char *const *agent_tokens)
{
    return (struct ebb_launch){
        .struct_size = sizeof(struct ebb_launch),
        .token = token, .job_id = "job-1", .region = "", .zone = "",
        .instance_type = "local", .market = EBB_MARKET_ON_DEMAND, .currency = "USD",
        .count = count, .agent_url = "http://127.0.0.1:9",
        .run_uid = (int64_t)getuid(), .agent_tokens = agent_tokens,
    };
}

static void launch(struct fx *f, const struct ebb_launch *req, struct res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(f->p->launch(f->self, req, on_launch, r), 0);
    assert_int_equal(r->calls, 0);
    run_to(f, ebb__clock_now(&f->clock));
    assert_int_equal(r->calls, 1);
}

static void list(struct fx *f, struct res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(f->p->list_instances(f->self, on_list, r), 0);
    run_to(f, ebb__clock_now(&f->clock));
    assert_int_equal(r->calls, 1);
    assert_int_equal(r->status, 0);
}

static void terminate(struct fx *f, const char *id, struct res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(f->p->terminate(f->self, id, on_done, r), 0);
    run_to(f, ebb__clock_now(&f->clock));
    assert_int_equal(r->calls, 1);
}

/* ---- what the agents got ---- */

/* Line `what ...` of the agent log of key `key` into out, said by the
 * `run`th agent started under that key (0: the first; a join's member
 * appends to the log of the one it replaces), waiting (bounded) for the
 * agent to have written it. */
static void agent_says_run(const struct fx *f, const char *key, unsigned run,
                           const char *what, char *out, size_t len)
{
    char path[256], line[512];
    snprintf(path, sizeof(path), "%s/%s.agent.log", f->pdir, key);
    size_t wlen = strlen(what);
    for (int tries = 0; tries < 1000; tries++) {
        FILE *fp = fopen(path, "r");
        unsigned seen = 0;
        while (fp != NULL && fgets(line, sizeof(line), fp) != NULL) {
            if (strncmp(line, what, wlen) == 0 && line[wlen] == ' ' && seen++ == run) {
                line[strcspn(line, "\n")] = '\0';
                snprintf(out, len, "%s", line + wlen + 1);
                fclose(fp);
                return;
            }
        }
        if (fp != NULL)
            fclose(fp);
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    fail_msg("%s never said \"%s\" (agent %u)", path, what, run);
}

static void agent_says(const struct fx *f, const char *key, const char *what,
                       char *out, size_t len)
{
    agent_says_run(f, key, 0, what, out, len);
}

static pid_t agent_pid_run(const struct fx *f, const char *key, unsigned run)
{
    char pid[32];
    agent_says_run(f, key, run, "pid", pid, sizeof(pid));
    return (pid_t)strtol(pid, NULL, 10);
}

static pid_t agent_pid(const struct fx *f, const char *key)
{
    return agent_pid_run(f, key, 0);
}

/* Waits (bounded) for child `pid` to have been killed, and reaps it, unless
 * the provider did (an agent it started itself and killed). */
static void expect_killed(pid_t pid)
{
    int status = 0;
    for (int tries = 0; tries < 1000; tries++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            assert_true(WIFSIGNALED(status));
            assert_int_equal(WTERMSIG(status), SIGKILL);
            return;
        }
        if (r < 0 && errno == ECHILD) {
            assert_int_equal(kill(pid, 0), -1);
            return;
        }
        assert_int_equal(r, 0);
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    fail_msg("process %ld was not killed", (long)pid);
}

static int exists(const struct fx *f, const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", f->pdir, rel);
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- tests ---- */

static void a_gang_starts_one_agent_per_member(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    struct ebb_launch req = gang("ga", 2, tokens_a);
    struct res r;
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, "local-ga+0,local-ga+1");
    assert_int_equal(f.n_ev, 1);
    assert_int_equal(f.ev[0].kind, EBB_EVENT_RUNNING);
    assert_string_equal(f.ev[0].id, "local-ga+0,local-ga+1");
    assert_int_equal(f.ev[0].rank, -1);

    for (unsigned k = 0; k < 2; k++) {
        char key[16], want[200], got[512];
        snprintf(key, sizeof(key), "ga+%u", k);
        /* Its own agent token, in its environment only. */
        agent_says(&f, key, "token", got, sizeof(got));
        assert_string_equal(got, tokens_a[k]);
        agent_says(&f, key, "mark", got, sizeof(got));
        snprintf(want, sizeof(want), "local-%s", key);
        assert_string_equal(got, want);
        agent_says(&f, key, "args", got, sizeof(got));
        assert_null(strstr(got, "secret"));
        /* Its own disk and its own metadata path. */
        snprintf(want, sizeof(want), "--disk %s/disks/%s", f.pdir, key);
        assert_non_null(strstr(got, want));
        snprintf(want, sizeof(want), "--metadata http://127.0.0.1:9/imds/%s ", key);
        assert_non_null(strstr(got, want));
        snprintf(want, sizeof(want), "disks/%s", key);
        assert_true(exists(&f, want));
        snprintf(want, sizeof(want), "%s.json", key);
        assert_true(exists(&f, want));
    }
    assert_true(agent_pid(&f, "ga+0") != agent_pid(&f, "ga+1"));

    /* The same token, the same gang. */
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, "local-ga+0,local-ga+1");
    assert_int_equal(f.n_ev, 1);

    /* Slots count members: 4 never fit in 3, 2 more do not fit now. */
    struct ebb_launch big = gang("big", 4, tokens_a);
    assert_int_equal(f.p->launch(f.self, &big, on_launch, &r), EBB_EINVAL);
    struct ebb_launch b = gang("gb", 2, tokens_b);
    launch(&f, &b, &r);
    assert_int_equal(r.status, EBB_ENOCAPACITY);
    /* A gang without its agents' tokens is refused. */
    struct ebb_launch bare = gang("gc", 2, NULL);
    bare.agent_token = "enrol:gc.secret";
    assert_int_equal(f.p->launch(f.self, &bare, on_launch, &r), EBB_EINVAL);

    /* Terminating the gang kills both agents and removes both disks. */
    pid_t pids[2] = {agent_pid(&f, "ga+0"), agent_pid(&f, "ga+1")};
    terminate(&f, "local-ga+0,local-ga+1", &r);
    assert_int_equal(r.status, 0);
    expect_killed(pids[0]);
    expect_killed(pids[1]);
    assert_false(exists(&f, "disks/ga+0"));
    assert_false(exists(&f, "disks/ga+1"));
    assert_false(exists(&f, "ga+0.json"));
    list(&f, &r);
    assert_int_equal(r.n, 0);
    terminate(&f, "local-ga+0,local-ga+1", &r);
    assert_int_equal(r.status, EBB_ENOTFOUND);
    fx_close(&f);
}

/* An ebbd started again finds the gang from its members' state files; a
 * member whose processes die is reported lost with its rank, the gang
 * listed short of it. */
static void a_restarted_ebbd_finds_the_gang_and_hears_of_a_lost_member(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    struct ebb_launch req = gang("ga", 2, tokens_a);
    struct res r;
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    pid_t pids[2] = {agent_pid(&f, "ga+0"), agent_pid(&f, "ga+1")};

    fx_destroy(&f);
    fx_create(&f);
    list(&f, &r);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.id, "local-ga+0,local-ga+1");
    assert_int_equal(r.state, EBB_INSTANCE_RUNNING);

    assert_int_equal(kill(pids[1], SIGKILL), 0);
    expect_killed(pids[1]);
    run_to(&f, ebb__clock_now(&f.clock) + 1100);
    assert_int_equal(f.n_ev, 2); /* RUNNING before the restart, LOST now */
    assert_int_equal(f.ev[1].kind, EBB_EVENT_LOST);
    assert_string_equal(f.ev[1].id, "local-ga+0,local-ga+1");
    assert_int_equal(f.ev[1].rank, 1);
    assert_false(exists(&f, "disks/ga+1"));
    assert_false(exists(&f, "ga+1.json"));
    assert_true(exists(&f, "disks/ga+0"));
    list(&f, &r);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.id, "local-ga+0");
    assert_int_equal(r.state, EBB_INSTANCE_RUNNING);

    /* The lost member's slot is free: a second gang of 2 fits in 3. */
    struct ebb_launch b = gang("gb", 2, tokens_b);
    launch(&f, &b, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, "local-gb+0,local-gb+1");
    pid_t pb[2] = {agent_pid(&f, "gb+0"), agent_pid(&f, "gb+1")};

    terminate(&f, "local-ga+0,local-ga+1", &r);
    assert_int_equal(r.status, 0);
    expect_killed(pids[0]);
    assert_false(exists(&f, "disks/ga+0"));
    terminate(&f, "local-gb+0,local-gb+1", &r);
    assert_int_equal(r.status, 0);
    expect_killed(pb[0]);
    expect_killed(pb[1]);
    fx_close(&f);
}

/* A gang terminated before its launch answered: the launch fails, both
 * agents are killed, and nothing of the gang is left to read. */
static void a_gang_terminated_before_its_launch_answered(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    struct ebb_launch req = gang("ga", 2, tokens_a);
    struct res r = {0}, d = {0};
    assert_int_equal(f.p->launch(f.self, &req, on_launch, &r), 0);
    pid_t pids[2] = {agent_pid(&f, "ga+0"), agent_pid(&f, "ga+1")};
    assert_int_equal(f.p->terminate(f.self, "local-ga+0,local-ga+1", on_done, &d), 0);
    run_to(&f, ebb__clock_now(&f.clock) + 1100); /* the watch too */
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.status, EBB_EIO);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.status, 0);
    assert_int_equal(f.n_ev, 0);
    expect_killed(pids[0]);
    expect_killed(pids[1]);
    struct res l;
    list(&f, &l);
    assert_int_equal(l.n, 0);
    fx_close(&f);
}

/* ---- replacement members (joins) ---- */

/* A join: one member for rank `rank` of gang `id`, its agent's token
 * `agent_token`. */
static struct ebb_launch join_req(const char *token, const char *id, unsigned rank,
                                  const char *agent_token)
{
    struct ebb_launch req = gang(token, 1, NULL);
    req.agent_token = agent_token;
    req.join_gang = id;
    req.join_rank = rank;
    return req;
}

static size_t losses(const struct fx *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_ev; i++)
        n += f->ev[i].kind == EBB_EVENT_LOST;
    return n;
}

/* Kills member `pid` (a child of the test's process: the provider's) and
 * runs the watch, which reports it lost. */
static void lose_member(struct fx *f, pid_t pid)
{
    assert_int_equal(kill(pid, SIGKILL), 0);
    expect_killed(pid);
    run_to(f, ebb__clock_now(&f->clock) + 1100);
}

/* A member lost, a join in its rank starts a new process tree under its
 * key, with its own agent token and disk; the gang is whole again, also
 * for an ebbd started again, and terminating it ends both. */
static void a_join_replaces_a_lost_member(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    assert_true(f.p->flags & EBB_PROVIDER_GANG_REPLACE);
    struct ebb_launch req = gang("ga", 2, tokens_a);
    struct res r;
    launch(&f, &req, &r);
    pid_t first = agent_pid(&f, "ga+0"), lost = agent_pid(&f, "ga+1");
    lose_member(&f, lost);
    assert_int_equal(losses(&f), 1);
    assert_false(exists(&f, "disks/ga+1"));

    struct ebb_launch j = join_req("ga", "local-ga+0,local-ga+1", 1, "enrol:ga+1.secret2");
    launch(&f, &j, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, "local-ga+1");
    assert_int_equal(r.launched_at, ebb__clock_now(&f.clock));
    assert_true(r.launched_at > T0);
    assert_int_equal(f.n_ev, 2); /* the gang's RUNNING and the loss: no more */
    char got[512], want[200];
    agent_says_run(&f, "ga+1", 1, "token", got, sizeof(got));
    assert_string_equal(got, "enrol:ga+1.secret2");
    agent_says_run(&f, "ga+1", 1, "mark", got, sizeof(got));
    assert_string_equal(got, "local-ga+1");
    agent_says_run(&f, "ga+1", 1, "args", got, sizeof(got));
    snprintf(want, sizeof(want), "--disk %s/disks/ga+1", f.pdir);
    assert_non_null(strstr(got, want));
    assert_non_null(strstr(got, "--metadata http://127.0.0.1:9/imds/ga+1 "));
    assert_true(exists(&f, "disks/ga+1"));
    assert_true(exists(&f, "ga+1.json"));
    pid_t joined = agent_pid_run(&f, "ga+1", 1);
    assert_true(joined != lost && joined != first);
    /* The gang started when it was launched, whatever member joined. */
    list(&f, &r);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.id, "local-ga+0,local-ga+1");
    assert_int_equal(r.state, EBB_INSTANCE_RUNNING);
    assert_int_equal(r.launched_at, T0);
    launch(&f, &req, &r);
    assert_string_equal(r.id, "local-ga+0,local-ga+1");
    assert_int_equal(r.launched_at, T0);

    /* The same join again, also from an ebbd started again: the same
     * member, still running. */
    launch(&f, &j, &r);
    assert_string_equal(r.id, "local-ga+1");
    fx_destroy(&f);
    fx_create(&f);
    launch(&f, &j, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, "local-ga+1");
    assert_int_equal(kill(joined, 0), 0);
    list(&f, &r);
    assert_string_equal(r.id, "local-ga+0,local-ga+1");

    terminate(&f, "local-ga+0,local-ga+1", &r);
    assert_int_equal(r.status, 0);
    expect_killed(first);
    expect_killed(joined);
    assert_false(exists(&f, "disks/ga+1"));
    assert_false(exists(&f, "ga+1.json"));
    list(&f, &r);
    assert_int_equal(r.n, 0);
    fx_close(&f);
}

/* Refusals (EBB_EINVAL) and no room (EBB_ENOCAPACITY); a member whose
 * processes died and that the watch has not reported yet is replaced too,
 * and no loss is reported for it then. */
static void a_join_needs_a_lost_rank_and_a_free_slot(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    struct ebb_launch req = gang("ga", 2, tokens_a);
    struct res r;
    launch(&f, &req, &r);
    pid_t first = agent_pid(&f, "ga+0");
    const char *id = "local-ga+0,local-ga+1";
    struct ebb_launch j = join_req("ga", id, 0, "enrol:ga+0.s");
    assert_int_equal(f.p->launch(f.self, &j, on_launch, &r), EBB_EINVAL); /* runs */
    j = join_req("ga", id, 2, "enrol:ga+2.s");
    assert_int_equal(f.p->launch(f.self, &j, on_launch, &r), EBB_EINVAL);
    j = join_req("ga", "local-zz+0,local-zz+1", 1, "enrol:zz+1.s");
    assert_int_equal(f.p->launch(f.self, &j, on_launch, &r), EBB_EINVAL);
    j = join_req("other", id, 1, "enrol:other+1.s");
    assert_int_equal(f.p->launch(f.self, &j, on_launch, &r), EBB_EINVAL);
    j = join_req("ga", id, 1, NULL);
    assert_int_equal(f.p->launch(f.self, &j, on_launch, &r), EBB_EINVAL);
    j = join_req("ga", id, 1, "enrol:ga+1.s");
    j.count = 2;
    assert_int_equal(f.p->launch(f.self, &j, on_launch, &r), EBB_EINVAL);
    struct ebb_launch one = gang("one", 1, NULL);
    one.agent_token = "enrol:one.s";
    launch(&f, &one, &r);
    assert_string_equal(r.id, "local-one");
    j = join_req("one", "local-one", 0, "enrol:one.s2");
    assert_int_equal(f.p->launch(f.self, &j, on_launch, &r), EBB_EINVAL);

    /* Rank 1 dies; the watch has not seen it when the join comes, and
     * the three slots are taken by rank 0 and two single instances. */
    struct ebb_launch two = gang("two", 1, NULL);
    two.agent_token = "enrol:two.s";
    pid_t lost = agent_pid(&f, "ga+1");
    assert_int_equal(kill(lost, SIGKILL), 0);
    expect_killed(lost);
    launch(&f, &two, &r);
    assert_int_equal(r.status, 0);
    j = join_req("ga", id, 1, "enrol:ga+1.s");
    launch(&f, &j, &r);
    assert_int_equal(r.status, EBB_ENOCAPACITY);
    terminate(&f, "local-two", &r);
    launch(&f, &j, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, "local-ga+1");
    pid_t joined = agent_pid_run(&f, "ga+1", 1);
    run_to(&f, ebb__clock_now(&f.clock) + 1100);
    assert_int_equal(losses(&f), 0);
    list(&f, &r);
    assert_int_equal(r.n, 2);

    /* One member's id ends it alone; a gang with no member left running
     * takes no join. */
    terminate(&f, "local-ga+1", &r);
    assert_int_equal(r.status, 0);
    expect_killed(joined);
    terminate(&f, "local-ga+0", &r);
    expect_killed(first);
    j = join_req("ga", id, 1, "enrol:ga+1.s3");
    assert_int_equal(f.p->launch(f.self, &j, on_launch, &r), EBB_EINVAL);
    terminate(&f, "local-one", &r);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_gang_starts_one_agent_per_member),
        cmocka_unit_test(a_restarted_ebbd_finds_the_gang_and_hears_of_a_lost_member),
        cmocka_unit_test(a_gang_terminated_before_its_launch_answered),
        cmocka_unit_test(a_join_replaces_a_lost_member),
        cmocka_unit_test(a_join_needs_a_lost_rank_and_a_free_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
