#include "config/config_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/cfg_table.h"
#include "base/log.h"
#include "base/paths.h"
#include "base/str.h"
#include "base/yaml_read.h"
#include "config/config_impl.h"
#include "config/plans.h"
#include "config/stores.h"

/* The configuration used when there is no ebb.yaml. examples/ebb.yaml
 * shows the same values; keep the two in step. */
/* The embedded default: the sim market replaying the shipped AWS spot
 * trace (from its first week on, in real time unless --clock-speed says
 * otherwise), with its instances run as local processes whose agents are
 * told the port the OS picked. @DATA@ is ebb__data_dir(). */
static const char default_text[] =
    "# ebb built-in configuration (used when there is no ebb.yaml)\n"
    "log_level: info\n"
    "default_policy: renewal\n"
    "providers:\n"
    "  sim:\n"
    "    prices: @DATA@/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv\n"
    "    availability: @DATA@/availability_aws_2020-03.csv\n"
    "    align_availability: true\n"
    "  local: {}\n"
    "run_on:\n"
    "  sim: local\n"
    "agent_api:\n"
    "  listen: 127.0.0.1:0\n"
    "clock:\n"
    "  start: 2020-01-06T00:00:00Z\n"
    "# Checkpoints (checkpoint.store: ckpt) kept beside the state, as a\n"
    "# bucket would keep them: the demo's job resumes from there.\n"
    "stores:\n"
    "  ckpt: {url: \"file://@STATE@/store\"}\n";

#define DEFAULT_NAME "<built-in configuration>"

/* A team's members and admins; quotas.c reads its money and quotas. */
struct team_cfg {
    struct ebb_string_list members;
    struct ebb_string_list admins;
};
static const struct ebb_cfg_key team_keys[] = {
    {"members", EBB_CFG_STRING_LIST, "[]", offsetof(struct team_cfg, members),
     "user names in the team"},
    {"admins", EBB_CFG_STRING_LIST, "[]", offsetof(struct team_cfg, admins),
     "user names who see every job and schedule of the team in full (they "
     "are members too)"},
    EBB_CFG_END,
};

static int set_string(char **dst, const char *value, struct ebb_diag *d)
{
    char *copy = strdup(value);
    if (copy == NULL)
        return ebb__yread_nomem(d);
    free(*dst);
    *dst = copy;
    return 0;
}

/* ---- top-level keys ----------------------------------------------------- */

static int do_log_level(struct ebb__config *cfg, const struct ebb__ynode *n,
                        struct ebb_diag *d)
{
    static const char levels[] = "error, warn, info, debug";
    int rc = ebb__yread_scalar(n, "log_level",
                               "one of error, warn, info, debug", d);
    if (rc != 0)
        return rc;
    if (ebb__log_parse_level(n->value, &cfg->log_level) != 0) {
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_set(d, n->file, n->line, "log_level: %s is not one of %s",
                      ebb__yread_quote(n, q, sizeof(q)), levels);
        return EBB_ECONFIG;
    }
    return 0;
}

static int do_plugin_dirs(struct ebb__config *cfg, const struct ebb__ynode *n,
                          struct ebb_diag *d)
{
    return ebb__cfg_parse_value(EBB_CFG_STRING_LIST, n, "plugin_dirs",
                                &cfg->plugin_dirs, d);
}

static int do_default_policy(struct ebb__config *cfg,
                             const struct ebb__ynode *n, struct ebb_diag *d)
{
    int rc = ebb__yread_scalar(n, "default_policy", "a policy name", d);
    if (rc != 0)
        return rc;
    if (n->len == 0) {
        ebb_diag_set(d, n->file, n->line,
                      "default_policy: empty (example: uniform-progress)");
        return EBB_ECONFIG;
    }
    cfg->default_policy_line = n->line;
    return set_string(&cfg->default_policy, n->value, d);
}

static int check_name(const struct ebb__ynode *key, const char *what,
                      struct ebb_diag *d)
{
    if (ebb__yread_name_valid(key->value, key->len))
        return 0;
    char q[EBB_DIAG_QUOTE_SIZE];
    ebb_diag_set(d, key->file, key->line,
                  "%s: %s is not a valid name (1 to 64 letters, digits, - "
                  "and _)", what, ebb__yread_quote(key, q, sizeof(q)));
    return EBB_ECONFIG;
}

