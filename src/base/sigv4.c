/* SigV4 (and OSS V4, its twin) with OpenSSL's SHA-256 and HMAC-SHA256
 * (base/digest.c). The canonical request follows the published algorithm
 * step by step; the comments name the test-suite cases that pin each rule
 * down. The two flavours differ only in names, in which headers are
 * signed and in how an empty query value is written, so one table of
 * names (struct flavour) carries the difference. */
#include <ebb/sigv4.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include <ebb/buf.h>
#include <ebb/digest.h>
#include <ebb/units.h>
#include <ebb/urlenc.h>

struct flavour {
    const char *algorithm;  /* first line of the string to sign */
    const char *key_prefix; /* prepended to the secret */
    const char *terminator; /* last element of the scope */
    int empty_value_eq;     /* "name=" (AWS) or "name" (OSS) */
    /* Presigned URLs' parameter names. */
    const char *q_algorithm, *q_credential, *q_date, *q_expires, *q_headers,
        *q_token, *q_signature;
};

static const struct flavour flavours[] = {
    [EBB_SIGV4_AWS] = {"AWS4-HMAC-SHA256", "AWS4", "aws4_request", 1,
                       "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date",
                       "X-Amz-Expires", "X-Amz-SignedHeaders",
                       "X-Amz-Security-Token", "X-Amz-Signature"},
    [EBB_SIGV4_OSS] = {"OSS4-HMAC-SHA256", "aliyun_v4", "aliyun_v4_request", 0,
                       "x-oss-signature-version", "x-oss-credential",
                       "x-oss-date", "x-oss-expires", "x-oss-additional-headers",
                       "x-oss-security-token", "x-oss-signature"},
};

/* ---- canonical URI ---- */

/* The other services' rule: drops empty and "." segments and lets ".."
 * remove the one before (normalize-path/get-relative, get-slashes,
 * get-slash-dot-slash); a path that ended in '/' keeps it (get-slashes:
 * //example// -> /example/). */
static void normalised_uri(struct ebb_buf *b, const char *path)
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

/* S3's rule: the path as sent, encoded once, nothing folded
 * (get-slash-unnormalized, get-relative-relative-unnormalized,
 * botocore-s3-presign-unnormalized-path keeps "/.bar"). */
static void s3_uri(struct ebb_buf *b, const char *path)
{
    if (path[0] != '/')
        ebb_buf_puts(b, "/");
    ebb_pct_encode(b, path, strlen(path), 1);
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
    if (b.failed) {
        ebb_buf_free(&b);
        return NULL;
    }
    return ebb_buf_take(&b);
}

static int canonical_query(struct ebb_buf *b, const char *query,
                           const struct flavour *f)
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
        for (size_t i = 0; i < n; i++) {
            ebb_buf_printf(b, "%s%s", i ? "&" : "", v[i].name);
            if (v[i].value[0] != '\0' || f->empty_value_eq)
                ebb_buf_printf(b, "=%s", v[i].value);
        }
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

/* OSS signs its own headers, content-type and content-md5 always. */
static int oss_default_signed(const char *name)
{
    return strncmp(name, "x-oss-", 6) == 0 || strcmp(name, "content-type") == 0 ||
           strcmp(name, "content-md5") == 0;
}

/* Whether `name` is one of the ';'-joined names in `list`. */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p != NULL && *p != '\0';) {
        size_t len = strcspn(p, ";");
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len + (p[len] == ';');
    }
    return 0;
}

/* Appends the canonical header lines to `creq` and, to `names`, the list
 * the canonical request and the signature carry: every signed name (AWS)
 * or the signed names OSS does not sign by default (OSS). Duplicate names
 * merge with ',' in the order given (get-header-key-duplicate,
 * get-header-value-order). */
