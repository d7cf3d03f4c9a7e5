/* Opening a store: its credentials from the environment, the checks
 * ebb.yaml's stores: share with it (region, endpoint, addressing), and the
 * store's own copy of everything. */
#include "objstore/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/aws_creds.h>
#include <ebb/buf.h>

#include "base/str.h"

/* ---- credentials ---- */

void ebb__objstore_creds_free(struct ebb__objstore_creds *c)
{
    ebb__str_wipe(&c->access_key_id);
    ebb__str_wipe(&c->secret_access_key);
    ebb__str_wipe(&c->session_token);
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
