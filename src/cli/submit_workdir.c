/* ebb submit's workdir: the spec's `workdir:` resolved from the spec file's
 * directory, packed into a tar (io/workdir_tar.h) honouring
 * workdir_exclude, and handed to ebbd with `workdir_put` in chunks that
 * fit the API's 1 MiB requests, when ebbd wants it (it has a store to
 * keep it in and does not hold it yet). For a job with checkpoint.store
 * the upload names that store, and ebb submit waits (polling workdir_put
 * every 200 ms, at most 10 minutes) until ebbd has the tar in it: a
 * failure is an error and nothing is submitted. The submit then names the
 * tar by its SHA-256. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/str.h"
#include "cli/cli.h"
#include "io/workdir_tar.h"
#include "jobs/jobspec.h"

/* Raw bytes per workdir_put: 4/3 of it in base64 stays well below the
 * 1 MiB request. */
#define CHUNK (512 * 1024)
/* Polls of ebbd while it keeps the tar in the store: 200 ms apart, for at
 * most 10 minutes. */
#define POLL_MS 200
#define POLLS (10 * 60 * 1000 / POLL_MS)

static int skip_excluded(void *arg, const char *path, int is_dir)
{
    return ebb__workdir_excluded(arg, path, is_dir);
}

/* The workdir as an absolute, canonical path, or NULL with why printed. */
static char *resolve(const char *file, const struct ebb__job_spec *s)
{
    char *base = NULL, *dir;
    if (s->workdir_src[0] == '/') {
        dir = ebb_strfmt("%s", s->workdir_src);
    } else {
        char *copy = ebb_strfmt("%s", file);
        base = copy ? ebb_strfmt("%s", dirname(copy)) : NULL;
        free(copy);
        dir = base ? ebb_strfmt("%s/%s", base, s->workdir_src) : NULL;
    }
    free(base);
    char *real = dir ? realpath(dir, NULL) : NULL;
    struct stat st;
    if (real == NULL || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "ebb submit: %s:%d: workdir: %s: %s\n", file, s->workdir_line,
                dir ? dir : s->workdir_src,
                real == NULL ? strerror(errno) : "not a directory");
        free(real);
        real = NULL;
    }
    free(dir);
    return real;
}

/* An unnamed file for the tar: gone when ebb submit exits. */
static int temp_file(void)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    int fd = open(tmp, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    char *name = ebb_strfmt("%s/ebb-workdir.XXXXXX", tmp);
    fd = name ? mkostemp(name, O_CLOEXEC) : -1;
    if (fd >= 0)
        unlink(name);
    free(name);
    return fd;
}

/* workdir_put with `params` (a new reference, which this takes). */
static int put(struct cli *cli, json_t *params, json_t **r)
{
    if (params == NULL) {
        fprintf(stderr, "ebb submit: out of memory\n");
        return CLI_FAIL;
    }
    int code = cli_call(cli, "workdir_put", params, r);
    json_decref(params);
    return code;
}

/* workdir_put's begin: {sha256, size[, store]}. */
static json_t *begin_params(const char *sha, uint64_t size, const char *store)
{
    json_t *p = json_pack("{s:s,s:I}", "sha256", sha, "size", (json_int_t)size);
    if (p != NULL && store != NULL &&
        json_object_set_new(p, "store", json_string(store)) != 0) {
        json_decref(p);
        p = NULL;
    }
    return p;
}

/* Waits until ebbd has the tar in `store`: stored, or an error. */
static int wait_stored(struct cli *cli, const char *file, int line, const char *sha,
                       uint64_t size, const char *store)
{
    for (int polls = 0; polls <= POLLS; polls++) {
        json_t *r = NULL;
        int code = put(cli, begin_params(sha, size, store), &r);
        if (code != CLI_OK)
            return code;
        const char *state = json_string_value(json_object_get(r, "state"));
        const char *reason = json_string_value(json_object_get(r, "reason"));
        if (state != NULL && strcmp(state, "stored") == 0) {
            json_decref(r);
            return CLI_OK;
        }
        if (state == NULL || strcmp(state, "sealing") != 0) {
            fprintf(stderr, "ebb submit: %s:%d: workdir: ebbd could not keep the packed "
                    "workdir in store %s: %s; nothing was submitted\n", file, line, store,
                    reason ? reason : state ? state : "it lost the upload");
            json_decref(r);
            return CLI_FAIL;
        }
        json_decref(r);
        nanosleep(&(struct timespec){0, POLL_MS * 1000000L}, NULL);
    }
    fprintf(stderr, "ebb submit: %s:%d: workdir: ebbd did not finish keeping the packed "
            "workdir in store %s within 10 minutes; nothing was submitted\n", file, line,
            store);
    return CLI_FAIL;
}

