/* ebb job show: one job's spec, state, where it runs, spend, history and
 * checkpoints. */
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "base/currency.h"
#include "cli/cli.h"

static const char usage[] =
    "Usage: ebb job show ID [--outlook] [--json]\n"
    "\n"
    "Shows job ID: its state, where it runs now, what it has spent and on\n"
    "what, every state change with its reason, its instances and its\n"
    "checkpoints. Another user's job shows only its summary (state,\n"
    "progress, spend) unless you are an admin or an admin of its team.\n"
    "An unfinished job shows its outlook (the rest of it quoted as ebb plan\n"
    "does: its ETA, expected and p90 total cost, the odds of its deadline;\n"
    "docs/plan.md) as ebbd last computed it; a stale one is computed again\n"
    "in the background.\n"
    "\n"
    "  --outlook  wait for a fresh outlook (a few seconds)\n"
    "  --json     print ebbd's answer as JSON\n";

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static const char *when(json_t *o, const char *key, char *buf, size_t len)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return "-";
    return ebb_format_time(json_integer_value(v), buf, len);
}

/* The answer holds only a job's newest rows of each list: says how many
 * older `what` it left out, when it did. */
static void omitted(json_t *j, const char *what)
{
    json_int_t n = json_integer_value(json_object_get(json_object_get(j, "omitted"), what));
    if (n > 0)
        printf("  (%lld older %s not shown)\n", (long long)n, what);
}

/* A job with a store: its stored checkpoints, newest first. */
static void stored_checkpoints(json_t *j)
{
    static const char *const ch[] = {"ID", "NAME", "STATE", "BYTES", "UPLOAD", "CREATED"};
    struct cli_table *t = cli_table_new(6, ch);
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(j, "checkpoints"), i, row) {
        char id[24], bytes[24], up[24], at[EBB_TIME_BUFSZ];
        snprintf(id, sizeof(id), "%lld", (long long)json_integer_value(json_object_get(row, "id")));
        snprintf(bytes, sizeof(bytes), "%lld",
                 (long long)json_integer_value(json_object_get(row, "bytes")));
        json_t *secs = json_object_get(row, "upload_seconds");
        snprintf(up, sizeof(up), json_is_number(secs) ? "%.1fs" : "-",
                 json_number_value(secs));
        const char *cells[] = {id, str(row, "name"), str(row, "state"), bytes, up,
                               when(row, "created", at, sizeof(at))};
        cli_table_add(t, cells);
    }
    printf("\nCheckpoints (store %s):\n",
           str(json_array_get(json_object_get(j, "checkpoints"), 0), "store"));
    omitted(j, "checkpoints");
    cli_table_print(t, stdout, "  none yet");
}

/* The quote of the rest of an unfinished job. */
static void outlook(json_t *j)
{
    json_t *o = json_object_get(j, "outlook");
    if (json_is_null(o)) {
        printf("  outlook:     being computed (look again in a moment, or wait for it "
               "with --outlook)\n");
        return;
    }
    if (!json_is_object(o))
        return;
    if (json_object_get(o, "error") != NULL) {
        printf("  outlook:     none (%s)\n", str(o, "error"));
        return;
    }
    const json_t *eta = json_object_get(o, "eta");
    const json_t *pd = json_object_get(o, "p_deadline");
    printf("  outlook:     at %s, ETA %s; total cost expected %.2f USD, p90 %.2f USD",
           str(o, "at"), json_is_string(eta) ? json_string_value(eta) : "unknown",
           json_number_value(json_object_get(o, "expected_cost_usd")),
           json_number_value(json_object_get(o, "p90_cost_usd")));
    if (json_is_number(pd))
        printf("; meets its deadline in %.0f%% of %lld samples", 100 * json_number_value(pd),
               (long long)json_integer_value(json_object_get(o, "samples")));
    printf("\n");
}

