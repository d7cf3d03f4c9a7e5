#include "market/catalog.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ebb/trace.h>

#include "base/csv.h"

static const char *const columns[] = {
    "provider", "region", "instance_type", "on_demand_usd_per_hour",
    "gpus",     "gpu_model", "vcpus",     "memory_gb",
};
enum { N_REQUIRED = 8 };

/* The optional columns, after the required ones, in any order. */
enum optional { OPT_SPEED, OPT_SOURCE, OPT_NETWORK, N_OPTIONAL };
static const char *const optional_columns[N_OPTIONAL] = {
    [OPT_SPEED] = "speed", [OPT_SOURCE] = "source", [OPT_NETWORK] = "network_gbps",
};

#define HEADER                                                              \
    "provider,region,instance_type,on_demand_usd_per_hour,gpus,gpu_model,"  \
    "vcpus,memory_gb[,speed][,source][,network_gbps]"

/* Where the optional columns are in this file; -1 when absent. */
struct layout {
    size_t n_column;
    int at[N_OPTIONAL];
};

static int optional_column(const char *name)
{
    for (int k = 0; k < N_OPTIONAL; k++)
        if (strcmp(name, optional_columns[k]) == 0)
            return k;
    return -1;
}

static int check_header(struct ebb__csv *c, struct layout *lay,
                        struct ebb_diag *d)
{
    char q[EBB_DIAG_QUOTE_SIZE];
    for (int k = 0; k < N_OPTIONAL; k++)
        lay->at[k] = -1;
    lay->n_column = c->n_field;
    if (c->n_field < N_REQUIRED || c->n_field > N_REQUIRED + N_OPTIONAL) {
        ebb_diag_set(d, c->name, c->line,
                      "header has %zu columns, expected %d to %d; a catalog "
                      "starts with the line " HEADER,
                      c->n_field, N_REQUIRED, N_REQUIRED + N_OPTIONAL);
        return EBB_EINVAL;
    }
    for (size_t i = 0; i < c->n_field; i++) {
        const char *f = c->field[i];
        if (i < N_REQUIRED && strcmp(f, columns[i]) == 0)
            continue;
        int k = i >= N_REQUIRED ? optional_column(f) : -1;
        if (k >= 0 && lay->at[k] < 0) {
            lay->at[k] = (int)i;
            continue;
        }
        ebb_diag_set(d, c->name, c->line,
                      "column %zu of the header is %s, expected %s; a "
                      "catalog starts with the line " HEADER,
                      i + 1, ebb_diag_quote(f, strlen(f), q, sizeof(q)),
                      i < N_REQUIRED ? columns[i]
                                     : "speed, source or network_gbps");
        return EBB_EINVAL;
    }
    return 0;
}

static int parse_int(const char *s, int32_t *out)
{
    int64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX)
            return EBB_EINVAL;
    }
    if (p == s || *p != '\0')
        return EBB_EINVAL;
    *out = (int32_t)v;
    return 0;
}

/* Parses the decimal with the price parser (exact, locale-free) and
 * converts: memory and speed need no more than 6 decimals. */
static int parse_real(const char *s, double *out, const char **why)
{
    ebb_micros m;
    if (ebb_parse_decimal_micros(s, &m, why) != 0)
        return EBB_EINVAL;
    *out = (double)m / (double)EBB_MICROS_PER_UNIT;
    return 0;
}

static void entry_free(struct ebb__catalog_entry *e)
{
    free(e->provider);
    free(e->region);
    free(e->instance_type);
    free(e->gpu_model);
    free(e->source);
}

static int bad(struct ebb__csv *c, struct ebb_diag *d, const char *column,
               const char *value, const char *what)
{
    char q[EBB_DIAG_QUOTE_SIZE];
    ebb_diag_set(d, c->name, c->line, "%s: %s %s", column,
                  ebb_diag_quote(value, strlen(value), q, sizeof(q)), what);
    return EBB_EINVAL;
}

