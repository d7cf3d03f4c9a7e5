/* A gang's nodes (engine_gang.c, docs/gangs.md): agent tokens and their
 * ranks, the hashes the instance row holds, the checks that refuse a gang
 * whose nodes differ, each node's environment, whole checkpoints and the
 * gang's exit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/gang.h>

#include "engine/internal.h"

static struct ebb__attempt *gang(unsigned n)
{
    static struct ebb__attempt a;
    ebb__gang_free(&a);
    memset(&a, 0, sizeof(a));
    snprintf(a.token, sizeof(a.token), "j-20260101-0001-a3");
    assert_int_equal(ebb__gang_nodes_alloc(&a, n), 0);
    return &a;
}

static void tokens(void **state)
{
    (void)state;
    struct ebb__attempt *a = gang(2);
    char t[EBB__AGENT_TOKEN_SIZE], token[EBB__TOKEN_SIZE];
    unsigned rank = 9;
    ebb__gang_agent_token(a, 1, t, sizeof(t));
    assert_string_equal(t, "j-20260101-0001-a3+1");
    assert_int_equal(ebb__gang_split_token(t, token, &rank), 1);
    assert_string_equal(token, "j-20260101-0001-a3");
    assert_int_equal(rank, 1);
    assert_int_equal(ebb__gang_split_token("j-20260101-0001-a3", token, &rank), 0);
    assert_int_equal(rank, 0);
    static const char *const bad[] = {"x+", "x+01", "x+123", "x+-1", "x+1a", "+1", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (ebb__gang_split_token(bad[i], token, &rank) >= 0)
            fail_msg("\"%s\" was taken for an agent token", bad[i]);
    a = gang(1);
    ebb__gang_agent_token(a, 0, t, sizeof(t));
    assert_string_equal(t, "j-20260101-0001-a3"); /* a single instance's */
}

static void hashes(void **state)
{
    (void)state;
    struct ebb__attempt *a = gang(3);
    for (unsigned r = 0; r < 3; r++)
        memset(a->nodes[r].agent_hash, 'a' + (int)r, 64);
    char joined[3 * 66];
    ebb__gang_hashes(a, joined, sizeof(joined));
    assert_int_equal(strlen(joined), 3 * 64 + 2);
    struct ebb__attempt *b = gang(3);
    assert_int_equal(ebb__gang_hashes_parse(b, joined), 0);
    for (unsigned r = 0; r < 3; r++)
        assert_int_equal(b->nodes[r].agent_hash[63], 'a' + (int)r);
    b = gang(3);
    assert_int_equal(ebb__gang_hashes_parse(b, "aaaa,bbbb"), EBB_EINVAL); /* short */
}

static void host(struct ebb__attempt *a, unsigned rank, const char *driver,
                 int64_t link_mbps)
{
    struct ebb__agent_report r = {
        .kind = EBB__AGENT_HOST, .nvidia_smi = 1, .n_gpus = 8,
        .gpu_model = "Tesla V100-SXM2-16GB", .driver_version = driver,
        .cuda_version = "12.2", .link_mbps = link_mbps, .addr = "10.0.0.5",
        .port = 29500 + (int)rank,
    };
    ebb__gang_note_host(a, rank, &r);
}

