/* A checkpoint's stored objects made as they are sent (see ckpt_seal.h). */
#include "agent/ckpt_seal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "agent/ckpt_walk.h"
#include "base/str.h"

#define SEALED_CHUNK ((uint64_t)EBB__CKPT_CHUNK_SIZE + EBB__CKPT_TAG_LEN)

static uint64_t chunks_of(uint64_t size)
{
    return size == 0 ? 1 : (size + EBB__CKPT_CHUNK_SIZE - 1) / EBB__CKPT_CHUNK_SIZE;
}

int agent_seal_prepare(struct agent_seal *s, struct ebb__ckpt_manifest *m, int dirfd,
                       const struct ebb__ckpt_key *key, char *why, size_t len)
{
    *s = (struct agent_seal){.m = m, .dirfd = dirfd, .encrypt = key != NULL};
    if (key != NULL)
        s->key = *key;
    size_t n = m->n_files;
    s->first_chunk = calloc(n + 1, sizeof(*s->first_chunk));
    s->headers = key ? calloc(n ? n : 1, sizeof(*s->headers)) : NULL;
    if (s->first_chunk == NULL || (key != NULL && s->headers == NULL)) {
        snprintf(why, len, "out of memory");
        return EBB_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        struct ebb__ckpt_manifest_file *f = &m->files[i];
        f->stored_size = key ? ebb__ckpt_stored_size(f->size) : f->size;
        s->first_chunk[i + 1] = s->first_chunk[i] + chunks_of(f->size);
        if (key == NULL)
            continue;
        struct ebb__ckpt_file sealer;
        struct ebb__ckpt_error err = {0};
        int rc = ebb__ckpt_file_seal(&sealer, key, m->name, f->path, &err);
        if (rc != 0) {
            snprintf(why, len, "%s: %s", f->path, err.diag.msg);
            return rc;
        }
        memcpy(s->headers[i], sealer.header, EBB__CKPT_HEADER_LEN);
        ebb__ckpt_file_close(&sealer);
    }
    uint64_t chunks = s->first_chunk[n];
    s->hashed = calloc(chunks ? chunks : 1, sizeof(*s->hashed));
    s->sent = calloc(chunks ? chunks : 1, sizeof(*s->sent));
    s->sent_known = calloc(chunks ? chunks : 1, 1);
    if (s->hashed == NULL || s->sent == NULL || s->sent_known == NULL) {
        snprintf(why, len, "out of memory");
        return EBB_ENOMEM;
    }
    return 0;
}

void agent_seal_free(struct agent_seal *s)
{
    free(s->headers);
    free(s->first_chunk);
    free(s->hashed);
    free(s->sent);
    free(s->sent_known);
    ebb__ckpt_key_wipe(&s->key);
    memset(s, 0, sizeof(*s));
}

/* A chunk's fingerprint from its stored bytes: the tag at their end when
 * sealed, else the head of their SHA-256. */
static int fingerprint(bool encrypt, const unsigned char *stored, size_t len, unsigned char *fp)
{
    if (encrypt) {
        memcpy(fp, stored + len - EBB__CKPT_TAG_LEN, AGENT_FP_LEN);
        return 0;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(stored, len, md, &n, EVP_sha256(), NULL) != 1)
        return EBB_EIO;
    memcpy(fp, md, AGENT_FP_LEN);
    return 0;
}

/* The path of file `f` below the checkpoint directory: the entry itself
 * for a file checkpoint, else below the entry. Caller frees. */
static char *file_path(const struct ebb__ckpt_manifest *m, const struct ebb__ckpt_manifest_file *f)
{
    return m->kind == EBB__CKPT_KIND_FILE ? ebb_strfmt("%s", m->name)
                                          : ebb_strfmt("%s/%s", m->name, f->path);
}

static int open_file(const struct agent_seal *s, size_t file, char *why, size_t len)
{
    const struct ebb__ckpt_manifest_file *f = &s->m->files[file];
    char *path = file_path(s->m, f);
    int fd = path ? agent_open_beneath(s->dirfd, path) : -ENOMEM;
    free(path);
    if (fd < 0)
        snprintf(why, len, "%s: %s", f->path, fd == -ELOOP ? "a symbolic link"
                 : fd == -EINVAL ? "no longer a regular file" : strerror(-fd));
    return fd;
}

