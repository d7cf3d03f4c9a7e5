/* Schedules: reading schedule files (examples/nightly.yaml, defaults, and
 * every problem reported at its line), and ebb__schedule_due(): on-time
 * fires, never a fire twice, no second run while one is going, and the
 * missed policies after downtime. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ebb/units.h>

#include "jobs/schedule.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static ebb_time_ms T(const char *iso)
{
    ebb_time_ms t;
    if (ebb_parse_time(iso, &t) != 0)
        fail_msg("bad time %s", iso);
    return t;
}

static void expect_time(ebb_time_ms got, const char *want, const char *what)
{
    if (got != T(want)) {
        char g[EBB_TIME_BUFSZ];
        fail_msg("%s: %s, want %s", what, ebb_format_time(got, g, sizeof(g)),
                 want);
    }
}

/* ---- reading ------------------------------------------------------------ */

static void loads_example(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/examples/nightly.yaml",
             getenv("EBB_SOURCE_ROOT"));
    struct ebb__schedule s;
    struct ebb_diag d = {{0}};
    if (ebb__schedule_load_file(path, &s, &d) != 0)
        fail_msg("%s", d.msg);
    assert_string_equal(s.name, "nightly-train");
    assert_string_equal(s.cron_text, "30 1 * * *");
    assert_string_equal(s.timezone, "Asia/Shanghai");
    assert_int_equal(s.window, 6 * EBB_MS_PER_HOUR);
    assert_int_equal(s.missed, EBB__MISSED_RUN_ONCE);
    assert_string_equal(ebb__missed_name(s.missed), "run-once");
    assert_true(s.has_budget);
    assert_int_equal(s.budget.amount, 12000000);
    /* The job template: the schedule's name, budget and window. */
    assert_string_equal(s.job.name, "nightly-train");
    assert_int_equal(s.job.argc, 6);
    assert_string_equal(s.job.argv[1], "examples/train.py");
    assert_int_equal(s.job.work, 90 * EBB_MS_PER_MINUTE);
    assert_true(s.job.has_budget);
    assert_int_equal(s.job.budget.amount, 12000000);
    assert_true(s.job.has_deadline && s.job.deadline_is_relative);
    ebb_time_ms fire = T("2026-12-01T17:30:00Z");
    assert_int_equal(ebb__jobspec_deadline(&s.job, fire),
                     fire + 6 * EBB_MS_PER_HOUR);
    assert_int_equal(s.job.checkpoint.every, 20 * EBB_MS_PER_MINUTE);
    assert_string_equal(s.job.env[0], "PYTHONUNBUFFERED=1");
    /* 01:30 in Shanghai is 17:30 UTC. */
    ebb_time_ms next;
    assert_int_equal(ebb__cron_next(&s.cron, s.tz, T("2026-12-01T00:00:00Z"),
                                    &next),
                     0);
    expect_time(next, "2026-12-01T17:30:00Z", "first fire");
    ebb__schedule_free(&s);
    assert_null(s.name);
    ebb__schedule_free(&s); /* zeroed: allowed */
    ebb__schedule_free(NULL);
}

static const char minimal[] = "name: hourly\n"
                              "cron: '@hourly'\n"
                              "window: 30m\n"
                              "job:\n"
                              "  run: [./job.sh]\n"
                              "  work: 10m\n";

static void defaults(void **state)
{
    (void)state;
    struct ebb__schedule s;
    struct ebb_diag d = {{0}};
    if (ebb__schedule_load_buffer("h.yaml", minimal, strlen(minimal), &s, &d))
        fail_msg("%s", d.msg);
    assert_string_equal(s.timezone, "UTC");
    assert_string_equal(ebb__tz_name(s.tz), "UTC");
    assert_int_equal(s.missed, EBB__MISSED_SKIP);
    assert_string_equal(ebb__missed_name(s.missed), "skip");
    assert_false(s.has_budget);
    assert_false(s.job.has_budget);
    assert_int_equal(s.job.deadline_in, 30 * EBB_MS_PER_MINUTE);
    assert_string_equal(s.file, "h.yaml");
    assert_int_equal(s.line, 1);
    ebb__schedule_free(&s);
}

