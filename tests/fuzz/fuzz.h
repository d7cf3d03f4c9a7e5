/* What the fuzz targets share: the libFuzzer entry point's prototype, a
 * NUL-terminated copy of the input, and the check that turns a broken
 * invariant into a crash libFuzzer reports (abort() with a line saying
 * which one). Header-only so that each target stays one file plus the
 * product code it exercises. */
#ifndef EBB_FUZZ_H
#define EBB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts, naming the invariant and where it is, when `cond` is false. */
#define FUZZ_CHECK(cond)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__,      \
                    __LINE__, #cond);                                       \
            abort();                                                        \
        }                                                                   \
    } while (0)

/* A malloc'd copy of the input with a NUL after it (parsers of C strings
 * stop at an embedded NUL, as they do on the real path). Aborts when out
 * of memory: that is libFuzzer's -rss_limit_mb to report, not a finding. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    FUZZ_CHECK(s != NULL);
    if (size > 0)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
