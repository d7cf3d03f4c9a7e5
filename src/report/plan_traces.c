/* The text of the traces a quote gives the sim (plan.h): their rows, the
 * scratch directory they go to and the writing of them, shared by the
 * quote (plan.c) and ebbd's snapshot of its market (daemon_plan.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "report/plan.h"

void ebb__plan_price_row(struct ebb_buf *b, ebb_time_ms at, const char *provider,
                         const char *region, const char *zone,
                         const char *instance_type, const char *product,
                         ebb_micros price)
{
    char t[EBB_TIME_BUFSZ];
    ebb_buf_printf(b, "%s,%s,%s,%s,%s,%s,%lld.%06lld\n",
                   ebb_format_time_exact(at, t, sizeof(t)), provider, region, zone,
                   instance_type, product, (long long)(price / EBB_MICROS_PER_UNIT),
                   (long long)(price % EBB_MICROS_PER_UNIT));
}

void ebb__plan_avail_row(struct ebb_buf *b, ebb_time_ms at, const char *provider,
                         const char *zone, const char *instance_type,
                         int32_t available)
{
    char t[EBB_TIME_BUFSZ];
    ebb_buf_printf(b, "%s,%s,%s,%s,%d\n", ebb_format_time_exact(at, t, sizeof(t)),
                   provider, zone, instance_type, (int)available);
}

int ebb__plan_write_text(const char *path, const char *a, const char *b,
                         struct ebb_diag *d)
{
    FILE *f = fopen(path, "w");
    int ok = f != NULL && fputs(a, f) >= 0 && (b == NULL || fputs(b, f) >= 0);
    if (f != NULL && fclose(f) != 0)
        ok = 0;
    if (!ok)
        ebb_diag_set(d, NULL, 0, "cannot write %s: %s", path, strerror(errno));
    return ok ? 0 : EBB_EIO;
}

int ebb__plan_tmpdir(const char *name, char *dir, size_t size, struct ebb_diag *d)
{
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(dir, size, "%s/%s-XXXXXX",
                     tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", name);
    if (n < 0 || (size_t)n >= size || mkdtemp(dir) == NULL) {
        ebb_diag_set(d, NULL, 0, "cannot make a temporary directory %s: %s", dir,
                     n < 0 || (size_t)n >= size ? "the path is too long" : strerror(errno));
        dir[0] = '\0';
        return EBB_EIO;
    }
    return 0;
}
