/* Teams' quotas (src/engine/engine_quota.c, docs/budgets.md "Quotas")
 * through the real engine on the virtual clock with the sim market, as
 * the budget tests run it (tests/lib/budget_world.h), with the catalog of
 * tests/data/engine/catalog.csv for the GPUs of p3.2xlarge (1),
 * p3.8xlarge (4) and p3.16xlarge (8).
 *
 * The randomised test runs many jobs of team ml, owned by three users,
 * each needing 1, 4 or 8 GPUs, under a random max_gpus, max_burn and
 * per-user max_gpus and monthly budgets, through price spikes,
 * preemptions and a month boundary, and after every instant at which
 * events ran checks that the team's instances hold no more GPUs than
 * max_gpus and no user's more than theirs, that at each fresh launch what
 * the team's instances are billed per hour is within max_burn, and that no
 * user's month spend (ledger plus running instances) passed their budget.
 * The jobs' priorities are random too, so jobs of higher priority pause
 * lower ones with a checkpoint to take their place, under the same checks;
 * and past max_burn (a price rose), some job of the team is always
 * stopping: max_burn is judged at every decision, not only at launches.
 *
 * The queue's order (src/engine/engine_order.c): the rank's comparison
 * against a table, members' fair shares, a higher priority taking the
 * place a job frees, a job that backs off after a failed launch keeping
 * its place, and fair share ordering two jobs of one priority.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/buf.h>
#include <ebb/runas.h>
#include <ebb/units.h>

#include "budget_world.h"
#include "engine/engine.h"
#include "market/billing.h"
#include "market/catalog.h"
#include "market/market.h"

#define MINUTE EBB_MS_PER_MINUTE
#define H EBB_MS_PER_HOUR
#define DAY EBB_MS_PER_DAY
#define USD EBB_MICROS_PER_UNIT

#define N_SEEDS 30
#define N_JOBS 14
#define N_USERS 3

static struct budget_world world_mem; /* not on a stack a failed test unwinds */
static struct ebb__catalog *catalog;

struct user {
    int64_t uid;
    char name[64];
    int64_t max_gpus;    /* 0: none */
    ebb_micros budget;   /* < 0: none */
};

struct quotas {
    int64_t max_gpus;
    ebb_micros max_burn;
    struct user users[N_USERS];
};

/* What the runs went through. */
struct tally {
    uint64_t instants, launches;
    unsigned team_gpu_waits, burn_waits, user_gpu_waits, user_budget_pauses,
        team_full, succeeded, preempted, burn_pauses, burn_over;
};

static void load_catalog(void)
{
    if (catalog != NULL)
        return;
    const char *root = getenv("EBB_SOURCE_ROOT");
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/data/engine/catalog.csv",
             root ? root : ".");
    struct ebb_diag d = {{0}};
    if (ebb__catalog_load(path, &catalog, &d) != 0)
        fail_msg("%s", d.msg);
}

/* Three users this machine has (ebb.yaml names users; jobs carry uids). */
static void find_users(struct quotas *q)
{
    int n = 0;
    for (int64_t uid = 0; uid < 65536 && n < N_USERS; uid++) {
        if (ebb_runas_user(uid, q->users[n].name, NULL, sizeof(q->users[n].name)) != 0)
            continue;
        q->users[n++].uid = uid;
    }
    if (n < N_USERS)
        fail_msg("this machine has fewer than %d users", N_USERS);
}

static int64_t gpus_of(const struct budget_world *w, size_t offer)
{
    const struct ebb__catalog_entry *c = ebb__engine_market(w->v.engine)->offers[offer].catalog;
    return c != NULL ? c->gpus : 0;
}

/* What the instance is billed per hour at `now` (USD: every offer is):
 * the price now, or under hourly billing that of the start of its
 * current instance-hour when higher. Before the launch is accepted, the
 * price now. */
static ebb_micros rate_of(const struct budget_world *w, const struct ebb__attempt_info *a,
                          ebb_time_ms now)
{
    const struct ebb__offer *o = &ebb__engine_market(w->v.engine)->offers[a->offer];
    const struct ebb__market_step *st = ebb__offer_at(o, now);
    ebb_micros rate = st != NULL ? st->price : 0;
    if (a->launched && a->billing == EBB_BILLING_HOURLY_START_PRICE &&
        now >= a->launched_at) {
        const struct ebb__market_step *h =
            ebb__offer_at(o, a->launched_at + (now - a->launched_at) / H * H);
        if (h != NULL && h->price > rate)
            rate = h->price;
    }
    return rate;
}

static ebb_micros running_cost(const struct budget_world *w,
                               const struct ebb__attempt_info *a, ebb_time_ms now)
{
    if (!a->launched)
        return 0;
    return ebb__bill(&ebb__engine_market(w->v.engine)->offers[a->offer], a->billing,
                     a->launched_at, now, NULL, NULL);
}

static ebb_micros user_ledger(struct budget_world *w, const struct user *u,
                              ebb_time_ms from, ebb_time_ms to)
{
    char uid[24];
    snprintf(uid, sizeof(uid), "%lld", (long long)u->uid);
    return budget_world_sql_int(w, "SELECT ifnull(sum(l.amount_micros), 0) FROM "
                                "ledger l JOIN jobs j ON j.id = l.job_id WHERE "
                                "l.team = 'ml' AND j.owner_uid = CAST(?1 AS "
                                "INTEGER) AND l.end_at >= ?2 AND l.end_at < ?3",
                                uid, from, to);
}

/* The checks of one instant; had[] says which jobs had an instance at the
 * instant before (updated). */
