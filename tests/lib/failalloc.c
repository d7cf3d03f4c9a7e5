/* The failing allocator (see failalloc.h). The __real_ functions are the
 * ones the linker's --wrap leaves under those names: libc's (or the
 * sanitizer's, which intercepts libc's). */
#include "failalloc.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static long armed, seen;
static int hit;

void failalloc_arm(long n)
{
    armed = n;
    seen = 0;
    hit = 0;
}

long failalloc_count(void)
{
    return seen;
}

int failalloc_hit(void)
{
    return hit;
}

/* 1 when this allocation is the one to fail. */
static int fail_now(void)
{
    seen++;
    if (armed > 0 && seen == armed) {
        hit = 1;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t size)
{
    return fail_now() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
    return fail_now() ? NULL : __real_realloc(p, size);
}

char *__wrap_strdup(const char *s)
{
    return fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
    return fail_now() ? NULL : __real_strndup(s, n);
}

/* SQLite's allocator interface over the wrapped functions. SQLite asks
 * for the size of a block, so each block carries it in front (8 bytes,
 * which keeps SQLite's 8-byte alignment). */
static void *sq_malloc(int n)
{
    long long *p = __wrap_malloc((size_t)n + 8);
    if (p == NULL)
        return NULL;
    p[0] = n;
    return p + 1;
}

static void sq_free(void *p)
{
    if (p != NULL)
        free((long long *)p - 1);
}

static void *sq_realloc(void *p, int n)
{
    long long *q = __wrap_realloc(p != NULL ? (long long *)p - 1 : NULL,
                                  (size_t)n + 8);
    if (q == NULL)
        return NULL;
    q[0] = n;
    return q + 1;
}

static int sq_size(void *p)
{
    return p != NULL ? (int)((long long *)p)[-1] : 0;
}

static int sq_roundup(int n)
{
    return (n + 7) & ~7;
}

static int sq_init(void *arg)
{
    (void)arg;
    return SQLITE_OK;
}

static void sq_shutdown(void *arg)
{
    (void)arg;
}

void failalloc_init(void)
{
    static const sqlite3_mem_methods mem = {
        sq_malloc, sq_free, sq_realloc, sq_size, sq_roundup, sq_init,
        sq_shutdown, NULL,
    };
    sqlite3_config(SQLITE_CONFIG_MALLOC, &mem);
}
