/* Store URLs, endpoints, credentials and signed requests: everything
 * about a store that needs no I/O. */
#include "objstore/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include <ebb/aws_creds.h>
#include <ebb/buf.h>
#include <ebb/digest.h>
#include <ebb/urlenc.h>

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* ---- URLs ---- */

static int valid_bucket(const char *b, size_t n)
{
    if (n < 3 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '.'))
            return 0;
    }
    return isalnum((unsigned char)b[0]) && isalnum((unsigned char)b[n - 1]);
}

/* No empty, "." or ".." segment and no control character: a key or
 * prefix names one object, never a directory walk on file://. */
static int valid_segments(const char *s, size_t n)
{
    if (n == 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    for (size_t i = 0; i <= n;) {
        size_t len = 0;
        while (i + len < n && s[i + len] != '/')
            len++;
        if (len == 0 || (len == 1 && s[i] == '.') ||
            (len == 2 && s[i] == '.' && s[i + 1] == '.'))
            return 0;
        i += len + 1;
    }
    return 1;
}

int ebb__os_check_key(const char *key)
{
    size_t n = key != NULL ? strlen(key) : 0;
    return n > 0 && n <= 1024 && valid_segments(key, n) ? 0 : EBB_EINVAL;
}

int ebb__os_check_prefix(const char *prefix)
{
    size_t n = prefix != NULL ? strlen(prefix) : 0;
    if (n > 0 && prefix[n - 1] == '/')
        n--;
    if (prefix == NULL || (n == 0 && prefix[0] != '\0'))
        return EBB_EINVAL;
    return n <= 1024 && valid_segments(prefix, n) ? 0 : EBB_EINVAL;
}

void ebb__objstore_url_free(struct ebb__objstore_url *u)
{
    free(u->bucket);
    free(u->prefix);
    free(u->dir);
    memset(u, 0, sizeof(*u));
}

int ebb__objstore_url_parse(const char *url, struct ebb__objstore_url *out,
                            char *err, size_t err_size)
{
    memset(out, 0, sizeof(*out));
    const char *rest = NULL;
    if (url != NULL && strncmp(url, "s3://", 5) == 0) {
        out->kind = EBB__OBJSTORE_S3;
        rest = url + 5;
    } else if (url != NULL && strncmp(url, "oss://", 6) == 0) {
        out->kind = EBB__OBJSTORE_OSS;
        rest = url + 6;
    } else if (url != NULL && strncmp(url, "file://", 7) == 0) {
        const char *dir = url + 7;
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
            n--;
        if (dir[0] != '/' || n == 0 || !valid_segments(dir + 1, n - 1)) {
            snprintf(err, err_size, "\"%s\" is not a store URL: file:// takes "
                     "an absolute directory (file:///DIR)", url);
            return EBB_EINVAL;
        }
        out->kind = EBB__OBJSTORE_FILE;
        out->dir = strndup(dir, n);
        return out->dir != NULL ? 0 : EBB_ENOMEM;
    } else {
        snprintf(err, err_size, "\"%s\" is not a store URL (write "
                 "s3://BUCKET[/PREFIX], oss://BUCKET[/PREFIX] or file:///DIR)",
                 url != NULL ? url : "");
        return EBB_EINVAL;
    }
    size_t blen = strcspn(rest, "/");
    const char *prefix = rest[blen] == '/' ? rest + blen + 1 : "";
    size_t plen = strlen(prefix);
    while (plen > 0 && prefix[plen - 1] == '/')
        plen--;
    if (!valid_bucket(rest, blen)) {
        snprintf(err, err_size, "\"%s\": the bucket must be 3 to 63 lower-case "
                 "letters, digits, '-' or '.', starting and ending with a letter "
                 "or digit", url);
        return EBB_EINVAL;
    }
    if (!valid_segments(prefix, plen)) {
        snprintf(err, err_size, "\"%s\": the prefix after the bucket must not "
                 "hold empty, '.' or '..' parts or control characters", url);
        return EBB_EINVAL;
    }
    out->bucket = strndup(rest, blen);
    out->prefix = strndup(prefix, plen);
    if (out->bucket == NULL || out->prefix == NULL) {
        ebb__objstore_url_free(out);
        return EBB_ENOMEM;
    }
    return 0;
}

/* ---- credentials ---- */

static void wipe(char **s)
{
    if (*s != NULL) {
        OPENSSL_cleanse(*s, strlen(*s));
        free(*s);
        *s = NULL;
    }
}

void ebb__objstore_creds_free(struct ebb__objstore_creds *c)
{
    wipe(&c->access_key_id);
    wipe(&c->secret_access_key);
    wipe(&c->session_token);
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

int ebb__objstore_creds_load(enum ebb__objstore_kind kind,
                             struct ebb__objstore_creds *out, char *err,
                             size_t err_size)
{
    memset(out, 0, sizeof(*out));
    err[0] = '\0';
    if (kind == EBB__OBJSTORE_FILE)
        return 0;
    if (kind == EBB__OBJSTORE_S3) {
        struct ebb_aws_creds c;
        int rc = ebb_aws_creds_load(&c, err, err_size);
        if (rc != 0)
            return rc;
        /* The strings move over; c's copies are not wiped twice. */
        out->access_key_id = c.access_key_id;
        out->secret_access_key = c.secret_access_key;
        out->session_token = c.session_token;
        return 0;
    }
    const char *id = env("ALIBABA_CLOUD_ACCESS_KEY_ID");
    const char *secret = env("ALIBABA_CLOUD_ACCESS_KEY_SECRET");
    const char *token = env("ALIBABA_CLOUD_SECURITY_TOKEN");
    if (id == NULL || secret == NULL) {
        snprintf(err, err_size, "no Alibaba Cloud credentials for an oss:// "
                 "store: set ALIBABA_CLOUD_ACCESS_KEY_ID and "
                 "ALIBABA_CLOUD_ACCESS_KEY_SECRET");
        return EBB_EAUTH;
    }
    out->access_key_id = strdup(id);
    out->secret_access_key = strdup(secret);
    out->session_token = token != NULL ? strdup(token) : NULL;
    if (out->access_key_id == NULL || out->secret_access_key == NULL ||
        (token != NULL && out->session_token == NULL)) {
        ebb__objstore_creds_free(out);
        return EBB_ENOMEM;
    }
    return 0;
}

/* ---- opening a store ---- */

static int valid_region(const char *r)
{
    size_t n = r != NULL ? strlen(r) : 0;
    if (n == 0 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)r[i]) || isdigit((unsigned char)r[i]) ||
              r[i] == '-'))
            return 0;
    return 1;
}

