#include "fake_ecs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <ebb/units.h>

#define MAX_PARAMS 64

struct form {
    char *keys[MAX_PARAMS], *values[MAX_PARAMS];
    size_t n;
};

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes %XX; a '+' stays a '+' (the client must send %20 for spaces). */
static char *decode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 &&
            hexval(s[i + 2]) >= 0) {
            out[k++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            out[k++] = s[i];
        }
    }
    out[k] = '\0';
    return out;
}

static void form_parse(struct form *f, const char *body)
{
    f->n = 0;
    const char *p = body;
    while (*p != '\0' && f->n < MAX_PARAMS) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t kl = eq ? (size_t)(eq - p) : len;
        f->keys[f->n] = decode(p, kl);
        f->values[f->n] = eq ? decode(eq + 1, len - kl - 1) : decode("", 0);
        f->n++;
        p += len + (amp ? 1 : 0);
    }
}

static void form_free(struct form *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->keys[i]);
        free(f->values[i]);
    }
    f->n = 0;
}

static const char *form_get(const struct form *f, const char *key)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->keys[i], key) == 0)
            return f->values[i];
    return NULL;
}

/* A growing string. */
struct str {
    char *p;
    size_t len, cap;
};

static void raw(struct str *s, const char *text)
{
    size_t n = strlen(text);
    if (s->len + n + 1 > s->cap) {
        s->cap = (s->len + n + 1) * 2;
        s->p = realloc(s->p, s->cap);
    }
    memcpy(s->p + s->len, text, n + 1);
    s->len += n;
}

/* Percent-encoding as the Alibaba docs spell it out: unreserved bytes
 * A-Z a-z 0-9 - _ . ~ as they are, everything else %XX upper-case. */
static void enc(struct str *s, const char *text)
{
    for (; *text != '\0'; text++) {
        unsigned char c = (unsigned char)*text;
        char one[4];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~')
            snprintf(one, sizeof(one), "%c", c);
        else
            snprintf(one, sizeof(one), "%%%02X", c);
        raw(s, one);
    }
}

struct kv {
    const char *k, *v;
};

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->k, ((const struct kv *)b)->k);
}

void fake_ecs_v1_signature(const char *method, const char *const *keys,
                           const char *const *values, size_t n,
                           const char *secret, char out[29])
{
    struct kv sorted[MAX_PARAMS];
    for (size_t i = 0; i < n; i++)
        sorted[i] = (struct kv){keys[i], values[i]};
    qsort(sorted, n, sizeof(sorted[0]), kv_cmp);
    struct str q = {0}, sts = {0};
    raw(&q, "");
    for (size_t i = 0; i < n; i++) {
        raw(&q, i > 0 ? "&" : "");
        enc(&q, sorted[i].k);
        raw(&q, "=");
        enc(&q, sorted[i].v);
    }
    raw(&sts, method);
    raw(&sts, "&");
    enc(&sts, "/");
    raw(&sts, "&");
    enc(&sts, q.p);
    char key[256];
    snprintf(key, sizeof(key), "%s&", secret);
    unsigned char mac[20];
    unsigned int mac_len = 0;
    HMAC(EVP_sha1(), key, (int)strlen(key), (unsigned char *)sts.p, sts.len, mac,
         &mac_len);
    EVP_EncodeBlock((unsigned char *)out, mac, 20);
    free(q.p);
    free(sts.p);
}

static void error(struct ebb__httpd_response *res, int status, const char *code,
                  const char *message)
{
    res->status = status;
    ebb__httpd_set_bodyf(res,
                         "{\"RequestId\":\"FAKE-REQ\",\"HostId\":\"ecs.aliyuncs.com\","
                         "\"Code\":\"%s\",\"Message\":\"%s\",\"Recommend\":\"\"}",
                         code, message);
}

/* ---- DescribeSpotPriceHistory ---- */