static void rejects(void **state)
{
    (void)state;
    static const struct {
        const char *yaml;
        const char *msg; /* the whole message */
    } cases[] = {
        {"", "s.yaml: empty; a schedule is a mapping with name, cron, window "
             "and job (see docs/cron.md)"},
        {"- a\n", "s.yaml:1: expected a schedule (a mapping with name, cron, "
                  "window and job), not a list"},
        {"name: a\ncron: '@daily'\nwindw: 1h\n",
         "s.yaml:3: schedule: unknown key \"windw\" (known: name, cron, "
         "timezone, window, budget, missed, job)"},
        {"cron: '@daily'\n",
         "s.yaml:1: schedule: missing required key \"name\" (example: name: "
         "nightly-eval)"},
        {"name: a b\n", "s.yaml:1: name: \"a b\" is not a valid schedule name "
                        "(1 to 64 letters, digits, '.', '_' and '-', not "
                        "\".\" or \"..\"; example: nightly-eval)"},
        {"name: a\n", "s.yaml:1: schedule: missing required key \"cron\" "
                      "(example: cron: \"30 1 * * *\")"},
        {"name: a\ncron: '0 60 * * *'\n",
         "s.yaml:2: cron: \"0 60 * * *\": field 2 (hour) \"60\": 60 is out of "
         "range 0-23"},
        {"name: a\ncron: '0 0 30 2 *'\n",
         "s.yaml:2: cron: \"0 0 30 2 *\" never fires (no date matches it)"},
        {"name: a\ncron: [1]\n",
         "s.yaml:2: cron: expected a string, not a list"},
        {"name: a\ntimezone: Asia/Shangai\ncron: '@daily'\n",
         "s.yaml:2: timezone: unknown time zone \"Asia/Shangai\" (no "},
        {"name: a\ntimezone: ../etc\ncron: '@daily'\n",
         "s.yaml:2: timezone: \"../etc\" is not a time zone name (an IANA "
         "name such as Asia/Shanghai, America/New_York or UTC)"},
        {"name: a\ncron: '@daily'\nbudget: 12 dollars\n",
         "s.yaml:3: budget: \"12 dollars\" is not an amount"},
        {"name: a\ncron: '@daily'\nbudget: 1000000001 USD\n",
         "s.yaml:3: budget: \"1000000001 USD\" is not an amount (more than "
         "1000000000, the largest amount ebb takes; example: 40 USD)"},
        {"name: a\ncron: '@daily'\nbudget: 0 USD\n",
         "s.yaml:3: budget: must be more than 0 (leave budget out for no cap)"},
        {"name: a\ncron: '@daily'\nmissed: always\n",
         "s.yaml:3: missed: \"always\" is not skip or run-once"},
        {"name: a\ncron: '@daily'\n",
         "s.yaml:1: schedule: missing required key \"job\" (example: job: "
         "{run: [python, eval.py], work: 2h})"},
        {"name: a\ncron: '@daily'\njob: [x]\n",
         "s.yaml:3: job: expected a mapping, not a list"},
        {"name: a\ncron: '@daily'\njob:\n  name: b\n",
         "s.yaml:4: job.name: not part of a scheduled job: a scheduled job "
         "takes the schedule's name; remove it"},
        {"name: a\ncron: '@daily'\njob:\n  run: [x]\n  deadline: 2h\n",
         "s.yaml:5: job.deadline: not part of a scheduled job: each run's "
         "deadline is its fire time plus the schedule's window; set window: "
         "at the top level"},
        {"name: a\ncron: '@daily'\njob:\n  budget: 5 USD\n",
         "s.yaml:4: job.budget: not part of a scheduled job: set budget: (per "
         "run) at the top level of the schedule"},
        {"name: a\ncron: '@daily'\njob:\n  submit: 2026-01-01\n",
         "s.yaml:4: job.submit: not part of a scheduled job: runs are "
         "submitted at their fire times; remove it"},
        /* The job parser's own messages, at their own lines. */
        {"name: a\ncron: '@daily'\njob:\n  run: [x]\n  work: 8\n",
         "s.yaml:5: work: \"8\" is not a duration (no unit"},
        {"name: a\ncron: '@daily'\njob:\n  run: [x]\n",
         "s.yaml:4: job: missing required key \"work\" (example: work: 8h)"},
        {"name: a\ncron: '@daily'\njob:\n  run: [x]\n  work: 1h\n  colour: red\n",
         "s.yaml:6: job: unknown key \"colour\""},
        {"name: a\ncron: '@daily'\njob: {run: [x], work: 1h}\n",
         "s.yaml:1: schedule: missing required key \"window\" (example: "
         "window: 6h)"},
        {"name: a\ncron: '@daily'\nwindow: soon\njob: {run: [x], work: 1h}\n",
         "s.yaml:3: window: \"soon\" is not a duration"},
        {"name: a\ncron: '@daily'\nwindow: 1h5m\n"
         "job: {run: [x], work: 1h}\n",
         "s.yaml:3: window: 1h5m leaves no time for the job's work 1h plus "
         "restart overhead 5m (make it longer)"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        struct ebb__schedule s;
        struct ebb_diag d = {{0}};
        int rc = ebb__schedule_load_buffer("s.yaml", cases[i].yaml,
                                           strlen(cases[i].yaml), &s, &d);
        assert_int_equal(rc, EBB_ECONFIG);
        if (strncmp(d.msg, cases[i].msg, strlen(cases[i].msg)) != 0)
            fail_msg("case %zu:\n got: %s\nwant: %s", i, d.msg, cases[i].msg);
        assert_null(s.name); /* zeroed, nothing leaks (ASan checks) */
        assert_null(s.tz);
    }
    struct ebb__schedule s;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__schedule_load_file("/nonexistent/s.yaml", &s, &d),
                     EBB_ENOTFOUND);
}