static int read_row(struct ebb__csv *c, const struct layout *lay,
                    struct ebb__catalog_entry *e, struct ebb_diag *d)
{
    char **f = c->field;
    const char *why = NULL;
    memset(e, 0, sizeof(*e));
    if (c->n_field != lay->n_column) {
        ebb_diag_set(d, c->name, c->line,
                      "%zu fields, expected %zu as in the header", c->n_field,
                      lay->n_column);
        return EBB_EINVAL;
    }
    if (f[0][0] == '\0') {
        ebb_diag_set(d, c->name, c->line, "provider is empty");
        return EBB_EINVAL;
    }
    if (f[2][0] == '\0') {
        ebb_diag_set(d, c->name, c->line, "instance_type is empty");
        return EBB_EINVAL;
    }
    if (ebb_parse_decimal_micros(f[3], &e->on_demand, &why) != 0)
        return bad(c, d, "on_demand_usd_per_hour", f[3],
                   why); /* e.g. "is not a number" */
    if (parse_int(f[4], &e->gpus) != 0)
        return bad(c, d, "gpus", f[4], "is not a whole number >= 0");
    if (e->gpus > 0 && f[5][0] == '\0') {
        ebb_diag_set(d, c->name, c->line,
                      "gpu_model is empty but gpus is %d (name the model, "
                      "like V100)",
                      (int)e->gpus);
        return EBB_EINVAL;
    }
    if (f[6][0] != '\0' && parse_int(f[6], &e->vcpus) != 0)
        return bad(c, d, "vcpus", f[6],
                   "is not a whole number >= 0 (or empty: unknown)");
    if (f[7][0] != '\0' && parse_real(f[7], &e->memory_gb, &why) != 0)
        return bad(c, d, "memory_gb", f[7], why);
    e->speed = 1.0;
    if (lay->at[OPT_SPEED] >= 0 && f[lay->at[OPT_SPEED]][0] != '\0') {
        const char *s = f[lay->at[OPT_SPEED]];
        if (parse_real(s, &e->speed, &why) != 0)
            return bad(c, d, "speed", s, why);
        if (e->speed <= 0)
            return bad(c, d, "speed", s,
                       "must be greater than 0 (1.0 = one V100)");
    }
    if (lay->at[OPT_NETWORK] >= 0 && f[lay->at[OPT_NETWORK]][0] != '\0') {
        const char *s = f[lay->at[OPT_NETWORK]];
        if (parse_real(s, &e->network_gbps, &why) != 0)
            return bad(c, d, "network_gbps", s, why);
        if (e->network_gbps <= 0)
            return bad(c, d, "network_gbps", s,
                       "must be greater than 0 (or empty: unknown)");
    }
    e->line = c->line;
    e->provider = strdup(f[0]);
    e->region = strdup(f[1]);
    e->instance_type = strdup(f[2]);
    e->gpu_model = strdup(f[5]);
    e->source = strdup(lay->at[OPT_SOURCE] >= 0 ? f[lay->at[OPT_SOURCE]] : "");
    if (e->provider == NULL || e->region == NULL ||
        e->instance_type == NULL || e->gpu_model == NULL ||
        e->source == NULL) {
        entry_free(e);
        return EBB_ENOMEM;
    }
    return 0;
}

static int cmp_key(const struct ebb__catalog_entry *e, const char *provider,
                   const char *region, const char *instance_type)
{
    int c = strcmp(e->provider, provider);
    if (c == 0)
        c = strcmp(e->region, region);
    if (c == 0)
        c = strcmp(e->instance_type, instance_type);
    return c;
}

/* Sorts by key; equal keys by line so that duplicates are reported in file
 * order. */
static int cmp_entry(const void *pa, const void *pb)
{
    const struct ebb__catalog_entry *a = pa, *b = pb;
    int c = cmp_key(a, b->provider, b->region, b->instance_type);
    if (c != 0)
        return c;
    return (a->line > b->line) - (a->line < b->line);
}

static int read_all(struct ebb__csv *c, struct ebb__catalog *cat,
                    struct ebb_diag *d)
{
    struct layout lay;
    int rc = ebb__csv_next(c, d);
    if (rc == 0) {
        ebb_diag_set(d, c->name, 0,
                      "file is empty; a catalog starts with the line " HEADER);
        return EBB_EINVAL;
    }
    if (rc < 0)
        return rc;
    rc = check_header(c, &lay, d);
    size_t cap = 0;
    while (rc == 0) {
        rc = ebb__csv_next(c, d);
        if (rc <= 0)
            break;
        if (cat->n_entry == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            struct ebb__catalog_entry *bigger =
                realloc(cat->entry, ncap * sizeof(*bigger));
            if (bigger == NULL)
                return EBB_ENOMEM;
            cat->entry = bigger;
            cap = ncap;
        }
        rc = read_row(c, &lay, &cat->entry[cat->n_entry], d);
        if (rc == 0)
            cat->n_entry++;
    }
    return rc;
}

