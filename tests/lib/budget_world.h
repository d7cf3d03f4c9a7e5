/* The world the randomised budget and quota tests run
 * (tests/unit/test_budget.c, test_budget_agents.c, test_quota.c): the real engine on the virtual clock with the sim
 * market replaying a spot price trace with random spikes, jobs submitted
 * from YAML, the team `ml` with a random cap, and the check that no job's
 * and no team's spend (ledger plus running instances) passed its cap.
 *
 * One world runs at a time (cmocka tests are sequential); budget_world_live
 * points at it so that a failed test's teardown still closes it.
 */
#ifndef EBB_TEST_BUDGET_WORLD_H
#define EBB_TEST_BUDGET_WORLD_H

#include <stdint.h>

#include "engine/engine.h"
#include "engine/vengine.h"

#define BUDGET_WORLD_JOBS 4
/* The most jobs a world lists (budget_world_submit). */
#define BUDGET_WORLD_MAX_JOBS 32

struct budget_world {
    struct ebb__vengine v;
    char dir[64];
    char trace[128];
    struct ebb__job *jobs[BUDGET_WORLD_MAX_JOBS];
    size_t n_jobs;
    ebb_micros team_cap;
    uint64_t rng;
};

extern struct budget_world *budget_world_live;

/* Uniform in [lo, hi], from the world's seeded generator. */
int64_t budget_world_rand(struct budget_world *w, int64_t lo, int64_t hi);

/* What a world may have besides budget_world_start's. */
struct budget_world_setup {
    const char *providers_more, *top_more; /* as budget_world_start's */
    const char *members;   /* team ml's members, a YAML list; NULL: [alice] */
    const char *team_more; /* more keys of team ml, indented by four; may be NULL */
    int64_t team_cap_usd;  /* > 0: the team's cap instead of the drawn one */
    /* The trace also prices p3.8xlarge and p3.16xlarge, at 4 and 8 times
     * p3.2xlarge's price in the same zone. */
    int gpu_types;
    const struct ebb__catalog *catalog; /* the engine's; may be NULL */
};

/* As budget_world_start, with `s`; the draws are the same. */
void budget_world_open(struct budget_world *w, uint64_t seed, ebb_time_ms start,
                       ebb_time_ms end, const struct budget_world_setup *s);

/* Starts the world for `seed` at `start` (the trace runs from a calm day
 * before it to a day after `end`): the sim market with random preemptions
 * and billing, `providers_more` (more providers, indented by two, may be
 * "") and `top_more` (more top-level keys, may be ""), default policy
 * greedy, team ml with members [alice] and a cap of 3 to 9 USD, the teams
 * handed to the engine as ebbd hands them. */
void budget_world_start(struct budget_world *w, uint64_t seed, ebb_time_ms start,
                        ebb_time_ms end, const char *providers_more,
                        const char *top_more);
/* Closes the world and removes its files. */
void budget_world_stop(struct budget_world *w);
/* A cmocka teardown that closes the live world, if any. */
int budget_world_teardown(void **state);

/* Submits a job spec (YAML) at the clock's time and lists it in the world. */
struct ebb__job *budget_world_submit(struct budget_world *w, const char *yaml);
/* As budget_world_submit, owned by `uid`. */
struct ebb__job *budget_world_submit_as(struct budget_world *w, const char *yaml,
                                        int64_t uid);
/* Submits BUDGET_WORLD_JOBS random jobs j0.. (spot, 4d deadline, a policy
 * of `policies`' three, restart overhead 1..10 min, 2..30 h of work, a
 * checkpoint every 10..60 min with a grace of grace_min_s..300 s); all but
 * j3 have a budget of 0.01..5.99 USD (j3 is capped by the team only), all
 * but j2 are in team ml. The draws come in that order, job after job. */
void budget_world_submit_random(struct budget_world *w,
                                const char *const policies[3],
                                int64_t grace_min_s);
/* What the job is now (engine.h's snapshot). */
struct ebb__job_info budget_world_info(const struct ebb__job *job);

/* The first column of the first row of `sql`, with ?1 = text and, where
 * the statement has them, ?2 = a and ?3 = b. */
int64_t budget_world_sql_int(struct budget_world *w, const char *sql,
                             const char *text, int64_t a, int64_t b);
/* A text column of the first row, a new string; "" when there is none. */
char *budget_world_sql_text(struct budget_world *w, const char *sql,
                            const char *text);

/* Fails the test unless, at `now`, each capped job's ledger plus its
 * running instance's cost so far is within its cap, team ml's ledger for
 * this month and the last plus every running team instance's cost is
 * within the team's, and the ledger and the engine agree on each job's
 * spend. */
void budget_world_check_caps(struct budget_world *w, ebb_time_ms now);

#endif
