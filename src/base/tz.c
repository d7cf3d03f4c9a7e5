/* TZif files (RFC 8536) and the offset lookup. See tz.h.
 *
 * Only what an offset needs is kept: the transition times, the offset
 * after each, the offset before the first (time type 0), and the footer
 * rule. Version 2+ files carry a second, 64-bit copy of the data after the
 * 32-bit one; we skip the first copy and read the second.
 */
#include "base/tz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/common.h>

#include "base/str.h"

/* The largest zone file we read; real ones are under 4 KiB. */
#define TZ_MAX_FILE (256 * 1024)

struct ebb__tz {
    char *name;
    size_t n;           /* transitions */
    int64_t *at;        /* ascending */
    int32_t *offset;    /* offset[i] is in effect from at[i] */
    int32_t first_offset; /* before at[0], or always when n == 0 */
    int has_rule;
    struct ebb__tz_rule rule; /* from at[n-1] on (always when n == 0) */
};

struct counts {
    uint32_t isut, isstd, leap, time, type, chars;
};

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

static int bad(struct ebb_diag *d, const char *name, const char *what)
{
    ebb_diag_set(d, NULL, 0, "time zone %s: not a valid TZif file (%s)", name,
                  what);
    return EBB_ECONFIG;
}

static int header(const unsigned char *p, size_t len, int *version,
                  struct counts *c)
{
    if (len < 44 || memcmp(p, "TZif", 4) != 0)
        return -1;
    *version = p[4] == 0 ? 1 : p[4] - '0';
    c->isut = be32(p + 20);
    c->isstd = be32(p + 24);
    c->leap = be32(p + 28);
    c->time = be32(p + 32);
    c->type = be32(p + 36);
    c->chars = be32(p + 40);
    if (*version < 1 || c->type == 0 || c->type > 256 ||
        c->time > TZ_MAX_FILE || c->leap > TZ_MAX_FILE ||
        c->chars > TZ_MAX_FILE || c->isut > c->type || c->isstd > c->type)
        return -1;
    return 0;
}

static size_t data_size(const struct counts *c, size_t tsize)
{
    return c->time * tsize + c->time + c->type * 6 + c->chars +
           c->leap * (tsize + 4) + c->isstd + c->isut;
}

/* Reads one data block with `tsize`-byte times (4 or 8). */
static int read_block(struct ebb__tz *tz, const unsigned char *p,
                      const struct counts *c, size_t tsize,
                      struct ebb_diag *d)
{
    const unsigned char *idx = p + c->time * tsize;
    const unsigned char *types = idx + c->time;
    if (c->leap != 0) {
        ebb_diag_set(d, NULL, 0,
                      "time zone %s: the file counts leap seconds (a right/ "
                      "zone); use the zone without right/",
                      tz->name);
        return EBB_ECONFIG;
    }
    tz->at = calloc(c->time + 1, sizeof(*tz->at));
    tz->offset = calloc(c->time + 1, sizeof(*tz->offset));
    if (tz->at == NULL || tz->offset == NULL)
        return EBB_ENOMEM;
    for (uint32_t i = 0; i < c->type; i++) {
        int32_t off = (int32_t)be32(types + i * 6);
        /* RFC 8536: -25:59:59 to +25:59:59 (and never INT32_MIN). */
        if (off < -93599 || off > 93599)
            return bad(d, tz->name, "a UTC offset beyond 26 hours");
    }
    tz->first_offset = (int32_t)be32(types);
    for (uint32_t i = 0; i < c->time; i++) {
        int64_t t = tsize == 8 ? be64(p + i * 8)
                               : (int64_t)(int32_t)be32(p + i * 4);
        if (i > 0 && t <= tz->at[i - 1])
            return bad(d, tz->name, "transition times out of order");
        if (idx[i] >= c->type)
            return bad(d, tz->name, "a transition names a missing type");
        tz->at[i] = t;
        tz->offset[i] = (int32_t)be32(types + idx[i] * 6);
    }
    tz->n = c->time;
    return 0;
}