static void check_quotas(struct budget_world *w, const struct quotas *q,
                         ebb_time_ms now, int had[], struct tally *t)
{
    int64_t gpus = 0, user_gpus[N_USERS] = {0};
    ebb_micros burn = 0, user_running[N_USERS] = {0};
    int fresh = 0;
    for (size_t i = 0; i < w->n_jobs; i++) {
        struct ebb__job_info ji = budget_world_info(w->jobs[i]);
        struct ebb__attempt_info a;
        int has = ebb__engine_job_attempt(w->jobs[i], &a) == 0;
        if (ji.waiting_reason != NULL) {
            t->team_gpu_waits += strstr(ji.waiting_reason, "team ml's max_gpus") != NULL;
            t->burn_waits += strstr(ji.waiting_reason, "team ml's max_burn") != NULL;
            t->user_gpu_waits += strstr(ji.waiting_reason, "'s max_gpus") != NULL &&
                                 strstr(ji.waiting_reason, "in team ml") != NULL;
        }
        fresh |= has && !had[i];
        t->launches += (uint64_t)(has && !had[i]);
        had[i] = has;
        if (!has)
            continue;
        int k = 0;
        while (k < N_USERS && q->users[k].uid != ji.owner_uid)
            k++;
        assert_true(k < N_USERS);
        gpus += gpus_of(w, a.offer);
        user_gpus[k] += gpus_of(w, a.offer);
        burn += rate_of(w, &a, now);
        user_running[k] += running_cost(w, &a, now);
    }
    if (gpus > q->max_gpus)
        fail_msg("team ml: %lld GPUs in use, max_gpus %lld, at %lld",
                 (long long)gpus, (long long)q->max_gpus, (long long)now);
    t->team_full += gpus == q->max_gpus;
    if (fresh && burn > q->max_burn)
        fail_msg("team ml: billed %lld per hour at a launch, max_burn %lld, at %lld",
                 (long long)burn, (long long)q->max_burn, (long long)now);
    /* Past max_burn (a price rose), a job of the team is stopping: the
     * engine judges every decision, not only launches. */
    int stopping = 0;
    for (size_t i = 0; i < w->n_jobs; i++)
        stopping |= budget_world_info(w->jobs[i]).state == EBB__JOB_CHECKPOINTING;
    if (burn > q->max_burn && !stopping)
        fail_msg("team ml: billed %lld per hour, max_burn %lld, and no job stops, "
                 "at %lld", (long long)burn, (long long)q->max_burn, (long long)now);
    t->burn_over += burn > q->max_burn;
    ebb_time_ms from, to, prev_from, prev_to;
    ebb__budget_month(now, &from, &to);
    ebb__budget_month(from - 1, &prev_from, &prev_to);
    for (int k = 0; k < N_USERS; k++) {
        const struct user *u = &q->users[k];
        if (u->max_gpus > 0 && user_gpus[k] > u->max_gpus)
            fail_msg("user %s: %lld GPUs in use, max_gpus %lld, at %lld", u->name,
                     (long long)user_gpus[k], (long long)u->max_gpus, (long long)now);
        if (u->budget < 0)
            continue;
        ebb_micros month = user_ledger(w, u, from, to);
        ebb_micros last = user_ledger(w, u, prev_from, prev_to);
        if (month + user_running[k] > u->budget || last > u->budget)
            fail_msg("user %s: %lld + %lld running this month, %lld last month; "
                     "budget %lld at %lld", u->name, (long long)month,
                     (long long)user_running[k], (long long)last,
                     (long long)u->budget, (long long)now);
    }
}

/* Uniform in [lo, hi] from the test's own generator (the world's draws
 * stay those of the budget tests). */
static int64_t draw(uint64_t *s, int64_t lo, int64_t hi)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return lo + (int64_t)((*s * UINT64_C(2685821657736338717)) % (uint64_t)(hi - lo + 1));
}

static char *quota_yaml(struct quotas *q, uint64_t *s, char **members)
{
    q->max_gpus = draw(s, 6, 20);
    q->max_burn = draw(s, 4, 16) * USD;
    struct user *u = q->users;
    u[0].max_gpus = draw(s, 1, 8);
    u[0].budget = draw(s, 2, 8) * USD;
    u[1].max_gpus = draw(s, 2, 12);
    u[1].budget = -1;
    u[2].max_gpus = 0;
    u[2].budget = draw(s, 1, 5) * USD;
    struct ebb_buf b = {0}, m = {0};
    ebb_buf_printf(&m, "[%s, %s, %s]", u[0].name, u[1].name, u[2].name);
    ebb_buf_printf(&b, "    max_gpus: %lld\n    max_burn: %lld USD/h\n"
                   "    users:\n      %s: {max_gpus: %lld, budget: %lld USD/month}\n"
                   "      %s: {max_gpus: %lld}\n      %s: {budget: %lld USD}\n",
                   (long long)q->max_gpus, (long long)(q->max_burn / USD),
                   u[0].name, (long long)u[0].max_gpus, (long long)(u[0].budget / USD),
                   u[1].name, (long long)u[1].max_gpus,
                   u[2].name, (long long)(u[2].budget / USD));
    *members = ebb_buf_take(&m);
    char *out = ebb_buf_take(&b);
    assert_non_null(*members);
    assert_non_null(out);
    return out;
}

static void submit_jobs(struct budget_world *w, const struct quotas *q, uint64_t *s)
{
    static const char *const policies[] = {"greedy", "uniform-progress", "trough"};
    static const int counts[] = {1, 4, 8};
    static const char *const priorities[] = {"low", "normal", "high", "urgent"};
    for (int j = 0; j < N_JOBS; j++) {
        struct ebb_buf b = {0};
        ebb_buf_printf(&b, "name: q%d\nrun: [python, train.py]\n"
                       "restart_overhead: %lldm\nwork: %lldh\n"
                       "deadline: 4d\nmarket: spot\npolicy: %s\nteam: ml\n"
                       "resources: {gpu: {count: %d}}\n"
                       "checkpoint:\n  every: %lldm\n  grace: %llds\n",
                       j, (long long)draw(s, 1, 10), (long long)draw(s, 2, 20),
                       policies[draw(s, 0, 2)], counts[draw(s, 0, 2)],
                       (long long)draw(s, 10, 60), (long long)draw(s, 180, 300));
        ebb_buf_printf(&b, "priority: %s\n", priorities[draw(s, 0, 3)]);
        char *yaml = ebb_buf_take(&b);
        assert_non_null(yaml);
        budget_world_submit_as(w, yaml, q->users[draw(s, 0, N_USERS - 1)].uid);
        free(yaml);
    }
}