static void checks(void **state)
{
    (void)state;
    struct ebb__job job;
    memset(&job, 0, sizeof(job));
    job.spec.nodes = 2;
    job.spec.resources.network_gbps = 25;
    struct ebb__attempt *a = gang(2);
    char why[256];
    host(a, 0, "535.104.05", 25000);
    assert_int_equal(ebb__gang_hosts_reported(a), 1);
    host(a, 1, "550.54.14", 25000);
    assert_int_equal(ebb__gang_hosts_reported(a), 2);
    assert_int_equal(ebb__gang_check(&job, a, why, sizeof(why)), 1);
    assert_string_equal(why, "the gang's nodes differ: node 1's driver version is "
                             "550.54.14, node 0's 535.104.05");
    host(a, 1, "535.104.05", 10000);
    assert_int_equal(ebb__gang_check(&job, a, why, sizeof(why)), 1);
    assert_string_equal(why, "node 1's network link is 10000 Mbps, the job needs "
                             "25000 (resources.network)");
    host(a, 1, "535.104.05", 0); /* unknown: nothing to judge */
    assert_int_equal(ebb__gang_check(&job, a, why, sizeof(why)), 0);

    assert_int_equal(ebb__gang_build_env(a), 0);
    const char *want[] = {"MASTER_ADDR=10.0.0.5", "MASTER_PORT=29500", "NNODES=2",
                          "NODE_RANK=1", "WORLD_SIZE=2",
                          "EBB_NODES=10.0.0.5:29500,10.0.0.5:29501"};
    assert_int_equal(a->n_gang_env, 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(a->gang_env[1][i], want[i]);
    assert_string_equal(a->gang_env[0][3], "NODE_RANK=0");
}

static void checkpoints_and_exits(void **state)
{
    (void)state;
    struct ebb__attempt *a = gang(2);
    assert_int_equal(ebb__gang_checkpoint(a, 0, "/c/rank-0/step-00000100"), 0);
    assert_int_equal(ebb__gang_checkpoint(a, 0, "/c/rank-0/step-00000200"), 0);
    /* Rank 1's part of the first makes the first whole. */
    assert_int_equal(ebb__gang_checkpoint(a, 1, "/c/rank-1/step-00000100"), 1);
    assert_int_equal(ebb__gang_checkpoint(a, 1, "/c/rank-1/step-00000300"), 0);

    int status = 99;
    assert_int_equal(ebb__gang_exit(a, 0, 0, &status), 0); /* waits for rank 1 */
    assert_int_equal(ebb__gang_exit(a, 1, EBB_EXIT_STOPPED, &status), 1);
    assert_int_equal(status, EBB_EXIT_STOPPED);
    a = gang(3);
    assert_int_equal(ebb__gang_exit(a, 2, 1, &status), 1); /* a failure ends it */
    assert_int_equal(status, 1);
    a = gang(2);
    assert_int_equal(ebb__gang_exit(a, 1, 0, &status), 0);
    assert_int_equal(ebb__gang_exit(a, 0, 0, &status), 1);
    assert_int_equal(status, 0);
    ebb__gang_free(a);
}

/* replace_lost's bookkeeping: the node being replaced, its renewed
 * token, and its new member's id spliced into the gang's. */
static void replacements(void **state)
{
    (void)state;
    struct ebb__attempt *a = gang(3);
    assert_int_equal(ebb__gang_replacing(a), -1);
    memset(a->nodes[2].agent_hash, 'f', 64);
    a->nodes[2].enrolled = a->nodes[2].started = 1;
    a->nodes[2].seen = 5;
    assert_int_equal(ebb__gang_node_renew(a, 2, 1000), 0);
    assert_int_equal(ebb__gang_replacing(a), 2);
    assert_int_equal(a->nodes[2].replacing_at, 1000);
    assert_int_equal(a->nodes[2].enrolled + a->nodes[2].started, 0);
    assert_int_equal(a->nodes[2].seen, 0);
    assert_int_equal(strlen(a->nodes[2].agent_secret), 64);
    assert_int_equal(strlen(a->nodes[2].agent_hash), 64);
    assert_true(a->nodes[2].agent_hash[0] != 'f' || a->nodes[2].agent_hash[1] != 'f');

    char *ids = ebb__gang_splice("i-a,i-b,i-c", 1, "i-z");
    assert_string_equal(ids, "i-a,i-z,i-c");
    free(ids);
    ids = ebb__gang_splice("i-a,i-b", 0, "i-z");
    assert_string_equal(ids, "i-z,i-b");
    free(ids);
    /* A gang listed short (its lost member already gone) gets it back. */
    ids = ebb__gang_splice("i-a", 1, "i-z");
    assert_string_equal(ids, "i-a,i-z");
    free(ids);
}

static void ids(void **state)
{
    (void)state;
    char m[32];
    assert_int_equal(ebb_gang_size("i-a,i-b,i-c"), 3);
    assert_int_equal(ebb_gang_size("i-a"), 1);
    assert_int_equal(ebb_gang_size(""), 0);
    assert_int_equal(ebb_gang_member("i-a,i-b,i-c", 1, m, sizeof(m)), 0);
    assert_string_equal(m, "i-b");
    assert_int_equal(ebb_gang_member("i-a,i-b,i-c", 2, m, sizeof(m)), 0);
    assert_string_equal(m, "i-c");
    assert_int_equal(ebb_gang_member("i-a,i-b", 2, m, sizeof(m)), -1);
    assert_int_equal(ebb_gang_member("i-a,,i-c", 1, m, sizeof(m)), -1);
    assert_int_equal(ebb_gang_member("i-aaaaaaaa", 0, m, 4), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tokens),
        cmocka_unit_test(hashes),
        cmocka_unit_test(checks),
        cmocka_unit_test(checkpoints_and_exits),
        cmocka_unit_test(replacements),
        cmocka_unit_test(ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