/* Splits "http[s]://HOST[:PORT][/]" into scheme and authority. */
static int split_endpoint(const char *ep, char **scheme, char **host)
{
    size_t skip = strncmp(ep, "https://", 8) == 0 ? 8
                  : strncmp(ep, "http://", 7) == 0 ? 7 : 0;
    if (skip == 0)
        return EBB_EINVAL;
    const char *h = ep + skip;
    size_t n = strcspn(h, "/?#");
    if (n == 0 || (h[n] != '\0' && !(h[n] == '/' && h[n + 1] == '\0')) ||
        strchr(h, '@') != NULL)
        return EBB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)h[i]) || strchr("-.:[]", h[i]) != NULL))
            return EBB_EINVAL;
    *scheme = strndup(ep, skip - 3);
    *host = strndup(h, n);
    return *scheme != NULL && *host != NULL ? 0 : EBB_ENOMEM;
}

/* An IP literal (or a port-only difference) cannot carry a bucket as a
 * subdomain, so such endpoints are addressed path-style (botocore does
 * the same). */
static int is_ip_literal(const char *host)
{
    if (host[0] == '[')
        return 1;
    size_t n = strcspn(host, ":");
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)host[i]) && host[i] != '.')
            return 0;
    return n > 0;
}

/* The checks open and ebb.yaml's stores: share; on success *scheme and
 * *host hold the endpoint's parts (caller frees) and *path_style the
 * addressing used. */