static void count_outcomes(struct budget_world *w, struct tally *t)
{
    for (size_t i = 0; i < w->n_jobs; i++) {
        struct ebb__job_info ji = budget_world_info(w->jobs[i]);
        t->succeeded += ji.state == EBB__JOB_SUCCEEDED;
        t->user_budget_pauses += (unsigned)budget_world_sql_int(
            w, "SELECT count(*) FROM job_events WHERE job_id = ?1 AND reason "
            "LIKE 'user %''s budget in team ml:%'", ji.id, 0, 0);
        t->burn_pauses += (unsigned)budget_world_sql_int(
            w, "SELECT count(*) FROM job_events WHERE job_id = ?1 AND to_state = "
            "'paused' AND reason LIKE 'team ml''s max_burn %pausing the lowest%'",
            ji.id, 0, 0);
        t->preempted += (unsigned)budget_world_sql_int(
            w, "SELECT count(*) FROM job_events WHERE job_id = ?1 AND to_state = "
            "'paused' AND reason LIKE 'paused for job %'", ji.id, 0, 0);
    }
}

/* ---- tests ---------------------------------------------------------------- */

static void quotas_hold_through_spikes_and_preemptions(void **state)
{
    (void)state;
    load_catalog();
    ebb_time_ms start = ebb_days_from_civil(2020, 1, 30) * DAY;
    ebb_time_ms end = start + 4 * DAY;
    struct tally t = {0};
    for (uint64_t seed = 1; seed <= N_SEEDS; seed++) {
        struct quotas q = {0};
        find_users(&q);
        uint64_t s = seed * UINT64_C(0xD1B54A32D192ED03) + 7;
        char *members = NULL;
        char *team_more = quota_yaml(&q, &s, &members);
        struct budget_world *w = &world_mem;
        const struct budget_world_setup setup = {
            .providers_more = "", .top_more = "", .members = members,
            .team_more = team_more, .team_cap_usd = 1000, .gpu_types = 1,
            .catalog = catalog,
        };
        budget_world_open(w, seed, start, end, &setup);
        free(team_more);
        free(members);
        submit_jobs(w, &q, &s);
        int had[BUDGET_WORLD_MAX_JOBS] = {0};
        for (;;) {
            ebb_time_ms due = ebb__clock_next_due(&w->v.clock);
            if (due > end)
                break;
            ebb__clock_run_until(&w->v.clock, due);
            check_quotas(w, &q, ebb__clock_now(&w->v.clock), had, &t);
            t.instants++;
        }
        count_outcomes(w, &t);
        budget_world_stop(w);
    }
    print_message("%d seeds, %llu instants checked, %llu launches: waits for "
                  "the team's GPUs %u, its burn %u, a user's GPUs %u; %u pauses "
                  "by a user's budget, %u for a job of higher priority, %u for "
                  "max_burn (past it at %u instants, a job stopping); the "
                  "team's GPUs full at %u instants; %u succeeded\n", N_SEEDS,
                  (unsigned long long)t.instants, (unsigned long long)t.launches,
                  t.team_gpu_waits, t.burn_waits, t.user_gpu_waits,
                  t.user_budget_pauses, t.preempted, t.burn_pauses, t.burn_over,
                  t.team_full, t.succeeded);
    /* The runs went through what the test is about. */
    assert_true(t.team_gpu_waits > 0);
    assert_true(t.burn_waits > 0);
    assert_true(t.user_gpu_waits > 0);
    assert_true(t.user_budget_pauses > 0);
    assert_true(t.team_full > 0);
    assert_true(t.preempted > 0);
    assert_true(t.burn_pauses > 0);
    assert_true(t.succeeded > 0);
}

/* A world on the flat market of tests/data/engine/prices_flat.csv
 * (p3.2xlarge 0.90 USD/h, p3.8xlarge 3.60 USD/h in us-east-1a) from
 * 2020-01-01 with the catalog, team ml of `users` with `team_more`. */
/* The world of flat prices, with `sim_more` (lines under the sim's
 * mapping, e.g. "    failed_launches: 1\n") and team ml's members and
 * further keys. */
static ebb_time_ms sim_world(struct budget_world *w, const char *sim_more,
                             const char *members, const char *team_more)
{
    load_catalog();
    ebb_time_ms start = ebb_days_from_civil(2020, 1, 1) * DAY;
    memset(w, 0, sizeof(*w));
    budget_world_live = w;
    const char *root = getenv("EBB_SOURCE_ROOT");
    char text[2048];
    snprintf(text, sizeof(text), "providers:\n  sim:\n    prices: \"%s/tests/"
             "data/engine/prices_flat.csv\"\n%sdefault_policy: greedy\n"
             "teams:\n  ml:\n    members: %s\n%s", root ? root : ".", sim_more,
             members, team_more);
    struct ebb_diag d = {{0}};
    if (ebb__vengine_open(&w->v, "(test)", text, catalog, start, &d) != 0)
        fail_msg("%s", d.msg);
    ebb__engine_set_budget_config(w->v.engine, w->v.config);
    ebb__clock_run_until(&w->v.clock, start);
    return start;
}

static ebb_time_ms flat_world(struct budget_world *w, const char *members,
                              const char *team_more)
{
    return sim_world(w, "", members, team_more);
}

/* Fails unless the job waits saying `want`. */
static void waits_saying(const struct ebb__job *job, const char *want)
{
    const char *why = budget_world_info(job).waiting_reason;
    if (why == NULL || strcmp(why, want) != 0)
        fail_msg("waiting: \"%s\", not \"%s\"", why ? why : "(not waiting)", want);
}

static const char four_gpus[] = "run: [python, train.py]\nwork: 2h\nmarket: spot\n"
                                "team: ml\nresources: {gpu: {count: 4}}\n"
                                "checkpoint: {every: 30m, grace: 60s}\n";

