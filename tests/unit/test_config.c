/* ebb.yaml loading, the YAML tree and plugin configuration tables. Every
 * error case asserts the exact "file:line: message" a user would see. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <ebb/buf.h>

#include "base/cfg_table.h"
#include "base/yaml_doc.h"
#include "config/config_file.h"
#include "config/stores.h"

static int load(const char *text, struct ebb__config **cfg,
                struct ebb_diag *d)
{
    ebb_diag_clear(d);
    return ebb__config_load_buffer("ebb.yaml", text, strlen(text), cfg, d);
}

/* Loads `text`, expects EBB_ECONFIG and exactly `msg`. */
static void expect_error(const char *text, const char *msg)
{
    struct ebb__config *cfg = (struct ebb__config *)&cfg;
    struct ebb_diag d;
    int rc = load(text, &cfg, &d);
    if (rc != EBB_ECONFIG)
        fail_msg("rc %d for:\n%s", rc, text);
    assert_null(cfg);
    assert_string_equal(d.msg, msg);
}

/* ---- diag --------------------------------------------------------------- */

static void diag_formats(void **state)
{
    (void)state;
    struct ebb_diag d;
    ebb_diag_set(&d, "ebb.yaml", 3, "%s: bad", "log_level");
    assert_string_equal(d.msg, "ebb.yaml:3: log_level: bad");
    ebb_diag_set(&d, "ebb.yaml", 0, "cannot open");
    assert_string_equal(d.msg, "ebb.yaml: cannot open");
    ebb_diag_set(&d, NULL, 7, "plain");
    assert_string_equal(d.msg, "plain");
    ebb_diag_set(NULL, "x", 1, "ignored");

    char q[EBB_DIAG_QUOTE_SIZE];
    assert_string_equal(ebb_diag_quote("a\"b\\c\n\t\x01", 8, q, sizeof(q)),
                        "\"a\\\"b\\\\c\\n\\t\\x01\"");
    char nul[3] = {'a', '\0', 'b'};
    assert_string_equal(ebb_diag_quote(nul, 3, q, sizeof(q)),
                        "\"a\\x00b\"");
    char longer[100];
    memset(longer, 'x', sizeof(longer));
    ebb_diag_quote(longer, sizeof(longer), q, sizeof(q));
    assert_int_equal(strlen(q), 1 + 60 + 1 + 3);
    assert_string_equal(q + 62, "...");
    char tiny[10];
    ebb_diag_quote(longer, sizeof(longer), tiny, sizeof(tiny));
    assert_true(strlen(tiny) < sizeof(tiny));

    /* Long messages are cut, not overflowed. */
    char big[3000];
    memset(big, 'y', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ebb_diag_set(&d, "f", 1, "%s", big);
    assert_int_equal(strlen(d.msg), sizeof(d.msg) - 1);
}

/* ---- the YAML tree ------------------------------------------------------ */

static void yaml_tree(void **state)
{
    (void)state;
    static const char text[] = "# comment\n"
                               "b: plain\n"
                               "a: 'quoted'\n"
                               "list:\n"
                               "  - 1\n"
                               "  - {x: y}\n"
                               "empty:\n"
                               "tilde: ~\n"
                               "qnull: \"null\"\n"
                               "block: |\n"
                               "  two\n"
                               "  lines\n";
    struct ebb__ydoc *doc;
    struct ebb_diag d;
    assert_int_equal(ebb__ydoc_load_buffer("t.yaml", text, strlen(text), &doc,
                                           &d),
                     0);
    assert_string_equal(ebb__ydoc_name(doc), "t.yaml");
    const struct ebb__ynode *root = ebb__ydoc_root(doc);
    assert_int_equal(root->kind, EBB__YMAP);
    assert_int_equal(root->line, 2);
    assert_int_equal(root->n, 7);
    /* Key order is kept. */
    assert_string_equal(root->keys[0]->value, "b");
    assert_string_equal(root->keys[1]->value, "a");
    assert_string_equal(root->keys[6]->value, "block");

    const struct ebb__ynode *b = ebb__ymap_get(root, "b");
    assert_string_equal(b->value, "plain");
    assert_int_equal(b->quoted, 0);
    assert_int_equal(b->line, 2);
    assert_string_equal(b->file, "t.yaml");
    const struct ebb__ynode *a = ebb__ymap_get(root, "a");
    assert_string_equal(a->value, "quoted");
    assert_int_equal(a->quoted, 1);
    assert_int_equal(a->line, 3);

    const struct ebb__ynode *list = ebb__ymap_get(root, "list");
    assert_int_equal(list->kind, EBB__YSEQ);
    assert_int_equal(list->n, 2);
    assert_int_equal(list->items[0]->line, 5);
    assert_int_equal(list->items[1]->kind, EBB__YMAP);
    assert_int_equal(list->items[1]->line, 6);
    assert_string_equal(ebb__ymap_get(list->items[1], "x")->value, "y");

    assert_true(ebb__ynode_is_null(ebb__ymap_get(root, "empty")));
    assert_true(ebb__ynode_is_null(ebb__ymap_get(root, "tilde")));
    assert_false(ebb__ynode_is_null(ebb__ymap_get(root, "qnull")));
    assert_true(ebb__ynode_is_null(ebb__ymap_get(root, "missing")));
    assert_null(ebb__ymap_get(root, "missing"));
    assert_null(ebb__ymap_get(list, "x"));
    assert_null(ebb__ymap_get(NULL, "x"));

    const struct ebb__ynode *block = ebb__ymap_get(root, "block");
    assert_string_equal(block->value, "two\nlines\n");
    assert_int_equal(block->quoted, 1);
    assert_string_equal(ebb__ykind_name(EBB__YSEQ), "a list");
    ebb__ydoc_free(doc);

    /* An empty stream has no root; a lone "---" has a null one. */
    assert_int_equal(ebb__ydoc_load_buffer("e", "# nothing\n", 10, &doc, &d),
                     0);
    assert_null(ebb__ydoc_root(doc));
    ebb__ydoc_free(doc);
    assert_int_equal(ebb__ydoc_load_buffer("e", "---\n", 4, &doc, &d), 0);
    assert_true(ebb__ynode_is_null(ebb__ydoc_root(doc)));
    ebb__ydoc_free(doc);
    ebb__ydoc_free(NULL);
}

static void yaml_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *msg;
    } cases[] = {
        {"a: 1\nb: [1, 2\n",
         "t.yaml:3: did not find expected ',' or ']'"},
        {"a: b: c\n", "t.yaml:1: mapping values are not allowed in this "
                      "context"},
        {"a: 1\nb: 2\na: 3\n", "t.yaml:3: duplicate key \"a\" (first at line "
                               "1)"},
        {"x:\n  k: 1\n  k: 2\n", "t.yaml:3: duplicate key \"k\" (first at "
                                 "line 2)"},
        {"a: &anchor 1\nb: *anchor\n",
         "t.yaml:1: anchors and aliases (&name, *name) are not supported; "
         "write the value out"},
        {"a: 1\n---\nb: 2\n",
         "t.yaml:2: a second YAML document; ebb reads one document per file "
         "(remove the extra '---')"},
        {"a: !custom 1\n", "t.yaml:1: unsupported tag \"!custom\""},
        {"? [a]\n: 1\n", "t.yaml:1: a mapping key must be a single value, "
                         "not a list"},
        {"a: 1\nb: \"\x01\"\n", "t.yaml:2: control characters are not "
                                "allowed"},
        {"a:\n\t- 1\n", "t.yaml:2: found character that cannot start any "
                        "token"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ebb__ydoc *doc = (struct ebb__ydoc *)&doc;
        struct ebb_diag d;
        int rc = ebb__ydoc_load_buffer("t.yaml", cases[i].text,
                                       strlen(cases[i].text), &doc, &d);
        if (rc != EBB_ECONFIG)
            fail_msg("case %zu: rc %d", i, rc);
        assert_null(doc);
        assert_string_equal(d.msg, cases[i].msg);
    }

    /* Nesting is capped, and a tag from the core schema is fine. */
    char deep[300];
    memset(deep, '[', 200);
    memset(deep + 200, ']', 99);
    deep[299] = '\0';
    struct ebb__ydoc *doc;
    struct ebb_diag d;
    assert_int_equal(ebb__ydoc_load_buffer("t.yaml", deep, strlen(deep), &doc,
                                           &d),
                     EBB_ECONFIG);
    assert_string_equal(d.msg, "t.yaml:1: nested deeper than 64 levels");
    assert_int_equal(ebb__ydoc_load_buffer("t.yaml", "a: !!str 5\n", 11, &doc,
                                           &d),
                     0);
    assert_string_equal(ebb__ymap_get(ebb__ydoc_root(doc), "a")->value, "5");
    ebb__ydoc_free(doc);
}

/* ---- ebb.yaml ----------------------------------------------------------- */

