/* The fake EC2 endpoint: form parsing, the six actions ebb calls
 * (prices, instances, placement groups), and the faults a test asks for.
 * See fake_ec2.h. */
#include "fake_ec2.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>
#include <ebb/urlenc.h>

#include "base/str.h"
#include "fake_sigv4.h"
#include "io/httpd.h"

#define N_ZONES 3
#define MAX_PARAMS 128
#define N_LAST 8 /* actions whose last call is kept */

struct param {
    char *name, *value;
};

struct form {
    struct param p[MAX_PARAMS];
    size_t n;
};

struct instance {
    char id[24];
    char region[32], zone[40], type[32];
    char client_token[80];
    uint64_t params;    /* its RunInstances' parameters, hashed */
    char state[24], reason[64];
    int spot;
    char tag_key[4][64], tag_value[4][128];
    int n_tags;
    int launch_index;   /* its place in its RunInstances' reservation */
    char group[80];     /* its placement group; "" for none */
};

struct pgroup {
    char region[32], name[80], strategy[16];
};

struct fault {
    char action[48]; /* "" for any */
    int count;
    int status;      /* 0: hang */
    char code[64];
    int64_t delay_ms;
};

struct fake_ec2 {
    struct ebb__httpd *srv;
    char *akid, *secret, *token;
    size_t per_region;
    ebb_time_ms first;
    ebb_dur_ms step;
    struct fault faults[8];
    size_t n_faults;
    int malform_nth; /* 0: none */
    struct instance *inst;
    size_t n_inst, cap_inst;
    struct pgroup groups[64];
    size_t n_groups;
    long capacity;   /* instances RunInstances may still start; -1: any */
    enum fake_ec2_answer answer; /* how the next RunInstances answer lies */
    struct fake_ec2_stats stats;
    void (*closed)(void *arg);
    void *closed_arg;
    /* The last call of each action, for fake_ec2_last_param(). */
    struct {
        char action[48];
        struct form form;
    } last[N_LAST];
};

/* ---- forms ---- */

static void form_free(struct form *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->p[i].name);
        free(f->p[i].value);
    }
    f->n = 0;
}

static int form_parse(struct form *f, const char *body, size_t len)
{
    f->n = 0;
    const char *end = body + len;
    for (const char *p = body; p < end;) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp != NULL ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        if (eq == NULL || f->n == MAX_PARAMS)
            return -1;
        f->p[f->n].name = ebb_pct_decode(p, (size_t)(eq - p), 1);
        f->p[f->n].value = ebb_pct_decode(eq + 1, (size_t)(stop - eq - 1), 1);
        f->n++;
        if (f->p[f->n - 1].name == NULL || f->p[f->n - 1].value == NULL)
            return -1;
        p = stop + 1;
    }
    return 0;
}

static const char *form_get(const struct form *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->p[i].name, name) == 0)
            return f->p[i].value;
    return NULL;
}

/* The parameter PREFIX<i>SUFFIX ("InstanceType.", 2, "": InstanceType.2). */
static const char *form_geti(const struct form *f, const char *prefix, size_t i,
                             const char *suffix)
{
    char name[128];
    snprintf(name, sizeof(name), "%s%zu%s", prefix, i, suffix);
    return form_get(f, name);
}

/* ---- answers ---- */

static void error_xml(struct ebb__httpd_response *res, int status,
                      const char *code, const char *message)
{
    res->status = status;
    ebb__httpd_add_header(res, "Content-Type", "text/xml;charset=UTF-8");
    ebb__httpd_set_bodyf(res,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error>"
        "<Code>%s</Code><Message>%s</Message></Error></Errors>"
        "<RequestID>5e2b1b7c-0000-4000-8000-000000000000</RequestID></Response>",
        code, message);
}

static void body_take(struct ebb__httpd_response *res, struct ebb_buf *b)
{
    ebb__httpd_add_header(res, "Content-Type", "text/xml;charset=UTF-8");
    ebb__httpd_set_body(res, b->data, b->len);
    ebb_buf_free(b);
}

/* ---- DescribeSpotPriceHistory ---- */

static void format_price_time(ebb_time_ms t, char *out, size_t size)
{
    char iso[EBB_TIME_BUFSZ];
    ebb_format_time(t, iso, sizeof(iso));
    /* EC2 writes milliseconds always: 2013-03-20T13:35:55.000Z */
    snprintf(out, size, "%.19s.%03dZ", iso, (int)(t % 1000));
}