static int do_sections(const struct ebb__ynode *n, const char *what,
                       struct ebb__config_section **out, size_t *n_out,
                       struct ebb_diag *d)
{
    int rc = ebb__yread_expect_map(n, what, d);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n->n; i++) {
        rc = check_name(n->keys[i], what, d);
        if (rc != 0)
            return rc;
        const struct ebb__ynode *v = n->items[i];
        if (!ebb__ynode_is_null(v) && v->kind != EBB__YMAP) {
            ebb_diag_set(d, v->file, v->line,
                          "%s.%s: expected a mapping of keys, not %s", what,
                          n->keys[i]->value, ebb__ykind_name(v->kind));
            return EBB_ECONFIG;
        }
    }
    if (n->n == 0)
        return 0;
    struct ebb__config_section *s = calloc(n->n, sizeof(*s));
    if (s == NULL)
        return ebb__yread_nomem(d);
    *out = s;
    for (size_t i = 0; i < n->n; i++) {
        s[i].name = strdup(n->keys[i]->value);
        if (s[i].name == NULL)
            return ebb__yread_nomem(d);
        s[i].line = n->keys[i]->line;
        s[i].node = n->items[i];
        *n_out = i + 1;
    }
    return 0;
}

static int do_providers(struct ebb__config *cfg, const struct ebb__ynode *n,
                        struct ebb_diag *d)
{
    return do_sections(n, "providers", &cfg->providers, &cfg->n_providers, d);
}

static int do_policies(struct ebb__config *cfg, const struct ebb__ynode *n,
                       struct ebb_diag *d)
{
    return do_sections(n, "policies", &cfg->policies, &cfg->n_policies, d);
}