static const char full_config[] =
    "log_level: debug\n"
    "plugin_dirs: [/opt/ebb/plugins, /usr/lib/ebb]\n"
    "api:\n"
    "  socket_mode: 0660\n"
    "  socket_group: ebb\n"
    "agent_api:\n"
    "  listen: 0.0.0.0:7400\n"
    "default_policy: trough\n"
    "providers:\n"
    "  aws:\n"
    "    regions: [us-east-1, eu-west-1]\n"
    "    poll_interval: 5m\n"
    "  sim:\n"
    "policies:\n"
    "  trough:\n"
    "    lookahead: 12h\n"
    "teams:\n"
    "  ml:\n"
    "    members: [alice, bob]\n"
    "    budget: 2000 USD\n"
    "  interns:\n"
    "    members: [carol]\n"
    "    admins: [dave]\n"
    "admins: [root, alice]\n"
    "currency_rates:\n"
    "  CNY: 0.14\n"
    "  EUR: \"1.08\"\n";

/* A document of `n` keys "k0: 1" ... and, when `repeat` is not SIZE_MAX,
 * one more line repeating key `repeat`. Caller frees. */
static char *many_keys(size_t n, size_t repeat, size_t *len)
{
    size_t cap = (n + 1) * 16 + 1;
    char *text = malloc(cap);
    assert_non_null(text);
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(text + at, cap - at, "k%zu: 1\n", i);
    if (repeat != SIZE_MAX)
        at += (size_t)snprintf(text + at, cap - at, "k%zu: 2\n", repeat);
    *len = at;
    return text;
}

static void expect_doc_error(const char *text, const char *msg)
{
    struct ebb__ydoc *doc = (struct ebb__ydoc *)&doc;
    struct ebb_diag d;
    assert_int_equal(ebb__ydoc_load_buffer("t.yaml", text, strlen(text), &doc, &d),
                     EBB_ECONFIG);
    assert_null(doc);
    assert_string_equal(d.msg, msg);
}

static void expect_bounded(const char *text, size_t len, const char *msg)
{
    struct ebb__ydoc *doc = (struct ebb__ydoc *)&doc;
    struct ebb_diag d;
    assert_int_equal(ebb__ydoc_load_bounded("job.yaml", text, len, &ebb__ylimits_spec,
                                            &doc, &d),
                     EBB_ECONFIG);
    assert_null(doc);
    assert_string_equal(d.msg, msg);
}

/* Duplicate keys are found by sorting once the mapping is complete; the
 * message still names the first repeat in the order written. */
static void yaml_duplicates(void **state)
{
    (void)state;
    expect_doc_error("b: 1\na: 2\na: 3\nb: 4\n", "t.yaml:3: duplicate key \"a\" (first at line 2)");
    expect_doc_error("a: 1\nb: 2\nb: 3\na: 4\n", "t.yaml:3: duplicate key \"b\" (first at line 2)");
    expect_doc_error("a: 1\na: 2\na: 3\n", "t.yaml:2: duplicate key \"a\" (first at line 1)");
    expect_doc_error("x: {a: 1, ab: 2, a: 3}\n", "t.yaml:1: duplicate key \"a\" (first at line 1)");
    expect_doc_error("\"\": 1\nx: 2\n\"\": 3\n", "t.yaml:3: duplicate key \"\" (first at line 1)");
    expect_doc_error("- a: 1\n  a: 2\n", "t.yaml:2: duplicate key \"a\" (first at line 1)");

    /* 80,000 keys, the last repeating the first (#15 finding 4). */
    size_t len;
    char *text = many_keys(80000, 0, &len);
    struct ebb__ydoc *doc;
    struct ebb_diag d;
    assert_int_equal(ebb__ydoc_load_buffer("t.yaml", text, len, &doc, &d), EBB_ECONFIG);
    assert_string_equal(d.msg, "t.yaml:80001: duplicate key \"k0\" (first at line 1)");
    free(text);
    text = many_keys(80000, SIZE_MAX, &len);
    assert_int_equal(ebb__ydoc_load_buffer("t.yaml", text, len, &doc, &d), 0);
    assert_int_equal(ebb__ydoc_root(doc)->n, 80000);
    assert_string_equal(ebb__ymap_get(ebb__ydoc_root(doc), "k79999")->value, "1");
    ebb__ydoc_free(doc);
    free(text);
}

/* What other people send (job specs, schedules) is bounded; each refusal
 * names its limit. */
static void yaml_spec_limits(void **state)
{
    (void)state;
    size_t len;
    char *text = many_keys(1000, SIZE_MAX, &len);
    struct ebb__ydoc *doc;
    struct ebb_diag d;
    assert_int_equal(ebb__ydoc_load_bounded("job.yaml", text, len, &ebb__ylimits_spec,
                                            &doc, &d),
                     0);
    ebb__ydoc_free(doc);
    free(text);
    text = many_keys(1001, SIZE_MAX, &len);
    expect_bounded(text, len, "job.yaml:1001: more than 1000 keys in one mapping; "
                              "a job spec or schedule may have at most that many");
    free(text);
    text = many_keys(80000, SIZE_MAX, &len);
    expect_bounded(text, len, "job.yaml: 788890 bytes; a job spec or schedule may be at most "
                              "262144 (256 KiB)");
    free(text);

    char *big = malloc(EBB__YAML_SPEC_MAX_BYTES + 2);
    assert_non_null(big);
    memcpy(big, "a: ", 3);
    memset(big + 3, 'x', EBB__YAML_SPEC_MAX_BYTES - 4);
    big[EBB__YAML_SPEC_MAX_BYTES - 1] = '\n';
    assert_int_equal(ebb__ydoc_load_bounded("job.yaml", big, EBB__YAML_SPEC_MAX_BYTES,
                                            &ebb__ylimits_spec, &doc, &d),
                     0);
    ebb__ydoc_free(doc);
    big[EBB__YAML_SPEC_MAX_BYTES] = '\n';
    expect_bounded(big, EBB__YAML_SPEC_MAX_BYTES + 1,
                   "job.yaml: 262145 bytes; a job spec or schedule may be at most 262144 (256 KiB)");
    free(big);

    /* A list of 1001 items; lists of 999 under 21 keys (the 20th passes
     * 20000 nodes: the root, and 1001 for each key, list and items). */
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, "a: [");
    for (int i = 0; i <= 1000; i++)
        ebb_buf_puts(&b, i ? ",x" : "x");
    ebb_buf_puts(&b, "]\n");
    expect_bounded(b.data, b.len, "job.yaml:1: more than 1000 items in one list; "
                                  "a job spec or schedule may have at most that many");
    ebb_buf_clear(&b);
    for (int l = 0; l < 21; l++) {
        ebb_buf_printf(&b, "l%d: [", l);
        for (int i = 0; i < 999; i++)
            ebb_buf_puts(&b, i ? ",x" : "x");
        ebb_buf_puts(&b, "]\n");
    }
    expect_bounded(b.data, b.len, "job.yaml:20: more than 20000 values, lists and "
                                  "mappings; a job spec or schedule may hold at most that many");
    ebb_buf_free(&b);

    /* 16 levels pass, 17 do not. */
    char deep[64];
    memset(deep, '[', 16);
    memset(deep + 16, ']', 16);
    assert_int_equal(ebb__ydoc_load_bounded("job.yaml", deep, 32, &ebb__ylimits_spec,
                                            &doc, &d),
                     0);
    ebb__ydoc_free(doc);
    memset(deep, '[', 17);
    memset(deep + 17, ']', 17);
    expect_bounded(deep, 34, "job.yaml:1: nested deeper than 16 levels");
}

static void config_full(void **state)
{
    (void)state;
    struct ebb__config *cfg;
    struct ebb_diag d;
    assert_int_equal(load(full_config, &cfg, &d), 0);
    assert_string_equal(cfg->file, "ebb.yaml");
    assert_int_equal(cfg->log_level, EBB_LOG_DEBUG);
    assert_int_equal(cfg->plugin_dirs.n, 2);
    assert_string_equal(cfg->plugin_dirs.items[1], "/usr/lib/ebb");
    assert_int_equal(cfg->api_socket_mode, 0660);
    assert_string_equal(cfg->api_socket_group, "ebb");
    assert_string_equal(cfg->agent_listen, "0.0.0.0:7400");
    assert_string_equal(cfg->default_policy, "trough");

    assert_int_equal(cfg->n_providers, 2);
    const struct ebb__config_section *aws = ebb__config_provider(cfg, "aws");
    assert_non_null(aws);
    assert_int_equal(aws->line, 10);
    assert_int_equal(aws->node->kind, EBB__YMAP);
    assert_string_equal(ebb__ymap_get(aws->node, "poll_interval")->value,
                        "5m");
    const struct ebb__config_section *sim = ebb__config_provider(cfg, "sim");
    assert_true(ebb__ynode_is_null(sim->node));
    assert_null(ebb__config_provider(cfg, "vastai"));
    assert_non_null(ebb__config_policy(cfg, "trough"));

    assert_int_equal(cfg->n_teams, 2);
    const struct ebb__team *ml = ebb__config_team(cfg, "ml");
    assert_int_equal(ml->members.n, 2);
    assert_string_equal(ml->members.items[0], "alice");
    assert_true(ml->has_budget);
    assert_int_equal(ml->budget.amount, 2000000000);
    assert_string_equal(ml->budget.currency, "USD");
    assert_int_equal(ml->line, 18);
    assert_int_equal(ml->admins.n, 0);
    const struct ebb__team *interns = ebb__config_team(cfg, "interns");
    assert_false(interns->has_budget);
    assert_int_equal(interns->admins.n, 1);
    assert_string_equal(interns->admins.items[0], "dave");
    assert_null(ebb__config_team(cfg, "nobody"));

    assert_int_equal(cfg->admins.n, 2);
    assert_int_equal(cfg->n_rates, 2);
    assert_string_equal(cfg->rates[0].currency, "CNY");
    assert_int_equal(cfg->rates[0].usd_e9, 140000000);
    assert_int_equal(cfg->rates[1].usd_e9, 1080000000);

    ebb__config_free(cfg);
}