static int check_cfg(const struct ebb__objstore_cfg *cfg,
                     const struct ebb__objstore_url *u, char **scheme, char **host,
                     int *path_style, char *err, size_t err_size)
{
    *scheme = *host = NULL;
    *path_style = 0;
    if (u->kind == EBB__OBJSTORE_FILE) {
        const char *extra = cfg->region != NULL        ? "region"
                            : cfg->endpoint != NULL    ? "endpoint"
                            : cfg->path_style          ? "path_style"
                                                       : NULL;
        if (extra == NULL)
            return 0;
        snprintf(err, err_size, "%s: a file:// store takes no %s (only s3:// "
                 "and oss:// stores do)", extra, extra);
        return EBB_ECONFIG;
    }
    const char *cloud = u->kind == EBB__OBJSTORE_S3 ? "s3" : "oss";
    if (!valid_region(cfg->region)) {
        snprintf(err, err_size, "region: an %s:// store needs its region, in "
                 "lower-case letters, digits and '-' (such as %s)", cloud,
                 u->kind == EBB__OBJSTORE_S3 ? "us-east-1" : "cn-hangzhou");
        return EBB_ECONFIG;
    }
    if (u->kind == EBB__OBJSTORE_OSS && strncmp(cfg->region, "oss-", 4) == 0) {
        snprintf(err, err_size, "region \"%s\": write the region ID (\"%s\"), "
                 "not the OSS endpoint's name", cfg->region, cfg->region + 4);
        return EBB_ECONFIG;
    }
    if (u->kind == EBB__OBJSTORE_OSS && cfg->path_style) {
        snprintf(err, err_size, "path_style: OSS accepts only virtual-hosted "
                 "addressing (the bucket in the host name); remove path_style");
        return EBB_ECONFIG;
    }
    char *def = NULL;
    if (cfg->endpoint == NULL || cfg->endpoint[0] == '\0')
        def = u->kind == EBB__OBJSTORE_OSS
                  ? ebb_strfmt("https://oss-%s.aliyuncs.com", cfg->region)
              : strncmp(cfg->region, "cn-", 3) == 0
                  ? ebb_strfmt("https://s3.%s.amazonaws.com.cn", cfg->region)
                  : ebb_strfmt("https://s3.%s.amazonaws.com", cfg->region);
    const char *ep = def != NULL ? def : cfg->endpoint;
    int rc = ep == NULL ? EBB_ENOMEM : split_endpoint(ep, scheme, host);
    if (rc == EBB_EINVAL) {
        snprintf(err, err_size, "endpoint \"%s\" is not http[s]://HOST[:PORT]", ep);
        rc = EBB_ECONFIG;
    }
    free(def);
    if (rc != 0) {
        free(*scheme);
        free(*host);
        *scheme = *host = NULL;
        return rc;
    }
    /* A dotted bucket does not match the TLS wildcard of a virtual host
     * (*.s3.REGION.amazonaws.com). */
    int dotted_tls = strchr(u->bucket, '.') != NULL && strcmp(*scheme, "https") == 0;
    *path_style = u->kind == EBB__OBJSTORE_S3 &&
                  (cfg->path_style || is_ip_literal(*host) || dotted_tls);
    return 0;
}

int ebb__objstore_cfg_check(const struct ebb__objstore_cfg *cfg,
                            enum ebb__objstore_kind *kind, char *err,
                            size_t err_size)
{
    err[0] = '\0';
    struct ebb__objstore_url u;
    int rc = ebb__objstore_url_parse(cfg->url, &u, err, err_size);
    if (rc != 0)
        return rc == EBB_EINVAL ? EBB_ECONFIG : rc;
    char *scheme, *host;
    int path_style;
    rc = check_cfg(cfg, &u, &scheme, &host, &path_style, err, err_size);
    if (kind != NULL)
        *kind = u.kind;
    free(scheme);
    free(host);
    ebb__objstore_url_free(&u);
    return rc;
}

int ebb__objstore_open(const struct ebb__objstore_cfg *cfg,
                       const struct ebb__objstore_creds *creds,
                       struct ebb__http *http, uv_loop_t *loop,
                       struct ebb__objstore **out, char *err, size_t err_size)
{
    *out = NULL;
    err[0] = '\0';
    struct ebb__objstore_url u;
    int rc = ebb__objstore_url_parse(cfg->url, &u, err, err_size);
    if (rc != 0)
        return rc;
    struct ebb__objstore *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        ebb__objstore_url_free(&u);
        return EBB_ENOMEM;
    }
    st->kind = u.kind;
    st->bucket = u.bucket;
    st->prefix = u.prefix;
    st->dir = u.dir;
    st->http = http;
    st->loop = loop;
    st->max_attempts = cfg->max_attempts;
    st->timeout = cfg->timeout > 0 ? cfg->timeout : 10 * EBB_MS_PER_MINUTE;
    st->now = cfg->now;
    st->now_ctx = cfg->now_ctx;
    rc = check_cfg(cfg, &u, &st->scheme, &st->host, &st->path_style, err, err_size);
    if (rc == 0 && st->kind != EBB__OBJSTORE_FILE) {
        if (st->http == NULL || st->now == NULL || creds == NULL ||
            creds->access_key_id == NULL || creds->secret_access_key == NULL)
            rc = EBB_EINVAL;
        st->region = rc == 0 ? strdup(cfg->region) : NULL;
        if (rc == 0) {
            st->creds.access_key_id = strdup(creds->access_key_id);
            st->creds.secret_access_key = strdup(creds->secret_access_key);
            st->creds.session_token =
                creds->session_token != NULL ? strdup(creds->session_token) : NULL;
            if (st->region == NULL || st->creds.access_key_id == NULL ||
                st->creds.secret_access_key == NULL ||
                (creds->session_token != NULL && st->creds.session_token == NULL))
                rc = EBB_ENOMEM;
        }
    }
    if (rc != 0) {
        ebb__objstore_free(st);
        return rc;
    }
    *out = st;
    return 0;
}