static int do_teams(struct ebb__config *cfg, const struct ebb__ynode *n,
                    struct ebb_diag *d)
{
    int rc = ebb__yread_expect_map(n, "teams", d);
    if (rc != 0 || n->n == 0)
        return rc;
    cfg->teams = calloc(n->n, sizeof(*cfg->teams));
    if (cfg->teams == NULL)
        return ebb__yread_nomem(d);
    for (size_t i = 0; i < n->n; i++) {
        const struct ebb__ynode *key = n->keys[i];
        rc = check_name(key, "teams", d);
        if (rc != 0)
            return rc;
        char what[128];
        snprintf(what, sizeof(what), "teams.%s", key->value);
        struct ebb__ynode rest;
        rc = ebb__config_team_split(n->items[i], what, &rest, d);
        if (rc != 0)
            return rc;
        void *raw;
        rc = ebb__cfg_apply(team_keys, sizeof(struct team_cfg), &rest, what,
                            &raw, d);
        ebb__config_team_split_free(&rest);
        if (rc != 0)
            return rc;
        struct team_cfg *tc = raw;
        struct ebb__team *t = &cfg->teams[cfg->n_teams++];
        t->line = key->line;
        t->members = tc->members;
        tc->members = (struct ebb_string_list){0, NULL};
        t->admins = tc->admins;
        tc->admins = (struct ebb_string_list){0, NULL};
        ebb__cfg_free(team_keys, tc);
        t->name = strdup(key->value);
        if (t->name == NULL)
            return ebb__yread_nomem(d);
        rc = ebb__config_team_limits(t, n->items[i], what, d);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int do_admins(struct ebb__config *cfg, const struct ebb__ynode *n,
                     struct ebb_diag *d)
{
    return ebb__cfg_parse_value(EBB_CFG_STRING_LIST, n, "admins",
                                &cfg->admins, d);
}

/* The most USD one unit of a currency may be worth: with amounts of at
 * most EBB_MONEY_MAX, a converted amount stays inside int64 micro-units. */
#define RATE_MAX_USD 1000000

/* A rate is a plain decimal with up to 9 decimals, kept exact as an
 * integer count of billionths of a dollar, at most RATE_MAX_USD. */
static int parse_rate(const char *s, int64_t *out)
{
    int64_t whole = 0, frac = 0;
    int digits = 0, fdigits = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        if (whole > RATE_MAX_USD)
            return EBB_EINVAL;
        whole = whole * 10 + (*s - '0');
    }
    if (*s == '.') {
        s++;
        for (; *s >= '0' && *s <= '9'; s++, fdigits++) {
            if (fdigits >= 9)
                return EBB_EINVAL;
            frac = frac * 10 + (*s - '0');
        }
        if (fdigits == 0)
            return EBB_EINVAL;
    }
    if (digits == 0 || *s != '\0')
        return EBB_EINVAL;
    for (int i = fdigits; i < 9; i++)
        frac *= 10;
    int64_t v = whole * 1000000000 + frac;
    if (v <= 0 || v > (int64_t)RATE_MAX_USD * 1000000000)
        return EBB_EINVAL;
    *out = v;
    return 0;
}

static int do_currency_rates(struct ebb__config *cfg,
                             const struct ebb__ynode *n, struct ebb_diag *d)
{
    int rc = ebb__yread_expect_map(n, "currency_rates", d);
    if (rc != 0 || n->n == 0)
        return rc;
    cfg->rates = calloc(n->n, sizeof(*cfg->rates));
    if (cfg->rates == NULL)
        return ebb__yread_nomem(d);
    for (size_t i = 0; i < n->n; i++) {
        const struct ebb__ynode *key = n->keys[i];
        const struct ebb__ynode *v = n->items[i];
        char q[EBB_DIAG_QUOTE_SIZE];
        int code = key->len == 3;
        for (size_t j = 0; code && j < 3; j++)
            code = key->value[j] >= 'A' && key->value[j] <= 'Z';
        if (!code) {
            ebb_diag_set(d, key->file, key->line,
                          "currency_rates: %s is not a currency code (3 "
                          "upper-case letters; example: CNY)",
                          ebb__yread_quote(key, q, sizeof(q)));
            return EBB_ECONFIG;
        }
        if (strcmp(key->value, "USD") == 0) {
            ebb_diag_set(d, key->file, key->line,
                          "currency_rates.USD: rates are in USD already; "
                          "remove this line");
            return EBB_ECONFIG;
        }
        char what[32];
        snprintf(what, sizeof(what), "currency_rates.%s", key->value);
        rc = ebb__yread_scalar(v, what, "a rate", d);
        if (rc != 0)
            return rc;
        struct ebb__currency_rate *r = &cfg->rates[cfg->n_rates];
        if (parse_rate(v->value, &r->usd_e9) != 0) {
            ebb_diag_set(d, v->file, v->line,
                          "%s: %s is not a rate (USD for 1 %s, a positive "
                          "decimal up to %d with at most 9 decimals; "
                          "example: 0.14)",
                          what, ebb__yread_quote(v, q, sizeof(q)), key->value,
                          RATE_MAX_USD);
            return EBB_ECONFIG;
        }
        memcpy(r->currency, key->value, 4);
        r->line = key->line;
        cfg->n_rates++;
    }
    return 0;
}

/* Monthly or reserved plans, for the reports' plan advice. */
static int do_plans(struct ebb__config *cfg, const struct ebb__ynode *n,
                    struct ebb_diag *d)
{
    return ebb__plans_load(n, &cfg->plans, &cfg->n_plans, d);
}

/* Checkpoint stores (docs/stores.md). */
static int do_stores(struct ebb__config *cfg, const struct ebb__ynode *n,
                     struct ebb_diag *d)
{
    return ebb__stores_load(n, &cfg->stores, &cfg->n_stores, d);
}

static const struct {
    const char *key;
    int (*apply)(struct ebb__config *, const struct ebb__ynode *,
                 struct ebb_diag *);
} top_keys[] = {
    {"log_level", do_log_level},
    {"plugin_dirs", do_plugin_dirs},
    {"api", ebb__config_do_api},
    {"agent_api", ebb__config_do_agent_api},
    {"metrics", ebb__config_do_metrics},
    {"default_policy", do_default_policy},
    {"providers", do_providers},
    {"policies", do_policies},
    {"teams", do_teams},
    {"admins", do_admins},
    {"currency_rates", do_currency_rates},
    {"clock", ebb__config_do_clock},
    {"run_on", ebb__config_do_run_on},
    {"plans", do_plans},
    {"stores", do_stores},
    {"notify", ebb__config_do_notify},
};
#define N_TOP_KEYS (sizeof(top_keys) / sizeof(top_keys[0]))

static int build(struct ebb__config *cfg, struct ebb_diag *d)
{
    const struct ebb__ynode *root = ebb__ydoc_root(cfg->doc);
    cfg->log_level = EBB_LOG_INFO;
    cfg->clock_speed = 1.0;
    if (ebb__ynode_is_null(root)) {
        root = NULL;
    } else if (root->kind != EBB__YMAP) {
        ebb_diag_set(d, root->file, root->line,
                      "expected a mapping of settings (key: value), not %s",
                      ebb__ykind_name(root->kind));
        return EBB_ECONFIG;
    }
    const char *known[N_TOP_KEYS + 1];
    for (size_t i = 0; i < N_TOP_KEYS; i++)
        known[i] = top_keys[i].key;
    known[N_TOP_KEYS] = NULL;
    int rc = ebb__yread_check_keys(root, known, NULL, d);
    if (rc != 0)
        return rc;
    /* api and agent_api run even when absent, so their tables supply the
     * defaults; other keys are skipped when absent or null. */
    for (size_t i = 0; rc == 0 && i < N_TOP_KEYS; i++) {
        const struct ebb__ynode *v = ebb__ymap_get(root, top_keys[i].key);
        int sub = top_keys[i].apply == ebb__config_do_api ||
                  top_keys[i].apply == ebb__config_do_agent_api;
        if (ebb__ynode_is_null(v) && !sub)
            continue;
        rc = top_keys[i].apply(cfg, ebb__ynode_is_null(v) ? NULL : v, d);
    }
    if (rc == 0 && cfg->default_policy == NULL)
        rc = set_string(&cfg->default_policy, "renewal", d);
    return rc;
}

static int finish_load(struct ebb__ydoc *doc, struct ebb__config **out,
                       struct ebb_diag *d)
{
    struct ebb__config *cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL) {
        ebb__ydoc_free(doc);
        return ebb__yread_nomem(d);
    }
    cfg->doc = doc;
    cfg->file = ebb__ydoc_name(doc);
    int rc = build(cfg, d);
    if (rc != 0) {
        ebb__config_free(cfg);
        return rc;
    }
    *out = cfg;
    return 0;
}