/* Which team a job counts against: the rule submit, schedule add and
 * every schedule fire share (config/teams.c). */
/* Quotas (docs/budgets.md "Quotas"): the contract loads, amounts
 * per month and per hour, and every mistake is named with its line. */
static void config_quotas(void **state)
{
    (void)state;
    static const char text[] =
        "currency_rates: {CNY: 0.14}\n"
        "teams:\n"
        "  vision:\n"
        "    members: [user-a, user-b]\n"
        "    admins: [dave]\n"
        "    budget: 5000 USD/month\n"
        "    max_gpus: 16\n"
        "    max_burn: 40 USD/h\n"
        "    users:\n"
        "      user-b: {budget: 1500 USD/month, max_gpus: 8}\n"
        "      dave: {max_gpus: 2}\n"
        "      user-a: {budget: 700 CNY}\n"
        "    fair_share: true\n"
        "  ml: {members: [alice], budget: 40 USD, admission: p90}\n";
    struct ebb__config *cfg;
    struct ebb_diag d;
    if (load(text, &cfg, &d) != 0)
        fail_msg("%s", d.msg);
    const struct ebb__team *v = ebb__config_team(cfg, "vision");
    assert_true(v->has_budget);
    assert_int_equal(v->budget.amount, 5000 * EBB_MICROS_PER_UNIT);
    assert_int_equal(v->max_gpus, 16);
    assert_true(v->has_max_burn);
    assert_int_equal(v->max_burn.amount, 40 * EBB_MICROS_PER_UNIT);
    assert_string_equal(v->max_burn.currency, "USD");
    assert_int_equal(v->n_users, 3);
    const struct ebb__team_user *b = ebb__team_user(v, "user-b");
    assert_non_null(b);
    assert_true(b->has_budget);
    assert_int_equal(b->budget.amount, 1500 * EBB_MICROS_PER_UNIT);
    assert_int_equal(b->max_gpus, 8);
    assert_int_equal(b->line, 10);
    const struct ebb__team_user *dave = ebb__team_user(v, "dave");
    assert_false(dave->has_budget);
    assert_int_equal(dave->max_gpus, 2);
    const struct ebb__team_user *a = ebb__team_user(v, "user-a");
    assert_string_equal(a->budget.currency, "CNY");
    assert_int_equal(a->max_gpus, 0);
    assert_null(ebb__team_user(v, "alice"));
    assert_null(ebb__team_user(v, NULL));
    const struct ebb__team *ml = ebb__config_team(cfg, "ml");
    assert_int_equal(ml->max_gpus, 0);
    assert_false(ml->has_max_burn);
    assert_int_equal(ml->n_users, 0);
    assert_true(ml->admission_p90);
    assert_false(v->admission_p90);
    assert_true(v->fair_share);
    assert_false(ml->fair_share);
    ebb__config_free(cfg);

    static const char head[] = "teams:\n  v:\n    members: [a, b]\n";
    static const struct {
        const char *more, *msg;
    } bad[] = {
        {"    max_gpus: 0\n", "ebb.yaml:4: teams.v.max_gpus: 0 must be between 1 and 100000"},
        {"    max_gpus: 100001\n",
         "ebb.yaml:4: teams.v.max_gpus: 100001 must be between 1 and 100000"},
        {"    max_gpus: many\n", "ebb.yaml:4: teams.v.max_gpus: \"many\" is not "
         "an integer (example: 42)"},
        {"    max_burn: 40 USD\n", "ebb.yaml:4: teams.v.max_burn: \"40 USD\" is "
         "not a spend rate (a rate ends in /h; example: 40 USD/h)"},
        {"    max_burn: 40 dollars/h\n", "ebb.yaml:4: teams.v.max_burn: \"40 "
         "dollars/h\" is not a spend rate (the currency must be a 3-letter "
         "upper-case code such as USD; example: 40 USD/h)"},
        {"    max_burn: [40 USD/h]\n", "ebb.yaml:4: teams.v.max_burn: expected a "
         "spend rate, not a list"},
        {"    budget: 40 USD/week\n", "ebb.yaml:4: teams.v.budget: \"40 "
         "USD/week\" is not an amount (the currency must be a 3-letter "
         "upper-case code such as USD; example: 40 USD)"},
        {"    users: [a]\n", "ebb.yaml:4: teams.v.users: expected a mapping, not a list"},
        {"    users:\n      carol: {max_gpus: 2}\n", "ebb.yaml:5: teams.v.users: "
         "\"carol\" is not a member of team v (add them to teams.v.members or "
         "admins)"},
        {"    users:\n      a: {max_gpu: 2}\n", "ebb.yaml:5: teams.v.users.a: "
         "unknown key \"max_gpu\" (known: budget, max_gpus)"},
        {"    users:\n      a: {}\n", "ebb.yaml:5: teams.v.users.a: no limits "
         "(give budget, max_gpus or both, e.g. {budget: 1500 USD/month, "
         "max_gpus: 8})"},
        {"    users:\n      a: 8\n", "ebb.yaml:5: teams.v.users.a: expected a "
         "mapping, not a single value"},
        {"    users:\n      b: {max_gpus: 2, budget: 1500 USD/h}\n",
         "ebb.yaml:5: teams.v.users.b.budget: \"1500 USD/h\" is not an amount "
         "(the currency must be a 3-letter upper-case code such as USD; "
         "example: 40 USD)"},
        {"    users:\n      b: {max_gpus: -1}\n", "ebb.yaml:5: teams.v.users.b."
         "max_gpus: -1 must be between 1 and 100000"},
        {"    budget: 40 USD\n    admission: p95\n", "ebb.yaml:5: teams.v.admission: "
         "\"p95\" is not an admission rule (the one rule is p90: refuse a job "
         "whose p90 cost exceeds what is left of the budget; example: p90)"},
        {"    admission: p90\n", "ebb.yaml:4: teams.v.admission: p90 judges a job "
         "against the team's budget, and the team has none (add budget: 2000 "
         "USD, or remove admission)"},
        {"    budget: 40 USD\n    admission: [p90]\n", "ebb.yaml:5: "
         "teams.v.admission: expected p90, not a list"},
        {"    fair_share: maybe\n", "ebb.yaml:4: teams.v.fair_share: \"maybe\" "
         "is not a boolean (example: true or false)"},
        {"    fair_share: [true]\n", "ebb.yaml:4: teams.v.fair_share: expected "
         "a boolean, not a list (example: true or false)"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char buf[512];
        snprintf(buf, sizeof(buf), "%s%s", head, bad[i].more);
        expect_error(buf, bad[i].msg);
    }
}

static void config_teams(void **state)
{
    (void)state;
    static const char text[] =
        "teams:\n"
        "  ml: {members: [alice, bob], admins: [dave]}\n"
        "  vision: {members: [alice, carol]}\n";
    struct ebb__config *cfg;
    struct ebb_diag d;
    assert_int_equal(load(text, &cfg, &d), 0);
    static const struct {
        const char *user, *named;
        int is_admin, rc;
        const char *team, *msg;
    } cases[] = {
        {"bob", "ml", 0, 0, "ml", NULL},
        {"bob", NULL, 0, 0, "ml", NULL},      /* his one team */
        {"dave", NULL, 0, 0, "ml", NULL},     /* a team admin is a member */
        {"dave", "ml", 0, 0, "ml", NULL},
        {"erin", NULL, 0, 0, NULL, NULL},     /* in no team: none */
        {"root", "vision", 1, 0, "vision", NULL}, /* an admin: any team */
        {NULL, NULL, 0, 0, NULL, NULL},       /* a uid without a name */
        {"carol", "ml", 0, EBB_EPERM, NULL,
         "carol is not a member of team ml (teams.ml.members in ebb.yaml)"},
        {NULL, "ml", 0, EBB_EPERM, NULL,
         "this user is not a member of team ml (teams.ml.members in "
         "ebb.yaml)"},
        {"bob", "nlp", 1, EBB_ENOTFOUND, NULL,
         "job.yaml:4: team \"nlp\" is not in ebb.yaml (teams:)"},
        {"alice", NULL, 0, EBB_EINVAL, NULL,
         "job.yaml: alice is a member of several teams (ml, vision); name "
         "one with team: in the job spec"},
        {"alice", NULL, 1, EBB_EINVAL, NULL,
         "job.yaml: alice is a member of several teams (ml, vision); name "
         "one with team: in the job spec"},
        {"alice", "vision", 0, 0, "vision", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *team = "unset";
        ebb_diag_clear(&d);
        int rc = ebb__config_settle_team(cfg, cases[i].user, cases[i].is_admin,
                                         "job.yaml", 4, cases[i].named, &team, &d);
        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d", i, rc);
        if (cases[i].team == NULL)
            assert_null(team);
        else
            assert_string_equal(team, cases[i].team);
        if (cases[i].msg != NULL)
            assert_string_equal(d.msg, cases[i].msg);
    }
    const struct ebb__team *ml = ebb__config_team(cfg, "ml");
    assert_true(ebb__team_has_admin(ml, "dave"));
    assert_false(ebb__team_has_admin(ml, "bob"));
    assert_false(ebb__team_has_admin(ml, NULL));
    assert_true(ebb__team_has_member(ml, "dave"));
    assert_false(ebb__config_admin_named(cfg, "dave"));
    ebb__config_free(cfg);
}

static void check_defaults(const struct ebb__config *cfg)
{
    assert_int_equal(cfg->log_level, EBB_LOG_INFO);
    assert_int_equal(cfg->plugin_dirs.n, 0);
    assert_int_equal(cfg->api_socket_mode, 0600);
    assert_null(cfg->api_socket_group);
    assert_int_equal(cfg->api_max_connections, 64);
    assert_int_equal(cfg->api_request_timeout, 10000);
    assert_int_equal(cfg->api_idle_timeout, 60000);
    assert_int_equal(cfg->api_max_store_readers, 4);
    assert_string_equal(cfg->agent_listen, "127.0.0.1:0");
    assert_int_equal(cfg->agent_max_connections, 256);
    assert_int_equal(cfg->agent_header_timeout, 10000);
    assert_int_equal(cfg->agent_idle_timeout, 60000);
    assert_string_equal(cfg->default_policy, "renewal");
    assert_int_equal(cfg->n_providers, 0);
    assert_int_equal(cfg->n_policies, 0);
    assert_int_equal(cfg->n_teams, 0);
    assert_int_equal(cfg->admins.n, 0);
    assert_int_equal(cfg->n_rates, 0);
}

static void config_defaults(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "", "# only a comment\n", "---\n", "~\n",
        "log_level:\napi:\nagent_api:\nproviders:\nteams:\n",
        "api: {}\nagent_api: {}\nproviders: {}\npolicies: {}\n",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct ebb__config *cfg;
        struct ebb_diag d;
        if (load(texts[i], &cfg, &d) != 0)
            fail_msg("%s", d.msg);
        check_defaults(cfg);
        ebb__config_free(cfg);
    }

    struct ebb__config *cfg;
    struct ebb_diag d;
    /* The built-in configuration: the sim market from the shipped data,
     * run on local processes. */
    setenv("EBB_DATA_DIR", "/opt/ebb-data", 1);
    assert_int_equal(ebb__config_load_default("/var/lib/ebb", &cfg, &d), 0);
    unsetenv("EBB_DATA_DIR");
    assert_string_equal(cfg->file, "<built-in configuration>");
    assert_string_equal(cfg->default_policy, "renewal");
    assert_int_equal(cfg->n_providers, 2);
    const struct ebb__config_section *sim = ebb__config_provider(cfg, "sim");
    assert_non_null(sim);
    assert_string_equal(ebb__ymap_get(sim->node, "availability")->value,
                        "/opt/ebb-data/availability_aws_2020-03.csv");
    assert_non_null(ebb__config_provider(cfg, "local"));
    assert_int_equal(cfg->n_run_on, 1);
    assert_string_equal(cfg->run_on[0].runner, "local");
    assert_int_equal(cfg->clock_start, INT64_C(1578268800000));
    assert_non_null(strstr(ebb__config_default_text(), "run_on:"));
    /* A file:// store in the state directory, which the demo's job uses. */
    assert_int_equal(cfg->n_stores, 1);
    assert_string_equal(cfg->stores[0].name, "ckpt");
    assert_string_equal(cfg->stores[0].url, "file:///var/lib/ebb/store");
    ebb__config_free(cfg);
    ebb__config_free(NULL);
}

/* The live-demo keys: an accelerated clock, markets run elsewhere, and
 * the agent API's timing. */
static void config_clock_run_on_agent(void **state)
{
    (void)state;
    struct ebb__config *cfg;
    struct ebb_diag d;
    assert_int_equal(load("clock:\n  start: 2020-01-06T00:00:00Z\n  speed: 720\n"
                          "run_on: {sim: local}\n"
                          "agent_api: {listen: 127.0.0.1:7400, heartbeat: 2s}\n",
                          &cfg, &d), 0);
    assert_int_equal(cfg->clock_start, INT64_C(1578268800000));
    assert_true(cfg->clock_speed == 720.0);
    assert_int_equal(cfg->n_run_on, 1);
    assert_string_equal(cfg->run_on[0].market, "sim");
    assert_string_equal(cfg->run_on[0].runner, "local");
    assert_null(cfg->agent_url);
    assert_int_equal(cfg->agent_heartbeat, 2000);
    assert_int_equal(cfg->agent_heartbeat_timeout, 60000);
    assert_null(cfg->metrics_listen); /* off unless configured */
    ebb__config_free(cfg);

    assert_int_equal(load("metrics: {listen: 127.0.0.1:9464}\n", &cfg, &d), 0);
    assert_string_equal(cfg->metrics_listen, "127.0.0.1:9464");
    ebb__config_free(cfg);
    assert_int_equal(load("metrics: {}\n", &cfg, &d), 0);
    assert_null(cfg->metrics_listen);
    ebb__config_free(cfg);

    assert_int_equal(load("", &cfg, &d), 0);
    assert_int_equal(cfg->clock_start, 0);
    assert_true(cfg->clock_speed == 1.0);
    assert_int_equal(cfg->n_run_on, 0);
    ebb__config_free(cfg);

    expect_error("clock: {speed: 0}\n",
                 "ebb.yaml:1: clock.speed: must be above 0 and at most 1000000");
    expect_error("clock:\n  start: yesterday\n",
                 "ebb.yaml:2: clock.start: expected YYYY-MM-DD or "
                 "YYYY-MM-DDTHH:MM:SSZ (example: 2020-01-06T00:00:00Z)");
    expect_error("run_on: [sim]\n",
                 "ebb.yaml:1: run_on: expected a mapping of market: runner "
                 "(example: run_on: {sim: local})");
}

/* agent_api.heartbeat and heartbeat_timeout are bounded when ebb.yaml is
 * read, with the allowed range in the message: a heartbeat of 0 had every
 * agent exit and ebbd log a preemption a second; a timeout below three
 * heartbeats declares agents lost between two reports (#16 point 8). */
static void config_agent_heartbeat_bounds(void **state)
{
    (void)state;
    struct ebb__config *cfg;
    struct ebb_diag d;
    expect_error("agent_api: {heartbeat: 0s}\n",
                 "ebb.yaml:1: agent_api.heartbeat: 0s is outside the allowed range "
                 "(from 1s to 10m)");
    expect_error("agent_api:\n  heartbeat: 11m\n",
                 "ebb.yaml:2: agent_api.heartbeat: 11m is outside the allowed range "
                 "(from 1s to 10m)");
    expect_error("agent_api:\n  heartbeat: 1h\n  heartbeat_timeout: 1s\n",
                 "ebb.yaml:2: agent_api.heartbeat: 1h is outside the allowed range "
                 "(from 1s to 10m)");
    expect_error("agent_api:\n  heartbeat: 10m\n  heartbeat_timeout: 1s\n",
                 "ebb.yaml:3: agent_api.heartbeat_timeout: 1s is outside the allowed "
                 "range (from 3s to 1d)");
    expect_error("agent_api:\n  heartbeat: 10m\n  heartbeat_timeout: 29m59s\n",
                 "ebb.yaml:3: agent_api.heartbeat_timeout: 29m59s is outside the "
                 "allowed range (from 30m to 1d): it must cover 3 heartbeats of "
                 "agent_api.heartbeat (10m)");
    /* The default timeout (60 s) against a heartbeat it cannot cover: the
     * message points at the heartbeat, the key the user wrote. */
    expect_error("agent_api:\n  heartbeat: 30s\n",
                 "ebb.yaml:2: agent_api.heartbeat_timeout: 1m is outside the allowed "
                 "range (from 1m30s to 1d): it must cover 3 heartbeats of "
                 "agent_api.heartbeat (30s)");
    expect_error("agent_api: {heartbeat_timeout: 2d}\n",
                 "ebb.yaml:1: agent_api.heartbeat_timeout: 2d is outside the allowed "
                 "range (from 3s to 1d)");
    assert_int_equal(load("agent_api: {heartbeat: 10m, heartbeat_timeout: 30m}\n",
                          &cfg, &d), 0);
    assert_int_equal(cfg->agent_heartbeat, 600000);
    assert_int_equal(cfg->agent_heartbeat_timeout, 1800000);
    ebb__config_free(cfg);
    assert_int_equal(load("agent_api: {heartbeat: 1s, heartbeat_timeout: 3s}\n",
                          &cfg, &d), 0);
    ebb__config_free(cfg);
}

/* TLS on the agent listener: by default whenever others can reach it; a
 * plain listener they can reach only with agent_api.insecure. */
static void config_agent_tls(void **state)
{
    (void)state;
    struct ebb__config *cfg;
    struct ebb_diag d;
    assert_int_equal(load("", &cfg, &d), 0);
    assert_false(cfg->agent_tls); /* 127.0.0.1:0 */
    assert_false(cfg->agent_insecure);
    assert_int_equal(cfg->agent_enrol_ttl, 3600000);
    ebb__config_free(cfg);
    assert_int_equal(load("agent_api: {listen: \"0.0.0.0:7400\"}\n", &cfg, &d), 0);
    assert_true(cfg->agent_tls);
    assert_null(cfg->agent_tls_cert);
    ebb__config_free(cfg);
    assert_int_equal(load("agent_api: {listen: \"[::1]:7400\"}\n", &cfg, &d), 0);
    assert_false(cfg->agent_tls);
    ebb__config_free(cfg);
    assert_int_equal(load("agent_api: {listen: \"127.0.0.1:0\", tls_cert: /c.pem, "
                          "tls_key: /k.pem, tls_ca: /ca.pem, enrol_ttl: 10m}\n", &cfg, &d), 0);
    assert_true(cfg->agent_tls);
    assert_string_equal(cfg->agent_tls_cert, "/c.pem");
    assert_string_equal(cfg->agent_tls_key, "/k.pem");
    assert_string_equal(cfg->agent_tls_ca, "/ca.pem");
    assert_int_equal(cfg->agent_enrol_ttl, 600000);
    ebb__config_free(cfg);
    assert_int_equal(load("agent_api:\n  listen: \"0.0.0.0:7400\"\n  tls: off\n"
                          "  insecure: true\n  url: http://10.0.0.5:7400\n", &cfg, &d), 0);
    assert_false(cfg->agent_tls);
    assert_true(cfg->agent_insecure);
    ebb__config_free(cfg);

    expect_error("agent_api:\n  listen: \"0.0.0.0:7400\"\n  tls: off\n",
                 "ebb.yaml:2: agent_api.listen is reachable from other hosts and "
                 "agent_api.tls is off: agents' tokens and jobs' env would cross "
                 "the network in clear; turn TLS on (agent_api.tls: auto) or, on a "
                 "network you trust, set agent_api.insecure: true");
    expect_error("agent_api:\n  tls: maybe\n", "ebb.yaml:2: agent_api.tls: use auto, on or off");
    expect_error("agent_api:\n  tls_cert: /c.pem\n",
                 "ebb.yaml:2: agent_api.tls_cert and agent_api.tls_key go together");
    expect_error("agent_api:\n  listen: \"0.0.0.0:7400\"\n  url: http://h:7400\n",
                 "ebb.yaml:3: agent_api.url must be https:// (the listener speaks TLS)");
    expect_error("agent_api:\n  tls_ca: /ca.pem\n",
                 "ebb.yaml:2: agent_api.tls_ca needs agent_api.tls_cert (the "
                 "certificate it signs)");
}

static void config_errors(void **state)
{
    (void)state;
    /* Malformed YAML. */
    expect_error("log_level: info\nproviders: [aws\n",
                 "ebb.yaml:3: did not find expected ',' or ']'");
    /* Unknown top-level key. */
    expect_error("log_level: info\n\nprovders: {}\n",
                 "ebb.yaml:3: unknown key \"provders\" (known: log_level, "
                 "plugin_dirs, api, agent_api, metrics, default_policy, "
                 "providers, policies, teams, admins, currency_rates, clock, run_on, plans, "
                 "stores, notify)");
    /* Duplicate key. */
    expect_error("log_level: info\nadmins: [a]\nlog_level: debug\n",
                 "ebb.yaml:3: duplicate key \"log_level\" (first at line 1)");
    /* Values of the wrong kind or form. */
    expect_error("admins: [a]\nlog_level: loud\n",
                 "ebb.yaml:2: log_level: \"loud\" is not one of error, warn, "
                 "info, debug");
    expect_error("log_level: [info]\n",
                 "ebb.yaml:1: log_level: expected one of error, warn, info, "
                 "debug, not a list");
    expect_error("- a\n- b\n",
                 "ebb.yaml:1: expected a mapping of settings (key: value), "
                 "not a list");
    expect_error("plugin_dirs: /opt/ebb\n",
                 "ebb.yaml:1: plugin_dirs: expected a string list, not a "
                 "single value (example: [a, b])");
    expect_error("plugin_dirs:\n  - /opt\n  - {a: b}\n",
                 "ebb.yaml:3: plugin_dirs[1]: expected a string, not a "
                 "mapping (example: \"some text\")");
    expect_error("admins: [root, ~]\n",
                 "ebb.yaml:1: admins[1]: \"~\" is not a string (null; "
                 "example: \"some text\")");
    expect_error("api:\n  max_connections: 0\n",
                 "ebb.yaml:2: api.max_connections: must be from 1 to 65536");
    expect_error("api:\n  max_store_readers: 100\n",
                 "ebb.yaml:2: api.max_store_readers: must be from 1 to 64");
    expect_error("agent_api:\n  header_timeout: 0s\n",
                 "ebb.yaml:2: agent_api.header_timeout: must be longer than 0s "
                 "(example: 10s)");
    expect_error("api:\n  socket_mode: 0999\n",
                 "ebb.yaml:2: api.socket_mode: \"0999\" is not a file mode "
                 "(octal, at most 0777; example: 0660)");
    expect_error("api:\n  socket_mod: 0600\n",
                 "ebb.yaml:2: api: unknown key \"socket_mod\" (known: "
                 "socket_mode, socket_group, max_connections, request_timeout, "
                 "idle_timeout, max_store_readers)");
    expect_error("api: 0600\n",
                 "ebb.yaml:1: api: expected a mapping of keys, not a single "
                 "value");
    expect_error("agent_api:\n  listen: localhost\n",
                 "ebb.yaml:2: agent_api.listen: \"localhost\" is not an "
                 "address and port (example: 0.0.0.0:7311 or [::]:7311)");
    expect_error("agent_api:\n  listen: 1.2.3.4:70000\n",
                 "ebb.yaml:2: agent_api.listen: \"1.2.3.4:70000\" is not an "
                 "address and port (example: 0.0.0.0:7311 or [::]:7311)");
    expect_error("metrics:\n  listen: 9464\n",
                 "ebb.yaml:2: metrics.listen: \"9464\" is not an address and "
                 "port (example: 127.0.0.1:9464)");
    expect_error("metrics:\n  port: 9464\n",
                 "ebb.yaml:2: metrics: unknown key \"port\" (known: listen)");
    expect_error("default_policy: ''\n",
                 "ebb.yaml:1: default_policy: empty (example: "
                 "uniform-progress)");
    expect_error("providers:\n  aws: [us-east-1]\n",
                 "ebb.yaml:2: providers.aws: expected a mapping of keys, not "
                 "a list");
    expect_error("providers:\n  ../evil: {}\n",
                 "ebb.yaml:2: providers: \"../evil\" is not a valid name (1 "
                 "to 64 letters, digits, - and _)");
    expect_error("policies: [greedy]\n",
                 "ebb.yaml:1: policies: expected a mapping, not a list");
    /* Bad amount inside a team. */
    expect_error("teams:\n  ml:\n    members: [alice]\n    budget: forty\n",
                 "ebb.yaml:4: teams.ml.budget: \"forty\" is not an amount "
                 "(example: 40 USD)");
    expect_error("teams:\n  ml:\n    budget: 40 dollars\n",
                 "ebb.yaml:3: teams.ml.budget: \"40 dollars\" is not an "
                 "amount (the currency must be a 3-letter upper-case code "
                 "such as USD; example: 40 USD)");
    expect_error("teams:\n  ml:\n    budget: 40\n",
                 "ebb.yaml:3: teams.ml.budget: \"40\" is not an amount (no "
                 "currency; add a code such as USD; example: 40 USD)");
    expect_error("teams:\n  ml:\n    memebrs: [a]\n",
                 "ebb.yaml:3: teams.ml: unknown key \"memebrs\" (known: "
                 "members, admins, budget, max_gpus, max_burn, users, admission, fair_share)");
    expect_error("teams:\n  ml:\n    admins: alice\n",
                 "ebb.yaml:3: teams.ml.admins: expected a string list, not "
                 "a single value (example: [a, b])");
    expect_error("currency_rates:\n  CNY: cheap\n",
                 "ebb.yaml:2: currency_rates.CNY: \"cheap\" is not a rate "
                 "(USD for 1 CNY, a positive decimal up to 1000000 with at "
                 "most 9 decimals; example: 0.14)");
    expect_error("teams:\n  ml:\n    budget: 2000000000 USD\n",
                 "ebb.yaml:3: teams.ml.budget: \"2000000000 USD\" is not an "
                 "amount (more than 1000000000, the largest amount ebb takes; "
                 "example: 40 USD)");
    expect_error("plans:\n  p:\n    provider: aws\n    instance_type: x\n"
                 "    price: 9000000000 USD\n",
                 "ebb.yaml:5: plans.p.price: \"9000000000 USD\" is not an "
                 "amount (more than 1000000000, the largest amount ebb takes; "
                 "example: 40 USD)");
    expect_error("currency_rates:\n  CNY: 1000000.000000001\n",
                 "ebb.yaml:2: currency_rates.CNY: \"1000000.000000001\" is "
                 "not a rate (USD for 1 CNY, a positive decimal up to 1000000 "
                 "with at most 9 decimals; example: 0.14)");
    expect_error("currency_rates:\n  CNY: 0\n",
                 "ebb.yaml:2: currency_rates.CNY: \"0\" is not a rate (USD "
                 "for 1 CNY, a positive decimal up to 1000000 with at most 9 "
                 "decimals; example: 0.14)");
    expect_error("currency_rates:\n  yuan: 0.14\n",
                 "ebb.yaml:2: currency_rates: \"yuan\" is not a currency code "
                 "(3 upper-case letters; example: CNY)");
    expect_error("currency_rates:\n  USD: 1\n",
                 "ebb.yaml:2: currency_rates.USD: rates are in USD already; "
                 "remove this line");
    expect_error("default_policy: \"a\\0b\"\n",
                 "ebb.yaml:1: default_policy: contains a NUL character");
}

static void config_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/ebb-test-config-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/ebb.yaml", dir);

    struct ebb__config *cfg;
    struct ebb_diag d;
    assert_int_equal(ebb__config_load_file(path, &cfg, &d), EBB_ENOTFOUND);
    assert_null(cfg);
    assert_non_null(strstr(d.msg, "ebb.yaml: cannot open: "));

    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(full_config, f);
    fclose(f);
    assert_int_equal(ebb__config_load_file(path, &cfg, &d), 0);
    assert_string_equal(cfg->file, path);
    assert_int_equal(cfg->n_teams, 2);
    ebb__config_free(cfg);

    f = fopen(path, "w");
    assert_non_null(f);
    fputs("log_level: info\nbudget: 5\n", f);
    fclose(f);
    assert_int_equal(ebb__config_load_file(path, &cfg, &d), EBB_ECONFIG);
    char want[600];
    snprintf(want, sizeof(want),
             "%s:2: unknown key \"budget\" (known: log_level, plugin_dirs, "
             "api, agent_api, metrics, default_policy, providers, policies, "
             "teams, admins, currency_rates, clock, run_on, plans, stores, notify)",
             path);
    assert_string_equal(d.msg, want);

    /* The shipped example must load and say what it documents. */
    const char *root = getenv("EBB_SOURCE_ROOT");
    if (root != NULL) {
        snprintf(path, sizeof(path), "%s/examples/ebb.yaml", root);
        if (ebb__config_load_file(path, &cfg, &d) != 0)
            fail_msg("%s", d.msg);
        assert_string_equal(cfg->default_policy, "renewal");
        assert_int_equal(cfg->log_level, EBB_LOG_INFO);
        assert_null(cfg->metrics_listen);
        ebb__config_free(cfg);
    }

    snprintf(path, sizeof(path), "%s/ebb.yaml", dir);
    unlink(path);
    rmdir(dir);
}

