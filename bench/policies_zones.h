/* bench-policies --cbl, the multi-zone case (bench/policies_zones.c). */
#ifndef EBB_BENCH_POLICIES_ZONES_H
#define EBB_BENCH_POLICIES_ZONES_H

#include <stddef.h>

#include <ebb/trace.h>

#include "cbl_window.h"

/* A trace of the harness (its pools' provider column) and renewal's
 * settings for windows of its pools: the prior fitted on the other
 * traces and its weight chosen on them. */
struct cbl_fold {
    char name[32];
    char yaml[320];
};

/* The index of the fold named `name` among folds[0..n), or -1. */
int cbl_fold_of(const struct cbl_fold *folds, size_t n, const char *name);

/* Runs the multi-zone case over every setting and prints its figures:
 * each group of pools of one trace and one GPU configuration in several
 * zones is one job's spot market, a window every `every_h` hours from
 * the group's first row. Returns 0, or 1 when a run failed. */
int cbl_zones(const struct ebb_avail_trace *t, const struct cbl_fold *folds,
              size_t n_folds, const struct cbl_setting *settings, size_t n_settings,
              double every_h, int verbose, const struct cbl_files *f);

#endif
