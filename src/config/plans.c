/* Reading the plans: section of ebb.yaml into struct ebb__plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cfg_table.h"
#include "base/yaml_read.h"
#include "config/plans.h"

struct plan_cfg {
    char *provider, *region, *instance_type;
    struct ebb_money price;
    ebb_dur_ms period, covers;
};

static const struct ebb_cfg_key plan_keys[] = {
    {"provider", EBB_CFG_STRING, NULL, offsetof(struct plan_cfg, provider),
     "whose instances the plan covers (e.g. aws); required"},
    {"region", EBB_CFG_STRING, NULL, offsetof(struct plan_cfg, region),
     "only instances in this region; default any"},
    {"instance_type", EBB_CFG_STRING, NULL,
     offsetof(struct plan_cfg, instance_type),
     "only this instance type; default any"},
    {"price", EBB_CFG_MONEY, NULL, offsetof(struct plan_cfg, price),
     "what the plan costs per period (e.g. 1500 USD); required"},
    {"period", EBB_CFG_DURATION, "30d", offsetof(struct plan_cfg, period),
     "how often the price is paid"},
    {"covers", EBB_CFG_DURATION, NULL, offsetof(struct plan_cfg, covers),
     "instance time included per period; default the whole period (one "
     "instance always on)"},
    EBB_CFG_END,
};

/* Shorter periods would make "every period" a test of hours, not usage. */
#define MIN_PERIOD EBB_MS_PER_HOUR

static char *take(char **s)
{
    char *v = *s;
    *s = NULL;
    return v;
}

int ebb__plans_load(const struct ebb__ynode *node, struct ebb__plan **out,
                    size_t *n, struct ebb_diag *d)
{
    *out = NULL;
    *n = 0;
    if (node == NULL || ebb__ynode_is_null(node))
        return 0;
    int rc = ebb__yread_expect_map(node, "plans", d);
    if (rc != 0 || node->n == 0)
        return rc;
    struct ebb__plan *plans = calloc(node->n, sizeof(*plans));
    if (plans == NULL)
        return ebb__yread_nomem(d);
    size_t count = 0;
    for (size_t i = 0; rc == 0 && i < node->n; i++) {
        const struct ebb__ynode *key = node->keys[i];
        char what[128];
        snprintf(what, sizeof(what), "plans.%s", key->value);
        void *raw = NULL;
        rc = ebb__cfg_apply(plan_keys, sizeof(struct plan_cfg), node->items[i],
                            what, &raw, d);
        if (rc != 0)
            break;
        struct plan_cfg *c = raw;
        if (c->provider == NULL || c->provider[0] == '\0')
            ebb_diag_set(d, key->file, key->line, "%s: provider is required "
                          "(e.g. provider: aws)", what), rc = EBB_ECONFIG;
        else if (c->price.currency[0] == '\0' || c->price.amount < 0)
            ebb_diag_set(d, key->file, key->line, "%s: price is required "
                          "(what the plan costs per period, e.g. 1500 USD)",
                          what), rc = EBB_ECONFIG;
        else if (c->period < MIN_PERIOD)
            ebb_diag_set(d, key->file, key->line, "%s: period must be at "
                          "least 1h (e.g. 30d)", what), rc = EBB_ECONFIG;
        else if (c->covers < 0)
            ebb_diag_set(d, key->file, key->line, "%s: covers must not be "
                          "negative", what), rc = EBB_ECONFIG;
        if (rc == 0) {
            struct ebb__plan *p = &plans[count++];
            p->name = strdup(key->value);
            p->line = key->line;
            p->provider = take(&c->provider);
            p->region = take(&c->region);
            p->instance_type = take(&c->instance_type);
            p->price = c->price;
            p->period = c->period;
            p->covers = c->covers > 0 ? c->covers : c->period;
            if (p->name == NULL)
                rc = ebb__yread_nomem(d);
        }
        ebb__cfg_free(plan_keys, c);
    }
    if (rc != 0) {
        ebb__plans_free(plans, count);
        return rc;
    }
    *out = plans;
    *n = count;
    return 0;
}

void ebb__plans_free(struct ebb__plan *plans, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(plans[i].name);
        free(plans[i].provider);
        free(plans[i].region);
        free(plans[i].instance_type);
    }
    free(plans);
}