/* ---- plugin configuration tables ---------------------------------------- */

struct sample_cfg {
    char *endpoint;
    int64_t max_instances;
    double spot_fraction;
    int use_spot;
    ebb_dur_ms poll_interval;
    struct ebb_money budget;
    struct ebb_string_list regions;
    char *profile;
    char *empty;
};

static const struct ebb_cfg_key sample_keys[] = {
    {"endpoint", EBB_CFG_STRING, "https://ec2.amazonaws.com",
     offsetof(struct sample_cfg, endpoint), "API endpoint"},
    {"max_instances", EBB_CFG_INT, "8",
     offsetof(struct sample_cfg, max_instances), "cap"},
    {"spot_fraction", EBB_CFG_DOUBLE, "0.75",
     offsetof(struct sample_cfg, spot_fraction), "share"},
    {"use_spot", EBB_CFG_BOOL, "yes", offsetof(struct sample_cfg, use_spot),
     "buy spot"},
    {"poll_interval", EBB_CFG_DURATION, "5m",
     offsetof(struct sample_cfg, poll_interval), "how often"},
    {"budget", EBB_CFG_MONEY, "100 USD", offsetof(struct sample_cfg, budget),
     "cap"},
    {"regions", EBB_CFG_STRING_LIST, "[us-east-1, us-west-2]",
     offsetof(struct sample_cfg, regions), "regions to use"},
    {"profile", EBB_CFG_STRING, NULL, offsetof(struct sample_cfg, profile),
     "credentials profile"},
    {"empty", EBB_CFG_STRING, "", offsetof(struct sample_cfg, empty),
     "empty by default"},
    EBB_CFG_END,
};

