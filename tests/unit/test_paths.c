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

#include <ebb/common.h>

#include "base/pathname.h"
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

/* Relative paths land below their base; ".." may take back what the path
 * itself added, never climb out of the base (src/base/pathname.c). */
static void paths_resolve_by_text(void **state)
{
    (void)state;
    static const struct {
        const char *base, *path, *want; /* want NULL: refused */
    } cases[] = {
        {"/home/u/proj", "ckpt", "/home/u/proj/ckpt"},
        {"/home/u/proj", "./a//b/", "/home/u/proj/a/b"},
        {"/home/u/proj", "a/../b", "/home/u/proj/b"},
        {"/home/u/proj", "a/..", "/home/u/proj"},
        {"/home/u/proj/", "a/b/../../c", "/home/u/proj/c"},
        {"/", "ckpt", "/ckpt"},
        {"/", "a/..", "/"},
        {"/home/u/proj", "/data/ckpt/../run", "/data/run"},
        {NULL, "/data//ckpt/.", "/data/ckpt"},
        {NULL, "a/./b/../c", "a/c"},
        {NULL, "a/..", "."},
        {"/home/u/proj", "relative/../../../x", NULL},
        {"/home/u/proj", "..", NULL},
        {"/home/u/proj", "../proj/ckpt", NULL},
        {"/", "a/../..", NULL},
        {NULL, "/..", NULL},
        {NULL, "/a/../../etc", NULL},
        {NULL, "../x", NULL},
        {NULL, "", NULL},
        {"relative/base", "x", "x"}, /* only an absolute base is one */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out = (char *)"untouched";
        int rc = ebb__path_resolve(cases[i].base, cases[i].path, &out);
        if (cases[i].want == NULL) {
            if (rc != EBB_EINVAL)
                fail_msg("%s under %s: rc %d", cases[i].path, cases[i].base, rc);
            assert_null(out);
            continue;
        }
        if (rc != 0)
            fail_msg("%s under %s: rc %d", cases[i].path, cases[i].base, rc);
        assert_string_equal(out, cases[i].want);
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_environment_wins),
        cmocka_unit_test(uninstalled_programs_use_the_source_data),
        cmocka_unit_test(paths_resolve_by_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