static int canonical_headers(const struct ebb_sigv4_request *req,
                             enum ebb_sigv4_flavour fl, struct ebb_buf *creq,
                             struct ebb_buf *names)
{
    struct hdr *h = calloc(req->n_headers ? req->n_headers : 1, sizeof(*h));
    if (h == NULL)
        return EBB_ENOMEM;
    int rc = 0;
    size_t n = 0;
    for (size_t i = 0; i < req->n_headers && rc == 0; i++) {
        char *name = lower(req->headers[i].name);
        if (name == NULL) {
            rc = EBB_ENOMEM;
        } else if (fl == EBB_SIGV4_OSS && !oss_default_signed(name) &&
                   !listed(req->additional_headers, name)) {
            free(name);
        } else {
            h[n].name = name;
            h[n].value = normalise_value(req->headers[i].value);
            h[n].order = i;
            rc = h[n++].value == NULL ? EBB_ENOMEM : 0;
        }
    }
    if (rc == 0) {
        qsort(h, n, sizeof(*h), hdr_cmp);
        for (size_t i = 0; i < n; i++) {
            int same = i > 0 && strcmp(h[i].name, h[i - 1].name) == 0;
            if (same) {
                ebb_buf_printf(creq, ",%s", h[i].value);
                continue;
            }
            if (i > 0)
                ebb_buf_puts(creq, "\n");
            ebb_buf_printf(creq, "%s:%s", h[i].name, h[i].value);
            if (fl == EBB_SIGV4_AWS || !oss_default_signed(h[i].name))
                ebb_buf_printf(names, "%s%s", names->len ? ";" : "", h[i].name);
        }
        /* Every header line ends in a newline; no header, no line (an OSS
         * presigned URL may sign none). */
        if (n > 0)
            ebb_buf_puts(creq, "\n");
        ebb_buf_puts(names, "");
    }
    for (size_t i = 0; i < n; i++) {
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

static int valid_payload_hash(const char *h)
{
    if (h == NULL || strcmp(h, EBB_SIGV4_UNSIGNED_PAYLOAD) == 0)
        return 1;
    if (strlen(h) != 64)
        return 0;
    return strspn(h, "0123456789abcdef") == 64;
}

static int hmac_str(const void *key, size_t key_len, const char *msg,
                    unsigned char out[EBB_SHA256_LEN])
{
    return ebb_hmac_sha256(key, key_len, msg, strlen(msg), out);
}

static int signature(const struct ebb_sigv4_scope *s, const struct flavour *f,
                     const char *sts, char out[65])
{
    char date[9];
    memcpy(date, s->amz_date, 8);
    date[8] = '\0';
    char *secret = ebb_strfmt("%s%s", f->key_prefix, s->secret_access_key);
    if (secret == NULL)
        return EBB_ENOMEM;
    unsigned char k[EBB_SHA256_LEN], k2[EBB_SHA256_LEN];
    int rc = hmac_str(secret, strlen(secret), date, k);
    /* The secret is wiped as soon as it has served. */
    OPENSSL_cleanse(secret, strlen(secret));
    free(secret);
    if (rc == 0)
        rc = hmac_str(k, sizeof(k), s->region, k2);
    if (rc == 0)
        rc = hmac_str(k2, sizeof(k2), s->service, k);
    if (rc == 0)
        rc = hmac_str(k, sizeof(k), f->terminator, k2);
    if (rc == 0)
        rc = hmac_str(k2, sizeof(k2), sts, k);
    if (rc == 0)
        ebb_hex(k, sizeof(k), out);
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(k2, sizeof(k2));
    return rc;
}

static int valid_scope(const struct ebb_sigv4_scope *s)
{
    return (s->flavour == EBB_SIGV4_AWS || s->flavour == EBB_SIGV4_OSS) &&
           valid_amz_date(s->amz_date) && s->access_key_id != NULL &&
           s->secret_access_key != NULL && s->region != NULL &&
           s->service != NULL;
}

/* Builds the canonical request from its parts (the header block and the
 * name list already made, the query as it will be sent), the string to
 * sign and the signature into `out`. */
static int sign_parts(const struct ebb_sigv4_request *req,
                      const struct ebb_sigv4_scope *scope, const char *query,
                      const struct ebb_buf *hdrs, const char *names,
                      struct ebb_sigv4_result *out)
{
    const struct flavour *f = &flavours[scope->flavour];
    struct ebb_buf creq = {0}, sts = {0};
    char payload_hash[65], creq_hash[65];
    int rc = 0;
    if (req->payload_hash != NULL)
        snprintf(payload_hash, sizeof(payload_hash), "%s", req->payload_hash);
    else
        rc = ebb_sha256_hex(req->payload, req->payload_len, payload_hash);

    ebb_buf_printf(&creq, "%s\n", req->method);
    const char *path = req->path != NULL && req->path[0] != '\0' ? req->path : "/";
    if (req->s3_path)
        s3_uri(&creq, path);
    else
        normalised_uri(&creq, path);
    ebb_buf_puts(&creq, "\n");
    if (rc == 0)
        rc = canonical_query(&creq, query, f);
    ebb_buf_puts(&creq, "\n");
    if (hdrs->len > 0)
        ebb_buf_append(&creq, hdrs->data, hdrs->len);
    ebb_buf_printf(&creq, "\n%s\n%s", names, payload_hash);
    if (rc == 0 && creq.failed)
        rc = EBB_ENOMEM;
    if (rc == 0)
        rc = ebb_sha256_hex(creq.data, creq.len, creq_hash);
    if (rc == 0) {
        ebb_buf_printf(&sts, "%s\n%s\n%.8s/%s/%s/%s\n%s", f->algorithm,
                       scope->amz_date, scope->amz_date, scope->region,
                       scope->service, f->terminator, creq_hash);
        rc = sts.failed ? EBB_ENOMEM : signature(scope, f, sts.data, out->signature);
    }
    if (rc == 0) {
        out->canonical_request = ebb_buf_take(&creq);
        out->string_to_sign = ebb_buf_take(&sts);
    }
    ebb_buf_free(&creq);
    ebb_buf_free(&sts);
    return rc;
}

/* Checks the arguments both forms share and makes the header block. */
static int begin(const struct ebb_sigv4_request *req,
                 const struct ebb_sigv4_scope *scope, struct ebb_buf *hdrs,
                 struct ebb_buf *names, struct ebb_sigv4_result *out)
{
    memset(out, 0, sizeof(*out));
    if (req->method == NULL || !valid_scope(scope) ||
        !valid_payload_hash(req->payload_hash) ||
        (req->n_headers > 0 && req->headers == NULL))
        return EBB_EINVAL;
    int rc = canonical_headers(req, scope->flavour, hdrs, names);
    if (rc == 0 && (hdrs->failed || names->failed))
        rc = EBB_ENOMEM;
    return rc;
}

int ebb_sigv4_sign(const struct ebb_sigv4_request *req,
                   const struct ebb_sigv4_scope *scope,
                   struct ebb_sigv4_result *out)
{
    struct ebb_buf hdrs = {0}, names = {0}, auth = {0};
    int rc = begin(req, scope, &hdrs, &names, out);
    if (rc == 0)
        rc = sign_parts(req, scope, req->query != NULL ? req->query : "", &hdrs,
                        names.data, out);
    if (rc == 0) {
        const struct flavour *f = &flavours[scope->flavour];
        ebb_buf_printf(&auth, "%s Credential=%s/%.8s/%s/%s/%s", f->algorithm,
                       scope->access_key_id, scope->amz_date, scope->region,
                       scope->service, f->terminator);
        if (scope->flavour == EBB_SIGV4_AWS)
            ebb_buf_printf(&auth, ", SignedHeaders=%s, Signature=%s", names.data,
                           out->signature);
        else if (names.len > 0)
            ebb_buf_printf(&auth, ",AdditionalHeaders=%s,Signature=%s",
                           names.data, out->signature);
        else
            ebb_buf_printf(&auth, ",Signature=%s", out->signature);
        if (auth.failed)
            rc = EBB_ENOMEM;
        else
            out->authorization = ebb_buf_take(&auth);
    }
    if (rc != 0)
        ebb_sigv4_result_free(out);
    ebb_buf_free(&hdrs);
    ebb_buf_free(&names);
    ebb_buf_free(&auth);
    return rc;
}

/* Appends "&name=enc(value)" (no '&' at the start of the query). */
static void add_param(struct ebb_buf *q, const char *name, const char *value)
{
    ebb_buf_printf(q, "%s%s=", q->len ? "&" : "", name);
    ebb_pct_encode(q, value, strlen(value), 0);
}

int ebb_sigv4_presign(const struct ebb_sigv4_request *req,
                      const struct ebb_sigv4_scope *scope, int64_t expires_s,
                      struct ebb_sigv4_result *out)
{
    struct ebb_buf hdrs = {0}, names = {0}, q = {0};
    int rc = begin(req, scope, &hdrs, &names, out);
    if (rc == 0 &&
        (expires_s < EBB_SIGV4_EXPIRES_MIN || expires_s > EBB_SIGV4_EXPIRES_MAX))
        rc = EBB_EINVAL;
    if (rc == 0) {
        const struct flavour *f = &flavours[scope->flavour];
        char credential[512], expires[24];
        snprintf(credential, sizeof(credential), "%s/%.8s/%s/%s/%s",
                 scope->access_key_id, scope->amz_date, scope->region,
                 scope->service, f->terminator);
        snprintf(expires, sizeof(expires), "%" PRId64, expires_s);
        /* The operation's own parameters come first ("the spec is
         * particular about this", botocore); the canonical query sorts
         * them anyway. */
        ebb_buf_puts(&q, req->query != NULL ? req->query : "");
        add_param(&q, f->q_algorithm, f->algorithm);
        add_param(&q, f->q_credential, credential);
        add_param(&q, f->q_date, scope->amz_date);
        add_param(&q, f->q_expires, expires);
        if (scope->flavour == EBB_SIGV4_AWS || names.len > 0)
            add_param(&q, f->q_headers, names.data);
        if (scope->session_token != NULL)
            add_param(&q, f->q_token, scope->session_token);
        rc = q.failed ? EBB_ENOMEM
                      : sign_parts(req, scope, q.data, &hdrs, names.data, out);
        if (rc == 0) {
            add_param(&q, f->q_signature, out->signature);
            if (q.failed)
                rc = EBB_ENOMEM;
            else
                out->authorization = ebb_buf_take(&q);
        }
    }
    if (rc != 0)
        ebb_sigv4_result_free(out);
    ebb_buf_free(&hdrs);
    ebb_buf_free(&names);
    ebb_buf_free(&q);
    return rc;
}

void ebb_sigv4_result_free(struct ebb_sigv4_result *r)
{
    free(r->canonical_request);
    free(r->string_to_sign);
    free(r->authorization);
    memset(r, 0, sizeof(*r));
}

void ebb_sigv4_amz_date(ebb_time_ms t, char out[17])
{
    /* ISO 8601's basic form: ebb_format_time's extended one
     * (YYYY-MM-DDTHH:MM:SSZ) without its separators; a leading '-' is a
     * year's sign. */
    char iso[32];
    ebb_format_time(t, iso, sizeof(iso));
    size_t n = 0;
    for (size_t i = 0; iso[i] != '\0' && n < 16; i++)
        if (i == 0 || (iso[i] != '-' && iso[i] != ':'))
            out[n++] = iso[i];
    out[n] = '\0';
}