static void spot_history(struct fake_ecs *e, const struct form *f,
                         struct ebb__httpd_response *res, struct fake_call *call)
{
    const char *region = form_get(f, "RegionId");
    const char *type = form_get(f, "InstanceType");
    const char *net = form_get(f, "NetworkType");
    const char *from = form_get(f, "StartTime"), *to = form_get(f, "EndTime");
    const char *off = form_get(f, "Offset");
    ebb_time_ms t0, t1;
    if (type == NULL || net == NULL || from == NULL || to == NULL ||
        ebb_parse_time(from, &t0) != 0 || ebb_parse_time(to, &t1) != 0 ||
        strchr(from, '.') != NULL) {
        error(res, 400, "MissingParameter", "InstanceType, NetworkType, times");
        return;
    }
    if (t1 < t0 || t1 - t0 > 30 * EBB_MS_PER_DAY) {
        error(res, 400, "InvalidParameter.TimeRange", "at most 30 days");
        return;
    }
    if (e->fail_type != NULL && strcmp(type, e->fail_type) == 0) {
        if (e->fail_type_after > 0) {
            e->fail_type_after--;
        } else if (e->fail_type_next > 0) {
            e->fail_type_next--;
            error(res, 400, "InvalidParameter", "injected failure");
            return;
        }
    }
    long offset = off ? strtol(off, NULL, 10) : 0;
    snprintf(call->start, sizeof(call->start), "%s", from);
    snprintf(call->end, sizeof(call->end), "%s", to);
    call->offset = offset;
    /* Rows of this series in the window, in time order as stored. */
    size_t match = 0, sent = 0;
    char body[16384];
    size_t n = (size_t)snprintf(body, sizeof(body),
                                "{\"RequestId\":\"R\",\"Currency\":\"%s\","
                                "\"SpotPrices\":{\"SpotPriceType\":[",
                                strncmp(region, "cn-", 3) == 0 ? "CNY" : "USD");
    for (size_t i = 0; i < e->n_prices; i++) {
        const struct fake_price *p = &e->prices[i];
        if (strcmp(p->region, region) != 0 || strcmp(p->type, type) != 0 ||
            p->at < t0 || p->at > t1)
            continue;
        if ((long)match++ < offset || sent == e->page_size)
            continue;
        char when[48];
        ebb_format_time(p->at, when, sizeof(when));
        n += (size_t)snprintf(body + n, sizeof(body) - n,
                              "%s{\"ZoneId\":\"%s\",\"InstanceType\":\"%s\","
                              "\"IoOptimized\":\"optimized\",\"NetworkType\":\"vpc\","
                              "\"Timestamp\":\"%s\",\"SpotPrice\":%g,"
                              "\"OriginPrice\":%g}",
                              sent ? "," : "", p->zone, p->type, when, p->spot,
                              p->origin);
        sent++;
    }
    /* Like ECS, NextOffset is always there: past the end it points at an
     * empty page. */
    snprintf(body + n, sizeof(body) - n, "]},\"NextOffset\":%ld}",
             offset + (long)sent);
    ebb__httpd_set_body(res, body, strlen(body));
}

/* ---- instances ---- */

struct fake_instance *fake_ecs_add_instance(struct fake_ecs *e, const char *region,
                                            const char *zone, const char *token,
                                            const char *job_id)
{
    struct fake_instance *i = &e->inst[e->n_inst++];
    memset(i, 0, sizeof(*i));
    snprintf(i->id, sizeof(i->id), "i-fake%04d", ++e->next_id);
    snprintf(i->region, sizeof(i->region), "%s", region);
    snprintf(i->zone, sizeof(i->zone), "%s", zone);
    snprintf(i->type, sizeof(i->type), "ecs.gn6v-c8g1.2xlarge");
    snprintf(i->token, sizeof(i->token), "%s", token ? token : "");
    snprintf(i->job_id, sizeof(i->job_id), "%s", job_id ? job_id : "");
    snprintf(i->status, sizeof(i->status), "Running");
    snprintf(i->strategy, sizeof(i->strategy), "SpotAsPriceGo");
    i->ebb_tagged = token != NULL;
    return i;
}