/* A job that would pass max_gpus waits, `ebb job show` saying why; it
 * launches when the instance that held the GPUs ends, not later, though
 * that instance was of an offer it cannot use (whose end wakes only the
 * jobs that can). */
static void full_team_waits_then_runs_when_an_instance_ends(void **state)
{
    (void)state;
    struct quotas q = {0};
    find_users(&q);
    char members[128], more[256];
    snprintf(members, sizeof(members), "[%s]", q.users[0].name);
    snprintf(more, sizeof(more), "    max_gpus: 4\n");
    struct budget_world *w = &world_mem;
    ebb_time_ms start = flat_world(w, members, more);
    char yaml[512];
    snprintf(yaml, sizeof(yaml), "name: first\nrun: [python, train.py]\n"
             "work: 2h\nmarket: spot\nteam: ml\nresources: {gpu: {count: 1}}\n"
             "checkpoint: {every: 30m, grace: 60s}\n");
    struct ebb__job *first = budget_world_submit_as(w, yaml, q.users[0].uid);
    snprintf(yaml, sizeof(yaml), "name: second\n%s", four_gpus);
    struct ebb__job *second = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 10 * MINUTE);
    struct ebb__job_info a = budget_world_info(first), b = budget_world_info(second);
    assert_true(a.has_instance);
    assert_false(b.has_instance);
    waits_saying(second, "team ml's max_gpus 4 is in use (1 GPU on 1 "
                         "instance; p3.8xlarge has 4)");
    ebb__clock_run_until(&w->v.clock, start + DAY);
    a = budget_world_info(first);
    b = budget_world_info(second);
    assert_int_equal(a.state, EBB__JOB_SUCCEEDED);
    assert_int_equal(b.state, EBB__JOB_SUCCEEDED);
    /* The second launched at the instant the first's instance ended. */
    char *ended = budget_world_sql_text(w, "SELECT ended_at FROM instances WHERE "
                                        "job_id = ?1", a.id);
    char *asked = budget_world_sql_text(w, "SELECT min(requested_at) FROM "
                                        "instances WHERE job_id = ?1", b.id);
    assert_int_equal(strtoll(asked, NULL, 10), strtoll(ended, NULL, 10));
    free(ended);
    free(asked);
    budget_world_stop(w);
}

/* A job larger than the quota says so instead of "in use"; a member's
 * max_gpus holds while the team's has room; a burn that would pass
 * max_burn waits. */
static void reasons_name_the_quota(void **state)
{
    (void)state;
    struct quotas q = {0};
    find_users(&q);
    char members[256], more[512], yaml[512];
    snprintf(members, sizeof(members), "[%s, %s]", q.users[0].name, q.users[1].name);
    snprintf(more, sizeof(more), "    max_gpus: 3\n");
    struct budget_world *w = &world_mem;
    ebb_time_ms start = flat_world(w, members, more);
    snprintf(yaml, sizeof(yaml), "name: big\n%s", four_gpus);
    struct ebb__job *big = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 10 * MINUTE);
    waits_saying(big, "team ml's max_gpus 3 is less than the 4 GPUs of "
                        "p3.8xlarge: waiting for an offer that fits or a larger "
              "quota");
    budget_world_stop(w);

    snprintf(more, sizeof(more), "    max_gpus: 16\n    users:\n      %s: "
             "{max_gpus: 4}\n", q.users[1].name);
    start = flat_world(w, members, more);
    snprintf(yaml, sizeof(yaml), "name: b1\n%s", four_gpus);
    budget_world_submit_as(w, yaml, q.users[1].uid);
    snprintf(yaml, sizeof(yaml), "name: b2\n%s", four_gpus);
    struct ebb__job *b2 = budget_world_submit_as(w, yaml, q.users[1].uid);
    snprintf(yaml, sizeof(yaml), "name: a1\n%s", four_gpus);
    struct ebb__job *a1 = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 10 * MINUTE);
    char want[256];
    snprintf(want, sizeof(want), "user %s's max_gpus 4 in team ml is in use (4 "
             "GPUs on 1 instance; p3.8xlarge has 4)", q.users[1].name);
    waits_saying(b2, want);
    assert_true(budget_world_info(a1).has_instance);
    budget_world_stop(w);

    snprintf(more, sizeof(more), "    max_burn: 5 USD/h\n");
    start = flat_world(w, members, more);
    snprintf(yaml, sizeof(yaml), "name: c1\n%s", four_gpus);
    budget_world_submit_as(w, yaml, q.users[0].uid);
    snprintf(yaml, sizeof(yaml), "name: c2\n%s", four_gpus);
    struct ebb__job *c2 = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 10 * MINUTE);
    waits_saying(c2, "team ml's max_burn 5.00 USD/h: its 1 instance is "
             "billed 3.60 USD/h now and p3.8xlarge could cost up to "
             "3.60 USD/h");
    budget_world_stop(w);
}


/* A gang counts each node: 2 nodes of p3.8xlarge are 8 GPUs and 7.20
 * USD/h against the team's max_gpus and max_burn, and as 2 instances of
 * what the team holds. */
