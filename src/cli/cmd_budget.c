/* ebb budget: teams' monthly caps and capped jobs, with spend, what
 * running jobs have committed and what is left; teams' quotas next to
 * what their instances hold now. */
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "base/currency.h"
#include "cli/cli.h"

static const char usage[] =
    "Usage: ebb budget [--team TEAM] [--json]\n"
    "\n"
    "Shows each team's cap for this calendar month (UTC) and each unfinished\n"
    "job's own cap: what was spent (billed, plus what running instances have\n"
    "accrued), what running jobs have committed (their worst case until their\n"
    "next checkpoint) and what is left. Amounts are in USD, converted with\n"
    "currency_rates. Then each team's quotas: GPUs in use of max_gpus, the\n"
    "rate its instances are billed now of max_burn, and each member listed\n"
    "under its users: with their cap, spend and GPUs. See docs/budgets.md.\n"
    "\n"
    "  --team TEAM  only this team and its jobs\n"
    "  --json       print JSON instead of tables\n";

/* A money cell: "-" for a missing (uncapped) amount. */
static const char *amount(json_t *o, const char *key, char *buf, size_t size)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return "-";
    return ebb__format_amount(json_integer_value(v), EBB__AMOUNT_DECIMALS, "USD",
                              buf, size);
}

/* "IN_USE / MAX" of two fields, "IN_USE / -" without a most: a count, or
 * with `money` amounts per hour. */
static const char *of_max(json_t *o, const char *in_use, const char *max,
                          int money, char *buf, size_t size)
{
    char a[48], b[48] = "-";
    json_t *m = json_object_get(o, max);
    if (money) {
        snprintf(buf, size, "%s/h / %s%s", amount(o, in_use, a, sizeof(a)),
                 amount(o, max, b, sizeof(b)), json_is_integer(m) ? "/h" : "");
        return buf;
    }
    if (json_is_integer(m))
        snprintf(b, sizeof(b), "%lld", (long long)json_integer_value(m));
    snprintf(buf, size, "%lld / %s",
             (long long)json_integer_value(json_object_get(o, in_use)), b);
    return buf;
}

/* Teams' quotas and their members' limits. */
static void print_quotas(json_t *r)
{
    char gpus[64], burn[128], inst[24];
    static const char *const qh[] = {"TEAM", "INSTANCES", "GPUS", "BURN"};
    struct cli_table *t = cli_table_new(4, qh);
    for (size_t c = 1; c < 4; c++)
        cli_table_right(t, c);
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(r, "teams"), i, o) {
        snprintf(inst, sizeof(inst), "%lld",
                 (long long)json_integer_value(json_object_get(o, "instances")));
        const char *cells[] = {json_string_value(json_object_get(o, "team")), inst,
                               of_max(o, "gpus_in_use", "max_gpus", 0, gpus, sizeof(gpus)),
                               of_max(o, "burn_micros", "max_burn_micros", 1, burn,
                                      sizeof(burn))};
        cli_table_add(t, cells);
    }
    printf("\nQuotas, now (GPUS and BURN: in use / the most):\n");
    cli_table_print(t, stdout, "  no teams configured");

    static const char *const uh[] = {"TEAM", "USER", "CAP", "SPENT", "COMMITTED",
                                     "LEFT", "GPUS"};
    t = cli_table_new(7, uh);
    for (size_t c = 2; c < 7; c++)
        cli_table_right(t, c);
    char cap[48], spent[48], committed[48], left[48];
    json_array_foreach(json_object_get(r, "teams"), i, o) {
        size_t k;
        json_t *u;
        json_array_foreach(json_object_get(o, "users"), k, u) {
            const char *cells[] = {json_string_value(json_object_get(o, "team")),
                                   json_string_value(json_object_get(u, "name")),
                                   amount(u, "cap_micros", cap, sizeof(cap)),
                                   amount(u, "spent_micros", spent, sizeof(spent)),
                                   amount(u, "committed_micros", committed,
                                          sizeof(committed)),
                                   amount(u, "left_micros", left, sizeof(left)),
                                   of_max(u, "gpus_in_use", "max_gpus", 0, gpus,
                                          sizeof(gpus))};
            cli_table_add(t, cells);
        }
    }
    printf("\nMembers' limits in their team, %s:\n",
           json_string_value(json_object_get(r, "month")));
    cli_table_print(t, stdout, "  none (teams.T.users in ebb.yaml)");
}

/* Rows whose amounts ebbd could not convert, with why, under a table. */
static void print_errors(json_t *rows, const char *key)
{
    size_t i;
    json_t *o;
    json_array_foreach(rows, i, o) {
        const char *error = json_string_value(json_object_get(o, "error"));
        if (error != NULL)
            printf("  %s: %s\n", json_string_value(json_object_get(o, key)), error);
    }
}

static void print_budgets(json_t *r)
{
    char cap[48], spent[48], committed[48], left[48];
    static const char *const th[] = {"TEAM", "CAP", "SPENT", "COMMITTED", "LEFT"};
    struct cli_table *t = cli_table_new(5, th);
    for (size_t c = 1; c < 5; c++)
        cli_table_right(t, c);
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(r, "teams"), i, o) {
        const char *cells[] = {json_string_value(json_object_get(o, "team")),
                               amount(o, "cap_micros", cap, sizeof(cap)),
                               amount(o, "spent_micros", spent, sizeof(spent)),
                               amount(o, "committed_micros", committed, sizeof(committed)),
                               amount(o, "left_micros", left, sizeof(left))};
        cli_table_add(t, cells);
    }
    printf("Teams, %s:\n", json_string_value(json_object_get(r, "month")));
    cli_table_print(t, stdout, "  no teams configured");
    print_errors(json_object_get(r, "teams"), "team");
    print_quotas(r);

    static const char *const jh[] = {"JOB", "NAME", "TEAM", "STATE", "CAP",
                                     "SPENT", "COMMITTED", "LEFT"};
    t = cli_table_new(8, jh);
    for (size_t c = 4; c < 8; c++)
        cli_table_right(t, c);
    json_array_foreach(json_object_get(r, "jobs"), i, o) {
        const char *team = json_string_value(json_object_get(o, "team"));
        const char *cells[] = {json_string_value(json_object_get(o, "id")),
                               json_string_value(json_object_get(o, "name")),
                               team != NULL ? team : "-",
                               json_string_value(json_object_get(o, "state")),
                               amount(o, "cap_micros", cap, sizeof(cap)),
                               amount(o, "spent_micros", spent, sizeof(spent)),
                               amount(o, "committed_micros", committed, sizeof(committed)),
                               amount(o, "left_micros", left, sizeof(left))};
        cli_table_add(t, cells);
    }
    printf("\nJobs with a cap:\n");
    cli_table_print(t, stdout, "  none");
    print_errors(json_object_get(r, "jobs"), "id");
}

int cmd_budget(struct cli *cli, int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    json_t *r;
    int json;
    int code = cli_team_call(cli, argc, argv, usage, &r, &json);
    if (code != CLI_OK)
        return code;
    if (json)
        cli_print_json(r);
    else
        print_budgets(r);
    json_decref(r);
    return CLI_OK;
}