/* Applies sample_keys to `text` as the section providers.aws. */
static int apply(const char *text, struct sample_cfg **out,
                 struct ebb_diag *d)
{
    struct ebb__ydoc *doc;
    int rc = ebb__ydoc_load_buffer("ebb.yaml", text, strlen(text), &doc, d);
    if (rc != 0)
        return rc;
    const struct ebb__ynode *providers =
        ebb__ymap_get(ebb__ydoc_root(doc), "providers");
    void *raw = (void *)&raw;
    rc = ebb__cfg_apply(sample_keys, sizeof(struct sample_cfg),
                        ebb__ymap_get(providers, "aws"), "providers.aws", &raw,
                        d);
    if (rc != 0)
        assert_null(raw);
    *out = raw;
    ebb__ydoc_free(doc); /* the result must not point into the document */
    return rc;
}

static void table_defaults(void **state)
{
    (void)state;
    void *raw;
    struct ebb_diag d;
    assert_int_equal(ebb__cfg_apply(sample_keys, sizeof(struct sample_cfg),
                                    NULL, "providers.aws", &raw, &d),
                     0);
    struct sample_cfg *c = raw;
    assert_string_equal(c->endpoint, "https://ec2.amazonaws.com");
    assert_int_equal(c->max_instances, 8);
    assert_true(c->spot_fraction == 0.75);
    assert_int_equal(c->use_spot, 1);
    assert_int_equal(c->poll_interval, 300000);
    assert_int_equal(c->budget.amount, 100000000);
    assert_string_equal(c->budget.currency, "USD");
    assert_int_equal(c->regions.n, 2);
    assert_string_equal(c->regions.items[0], "us-east-1");
    assert_string_equal(c->regions.items[1], "us-west-2");
    assert_null(c->profile);
    assert_string_equal(c->empty, "");
    ebb__cfg_free(sample_keys, c);

    /* A section written as "aws:" (null) is all defaults too. */
    struct sample_cfg *s;
    assert_int_equal(apply("providers:\n  aws:\n", &s, &d), 0);
    assert_int_equal(s->max_instances, 8);
    ebb__cfg_free(sample_keys, s);
    ebb__cfg_free(sample_keys, NULL);
}