static void describe_prices(struct fake_ec2 *f, const struct form *q,
                            const char *region, struct ebb__httpd_response *res)
{
    const char *types[16];
    size_t n_types = 0;
    while (n_types < 16 && form_geti(q, "InstanceType.", n_types + 1, "") != NULL) {
        types[n_types] = form_geti(q, "InstanceType.", n_types + 1, "");
        n_types++;
    }
    const char *product = form_get(q, "ProductDescription.1");
    const char *start = form_get(q, "StartTime");
    const char *max_s = form_get(q, "MaxResults");
    const char *token = form_get(q, "NextToken");
    ebb_time_ms from = 0;
    long max = max_s != NULL ? strtol(max_s, NULL, 10) : 100;
    if (n_types == 0 || product == NULL || strcmp(product, "Linux/UNIX") != 0 ||
        (start != NULL && ebb_parse_time(start, &from) != 0) || max < 5 ||
        max > 1000) {
        error_xml(res, 400, "InvalidParameterValue", "bad DescribeSpotPriceHistory parameters");
        return;
    }
    size_t per_time = N_ZONES * n_types;
    size_t k = 0;
    if (from > f->first)
        k = (size_t)((from - f->first + f->step - 1) / f->step) * per_time;
    if (token != NULL) {
        unsigned long long off;
        char check[16];
        if (sscanf(token, "page.%llu.%15s", &off, check) != 2 ||
            strcmp(check, region) != 0) {
            error_xml(res, 400, "InvalidNextToken", "The specified token is invalid");
            return;
        }
        k = (size_t)off;
    }
    f->stats.price_pages++;
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<DescribeSpotPriceHistoryResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">\n"
                      "    <requestId>a71a795c-276d-4c9b-8212-b9302ccce158</requestId>\n"
                      "    <spotPriceHistorySet>\n");
    size_t end = k + (size_t)max < f->per_region ? k + (size_t)max : f->per_region;
    int malform = f->malform_nth > 0 && --f->malform_nth == 0;
    /* Written with plain appends, not printf: bench-ingest serves a
     * million of these and the fake must not be what it measures. */
    char when[48] = "";
    size_t when_index = SIZE_MAX;
    for (size_t i = k; i < end; i++) {
        size_t z = i % N_ZONES, t = (i / N_ZONES) % n_types;
        if (i / per_time != when_index) {
            when_index = i / per_time;
            format_price_time(f->first + (ebb_time_ms)when_index * f->step, when,
                              sizeof(when));
        }
        unsigned long micros = 100000 + i % 997 * 13;
        char price[16] = {(char)('0' + i % 3), '.'};
        for (int d = 7; d >= 2; d--, micros /= 10)
            price[d] = (char)('0' + micros % 10);
        char zone[40];
        size_t rlen = strlen(region);
        memcpy(zone, region, rlen);
        zone[rlen] = (char)('a' + z);
        ebb_buf_puts(&b, "        <item>\n            <instanceType>");
        ebb_buf_puts(&b, types[t]);
        ebb_buf_puts(&b, "</instanceType>\n            <productDescription>Linux/UNIX"
                          "</productDescription>\n            <spotPrice>");
        ebb_buf_append(&b, price, 8);
        ebb_buf_puts(&b, "</spotPrice>\n            <timestamp>");
        ebb_buf_puts(&b, when);
        ebb_buf_puts(&b, "</timestamp>\n            <availabilityZone>");
        ebb_buf_append(&b, zone, rlen + 1);
        ebb_buf_puts(&b, "</availabilityZone>\n        </item>\n");
        if (malform && i == k + (end - k) / 2) {
            /* Cut inside the next item: the page ends mid-element. */
            ebb_buf_puts(&b, "        <item>\n            <instanceType>p3.2");
            body_take(res, &b);
            return;
        }
    }
    ebb_buf_puts(&b, "    </spotPriceHistorySet>\n");
    if (end < f->per_region)
        ebb_buf_printf(&b, "    <nextToken>page.%zu.%s</nextToken>\n", end, region);
    else
        ebb_buf_puts(&b, "    <nextToken/>\n");
    ebb_buf_puts(&b, "</DescribeSpotPriceHistoryResponse>\n");
    body_take(res, &b);
}

/* ---- instances ---- */

/* `id` and `launch_index` as the answer shows them (a lying answer
 * changes them). */
