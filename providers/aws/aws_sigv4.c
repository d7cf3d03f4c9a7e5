/* SigV4 signing with OpenSSL's SHA-256 and HMAC-SHA256. The canonical
 * request follows the published algorithm step by step; the comments
 * name the test-suite cases that pin each rule down. */
#include "aws_sigv4.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <ebb/buf.h>
#include <ebb/units.h>
#include <ebb/urlenc.h>

#define SHA256_LEN 32

static void hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static int sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[SHA256_LEN];
    unsigned int md_len = 0;
    if (EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL) != 1)
        return EBB_ENOMEM;
    hex(md, md_len, out);
    return 0;
}

static int hmac(const void *key, size_t key_len, const char *msg,
                unsigned char out[SHA256_LEN])
{
    unsigned int len = 0;
    if (HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)msg,
             strlen(msg), out, &len) == NULL)
        return EBB_ENOMEM;
    return 0;
}

/* ---- canonical URI: normalise, then encode each segment ---- */

/* Drops empty and "." segments and lets ".." remove the one before
 * (normalize-path/get-relative, get-slashes, get-slash-dot-slash); a path
 * that ended in '/' keeps it (get-slashes: //example// -> /example/). */
static void canonical_uri(struct ebb_buf *b, const char *path)
{
    const char *seg[128];
    size_t seg_len[128], n = 0;
    size_t plen = strlen(path);
    const char *p = path;
    while (*p != '\0') {
        while (*p == '/')
            p++;
        size_t len = strcspn(p, "/");
        if (len == 0)
            break;
        if (len == 1 && p[0] == '.') {
            /* nothing */
        } else if (len == 2 && p[0] == '.' && p[1] == '.') {
            if (n > 0)
                n--;
        } else if (n < sizeof(seg) / sizeof(seg[0])) {
            seg[n] = p;
            seg_len[n++] = len;
        }
        p += len;
    }
    ebb_buf_puts(b, "/");
    for (size_t i = 0; i < n; i++) {
        ebb_pct_encode(b, seg[i], seg_len[i], 0);
        if (i + 1 < n)
            ebb_buf_puts(b, "/");
    }
    if (n > 0 && plen > 0 && path[plen - 1] == '/')
        ebb_buf_puts(b, "/");
}

/* ---- canonical query: decode, re-encode, sort ---- */

struct param {
    char *name; /* encoded */
    char *value;
};

static int param_cmp(const void *a, const void *b)
{
    const struct param *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : strcmp(x->value, y->value);
}

static char *reencode(const char *s, size_t len)
{
    char *raw = ebb_pct_decode(s, len, 0);
    if (raw == NULL)
        return NULL;
    struct ebb_buf b = {0};
    ebb_pct_encode(&b, raw, strlen(raw), 0);
    ebb_buf_puts(&b, "");
    free(raw);
    return ebb_buf_take(&b);
}

static int canonical_query(struct ebb_buf *b, const char *query)
{
    size_t cap = 1;
    for (const char *q = query; *q != '\0'; q++)
        cap += *q == '&';
    struct param *v = calloc(cap, sizeof(*v));
    if (v == NULL)
        return EBB_ENOMEM;
    size_t n = 0;
    int rc = 0;
    for (const char *q = query; *q != '\0' && rc == 0;) {
        size_t len = strcspn(q, "&");
        if (len > 0) {
            const char *eq = memchr(q, '=', len);
            size_t name_len = eq != NULL ? (size_t)(eq - q) : len;
            v[n].name = reencode(q, name_len);
            v[n].value = eq != NULL ? reencode(eq + 1, len - name_len - 1)
                                    : reencode("", 0);
            if (v[n].name == NULL || v[n].value == NULL)
                rc = EBB_EINVAL;
            n++;
        }
        q += len + (q[len] == '&');
    }
    if (rc == 0) {
        qsort(v, n, sizeof(*v), param_cmp);
        for (size_t i = 0; i < n; i++)
            ebb_buf_printf(b, "%s%s=%s", i ? "&" : "", v[i].name, v[i].value);
    }
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].value);
    }
    free(v);
    return rc;
}

/* ---- canonical headers ---- */

struct hdr {
    char *name;  /* lower-case */
    char *value; /* trimmed, blanks collapsed */
    size_t order;
};

static int hdr_cmp(const void *a, const void *b)
{
    const struct hdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c != 0)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Trims and collapses every run of blanks, folded line breaks included,
 * to one space (get-header-value-trim, get-header-value-multiline). */
static char *normalise_value(const char *s)
{
    char *out = malloc(strlen(s) + 1);
    if (out == NULL)
        return NULL;
    size_t n = 0;
    int pending_space = 0;
    for (; *s != '\0'; s++) {
        if (blank(*s)) {
            pending_space = n > 0;
            continue;
        }
        if (pending_space)
            out[n++] = ' ';
        pending_space = 0;
        out[n++] = *s;
    }
    out[n] = '\0';
    return out;
}