/* Sends the tar in `fd` to ebbd from the offset it asks for. */
static int upload(struct cli *cli, int fd, const char *sha, uint64_t size, const char *store)
{
    json_t *r = NULL;
    int code = put(cli, begin_params(sha, size, store), &r);
    if (code != CLI_OK)
        return code;
    int needed = json_is_true(json_object_get(r, "needed"));
    json_int_t offset = json_integer_value(json_object_get(r, "offset"));
    json_decref(r);
    static unsigned char raw[CHUNK];
    static char b64[CHUNK / 3 * 4 + 8];
    /* Each answer must move the offset on: at most size / CHUNK + 1 turns. */
    for (uint64_t turns = 0; needed && (uint64_t)offset < size; turns++) {
        if (offset < 0 || turns > size / CHUNK + 1) {
            fprintf(stderr, "ebb submit: ebbd asked for the workdir at offset %lld of "
                    "%llu\n", (long long)offset, (unsigned long long)size);
            return CLI_FAIL;
        }
        size_t want = size - (uint64_t)offset < CHUNK ? (size_t)(size - (uint64_t)offset)
                                                       : CHUNK;
        ssize_t n = pread(fd, raw, want, offset);
        if (n != (ssize_t)want) {
            fprintf(stderr, "ebb submit: cannot read the packed workdir: %s\n",
                    n < 0 ? strerror(errno) : "short read");
            return CLI_FAIL;
        }
        EVP_EncodeBlock((unsigned char *)b64, raw, (int)n);
        code = put(cli, json_pack("{s:s,s:I,s:I,s:s}", "sha256", sha, "size",
                                  (json_int_t)size, "offset", offset, "data", b64),
                   &r);
        if (code != CLI_OK)
            return code;
        offset = json_integer_value(json_object_get(r, "offset"));
        json_decref(r);
    }
    return CLI_OK;
}

int cli_submit_workdir(struct cli *cli, const char *file, json_t *params)
{
    const char *yaml = json_string_value(json_object_get(params, "yaml"));
    struct ebb__job_spec s;
    struct ebb_diag d = {{0}};
    /* A spec that does not parse is ebbd's to refuse, as without workdir. */
    if (ebb__jobspec_load_buffer(file, yaml, strlen(yaml), &s, &d) != 0 ||
        s.workdir_src == NULL) {
        ebb__jobspec_free(&s);
        return CLI_OK;
    }
    char *dir = resolve(file, &s);
    int fd = dir ? temp_file() : -1;
    int code = dir == NULL ? CLI_USAGE : CLI_OK;
    if (dir != NULL && fd < 0) {
        fprintf(stderr, "ebb submit: cannot make a temporary file for the workdir: %s\n",
                strerror(errno));
        code = CLI_FAIL;
    }
    struct ebb__workdir_packed packed;
    char err[1024];
    if (code == CLI_OK) {
        int rc = ebb__workdir_pack(dir, fd, skip_excluded, &s.workdir_exclude,
                                   EBB__WORKDIR_MAX_BYTES, &packed, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "ebb submit: %s:%d: workdir: %s\n", file, s.workdir_line, err);
            code = rc == EBB_EINVAL ? CLI_USAGE : CLI_FAIL;
        }
    }
    char sha[65];
    for (size_t i = 0; code == CLI_OK && i < 32; i++)
        snprintf(sha + 2 * i, 3, "%02x", packed.sha256[i]);
    if (code == CLI_OK)
        code = upload(cli, fd, sha, packed.size, s.checkpoint.store);
    if (code == CLI_OK && s.checkpoint.store != NULL)
        code = wait_stored(cli, file, s.workdir_line, sha, packed.size, s.checkpoint.store);
    if (code == CLI_OK &&
        (json_object_set_new(params, "workdir", json_string(dir)) != 0 ||
         json_object_set_new(params, "workdir_archive",
                             json_pack("{s:s,s:I}", "sha256", sha, "size",
                                       (json_int_t)packed.size)) != 0)) {
        fprintf(stderr, "ebb submit: out of memory\n");
        code = CLI_FAIL;
    }
    if (fd >= 0)
        close(fd);
    free(dir);
    ebb__jobspec_free(&s);
    return code;
}
