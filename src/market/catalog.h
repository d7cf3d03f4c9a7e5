/* The instance catalog: what each instance type is (GPUs, CPUs, memory),
 * what it costs on demand, and how fast it trains relative to a reference.
 *
 * A CSV file (data/catalog.csv ships one) with the header
 *   provider,region,instance_type,on_demand_usd_per_hour,gpus,gpu_model,
 *   vcpus,memory_gb
 * optionally followed by `speed`, `source` and `network_gbps` columns, in
 * any order. `speed` is relative training throughput (the reference
 * instance, p3.2xlarge with one V100, is 1.0; 1.0 when the column is absent
 * or the field empty). `network_gbps` is the type's network bandwidth as
 * its provider publishes it, in Gbps (what a gang's nodes have between
 * them, read against a job's resources.network); an empty field, or no
 * column, is unknown (0). data/catalog.csv takes AWS's figures from the
 * "Network performance" column of the EC2 instance type pages (P2, P3;
 * "Up to 10 Gigabit" is 10), and leaves empty what is published only as a
 * word ("High": p2.xlarge) or not at all (Azure's NC sizes, marketplace
 * aggregates). An empty region makes a row apply to every region
 * that has no row of its own. vcpus and memory_gb may be empty (unknown, as
 * for marketplace offers priced per GPU), read as 0. Errors are reported as
 * "file:line: message".
 */
#ifndef EBB_CATALOG_H
#define EBB_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>
#include <ebb/diag.h>
#include <ebb/types.h>

struct ebb__catalog_entry {
    char *provider, *region, *instance_type; /* region may be "" */
    ebb_micros on_demand;  /* USD per hour */
    int32_t gpus;          /* 0 for none */
    char *gpu_model;       /* "V100", "K80"; "" without GPUs */
    int32_t vcpus;         /* 0: unknown */
    double memory_gb;      /* 0: unknown */
    double gpu_memory_gb;  /* per GPU; 0: unknown */
    double speed;          /* > 0; 1.0 = one V100 (p3.2xlarge) */
    double network_gbps;   /* published bandwidth, Gbps; 0: unknown */
    char *source;          /* where the price came from; "" when absent */
    int line;              /* line in the file, for messages */
};

struct ebb__catalog {
    char *path;
    struct ebb__catalog_entry *entry; /* sorted by (provider, region, type) */
    size_t n_entry;
};

/* Loads the catalog at `path` into a new *out (free it with
 * ebb__catalog_free()). Returns 0, or EBB_EINVAL / EBB_EIO / EBB_ENOMEM with
 * "file:line: message" in `d` (may be NULL); *out is untouched on failure.
 * Two rows with the same (provider, region, instance_type) are an error. */
int ebb__catalog_load(const char *path, struct ebb__catalog **out,
                      struct ebb_diag *d);

/* Frees a catalog. NULL is a no-op. */
void ebb__catalog_free(struct ebb__catalog *c);

/* The entry for (provider, region, instance_type): the row for that region,
 * else the row with an empty region, else NULL. `region` may be "" or NULL
 * (then only a row with an empty region matches). The pointer is borrowed
 * from `c`. */
const struct ebb__catalog_entry *
ebb__catalog_find(const struct ebb__catalog *c, const char *provider,
                  const char *region, const char *instance_type);

/* An entry for an offer that describes itself (a marketplace machine: see
 * struct ebb_shape), owned by the caller (ebb__catalog_entry_free). Its
 * speed is the catalog's speed per GPU of the same GPU model times the
 * count; 1.0 per GPU for a model the catalog does not list (`c` may be
 * NULL). No on-demand price. NULL when out of memory. */
struct ebb__catalog_entry *
ebb__catalog_entry_from_shape(const struct ebb__catalog *c, const char *provider,
                              const char *region, const char *instance_type,
                              const struct ebb_shape *shape);
void ebb__catalog_entry_free(struct ebb__catalog_entry *e);

#endif