static int footer(struct ebb__tz *tz, const unsigned char *p, size_t len,
                  struct ebb_diag *d)
{
    if (len < 2 || p[0] != '\n')
        return bad(d, tz->name, "no footer after the version 2 data");
    const unsigned char *nl = memchr(p + 1, '\n', len - 1);
    if (nl == NULL || nl - p > 256)
        return bad(d, tz->name, "unterminated footer");
    size_t n = (size_t)(nl - p - 1);
    if (n == 0)
        return 0; /* no rule: the last offset stays */
    char rule[256];
    memcpy(rule, p + 1, n);
    rule[n] = '\0';
    const char *why;
    if (memchr(rule, '\0', n) != NULL ||
        ebb__tz_rule_parse(rule, &tz->rule, &why) != 0)
        return bad(d, tz->name, "its footer is not a POSIX TZ rule");
    tz->has_rule = 1;
    return 0;
}

static int parse(struct ebb__tz *tz, const unsigned char *buf, size_t len,
                 struct ebb_diag *d)
{
    struct counts c;
    int version;
    if (header(buf, len, &version, &c) != 0)
        return bad(d, tz->name, "bad header");
    size_t v1 = 44 + data_size(&c, 4);
    if (v1 > len)
        return bad(d, tz->name, "truncated");
    if (version == 1)
        return read_block(tz, buf + 44, &c, 4, d);
    const unsigned char *p = buf + v1;
    if (header(p, len - v1, &version, &c) != 0)
        return bad(d, tz->name, "bad second header");
    size_t v2 = 44 + data_size(&c, 8);
    if (v2 > len - v1)
        return bad(d, tz->name, "truncated");
    int rc = read_block(tz, p + 44, &c, 8, d);
    if (rc != 0)
        return rc;
    return footer(tz, p + v2, len - v1 - v2, d);
}

static struct ebb__tz *tz_new(const char *name)
{
    struct ebb__tz *tz = calloc(1, sizeof(*tz));
    if (tz == NULL)
        return NULL;
    tz->name = strdup(name);
    if (tz->name == NULL) {
        free(tz);
        return NULL;
    }
    return tz;
}

int ebb__tz_from_tzif(const char *name, const unsigned char *buf, size_t len,
                      struct ebb__tz **out, struct ebb_diag *d)
{
    *out = NULL;
    struct ebb__tz *tz = tz_new(name);
    if (tz == NULL)
        return EBB_ENOMEM;
    int rc = parse(tz, buf, len, d);
    if (rc != 0) {
        if (rc == EBB_ENOMEM)
            ebb_diag_set(d, NULL, 0, "out of memory");
        ebb__tz_free(tz);
        return rc;
    }
    *out = tz;
    return 0;
}

int ebb__tz_from_posix(const char *rule, struct ebb__tz **out,
                       struct ebb_diag *d)
{
    *out = NULL;
    struct ebb__tz_rule r;
    const char *why;
    if (ebb__tz_rule_parse(rule, &r, &why) != 0) {
        ebb_diag_set(d, NULL, 0, "\"%s\" is not a POSIX TZ rule (%s)", rule,
                      why);
        return EBB_ECONFIG;
    }
    struct ebb__tz *tz = tz_new(rule);
    if (tz == NULL)
        return EBB_ENOMEM;
    tz->has_rule = 1;
    tz->rule = r;
    *out = tz;
    return 0;
}

int ebb__tz_utc(struct ebb__tz **out)
{
    *out = tz_new("UTC");
    return *out == NULL ? EBB_ENOMEM : 0;
}

/* Zone names become file paths: keep them to what IANA names use, so that
 * no name reaches outside the zone directory. */
static int name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > 128 || name[0] == '/' || name[len - 1] == '/')
        return 0;
    for (const char *p = name; *p != '\0'; p++) {
        char ch = *p;
        int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                 (ch >= '0' && ch <= '9') || ch == '/' || ch == '_' ||
                 ch == '-' || ch == '+' || ch == '.';
        if (!ok)
            return 0;
        /* A part may not start with '.' ("..", hidden files). */
        if (ch == '.' && (p == name || p[-1] == '/'))
            return 0;
        if (ch == '/' && p[1] == '/')
            return 0;
    }
    return 1;
}