int ebb__config_load_buffer(const char *name, const char *buf, size_t len,
                            struct ebb__config **out, struct ebb_diag *d)
{
    *out = NULL;
    struct ebb__ydoc *doc;
    int rc = ebb__ydoc_load_buffer(name, buf, len, &doc, d);
    if (rc != 0)
        return rc;
    return finish_load(doc, out, d);
}

int ebb__config_load_file(const char *path, struct ebb__config **out,
                          struct ebb_diag *d)
{
    *out = NULL;
    struct ebb__ydoc *doc;
    int rc = ebb__ydoc_load_file(path, &doc, d);
    if (rc != 0)
        return rc;
    return finish_load(doc, out, d);
}

int ebb__config_load_default(const char *state_dir, struct ebb__config **out,
                             struct ebb_diag *d)
{
    char *data = ebb__data_dir();
    struct ebb_buf text = {0};
    const char *s = default_text;
    for (const char *at = strpbrk(s, "@"); data != NULL && at != NULL; at = strpbrk(s, "@")) {
        const char *value = strncmp(at, "@DATA@", 6) == 0    ? data
                            : strncmp(at, "@STATE@", 7) == 0 ? state_dir
                                                             : "@";
        ebb_buf_append(&text, s, (size_t)(at - s));
        ebb_buf_puts(&text, value);
        s = at + (value == data ? 6 : value == state_dir ? 7 : 1);
    }
    ebb_buf_puts(&text, s);
    free(data);
    int rc = data == NULL || text.failed
                 ? ebb__yread_nomem(d)
                 : ebb__config_load_buffer(DEFAULT_NAME, text.data, text.len, out, d);
    ebb_buf_free(&text);
    return rc;
}

const char *ebb__config_default_text(void)
{
    return default_text;
}

static void free_sections(struct ebb__config_section *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(s[i].name);
    free(s);
}

void ebb__config_free(struct ebb__config *cfg)
{
    if (cfg == NULL)
        return;
    ebb__string_list_free(&cfg->plugin_dirs);
    free(cfg->api_socket_group);
    free(cfg->agent_listen);
    free(cfg->agent_url);
    free(cfg->agent_tls_cert);
    free(cfg->agent_tls_key);
    free(cfg->agent_tls_ca);
    free(cfg->metrics_listen);
    for (size_t i = 0; i < cfg->n_run_on; i++) {
        free(cfg->run_on[i].market);
        free(cfg->run_on[i].runner);
    }
    free(cfg->run_on);
    free(cfg->default_policy);
    free_sections(cfg->providers, cfg->n_providers);
    free_sections(cfg->policies, cfg->n_policies);
    for (size_t i = 0; i < cfg->n_teams; i++) {
        free(cfg->teams[i].name);
        ebb__string_list_free(&cfg->teams[i].members);
        ebb__string_list_free(&cfg->teams[i].admins);
        ebb__config_team_limits_free(&cfg->teams[i]);
    }
    free(cfg->teams);
    ebb__string_list_free(&cfg->admins);
    free(cfg->rates);
    ebb__plans_free(cfg->plans, cfg->n_plans);
    ebb__stores_free(cfg->stores, cfg->n_stores);
    ebb__notify_config_free(&cfg->notify);
    ebb__ydoc_free(cfg->doc);
    free(cfg);
}

static const struct ebb__config_section *
find_section(const struct ebb__config_section *s, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(s[i].name, name) == 0)
            return &s[i];
    }
    return NULL;
}

const struct ebb__config_section *
ebb__config_provider(const struct ebb__config *cfg, const char *name)
{
    return find_section(cfg->providers, cfg->n_providers, name);
}

const struct ebb__config_section *
ebb__config_policy(const struct ebb__config *cfg, const char *name)
{
    return find_section(cfg->policies, cfg->n_policies, name);
}

const struct ebb__team *ebb__config_team(const struct ebb__config *cfg,
                                         const char *name)
{
    for (size_t i = 0; i < cfg->n_teams; i++) {
        if (strcmp(cfg->teams[i].name, name) == 0)
            return &cfg->teams[i];
    }
    return NULL;
}
