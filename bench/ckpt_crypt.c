/* bench-ckpt-crypt: a checkpoint file sealed into a stored object and
 * opened again (src/io/ckpt_stream.c: AES-256-GCM in 4 MiB chunks, both
 * SHA-256 hashes, through files), against a plain read+write copy of the
 * same file with a 4 MiB buffer in the same run, and the hash-only copy
 * of `encrypt: false`. Prints seconds, MiB/s, the ratios, and the peak
 * resident memory of a child doing one copy, one encryption and one
 * decryption (the buffer of the copy is the baseline's 4 MiB; the file
 * size must not show in the others).
 *
 * Usage: bench-ckpt-crypt [MIB [DIR]]: a file of MIB MiB (default 1024)
 * in DIR (default $TMPDIR or /tmp); the files are removed at the end.
 * Best of three runs each, in wall-clock time and in CPU time (user and
 * system, the steadier figure on a shared machine). Exits 1 only when a
 * run fails. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/ckpt_object.h"

#define BUF (4u << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}


static int open_in(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        perror(path);
    return fd;
}

static int open_out(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        perror(path);
    return fd;
}

/* The baseline: read(2) and write(2) of the whole file, 4 MiB at a time. */
static int plain_copy(const char *from, const char *to, unsigned char *buf)
{
    int in = open_in(from), out = open_out(to), rc = in < 0 || out < 0 ? -1 : 0;
    for (ssize_t n = 1; rc == 0 && n > 0;) {
        n = ebb__ckpt_fd_read(&in, buf, BUF);
        if (n < 0 || (n > 0 && ebb__ckpt_fd_write(&out, buf, (size_t)n) != 0))
            rc = -1;
    }
    close(in);
    close(out);
    return rc;
}

enum op { OP_COPY, OP_HASH_COPY, OP_ENCRYPT, OP_DECRYPT };

static int run(enum op op, const struct ebb__ckpt_key *k, const char *from, const char *to,
               int64_t stored, unsigned char *buf)
{
    if (op == OP_COPY)
        return plain_copy(from, to, buf);
    int in = open_in(from), out = open_out(to);
    struct ebb__ckpt_sums sums;
    struct ebb__ckpt_error err = {0};
    int rc = in < 0 || out < 0 ? -1 : 0;
    if (rc == 0 && op == OP_HASH_COPY)
        rc = ebb__ckpt_copy(ebb__ckpt_fd_read, &in, ebb__ckpt_fd_write, &out, &sums, &err);
    else if (rc == 0 && op == OP_ENCRYPT)
        rc = ebb__ckpt_encrypt(k, "bench", "model.pt", ebb__ckpt_fd_read, &in,
                               ebb__ckpt_fd_write, &out, &sums, &err);
    else if (rc == 0)
        rc = ebb__ckpt_decrypt(k, "bench", "model.pt", stored, ebb__ckpt_fd_read, &in,
                               ebb__ckpt_fd_write, &out, &sums, &err);
    if (rc != 0)
        fprintf(stderr, "bench-ckpt-crypt: %s\n", err.diag.msg);
    close(in);
    close(out);
    return rc;
}

/* The process's user and system CPU seconds so far. */
static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The best wall-clock time of three runs, and the least CPU time of one
 * (on a shared machine the CPU time is the steadier figure). */
struct timing {
    double wall, cpu;
};

static struct timing best_of_3(enum op op, const struct ebb__ckpt_key *k, const char *from,
                               const char *to, int64_t stored, unsigned char *buf)
{
    struct timing best = {1e30, 1e30};
    for (int i = 0; i < 3; i++) {
        double t0 = now(), c0 = cpu_now();
        if (run(op, k, from, to, stored, buf) != 0)
            return (struct timing){-1, -1};
        double t = now() - t0, c = cpu_now() - c0;
        best.wall = t < best.wall ? t : best.wall;
        best.cpu = c < best.cpu ? c : best.cpu;
    }
    return best;
}

static void row(const char *what, double mib, struct timing t, struct timing base)
{
    printf("%-34s %7.3f s %7.0f MiB/s %5.2fx | cpu %7.3f s %7.0f MiB/s %5.2fx\n", what,
           t.wall, mib / t.wall, t.wall / base.wall, t.cpu, mib / t.cpu, t.cpu / base.cpu);
}

