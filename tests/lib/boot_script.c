/* See boot_script.h. */
#include "boot_script.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <ebb/buf.h>

static void write_file(const char *dir, const char *name, const char *text, int mode)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, (mode_t)mode), 0);
}

/* `s` with every `from` replaced by `to`. */
static char *replace(const char *s, const char *from, const char *to)
{
    struct ebb_buf b = {0};
    size_t n = strlen(from);
    for (const char *p = s; *p != '\0';) {
        if (strncmp(p, from, n) == 0) {
            ebb_buf_puts(&b, to);
            p += n;
        } else {
            ebb_buf_append(&b, p++, 1);
        }
    }
    char *out = ebb_buf_take(&b);
    assert_non_null(out);
    return out;
}

char *boot_script_run(const char *script, const char *metadata, int *status)
{
    char dir[] = "/tmp/ebb-boot-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[600];
    snprintf(sub, sizeof(sub), "%s/bin", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    write_file(dir, "bin/curl",
               "#!/bin/sh\n"
               "for a in \"$@\"; do [ \"$a\" = PUT ] && { printf imds-session; exit 0; }; done\n"
               "printf '%s' \"$EBB_TEST_METADATA\"\n", 0700);
    write_file(dir, "bin/ebb-agent", "#!/bin/sh\nexit 0\n", 0700);
    snprintf(sub, sizeof(sub), "%s/run", dir);
    char *moved = replace(script, "/run/ebb", sub);
    snprintf(sub, sizeof(sub), "%s/", dir);
    char *text = replace(moved, "/var/log/", sub);
    write_file(dir, "boot.sh", text, 0600);
    free(moved);
    free(text);

    setenv("EBB_TEST_METADATA", metadata, 1);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "PATH=%s/bin:$PATH sh %s/boot.sh >%s/out 2>&1", dir, dir,
             dir);
    int rc = system(cmd);
    assert_true(rc != -1 && WIFEXITED(rc));
    *status = WEXITSTATUS(rc);

    snprintf(sub, sizeof(sub), "%s/run/agent-token", dir);
    char *token = NULL;
    FILE *f = fopen(sub, "r");
    if (f != NULL) {
        char line[4096];
        size_t n = fread(line, 1, sizeof(line) - 1, f);
        line[n] = '\0';
        fclose(f);
        token = strdup(line);
    }
    /* The script leaves the agent in the background (nohup ... &), and on
     * a loaded machine it may still be writing its log here: the removal
     * is tried again until that process is gone (at most 5 s). */
    snprintf(cmd, sizeof(cmd),
             "for i in $(seq 50); do rm -rf %s 2>/dev/null && exit 0; sleep 0.1; done; "
             "exit 1",
             dir);
    assert_int_equal(system(cmd), 0);
    return token;
}