/* ---- the hash pass ---- */

/* Where the hash pass's stream puts what it made: only the chunks'
 * fingerprints (the header comes first when sealed). */
struct sink {
    const struct agent_seal *s;
    agent_fp *out;
    uint64_t n, cap;
    bool header_seen, grew;
};

static int sink_write(void *arg, const void *buf, size_t len)
{
    struct sink *k = arg;
    if (k->s->encrypt && !k->header_seen) {
        k->header_seen = true;
        return 0;
    }
    if (k->n == k->cap) {   /* the file grew since the walk */
        k->grew = true;
        return EBB_EINVAL;
    }
    return fingerprint(k->s->encrypt, buf, len, k->out[k->n++]);
}

int agent_seal_hash(const struct agent_seal *s, struct ebb__ckpt_sums *sums, char *why,
                    size_t len)
{
    for (size_t i = 0; i < s->m->n_files; i++) {
        const struct ebb__ckpt_manifest_file *f = &s->m->files[i];
        int fd = open_file(s, i, why, len);
        if (fd < 0)
            return fd == -ENOMEM ? EBB_ENOMEM : EBB_EIO;
        struct sink k = {.s = s, .out = s->hashed + s->first_chunk[i],
                         .cap = s->first_chunk[i + 1] - s->first_chunk[i]};
        struct ebb__ckpt_error err = {0};
        struct ebb__ckpt_file sealer = {0};
        int rc = 0;
        if (s->encrypt) {
            rc = ebb__ckpt_file_open(&sealer, &s->key, s->m->name, f->path, s->headers[i], &err);
            if (rc == 0)
                rc = ebb__ckpt_encrypt_file(&sealer, ebb__ckpt_fd_read, &fd, sink_write, &k,
                                            &sums[i], &err);
            ebb__ckpt_file_close(&sealer);
        } else {
            rc = ebb__ckpt_copy(ebb__ckpt_fd_read, &fd, sink_write, &k, &sums[i], &err);
        }
        close(fd);
        if (k.grew)
            sums[i].size = f->size + 1;
        else if (rc != 0) {
            snprintf(why, len, "%s: %s", f->path, err.diag.msg);
            return rc;
        }
        if (sums[i].size != f->size) {
            snprintf(why, len, "%s changed while it was read (%llu bytes, then %s)",
                     f->path, (unsigned long long)f->size,
                     sums[i].size > f->size ? "more" : "fewer");
            return EBB_EINVAL;
        }
    }
    return 0;
}

/* ---- matching fingerprints ---- */

int agent_seal_check(struct agent_seal *s, uint64_t chunk, const unsigned char *fp)
{
    if (s->hashed_done)
        return CRYPTO_memcmp(s->hashed[chunk], fp, AGENT_FP_LEN) == 0 ? 0 : EBB_EINVAL;
    if (s->sent_known[chunk])
        return CRYPTO_memcmp(s->sent[chunk], fp, AGENT_FP_LEN) == 0 ? 0 : EBB_EINVAL;
    memcpy(s->sent[chunk], fp, AGENT_FP_LEN);
    s->sent_known[chunk] = 1;
    return 0;
}

int agent_seal_hashed(struct agent_seal *s, size_t *file)
{
    s->hashed_done = true;
    size_t f = 0;
    for (uint64_t c = 0; c < s->first_chunk[s->m->n_files]; c++) {
        while (c >= s->first_chunk[f + 1])
            f++;
        if (s->sent_known[c] && CRYPTO_memcmp(s->sent[c], s->hashed[c], AGENT_FP_LEN) != 0) {
            *file = f;
            return EBB_EINVAL;
        }
    }
    return 0;
}

/* ---- reading at any offset ---- */

