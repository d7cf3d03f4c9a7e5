/* Small string helpers that STYLE.md's banned calls would otherwise tempt. */
#ifndef EBB_STR_H
#define EBB_STR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <ebb/buf.h>
#include <ebb/common.h>

/* A short id for users to type: `prefix` and 8 hex digits of a hash of
 * the name, the time and a sequence number ("j-1a2b3c4d"). Short means two
 * may collide: callers store it under a unique key and draw another
 * (the next `seq`) when it is taken. */
void ebb__short_id(const char *prefix, const char *name, int64_t at,
                   uint64_t seq, char *out, size_t len);

/* Copies at most size-1 bytes and always terminates (size > 0). Returns 1
 * when `src` was truncated, else 0. */
int ebb__strlcpy(char *dst, const char *src, size_t size);

/* The value of the hex digit c (either case), or -1 when c is none. */
int ebb__hex_digit(char c);

/* Overwrites the secret *s (OpenSSL's cleanse, which the compiler keeps),
 * frees it and sets *s to NULL; nothing when *s is NULL. */
void ebb__str_wipe(char **s);

/* Room for one more element in a growing array `v` of `n` used and *cap
 * allocated elements of `size` bytes each: while n < *cap, returns v;
 * at n == *cap, reallocates it to twice *cap elements (`first` when *cap
 * is 0), sets *cap and returns the new array, which the caller stores
 * (v's ownership passes to it). NULL, with v and *cap unchanged, when
 * memory runs out or the size would overflow. */
void *ebb__grow(void *v, size_t *cap, size_t n, size_t size, size_t first);

/* Significant digits every JSON writer gives reals (jansson's
 * JSON_REAL_PRECISION): 15 prints back any decimal of up to 15 digits as
 * it was written (a percentage rounded to 56.51 stays "56.51", never
 * "56.509999999999998"; a price 0.3926 stays "0.3926"), and the same
 * figure reads the same in ebbd's answers, `ebb ... --json` and backtests. */
#define EBB__JSON_REAL_DIGITS 15

#endif