static void a_gang_counts_each_node(void **state)
{
    (void)state;
    struct quotas q = {0};
    find_users(&q);
    char members[128], yaml[512];
    snprintf(members, sizeof(members), "[%s]", q.users[0].name);
    struct budget_world *w = &world_mem;
    ebb_time_ms start = flat_world(w, members, "    max_gpus: 6\n");
    snprintf(yaml, sizeof(yaml), "name: gang\nnodes: 2\n%s", four_gpus);
    struct ebb__job *gang = budget_world_submit_as(w, yaml, q.users[0].uid);
    snprintf(yaml, sizeof(yaml), "name: single\n%s", four_gpus);
    struct ebb__job *single = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 10 * MINUTE);
    waits_saying(gang, "team ml's max_gpus 6 is less than the 8 GPUs of 2 nodes "
                       "of p3.8xlarge: waiting for an offer that fits or a larger "
                       "quota");
    assert_true(budget_world_info(single).has_instance);
    budget_world_stop(w);

    start = flat_world(w, members, "    max_gpus: 8\n");
    snprintf(yaml, sizeof(yaml), "name: gang\nnodes: 2\n%s", four_gpus);
    gang = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + MINUTE);
    assert_true(budget_world_info(gang).has_instance);
    snprintf(yaml, sizeof(yaml), "name: more\nrun: [python, train.py]\nwork: 2h\n"
             "market: spot\nteam: ml\nresources: {gpu: {count: 1}}\n");
    struct ebb__job *more = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 10 * MINUTE);
    waits_saying(more, "team ml's max_gpus 8 is in use (8 GPUs on 2 instances; "
                       "p3.2xlarge has 1)");
    struct ebb__quota_use u;
    ebb__engine_quota_use(w->v.engine, "ml", -1, NULL, start + 10 * MINUTE, &u);
    assert_int_equal(u.gpus, 8);
    assert_int_equal(u.burn, 7200000);
    assert_int_equal(u.instances, 2);
    budget_world_stop(w);

    start = flat_world(w, members, "    max_burn: 5 USD/h\n");
    snprintf(yaml, sizeof(yaml), "name: gang\nnodes: 2\n%s", four_gpus);
    gang = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 10 * MINUTE);
    waits_saying(gang, "team ml's max_burn 5.00 USD/h: its 0 instances are billed "
                       "0.00 USD/h now and 2 nodes of p3.8xlarge could cost up to "
                       "7.20 USD/h");
    budget_world_stop(w);
}

/* ---- the order of a team's waiting jobs (engine_order.c) ---- */

/* The rank's order against a table: priority first, then fair-share
 * usage, then submit time, then the engine's order. */
static void queue_order_table(void **state)
{
    (void)state;
    static const struct {
        struct ebb__queue_rank a, b;
        int want; /* the sign of cmp(a, b) */
        const char *why;
    } cases[] = {
        {{750, 9.0, 5, 9}, {500, 0.0, 1, 1}, -1, "higher priority first, whatever else"},
        {{250, 0.0, 1, 1}, {251, 5.0, 9, 9}, 1, "one point of priority counts"},
        {{1000, 3.0, 9, 9}, {0, 0.0, 0, 0}, -1, "urgent before 0"},
        {{500, 0.5, 9, 9}, {500, 0.6, 1, 1}, -1, "same priority: less usage first"},
        {{500, 2.0, 1, 1}, {500, 1.0, 9, 9}, 1, "more usage goes after"},
        {{500, 1.0, 1, 9}, {500, 1.0, 2, 1}, -1, "same usage: earlier submitted first"},
        {{500, 1.0, 7, 3}, {500, 1.0, 7, 4}, -1, "same millisecond: engine order"},
        {{500, 1.0, 7, 4}, {500, 1.0, 7, 3}, 1, "same millisecond, the other way"},
        {{500, 1.0, 7, 4}, {500, 1.0, 7, 4}, 0, "the same job"},
        {{0, 0.0, 0, 0}, {0, 1e-9, 0, 0}, -1, "the least usage counts"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = ebb__queue_rank_cmp(&cases[i].a, &cases[i].b);
        int sign = (got > 0) - (got < 0);
        if (sign != cases[i].want)
            fail_msg("case %zu (%s): %d, want %d", i, cases[i].why, sign, cases[i].want);
        int back = ebb__queue_rank_cmp(&cases[i].b, &cases[i].a);
        assert_int_equal((back > 0) - (back < 0), -cases[i].want);
    }
}

/* Members' shares: their own budgets where the team has one, the rest
 * split equally; equal without a team budget. */
static void fair_share_weights(void **state)
{
    (void)state;
    struct budget_world *w = &world_mem;
    flat_world(w, "[a, b, c, d]", "    budget: 100 USD\n    fair_share: true\n"
               "    admins: [e, a]\n    users:\n      a: {budget: 40 USD}\n"
               "      b: {max_gpus: 2}\n");
    const struct ebb__team *t = ebb__config_team(w->v.config, "ml");
    assert_non_null(t);
    assert_true(t->fair_share);
    assert_int_equal(ebb__engine_fair_share(w->v.engine, t, "a"), 40 * USD);
    /* b, c, d and e share the 60 USD left. */
    assert_int_equal(ebb__engine_fair_share(w->v.engine, t, "b"), 15 * USD);
    assert_int_equal(ebb__engine_fair_share(w->v.engine, t, "e"), 15 * USD);
    assert_int_equal(ebb__engine_fair_share(w->v.engine, t, NULL), 15 * USD);
    budget_world_stop(w);

    flat_world(w, "[a, b]", "    fair_share: true\n    users:\n      a: {budget: 40 USD}\n");
    t = ebb__config_team(w->v.config, "ml");
    assert_int_equal(ebb__engine_fair_share(w->v.engine, t, "a"), USD);
    assert_int_equal(ebb__engine_fair_share(w->v.engine, t, "b"), USD);
    budget_world_stop(w);
}

/* When the place a running job holds frees, the waiting job of higher
 * priority takes it, though submitted after; `ebb__engine_queue` lists
 * them in that order. */
static void priority_takes_the_freed_place(void **state)
{
    (void)state;
    struct quotas q = {0};
    find_users(&q);
    char members[128], yaml[512];
    snprintf(members, sizeof(members), "[%s]", q.users[0].name);
    struct budget_world *w = &world_mem;
    ebb_time_ms start = flat_world(w, members, "    max_gpus: 4\n");
    /* Urgent: none of the others may take its place. */
    snprintf(yaml, sizeof(yaml), "name: first\npriority: urgent\n%s", four_gpus);
    struct ebb__job *first = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + MINUTE);
    assert_true(budget_world_info(first).has_instance);
    snprintf(yaml, sizeof(yaml), "name: low\npriority: low\n%s", four_gpus);
    struct ebb__job *low = budget_world_submit_as(w, yaml, q.users[0].uid);
    snprintf(yaml, sizeof(yaml), "name: normal\n%s", four_gpus);
    struct ebb__job *normal = budget_world_submit_as(w, yaml, q.users[0].uid);
    snprintf(yaml, sizeof(yaml), "name: high\npriority: 800\n%s", four_gpus);
    struct ebb__job *high = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 10 * MINUTE);
    struct ebb__job **order = NULL;
    size_t n = 0;
    assert_int_equal(ebb__engine_queue(w->v.engine, "ml", &order, &n), 0);
    assert_int_equal(n, 3);
    assert_ptr_equal(order[0], high);
    assert_ptr_equal(order[1], normal);
    assert_ptr_equal(order[2], low);
    free(order);
    assert_int_equal(budget_world_info(high).waiting_kind, EBB__WAIT_QUOTA);
    assert_string_equal(ebb__wait_kind_name(budget_world_info(low).waiting_kind), "quota");
    assert_int_equal(budget_world_info(first).waiting_kind, EBB__WAIT_NONE);
    assert_int_equal(ebb__engine_queue(w->v.engine, "other", &order, &n), 0);
    assert_int_equal(n, 0);
    ebb__clock_run_until(&w->v.clock, start + DAY);
    const struct ebb__job *jobs[] = {first, high, normal, low};
    int64_t asked[4];
    for (int i = 0; i < 4; i++) {
        struct ebb__job_info ji = budget_world_info(jobs[i]);
        assert_int_equal(ji.state, EBB__JOB_SUCCEEDED);
        asked[i] = budget_world_sql_int(w, "SELECT min(requested_at) FROM instances "
                                        "WHERE job_id = ?1", ji.id, 0, 0);
        if (i > 0 && asked[i] <= asked[i - 1])
            fail_msg("%s launched at %lld, before %s at %lld", ji.id,
                     (long long)asked[i], budget_world_info(jobs[i - 1]).id,
                     (long long)asked[i - 1]);
    }
    budget_world_stop(w);
}