/* Amount and MinAmount: 1 to 100; `dflt` when absent, 0 when malformed. */
static int amount_param(const char *s, int dflt)
{
    if (s == NULL)
        return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    return *s != '\0' && *end == '\0' && v >= 1 && v <= 100 ? (int)v : 0;
}

/* A hash of the parameters of a call, in any order, but for those that
 * change with each request (FNV-1a of each "name=value", summed). */
static uint64_t params_hash(const struct form *f)
{
    static const char *const fresh[] = {"Signature", "SignatureNonce", "Timestamp"};
    uint64_t sum = 0;
    for (size_t i = 0; i < f->n; i++) {
        int skip = 0;
        for (size_t k = 0; k < sizeof(fresh) / sizeof(fresh[0]); k++)
            skip |= strcmp(f->keys[i], fresh[k]) == 0;
        if (skip)
            continue;
        uint64_t h = UINT64_C(14695981039346656037);
        for (const char *c = f->keys[i]; *c != '\0'; c++)
            h = (h ^ (unsigned char)*c) * UINT64_C(1099511628211);
        h = (h ^ '=') * UINT64_C(1099511628211);
        for (const char *c = f->values[i]; *c != '\0'; c++)
            h = (h ^ (unsigned char)*c) * UINT64_C(1099511628211);
        sum += h;
    }
    return sum;
}

/* The value of tag `key` among Tag.N.Key/Value, or NULL. */
static const char *tag_param(const struct form *f, const char *key)
{
    for (int t = 1; t <= 20; t++) {
        char kk[32], v[32];
        snprintf(kk, sizeof(kk), "Tag.%d.Key", t);
        snprintf(v, sizeof(v), "Tag.%d.Value", t);
        const char *k = form_get(f, kk);
        if (k != NULL && strcmp(k, key) == 0)
            return form_get(f, v) ? form_get(f, v) : "";
    }
    return NULL;
}

/* ECS's HostName rules (Linux): 2 to 64 letters, digits, '.' and '-',
 * neither first nor last nor twice in a row. */
static int host_name_ok(const char *h)
{
    size_t n = strlen(h);
    if (n < 2 || n > 64 || strchr(".-", h[0]) != NULL || strchr(".-", h[n - 1]) != NULL)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && c != '.' && c != '-')
            return 0;
        if (!alnum && i > 0 && (h[i - 1] == '.' || h[i - 1] == '-'))
            return 0;
    }
    return 1;
}

static struct fake_instance *create_instance(struct fake_ecs *e, const struct form *f,
                                             const char *client_token, int k, int amount)
{
    const char *zone = form_get(f, "ZoneId");
    const char *tag = tag_param(f, "ebb-token"), *join = tag_param(f, "ebb-join");
    struct fake_instance *inst = fake_ecs_add_instance(e, form_get(f, "RegionId"),
                                                       zone ? zone : "", tag, NULL);
    snprintf(inst->client_token, sizeof(inst->client_token), "%s", client_token);
    snprintf(inst->join, sizeof(inst->join), "%s", join ? join : "");
    inst->params = params_hash(f);
    snprintf(inst->type, sizeof(inst->type), "%s", form_get(f, "InstanceType"));
    snprintf(inst->status, sizeof(inst->status), "Pending");
    const char *strategy = form_get(f, "SpotStrategy");
    snprintf(inst->strategy, sizeof(inst->strategy), "%s",
             strategy ? strategy : "NoSpot");
    const char *host = form_get(f, "HostName");
    const char *suffix = form_get(f, "UniqueSuffix");
    if (host != NULL && suffix != NULL && strcmp(suffix, "true") == 0 && amount > 1)
        snprintf(inst->host, sizeof(inst->host), "%s%03d", host, k + 1);
    else
        snprintf(inst->host, sizeof(inst->host), "%s", host ? host : "iZfake");
    /* Tags as given. */
    inst->ebb_tagged = 0;
    for (int t = 1; t <= 9; t++) {
        char kk[32], v[32];
        snprintf(kk, sizeof(kk), "Tag.%d.Key", t);
        snprintf(v, sizeof(v), "Tag.%d.Value", t);
        const char *key = form_get(f, kk), *val = form_get(f, v);
        if (key != NULL && strcmp(key, "ebb-job-id") == 0)
            snprintf(inst->job_id, sizeof(inst->job_id), "%s", val ? val : "");
        if (key != NULL && strcmp(key, "ebb-token") == 0)
            inst->ebb_tagged = 1;
    }
    return inst;
}

