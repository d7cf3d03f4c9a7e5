/* Fuzz target: ebb.yaml loading, plus a plugin table applied to every
 * provider section, plus the unit parsers on every scalar found there.
 * Built as a libFuzzer target (-Dfuzz=libfuzzer) or replayed over the
 * checked-in corpus by standalone.c (-Dfuzz=standalone). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/cfg_table.h"
#include "config/config_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sample {
    char *endpoint;
    int64_t count;
    double ratio;
    int flag;
    ebb_dur_ms every;
    struct ebb_money budget;
    struct ebb_string_list regions;
};

static const struct ebb_cfg_key sample_keys[] = {
    {"endpoint", EBB_CFG_STRING, "https://example.com",
     offsetof(struct sample, endpoint), ""},
    {"count", EBB_CFG_INT, "3", offsetof(struct sample, count), ""},
    {"ratio", EBB_CFG_DOUBLE, "0.5", offsetof(struct sample, ratio), ""},
    {"flag", EBB_CFG_BOOL, "true", offsetof(struct sample, flag), ""},
    {"every", EBB_CFG_DURATION, "5m", offsetof(struct sample, every), ""},
    {"budget", EBB_CFG_MONEY, "10 USD", offsetof(struct sample, budget), ""},
    {"regions", EBB_CFG_STRING_LIST, "[a, b]",
     offsetof(struct sample, regions), ""},
    EBB_CFG_END,
};

/* Parsing what a formatter wrote must give back the same value. */
static void check_units(const char *s)
{
    char buf[64];
    ebb_dur_ms dur, dur2;
    if (ebb_parse_duration(s, &dur) == 0) {
        ebb_format_duration(dur, buf, sizeof(buf));
        if (ebb_parse_duration(buf, &dur2) != 0 || dur2 != dur)
            abort();
    }
    struct ebb_money m, m2;
    if (ebb_parse_money(s, &m) == 0) {
        ebb_format_money(m.amount, m.currency, buf, sizeof(buf));
        if (ebb_parse_money(buf, &m2) != 0 || m2.amount != m.amount ||
            strcmp(m2.currency, m.currency) != 0)
            abort();
    }
    ebb_time_ms t, t2;
    if (ebb_parse_time(s, &t) == 0) {
        ebb_format_time(t, buf, sizeof(buf));
        if (ebb_parse_time(buf, &t2) != 0 || t2 != t)
            abort();
    }
}

static void walk(const struct ebb__ynode *n)
{
    if (n == NULL)
        return;
    if (n->kind == EBB__YSCALAR) {
        check_units(n->value);
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        if (n->keys != NULL)
            walk(n->keys[i]);
        walk(n->items[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Short inputs also go to the unit parsers directly. */
    if (size < 64) {
        char s[64];
        memcpy(s, data, size);
        s[size] = '\0';
        check_units(s);
    }

    struct ebb_diag d;
    struct ebb__config *cfg;
    if (ebb__config_load_buffer("ebb.yaml", (const char *)data, size, &cfg,
                                &d) != 0) {
        /* Every failure must come with a message. */
        if (d.msg[0] == '\0')
            abort();
        return 0;
    }
    for (size_t i = 0; i < cfg->n_providers; i++) {
        void *raw;
        if (ebb__cfg_apply(sample_keys, sizeof(struct sample),
                           cfg->providers[i].node, "providers.x", &raw,
                           &d) == 0)
            ebb__cfg_free(sample_keys, raw);
        else if (d.msg[0] == '\0')
            abort();
        walk(cfg->providers[i].node);
    }
    ebb__config_free(cfg);
    return 0;
}
