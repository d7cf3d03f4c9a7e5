/* Where a program finds its shipped data (src/base/paths.c): $EBB_DATA_DIR
 * first; for a program run from its build tree (this test is one), the
 * source tree's data/, so that an uninstalled ebbd has its catalog and
 * on-demand offers without EBB_DATA_DIR. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/paths.h"

/* tests/meson.build sets both to the real trees. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    assert_non_null(v);
    return v;
}

static void the_environment_wins(void **state)
{
    (void)state;
    char *dir = ebb__data_dir();
    assert_non_null(dir);
    assert_string_equal(dir, env("EBB_DATA_DIR"));
    free(dir);
}

static void uninstalled_programs_use_the_source_data(void **state)
{
    (void)state;
    char *saved = strdup(env("EBB_DATA_DIR"));
    assert_non_null(saved);
    unsetenv("EBB_DATA_DIR");
    const char *root = ebb__uninstalled_build_root();
    char *dir = ebb__data_dir();
    setenv("EBB_DATA_DIR", saved, 1);
    assert_non_null(root);
    assert_string_equal(root, env("EBB_BUILD_ROOT"));
    assert_non_null(dir);
    char *want = ebb__path_join(env("EBB_SOURCE_ROOT"), "data");
    assert_string_equal(dir, want);
    char *catalog = ebb__path_join(dir, "catalog.csv");
    assert_int_equal(access(catalog, R_OK), 0);
    free(catalog);
    free(want);
    free(dir);
    free(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_environment_wins),
        cmocka_unit_test(uninstalled_programs_use_the_source_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
