/* Budget thresholds as notification events (#19): on the randomised
 * budget world (tests/lib/budget_world.h: the real engine, the sim market,
 * team ml with a random cap), every 50/80/100% of a job's cap that its
 * final spend crossed is noted exactly once, none it did not cross, and
 * the team's thresholds are noted (with one key per team, month and
 * threshold, which the outbox keeps once) exactly for those its month's
 * billed spend reached at its peak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/str.h"
#include "budget_world.h"

#define DAY INT64_C(86400000)
#define N_SEEDS 6

static struct budget_world world_mem;

struct notes {
    int n;
    char keys[256][96];
};

static void collect(void *arg, const struct ebb__engine_note *n)
{
    struct notes *k = arg;
    if (n->key == NULL || strcmp(n->type, "budget.threshold") != 0)
        return;
    assert_true(k->n < 256);
    snprintf(k->keys[k->n++], sizeof(k->keys[0]), "%s", n->key);
}

static int count(const struct notes *k, const char *key)
{
    int c = 0;
    for (int i = 0; i < k->n; i++)
        c += strcmp(k->keys[i], key) == 0;
    return c;
}

static void thresholds_are_noted_once_when_crossed(void **state)
{
    (void)state;
    ebb_time_ms start = ebb_days_from_civil(2020, 1, 10) * DAY;
    ebb_time_ms end = start + 3 * DAY;
    static const int pct[] = {50, 80, 100};
    int crossed = 0, team_crossed = 0;
    for (uint64_t seed = 1; seed <= N_SEEDS; seed++) {
        struct budget_world *w = &world_mem;
        static struct notes k;
        memset(&k, 0, sizeof(k));
        budget_world_start(w, seed, start, end, "", "");
        ebb__engine_set_note(w->v.engine, collect, &k);
        for (int j = 0; j < 3; j++) {
            struct ebb_buf b = {0};
            ebb_buf_printf(&b, "name: j%d\nrun: [python, train.py]\nwork: %lldh\n"
                           "deadline: 3d\nmarket: spot\npolicy: greedy\n"
                           "checkpoint: {every: 30m}\nteam: ml\n"
                           "budget: %lld.%02lld USD\n", j,
                           (long long)budget_world_rand(w, 2, 20),
                           (long long)budget_world_rand(w, 0, 4),
                           (long long)budget_world_rand(w, 1, 99));
            char *yaml = ebb_buf_take(&b);
            budget_world_submit(w, yaml);
            free(yaml);
        }
        ebb__clock_run_until(&w->v.clock, end);
        for (size_t i = 0; i < w->n_jobs; i++) {
            struct ebb__job_info info = budget_world_info(w->jobs[i]);
            for (int p = 0; p < 3; p++) {
                char key[96];
                snprintf(key, sizeof(key), "budget:%s:%d", info.id, pct[p]);
                int want = info.spent >= info.budget / 100 * pct[p];
                crossed += want;
                if (count(&k, key) != want)
                    fail_msg("seed %llu job %s: %d notes of %d%% (spent %lld of "
                             "%lld)", (unsigned long long)seed, info.id,
                             count(&k, key), pct[p], (long long)info.spent,
                             (long long)info.budget);
            }
        }
        /* The team's peak billed spend: a provider's refund (a preempted
         * instance's partial hour) may take the sum back below a
         * threshold it had crossed. */
        ebb_micros team = budget_world_sql_int(w, "SELECT coalesce(max(s), 0) FROM"
                                               " (SELECT sum(amount_micros) OVER"
                                               " (ORDER BY id) AS s FROM ledger"
                                               " WHERE team = ?1)", "ml", 0, 0);
        ebb_time_ms month = ebb_days_from_civil(2020, 1, 1) * DAY;
        for (int p = 0; p < 3; p++) {
            char key[96];
            snprintf(key, sizeof(key), "budget:team:ml:%lld:%d", (long long)month,
                     pct[p]);
            int want = team >= w->team_cap / 100 * pct[p];
            team_crossed += want;
            if ((count(&k, key) > 0) != want)
                fail_msg("seed %llu team: %d notes of %d%% (spent %lld of %lld)",
                         (unsigned long long)seed, count(&k, key), pct[p],
                         (long long)team, (long long)w->team_cap);
        }
        budget_world_stop(w);
    }
    /* The seeds cross thresholds at all (else the test proves nothing). */
    assert_true(crossed > 0);
    assert_true(team_crossed > 0);
}

