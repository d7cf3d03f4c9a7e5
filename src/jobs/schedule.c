/* Reading schedule files (see schedule.h for the keys and an example).
 *
 * The `job:` mapping is read by the job spec reader, so a scheduled job
 * accepts exactly what `ebb submit` does, with the same messages at the
 * same lines. Only the keys the schedule decides itself are refused there:
 * name (the schedule's), deadline (the window gives it) and budget (the
 * schedule's budget per run), and submit.
 */
#include "jobs/schedule.h"

#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/cfg_table.h"
#include "base/yaml_read.h"

static const char *const schedule_keys[] = {
    "name", "cron", "timezone", "window", "budget", "missed", "job", NULL,
};

/* Keys a job template may not have, and what to write instead. */
static const struct {
    const char *key;
    const char *instead;
} schedule_owned[] = {
    {"name", "a scheduled job takes the schedule's name; remove it"},
    {"deadline", "each run's deadline is its fire time plus the schedule's "
                 "window; set window: at the top level"},
    {"budget", "set budget: (per run) at the top level of the schedule"},
    {"submit", "runs are submitted at their fire times; remove it"},
};

const char *ebb__missed_name(enum ebb__missed m)
{
    return m == EBB__MISSED_RUN_ONCE ? "run-once" : "skip";
}

static int missing(const struct ebb__ynode *root, const char *key,
                   const char *example, struct ebb_diag *d)
{
    ebb_diag_set(d, root->file, root->line,
                  "schedule: missing required key \"%s\" (example: %s)", key,
                  example);
    return EBB_ECONFIG;
}

static int do_name(struct ebb__schedule *s, const struct ebb__ynode *root,
                   struct ebb_diag *d)
{
    const struct ebb__ynode *n = ebb__ymap_get(root, "name");
    if (ebb__ynode_is_null(n))
        return missing(root, "name", "name: nightly-eval", d);
    int rc = ebb__yread_text(n, "name", "nightly-eval", &s->name, d);
    if (rc == 0 && !ebb__job_name_valid(s->name)) {
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_set(d, n->file, n->line,
                      "name: %s is not a valid schedule name (1 to 64 "
                      "letters, digits, '.', '_' and '-', not \".\" or "
                      "\"..\"; example: nightly-eval)",
                      ebb__yread_quote(n, q, sizeof(q)));
        rc = EBB_ECONFIG;
    }
    return rc;
}

static int do_timezone(struct ebb__schedule *s, const struct ebb__ynode *root,
                       struct ebb_diag *d)
{
    const struct ebb__ynode *n = ebb__ymap_get(root, "timezone");
    if (ebb__ynode_is_null(n)) {
        s->timezone = strdup("UTC");
        if (s->timezone == NULL)
            return ebb__yread_nomem(d);
        return ebb__tz_utc(&s->tz) == 0 ? 0 : ebb__yread_nomem(d);
    }
    int rc = ebb__yread_text(n, "timezone", "Asia/Shanghai", &s->timezone, d);
    if (rc != 0)
        return rc;
    struct ebb_diag why = {{0}};
    rc = ebb__tz_load(s->timezone, &s->tz, &why);
    if (rc == EBB_ENOMEM)
        return ebb__yread_nomem(d);
    if (rc != 0) {
        ebb_diag_set(d, n->file, n->line, "timezone: %s", why.msg);
        return EBB_ECONFIG;
    }
    return 0;
}

static int do_cron(struct ebb__schedule *s, const struct ebb__ynode *root,
                   struct ebb_diag *d)
{
    const struct ebb__ynode *n = ebb__ymap_get(root, "cron");
    if (ebb__ynode_is_null(n))
        return missing(root, "cron", "cron: \"30 1 * * *\"", d);
    int rc = ebb__yread_text(n, "cron", "\"30 1 * * *\"", &s->cron_text, d);
    if (rc != 0)
        return rc;
    struct ebb__cron_error err;
    char q[EBB_DIAG_QUOTE_SIZE];
    if (ebb__cron_parse(s->cron_text, 0, &s->cron, &err) != 0) {
        ebb_diag_set(d, n->file, n->line, "cron: %s: %s",
                      ebb__yread_quote(n, q, sizeof(q)), err.msg);
        return EBB_ECONFIG;
    }
    ebb_time_ms first;
    if (ebb__cron_next(&s->cron, s->tz, 0, &first) != 0) {
        ebb_diag_set(d, n->file, n->line,
                      "cron: %s never fires (no date matches it)",
                      ebb__yread_quote(n, q, sizeof(q)));
        return EBB_ECONFIG;
    }
    return 0;
}

