/* Unit tests of notifications (#19): the webhook signature against vectors
 * computed independently (Python's hmac module, shown beside each), the
 * outbox's store functions (migration 8), notify: in ebb.yaml and a job
 * spec's notify: list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "config/config_file.h"
#include "io/webhook_sign.h"
#include "jobs/jobspec.h"
#include "store/store.h"
#include "store/store_outbox.h"

/* ---- the signature -------------------------------------------------------- */

static void signature_matches_python_hmac(void **state)
{
    (void)state;
    char sig[EBB__WEBHOOK_SIG_SIZE];
    /* hmac.new(b'whsec_test_secret', b'1700000000.{"id":"evt_1"}',
     *          hashlib.sha256).hexdigest() */
    const char *body = "{\"id\":\"evt_1\"}";
    assert_int_equal(ebb__webhook_signature("whsec_test_secret", 17, 1700000000,
                                            body, strlen(body), sig), 0);
    assert_string_equal(sig, "v1=248a374f50f943a28b0f6ab50faf9a7e7e29b710fa26"
                             "df9fb1618b9bf8ea9c9a");
    /* hmac.new(b'key', b'1.', hashlib.sha256).hexdigest(): an empty body. */
    assert_int_equal(ebb__webhook_signature("key", 3, 1, "", 0, sig), 0);
    assert_string_equal(sig, "v1=53123bc365c2fe4bee48bc5cc6cd6c19699147d43513"
                             "154ed34277c7c063e80f");
    /* Another timestamp signs something else. */
    assert_int_equal(ebb__webhook_signature("key", 3, 2, "", 0, sig), 0);
    assert_string_not_equal(sig, "v1=53123bc365c2fe4bee48bc5cc6cd6c19699147d4"
                                 "3513154ed34277c7c063e80f");
    assert_int_equal(ebb__webhook_signature(NULL, 0, 1, "", 0, sig), EBB_EINVAL);
    assert_string_equal(sig, "");
}

/* ---- the outbox ----------------------------------------------------------- */

static struct ebb__store *open_memory(void)
{
    struct ebb__store *s = NULL;
    char err[256];
    if (ebb__store_open(":memory:", &s, err, sizeof(err)) != 0)
        fail_msg("open: %s", err);
    return s;
}

struct seen {
    int n;
    int64_t seq[16];
    char ids[16][40];
    char channels[16][16];
    int attempts[16];
};

static int collect(void *arg, const struct ebb__outbox_row *row)
{
    struct seen *v = arg;
    v->seq[v->n] = row->seq;
    snprintf(v->ids[v->n], sizeof(v->ids[0]), "%s", row->event_id);
    snprintf(v->channels[v->n], sizeof(v->channels[0]), "%s", row->channel);
    v->attempts[v->n] = row->attempts;
    v->n++;
    return 0;
}

static void outbox_rows_move_from_pending_to_done(void **state)
{
    (void)state;
    struct ebb__store *s = open_memory();
    const char *two[] = {"audit", "ops"};
    struct ebb__outbox_event ev = {"evt_a", "job.state", "j-1", 1000, "{\"id\":\"evt_a\"}"};
    assert_int_equal(ebb__store_outbox_add(s, &ev, two, 2), 2);
    /* The same event and channel again (a once-only event): nothing. */
    assert_int_equal(ebb__store_outbox_add(s, &ev, two, 1), 0);
    struct ebb__outbox_event ev2 = {"evt_b", "budget.threshold", NULL, 2000, "{}"};
    assert_int_equal(ebb__store_outbox_add(s, &ev2, two, 1), 1);

    /* Due at 1500: only evt_a's rows, oldest first. */
    struct seen v = {0};
    assert_int_equal(ebb__store_outbox_due(s, 1500, 8, NULL, 0, collect, &v), 0);
    assert_int_equal(v.n, 2);
    assert_string_equal(v.ids[0], "evt_a");
    assert_string_equal(v.channels[0], "audit");
    assert_string_equal(v.channels[1], "ops");
    /* A limit, and rows in flight left out. */
    struct seen w = {0};
    assert_int_equal(ebb__store_outbox_due(s, 5000, 1, &v.seq[0], 1, collect, &w), 0);
    assert_int_equal(w.n, 1);
    assert_int_equal(w.seq[0], v.seq[1]);
    ebb_time_ms at = -1;
    assert_int_equal(ebb__store_outbox_next_due(s, v.seq, 2, &at), 0);
    assert_int_equal(at, 2000);

    /* audit delivered; ops failed once, retried at 9000; evt_b dead. */
    assert_int_equal(ebb__store_outbox_delivered(s, v.seq[0], 1, 3000), 0);
    assert_int_equal(ebb__store_outbox_failed(s, v.seq[1], 1, "HTTP 500", 9000, 0,
                                              3000), 0);
    struct seen x = {0};
    assert_int_equal(ebb__store_outbox_due(s, 5000, 8, NULL, 0, collect, &x), 0);
    assert_int_equal(x.n, 1);
    assert_string_equal(x.ids[0], "evt_b");
    assert_int_equal(ebb__store_outbox_failed(s, x.seq[0], 3, "HTTP 503", 0, 1,
                                              4000), 0);
    assert_int_equal(ebb__store_outbox_next_due(s, NULL, 0, &at), 0);
    assert_int_equal(at, 9000);
    struct seen y = {0};
    assert_int_equal(ebb__store_outbox_due(s, 9000, 8, NULL, 0, collect, &y), 0);
    assert_int_equal(y.n, 1);
    assert_int_equal(y.attempts[0], 1);

    /* The dead letter is what --failed lists. */
    json_t *rows = NULL;
    assert_int_equal(ebb__store_outbox_json(s, 1, 100, &rows), 0);
    assert_int_equal(json_array_size(rows), 1);
    json_t *r = json_array_get(rows, 0);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "dead");
    assert_string_equal(json_string_value(json_object_get(r, "last_error")),
                        "HTTP 503");
    assert_int_equal(json_integer_value(json_object_get(r, "attempts")), 3);
    json_decref(rows);
    assert_int_equal(ebb__store_outbox_json(s, 0, 100, &rows), 0);
    assert_int_equal(json_array_size(rows), 3);
    json_decref(rows);

    /* Prune keeps the newest finished row and every pending one. */
    assert_int_equal(ebb__store_outbox_prune(s, 1), 1);
    assert_int_equal(ebb__store_outbox_json(s, 0, 100, &rows), 0);
    assert_int_equal(json_array_size(rows), 2);
    json_decref(rows);
    ebb__store_close(s);
}

