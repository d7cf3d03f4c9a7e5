/* What an ECS GPU instance type is, read from its name.
 *
 * ECS GPU types are named ecs.<family>-c<V>g<G>.<size>: V vCPUs for every
 * G GPUs, and a size of "large" (2 vCPUs), "xlarge" (4) or "<N>xlarge"
 * (4N). So ecs.gn6v-c8g1.2xlarge has 8 vCPUs and 8 * 1 / 8 = 1 GPU, and
 * ecs.gn6v-c8g1.16xlarge 64 vCPUs and 8 GPUs. The family says which GPU;
 * only families whose GPU is certain are listed. Memory is not in the
 * name and stays 0 (unknown).
 */
#include <stdlib.h>
#include <string.h>

#include "alibaba.h"

static const struct {
    const char *family;
    const char *gpu_model;
    double gpu_memory_gb;
} families[] = {
    {"gn5", "P100", 16},
    {"gn6v", "V100", 16},
    {"gn6e", "V100_32GB", 32},
    {"gn6i", "T4", 16},
    {"gn7i", "A10", 24},
};

/* Reads a decimal number at *p; 0 when there is none. */
static unsigned long number_at(const char **p)
{
    char *end;
    unsigned long v = strtoul(*p, &end, 10);
    if (end == *p)
        return 0;
    *p = end;
    return v;
}

int ali_shape_of(const char *instance_type, struct ebb_shape *out)
{
    if (strncmp(instance_type, "ecs.", 4) != 0)
        return 0;
    const char *family = instance_type + 4;
    const char *dash = strchr(family, '-');
    const char *dot = dash ? strchr(dash, '.') : NULL;
    if (dash == NULL || dot == NULL || dash[1] != 'c')
        return 0;
    size_t k = 0, n_families = sizeof(families) / sizeof(families[0]);
    while (k < n_families && (strlen(families[k].family) != (size_t)(dash - family) ||
                              strncmp(families[k].family, family,
                                      (size_t)(dash - family)) != 0))
        k++;
    if (k == n_families)
        return 0;
    const char *p = dash + 2;
    unsigned long per_v = number_at(&p);
    if (*p++ != 'g')
        return 0;
    unsigned long per_g = number_at(&p);
    if (p != dot || per_v == 0 || per_g == 0)
        return 0;
    p = dot + 1;
    unsigned long vcpus;
    if (strcmp(p, "large") == 0) {
        vcpus = 2;
    } else if (strcmp(p, "xlarge") == 0) {
        vcpus = 4;
    } else {
        unsigned long mult = number_at(&p);
        if (mult == 0 || strcmp(p, "xlarge") != 0)
            return 0;
        vcpus = 4 * mult;
    }
    if (vcpus * per_g % per_v != 0 || vcpus * per_g / per_v == 0)
        return 0;
    *out = (struct ebb_shape){
        .struct_size = sizeof(struct ebb_shape),
        .gpu_model = families[k].gpu_model,
        .gpu_count = (uint32_t)(vcpus * per_g / per_v),
        .gpu_memory_gb = families[k].gpu_memory_gb,
        .vcpus = (uint32_t)vcpus,
        .memory_gb = 0,
        .machine_id = "",
    };
    return 1;
}
