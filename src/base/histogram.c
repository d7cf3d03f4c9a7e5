/* Counting observations into buckets; see histogram.h. */
#include <math.h>
#include <string.h>

#include <ebb/common.h>

#include "base/histogram.h"

int ebb__histogram_init(struct ebb__histogram *h, const double *bounds,
                        size_t n)
{
    if (n > EBB__HISTOGRAM_MAX_BOUNDS)
        return EBB_EINVAL;
    for (size_t i = 1; i < n; i++)
        if (!(bounds[i] > bounds[i - 1]))
            return EBB_EINVAL;
    memset(h, 0, sizeof(*h));
    h->bounds = bounds;
    h->n_bounds = n;
    return 0;
}

void ebb__histogram_observe(struct ebb__histogram *h, double v)
{
    if (isnan(v))
        return;
    size_t i = 0;
    while (i < h->n_bounds && v > h->bounds[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum += v;
}