static void outbox_refuses_bad_events_and_stays_bounded(void **state)
{
    (void)state;
    struct ebb__store *s = open_memory();
    const char *one[] = {"audit"};
    char *big = malloc(EBB__OUTBOX_BODY_MAX + 2);
    memset(big, 'x', EBB__OUTBOX_BODY_MAX + 1);
    big[EBB__OUTBOX_BODY_MAX + 1] = '\0';
    struct ebb__outbox_event ev = {"evt_big", "job.state", NULL, 1, big};
    assert_int_equal(ebb__store_outbox_add(s, &ev, one, 1), EBB_EINVAL);
    free(big);
    struct ebb__outbox_event none = {NULL, "job.state", NULL, 1, "{}"};
    assert_int_equal(ebb__store_outbox_add(s, &none, one, 1), EBB_EINVAL);

    /* One more than the bound: the oldest pending row turns dead. */
    assert_int_equal(ebb__store_begin(s), 0);
    for (int i = 0; i <= EBB__OUTBOX_MAX_PENDING; i++) {
        char id[32];
        snprintf(id, sizeof(id), "evt_%d", i);
        struct ebb__outbox_event e = {id, "job.state", NULL, 10 + i, "{}"};
        assert_int_equal(ebb__store_outbox_add(s, &e, one, 1), 1);
    }
    assert_int_equal(ebb__store_commit(s), 0);
    json_t *rows = NULL;
    assert_int_equal(ebb__store_outbox_json(s, 1, 10, &rows), 0);
    assert_int_equal(json_array_size(rows), 1);
    json_t *r = json_array_get(rows, 0);
    assert_string_equal(json_string_value(json_object_get(r, "event_id")), "evt_0");
    assert_string_equal(json_string_value(json_object_get(r, "last_error")),
                        "outbox full");
    json_decref(rows);
    ebb__store_close(s);
}

/* ---- notify: in ebb.yaml ---------------------------------------------------- */

static char key_path[64];

static void write_key(mode_t mode)
{
    snprintf(key_path, sizeof(key_path), "/tmp/ebb-notify-key.%ld", (long)getpid());
    FILE *f = fopen(key_path, "w");
    assert_non_null(f);
    fputs("topsecret\n", f);
    fclose(f);
    assert_int_equal(chmod(key_path, mode), 0);
}

static int load(const char *text, struct ebb__config **cfg, struct ebb_diag *d)
{
    return ebb__config_load_buffer("ebb.yaml", text, strlen(text), cfg, d);
}

