/* Alibaba Cloud request signatures.
 *
 * V1 (RPC style): the sorted, percent-encoded parameters are joined into a
 * canonical query; "METHOD&%2F&" + enc(canonical query) is signed with
 * HMAC-SHA1 keyed by secret + "&" and sent base64 as the Signature
 * parameter. ACS3-HMAC-SHA256 (V3): a canonical request of method, path,
 * query, the signed headers and the payload hash is hashed with SHA-256,
 * and "ACS3-HMAC-SHA256\n" + that hash is signed with HMAC-SHA256 keyed by
 * the raw secret. Both use RFC 3986 encoding (space %20, '*' %2A, '~'
 * kept), which src/base/urlenc.c provides; SHA-256 and HMAC-SHA256 come
 * from base too (ebb/digest.h), shared with SigV4. Known-answer vectors are in
 * tests/alibaba/test_alibaba_sign.c.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <ebb/buf.h>
#include <ebb/digest.h>
#include <ebb/urlenc.h>

#include "alibaba.h"

void ali_params_add(struct ali_params *p, const char *key, const char *value)
{
    if (p->failed)
        return;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct ali_param *v = realloc(p->v, cap * sizeof(*v));
        if (v == NULL) {
            p->failed = 1;
            return;
        }
        p->v = v;
        p->cap = cap;
    }
    char *k = strdup(key), *val = strdup(value ? value : "");
    if (k == NULL || val == NULL) {
        free(k);
        free(val);
        p->failed = 1;
        return;
    }
    p->v[p->n++] = (struct ali_param){k, val};
}

void ali_params_addf(struct ali_params *p, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *v = ebb_vstrfmt(fmt, ap);
    va_end(ap);
    if (v == NULL)
        p->failed = 1;
    else
        ali_params_add(p, key, v);
    free(v);
}

void ali_params_free(struct ali_params *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].key);
        free(p->v[i].value);
    }
    free(p->v);
    *p = (struct ali_params){0};
}

static int by_key(const void *a, const void *b)
{
    const struct ali_param *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c != 0 ? c : strcmp(x->value, y->value);
}

char *ali_canonical_query(struct ali_params *p)
{
    if (p->failed)
        return NULL;
    if (p->n > 1)
        qsort(p->v, p->n, sizeof(*p->v), by_key);
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, "");
    for (size_t i = 0; i < p->n; i++) {
        if (i > 0)
            ebb_buf_puts(&b, "&");
        ebb_pct_encode(&b, p->v[i].key, strlen(p->v[i].key), 0);
        ebb_buf_puts(&b, "=");
        ebb_pct_encode(&b, p->v[i].value, strlen(p->v[i].value), 0);
    }
    if (b.failed) {
        ebb_buf_free(&b);
        return NULL;
    }
    return ebb_buf_take(&b);
}

int ali_sign_v1(const char *method, struct ali_params *p, const char *secret,
                char out[ALI_SIG_V1_LEN])
{
    char *query = ali_canonical_query(p);
    if (query == NULL)
        return EBB_ENOMEM;
    struct ebb_buf sts = {0};
    ebb_buf_printf(&sts, "%s&%%2F&", method);
    ebb_pct_encode(&sts, query, strlen(query), 0);
    free(query);
    char *key = ebb_strfmt("%s&", secret);
    if (sts.failed || key == NULL) {
        ebb_buf_free(&sts);
        free(key);
        return EBB_ENOMEM;
    }
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    const unsigned char *ok =
        HMAC(EVP_sha1(), key, (int)strlen(key), (const unsigned char *)sts.data,
             sts.len, mac, &mac_len);
    OPENSSL_cleanse(key, strlen(key));
    free(key);
    ebb_buf_free(&sts);
    if (ok == NULL || mac_len != 20)
        return EBB_ENOMEM;
    EVP_EncodeBlock((unsigned char *)out, mac, (int)mac_len);
    return 0;
}

/* One signed header: its lower-case name and its values, merged. */
struct v3_header {
    char name[64];
    const char *values[8];
    size_t value_len[8];
    size_t n;
};

static int by_value(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct v3_header *)a)->name,
                  ((const struct v3_header *)b)->name);
}

/* Only host, content-type and x-acs-* headers are signed. */
static int signed_header(const char *name)
{
    return strcmp(name, "host") == 0 || strcmp(name, "content-type") == 0 ||
           strncmp(name, "x-acs-", 6) == 0;
}