static int do_missed(struct ebb__schedule *s, const struct ebb__ynode *root,
                     struct ebb_diag *d)
{
    const struct ebb__ynode *n = ebb__ymap_get(root, "missed");
    s->missed = EBB__MISSED_SKIP;
    if (ebb__ynode_is_null(n))
        return 0;
    int rc = ebb__yread_scalar(n, "missed", "skip or run-once", d);
    if (rc != 0)
        return rc;
    if (strcmp(n->value, "run-once") == 0) {
        s->missed = EBB__MISSED_RUN_ONCE;
    } else if (strcmp(n->value, "skip") != 0) {
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_set(d, n->file, n->line,
                      "missed: %s is not skip or run-once",
                      ebb__yread_quote(n, q, sizeof(q)));
        return EBB_ECONFIG;
    }
    return 0;
}

static int do_budget(struct ebb__schedule *s, const struct ebb__ynode *root,
                     struct ebb_diag *d)
{
    const struct ebb__ynode *n = ebb__ymap_get(root, "budget");
    if (ebb__ynode_is_null(n))
        return 0;
    int rc = ebb__cfg_parse_value(EBB_CFG_MONEY, n, "budget", &s->budget, d);
    if (rc == 0 && s->budget.amount <= 0) {
        ebb_diag_set(d, n->file, n->line,
                      "budget: must be more than 0 (leave budget out for no "
                      "cap)");
        rc = EBB_ECONFIG;
    }
    s->has_budget = rc == 0;
    return rc;
}

/* The job parser wants a name; the template's is the schedule's. It is
 * shown a copy of the `job:` mapping with the schedule's own `name:` entry
 * added in front, so it reads (and reports at their lines) all the rest.
 * The nodes stay the document's: the copy only borrows them. */
static int parse_job(struct ebb__schedule *s, const struct ebb__ynode *root,
                     const struct ebb__ynode *job, struct ebb_diag *d)
{
    size_t name_at = 0;
    while (!ebb__yread_is_key(root->keys[name_at], "name"))
        name_at++;
    struct ebb__ynode named = *job;
    named.n = job->n + 1;
    named.keys = calloc(named.n, sizeof(*named.keys));
    named.items = calloc(named.n, sizeof(*named.items));
    int rc = EBB_ENOMEM;
    if (named.keys != NULL && named.items != NULL) {
        named.keys[0] = root->keys[name_at];
        named.items[0] = root->items[name_at];
        for (size_t i = 0; i < job->n; i++) {
            named.keys[i + 1] = job->keys[i];
            named.items[i + 1] = job->items[i];
        }
        rc = ebb__jobspec_from_node(&named, 0, &s->job, d);
    } else {
        ebb__yread_nomem(d);
    }
    free(named.keys);
    free(named.items);
    return rc;
}

static int do_job(struct ebb__schedule *s, const struct ebb__ynode *root,
                  struct ebb_diag *d)
{
    const struct ebb__ynode *job = ebb__ymap_get(root, "job");
    if (ebb__ynode_is_null(job))
        return missing(root, "job", "job: {run: [python, eval.py], work: 2h}",
                       d);
    int rc = ebb__yread_expect_map(job, "job", d);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < job->n; i++) {
        for (size_t k = 0; k < sizeof(schedule_owned) / sizeof(*schedule_owned);
             k++) {
            if (!ebb__yread_is_key(job->keys[i], schedule_owned[k].key))
                continue;
            ebb_diag_set(d, job->keys[i]->file, job->keys[i]->line,
                          "job.%s: not part of a scheduled job: %s",
                          schedule_owned[k].key, schedule_owned[k].instead);
            return EBB_ECONFIG;
        }
    }
    return parse_job(s, root, job, d);
}