static void run_instances(struct fake_ecs *e, const struct form *f,
                          struct ebb__httpd_response *res)
{
    /* Keep the decoded form for assertions: "k=v\n" in sorted order. */
    struct kv sorted[MAX_PARAMS];
    for (size_t i = 0; i < f->n; i++)
        sorted[i] = (struct kv){f->keys[i], f->values[i]};
    qsort(sorted, f->n, sizeof(sorted[0]), kv_cmp);
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        n += (size_t)snprintf(e->last_run + n, sizeof(e->last_run) - n, "%s=%s\n",
                              sorted[i].k, sorted[i].v);
    const char *token = form_get(f, "ClientToken");
    const char *charge = form_get(f, "InstanceChargeType");
    if (token == NULL || charge == NULL || strcmp(charge, "PostPaid") != 0 ||
        form_get(f, "ImageId") == NULL || form_get(f, "InstanceType") == NULL) {
        error(res, 400, "MissingParameter", "ClientToken, ImageId, PostPaid");
        return;
    }
    int amount = amount_param(form_get(f, "Amount"), 1);
    int min_amount = amount_param(form_get(f, "MinAmount"), amount);
    if (amount == 0) {
        error(res, 400, "InvalidParameter", "The specified parameter Amount is not valid.");
        return;
    }
    if (min_amount == 0 || min_amount > amount) {
        error(res, 400, "InvalidMinAmount.Malformed",
              "The specified parameter MinAmount is not valid.");
        return;
    }
    const char *host = form_get(f, "HostName");
    if (host != NULL && !host_name_ok(host)) {
        error(res, 400, "InvalidHostName.Malformed",
              "The specified parameter HostName is not valid.");
        return;
    }
    if (strlen(token) > 64 || token[strspn(token,
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
            "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")] != '\0') {
        error(res, 400, "InvalidParameter", "The specified parameter ClientToken is not valid.");
        return;
    }
    /* A ClientToken seen before: the instances that call created, if it
     * asked the same. */
    size_t mine[100], n_mine = 0;
    for (size_t i = 0; i < e->n_inst && n_mine < 100; i++) {
        if (strcmp(e->inst[i].client_token, token) != 0)
            continue;
        if (e->inst[i].params != params_hash(f)) {
            error(res, 400, "IdempotentParameterMismatch",
                  "The specified parameter has changed while using an already used "
                  "clientToken.");
            return;
        }
        mine[n_mine++] = i;
    }
    if (n_mine == 0) {
        int make = amount;
        if (e->stock_limited && make > e->stock)
            make = e->stock;
        if (e->no_stock || make < min_amount ||
            e->n_inst + (size_t)make > sizeof(e->inst) / sizeof(e->inst[0])) {
            error(res, 403, "OperationDenied.NoStock",
                  "The requested resource is sold out in the specified zone");
            return;
        }
        if (e->stock_limited)
            e->stock -= make;
        for (int k = 0; k < make; k++) {
            create_instance(e, f, token, k, amount);
            mine[n_mine++] = e->n_inst - 1;
        }
        if (e->lie_next_run == FAKE_ECS_DUP_HOST && n_mine > 1)
            memcpy(e->inst[mine[n_mine - 1]].host, e->inst[mine[0]].host,
                   sizeof(e->inst[0].host));
    }
    if (e->lose_next_run > 0) {
        e->lose_next_run--;
        error(res, 503, "ServiceUnavailable", "lost answer");
        return;
    }
    enum fake_ecs_lie lie = e->lie_next_run;
    e->lie_next_run = FAKE_ECS_TRUE;
    if (lie == FAKE_ECS_SHORT)
        n_mine--;
    char body[8192];
    size_t len = (size_t)snprintf(body, sizeof(body),
                                  "{\"RequestId\":\"R\",\"OrderId\":\"1\",\"TradePrice\":0.5,"
                                  "\"InstanceIdSets\":{\"InstanceIdSet\":[");
    for (size_t i = 0; i < n_mine; i++)
        len += (size_t)snprintf(body + len, sizeof(body) - len, "%s\"%s%s\"",
                                i ? "," : "", e->inst[mine[i]].id,
                                lie == FAKE_ECS_COMMA_ID && i == 0 ? ",i-1" : "");
    snprintf(body + len, sizeof(body) - len, "]}}");
    ebb__httpd_set_body(res, body, strlen(body));
}

