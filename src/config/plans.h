/* The plans: section of ebb.yaml: monthly or reserved plans that the
 * reports' plan advice (report/report_advice.c) weighs against what a team
 * actually paid. Parsed here, with the rest of ebb.yaml, so that the
 * configuration does not depend on the reports. */
#ifndef EBB_CONFIG_PLANS_H
#define EBB_CONFIG_PLANS_H

#include <stddef.h>

#include <ebb/common.h>
#include <ebb/diag.h>

#include "base/yaml_doc.h"

/* A monthly or reserved plan (the `plans:` section of ebb.yaml, see
 * report_advice.c): `price` buys `covers` of instance time on matching
 * instances every `period`. NULL region or instance_type match any. */
struct ebb__plan {
    char *name;
    int line;
    char *provider;
    char *region;
    char *instance_type;
    struct ebb_money price;
    ebb_dur_ms period;
    ebb_dur_ms covers;
};

/* Reads the plans: mapping (name -> settings) into a new array. Returns 0
 * (with *out NULL and *n 0 for an absent or empty section) or
 * EBB_ECONFIG / EBB_ENOMEM with "file:line: ..." in `d`. */
int ebb__plans_load(const struct ebb__ynode *node, struct ebb__plan **out,
                    size_t *n, struct ebb_diag *d);
void ebb__plans_free(struct ebb__plan *plans, size_t n);

#endif
