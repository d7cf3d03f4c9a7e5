/* The workdir tar (io/workdir_tar.c): packed with workdir_exclude, the same
 * bytes for the same tree, unpacked to the same tree; links and special
 * files refused by name, the size bound kept; a hostile tar (absolute
 * names, "..", links, a file through a link) unpacks nothing outside. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/sha.h>

#include "io/workdir_tar.h"
#include "jobs/jobspec.h"

static char root[256];

static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

static void put(const char *rel, const char *text, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    chmod(path, mode);
}

static int skip_excluded(void *arg, const char *path, int is_dir)
{
    return ebb__workdir_excluded(arg, path, is_dir);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "%s/ebb-wdtar.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(root));
    sh("mkdir -p %s/src/sub %s/src/.git/objects %s/data/big %s/out %s/ro", root, root, root,
       root, root);
    put("src/train.py", "print('train')\n", 0644);
    put("src/run.sh", "#!/bin/sh\necho run\n", 0755);
    put("src/sub/model.pt", "weights", 0644);
    put("src/sub/notes.txt", "notes", 0600);
    put("src/.git/objects/x", "git", 0644);
    put("src/data_not_dir", "a file named like the dir pattern", 0644);
    sh("mkdir -p %s/src/data && echo d >%s/src/data/d", root, root);
    sh("mkdir -p %s/src/ro && echo r >%s/src/ro/r && chmod 0555 %s/src/ro", root, root, root);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("chmod -R u+w %s && rm -rf %s", root, root);
    return 0;
}

/* Packs root/src into root/NAME.tar; returns the code, fills res/err. */
static int pack_to(const char *name, const struct ebb_string_list *ex, uint64_t max,
                   struct ebb__workdir_packed *res, char *err, size_t len)
{
    char dir[512], out[512];
    snprintf(dir, sizeof(dir), "%s/src", root);
    snprintf(out, sizeof(out), "%s/%s.tar", root, name);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    int rc = ebb__workdir_pack(dir, fd, ex ? skip_excluded : NULL, (void *)ex, max, res,
                               err, len);
    close(fd);
    return rc;
}

static int extract_from(const char *name, const char *dest, char *err, size_t len)
{
    char in[512];
    snprintf(in, sizeof(in), "%s/%s.tar", root, name);
    int fd = open(in, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    int rc = ebb__workdir_extract(fd, dest, EBB__WORKDIR_MAX_BYTES, err, len);
    close(fd);
    return rc;
}

static void round_trip(void **state)
{
    (void)state;
    char *pats[] = {".git", "*.pt", "data/", NULL};
    struct ebb_string_list ex = {3, pats};
    struct ebb__workdir_packed a, b;
    char err[512];
    assert_int_equal(pack_to("a", &ex, EBB__WORKDIR_MAX_BYTES, &a, err, sizeof(err)), 0);
    /* src/{train.py, run.sh, sub/notes.txt, data_not_dir, ro/r} and the
     * directories sub and ro: .git, model.pt and data/ left out. */
    assert_int_equal(a.files, 5);
    assert_int_equal(a.dirs, 2);
    /* The hash is of the bytes written, and the same tree packs the same. */
    char path[512];
    snprintf(path, sizeof(path), "%s/a.tar", root);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_int_equal(n, a.size);
    unsigned char sum[32];
    SHA256(buf, n, sum);
    assert_memory_equal(sum, a.sha256, 32);
    assert_int_equal(pack_to("b", &ex, EBB__WORKDIR_MAX_BYTES, &b, err, sizeof(err)), 0);
    assert_memory_equal(a.sha256, b.sha256, 32);

    snprintf(path, sizeof(path), "%s/out", root);
    assert_int_equal(extract_from("a", path, err, sizeof(err)), 0);
    sh("test \"$(cat %s/out/train.py)\" = \"print('train')\"", root);
    sh("test -x %s/out/run.sh && test \"$(stat -c %%a %s/out/sub/notes.txt)\" = 600", root, root);
    sh("test ! -e %s/out/.git && test ! -e %s/out/sub/model.pt && test ! -e %s/out/data", root,
       root, root);
    sh("test -f %s/out/data_not_dir", root);
    sh("test \"$(cat %s/out/ro/r)\" = r && test \"$(stat -c %%a %s/out/ro)\" = 555", root, root);
    /* Unpacking over what is there refuses rather than overwrites. */
    assert_int_not_equal(extract_from("a", path, err, sizeof(err)), 0);
}

static void refusals(void **state)
{
    (void)state;
    struct ebb__workdir_packed r;
    char err[512];
    sh("ln -s /etc/passwd %s/src/sub/pw", root);
    assert_int_equal(pack_to("l", NULL, EBB__WORKDIR_MAX_BYTES, &r, err, sizeof(err)),
                     EBB_EINVAL);
    assert_string_equal(err, "sub/pw is a symbolic link; a workdir is packed without "
                             "links (add it to workdir_exclude, or put what it points "
                             "to in its place)");
    char *pats[] = {"pw", NULL};
    struct ebb_string_list ex = {1, pats};
    assert_int_equal(pack_to("l", &ex, EBB__WORKDIR_MAX_BYTES, &r, err, sizeof(err)), 0);
    sh("rm %s/src/sub/pw && mkfifo %s/src/fifo", root, root);
    assert_int_equal(pack_to("f", NULL, EBB__WORKDIR_MAX_BYTES, &r, err, sizeof(err)),
                     EBB_EINVAL);
    assert_string_equal(err, "fifo is not a regular file or a directory (add it to "
                             "workdir_exclude)");
    sh("rm %s/src/fifo", root);
    assert_int_equal(pack_to("s", NULL, 4096, &r, err, sizeof(err)), EBB_EINVAL);
    assert_non_null(strstr(err, "the workdir packs to more than 0 MiB (at "));
    assert_non_null(strstr(err, "leave large files out with workdir_exclude"));
    assert_true(r.size <= 4096);
}

/* A tar of hostile entries, written with libarchive itself. */
struct bad_entry {
    const char *name;
    mode_t type;
    const char *link;  /* symlink target or hardlink name */
    const char *data;
};

static void write_tar(const char *name, const struct bad_entry *es, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.tar", root, name);
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, es[i].name);
        archive_entry_set_filetype(e, es[i].type);
        archive_entry_set_perm(e, 0644);
        if (es[i].type == AE_IFLNK)
            archive_entry_set_symlink(e, es[i].link);
        else if (es[i].link != NULL)
            archive_entry_set_hardlink(e, es[i].link);
        size_t len = es[i].data ? strlen(es[i].data) : 0;
        archive_entry_set_size(e, (la_int64_t)len);
        archive_write_header(a, e);
        if (len > 0)
            archive_write_data(a, es[i].data, len);
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
}

