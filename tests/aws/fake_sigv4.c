/* Rebuilds the canonical request of a Query API POST the way EC2 does and
 * compares signatures. Only what ebb's requests need is supported: the
 * path "/", a query string (sorted pairs), the signed headers' values
 * trimmed with inner blanks collapsed, and the SHA-256 of the body. */
#include "fake_sigv4.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/str.h"

static void to_hex(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void digest_hex(const char *data, size_t len, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    to_hex(md, 32, out);
}

static void mac(const unsigned char *key, size_t key_len, const char *msg,
                unsigned char out[32])
{
    unsigned int n = 0;
    HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)msg,
         strlen(msg), out, &n);
}

/* Finds "name=" in the comma-separated Authorization fields. */
static int auth_field(const char *auth, const char *name, char *out, size_t size)
{
    size_t nlen = strlen(name);
    for (const char *p = auth; (p = strstr(p, name)) != NULL; p += nlen) {
        if ((p == auth || p[-1] == ' ' || p[-1] == ',') && p[nlen] == '=') {
            const char *v = p + nlen + 1;
            size_t len = strcspn(v, ", ");
            if (len >= size)
                return -1;
            memcpy(out, v, len);
            out[len] = '\0';
            return 0;
        }
    }
    return -1;
}

static void collapse(struct ebb_buf *b, const char *v)
{
    int space = 0, any = 0;
    for (; *v != '\0'; v++) {
        if (*v == ' ' || *v == '\t') {
            space = any;
            continue;
        }
        if (space)
            ebb_buf_puts(b, " ");
        ebb_buf_append(b, v, 1);
        space = 0;
        any = 1;
    }
}

/* Cuts `s` at each `sep` in place; returns how many parts (at most max). */
static size_t split(char *s, char sep, char **out, size_t max)
{
    size_t n = 0;
    while (n < max) {
        out[n++] = s;
        char *next = strchr(s, sep);
        if (next == NULL)
            break;
        *next = '\0';
        s = next + 1;
    }
    return n;
}

static int pair_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The query pairs as sent, sorted; ebb's POSTs send none. */
static void canonical_query(struct ebb_buf *b, const char *query)
{
    char *copy = strdup(query);
    char *pairs[256];
    size_t n = copy[0] != '\0' ? split(copy, '&', pairs, 256) : 0;
    qsort(pairs, n, sizeof(*pairs), pair_cmp);
    for (size_t i = 0; i < n; i++)
        ebb_buf_printf(b, "%s%s%s", i ? "&" : "", pairs[i],
                        strchr(pairs[i], '=') ? "" : "=");
    free(copy);
}

int fake_sigv4_verify(const struct ebb__httpd_request *req, const char *akid,
                      const char *secret, const char *token, char *region,
                      size_t region_size, char *why, size_t why_size)
{
    const char *auth = ebb__httpd_header(req, "Authorization");
    const char *date = ebb__httpd_header(req, "X-Amz-Date");
    char cred[256], signed_headers[512], sig[80];
    if (auth == NULL || strncmp(auth, "AWS4-HMAC-SHA256 ", 17) != 0 ||
        auth_field(auth, "Credential", cred, sizeof(cred)) != 0 ||
        auth_field(auth, "SignedHeaders", signed_headers, sizeof(signed_headers)) != 0 ||
        auth_field(auth, "Signature", sig, sizeof(sig)) != 0) {
        snprintf(why, why_size, "no valid AWS4-HMAC-SHA256 Authorization header");
        return -1;
    }
    if (date == NULL || strlen(date) != 16) {
        snprintf(why, why_size, "no X-Amz-Date");
        return -1;
    }
    /* Credential = AKID/yyyymmdd/region/ec2/aws4_request */
    char *parts[6];
    size_t n = split(cred, '/', parts, 6);
    if (n != 5 || strcmp(parts[0], akid) != 0 || strncmp(parts[1], date, 8) != 0 ||
        strcmp(parts[3], "ec2") != 0 || strcmp(parts[4], "aws4_request") != 0) {
        snprintf(why, why_size, "credential scope or access key not recognised");
        return -1;
    }
    snprintf(region, region_size, "%s", parts[2]);
    if (strstr(signed_headers, "host") == NULL ||
        strstr(signed_headers, "x-amz-date") == NULL ||
        (token != NULL && strstr(signed_headers, "x-amz-security-token") == NULL)) {
        snprintf(why, why_size, "required headers are not signed");
        return -1;
    }
    const char *sent_token = ebb__httpd_header(req, "X-Amz-Security-Token");
    if (token != NULL && (sent_token == NULL || strcmp(sent_token, token) != 0)) {
        snprintf(why, why_size, "the security token is missing or wrong");
        return -1;
    }

    struct ebb_buf creq = {0};
    ebb_buf_printf(&creq, "%s\n%s\n", req->method, req->path);
    canonical_query(&creq, req->query);
    ebb_buf_puts(&creq, "\n");
    char names[512];
    snprintf(names, sizeof(names), "%s", signed_headers);
    char *hdrs[32];
    size_t n_hdrs = split(names, ';', hdrs, 32);
    for (size_t i = 0; i < n_hdrs; i++) {
        const char *h = hdrs[i];
        if (i > 0 && strcmp(hdrs[i - 1], h) >= 0) {
            snprintf(why, why_size, "signed headers are not sorted");
            ebb_buf_free(&creq);
            return -1;
        }
        const char *v = ebb__httpd_header(req, h);
        if (v == NULL) {
            snprintf(why, why_size, "signed header %s is missing", h);
            ebb_buf_free(&creq);
            return -1;
        }
        ebb_buf_printf(&creq, "%s:", h);
        collapse(&creq, v);
        ebb_buf_puts(&creq, "\n");
    }
    char body_hash[65], creq_hash[65];
    digest_hex(req->body, req->body_len, body_hash);
    ebb_buf_printf(&creq, "\n%s\n%s", signed_headers, body_hash);
    digest_hex(creq.data, creq.len, creq_hash);
    ebb_buf_free(&creq);

    char sts[512], scope_date[9], k_secret[256];
    snprintf(scope_date, sizeof(scope_date), "%.8s", date);
    snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s/%s/ec2/aws4_request\n%s",
             date, scope_date, region, creq_hash);
    snprintf(k_secret, sizeof(k_secret), "AWS4%s", secret);
    unsigned char k1[32], k2[32];
    mac((const unsigned char *)k_secret, strlen(k_secret), scope_date, k1);
    mac(k1, 32, region, k2);
    mac(k2, 32, "ec2", k1);
    mac(k1, 32, "aws4_request", k2);
    mac(k2, 32, sts, k1);
    char expect[65];
    to_hex(k1, 32, expect);
    if (strcmp(expect, sig) != 0) {
        snprintf(why, why_size, "signature does not match");
        return -1;
    }
    return 0;
}