/* ---- deciding ----------------------------------------------------------- */

static struct ebb__schedule load(const char *cron, const char *zone,
                                 const char *missed)
{
    char yaml[512];
    snprintf(yaml, sizeof(yaml),
             "name: s\ncron: '%s'\ntimezone: %s\nmissed: %s\nwindow: 30m\n"
             "job: {run: [x], work: 10m}\n",
             cron, zone, missed);
    struct ebb__schedule s;
    struct ebb_diag d = {{0}};
    if (ebb__schedule_load_buffer("s.yaml", yaml, strlen(yaml), &s, &d) != 0)
        fail_msg("%s", d.msg);
    return s;
}

static struct ebb__schedule_decision due(const struct ebb__schedule *s,
                                         const char *since, int running,
                                         const char *now)
{
    struct ebb__schedule_state st = {T(since), running};
    struct ebb__schedule_decision out;
    ebb__schedule_due(s, &st, T(now), &out);
    return out;
}

static void nothing_due(void **state)
{
    (void)state;
    struct ebb__schedule s = load("0 * * * *", "UTC", "skip");
    struct ebb__schedule_decision r =
        due(&s, "2026-12-01T10:00:00Z", 0, "2026-12-01T10:30:00Z");
    assert_false(r.start);
    assert_false(r.has_missed);
    assert_int_equal(r.skip, EBB__SKIP_NONE);
    expect_time(r.last_fire, "2026-12-01T10:00:00Z", "last_fire unchanged");
    assert_true(r.has_next);
    expect_time(r.next_fire, "2026-12-01T11:00:00Z", "next");
    /* A `since` ahead of now (the clock was set back): still nothing, and
     * nothing before `since` comes due again. */
    r = due(&s, "2026-12-01T12:00:00Z", 0, "2026-12-01T11:00:10Z");
    assert_false(r.start);
    assert_false(r.has_missed);
    expect_time(r.last_fire, "2026-12-01T12:00:00Z", "last_fire kept");
    expect_time(r.next_fire, "2026-12-01T13:00:00Z", "next after since");
    ebb__schedule_free(&s);
}