static void table_values(void **state)
{
    (void)state;
    struct sample_cfg *c;
    struct ebb_diag d;
    static const char text[] = "providers:\n"
                               "  aws:\n"
                               "    endpoint: http://127.0.0.1:9000\n"
                               "    max_instances: -0x10\n"
                               "    spot_fraction: 1e-1\n"
                               "    use_spot: off\n"
                               "    poll_interval: 1h30m\n"
                               "    budget: 40.5 CNY\n"
                               "    regions: [eu-west-1]\n"
                               "    profile: ''\n"
                               "    empty: x\n";
    if (apply(text, &c, &d) != 0)
        fail_msg("%s", d.msg);
    assert_string_equal(c->endpoint, "http://127.0.0.1:9000");
    assert_int_equal(c->max_instances, -16);
    assert_true(c->spot_fraction == 0.1);
    assert_int_equal(c->use_spot, 0);
    assert_int_equal(c->poll_interval, 5400000);
    assert_int_equal(c->budget.amount, 40500000);
    assert_string_equal(c->budget.currency, "CNY");
    assert_int_equal(c->regions.n, 1);
    assert_string_equal(c->regions.items[0], "eu-west-1");
    assert_string_equal(c->profile, "");
    assert_string_equal(c->empty, "x");
    ebb__cfg_free(sample_keys, c);

    /* An empty list replaces the default list; a null value keeps it. */
    assert_int_equal(apply("providers:\n  aws:\n    regions: []\n"
                           "    endpoint: ~\n",
                           &c, &d),
                     0);
    assert_int_equal(c->regions.n, 0);
    assert_null(c->regions.items);
    assert_string_equal(c->endpoint, "https://ec2.amazonaws.com");
    ebb__cfg_free(sample_keys, c);
}

/* Ranges over a table's values (the core's own bounds): a value outside
 * is refused with the allowed range; 0 passes where it means "none". */