/* A job that backs off after a failed launch keeps its place: the job
 * behind it waits, saying why, and launches only after it. */
static void backoff_keeps_its_place(void **state)
{
    (void)state;
    struct quotas q = {0};
    find_users(&q);
    char members[128], yaml[512];
    snprintf(members, sizeof(members), "[%s]", q.users[0].name);
    struct budget_world *w = &world_mem;
    ebb_time_ms start = sim_world(w, "    failed_launches: 1\n", members,
                                  "    max_gpus: 4\n");
    snprintf(yaml, sizeof(yaml), "name: high\npriority: high\n%s", four_gpus);
    struct ebb__job *high = budget_world_submit_as(w, yaml, q.users[0].uid);
    snprintf(yaml, sizeof(yaml), "name: low\npriority: low\n%s", four_gpus);
    struct ebb__job *low = budget_world_submit_as(w, yaml, q.users[0].uid);
    int saw_behind = 0, saw_retry = 0;
    for (ebb_time_ms t = start; t < start + 30 * MINUTE; t += 5 * EBB_MS_PER_SECOND) {
        ebb__clock_run_until(&w->v.clock, t);
        struct ebb__job_info h = budget_world_info(high), l = budget_world_info(low);
        if (!h.has_instance)
            assert_false(l.has_instance);
        saw_retry |= h.waiting_kind == EBB__WAIT_RETRY;
        const char *why = l.waiting_reason;
        if (why != NULL && strstr(why, "behind job ") != NULL) {
            char want[160];
            snprintf(want, sizeof(want), "behind job %s (priority high) in team ml's "
                     "queue, which backs off until ", h.id);
            assert_non_null(strstr(why, want));
            saw_behind = 1;
        }
    }
    assert_true(saw_behind);
    assert_true(saw_retry);
    ebb__clock_run_until(&w->v.clock, start + DAY);
    struct ebb__job_info h = budget_world_info(high), l = budget_world_info(low);
    assert_int_equal(h.state, EBB__JOB_SUCCEEDED);
    assert_int_equal(l.state, EBB__JOB_SUCCEEDED);
    assert_int_equal(budget_world_sql_int(w, "SELECT count(*) FROM instances WHERE "
                                          "job_id = ?1", h.id, 0, 0), 2);
    int64_t high_ok = budget_world_sql_int(w, "SELECT max(requested_at) FROM instances "
                                           "WHERE job_id = ?1", h.id, 0, 0);
    int64_t low_at = budget_world_sql_int(w, "SELECT min(requested_at) FROM instances "
                                          "WHERE job_id = ?1", l.id, 0, 0);
    assert_true(low_at > high_ok);
    budget_world_stop(w);
}

/* In a team with fair_share, of two jobs of one priority the one whose
 * owner spent less this month against their share goes first, though
 * submitted later; without fair_share, the earlier submitted. */
static void fair_share_orders_one_priority(void **state)
{
    (void)state;
    struct quotas q = {0};
    find_users(&q);
    char members[256], yaml[512];
    snprintf(members, sizeof(members), "[%s, %s]", q.users[0].name, q.users[1].name);
    for (int fair = 0; fair < 2; fair++) {
        struct budget_world *w = &world_mem;
        ebb_time_ms start = flat_world(w, members, fair ? "    max_gpus: 4\n    "
                                                          "fair_share: true\n"
                                                        : "    max_gpus: 4\n");
        snprintf(yaml, sizeof(yaml), "name: spent\n%s", four_gpus);
        struct ebb__job *spent = budget_world_submit_as(w, yaml, q.users[0].uid);
        ebb__clock_run_until(&w->v.clock, start + MINUTE);
        snprintf(yaml, sizeof(yaml), "name: again\n%s", four_gpus);
        struct ebb__job *again = budget_world_submit_as(w, yaml, q.users[0].uid);
        ebb__clock_run_until(&w->v.clock, start + 2 * MINUTE);
        snprintf(yaml, sizeof(yaml), "name: other\n%s", four_gpus);
        struct ebb__job *other = budget_world_submit_as(w, yaml, q.users[1].uid);
        ebb__clock_run_until(&w->v.clock, start + DAY);
        assert_int_equal(budget_world_info(spent).state, EBB__JOB_SUCCEEDED);
        int64_t a = budget_world_sql_int(w, "SELECT min(requested_at) FROM instances "
                                         "WHERE job_id = ?1", budget_world_info(again).id,
                                         0, 0);
        int64_t o = budget_world_sql_int(w, "SELECT min(requested_at) FROM instances "
                                         "WHERE job_id = ?1", budget_world_info(other).id,
                                         0, 0);
        if (fair)
            assert_true(o < a);
        else
            assert_true(a < o);
        budget_world_stop(w);
    }
}