static void instance_xml_as(struct ebb_buf *b, const struct instance *in,
                            const char *id, int launch_index)
{
    static const struct {
        const char *name;
        int code;
    } codes[] = {{"pending", 0}, {"running", 16}, {"shutting-down", 32},
                 {"terminated", 48}};
    int code = 0;
    for (size_t i = 0; i < 4; i++)
        if (strcmp(codes[i].name, in->state) == 0)
            code = codes[i].code;
    ebb_buf_printf(b,
        "<item><instanceId>%s</instanceId><imageId>ami-0abc</imageId>"
        "<instanceState><code>%d</code><name>%s</name></instanceState>"
        "<privateDnsName/><reason/><amiLaunchIndex>%d</amiLaunchIndex>"
        "<instanceType>%s</instanceType>"
        "<launchTime>2026-11-30T12:00:00.000Z</launchTime>"
        "<placement><availabilityZone>%s</availabilityZone><groupName>%s</groupName>"
        "<tenancy>default</tenancy></placement>"
        "<groupSet><item><groupId>sg-1</groupId><groupName>ebb</groupName></item></groupSet>",
        id, code, in->state, launch_index, in->type, in->zone, in->group);
    if (in->spot)
        ebb_buf_puts(b, "<instanceLifecycle>spot</instanceLifecycle>");
    if (in->reason[0] != '\0')
        ebb_buf_printf(b, "<stateReason><code>%s</code><message>%s: gone</message>"
                           "</stateReason>", in->reason, in->reason);
    ebb_buf_printf(b, "<clientToken>%s</clientToken><tagSet>", in->client_token);
    for (int t = 0; t < in->n_tags; t++)
        ebb_buf_printf(b, "<item><key>%s</key><value>%s</value></item>",
                        in->tag_key[t], in->tag_value[t]);
    ebb_buf_puts(b, "</tagSet></item>");
}

static void instance_xml(struct ebb_buf *b, const struct instance *in)
{
    instance_xml_as(b, in, in->id, in->launch_index);
}

static struct instance *find_instance(struct fake_ec2 *f, const char *region,
                                      const char *id)
{
    for (size_t i = 0; i < f->n_inst; i++)
        if (strcmp(f->inst[i].id, id) == 0 &&
            (region == NULL || strcmp(f->inst[i].region, region) == 0))
            return &f->inst[i];
    return NULL;
}

static struct pgroup *find_group(struct fake_ec2 *f, const char *region,
                                 const char *name)
{
    for (size_t i = 0; i < f->n_groups; i++)
        if (strcmp(f->groups[i].region, region) == 0 &&
            strcmp(f->groups[i].name, name) == 0)
            return &f->groups[i];
    return NULL;
}

/* A hash of a call's parameters, in any order (FNV-1a of each
 * "name=value", summed): a ClientToken's second call must carry the
 * same. */
static uint64_t params_hash(const struct form *q)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < q->n; i++) {
        uint64_t h = UINT64_C(14695981039346656037);
        for (const char *s = q->p[i].name; *s != '\0'; s++)
            h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
        h = (h ^ '=') * UINT64_C(1099511628211);
        for (const char *s = q->p[i].value; *s != '\0'; s++)
            h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
        sum += h;
    }
    return sum;
}

/* MinCount and MaxCount: a positive integer, else 0. */
static long count_param(const char *s)
{
    char *end;
    long v = s != NULL ? strtol(s, &end, 10) : 0;
    return s != NULL && *s != '\0' && *end == '\0' && v > 0 && v <= 1000 ? v : 0;
}