static void delete_instance(struct fake_ecs *e, const struct form *f,
                            struct ebb__httpd_response *res)
{
    const char *id = form_get(f, "InstanceId");
    const char *region = form_get(f, "RegionId");
    for (size_t i = 0; id != NULL && i < e->n_inst; i++) {
        if (strcmp(e->inst[i].id, id) == 0 && strcmp(e->inst[i].region, region) == 0) {
            e->inst[i] = e->inst[--e->n_inst];
            ebb__httpd_set_bodyf(res, "{\"RequestId\":\"R\"}");
            return;
        }
    }
    error(res, 404, "InvalidInstanceId.NotFound", "The specified InstanceId does not exist.");
}

static long find_in(const struct fake_ecs *e, const char *region, const char *id)
{
    for (size_t i = 0; id != NULL && i < e->n_inst; i++)
        if (strcmp(e->inst[i].id, id) == 0 && strcmp(e->inst[i].region, region) == 0)
            return (long)i;
    return -1;
}

/* DeleteInstances: InstanceId.1..N, all of them in the region, or none. */
static void delete_instances(struct fake_ecs *e, const struct form *f,
                             struct ebb__httpd_response *res)
{
    const char *region = form_get(f, "RegionId");
    const char *force = form_get(f, "Force");
    int n = 0;
    for (;; n++) {
        char key[32];
        snprintf(key, sizeof(key), "InstanceId.%d", n + 1);
        const char *id = form_get(f, key);
        if (id == NULL)
            break;
        if (find_in(e, region, id) < 0) {
            error(res, 404, "InvalidInstanceId.NotFound",
                  "The specified InstanceId does not exist.");
            return;
        }
    }
    if (n == 0 || force == NULL || strcmp(force, "true") != 0) {
        error(res, 400, "MissingParameter", "InstanceId.1 and Force=true (running instances)");
        return;
    }
    for (int k = 1; k <= n; k++) {
        char key[32];
        snprintf(key, sizeof(key), "InstanceId.%d", k);
        long i = find_in(e, region, form_get(f, key));
        e->inst[i] = e->inst[--e->n_inst];
    }
    ebb__httpd_set_bodyf(res, "{\"RequestId\":\"R\"}");
}