/* The GPUs the team's instances hold at `now` (all of the world's jobs). */
static int64_t team_gpus(const struct budget_world *w)
{
    int64_t gpus = 0;
    for (size_t i = 0; i < w->n_jobs; i++) {
        struct ebb__attempt_info a;
        if (ebb__engine_job_attempt(w->jobs[i], &a) == 0)
            gpus += gpus_of(w, a.offer);
    }
    return gpus;
}


/* Preemption by checkpoint (docs/budgets.md): a high job that the team's
 * max_gpus keeps out pauses the low job that holds the GPUs, through a
 * checkpoint; it launches once that instance is gone, the low one
 * resumes from its checkpoint when the high one ends, and both finish.
 * The team never holds more than max_gpus. A normal job never pauses
 * another normal one. */
static void higher_priority_takes_the_place_by_checkpoint(void **state)
{
    (void)state;
    struct quotas q = {0};
    find_users(&q);
    char members[128], yaml[512];
    snprintf(members, sizeof(members), "[%s]", q.users[0].name);
    struct budget_world *w = &world_mem;
    ebb_time_ms start = flat_world(w, members, "    max_gpus: 4\n");
    snprintf(yaml, sizeof(yaml), "name: low\npriority: low\n%s", four_gpus);
    struct ebb__job *low = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 45 * MINUTE);
    assert_true(budget_world_info(low).has_instance);
    snprintf(yaml, sizeof(yaml), "name: high\npriority: high\n%s", four_gpus);
    struct ebb__job *high = budget_world_submit_as(w, yaml, q.users[0].uid);
    int saw_paused = 0, saw_checkpointing = 0;
    for (ebb_time_ms t = start + 45 * MINUTE; t < start + DAY; t += 10 * EBB_MS_PER_SECOND) {
        ebb__clock_run_until(&w->v.clock, t);
        assert_true(team_gpus(w) <= 4);
        struct ebb__job_info l = budget_world_info(low);
        saw_checkpointing |= l.state == EBB__JOB_CHECKPOINTING;
        saw_paused |= l.state == EBB__JOB_PAUSED && !l.has_instance;
        if (l.state == EBB__JOB_PAUSED)
            assert_int_equal(l.waiting_kind == EBB__WAIT_NONE, 0);
    }
    assert_true(saw_checkpointing);
    assert_true(saw_paused);
    struct ebb__job_info l = budget_world_info(low), h = budget_world_info(high);
    assert_int_equal(l.state, EBB__JOB_SUCCEEDED);
    assert_int_equal(h.state, EBB__JOB_SUCCEEDED);
    char want[200];
    snprintf(want, sizeof(want), "paused for job %s (priority high), which takes its "
             "place in team ml's quota; resuming when the quota frees", h.id);
    char *why = budget_world_sql_text(w, "SELECT reason FROM job_events WHERE job_id = "
                                      "?1 AND to_state = 'paused'", l.id);
    assert_string_equal(why, want);
    free(why);
    /* It resumed from its checkpoint: its second instance started after
     * the high job's ended, with the first one's work saved. */
    assert_int_equal(budget_world_sql_int(w, "SELECT count(*) FROM instances WHERE "
                                          "job_id = ?1", l.id, 0, 0), 2);
    int64_t high_end = budget_world_sql_int(w, "SELECT max(ended_at) FROM instances "
                                            "WHERE job_id = ?1", h.id, 0, 0);
    int64_t low_again = budget_world_sql_int(w, "SELECT max(requested_at) FROM "
                                             "instances WHERE job_id = ?1", l.id, 0, 0);
    int64_t low_first_end = budget_world_sql_int(w, "SELECT min(ended_at) FROM "
                                                 "instances WHERE job_id = ?1", l.id, 0, 0);
    int64_t high_at = budget_world_sql_int(w, "SELECT min(requested_at) FROM instances "
                                           "WHERE job_id = ?1", h.id, 0, 0);
    assert_true(high_at >= low_first_end);
    assert_true(low_again >= high_end);
    assert_true(budget_world_sql_int(w, "SELECT count(*) FROM job_events WHERE job_id "
                                     "= ?1 AND from_state = 'running' AND to_state = "
                                     "'checkpointing'", l.id, 0, 0) >= 1);
    /* Paused until it resumed: no waiting in between. */
    assert_int_equal(budget_world_sql_int(w, "SELECT count(*) FROM job_events WHERE "
                                          "job_id = ?1 AND to_state = 'waiting' AND seq > "
                                          "(SELECT seq FROM job_events WHERE job_id = ?1 "
                                          "AND to_state = 'paused')", l.id, 0, 0), 0);
    budget_world_stop(w);

    /* normal does not preempt normal. */
    start = flat_world(w, members, "    max_gpus: 4\n");
    snprintf(yaml, sizeof(yaml), "name: one\n%s", four_gpus);
    struct ebb__job *one = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 10 * MINUTE);
    snprintf(yaml, sizeof(yaml), "name: two\n%s", four_gpus);
    struct ebb__job *two = budget_world_submit_as(w, yaml, q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 30 * MINUTE);
    assert_int_equal(budget_world_info(one).state, EBB__JOB_RUNNING);
    waits_saying(two, "team ml's max_gpus 4 is in use (4 GPUs on 1 instance; "
                      "p3.8xlarge has 4)");
    budget_world_stop(w);
}