static struct instance *new_instance(struct fake_ec2 *f, const struct form *q,
                                     const char *region, int launch_index)
{
    if (f->n_inst == f->cap_inst) {
        f->cap_inst = f->cap_inst ? f->cap_inst * 2 : 16;
        f->inst = realloc(f->inst, f->cap_inst * sizeof(*f->inst));
    }
    struct instance *in = &f->inst[f->n_inst++];
    memset(in, 0, sizeof(*in));
    f->stats.instances++;
    snprintf(in->id, sizeof(in->id), "i-%017llx",
             (unsigned long long)(0xebb000 + f->stats.instances));
    snprintf(in->region, sizeof(in->region), "%s", region);
    const char *zone = form_get(q, "Placement.AvailabilityZone");
    if (zone != NULL)
        snprintf(in->zone, sizeof(in->zone), "%s", zone);
    else
        snprintf(in->zone, sizeof(in->zone), "%sa", region);
    const char *group = form_get(q, "Placement.GroupName");
    snprintf(in->group, sizeof(in->group), "%s", group ? group : "");
    snprintf(in->type, sizeof(in->type), "%s", form_get(q, "InstanceType"));
    const char *token = form_get(q, "ClientToken");
    snprintf(in->client_token, sizeof(in->client_token), "%s", token ? token : "");
    in->params = params_hash(q);
    snprintf(in->state, sizeof(in->state), "pending");
    in->launch_index = launch_index;
    const char *market = form_get(q, "InstanceMarketOptions.MarketType");
    in->spot = market != NULL && strcmp(market, "spot") == 0;
    for (size_t t = 1; t <= 4; t++) {
        const char *k = form_geti(q, "TagSpecification.1.Tag.", t, ".Key");
        const char *v = form_geti(q, "TagSpecification.1.Tag.", t, ".Value");
        if (k == NULL || v == NULL)
            break;
        snprintf(in->tag_key[in->n_tags], 64, "%s", k);
        snprintf(in->tag_value[in->n_tags], 128, "%s", v);
        in->n_tags++;
    }
    return in;
}

static void run_instances(struct fake_ec2 *f, const struct form *q,
                          const char *region, struct ebb__httpd_response *res)
{
    f->stats.run_instances++;
    const char *ami = form_get(q, "ImageId"), *type = form_get(q, "InstanceType");
    const char *token = form_get(q, "ClientToken");
    const char *group = form_get(q, "Placement.GroupName");
    long min = count_param(form_get(q, "MinCount"));
    long max = count_param(form_get(q, "MaxCount"));
    if (ami == NULL || type == NULL || min == 0 || max == 0) {
        error_xml(res, 400, "MissingParameter", "ImageId, InstanceType, MinCount and MaxCount are required");
        return;
    }
    if (min > max) {
        error_xml(res, 400, "InvalidParameterValue",
                  "MinCount must be less than or equal to MaxCount");
        return;
    }
    const char *user_data = form_get(q, "UserData");
    if (user_data != NULL && strlen(user_data) / 4 * 3 > 16384 + 2) {
        error_xml(res, 400, "InvalidParameterValue", "User data is limited to 16384 bytes");
        return;
    }
    if (token != NULL && (strlen(token) > 64 || token[strspn(token,
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
            "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")] != '\0')) {
        error_xml(res, 400, "InvalidParameterValue",
                  "ClientToken is at most 64 ASCII characters");
        return;
    }
    if (group != NULL && find_group(f, region, group) == NULL) {
        error_xml(res, 400, "InvalidPlacementGroup.Unknown",
                  "The specified placement group is unknown");
        return;
    }
    /* A cluster group lies in one Availability Zone: that of the
     * instances in it that are not terminated. */
    const char *zone = form_get(q, "Placement.AvailabilityZone");
    for (size_t i = 0; group != NULL && i < f->n_inst; i++) {
        const struct instance *in = &f->inst[i];
        if (strcmp(in->region, region) == 0 && strcmp(in->group, group) == 0 &&
            strcmp(in->state, "terminated") != 0 &&
            strcmp(in->zone, zone != NULL ? zone : "") != 0 &&
            (token == NULL || strcmp(in->client_token, token) != 0)) {
            error_xml(res, 400, "InvalidParameterCombination",
                      "The placement group's instances are in another Availability Zone");
            return;
        }
    }
    /* A ClientToken seen before: the instances that call started, if it
     * asked the same. */
    size_t first = f->n_inst, n = 0;
    for (size_t i = 0; token != NULL && i < f->n_inst; i++) {
        if (strcmp(f->inst[i].client_token, token) == 0) {
            if (f->inst[i].params != params_hash(q)) {
                error_xml(res, 400, "IdempotentParameterMismatch",
                          "The client token was used with other parameters");
                return;
            }
            if (n == 0)
                first = i;
            n++;
        }
    }
    if (n == 0) {
        n = (size_t)max;
        if (f->capacity >= 0 && (long)n > f->capacity)
            n = (size_t)f->capacity;
        if ((long)n < min) {
            error_xml(res, 500, "InsufficientInstanceCapacity",
                      "We currently do not have sufficient capacity in the "
                      "Availability Zone you requested");
            return;
        }
        if (f->capacity >= 0)
            f->capacity -= (long)n;
        for (size_t i = 0; i < n; i++)
            new_instance(f, q, region, (int)i);
    }
    enum fake_ec2_answer lie = f->answer;
    f->answer = FAKE_EC2_ANSWER_TRUE;
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<RunInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
                      "<requestId>r1</requestId><reservationId>r-1</reservationId>"
                      "<ownerId>123456789012</ownerId><groupSet/><instancesSet>");
    size_t shown = 0;
    for (size_t i = first; i < f->n_inst && shown < n; i++) {
        const struct instance *in = &f->inst[i];
        if (token != NULL && strcmp(in->client_token, token) != 0)
            continue;
        shown++;
        char id[40];
        snprintf(id, sizeof(id), "%s%s", in->id,
                 lie == FAKE_EC2_ANSWER_COMMA_ID && shown == 1 ? ",i-1" : "");
        if (lie == FAKE_EC2_ANSWER_SHORT && shown == n)
            break;
        instance_xml_as(&b, in, id,
                        lie == FAKE_EC2_ANSWER_DUP_INDEX && shown == n ? 0
                                                                       : in->launch_index);
    }
    ebb_buf_puts(&b, "</instancesSet></RunInstancesResponse>");
    body_take(res, &b);
}

