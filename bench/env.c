/* bench-env: the agent's merge of its own environment with the job
 * document's (agent_job_environ, src/agent/job.c), against the merge it
 * replaced, which compared each entry with every entry of the document
 * (#16 point 11), kept here as the baseline. Both run on the same
 * generated environments: N variables of the agent's own and N set by the
 * document, half of those overriding the agent's. The best of a few runs
 * is printed in ms with the ratio; the baseline is skipped where it would
 * take minutes. Figures only; nothing passes or fails.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/job.h"

extern char **environ;

#define RUNS 3
/* Past this the baseline's N^2 compares take minutes on a shared core. */
#define BASELINE_MAX 100000

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The replaced code, as it was. */
static bool old_name_in(const char *entry, char *const *extra, size_t n_extra)
{
    size_t nlen = strcspn(entry, "=");
    if (nlen == strlen("EBB_AGENT_TOKEN") && memcmp(entry, "EBB_AGENT_TOKEN", nlen) == 0)
        return true;
    for (size_t i = 0; i < n_extra; i++)
        if (strncmp(extra[i], entry, nlen) == 0 && extra[i][nlen] == '=')
            return true;
    return false;
}

static char **old_environ(char *const *extra, size_t n_extra)
{
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **envp = calloc(n + n_extra + 1, sizeof(char *));
    if (envp == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!old_name_in(environ[i], extra, n_extra))
            envp[k++] = environ[i];
    for (size_t i = 0; i < n_extra; i++)
        if (!old_name_in(extra[i], extra + i + 1, n_extra - i - 1))
            envp[k++] = extra[i];
    return envp;
}

/* n entries "<c>NNNNNNN=<value>", where <c> is `even` for even i and
 * `odd` for odd i. */
static char **strings(size_t n, char even, char odd, const char *value)
{
    char **v = calloc(n + 1, sizeof(*v));
    for (size_t i = 0; v != NULL && i < n; i++) {
        v[i] = malloc(32);
        if (v[i] != NULL)
            snprintf(v[i], 32, "%c%07zu=%s", i % 2 == 0 ? even : odd, i, value);
    }
    return v;
}

static void strings_free(char **v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

/* Best of `runs` in ms; -1 when a run fails. Counts the entries of the
 * last result in *out_n. */
static double best_ms(char **(*merge)(char *const *, size_t), char **extra, size_t n,
                      int runs, size_t *out_n)
{
    double best = -1;
    for (int r = 0; r < runs; r++) {
        double t0 = now_ms();
        char **env = merge(extra, n);
        double t = now_ms() - t0;
        if (env == NULL)
            return -1;
        size_t k = 0;
        while (env[k] != NULL)
            k++;
        *out_n = k;
        free(env);
        if (best < 0 || t < best)
            best = t;
    }
    return best;
}

int main(void)
{
    static const size_t sizes[] = {1000, 10000, 100000, 1000000};
    char **saved = environ;
    printf("%10s %10s %14s %14s %8s\n", "N", "entries", "sorted (ms)", "baseline (ms)",
           "ratio");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        char **own = strings(n, 'A', 'A', "own");
        char **extra = strings(n, 'A', 'B', "doc");
        if (own == NULL || extra == NULL)
            return 1;
        environ = own;
        size_t got = 0, want = 0;
        double t_new = best_ms(agent_job_environ, extra, n, RUNS, &got);
        /* One baseline run at 100,000: it takes over a minute. */
        double t_old = n <= BASELINE_MAX
                           ? best_ms(old_environ, extra, n, n < BASELINE_MAX ? RUNS : 1, &want)
                           : -1;
        environ = saved;
        if (t_new < 0 || (t_old >= 0 && want != got))
            return 1;
        if (t_old >= 0)
            printf("%10zu %10zu %14.2f %14.1f %7.0fx\n", n, got, t_new, t_old,
                   t_old / (t_new > 0.001 ? t_new : 0.001));
        else
            printf("%10zu %10zu %14.2f %14s %8s\n", n, got, t_new, "(skipped)", "");
        strings_free(own, n);
        strings_free(extra, n);
    }
    return 0;
}