/* A job that moves from a 1-GPU instance to a 4-GPU one counts 4 while it
 * moves: a launch judged in between must not take the GPUs the move will
 * use. */
static void a_move_counts_the_instance_it_moves_to(void **state)
{
    (void)state;
    struct quotas q = {0};
    find_users(&q);
    load_catalog();
    struct budget_world *w = &world_mem;
    memset(w, 0, sizeof(*w));
    budget_world_live = w;
    snprintf(w->dir, sizeof(w->dir), "/tmp/ebb-quota-XXXXXX");
    assert_non_null(mkdtemp(w->dir));
    snprintf(w->trace, sizeof(w->trace), "%.63s/prices.csv", w->dir);
    FILE *f = fopen(w->trace, "w");
    assert_non_null(f);
    /* p3.8xlarge (speed 2) falls from 1.80 to 0.05 USD per unit of work at
     * 02:00: moving there pays. */
    fputs("timestamp_utc,provider,region,zone,instance_type,product,"
          "price_usd_per_hour\n"
          "2020-01-01T00:00:00Z,aws,us-east-1,us-east-1a,p3.2xlarge,Linux/UNIX,0.90\n"
          "2020-01-01T00:00:00Z,aws,us-east-1,us-east-1a,p3.8xlarge,Linux/UNIX,3.60\n"
          "2020-01-01T02:00:00Z,aws,us-east-1,us-east-1a,p3.2xlarge,Linux/UNIX,0.90\n"
          "2020-01-01T02:00:00Z,aws,us-east-1,us-east-1a,p3.8xlarge,Linux/UNIX,0.10\n"
          "2020-01-05T00:00:00Z,aws,us-east-1,us-east-1a,p3.2xlarge,Linux/UNIX,0.90\n"
          "2020-01-05T00:00:00Z,aws,us-east-1,us-east-1a,p3.8xlarge,Linux/UNIX,0.10\n", f);
    assert_int_equal(fclose(f), 0);
    ebb_time_ms start = ebb_days_from_civil(2020, 1, 1) * DAY;
    char text[1024];
    snprintf(text, sizeof(text), "providers:\n  sim:\n    prices: \"%s\"\n"
             "    checkpoint_time: 170s\n"
             "default_policy: deadline\nteams:\n  ml:\n    members: [%s]\n"
             "    max_gpus: 5\n", w->trace, q.users[0].name);
    struct ebb_diag d = {{0}};
    if (ebb__vengine_open(&w->v, "(test)", text, catalog, start, &d) != 0)
        fail_msg("%s", d.msg);
    ebb__engine_set_budget_config(w->v.engine, w->v.config);
    ebb__clock_run_until(&w->v.clock, start);
    struct ebb__job *x = budget_world_submit_as(w, "name: x\nrun: [python, train.py]\n"
        "work: 20h\ndeadline: 3d\nmarket: spot\nteam: ml\nrestart_overhead: 1m\n"
        "checkpoint: {every: 30m, grace: 300s}\n", q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 2 * H + MINUTE);
    struct ebb__job_info xi = budget_world_info(x);
    struct ebb__attempt_info a;
    assert_int_equal(ebb__engine_job_attempt(x, &a), 0);
    /* x checkpoints on its p3.2xlarge to move. */
    assert_int_equal(xi.state, EBB__JOB_CHECKPOINTING);
    assert_string_equal(ebb__engine_market(w->v.engine)->offers[a.offer].instance_type,
                        "p3.2xlarge");
    struct ebb__job *y = budget_world_submit_as(w, "name: y\n"
        "run: [python, train.py]\nwork: 2h\nmarket: spot\nteam: ml\n"
        "resources: {gpu: {count: 4}}\ncheckpoint: {every: 30m, grace: 60s}\n",
        q.users[0].uid);
    ebb__clock_run_until(&w->v.clock, start + 2 * H + MINUTE + EBB_MS_PER_SECOND);
    waits_saying(y, "team ml's max_gpus 5 is in use (4 GPUs on 1 instance; "
                    "p3.8xlarge has 4)");
    for (;;) {
        ebb_time_ms due = ebb__clock_next_due(&w->v.clock);
        if (due > start + 2 * DAY)
            break;
        ebb__clock_run_until(&w->v.clock, due);
        if (team_gpus(w) > 5)
            fail_msg("%lld GPUs in use at %lld, max_gpus 5", (long long)team_gpus(w),
                     (long long)due);
    }
    assert_int_equal(budget_world_info(x).state, EBB__JOB_SUCCEEDED);
    assert_int_equal(budget_world_info(y).state, EBB__JOB_SUCCEEDED);
    /* x did move: its last instance was a p3.8xlarge. */
    char *type = budget_world_sql_text(w, "SELECT instance_type FROM instances "
                                       "WHERE job_id = ?1 ORDER BY requested_at "
                                       "DESC LIMIT 1", xi.id);
    assert_string_equal(type, "p3.8xlarge");
    free(type);
    budget_world_stop(w);
}

static int free_catalog(void **state)
{
    (void)state;
    ebb__catalog_free(catalog);
    catalog = NULL;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(full_team_waits_then_runs_when_an_instance_ends,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(reasons_name_the_quota, budget_world_teardown),
        cmocka_unit_test_teardown(a_gang_counts_each_node, budget_world_teardown),
        cmocka_unit_test_teardown(a_move_counts_the_instance_it_moves_to,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(quotas_hold_through_spikes_and_preemptions,
                                  budget_world_teardown),
        cmocka_unit_test(queue_order_table),
        cmocka_unit_test_teardown(fair_share_weights, budget_world_teardown),
        cmocka_unit_test_teardown(priority_takes_the_freed_place, budget_world_teardown),
        cmocka_unit_test_teardown(backoff_keeps_its_place, budget_world_teardown),
        cmocka_unit_test_teardown(fair_share_orders_one_priority, budget_world_teardown),
        cmocka_unit_test_teardown(higher_priority_takes_the_place_by_checkpoint,
                                  budget_world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, free_catalog);
}