void ebb__objstore_free(struct ebb__objstore *st)
{
    if (st == NULL)
        return;
    ebb__objstore_creds_free(&st->creds);
    free(st->bucket);
    free(st->prefix);
    free(st->dir);
    free(st->region);
    free(st->scheme);
    free(st->host);
    free(st);
}

/* ---- addressing and signing ---- */

char *ebb__os_full_key(const struct ebb__objstore *st, const char *key)
{
    if (st->prefix == NULL || st->prefix[0] == '\0')
        return strdup(key);
    return ebb_strfmt("%s/%s", st->prefix, key);
}

/* The Host header, the path as sent (encoded) and the raw path the
 * signature covers for `full_key` (NULL: the bucket). */
static int address(const struct ebb__objstore *st, const char *full_key,
                   char **host, struct ebb_buf *wire, char **canonical)
{
    int virtual_host = !st->path_style;
    *host = virtual_host ? ebb_strfmt("%s.%s", st->bucket, st->host)
                         : strdup(st->host);
    ebb_buf_puts(wire, "/");
    if (!virtual_host) {
        ebb_buf_puts(wire, st->bucket);
        if (full_key != NULL)
            ebb_buf_puts(wire, "/");
    }
    if (full_key != NULL)
        ebb_pct_encode(wire, full_key, strlen(full_key), 1);
    /* OSS V4 always signs /BUCKET/KEY, whatever the host says. */
    if (st->kind == EBB__OBJSTORE_OSS)
        *canonical = ebb_strfmt("/%s/%s", st->bucket, full_key != NULL ? full_key : "");
    else if (!virtual_host)
        *canonical = ebb_strfmt("/%s%s%s", st->bucket, full_key != NULL ? "/" : "",
                                full_key != NULL ? full_key : "");
    else
        *canonical = ebb_strfmt("/%s", full_key != NULL ? full_key : "");
    return *host != NULL && *canonical != NULL && !wire->failed ? 0 : EBB_ENOMEM;
}

static struct ebb_sigv4_scope scope_of(const struct ebb__objstore *st,
                                       const char *amz_date)
{
    return (struct ebb_sigv4_scope){
        .flavour = st->kind == EBB__OBJSTORE_OSS ? EBB_SIGV4_OSS : EBB_SIGV4_AWS,
        .access_key_id = st->creds.access_key_id,
        .secret_access_key = st->creds.secret_access_key,
        .region = st->region,
        .service = st->kind == EBB__OBJSTORE_OSS ? "oss" : "s3",
        .amz_date = amz_date,
    };
}

void ebb__os_signed_free(struct os_signed *s)
{
    free(s->url);
    for (size_t i = 0; i < s->n; i++)
        free(s->lines[i]);
    memset(s, 0, sizeof(*s));
}