static void table_ranges(void **state)
{
    (void)state;
    static const struct ebb__cfg_range ranges[] = {
        {"max_instances", 1, 100, false},
        {"spot_fraction", 0, 1, false},
        {"poll_interval", 60000, 3600000, true},
        EBB__CFG_RANGE_END,
    };
    static const struct {
        const char *text;
        const char *msg; /* NULL: in range */
    } cases[] = {
        {"providers:\n  aws:\n    max_instances: 0\n",
         "ebb.yaml:3: providers.aws.max_instances: 0 is outside the allowed range "
         "(from 1 to 100)"},
        {"providers:\n  aws:\n    spot_fraction: 1.5\n",
         "ebb.yaml:3: providers.aws.spot_fraction: 1.5 is outside the allowed range "
         "(from 0 to 1)"},
        {"providers:\n  aws:\n    poll_interval: 59s\n",
         "ebb.yaml:3: providers.aws.poll_interval: 59s is outside the allowed range "
         "(0 (none), or from 1m to 1h)"},
        {"providers:\n  aws:\n    poll_interval: 0s\n", NULL},
        {"providers:\n  aws:\n    poll_interval: 1h\n    max_instances: 100\n", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sample_cfg *c;
        struct ebb_diag d;
        assert_int_equal(apply(cases[i].text, &c, &d), 0);
        /* apply() freed the document: a range message with a line needs
         * one, so the check runs on a fresh copy of it. */
        struct ebb__ydoc *doc;
        assert_int_equal(ebb__ydoc_load_buffer("ebb.yaml", cases[i].text,
                                               strlen(cases[i].text), &doc, &d), 0);
        const struct ebb__ynode *aws = ebb__ymap_get(
            ebb__ymap_get(ebb__ydoc_root(doc), "providers"), "aws");
        int rc = ebb__cfg_check_ranges(sample_keys, ranges, c, aws, "ebb.yaml",
                                       "providers.aws", &d);
        if (cases[i].msg == NULL) {
            assert_int_equal(rc, 0);
        } else {
            assert_int_equal(rc, EBB_ECONFIG);
            assert_string_equal(d.msg, cases[i].msg);
        }
        ebb__ydoc_free(doc);
        ebb__cfg_free(sample_keys, c);
    }
    /* A default outside its range is blamed on the file (line 0). */
    void *raw;
    struct ebb_diag d;
    assert_int_equal(ebb__cfg_apply(sample_keys, sizeof(struct sample_cfg), NULL,
                                    "providers.aws", &raw, &d), 0);
    static const struct ebb__cfg_range tight[] = {{"max_instances", 1, 4, false},
                                                  EBB__CFG_RANGE_END};
    assert_int_equal(ebb__cfg_check_ranges(sample_keys, tight, raw, NULL, "ebb.yaml",
                                           "providers.aws", &d), EBB_ECONFIG);
    assert_string_equal(d.msg, "ebb.yaml: providers.aws.max_instances: 8 is outside "
                               "the allowed range (from 1 to 4)");
    static const struct ebb__cfg_range bad[] = {{"nosuch", 1, 4, false},
                                                {"endpoint", 1, 4, false},
                                                EBB__CFG_RANGE_END};
    assert_int_equal(ebb__cfg_check_ranges(sample_keys, bad, raw, NULL, "ebb.yaml",
                                           "providers.aws", &d), EBB_ECONFIG);
    assert_string_equal(d.msg, "providers.aws.nosuch: a range for a key the table lacks");
    assert_int_equal(ebb__cfg_check_ranges(sample_keys, bad + 1, raw, NULL, "ebb.yaml",
                                           "providers.aws", &d), EBB_ECONFIG);
    assert_string_equal(d.msg, "providers.aws.endpoint: a range applies only to a "
                               "number or a duration");
    ebb__cfg_free(sample_keys, raw);
}

static void table_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *msg;
    } cases[] = {
        {"providers:\n  aws:\n    regoins: [a]\n",
         "ebb.yaml:3: providers.aws: unknown key \"regoins\" (known: "
         "endpoint, max_instances, spot_fraction, use_spot, poll_interval, "
         "budget, regions, profile, empty)"},
        {"providers:\n  aws:\n    budget: forty\n",
         "ebb.yaml:3: providers.aws.budget: \"forty\" is not an amount "
         "(example: 40 USD)"},
        {"providers:\n  aws:\n    poll_interval: 8\n",
         "ebb.yaml:3: providers.aws.poll_interval: \"8\" is not a duration "
         "(no unit; use d, h, m, s or ms; example: 90s, 5m, 1h30m)"},
        {"providers:\n  aws:\n    poll_interval: -5m\n",
         "ebb.yaml:3: providers.aws.poll_interval: \"-5m\" is not a duration "
         "(negative; example: 90s, 5m, 1h30m)"},
        {"providers:\n  aws:\n    poll_interval: 5 parsecs\n",
         "ebb.yaml:3: providers.aws.poll_interval: \"5 parsecs\" is not a "
         "duration (unknown unit; use d, h, m, s or ms; example: 90s, 5m, "
         "1h30m)"},
        {"providers:\n  aws:\n    max_instances: many\n",
         "ebb.yaml:3: providers.aws.max_instances: \"many\" is not an integer "
         "(example: 42)"},
        {"providers:\n  aws:\n    max_instances: 9223372036854775808\n",
         "ebb.yaml:3: providers.aws.max_instances: \"9223372036854775808\" "
         "is not an integer (out of range; example: 42)"},
        {"providers:\n  aws:\n    max_instances: 1000000001\n",
         "ebb.yaml:3: providers.aws.max_instances: \"1000000001\" is not an "
         "integer (outside -1000000000 to 1000000000; example: 42)"},
        {"providers:\n  aws:\n    max_instances: -0x3B9ACA01\n",
         "ebb.yaml:3: providers.aws.max_instances: \"-0x3B9ACA01\" is not an "
         "integer (outside -1000000000 to 1000000000; example: 42)"},
        {"providers:\n  aws:\n    spot_fraction: 1e10\n",
         "ebb.yaml:3: providers.aws.spot_fraction: \"1e10\" is not a number "
         "(outside -1000000000 to 1000000000; example: 0.5)"},
        /* An amount below a micro-unit is refused, never rounded to 0. */
        {"providers:\n  aws:\n    budget: 0.0000001 USD\n",
         "ebb.yaml:3: providers.aws.budget: \"0.0000001 USD\" is not an amount "
         "(more than 6 decimals; example: 40 USD)"},
        {"providers:\n  aws:\n    budget: 1000000000.5 USD\n",
         "ebb.yaml:3: providers.aws.budget: \"1000000000.5 USD\" is not an "
         "amount (more than 1000000000, the largest amount ebb takes; "
         "example: 40 USD)"},
        {"providers:\n  aws:\n    max_instances: 1.5\n",
         "ebb.yaml:3: providers.aws.max_instances: \"1.5\" is not an integer "
         "(example: 42)"},
        {"providers:\n  aws:\n    spot_fraction: half\n",
         "ebb.yaml:3: providers.aws.spot_fraction: \"half\" is not a number "
         "(example: 0.5)"},
        {"providers:\n  aws:\n    spot_fraction: 1e999\n",
         "ebb.yaml:3: providers.aws.spot_fraction: \"1e999\" is not a number "
         "(out of range; example: 0.5)"},
        {"providers:\n  aws:\n    use_spot: maybe\n",
         "ebb.yaml:3: providers.aws.use_spot: \"maybe\" is not a boolean "
         "(example: true or false)"},
        {"providers:\n  aws:\n    regions: us-east-1\n",
         "ebb.yaml:3: providers.aws.regions: expected a string list, not a "
         "single value (example: [a, b])"},
        {"providers:\n  aws:\n    regions:\n      - a\n      - [b]\n",
         "ebb.yaml:5: providers.aws.regions[1]: expected a string, not a "
         "list (example: \"some text\")"},
        {"providers:\n  aws:\n    endpoint: {url: x}\n",
         "ebb.yaml:3: providers.aws.endpoint: expected a string, not a "
         "mapping (example: \"some text\")"},
        {"providers:\n  aws:\n    budget: [40 USD]\n",
         "ebb.yaml:3: providers.aws.budget: expected an amount, not a list "
         "(example: 40 USD)"},
        {"providers:\n  aws: [a]\n",
         "ebb.yaml:2: providers.aws: expected a mapping of keys, not a list"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sample_cfg *c = (struct sample_cfg *)&c;
        struct ebb_diag d;
        int rc = apply(cases[i].text, &c, &d);
        if (rc != EBB_ECONFIG)
            fail_msg("case %zu: rc %d", i, rc);
        assert_null(c);
        assert_string_equal(d.msg, cases[i].msg);
    }
}

