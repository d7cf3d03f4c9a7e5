/* Learned speed: what a job family really does on one host, from the
 * rates its progress reports show, shrunk toward the catalog's speed
 * until there is enough data (docs/policies.md "Learned speed"). Pure:
 * the samples and the catalog's speed are the only inputs.
 *
 * A rate is work done per unit of time between two progress reports on
 * one instance (work ms per ms, the catalog's unit). The estimate is
 *
 *     (PRIOR * catalog + n * median) / (PRIOR + n)
 *
 * where median is the median of the latest EBB__SPEED_WINDOW rates (one
 * outlier moves it by at most one rank) and n every rate ever counted,
 * so the estimate converges to the host's real speed as data comes and
 * is the catalog's speed without any. */
#ifndef EBB_SPEED_EST_H
#define EBB_SPEED_EST_H

#include <stddef.h>

/* Rates kept per (family, GPU model, provider, host). */
#define EBB__SPEED_WINDOW 16
/* The catalog's speed counts as this many rates. */
#define EBB__SPEED_PRIOR 3.0
/* Rates outside (0, EBB__SPEED_MAX] are not speeds (a fraction that went
 * backwards, a clock jump): they are not counted. */
#define EBB__SPEED_MAX 1000.0

struct ebb__speed_samples {
    double rate[EBB__SPEED_WINDOW]; /* a ring: the latest n_kept */
    size_t n_kept;
    size_t next;                     /* where the next rate goes */
    long long total;                 /* rates ever counted */
};

/* Counts `rate`. Returns 1 when it was counted, 0 when it is not a speed
 * (not finite, not above 0, above EBB__SPEED_MAX). */
int ebb__speed_add(struct ebb__speed_samples *s, double rate);
/* The estimate for catalog speed `catalog` (> 0): `catalog` itself
 * without rates. */
double ebb__speed_estimate(const struct ebb__speed_samples *s, double catalog);
/* The kept rates as text, oldest first, space-separated, into buf (at
 * least EBB__SPEED_TEXT_SIZE bytes): what the store keeps. */
#define EBB__SPEED_TEXT_SIZE (EBB__SPEED_WINDOW * 26 + 1)
void ebb__speed_format(const struct ebb__speed_samples *s, char *buf, size_t len);
/* Reads what ebb__speed_format() wrote, with `total` rates counted in
 * all, into *s. Returns 0, or -1 when the text is not such a list (more
 * than EBB__SPEED_WINDOW rates, one that is not a speed, total below the
 * rates listed). */
int ebb__speed_parse(const char *text, long long total, struct ebb__speed_samples *s);

/* "catalog" for an estimate from 0 rates, else "measured": the
 * `speed_source` of ebb prices and ebb job show (docs/api.md). */
const char *ebb__speed_source(long long samples);

#endif