/* The window must hold the work and one restart, like a job's deadline. */
static int do_window(struct ebb__schedule *s, const struct ebb__ynode *root,
                     struct ebb_diag *d)
{
    const struct ebb__ynode *n = ebb__ymap_get(root, "window");
    if (ebb__ynode_is_null(n))
        return missing(root, "window", "window: 6h", d);
    int rc = ebb__cfg_parse_value(EBB_CFG_DURATION, n, "window", &s->window, d);
    if (rc != 0)
        return rc;
    ebb_dur_ms need = s->job.work + s->job.restart_overhead;
    if (s->window <= need) {
        char w[EBB_DURATION_BUFSZ], wk[EBB_DURATION_BUFSZ],
            ro[EBB_DURATION_BUFSZ];
        ebb_diag_set(d, n->file, n->line,
                      "window: %s leaves no time for the job's work %s plus "
                      "restart overhead %s (make it longer)",
                      ebb_format_duration(s->window, w, sizeof(w)),
                      ebb_format_duration(s->job.work, wk, sizeof(wk)),
                      ebb_format_duration(s->job.restart_overhead, ro,
                                           sizeof(ro)));
        return EBB_ECONFIG;
    }
    s->job.has_deadline = 1;
    s->job.deadline_is_relative = 1;
    s->job.deadline_in = s->window;
    s->job.has_budget = s->has_budget;
    s->job.budget = s->budget;
    return 0;
}

static int build(struct ebb__schedule *s, const struct ebb__ydoc *doc,
                 struct ebb_diag *d)
{
    const struct ebb__ynode *root = ebb__ydoc_root(doc);
    s->file = strdup(ebb__ydoc_name(doc));
    if (s->file == NULL)
        return ebb__yread_nomem(d);
    if (ebb__ynode_is_null(root)) {
        ebb_diag_set(d, s->file, 0,
                      "empty; a schedule is a mapping with name, cron, "
                      "window and job (see docs/cron.md)");
        return EBB_ECONFIG;
    }
    if (root->kind != EBB__YMAP) {
        ebb_diag_set(d, root->file, root->line,
                      "expected a schedule (a mapping with name, cron, window "
                      "and job), not %s",
                      ebb__ykind_name(root->kind));
        return EBB_ECONFIG;
    }
    s->line = root->line;
    int rc = ebb__yread_check_keys(root, schedule_keys, "schedule", d);
    if (rc == 0)
        rc = do_name(s, root, d);
    if (rc == 0)
        rc = do_timezone(s, root, d);
    if (rc == 0)
        rc = do_cron(s, root, d);
    if (rc == 0)
        rc = do_budget(s, root, d);
    if (rc == 0)
        rc = do_missed(s, root, d);
    if (rc == 0)
        rc = do_job(s, root, d);
    if (rc == 0)
        rc = do_window(s, root, d);
    return rc;
}

static int from_doc(struct ebb__ydoc *doc, struct ebb__schedule *out,
                    struct ebb_diag *d)
{
    int rc = build(out, doc, d);
    ebb__ydoc_free(doc);
    if (rc != 0)
        ebb__schedule_free(out);
    return rc;
}

int ebb__schedule_load_buffer(const char *name, const char *buf, size_t len,
                              struct ebb__schedule *out, struct ebb_diag *d)
{
    memset(out, 0, sizeof(*out));
    struct ebb__ydoc *doc;
    int rc = ebb__ydoc_load_bounded(name, buf, len, &ebb__ylimits_spec, &doc, d);
    if (rc != 0)
        return rc;
    return from_doc(doc, out, d);
}

int ebb__schedule_load_file(const char *path, struct ebb__schedule *out,
                            struct ebb_diag *d)
{
    memset(out, 0, sizeof(*out));
    struct ebb__ydoc *doc;
    int rc = ebb__ydoc_load_file(path, &doc, d);
    if (rc != 0)
        return rc;
    return from_doc(doc, out, d);
}

void ebb__schedule_free(struct ebb__schedule *s)
{
    if (s == NULL)
        return;
    free(s->name);
    free(s->cron_text);
    free(s->timezone);
    ebb__tz_free(s->tz);
    ebb__jobspec_free(&s->job);
    free(s->file);
    memset(s, 0, sizeof(*s));
}