static void config_reads_channels(void **state)
{
    (void)state;
    write_key(0600);
    char text[1024];
    snprintf(text, sizeof(text),
             "notify:\n"
             "  ops-slack: {slack: https://hooks.slack.com/services/T/B/X}\n"
             "  audit:     {webhook: https://audit.example/ebb, secret_file: %s}\n"
             "  pager:     {command: [/usr/local/bin/page-oncall, --now]}\n"
             "  defaults:  [ops-slack]\n", key_path);
    struct ebb__config *cfg = NULL;
    struct ebb_diag d = {{0}};
    assert_int_equal(load(text, &cfg, &d), 0);
    assert_int_equal(cfg->notify.n, 3);
    const struct ebb__notify_channel *c = ebb__config_channel(cfg, "audit");
    assert_non_null(c);
    assert_int_equal(c->kind, EBB__NOTIFY_WEBHOOK);
    assert_string_equal(c->secret, "topsecret"); /* the newline is not part */
    assert_int_equal(c->max_attempts, 10);
    c = ebb__config_channel(cfg, "pager");
    assert_int_equal(c->kind, EBB__NOTIFY_COMMAND);
    assert_int_equal(c->argc, 2);
    assert_string_equal(c->argv[1], "--now");
    assert_int_equal(ebb__config_channel(cfg, "ops-slack")->kind, EBB__NOTIFY_SLACK);
    assert_int_equal(cfg->notify.defaults.n, 1);

    struct ebb_string_list ok_list = {1, (char *[]){"audit"}};
    assert_int_equal(ebb__config_notify_check(cfg, "job.yaml", &ok_list, &d), 0);
    struct ebb_string_list bad_list = {2, (char *[]){"audit", "nosuch"}};
    assert_int_equal(ebb__config_notify_check(cfg, "job.yaml", &bad_list, &d),
                     EBB_EINVAL);
    assert_string_equal(d.msg, "job.yaml: notify: no channel \"nosuch\" in "
                               "ebb.yaml (notify: ops-slack, audit, pager)");
    ebb__config_free(cfg);
    unlink(key_path);
}

static void config_refuses_bad_channels(void **state)
{
    (void)state;
    write_key(0640);
    char text[512];
    struct ebb__config *cfg = NULL;
    struct ebb_diag d = {{0}};
    snprintf(text, sizeof(text), "notify:\n  audit: {webhook: http://a/b, "
             "secret_file: %s}\n", key_path);
    assert_int_equal(load(text, &cfg, &d), EBB_ECONFIG);
    assert_null(cfg);
    assert_non_null(strstr(d.msg, "may be read by its group or others (mode 0640)"));
    assert_non_null(strstr(d.msg, "chmod 600"));
    unlink(key_path);

    static const char *const bad[][2] = {
        {"notify:\n  a: {webhook: http://a/b}\n", "needs secret_file"},
        {"notify:\n  a: {slack: ftp://x}\n", "not an http:// or https:// URL"},
        {"notify:\n  a: {slack: http://x, command: [/bin/true]}\n",
         "exactly one of"},
        {"notify:\n  a: {command: [true]}\n", "absolute path"},
        {"notify:\n  a: {command: [/bin/true], run_as: root}\n", "never runs as root"},
        {"notify:\n  a: {slack: http://x}\n  defaults: [b]\n",
         "notify.defaults: no channel \"b\""},
        {"notify:\n  a: {slack: http://x, max_attempts: 0}\n", "between 1 and 100"},
        {"notify:\n  a: {slack: http://x, colour: red}\n", "unknown key"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        d.msg[0] = '\0';
        assert_int_equal(load(bad[i][0], &cfg, &d), EBB_ECONFIG);
        if (strstr(d.msg, bad[i][1]) == NULL)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, d.msg, bad[i][1]);
    }
}

/* ---- a job spec's notify: ------------------------------------------------ */

static void jobspec_notify_round_trips(void **state)
{
    (void)state;
    static const char with[] = "name: a\nrun: [true]\nwork: 1h\nnotify: [audit, pager]\n";
    static const char none[] = "name: a\nrun: [true]\nwork: 1h\nnotify: []\n";
    static const char absent[] = "name: a\nrun: [true]\nwork: 1h\n";
    const char *texts[] = {with, none, absent};
    const int has[] = {1, 1, 0};
    const size_t n[] = {2, 0, 0};
    for (int i = 0; i < 3; i++) {
        struct ebb__job_spec spec, back;
        struct ebb_diag d = {{0}};
        assert_int_equal(ebb__jobspec_load_buffer("job.yaml", texts[i],
                                                  strlen(texts[i]), &spec, &d), 0);
        assert_int_equal(spec.has_notify, has[i]);
        assert_int_equal(spec.notify.n, n[i]);
        json_t *j = ebb__jobspec_to_json(&spec);
        assert_non_null(j);
        assert_int_equal(ebb__jobspec_from_json(j, &back, &d), 0);
        assert_int_equal(back.has_notify, has[i]);
        assert_int_equal(back.notify.n, n[i]);
        if (n[i] > 0)
            assert_string_equal(back.notify.items[1], "pager");
        json_decref(j);
        ebb__jobspec_free(&spec);
        ebb__jobspec_free(&back);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(signature_matches_python_hmac),
        cmocka_unit_test(outbox_rows_move_from_pending_to_done),
        cmocka_unit_test(outbox_refuses_bad_events_and_stays_bounded),
        cmocka_unit_test(config_reads_channels),
        cmocka_unit_test(config_refuses_bad_channels),
        cmocka_unit_test(jobspec_notify_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