static void terminate_instances(struct fake_ec2 *f, const struct form *q,
                                const char *region, struct ebb__httpd_response *res)
{
    size_t n = 0;
    for (; form_geti(q, "InstanceId.", n + 1, "") != NULL; n++) {
        if (find_instance(f, region, form_geti(q, "InstanceId.", n + 1, "")) == NULL) {
            error_xml(res, 400, "InvalidInstanceID.NotFound",
                      "The instance ID does not exist");
            return;
        }
    }
    if (n == 0) {
        error_xml(res, 400, "MissingParameter", "InstanceId.1 is required");
        return;
    }
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<TerminateInstancesResponse "
                      "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>t1"
                      "</requestId><instancesSet>");
    for (size_t i = 1; i <= n; i++) {
        struct instance *in = find_instance(f, region, form_geti(q, "InstanceId.", i, ""));
        char previous[24];
        snprintf(previous, sizeof(previous), "%s", in->state);
        if (strcmp(in->state, "terminated") != 0)
            snprintf(in->state, sizeof(in->state), "shutting-down");
        f->stats.terminated++;
        ebb_buf_printf(&b, "<item><instanceId>%s</instanceId><currentState><code>32</code>"
                            "<name>%s</name></currentState><previousState><name>%s</name>"
                            "</previousState></item>", in->id, in->state, previous);
    }
    ebb_buf_puts(&b, "</instancesSet></TerminateInstancesResponse>");
    body_take(res, &b);
}

static void create_placement_group(struct fake_ec2 *f, const struct form *q,
                                   const char *region, struct ebb__httpd_response *res)
{
    const char *name = form_get(q, "GroupName"), *strategy = form_get(q, "Strategy");
    const char *resource = form_get(q, "TagSpecification.1.ResourceType");
    if (name == NULL || name[0] == '\0' || strlen(name) > 255) {
        error_xml(res, 400, "MissingParameter", "GroupName is required");
        return;
    }
    if (strategy == NULL || (strcmp(strategy, "cluster") != 0 &&
                             strcmp(strategy, "spread") != 0 &&
                             strcmp(strategy, "partition") != 0) ||
        (resource != NULL && strcmp(resource, "placement-group") != 0)) {
        error_xml(res, 400, "InvalidParameterValue", "bad Strategy or TagSpecification");
        return;
    }
    if (find_group(f, region, name) != NULL) {
        error_xml(res, 400, "InvalidPlacementGroup.Duplicate",
                  "The placement group already exists");
        return;
    }
    if (f->n_groups == sizeof(f->groups) / sizeof(f->groups[0])) {
        error_xml(res, 400, "PlacementGroupLimitExceeded", "too many placement groups");
        return;
    }
    struct pgroup *g = &f->groups[f->n_groups++];
    snprintf(g->region, sizeof(g->region), "%s", region);
    snprintf(g->name, sizeof(g->name), "%s", name);
    snprintf(g->strategy, sizeof(g->strategy), "%s", strategy);
    f->stats.placement_groups++;
    ebb__httpd_add_header(res, "Content-Type", "text/xml;charset=UTF-8");
    ebb__httpd_set_bodyf(res,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CreatePlacementGroupResponse "
        "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>p1</requestId>"
        "<placementGroup><groupName>%s</groupName><state>available</state>"
        "<strategy>%s</strategy><groupId>pg-%zu</groupId></placementGroup>"
        "</CreatePlacementGroupResponse>", name, strategy, f->n_groups);
}