int agent_seal_reader_open(struct agent_seal_reader *r, const struct agent_seal *s,
                           size_t file, unsigned char *buf)
{
    *r = (struct agent_seal_reader){.s = s, .file = file, .fd = -1, .chunk = UINT64_MAX,
                                    .buf = buf};
    const char *path = s->m->files[file].path;
    struct ebb__ckpt_error err = {0};
    if (s->encrypt &&
        ebb__ckpt_file_open(&r->f, &s->key, s->m->name, path, s->headers[file], &err) != 0) {
        snprintf(r->why, sizeof(r->why), "%.100s: %.190s", path, err.diag.msg);
        return EBB_EIO;
    }
    r->fd = open_file(s, file, r->why, sizeof(r->why));
    return r->fd >= 0 ? 0 : r->fd == -ENOMEM ? EBB_ENOMEM : EBB_EIO;
}

void agent_seal_reader_close(struct agent_seal_reader *r)
{
    if (r->s == NULL)   /* never opened, or closed */
        return;
    if (r->fd >= 0)
        close(r->fd);
    ebb__ckpt_file_close(&r->f);
    memset(r, 0, sizeof(*r));
    r->fd = -1;
}

/* Reads and makes chunk `k` into the buffer. */
static int make_chunk(struct agent_seal_reader *r, uint64_t k, agent_seal_seen_fn seen,
                      void *arg)
{
    const struct agent_seal *s = r->s;
    const struct ebb__ckpt_manifest_file *f = &s->m->files[r->file];
    uint64_t n = s->first_chunk[r->file + 1] - s->first_chunk[r->file];
    uint64_t from = k * EBB__CKPT_CHUNK_SIZE;
    size_t plain = (size_t)(f->size - from < EBB__CKPT_CHUNK_SIZE ? f->size - from
                                                                  : EBB__CKPT_CHUNK_SIZE);
    r->chunk = UINT64_MAX;
    for (size_t got = 0; got < plain;) {
        ssize_t m = pread(r->fd, r->buf + got, plain - got, (off_t)(from + got));
        if (m < 0 && errno == EINTR)
            continue;
        if (m <= 0) {
            snprintf(r->why, sizeof(r->why), "%.200s: %s", f->path,
                     m < 0 ? strerror(errno) : "changed while it was read (shorter)");
            return EBB_EIO;
        }
        got += (size_t)m;
    }
    size_t stored = plain;
    if (s->encrypt) {
        if (ebb__ckpt_chunk_seal(&r->f, k, k + 1 == n, r->buf, plain, r->buf + plain) != 0) {
            snprintf(r->why, sizeof(r->why), "%.200s: sealing failed (OpenSSL)", f->path);
            return EBB_EIO;
        }
        stored += EBB__CKPT_TAG_LEN;
    }
    agent_fp fp;
    if (fingerprint(s->encrypt, r->buf, stored, fp) != 0 ||
        seen(arg, s->first_chunk[r->file] + k, fp) != 0) {
        snprintf(r->why, sizeof(r->why), "%.200s changed while it was read", f->path);
        return EBB_EINVAL;
    }
    r->chunk = k;
    r->len = stored;
    return 0;
}

ssize_t agent_seal_read(struct agent_seal_reader *r, uint64_t at, void *out, size_t len,
                        agent_seal_seen_fn seen, void *arg)
{
    const struct agent_seal *s = r->s;
    const struct ebb__ckpt_manifest_file *f = &s->m->files[r->file];
    if (at >= f->stored_size || len == 0) {
        snprintf(r->why, sizeof(r->why), "%.200s: a read past the object's end", f->path);
        return EBB_EINVAL;
    }
    if (s->encrypt && at < EBB__CKPT_HEADER_LEN) {
        size_t n = EBB__CKPT_HEADER_LEN - (size_t)at < len ? EBB__CKPT_HEADER_LEN - (size_t)at
                                                           : len;
        memcpy(out, s->headers[r->file] + at, n);
        return (ssize_t)n;
    }
    uint64_t body = s->encrypt ? at - EBB__CKPT_HEADER_LEN : at;
    uint64_t step = s->encrypt ? SEALED_CHUNK : EBB__CKPT_CHUNK_SIZE;
    uint64_t k = body / step, within = body % step;
    if (r->chunk != k) {
        int rc = make_chunk(r, k, seen, arg);
        if (rc != 0)
            return rc;
    }
    size_t n = r->len - (size_t)within < len ? r->len - (size_t)within : len;
    memcpy(out, r->buf + within, n);
    return (ssize_t)n;
}