/* The peak resident memory (KiB) of a child process that does one run:
 * what one stream costs, beside what the baseline's costs. */
static long child_peak_kib(enum op op, const struct ebb__ckpt_key *k, const char *from,
                           const char *to, int64_t stored, unsigned char *buf)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(run(op, k, from, to, stored, buf) == 0 ? 0 : 1);
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return -1;
    return ru.ru_maxrss;
}

static int make_input(const char *path, size_t mib, unsigned char *buf)
{
    int fd = open_out(path);
    if (fd < 0)
        return -1;
    uint64_t x = 88172645463325252u;
    int rc = 0;
    for (size_t m = 0; m < mib && rc == 0; m++) {
        for (size_t i = 0; i < (1u << 20); i += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(buf + (m % 4) * (1u << 20) + i, &x, 8);
        }
        if (m % 4 == 3 || m + 1 == mib)
            rc = ebb__ckpt_fd_write(&fd, buf, ((m % 4) + 1) << 20);
    }
    close(fd);
    return rc;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 1024;
    const char *dir = argc > 2 ? argv[2] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (mib == 0 || mib > 65536) {
        fprintf(stderr, "usage: bench-ckpt-crypt [MIB (1..65536) [DIR]]\n");
        return 1;
    }
    char plain[4096], stored[4096], back[4096];
    snprintf(plain, sizeof(plain), "%s/bench-ckpt-%d.plain", dir, (int)getpid());
    snprintf(stored, sizeof(stored), "%s/bench-ckpt-%d.stored", dir, (int)getpid());
    snprintf(back, sizeof(back), "%s/bench-ckpt-%d.back", dir, (int)getpid());
    unsigned char *buf = malloc(BUF);
    struct ebb__ckpt_key k;
    if (buf == NULL || ebb__ckpt_key_generate(&k) != 0 || make_input(plain, mib, buf) != 0)
        return 1;
    int64_t stored_size = (int64_t)ebb__ckpt_stored_size((uint64_t)mib << 20);
    struct timing copy = best_of_3(OP_COPY, &k, plain, back, -1, buf);
    struct timing hash = best_of_3(OP_HASH_COPY, &k, plain, back, -1, buf);
    struct timing enc = best_of_3(OP_ENCRYPT, &k, plain, stored, -1, buf);
    struct timing dec = best_of_3(OP_DECRYPT, &k, stored, back, stored_size, buf);
    long rss_copy = child_peak_kib(OP_COPY, &k, plain, back, -1, buf);
    long rss_enc = child_peak_kib(OP_ENCRYPT, &k, plain, stored, -1, buf);
    long rss_dec = child_peak_kib(OP_DECRYPT, &k, stored, back, stored_size, buf);
    unlink(plain);
    unlink(stored);
    unlink(back);
    free(buf);
    if (copy.wall < 0 || hash.wall < 0 || enc.wall < 0 || dec.wall < 0 || rss_copy < 0 ||
        rss_enc < 0 || rss_dec < 0)
        return 1;
    double mb = (double)mib;
    printf("file: %zu MiB in %s, best of 3; wall clock, then CPU (user+system), "
           "each against the baseline\n", mib, dir);
    row("plain read+write copy (baseline)", mb, copy, copy);
    row("hash-only copy (encrypt: false)", mb, hash, copy);
    row("encrypt (AES-256-GCM + 2 SHA-256)", mb, enc, copy);
    row("decrypt and verify", mb, dec, copy);
    printf("encrypt+decrypt / two copies: wall %.2fx, cpu %.2fx\n",
           (enc.wall + dec.wall) / (2 * copy.wall), (enc.cpu + dec.cpu) / (2 * copy.cpu));
    printf("peak RSS of one run: copy %ld KiB, encrypt %ld KiB (+%ld), decrypt %ld KiB (+%ld); "
           "stated bound %zu KiB per stream\n", rss_copy, rss_enc, rss_enc - rss_copy, rss_dec,
           rss_dec - rss_copy, EBB__CKPT_STREAM_MEMORY / 1024);
    return 0;
}