static void delete_placement_group(struct fake_ec2 *f, const struct form *q,
                                   const char *region, struct ebb__httpd_response *res)
{
    const char *name = form_get(q, "GroupName");
    struct pgroup *g = name != NULL ? find_group(f, region, name) : NULL;
    if (g == NULL) {
        error_xml(res, 400, "InvalidPlacementGroup.Unknown",
                  "The specified placement group is unknown");
        return;
    }
    for (size_t i = 0; i < f->n_inst; i++) {
        if (strcmp(f->inst[i].region, region) == 0 && strcmp(f->inst[i].group, name) == 0 &&
            strcmp(f->inst[i].state, "terminated") != 0) {
            error_xml(res, 400, "InvalidPlacementGroup.InUse",
                      "The placement group is in use and may not be deleted");
            return;
        }
    }
    *g = f->groups[--f->n_groups];
    ebb__httpd_add_header(res, "Content-Type", "text/xml;charset=UTF-8");
    ebb__httpd_set_bodyf(res,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeletePlacementGroupResponse "
        "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>p2</requestId>"
        "<return>true</return></DeletePlacementGroupResponse>");
}

/* Whether `in` has tag `key` (with `value`, unless NULL). */
static int has_tag(const struct instance *in, const char *key, const char *value)
{
    for (int t = 0; t < in->n_tags; t++)
        if (strcmp(in->tag_key[t], key) == 0 &&
            (value == NULL || strcmp(in->tag_value[t], value) == 0))
            return 1;
    return 0;
}

static void describe_instances(struct fake_ec2 *f, const struct form *q,
                               const char *region, struct ebb__httpd_response *res)
{
    const char *fname = form_get(q, "Filter.1.Name");
    const char *fvalue = form_get(q, "Filter.1.Value.1");
    const char *max_s = form_get(q, "MaxResults");
    const char *token = form_get(q, "NextToken");
    long max = max_s != NULL ? strtol(max_s, NULL, 10) : 1000;
    /* tag-key=KEY, tag:KEY=VALUE, or client-token=TOKEN. */
    const char *want_value = NULL, *want_client = NULL;
    if (fname != NULL && strncmp(fname, "tag:", 4) == 0) {
        want_value = fvalue;
        fvalue = fname + 4;
    } else if (fname != NULL && strcmp(fname, "client-token") == 0) {
        want_client = fvalue != NULL ? fvalue : "";
        fvalue = NULL;
    } else if (fname != NULL && strcmp(fname, "tag-key") != 0) {
        fname = NULL;
        max = 0;
    }
    if (max < 5 || max > 1000) {
        error_xml(res, 400, "InvalidParameterValue", "unsupported filter or MaxResults");
        return;
    }
    size_t skip = token != NULL ? strtoul(token + strcspn(token, "0123456789"), NULL, 10) : 0;
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
                      "<requestId>d1</requestId><reservationSet>");
    size_t seen = 0, shown = 0, i = 0;
    for (; i < f->n_inst && shown < (size_t)max; i++) {
        const struct instance *in = &f->inst[i];
        if (strcmp(in->region, region) != 0 || (fvalue && !has_tag(in, fvalue, want_value)) ||
            (want_client != NULL && strcmp(in->client_token, want_client) != 0))
            continue;
        if (seen++ < skip)
            continue;
        ebb_buf_printf(&b, "<item><reservationId>r-%zu</reservationId>"
                            "<ownerId>123456789012</ownerId><groupSet/><instancesSet>", i);
        instance_xml(&b, in);
        ebb_buf_puts(&b, "</instancesSet></item>");
        shown++;
    }
    ebb_buf_puts(&b, "</reservationSet>");
    int more = 0;
    for (; i < f->n_inst && !more; i++)
        more = strcmp(f->inst[i].region, region) == 0 &&
               (fvalue == NULL || has_tag(&f->inst[i], fvalue, want_value)) &&
               (want_client == NULL || strcmp(f->inst[i].client_token, want_client) == 0);
    if (more)
        ebb_buf_printf(&b, "<nextToken>inst%zu</nextToken>", skip + shown);
    ebb_buf_puts(&b, "</DescribeInstancesResponse>");
    body_take(res, &b);
}

