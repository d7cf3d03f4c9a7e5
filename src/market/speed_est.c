/* The learned-speed estimator (market/speed_est.h). */
#include "market/speed_est.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_speed(double rate)
{
    return isfinite(rate) && rate > 0 && rate <= EBB__SPEED_MAX;
}

const char *ebb__speed_source(long long samples)
{
    return samples > 0 ? "measured" : "catalog";
}

int ebb__speed_add(struct ebb__speed_samples *s, double rate)
{
    if (!is_speed(rate))
        return 0;
    s->rate[s->next] = rate;
    s->next = (s->next + 1) % EBB__SPEED_WINDOW;
    if (s->n_kept < EBB__SPEED_WINDOW)
        s->n_kept++;
    s->total++;
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ebb__speed_estimate(const struct ebb__speed_samples *s, double catalog)
{
    if (s == NULL || s->n_kept == 0)
        return catalog;
    double sorted[EBB__SPEED_WINDOW];
    memcpy(sorted, s->rate, sizeof(sorted));
    /* The ring's first n_kept slots hold the rates until it wraps, and
     * all of it after: either way the first n_kept are the kept ones. */
    qsort(sorted, s->n_kept, sizeof(sorted[0]), cmp_double);
    size_t m = s->n_kept / 2;
    double median = s->n_kept % 2 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
    double n = (double)s->total;
    return (EBB__SPEED_PRIOR * catalog + n * median) / (EBB__SPEED_PRIOR + n);
}

void ebb__speed_format(const struct ebb__speed_samples *s, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    size_t first = s->n_kept < EBB__SPEED_WINDOW ? 0 : s->next;
    for (size_t i = 0; i < s->n_kept && at < len; i++) {
        int w = snprintf(buf + at, len - at, "%s%.17g", i ? " " : "",
                         s->rate[(first + i) % EBB__SPEED_WINDOW]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

int ebb__speed_parse(const char *text, long long total, struct ebb__speed_samples *s)
{
    memset(s, 0, sizeof(*s));
    const char *p = text;
    while (*p != '\0') {
        char *end;
        double r = strtod(p, &end);
        if (end == p || !is_speed(r) || s->n_kept == EBB__SPEED_WINDOW ||
            (*end != ' ' && *end != '\0'))
            return -1;
        s->rate[s->n_kept++] = r;
        p = *end == ' ' ? end + 1 : end;
    }
    if (total < (long long)s->n_kept)
        return -1;
    s->next = s->n_kept % EBB__SPEED_WINDOW;
    s->total = total;
    return 0;
}