/* Collects the signed headers from "Name: value" strings. Values point
 * into `copies`, NUL-terminated and trimmed. Returns the count, or -1 when
 * there are too many or a name is too long. */
static int collect_headers(const char *const *headers, size_t n_headers,
                           char **copies, struct v3_header *h, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < n_headers; i++) {
        const char *colon = strchr(headers[i], ':');
        if (colon == NULL || (size_t)(colon - headers[i]) >= sizeof(h->name))
            return -1;
        char name[64];
        size_t nl = (size_t)(colon - headers[i]);
        for (size_t k = 0; k < nl; k++)
            name[k] = (char)tolower((unsigned char)headers[i][k]);
        name[nl] = '\0';
        if (!signed_header(name))
            continue;
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        copies[i] = strdup(v);
        if (copies[i] == NULL)
            return -1;
        size_t vl = strlen(copies[i]);
        while (vl > 0 && (copies[i][vl - 1] == ' ' || copies[i][vl - 1] == '\t'))
            copies[i][--vl] = '\0';
        size_t j = 0;
        while (j < n && strcmp(h[j].name, name) != 0)
            j++;
        if (j == n) {
            if (n == max)
                return -1;
            memset(&h[n], 0, sizeof(h[n]));
            memcpy(h[n].name, name, nl + 1);
            n++;
        }
        if (h[j].n == sizeof(h[j].values) / sizeof(h[j].values[0]))
            return -1;
        h[j].values[h[j].n++] = copies[i];
    }
    qsort(h, n, sizeof(*h), by_name);
    for (size_t j = 0; j < n; j++)
        qsort(h[j].values, h[j].n, sizeof(h[j].values[0]), by_value);
    return (int)n;
}

char *ali_sign_v3(const char *method, const char *path, struct ali_params *query,
                  const char *const *headers, size_t n_headers,
                  const char *payload_hash, const char *key_id,
                  const char *secret)
{
    struct v3_header h[16];
    char **copies = calloc(n_headers ? n_headers : 1, sizeof(*copies));
    char *canon_query = ali_canonical_query(query);
    int n = copies && canon_query
                ? collect_headers(headers, n_headers, copies, h, 16)
                : -1;
    struct ebb_buf creq = {0}, names = {0};
    ebb_buf_puts(&names, "");
    if (n >= 0) {
        ebb_buf_printf(&creq, "%s\n", method);
        ebb_pct_encode(&creq, path[0] ? path : "/", strlen(path[0] ? path : "/"), 1);
        ebb_buf_printf(&creq, "\n%s\n", canon_query);
        for (int j = 0; j < n; j++) {
            ebb_buf_printf(&creq, "%s:", h[j].name);
            for (size_t k = 0; k < h[j].n; k++)
                ebb_buf_printf(&creq, "%s%s", k ? "," : "", h[j].values[k]);
            ebb_buf_puts(&creq, "\n");
            ebb_buf_printf(&names, "%s%s", j ? ";" : "", h[j].name);
        }
        ebb_buf_printf(&creq, "\n%s\n%s", names.data ? names.data : "",
                        payload_hash);
    }
    for (size_t i = 0; copies != NULL && i < n_headers; i++)
        free(copies[i]);
    free(copies);
    free(canon_query);
    char *auth = NULL;
    char hashed[EBB_SHA256_HEX_LEN];
    if (n >= 0 && !creq.failed && !names.failed &&
        ebb_sha256_hex(creq.data, creq.len, hashed) == 0) {
        char *sts = ebb_strfmt("ACS3-HMAC-SHA256\n%s", hashed);
        unsigned char mac[EBB_SHA256_LEN];
        if (sts != NULL &&
            ebb_hmac_sha256(secret, strlen(secret), sts, strlen(sts), mac) == 0) {
            char sig[EBB_SHA256_HEX_LEN];
            ebb_hex(mac, sizeof(mac), sig);
            auth = ebb_strfmt("ACS3-HMAC-SHA256 Credential=%s,SignedHeaders=%s,"
                               "Signature=%s",
                               key_id, names.data ? names.data : "", sig);
        }
        free(sts);
    }
    ebb_buf_free(&creq);
    ebb_buf_free(&names);
    return auth;
}