/* ---- dispatch ---- */

static struct fault *take_fault(struct fake_ec2 *f, const char *action)
{
    for (size_t i = 0; i < f->n_faults; i++) {
        struct fault *x = &f->faults[i];
        if (x->count > 0 && (x->action[0] == '\0' || strcmp(x->action, action) == 0)) {
            x->count--;
            f->stats.faults++;
            return x;
        }
    }
    return NULL;
}

static void remember(struct fake_ec2 *f, const char *action, struct form *q)
{
    size_t slot = 0;
    for (; slot < N_LAST; slot++)
        if (f->last[slot].action[0] == '\0' || strcmp(f->last[slot].action, action) == 0)
            break;
    if (slot == N_LAST)
        slot = N_LAST - 1;
    form_free(&f->last[slot].form);
    snprintf(f->last[slot].action, sizeof(f->last[slot].action), "%s", action);
    f->last[slot].form = *q;
    q->n = 0;
}

static void handle(const struct ebb__httpd_request *req,
                   struct ebb__httpd_response *res, void *arg)
{
    struct fake_ec2 *f = arg;
    char region[32], why[128];
    if (fake_sigv4_verify(req, f->akid, f->secret, f->token, region,
                          sizeof(region), why, sizeof(why)) != 0) {
        f->stats.auth_failures++;
        error_xml(res, 403, "AuthFailure",
                  "AWS was not able to validate the provided access credentials");
        return;
    }
    struct form q = {0};
    const char *ctype = ebb__httpd_header(req, "Content-Type");
    if (strcmp(req->method, "POST") != 0 || ctype == NULL ||
        strncmp(ctype, "application/x-www-form-urlencoded", 33) != 0 ||
        form_parse(&q, req->body, req->body_len) != 0) {
        form_free(&q);
        error_xml(res, 400, "MalformedQueryString", "not a Query API request");
        return;
    }
    const char *action = form_get(&q, "Action");
    const char *version = form_get(&q, "Version");
    if (action == NULL || version == NULL || strcmp(version, "2016-11-15") != 0) {
        error_xml(res, 400, "InvalidAction", "no Action or an unknown Version");
        form_free(&q);
        return;
    }
    f->stats.calls++;
    struct fault *fault = take_fault(f, action);
    if (fault != NULL && fault->status != 0) {
        error_xml(res, fault->status, fault->code, "injected by the test");
        form_free(&q);
        return;
    }
    if (strcmp(action, "DescribeSpotPriceHistory") == 0)
        describe_prices(f, &q, region, res);
    else if (strcmp(action, "RunInstances") == 0)
        run_instances(f, &q, region, res);
    else if (strcmp(action, "TerminateInstances") == 0)
        terminate_instances(f, &q, region, res);
    else if (strcmp(action, "DescribeInstances") == 0)
        describe_instances(f, &q, region, res);
    else if (strcmp(action, "CreatePlacementGroup") == 0)
        create_placement_group(f, &q, region, res);
    else if (strcmp(action, "DeletePlacementGroup") == 0)
        delete_placement_group(f, &q, region, res);
    else
        error_xml(res, 400, "InvalidAction", "unknown action");
    if (fault != NULL)
        res->delay_ms = fault->delay_ms;
    remember(f, action, &q);
}

/* ---- the API ---- */

int fake_ec2_start(struct fake_ec2 **out, uv_loop_t *loop, const char *akid,
                   const char *secret, const char *session_token)
{
    struct fake_ec2 *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return EBB_ENOMEM;
    f->akid = strdup(akid);
    f->secret = strdup(secret);
    f->token = session_token ? strdup(session_token) : NULL;
    f->step = EBB_MS_PER_MINUTE;
    f->capacity = -1;
    int rc = ebb__httpd_start(&f->srv, loop, handle, f);
    if (rc != 0) {
        free(f->akid);
        free(f->secret);
        free(f->token);
        free(f);
        return rc;
    }
    *out = f;
    return 0;
}

static void on_closed(void *arg)
{
    struct fake_ec2 *f = arg;
    void (*closed)(void *) = f->closed;
    void *closed_arg = f->closed_arg;
    for (size_t i = 0; i < N_LAST; i++)
        form_free(&f->last[i].form);
    free(f->inst);
    free(f->akid);
    free(f->secret);
    free(f->token);
    free(f);
    if (closed != NULL)
        closed(closed_arg);
}