static char *lower(const char *s)
{
    char *out = strdup(s);
    for (char *p = out; p != NULL && *p != '\0'; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return out;
}

/* Appends the canonical header lines to `creq` and the signed-header list
 * to `signed_hdrs`. Duplicate names merge with ',' in the order given
 * (get-header-key-duplicate, get-header-value-order). */
static int canonical_headers(const struct aws_sigv4_request *req,
                             struct ebb_buf *creq, struct ebb_buf *signed_hdrs)
{
    struct hdr *h = calloc(req->n_headers ? req->n_headers : 1, sizeof(*h));
    if (h == NULL)
        return EBB_ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < req->n_headers; i++) {
        h[i].name = lower(req->headers[i].name);
        h[i].value = normalise_value(req->headers[i].value);
        h[i].order = i;
        if (h[i].name == NULL || h[i].value == NULL)
            rc = EBB_ENOMEM;
    }
    if (rc == 0) {
        qsort(h, req->n_headers, sizeof(*h), hdr_cmp);
        for (size_t i = 0; i < req->n_headers; i++) {
            int same = i > 0 && strcmp(h[i].name, h[i - 1].name) == 0;
            if (same) {
                ebb_buf_printf(creq, ",%s", h[i].value);
                continue;
            }
            if (i > 0) {
                ebb_buf_puts(creq, "\n");
                ebb_buf_puts(signed_hdrs, ";");
            }
            ebb_buf_printf(creq, "%s:%s", h[i].name, h[i].value);
            ebb_buf_puts(signed_hdrs, h[i].name);
        }
        ebb_buf_puts(creq, "\n");
    }
    for (size_t i = 0; i < req->n_headers; i++) {
        free(h[i].name);
        free(h[i].value);
    }
    free(h);
    return rc;
}

/* ---- signature ---- */

static int valid_amz_date(const char *d)
{
    if (d == NULL || strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z')
        return 0;
    for (int i = 0; i < 15; i++)
        if (i != 8 && (d[i] < '0' || d[i] > '9'))
            return 0;
    return 1;
}

static int signature(const struct aws_sigv4_scope *s, const char *sts,
                     char out[65])
{
    char date[9];
    memcpy(date, s->amz_date, 8);
    date[8] = '\0';
    char *secret = ebb_strfmt("AWS4%s", s->secret_access_key);
    if (secret == NULL)
        return EBB_ENOMEM;
    unsigned char k[SHA256_LEN], k2[SHA256_LEN];
    int rc = hmac(secret, strlen(secret), date, k);
    /* The secret is wiped as soon as it has served. */
    OPENSSL_cleanse(secret, strlen(secret));
    free(secret);
    if (rc == 0)
        rc = hmac(k, sizeof(k), s->region, k2);
    if (rc == 0)
        rc = hmac(k2, sizeof(k2), s->service, k);
    if (rc == 0)
        rc = hmac(k, sizeof(k), "aws4_request", k2);
    if (rc == 0)
        rc = hmac(k2, sizeof(k2), sts, k);
    if (rc == 0)
        hex(k, sizeof(k), out);
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(k2, sizeof(k2));
    return rc;
}

int aws_sigv4_sign(const struct aws_sigv4_request *req,
                   const struct aws_sigv4_scope *scope,
                   struct aws_sigv4_result *out)
{
    memset(out, 0, sizeof(*out));
    if (!valid_amz_date(scope->amz_date))
        return EBB_EINVAL;
    struct ebb_buf creq = {0}, sh = {0}, sts = {0}, auth = {0};
    char payload_hash[65], creq_hash[65], sig[65];
    int rc = sha256_hex(req->payload != NULL ? req->payload : "",
                        req->payload_len, payload_hash);

    ebb_buf_printf(&creq, "%s\n", req->method);
    canonical_uri(&creq, req->path[0] != '\0' ? req->path : "/");
    ebb_buf_puts(&creq, "\n");
    if (rc == 0)
        rc = canonical_query(&creq, req->query != NULL ? req->query : "");
    ebb_buf_puts(&creq, "\n");
    if (rc == 0)
        rc = canonical_headers(req, &creq, &sh);
    ebb_buf_puts(&sh, "");
    ebb_buf_printf(&creq, "\n%s\n%s", sh.data, payload_hash);
    if (rc == 0 && (creq.failed || sh.failed))
        rc = EBB_ENOMEM;
    if (rc == 0)
        rc = sha256_hex(creq.data, creq.len, creq_hash);

    if (rc == 0) {
        ebb_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%.8s/%s/%s/aws4_request\n%s",
                        scope->amz_date, scope->amz_date, scope->region,
                        scope->service, creq_hash);
        rc = sts.failed ? EBB_ENOMEM : signature(scope, sts.data, sig);
    }
    if (rc == 0) {
        ebb_buf_printf(&auth,
                        "AWS4-HMAC-SHA256 Credential=%s/%.8s/%s/%s/aws4_request, "
                        "SignedHeaders=%s, Signature=%s",
                        scope->access_key_id, scope->amz_date, scope->region,
                        scope->service, sh.data, sig);
        if (auth.failed)
            rc = EBB_ENOMEM;
    }
    if (rc == 0) {
        out->canonical_request = ebb_buf_take(&creq);
        out->string_to_sign = ebb_buf_take(&sts);
        out->authorization = ebb_buf_take(&auth);
    }
    ebb_buf_free(&creq);
    ebb_buf_free(&sh);
    ebb_buf_free(&sts);
    ebb_buf_free(&auth);
    return rc;
}

void aws_sigv4_result_free(struct aws_sigv4_result *r)
{
    free(r->canonical_request);
    free(r->string_to_sign);
    free(r->authorization);
    memset(r, 0, sizeof(*r));
}

void aws_sigv4_amz_date(ebb_time_ms t, char out[17])
{
    int64_t days = t / EBB_MS_PER_DAY;
    int64_t ms = t % EBB_MS_PER_DAY;
    if (ms < 0) {
        ms += EBB_MS_PER_DAY;
        days--;
    }
    int64_t y;
    int m, d;
    ebb_civil_from_days(days, &y, &m, &d);
    int64_t s = ms / 1000;
    snprintf(out, 17, "%04d%02d%02dT%02d%02d%02dZ", (int)y, m, d,
             (int)(s / 3600), (int)(s / 60 % 60), (int)(s % 60));
}