static void describe_instances(struct fake_ecs *e, const struct form *f,
                               struct ebb__httpd_response *res)
{
    const char *region = form_get(f, "RegionId");
    const char *tag = form_get(f, "Tag.1.Key");
    const char *tag_value = form_get(f, "Tag.1.Value");
    const char *ids = form_get(f, "InstanceIds");
    const char *next = form_get(f, "NextToken");
    long skip = next ? strtol(next, NULL, 10) : 0;
    size_t page = e->list_page ? e->list_page : 100;
    char body[16384];
    size_t n = (size_t)snprintf(body, sizeof(body),
                                "{\"RequestId\":\"R\",\"Instances\":{\"Instance\":[");
    long match = 0;
    size_t sent = 0;
    int more = 0;
    for (size_t i = 0; i < e->n_inst; i++) {
        const struct fake_instance *x = &e->inst[i];
        char quoted[48];
        snprintf(quoted, sizeof(quoted), "\"%s\"", x->id);
        if (strcmp(x->region, region) != 0 ||
            (tag != NULL && strcmp(tag, "ebb-token") != 0 && strcmp(tag, "ebb-join") != 0) ||
            (tag != NULL && strcmp(tag, "ebb-token") == 0 && !x->ebb_tagged) ||
            (tag != NULL && strcmp(tag, "ebb-join") == 0 && x->join[0] == '\0') ||
            (tag_value != NULL && tag != NULL &&
             strcmp(tag_value, strcmp(tag, "ebb-join") == 0 ? x->join : x->token) != 0) ||
            (ids != NULL && strstr(ids, quoted) == NULL))
            continue;
        if (match++ < skip)
            continue;
        if (sent == page) {
            more = 1;
            break;
        }
        n += (size_t)snprintf(
            body + n, sizeof(body) - n,
            "%s{\"InstanceId\":\"%s\",\"RegionId\":\"%s\",\"ZoneId\":\"%s\","
            "\"InstanceType\":\"%s\",\"Status\":\"%s\",\"SpotStrategy\":\"%s\","
            "\"HostName\":\"%s\","
            "\"CreationTime\":\"2026-11-30T10:00Z\","
            "\"OperationLocks\":{\"LockReason\":[%s]},"
            "\"Tags\":{\"Tag\":[{\"TagKey\":\"ebb-job-id\",\"TagValue\":\"%s\"},"
            "{\"TagKey\":\"ebb-token\",\"TagValue\":\"%s\"}%s%s%s]}}",
            sent ? "," : "", x->id, x->region, x->zone, x->type, x->status,
            x->strategy, x->host, x->recycling ? "{\"LockReason\":\"Recycling\"}" : "",
            x->job_id, x->token, x->join[0] ? ",{\"TagKey\":\"ebb-join\",\"TagValue\":\"" : "",
            x->join, x->join[0] ? "\"}" : "");
        sent++;
    }
    if (more)
        snprintf(body + n, sizeof(body) - n, "]},\"NextToken\":\"%ld\"}",
                 skip + (long)sent);
    else
        snprintf(body + n, sizeof(body) - n, "]},\"NextToken\":\"\"}");
    ebb__httpd_set_body(res, body, strlen(body));
}

/* ---- the handler ---- */

static int check_request(struct fake_ecs *e, const struct ebb__httpd_request *req,
                         const struct form *f, struct ebb__httpd_response *res)
{
    const char *ctype = ebb__httpd_header(req, "Content-Type");
    if (strcmp(req->method, "POST") != 0 || strcmp(req->path, "/") != 0 ||
        req->query[0] != '\0' || ctype == NULL ||
        strcmp(ctype, "application/x-www-form-urlencoded") != 0) {
        error(res, 400, "InvalidRequest", "POST / with a form body, no query");
        return -1;
    }
    static const char *const common[] = {
        "Action", "Version", "Format", "AccessKeyId", "SignatureMethod",
        "SignatureVersion", "SignatureNonce", "Timestamp", "Signature", "RegionId",
    };
    for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++) {
        if (form_get(f, common[i]) == NULL) {
            error(res, 400, "MissingParameter", common[i]);
            return -1;
        }
    }
    if (strcmp(form_get(f, "Version"), "2014-05-26") != 0 ||
        strcmp(form_get(f, "Format"), "JSON") != 0 ||
        strcmp(form_get(f, "SignatureMethod"), "HMAC-SHA1") != 0 ||
        strcmp(form_get(f, "SignatureVersion"), "1.0") != 0) {
        error(res, 400, "InvalidParameter", "Version, Format or signature method");
        return -1;
    }
    ebb_time_ms ts;
    const char *t = form_get(f, "Timestamp");
    if (strlen(t) != 20 || ebb_parse_time(t, &ts) != 0) {
        error(res, 400, "InvalidTimeStamp.Format", "yyyy-MM-ddTHH:mm:ssZ");
        return -1;
    }
    if (strcmp(form_get(f, "AccessKeyId"), e->key_id) != 0) {
        error(res, 404, "InvalidAccessKeyId.NotFound", "Specified access key is not found.");
        return -1;
    }
    const char *keys[MAX_PARAMS], *values[MAX_PARAMS];
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->keys[i], "Signature") != 0) {
            keys[n] = f->keys[i];
            values[n++] = f->values[i];
        }
    }
    char sig[29];
    fake_ecs_v1_signature("POST", keys, values, n, e->secret, sig);
    if (strcmp(sig, form_get(f, "Signature")) != 0) {
        e->bad_signatures++;
        /* Real ECS echoes the string it signed, access key id included. */
        char msg[512];
        snprintf(msg, sizeof(msg),
                 "Specified signature is not matched with our calculation. "
                 "server string to sign is:POST&%%2F&AccessKeyId%%3D%s%%26Action...",
                 form_get(f, "AccessKeyId"));
        error(res, 400, "SignatureDoesNotMatch", msg);
        return -1;
    }
    const char *nonce = form_get(f, "SignatureNonce");
    for (size_t i = 0; i < e->n_nonces; i++) {
        if (strcmp(e->nonces[i], nonce) == 0) {
            error(res, 400, "SignatureNonceUsed", "nonce used");
            return -1;
        }
    }
    if (e->n_nonces < sizeof(e->nonces) / sizeof(e->nonces[0]))
        snprintf(e->nonces[e->n_nonces++], sizeof(e->nonces[0]), "%s", nonce);
    return 0;
}