int ebb__os_sign(const struct ebb__objstore *st, const char *method,
                 const char *key, const char *query, const char *payload_hash,
                 const struct ebb_sigv4_header *extra, size_t n_extra,
                 struct os_signed *out)
{
    memset(out, 0, sizeof(*out));
    if (n_extra > OS_MAX_HEADERS - 5)
        return EBB_EINVAL;
    char *full = key != NULL ? ebb__os_full_key(st, key) : NULL;
    char *host = NULL, *canonical = NULL;
    struct ebb_buf wire = {0};
    int rc = key != NULL && full == NULL ? EBB_ENOMEM
                                         : address(st, full, &host, &wire, &canonical);
    char amz_date[17];
    ebb_sigv4_amz_date(st->now(st->now_ctx), amz_date);
    int oss = st->kind == EBB__OBJSTORE_OSS;
    const char *hash = oss ? EBB_SIGV4_UNSIGNED_PAYLOAD
                       : payload_hash != NULL ? payload_hash : EMPTY_SHA256;
    struct ebb_sigv4_header h[OS_MAX_HEADERS];
    size_t n = 0;
    h[n++] = (struct ebb_sigv4_header){"Host", host};
    h[n++] = (struct ebb_sigv4_header){oss ? "x-oss-date" : "x-amz-date", amz_date};
    h[n++] = (struct ebb_sigv4_header){oss ? "x-oss-content-sha256"
                                           : "x-amz-content-sha256", hash};
    if (st->creds.session_token != NULL)
        h[n++] = (struct ebb_sigv4_header){oss ? "x-oss-security-token"
                                               : "x-amz-security-token",
                                           st->creds.session_token};
    for (size_t i = 0; i < n_extra; i++)
        h[n++] = extra[i];
    struct ebb_sigv4_request req = {
        .method = method, .path = canonical, .query = query != NULL ? query : "",
        .headers = h, .n_headers = n, .payload_hash = hash, .s3_path = 1,
    };
    struct ebb_sigv4_scope scope = scope_of(st, amz_date);
    struct ebb_sigv4_result sig = {0};
    if (rc == 0)
        rc = ebb_sigv4_sign(&req, &scope, &sig);
    if (rc == 0) {
        out->url = ebb_strfmt("%s://%s%s%s%s", st->scheme, host, wire.data,
                              query != NULL && query[0] != '\0' ? "?" : "",
                              query != NULL ? query : "");
        for (size_t i = 0; i < n; i++)
            out->lines[out->n++] = ebb_strfmt("%s: %s", h[i].name, h[i].value);
        out->lines[out->n++] = ebb_strfmt("Authorization: %s", sig.authorization);
        for (size_t i = 0; i < out->n; i++)
            if (out->lines[i] == NULL)
                rc = EBB_ENOMEM;
        if (out->url == NULL)
            rc = EBB_ENOMEM;
        if (rc != 0)
            ebb__os_signed_free(out);
    }
    ebb_sigv4_result_free(&sig);
    ebb_buf_free(&wire);
    free(full);
    free(host);
    free(canonical);
    return rc;
}

char *ebb__objstore_object_url(const struct ebb__objstore *st, const char *key)
{
    if (st->kind == EBB__OBJSTORE_FILE)
        return NULL;
    char *full = ebb__os_full_key(st, key);
    char *host = NULL, *canonical = NULL, *url = NULL;
    struct ebb_buf wire = {0};
    if (full != NULL && address(st, full, &host, &wire, &canonical) == 0)
        url = ebb_strfmt("%s://%s%s", st->scheme, host, wire.data);
    ebb_buf_free(&wire);
    free(full);
    free(host);
    free(canonical);
    return url;
}

int ebb__objstore_presign(const struct ebb__objstore *st,
                          enum ebb__objstore_presign_op op, const char *key,
                          const char *upload_id, int part, int64_t expires_s,
                          char **url)
{
    *url = NULL;
    if (st->kind == EBB__OBJSTORE_FILE)
        return EBB_EUNSUPPORTED;
    if (ebb__os_check_key(key) != 0 ||
        (op == EBB__PRESIGN_PART &&
         (upload_id == NULL || upload_id[0] == '\0' || part < 1 ||
          part > EBB__OBJSTORE_PARTS_MAX)))
        return EBB_EINVAL;
    struct ebb_buf q = {0};
    ebb_buf_puts(&q, "");
    if (op == EBB__PRESIGN_PART) {
        ebb_buf_printf(&q, "partNumber=%d&uploadId=", part);
        ebb_pct_encode(&q, upload_id, strlen(upload_id), 0);
    }
    char *full = ebb__os_full_key(st, key);
    char *host = NULL, *canonical = NULL;
    struct ebb_buf wire = {0};
    int rc = full == NULL || q.failed ? EBB_ENOMEM
                                      : address(st, full, &host, &wire, &canonical);
    char amz_date[17];
    ebb_sigv4_amz_date(st->now(st->now_ctx), amz_date);
    struct ebb_sigv4_header h[1] = {{"Host", host}};
    struct ebb_sigv4_request req = {
        .method = op == EBB__PRESIGN_GET ? "GET" : "PUT",
        .path = canonical, .query = q.data, .headers = h, .n_headers = 1,
        .payload_hash = EBB_SIGV4_UNSIGNED_PAYLOAD, .s3_path = 1,
    };
    struct ebb_sigv4_scope scope = scope_of(st, amz_date);
    scope.session_token = st->creds.session_token;
    struct ebb_sigv4_result sig = {0};
    if (rc == 0)
        rc = ebb_sigv4_presign(&req, &scope, expires_s, &sig);
    if (rc == 0) {
        *url = ebb_strfmt("%s://%s%s?%s", st->scheme, host, wire.data,
                          sig.authorization);
        rc = *url != NULL ? 0 : EBB_ENOMEM;
    }
    ebb_sigv4_result_free(&sig);
    ebb_buf_free(&q);
    ebb_buf_free(&wire);
    free(full);
    free(host);
    free(canonical);
    return rc;
}
