/* A failing allocator, as curl's torture tests and SQLite's OOM tests use
 * one: armed with n, the nth allocation from then on fails (returns NULL)
 * and every later one succeeds, so a test can run a parser once per
 * allocation it makes and check that each failure ends in a clean error.
 *
 * It works by link-time wrapping (-Wl,--wrap=malloc,... in the test's
 * link_args; `failalloc_link_args` in tests/lib/meson.build): every call
 * to malloc, calloc, realloc, strdup and strndup from ebb's own code and
 * the test comes here, and SQLite's (SQLITE_CONFIG_MALLOC) once
 * failalloc_init() ran. libyaml, expat and Jansson allocate on their own
 * and are not counted. Jansson could be (json_set_alloc_funcs), but its
 * lexer ignores a failed append (load.c: lex_save() drops the result of
 * strbuffer_append_byte()), so a failure there gives a silently shorter
 * string, not an error: test_oom.c found "resnet50.v2_run-3" read back as
 * "resnet50.v2_ru-3". That is Jansson's to fix, not ours to test. */
#ifndef EBB_TEST_FAILALLOC_H
#define EBB_TEST_FAILALLOC_H

/* Routes SQLite's allocations through the counter. Call it first, before
 * SQLite is used. */
void failalloc_init(void);

/* Makes the nth allocation from now fail (n >= 1); 0 disarms. Resets the
 * count. */
void failalloc_arm(long n);

/* Allocations seen since the last failalloc_arm(). */
long failalloc_count(void);

/* 1 when the armed allocation was reached (and failed). */
int failalloc_hit(void);

#endif