static void on_time_once(void **state)
{
    (void)state;
    struct ebb__schedule s = load("0 * * * *", "UTC", "skip");
    struct ebb__schedule_decision r =
        due(&s, "2026-12-01T10:00:00Z", 0, "2026-12-01T11:00:00.250Z");
    assert_true(r.start);
    expect_time(r.fire, "2026-12-01T11:00:00Z", "fire");
    expect_time(r.release, "2026-12-01T11:00:00Z", "released at the fire");
    expect_time(r.deadline, "2026-12-01T11:30:00Z", "fire + window");
    assert_false(r.has_missed);
    expect_time(r.last_fire, "2026-12-01T11:00:00Z", "last_fire");
    expect_time(r.next_fire, "2026-12-01T12:00:00Z", "next");
    /* Asked again with what the store now says: never the same fire twice,
     * at any later time before the next one. */
    static const char *const later[] = {"2026-12-01T11:00:00.250Z",
                                        "2026-12-01T11:00:30Z",
                                        "2026-12-01T11:59:59.999Z"};
    for (size_t i = 0; i < ARRAY_LEN(later); i++) {
        r = due(&s, "2026-12-01T11:00:00Z", 0, later[i]);
        assert_false(r.start);
        assert_false(r.has_missed);
        expect_time(r.last_fire, "2026-12-01T11:00:00Z", "still");
    }
    /* A minute late is still on time. */
    r = due(&s, "2026-12-01T11:00:00Z", 0, "2026-12-01T12:01:00Z");
    assert_true(r.start);
    expect_time(r.release, "2026-12-01T12:00:00Z", "on time");
    ebb__schedule_free(&s);
}

static void not_while_running(void **state)
{
    (void)state;
    struct ebb__schedule s = load("0 * * * *", "UTC", "run-once");
    struct ebb__schedule_decision r =
        due(&s, "2026-12-01T10:00:00Z", 1, "2026-12-01T11:00:05Z");
    assert_false(r.start);
    assert_int_equal(r.skip, EBB__SKIP_RUNNING);
    expect_time(r.skipped_fire, "2026-12-01T11:00:00Z", "skipped fire");
    assert_string_equal(ebb__skip_reason_text(r.skip),
                        "the previous run of this schedule is still going");
    /* The skipped fire is dealt with: it does not start once the previous
     * run is over. */
    expect_time(r.last_fire, "2026-12-01T11:00:00Z", "last_fire");
    r = due(&s, "2026-12-01T11:00:00Z", 0, "2026-12-01T11:20:00Z");
    assert_false(r.start);
    assert_int_equal(r.skip, EBB__SKIP_NONE);
    r = due(&s, "2026-12-01T11:00:00Z", 0, "2026-12-01T12:00:01Z");
    assert_true(r.start);
    expect_time(r.fire, "2026-12-01T12:00:00Z", "the next one starts");
    ebb__schedule_free(&s);
}

static void missed_skip(void **state)
{
    (void)state;
    struct ebb__schedule s = load("0 * * * *", "UTC", "skip");
    /* ebbd was down from 10:00 to 15:20: 11:00 to 15:00 passed. */
    struct ebb__schedule_decision r =
        due(&s, "2026-12-01T10:00:00Z", 0, "2026-12-01T15:20:00Z");
    assert_false(r.start);
    assert_int_equal(r.skip, EBB__SKIP_NONE);
    assert_true(r.has_missed);
    expect_time(r.missed_first, "2026-12-01T11:00:00Z", "missed_first");
    expect_time(r.missed_last, "2026-12-01T15:00:00Z", "missed_last");
    expect_time(r.last_fire, "2026-12-01T15:00:00Z", "last_fire");
    expect_time(r.next_fire, "2026-12-01T16:00:00Z", "waits for the next");
    /* Back just as a fire comes due: that one is on time and runs; the
     * others stay missed. */
    r = due(&s, "2026-12-01T10:00:00Z", 0, "2026-12-01T15:00:20Z");
    assert_true(r.start);
    expect_time(r.fire, "2026-12-01T15:00:00Z", "on-time fire");
    expect_time(r.release, "2026-12-01T15:00:00Z", "released at the fire");
    assert_true(r.has_missed);
    expect_time(r.missed_first, "2026-12-01T11:00:00Z", "missed_first");
    expect_time(r.missed_last, "2026-12-01T14:00:00Z", "missed_last");
    ebb__schedule_free(&s);
}

