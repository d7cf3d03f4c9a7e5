/* Workload files for `ebb backtest --workload` (examples/jobs/
 * workload-small.yaml is an annotated one):
 *
 *   defaults:            # optional: keys every job gets unless it sets them
 *     restart_overhead: 10m
 *   jobs:
 *     - name: a
 *       submit: 2020-01-06T09:00:00Z
 *       ...
 *
 * The YAML document is freed before the loader returns: every job copies
 * what it needs, so a long backtest does not keep the text alive.
 */
#include "jobs/jobspec.h"

#include <stdlib.h>
#include <string.h>

static const char *const workload_keys[] = {"defaults", "jobs", NULL};

struct name_at {
    const char *name;
    int line;
    size_t index;
};

static int by_name(const void *a, const void *b)
{
    const struct name_at *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c != 0)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Sorting finds duplicates in O(n log n), which matters for workloads
 * generated from months of real submissions. The duplicate reported is
 * the one that comes first in the file. */
static int check_unique(const struct ebb__workload *w,
                        const struct ebb__ynode *jobs, struct ebb_diag *d)
{
    struct name_at *v = calloc(w->n, sizeof(*v));
    if (v == NULL)
        return ebb__yread_nomem(d);
    for (size_t i = 0; i < w->n; i++) {
        v[i].name = w->jobs[i].name;
        v[i].line = ebb__ymap_get(jobs->items[i], "name")->line;
        v[i].index = i;
    }
    qsort(v, w->n, sizeof(*v), by_name);
    const struct name_at *first = NULL, *second = NULL;
    for (size_t i = 1; i < w->n; i++) {
        if (strcmp(v[i - 1].name, v[i].name) != 0)
            continue;
        if (second == NULL || v[i].index < second->index) {
            first = &v[i - 1];
            second = &v[i];
        }
        /* Skip the rest of this group: its first pair decides. */
        while (i + 1 < w->n && strcmp(v[i].name, v[i + 1].name) == 0)
            i++;
    }
    int rc = 0;
    if (second != NULL) {
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_set(d, w->file, second->line,
                      "name: %s is already the name of the job at line %d; "
                      "job names must be unique in a workload",
                      ebb_diag_quote(second->name, strlen(second->name), q,
                                      sizeof(q)),
                      first->line);
        rc = EBB_ECONFIG;
    }
    free(v);
    return rc;
}

static int build(const struct ebb__ydoc *doc, struct ebb__workload *w,
                 struct ebb_diag *d)
{
    const struct ebb__ynode *root = ebb__ydoc_root(doc);
    w->file = strdup(ebb__ydoc_name(doc));
    if (w->file == NULL)
        return ebb__yread_nomem(d);
    if (ebb__ynode_is_null(root)) {
        ebb_diag_set(d, w->file, 0,
                      "empty; a workload is a mapping with jobs: (a list of "
                      "job specs, each with submit:)");
        return EBB_ECONFIG;
    }
    if (root->kind != EBB__YMAP) {
        ebb_diag_set(d, root->file, root->line,
                      "expected a workload (a mapping with jobs:), not %s",
                      ebb__ykind_name(root->kind));
        return EBB_ECONFIG;
    }
    int rc = ebb__yread_check_keys(root, workload_keys, "workload", d);
    if (rc != 0)
        return rc;
    const struct ebb__ynode *defaults = ebb__ymap_get(root, "defaults");
    if (ebb__ynode_is_null(defaults)) {
        defaults = NULL;
    } else if (defaults->kind != EBB__YMAP) {
        ebb_diag_set(d, defaults->file, defaults->line,
                      "defaults: expected a mapping of job keys, not %s",
                      ebb__ykind_name(defaults->kind));
        return EBB_ECONFIG;
    }
    const struct ebb__ynode *jobs = ebb__ymap_get(root, "jobs");
    if (ebb__ynode_is_null(jobs)) {
        ebb_diag_set(d, root->file, root->line,
                      "workload: missing required key \"jobs\" (a list of "
                      "job specs, each with submit:)");
        return EBB_ECONFIG;
    }
    if (jobs->kind != EBB__YSEQ) {
        ebb_diag_set(d, jobs->file, jobs->line,
                      "jobs: expected a list of job specs, not %s",
                      ebb__ykind_name(jobs->kind));
        return EBB_ECONFIG;
    }
    if (jobs->n == 0) {
        ebb_diag_set(d, jobs->file, jobs->line,
                      "jobs: empty; a workload needs at least one job");
        return EBB_ECONFIG;
    }
    w->jobs = calloc(jobs->n, sizeof(*w->jobs));
    if (w->jobs == NULL)
        return ebb__yread_nomem(d);
    for (size_t i = 0; i < jobs->n; i++) {
        const struct ebb__ynode *item = jobs->items[i];
        if (item->kind != EBB__YMAP) {
            ebb_diag_set(d, item->file, item->line,
                          "jobs[%zu]: expected a job spec (a mapping), not %s",
                          i, ebb__ykind_name(item->kind));
            return EBB_ECONFIG;
        }
        rc = ebb__jobspec_from_node_defaults(item, defaults, 1, &w->jobs[i],
                                             d);
        if (rc != 0)
            return rc;
        w->n = i + 1;
    }
    return check_unique(w, jobs, d);
}

static int from_doc(struct ebb__ydoc *doc, struct ebb__workload **out,
                    struct ebb_diag *d)
{
    struct ebb__workload *w = calloc(1, sizeof(*w));
    int rc = w == NULL ? ebb__yread_nomem(d) : build(doc, w, d);
    ebb__ydoc_free(doc);
    if (rc != 0) {
        ebb__workload_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

int ebb__workload_load_buffer(const char *name, const char *buf, size_t len,
                              struct ebb__workload **out, struct ebb_diag *d)
{
    *out = NULL;
    struct ebb__ydoc *doc;
    int rc = ebb__ydoc_load_buffer(name, buf, len, &doc, d);
    if (rc != 0)
        return rc;
    return from_doc(doc, out, d);
}

int ebb__workload_load_file(const char *path, struct ebb__workload **out,
                            struct ebb_diag *d)
{
    *out = NULL;
    struct ebb__ydoc *doc;
    int rc = ebb__ydoc_load_file(path, &doc, d);
    if (rc != 0)
        return rc;
    return from_doc(doc, out, d);
}

void ebb__workload_free(struct ebb__workload *w)
{
    if (w == NULL)
        return;
    for (size_t i = 0; i < w->n; i++)
        ebb__jobspec_free(&w->jobs[i]);
    free(w->jobs);
    free(w->file);
    free(w);
}