/* Every note of one type, with the spend and reason it carried. */
struct typed {
    const char *type;
    int n;
    char keys[64][96];
    ebb_micros spent[64];
};

static void collect_type(void *arg, const struct ebb__engine_note *n)
{
    struct typed *k = arg;
    if (strcmp(n->type, k->type) != 0)
        return;
    assert_non_null(n->key);
    assert_true(k->n < 64);
    snprintf(k->keys[k->n], sizeof(k->keys[0]), "%s", n->key);
    k->spent[k->n++] = n->spent;
}

/* A team whose running instance would spend the rest of its 3..9 USD cap
 * long before the month ends hears so once, before the cap is reached; a
 * job outside the team adds nothing. */
static void a_team_cap_forecast_to_run_out_is_noted_once(void **state)
{
    (void)state;
    ebb_time_ms start = ebb_days_from_civil(2020, 1, 10) * DAY;
    int noted = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        struct budget_world *w = &world_mem;
        static struct typed k;
        memset(&k, 0, sizeof(k));
        k.type = "budget.forecast";
        budget_world_start(w, seed, start, start + 2 * DAY, "", "");
        ebb__engine_set_note(w->v.engine, collect_type, &k);
        budget_world_submit(w, "name: big\nrun: [python, train.py]\nwork: 40h\n"
                               "market: spot\npolicy: greedy\nteam: ml\n"
                               "checkpoint: {every: 30m}\n");
        budget_world_submit(w, "name: solo\nrun: [python, train.py]\nwork: 40h\n"
                               "market: spot\npolicy: greedy\n"
                               "checkpoint: {every: 30m}\n");
        ebb__clock_run_until(&w->v.clock, start + 2 * DAY);
        ebb_time_ms month = ebb_days_from_civil(2020, 1, 1) * DAY;
        char key[96];
        snprintf(key, sizeof(key), "forecast:team:ml:%lld", (long long)month);
        /* The engine may note it again; the outbox keeps one per key. */
        for (int i = 0; i < k.n; i++) {
            assert_string_equal(k.keys[i], key);
            assert_true(k.spent[i] < w->team_cap);
        }
        noted += k.n > 0;
        budget_world_stop(w);
    }
    assert_int_equal(noted, 3);
}

/* A job whose deadline leaves less than one restart of slack beyond an
 * on-demand finish hears once that it is at risk; one with days to spare
 * never does. */
static void a_deadline_at_risk_is_noted_once(void **state)
{
    (void)state;
    ebb_time_ms start = ebb_days_from_civil(2020, 1, 10) * DAY;
    struct budget_world *w = &world_mem;
    static struct typed k;
    memset(&k, 0, sizeof(k));
    k.type = "deadline.at_risk";
    budget_world_start(w, 1, start, start + 2 * DAY, "", "");
    ebb__engine_set_note(w->v.engine, collect_type, &k);
    struct ebb__job *tight = budget_world_submit(
        w, "name: tight\nrun: [python, train.py]\nwork: 4h\ndeadline: 4h20m\n"
           "restart_overhead: 15m\nmarket: spot-fallback\npolicy: greedy\n"
           "checkpoint: {every: 30m}\n");
    budget_world_submit(w, "name: easy\nrun: [python, train.py]\nwork: 2h\n"
                           "deadline: 3d\nrestart_overhead: 15m\nmarket: spot-fallback\n"
                           "policy: greedy\ncheckpoint: {every: 30m}\n");
    ebb__clock_run_until(&w->v.clock, start + 2 * DAY);
    struct ebb__job_info info = budget_world_info(tight);
    char key[96];
    snprintf(key, sizeof(key), "deadline:%s", info.id);
    assert_true(k.n >= 1);
    for (int i = 0; i < k.n; i++)
        assert_string_equal(k.keys[i], key);
    budget_world_stop(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(thresholds_are_noted_once_when_crossed,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(a_team_cap_forecast_to_run_out_is_noted_once,
                                  budget_world_teardown),
        cmocka_unit_test_teardown(a_deadline_at_risk_is_noted_once,
                                  budget_world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