static void hostile(void **state)
{
    (void)state;
    static const struct {
        struct bad_entry e[2];
        size_t n;
        const char *why;
    } cases[] = {
        {{{"../escape", AE_IFREG, NULL, "x"}}, 1, "the workdir tar holds \"../escape\": not a "
                                                "relative name inside the workdir"},
        {{{"a/../../escape", AE_IFREG, NULL, "x"}}, 1, "not a relative name"},
        {{{"/tmp/ebb-abs-escape", AE_IFREG, NULL, "x"}}, 1, "not a relative name"},
        {{{"ln", AE_IFLNK, "/tmp", NULL}, {"ln/escape", AE_IFREG, NULL, "x"}}, 2,
         "the workdir tar holds \"ln\", which is not a regular file or a directory"},
        {{{"a", AE_IFREG, NULL, "x"}, {"h", AE_IFREG, "/etc/passwd", NULL}}, 2,
         "\"h\", which is not a regular file or a directory"},
        {{{"dev", AE_IFCHR, NULL, NULL}}, 1, "\"dev\", which is not a regular file"},
    };
    char dest[512], err[512];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_tar("bad", cases[i].e, cases[i].n);
        snprintf(dest, sizeof(dest), "%s/bad%zu", root, i);
        sh("mkdir %s", dest);
        assert_int_equal(extract_from("bad", dest, err, sizeof(err)), EBB_EINVAL);
        if (strstr(err, cases[i].why) == NULL)
            fail_msg("case %zu: %s", i, err);
    }
    sh("test ! -e %s/escape && test ! -e /tmp/ebb-abs-escape && test ! -e /tmp/escape", root);
    /* A link already on the disk is not gone through either. */
    snprintf(dest, sizeof(dest), "%s/linked", root);
    sh("mkdir -p %s/elsewhere %s && ln -s %s/elsewhere %s/sub", root, dest, root, dest);
    struct bad_entry through[] = {{"sub/x", AE_IFREG, NULL, "x"}};
    write_tar("through", through, 1);
    assert_int_equal(extract_from("through", dest, err, sizeof(err)), EBB_EIO);
    sh("test ! -e %s/elsewhere/x", root);
    /* Not a tar at all. */
    sh("head -c 3000 /dev/urandom >%s/junk.tar && mkdir %s/junk", root, root);
    snprintf(dest, sizeof(dest), "%s/junk", root);
    assert_int_equal(extract_from("junk", dest, err, sizeof(err)), EBB_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(refusals),
        cmocka_unit_test(hostile),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