/* The GPU guard's line of the current instance. */
static void gpu_guard(json_t *now)
{
    char w[EBB_DURATION_BUFSZ];
    json_t *util = json_object_get(now, "gpu_util");
    json_t *window = json_object_get(now, "gpu_window_ms");
    json_t *min = json_object_get(now, "min_gpu_util");
    if (strcmp(str(now, "gpu_guard"), "on") == 0 && json_is_integer(window))
        printf("  GPU guard:   on, moves it after %s under %lld%%",
               ebb_format_duration(json_integer_value(window), w, sizeof(w)),
               (long long)json_integer_value(min));
    else
        printf("  GPU guard:   %s", str(now, "gpu_guard"));
    if (json_is_integer(util))
        printf(" (GPU utilisation %lld%%)", (long long)json_integer_value(util));
    printf("\n");
}

static void print_job(json_t *j)
{
    char a[48], b[48], c[48];
    const char *cur = str(j, "currency");
    printf("Job %s (%s)\n", str(j, "id"), str(j, "name"));
    printf("  state:       %s\n", str(j, "state"));
    if (str(j, "waiting_reason")[0] != '\0')
        printf("  waiting:     %s\n", str(j, "waiting_reason"));
    printf("  policy:      %s\n", str(j, "policy"));
    printf("  submitted:   %s by uid %lld\n", when(j, "submitted_at", a, sizeof(a)),
           (long long)json_integer_value(json_object_get(j, "owner_uid")));
    printf("  deadline:    %s\n", when(j, "deadline", a, sizeof(a)));
    json_int_t work = json_integer_value(json_object_get(j, "work_ms"));
    json_int_t done = json_integer_value(json_object_get(j, "work_done_ms"));
    printf("  progress:    %s of %s saved (%.0f%%)\n",
           ebb_format_duration(done, a, sizeof(a)),
           ebb_format_duration(work, b, sizeof(b)),
           work > 0 ? 100.0 * (double)done / (double)work : 0.0);
    json_t *budget = json_object_get(j, "budget_micros");
    printf("  spent:       %s%s%s\n",
           ebb__format_amount(json_integer_value(json_object_get(j, "spent_micros")),
                              EBB__AMOUNT_DECIMALS, cur, a, sizeof(a)),
           json_is_integer(budget) ? " of a budget of " : " (no budget cap)",
           json_is_integer(budget)
               ? ebb__format_amount(json_integer_value(budget), EBB__AMOUNT_DECIMALS,
                                    cur, c, sizeof(c))
               : "");
    size_t i;
    json_t *row;
    if (json_is_true(json_object_get(j, "redacted"))) {
        printf("  team:        %s\n", str(j, "team")[0] ? str(j, "team") : "-");
        printf("\n  redacted: not your job (its spec, env, events, instances "
               "and checkpoints\n  are shown only to its owner, its team's "
               "admins and ebbd's admins)\n");
        return;
    }
    json_array_foreach(json_object_get(j, "spent_by_kind"), i, row)
        printf("    %-9s  %s\n", str(row, "kind"),
               ebb__format_amount(json_integer_value(json_object_get(row, "amount_micros")),
                                  EBB__AMOUNT_DECIMALS, str(row, "currency"), a,
                                  sizeof(a)));
    printf("  retries:     %lld    preemptions: %lld\n",
           (long long)json_integer_value(json_object_get(j, "retries")),
           (long long)json_integer_value(json_object_get(j, "preemptions")));
    json_t *now = json_object_get(j, "current");
    if (json_is_object(now)) {
        printf("  running on:  %s %s %s via %s (instance %s)\n", str(now, "market_provider"),
               str(now, "instance_type"), str(now, "zone")[0] ? str(now, "zone")
                                                             : str(now, "region"),
               str(now, "provider"), str(now, "instance_id"));
        /* Billed when the instance ends: until then "spent" leaves it out. */
        printf("  accruing:    %s on this instance so far, not yet in spent\n",
               ebb__format_amount(json_integer_value(json_object_get(now, "accrued_micros")),
                                  EBB__AMOUNT_DECIMALS, str(now, "currency"), a, sizeof(a)));
        printf("  speed:       %.3g (%s", json_number_value(json_object_get(now, "speed")),
               str(now, "speed_source"));
        json_int_t n = json_integer_value(json_object_get(now, "speed_samples"));
        if (n > 0)
            printf(", %lld rates", (long long)n);
        printf(")\n");
        json_t *node;
        size_t k;
        json_array_foreach(json_object_get(now, "nodes"), k, node)
            printf("  node %lld:      %s at %s:%lld%s%s%s\n",
                   (long long)json_integer_value(json_object_get(node, "rank")),
                   str(node, "instance_id"), str(node, "addr")[0] ? str(node, "addr") : "?",
                   (long long)json_integer_value(json_object_get(node, "port")),
                   str(node, "gpu_model")[0] ? ", " : "", str(node, "gpu_model"),
                   json_is_true(json_object_get(node, "exited"))    ? ", exited"
                   : json_is_true(json_object_get(node, "started")) ? ", running"
                                                                    : ", starting");
        json_t *stall = json_object_get(now, "stall_after_ms");
        if (json_is_integer(stall))
            printf("  stall guard: on, moves it after %s without progress\n",
                   ebb_format_duration(json_integer_value(stall), a, sizeof(a)));
        else
            printf("  stall guard: %s\n", str(now, "stall_guard"));
        gpu_guard(now);
    }

    outlook(j);

    printf("\nEvents:\n");
    omitted(j, "events");
    json_array_foreach(json_object_get(j, "events"), i, row)
        printf("  %s  %-15s %s\n", when(row, "at", a, sizeof(a)), str(row, "to_state"),
               str(row, "reason"));

    static const char *const ih[] = {"TOKEN", "PROVIDER", "TYPE", "ZONE", "STATE",
                                     "STARTED", "ENDED", "WHY"};
    struct cli_table *t = cli_table_new(8, ih);
    json_array_foreach(json_object_get(j, "instances"), i, row) {
        const char *cells[] = {str(row, "token"), str(row, "provider"),
                               str(row, "instance_type"), str(row, "zone"),
                               str(row, "state"), when(row, "requested_at", a, sizeof(a)),
                               when(row, "ended_at", b, sizeof(b)), str(row, "end_reason")};
        cli_table_add(t, cells);
    }
    printf("\nInstances:\n");
    omitted(j, "instances");
    cli_table_print(t, stdout, "  none yet");

    json_t *first = json_array_get(json_object_get(j, "checkpoints"), 0);
    if (json_object_get(first, "name") != NULL) {
        stored_checkpoints(j);
        return;
    }
    static const char *const ch[] = {"AT", "WORK SAVED", "PATH"};
    t = cli_table_new(3, ch);
    json_array_foreach(json_object_get(j, "checkpoints"), i, row) {
        const char *cells[] = {
            when(row, "at", a, sizeof(a)),
            ebb_format_duration(json_integer_value(json_object_get(row, "work_done_ms")),
                                 b, sizeof(b)),
            str(row, "path")};
        cli_table_add(t, cells);
    }
    printf("\nCheckpoints:\n");
    omitted(j, "checkpoints");
    cli_table_print(t, stdout, "  none yet");
}

int cmd_job(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    const char *id = NULL;
    int json = 0, want_outlook = 0;
    if (argc < 2 || strcmp(argv[1], "show") != 0) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--outlook") == 0) {
            want_outlook = 1;
        } else if (argv[i][0] == '-' || id != NULL) {
            fprintf(stderr, "ebb job show: unexpected argument \"%s\"\n%s", argv[i], usage);
            return CLI_USAGE;
        } else {
            id = argv[i];
        }
    }
    if (id == NULL) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    json_t *params = json_pack("{s:s,s:b}", "id", id, "outlook", want_outlook);
    json_t *r;
    int code = cli_call(cli, "job", params, &r);
    json_decref(params);
    if (code != CLI_OK)
        return code;
    if (json)
        cli_print_json(r);
    else
        print_job(r);
    json_decref(r);
    return CLI_OK;
}