void fake_ecs_handle(const struct ebb__httpd_request *req,
                     struct ebb__httpd_response *res, void *arg)
{
    struct fake_ecs *e = arg;
    e->requests++;
    res->delay_ms = e->delay_ms;
    ebb__httpd_add_header(res, "Content-Type", "application/json");
    struct form f;
    form_parse(&f, req->body);
    if (check_request(e, req, &f, res) != 0) {
        form_free(&f);
        return;
    }
    if (e->throttle_next > 0) {
        e->throttle_next--;
        e->throttled++;
        error(res, 400, "Throttling.User", "Request was denied due to user flow control.");
        form_free(&f);
        return;
    }
    const char *action = form_get(&f, "Action");
    struct fake_call *call = &e->calls[e->n_calls < 255 ? e->n_calls++ : 255];
    memset(call, 0, sizeof(*call));
    snprintf(call->action, sizeof(call->action), "%s", action);
    snprintf(call->region, sizeof(call->region), "%s", form_get(&f, "RegionId"));
    if (strcmp(action, "DescribeSpotPriceHistory") == 0)
        spot_history(e, &f, res, call);
    else if (strcmp(action, "RunInstances") == 0)
        run_instances(e, &f, res);
    else if (strcmp(action, "DeleteInstance") == 0)
        delete_instance(e, &f, res);
    else if (strcmp(action, "DeleteInstances") == 0)
        delete_instances(e, &f, res);
    else if (strcmp(action, "DescribeInstances") == 0)
        describe_instances(e, &f, res);
    else
        error(res, 400, "InvalidAction.NotFound", action);
    form_free(&f);
}

int fake_ecs_count(const struct fake_ecs *e, const char *action)
{
    int n = 0;
    for (size_t i = 0; i < e->n_calls; i++)
        n += strcmp(e->calls[i].action, action) == 0;
    return n;
}

const char *fake_ecs_run_param(const struct fake_ecs *e, const char *key)
{
    static char value[2048];
    size_t kl = strlen(key);
    for (const char *line = e->last_run; *line != '\0';) {
        const char *eol = strchr(line, '\n');
        if (strncmp(line, key, kl) == 0 && line[kl] == '=') {
            snprintf(value, sizeof(value), "%.*s", (int)(eol - line - (ptrdiff_t)kl - 1),
                     line + kl + 1);
            return value;
        }
        line = eol + 1;
    }
    return NULL;
}