static void table_bad_tables(void **state)
{
    (void)state;
    struct bad {
        ebb_dur_ms every;
    };
    static const struct ebb_cfg_key bad_default[] = {
        {"every", EBB_CFG_DURATION, "often", offsetof(struct bad, every), ""},
        EBB_CFG_END,
    };
    static const struct ebb_cfg_key bad_offset[] = {
        {"every", EBB_CFG_DURATION, "5m", 4, ""},
        EBB_CFG_END,
    };
    static const struct ebb_cfg_key bad_type[] = {
        {"every", (enum ebb_cfg_type)99, NULL, 0, ""},
        EBB_CFG_END,
    };
    void *raw = &raw;
    struct ebb_diag d;
    assert_int_equal(ebb__cfg_apply(bad_default, sizeof(struct bad), NULL,
                                    "policies.x", &raw, &d),
                     EBB_ECONFIG);
    assert_null(raw);
    assert_string_equal(d.msg, "built-in default:1: policies.x.every: "
                               "\"often\" is not a duration (example: 90s, "
                               "5m, 1h30m)");
    assert_int_equal(ebb__cfg_apply(bad_offset, sizeof(struct bad), NULL,
                                    "policies.x", &raw, &d),
                     EBB_ECONFIG);
    assert_string_equal(d.msg, "policies.x.every: bad configuration table "
                               "entry (type 4 at offset 4 of 8 bytes)");
    assert_int_equal(ebb__cfg_apply(bad_type, sizeof(struct bad), NULL, NULL,
                                    &raw, &d),
                     EBB_ECONFIG);

    /* A table without keys still yields a config to free. */
    static const struct ebb_cfg_key none[] = {EBB_CFG_END};
    assert_int_equal(ebb__cfg_apply(none, 0, NULL, NULL, &raw, &d), 0);
    assert_non_null(raw);
    ebb__cfg_free(none, raw);
}

static void table_names(void **state)
{
    (void)state;
    assert_string_equal(ebb__cfg_type_name(EBB_CFG_DURATION), "duration");
    assert_string_equal(ebb__cfg_type_name(EBB_CFG_MONEY), "amount");
    assert_string_equal(ebb__cfg_type_name(EBB_CFG_STRING_LIST),
                        "string list");
    assert_string_equal(ebb__cfg_type_name(EBB_CFG_BOOL), "boolean");
    assert_string_equal(ebb__cfg_type_name((enum ebb_cfg_type)99),
                        "unknown type");
    assert_string_equal(ebb__cfg_type_example(EBB_CFG_MONEY), "40 USD");
}

/* ---- stores: ------------------------------------------------------------ */

static void stores_read(void **state)
{
    (void)state;
    struct ebb__config *cfg;
    struct ebb_diag d;
    assert_int_equal(load("stores:\n"
                          "  ckpt:\n"
                          "    url: s3://ml-ckpt/ebb\n"
                          "    region: us-east-1\n"
                          "    endpoint: http://127.0.0.1:9000\n"
                          "    path_style: true\n"
                          "    price_per_gb_month: 0.023 USD\n"
                          "    egress_per_gb: 0.09 USD\n"
                          "  ali:\n"
                          "    url: oss://bucket-1\n"
                          "    region: cn-hangzhou\n"
                          "  shared:\n"
                          "    url: file:///srv/ckpt/\n",
                          &cfg, &d),
                     0);
    assert_int_equal(cfg->n_stores, 3);
    const struct ebb__store_cfg *s = ebb__config_store(cfg, "ckpt");
    assert_non_null(s);
    assert_int_equal(s->kind, EBB__OBJSTORE_S3);
    assert_string_equal(s->url, "s3://ml-ckpt/ebb");
    assert_string_equal(s->region, "us-east-1");
    assert_string_equal(s->endpoint, "http://127.0.0.1:9000");
    assert_int_equal(s->path_style, 1);
    assert_int_equal(s->line, 2);
    assert_true(s->has_price && s->has_egress);
    assert_int_equal(s->price_per_gb_month.amount, 23000);
    assert_string_equal(s->price_per_gb_month.currency, "USD");
    assert_int_equal(s->egress_per_gb.amount, 90000);
    s = ebb__config_store(cfg, "ali");
    assert_int_equal(s->kind, EBB__OBJSTORE_OSS);
    assert_null(s->endpoint);
    assert_int_equal(s->path_style, 0);
    assert_false(s->has_price);
    s = ebb__config_store(cfg, "shared");
    assert_int_equal(s->kind, EBB__OBJSTORE_FILE);
    assert_null(s->region);
    assert_null(ebb__config_store(cfg, "nope"));
    ebb__config_free(cfg);
}

static void stores_errors(void **state)
{
    (void)state;
    expect_error("stores:\n  ckpt:\n    region: us-east-1\n",
                 "ebb.yaml:2: stores.ckpt: url is required (s3://BUCKET[/PREFIX], "
                 "oss://BUCKET[/PREFIX] or file:///DIR)");
    expect_error("stores:\n  ckpt:\n    url: s3://b/x\n    bucket: b\n",
                 "ebb.yaml:4: stores.ckpt: unknown key \"bucket\" (known: url, "
                 "region, endpoint, path_style, price_per_gb_month, egress_per_gb)");
    expect_error("stores:\n  ckpt:\n    url: gs://bucket\n    region: x\n",
                 "ebb.yaml:2: stores.ckpt: \"gs://bucket\" is not a store URL "
                 "(write s3://BUCKET[/PREFIX], oss://BUCKET[/PREFIX] or file:///DIR)");
    expect_error("stores:\n  ckpt:\n    url: s3://Bucket_1\n    region: us-east-1\n",
                 "ebb.yaml:2: stores.ckpt: \"s3://Bucket_1\": the bucket must be 3 to "
                 "63 lower-case letters, digits, '-' or '.', starting and ending with "
                 "a letter or digit");
    expect_error("stores:\n  ckpt:\n    url: s3://bucket/a/../b\n    region: us-east-1\n",
                 "ebb.yaml:2: stores.ckpt: \"s3://bucket/a/../b\": the prefix after "
                 "the bucket must not hold empty, '.' or '..' parts or control "
                 "characters");
    expect_error("stores:\n  ckpt:\n    url: s3://bucket\n",
                 "ebb.yaml:2: stores.ckpt: region: an s3:// store needs its region, "
                 "in lower-case letters, digits and '-' (such as us-east-1)");
    expect_error("stores:\n  ckpt:\n    url: oss://bucket\n    region: oss-cn-hangzhou\n",
                 "ebb.yaml:2: stores.ckpt: region \"oss-cn-hangzhou\": write the "
                 "region ID (\"cn-hangzhou\"), not the OSS endpoint's name");
    expect_error("stores:\n  ckpt:\n    url: oss://bucket\n    region: cn-hangzhou\n"
                 "    path_style: true\n",
                 "ebb.yaml:2: stores.ckpt: path_style: OSS accepts only "
                 "virtual-hosted addressing (the bucket in the host name); remove "
                 "path_style");
    expect_error("stores:\n  ckpt:\n    url: file:///srv/c\n    region: us-east-1\n",
                 "ebb.yaml:2: stores.ckpt: region: a file:// store takes no region "
                 "(only s3:// and oss:// stores do)");
    expect_error("stores:\n  ckpt:\n    url: file://relative/dir\n",
                 "ebb.yaml:2: stores.ckpt: \"file://relative/dir\" is not a store "
                 "URL: file:// takes an absolute directory (file:///DIR)");
    expect_error("stores:\n  ckpt:\n    url: s3://bucket\n    region: us-east-1\n"
                 "    endpoint: ftp://host\n",
                 "ebb.yaml:2: stores.ckpt: endpoint \"ftp://host\" is not "
                 "http[s]://HOST[:PORT]");
    expect_error("stores:\n  ckpt:\n    url: s3://bucket\n    region: us-east-1\n"
                 "    endpoint: http://u:p@host/path\n",
                 "ebb.yaml:2: stores.ckpt: endpoint \"http://u:p@host/path\" is not "
                 "http[s]://HOST[:PORT]");
    expect_error("stores:\n  ckpt:\n    url: s3://bucket\n    region: us-east-1\n"
                 "    price_per_gb_month: -1 USD\n",
                 "ebb.yaml:5: stores.ckpt.price_per_gb_month: \"-1 USD\" is not an "
                 "amount (negative; example: 40 USD)");
    expect_error("stores:\n  ckpt:\n    url: s3://bucket\n    region: us-east-1\n"
                 "    path_style: maybe\n",
                 "ebb.yaml:5: stores.ckpt.path_style: \"maybe\" is not a boolean "
                 "(example: true or false)");
    expect_error("stores:\n  \"a b\":\n    url: s3://bucket\n",
                 "ebb.yaml:2: stores: \"a b\" is not a valid name (1 to 64 letters, "
                 "digits, - and _)");
    expect_error("stores: [a]\n", "ebb.yaml:1: stores: expected a mapping, not a list");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(diag_formats),
        cmocka_unit_test(yaml_tree),
        cmocka_unit_test(yaml_errors),
        cmocka_unit_test(yaml_duplicates),
        cmocka_unit_test(yaml_spec_limits),
        cmocka_unit_test(config_full),
        cmocka_unit_test(config_teams),
        cmocka_unit_test(config_quotas),
        cmocka_unit_test(config_defaults),
        cmocka_unit_test(config_errors),
        cmocka_unit_test(config_clock_run_on_agent),
        cmocka_unit_test(config_agent_heartbeat_bounds),
        cmocka_unit_test(config_agent_tls),
        cmocka_unit_test(config_file),
        cmocka_unit_test(table_defaults),
        cmocka_unit_test(table_values),
        cmocka_unit_test(table_ranges),
        cmocka_unit_test(table_errors),
        cmocka_unit_test(table_bad_tables),
        cmocka_unit_test(table_names),
        cmocka_unit_test(stores_read),
        cmocka_unit_test(stores_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