void fake_ec2_close(struct fake_ec2 *f, void (*closed)(void *arg), void *arg)
{
    f->closed = closed;
    f->closed_arg = arg;
    ebb__httpd_close(f->srv, on_closed, f);
}

const char *fake_ec2_url(const struct fake_ec2 *f)
{
    return ebb__httpd_url(f->srv);
}

void fake_ec2_set_prices(struct fake_ec2 *f, size_t per_region, ebb_time_ms first,
                         ebb_dur_ms step)
{
    f->per_region = per_region;
    f->first = first;
    f->step = step;
}

static void add_fault(struct fake_ec2 *f, const char *action, int count,
                      int status, const char *code, int64_t delay_ms)
{
    if (f->n_faults == sizeof(f->faults) / sizeof(f->faults[0]))
        return;
    struct fault *x = &f->faults[f->n_faults++];
    snprintf(x->action, sizeof(x->action), "%s", action ? action : "");
    x->count = count;
    x->status = status;
    snprintf(x->code, sizeof(x->code), "%s", code ? code : "");
    x->delay_ms = delay_ms;
}

void fake_ec2_fail(struct fake_ec2 *f, const char *action, int count, int status,
                   const char *code)
{
    add_fault(f, action, count, status, code, 0);
}

void fake_ec2_hang(struct fake_ec2 *f, const char *action, int count,
                   int64_t delay_ms)
{
    add_fault(f, action, count, 0, NULL, delay_ms);
}

void fake_ec2_malform_page(struct fake_ec2 *f, int nth)
{
    f->malform_nth = nth;
}

int fake_ec2_reclaim(struct fake_ec2 *f, const char *id)
{
    struct instance *in = find_instance(f, NULL, id);
    if (in == NULL)
        return EBB_ENOTFOUND;
    snprintf(in->state, sizeof(in->state), "shutting-down");
    snprintf(in->reason, sizeof(in->reason), "Server.SpotInstanceTermination");
    return 0;
}

void fake_ec2_stats(const struct fake_ec2 *f, struct fake_ec2_stats *out)
{
    *out = f->stats;
}

const char *fake_ec2_last_param(const struct fake_ec2 *f, const char *action,
                                const char *name)
{
    for (size_t i = 0; i < N_LAST; i++)
        if (strcmp(f->last[i].action, action) == 0)
            return form_get(&f->last[i].form, name);
    return NULL;
}

const char *fake_ec2_instance_state(const struct fake_ec2 *f, const char *id)
{
    for (size_t i = 0; i < f->n_inst; i++)
        if (strcmp(f->inst[i].id, id) == 0)
            return f->inst[i].state;
    return NULL;
}

void fake_ec2_set_capacity(struct fake_ec2 *f, long instances)
{
    f->capacity = instances;
}

void fake_ec2_lie(struct fake_ec2 *f, enum fake_ec2_answer answer)
{
    f->answer = answer;
}

void fake_ec2_settle(struct fake_ec2 *f)
{
    for (size_t i = 0; i < f->n_inst; i++)
        if (strcmp(f->inst[i].state, "shutting-down") == 0)
            snprintf(f->inst[i].state, sizeof(f->inst[i].state), "terminated");
}

int fake_ec2_group_exists(const struct fake_ec2 *f, const char *region,
                          const char *name)
{
    return find_group((struct fake_ec2 *)f, region, name) != NULL;
}

int fake_ec2_launch_index(const struct fake_ec2 *f, const char *id)
{
    for (size_t i = 0; i < f->n_inst; i++)
        if (strcmp(f->inst[i].id, id) == 0)
            return f->inst[i].launch_index;
    return -1;
}

int fake_ec2_forget(struct fake_ec2 *f, const char *id)
{
    struct instance *in = find_instance(f, NULL, id);
    if (in == NULL)
        return EBB_ENOTFOUND;
    *in = f->inst[--f->n_inst];
    return 0;
}

int fake_ec2_set_id(struct fake_ec2 *f, const char *id, const char *new_id)
{
    struct instance *in = find_instance(f, NULL, id);
    if (in == NULL)
        return EBB_ENOTFOUND;
    snprintf(in->id, sizeof(in->id), "%s", new_id);
    return 0;
}