static void missed_run_once(void **state)
{
    (void)state;
    struct ebb__schedule s = load("0 * * * *", "UTC", "run-once");
    struct ebb__schedule_decision r =
        due(&s, "2026-12-01T10:00:00Z", 0, "2026-12-01T15:20:00Z");
    assert_true(r.start);
    expect_time(r.fire, "2026-12-01T15:00:00Z", "the most recent missed");
    /* Released now with a whole window: 15:00 + 30m is nearly over. */
    expect_time(r.release, "2026-12-01T15:20:00Z", "released now");
    expect_time(r.deadline, "2026-12-01T15:50:00Z", "now + window");
    assert_true(r.has_missed);
    expect_time(r.missed_first, "2026-12-01T11:00:00Z", "missed_first");
    expect_time(r.missed_last, "2026-12-01T14:00:00Z", "missed_last");
    expect_time(r.last_fire, "2026-12-01T15:00:00Z", "last_fire");
    /* One missed fire only: it runs, nothing else is missed. */
    r = due(&s, "2026-12-01T10:00:00Z", 0, "2026-12-01T11:20:00Z");
    assert_true(r.start);
    expect_time(r.fire, "2026-12-01T11:00:00Z", "fire");
    assert_false(r.has_missed);
    /* And not while the previous run still goes. */
    r = due(&s, "2026-12-01T10:00:00Z", 1, "2026-12-01T15:20:00Z");
    assert_false(r.start);
    assert_int_equal(r.skip, EBB__SKIP_RUNNING);
    expect_time(r.skipped_fire, "2026-12-01T15:00:00Z", "skipped");
    expect_time(r.missed_last, "2026-12-01T14:00:00Z", "missed_last");
    ebb__schedule_free(&s);
}

/* A year of an every-minute schedule, and years of a yearly one: the
 * latest due fire is found without walking every one (the result is what
 * matters here; bench-free). */
static void long_downtime(void **state)
{
    (void)state;
    struct ebb__schedule s = load("* * * * *", "UTC", "skip");
    struct ebb__schedule_decision r =
        due(&s, "2025-01-01T00:00:00Z", 0, "2026-01-01T00:00:30Z");
    assert_true(r.start);
    expect_time(r.fire, "2026-01-01T00:00:00Z", "on time");
    expect_time(r.missed_first, "2025-01-01T00:01:00Z", "missed_first");
    expect_time(r.missed_last, "2025-12-31T23:59:00Z", "missed_last");
    ebb__schedule_free(&s);
    s = load("@yearly", "UTC", "run-once");
    r = due(&s, "2020-06-01T00:00:00Z", 0, "2026-06-01T00:00:00Z");
    assert_true(r.start);
    expect_time(r.fire, "2026-01-01T00:00:00Z", "latest");
    expect_time(r.missed_first, "2021-01-01T00:00:00Z", "missed_first");
    expect_time(r.missed_last, "2025-01-01T00:00:00Z", "missed_last");
    expect_time(r.next_fire, "2027-01-01T00:00:00Z", "next");
    ebb__schedule_free(&s);
}

/* Fire times are the cron code's, in the schedule's zone, DST included. */
static void in_zone_across_dst(void **state)
{
    (void)state;
    struct ebb__schedule s = load("30 2 * * *", "America/New_York", "skip");
    /* 02:30 does not happen on 2026-03-08: the run fires at 03:00 EDT. */
    struct ebb__schedule_decision r =
        due(&s, "2026-03-07T12:00:00Z", 0, "2026-03-08T07:00:10Z");
    assert_true(r.start);
    expect_time(r.fire, "2026-03-08T07:00:00Z", "at the jump");
    expect_time(r.next_fire, "2026-03-09T06:30:00Z", "next, in EDT");
    ebb__schedule_free(&s);
}

static void no_more_fires(void **state)
{
    (void)state;
    struct ebb__schedule s = load("@yearly", "UTC", "skip");
    struct ebb__schedule_decision r =
        due(&s, "9999-01-01T00:00:00Z", 0, "9999-06-01T00:00:00Z");
    assert_false(r.start);
    assert_false(r.has_next);
    ebb__schedule_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loads_example),
        cmocka_unit_test(defaults),
        cmocka_unit_test(rejects),
        cmocka_unit_test(nothing_due),
        cmocka_unit_test(on_time_once),
        cmocka_unit_test(not_while_running),
        cmocka_unit_test(missed_skip),
        cmocka_unit_test(missed_run_once),
        cmocka_unit_test(long_downtime),
        cmocka_unit_test(in_zone_across_dst),
        cmocka_unit_test(no_more_fires),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