int ebb__catalog_load(const char *path, struct ebb__catalog **out,
                      struct ebb_diag *d)
{
    struct ebb__csv c;
    int rc = ebb__csv_open(&c, path, d);
    if (rc != 0)
        return rc;
    struct ebb__catalog *cat = calloc(1, sizeof(*cat));
    if (cat == NULL) {
        ebb__csv_close(&c);
        return EBB_ENOMEM;
    }
    cat->path = strdup(path);
    rc = cat->path == NULL ? EBB_ENOMEM : read_all(&c, cat, d);
    if (rc == 0 && cat->n_entry > 0) {
        qsort(cat->entry, cat->n_entry, sizeof(*cat->entry), cmp_entry);
        for (size_t i = 1; i < cat->n_entry; i++) {
            const struct ebb__catalog_entry *a = &cat->entry[i - 1];
            const struct ebb__catalog_entry *b = &cat->entry[i];
            if (cmp_key(a, b->provider, b->region, b->instance_type) == 0) {
                ebb_diag_set(d, path, b->line,
                              "%s/%s/%s is already listed on line %d; keep "
                              "one row per provider, region and "
                              "instance_type",
                              b->provider, b->region, b->instance_type,
                              a->line);
                rc = EBB_EINVAL;
                break;
            }
        }
    }
    ebb__csv_close(&c);
    if (rc != 0) {
        ebb__catalog_free(cat);
        return rc;
    }
    *out = cat;
    return 0;
}

void ebb__catalog_free(struct ebb__catalog *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_entry; i++)
        entry_free(&c->entry[i]);
    free(c->entry);
    free(c->path);
    free(c);
}

static const struct ebb__catalog_entry *
find_exact(const struct ebb__catalog *c, const char *provider,
           const char *region, const char *instance_type)
{
    size_t lo = 0, hi = c->n_entry;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_key(&c->entry[mid], provider, region, instance_type) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < c->n_entry &&
        cmp_key(&c->entry[lo], provider, region, instance_type) == 0)
        return &c->entry[lo];
    return NULL;
}

const struct ebb__catalog_entry *
ebb__catalog_find(const struct ebb__catalog *c, const char *provider,
                  const char *region, const char *instance_type)
{
    if (region != NULL && region[0] != '\0') {
        const struct ebb__catalog_entry *e =
            find_exact(c, provider, region, instance_type);
        if (e != NULL)
            return e;
    }
    return find_exact(c, provider, "", instance_type);
}

/* Speed of one GPU of `model`: from the first catalog entry with it. */
static double speed_per_gpu(const struct ebb__catalog *c, const char *model)
{
    for (size_t i = 0; c != NULL && model[0] != '\0' && i < c->n_entry; i++) {
        const struct ebb__catalog_entry *e = &c->entry[i];
        if (e->gpus > 0 && strcasecmp(e->gpu_model, model) == 0)
            return e->speed / e->gpus;
    }
    return 1.0;
}

struct ebb__catalog_entry *
ebb__catalog_entry_from_shape(const struct ebb__catalog *c, const char *provider,
                              const char *region, const char *instance_type,
                              const struct ebb_shape *shape)
{
    struct ebb__catalog_entry *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return NULL;
    const char *model = shape->gpu_model ? shape->gpu_model : "";
    e->provider = strdup(provider);
    e->region = strdup(region ? region : "");
    e->instance_type = strdup(instance_type);
    e->gpu_model = strdup(model);
    e->source = strdup("offer");
    e->gpus = (int32_t)shape->gpu_count;
    e->vcpus = (int32_t)shape->vcpus;
    e->memory_gb = shape->memory_gb;
    e->gpu_memory_gb = shape->gpu_memory_gb;
    e->speed = shape->gpu_count > 0 ? speed_per_gpu(c, model) * shape->gpu_count : 1.0;
    if (!e->provider || !e->region || !e->instance_type || !e->gpu_model || !e->source) {
        ebb__catalog_entry_free(e);
        return NULL;
    }
    return e;
}

void ebb__catalog_entry_free(struct ebb__catalog_entry *e)
{
    if (e == NULL)
        return;
    entry_free(e);
    free(e);
}