static int read_all(FILE *f, unsigned char **buf, size_t *len)
{
    unsigned char *b = malloc(TZ_MAX_FILE + 1);
    if (b == NULL)
        return EBB_ENOMEM;
    size_t n = fread(b, 1, TZ_MAX_FILE + 1, f);
    if (ferror(f) || n > TZ_MAX_FILE) {
        free(b);
        return EBB_EIO;
    }
    *buf = b;
    *len = n;
    return 0;
}

int ebb__tz_load(const char *name, struct ebb__tz **out, struct ebb_diag *d)
{
    *out = NULL;
    if (!name_ok(name)) {
        ebb_diag_set(d, NULL, 0,
                      "\"%s\" is not a time zone name (an IANA name such as "
                      "Asia/Shanghai, America/New_York or UTC)",
                      name);
        return EBB_EINVAL;
    }
    const char *dir = getenv("TZDIR");
    if (dir == NULL || dir[0] == '\0')
        dir = EBB__TZ_DIR;
    char *path = ebb_strfmt("%s/%s", dir, name);
    if (path == NULL)
        return EBB_ENOMEM;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) {
            ebb_diag_set(d, NULL, 0,
                          "unknown time zone \"%s\" (no %s; use an IANA name "
                          "such as Asia/Shanghai, America/New_York or UTC, and "
                          "check that the tzdata package is installed)",
                          name, path);
            free(path);
            return EBB_ENOTFOUND;
        }
        ebb_diag_set(d, NULL, 0, "time zone %s: cannot read %s: %s", name,
                      path, strerror(e));
        free(path);
        return EBB_EIO;
    }
    unsigned char *buf = NULL;
    size_t len = 0;
    int rc = read_all(f, &buf, &len);
    fclose(f);
    if (rc != 0) {
        ebb_diag_set(d, NULL, 0, "time zone %s: cannot read %s%s", name, path,
                      rc == EBB_EIO ? " (a directory, or over 256 KiB?)" : "");
        free(path);
        return rc;
    }
    free(path);
    rc = ebb__tz_from_tzif(name, buf, len, out, d);
    free(buf);
    return rc;
}

void ebb__tz_free(struct ebb__tz *tz)
{
    if (tz == NULL)
        return;
    free(tz->name);
    free(tz->at);
    free(tz->offset);
    free(tz);
}

const char *ebb__tz_name(const struct ebb__tz *tz)
{
    return tz->name;
}

void ebb__tz_span_at(const struct ebb__tz *tz, int64_t t,
                     struct ebb__tz_span *out)
{
    if (tz->n == 0 || t < tz->at[0]) {
        if (tz->n == 0 && tz->has_rule) {
            ebb__tz_rule_span(&tz->rule, t, out);
            return;
        }
        *out = (struct ebb__tz_span){INT64_MIN,
                                     tz->n == 0 ? INT64_MAX : tz->at[0],
                                     tz->first_offset};
        return;
    }
    /* The last transition at or before t. */
    size_t lo = 0, hi = tz->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (tz->at[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    if (lo + 1 < tz->n) {
        *out = (struct ebb__tz_span){tz->at[lo], tz->at[lo + 1],
                                     tz->offset[lo]};
        return;
    }
    if (!tz->has_rule) {
        *out = (struct ebb__tz_span){tz->at[lo], INT64_MAX, tz->offset[lo]};
        return;
    }
    /* Past the table the footer rule decides; its span may not start
     * before the table's last transition. */
    ebb__tz_rule_span(&tz->rule, t, out);
    if (out->start < tz->at[lo])
        out->start = tz->at[lo];
}

int32_t ebb__tz_offset(const struct ebb__tz *tz, int64_t t)
{
    struct ebb__tz_span s;
    ebb__tz_span_at(tz, t, &s);
    return s.offset;
}
