/* EC2 XML answers read as streams: each parser is a handful of states over
 * the element path (see ebb/xml.h). */
#include "aws_ec2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/buf.h>
#include <ebb/units.h>

#include <ebb/xml.h>

static void copy_text(char *dst, size_t size, const char *text, size_t len)
{
    if (len >= size)
        len = size - 1;
    memcpy(dst, text, len);
    dst[len] = '\0';
}

int aws_parse_price(const char *s, ebb_micros *out)
{
    ebb_micros units = 0, frac = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return EBB_EINVAL;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (units > (INT64_MAX / EBB_MICROS_PER_UNIT) / 10)
            return EBB_EINVAL;
        units = units * 10 + (*p - '0');
    }
    int digits = 0, round_up = 0;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
            if (digits < 6)
                frac = frac * 10 + (*p - '0');
            else if (digits == 6)
                round_up = *p >= '5';
        }
        if (digits == 0)
            return EBB_EINVAL;
    }
    if (*p != '\0')
        return EBB_EINVAL;
    for (int i = digits; i < 6; i++)
        frac *= 10;
    /* units alone may be as large as 9.2e12: check before scaling. */
    if (units > EBB_MONEY_MAX / EBB_MICROS_PER_UNIT ||
        units * EBB_MICROS_PER_UNIT + frac + round_up > EBB_MONEY_MAX)
        return EBB_EINVAL;
    *out = units * EBB_MICROS_PER_UNIT + frac + round_up;
    return 0;
}

/* ---- interning ---- */

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int intern_grow(struct aws_price_set *s)
{
    size_t cap = s->cap_strings ? s->cap_strings * 2 : 64;
    char **t = calloc(cap, sizeof(*t));
    if (t == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < s->cap_strings; i++) {
        if (s->strings[i] == NULL)
            continue;
        size_t j = fnv(s->strings[i]) & (cap - 1);
        while (t[j] != NULL)
            j = (j + 1) & (cap - 1);
        t[j] = s->strings[i];
    }
    free(s->strings);
    s->strings = t;
    s->cap_strings = cap;
    return 0;
}

static const char *intern(struct aws_price_set *s, const char *str)
{
    if ((s->n_strings + 1) * 2 > s->cap_strings && intern_grow(s) != 0)
        return NULL;
    size_t j = fnv(str) & (s->cap_strings - 1);
    while (s->strings[j] != NULL) {
        if (strcmp(s->strings[j], str) == 0)
            return s->strings[j];
        j = (j + 1) & (s->cap_strings - 1);
    }
    s->strings[j] = strdup(str);
    if (s->strings[j] != NULL)
        s->n_strings++;
    return s->strings[j];
}

void aws_price_set_free(struct aws_price_set *s)
{
    for (size_t i = 0; i < s->cap_strings; i++)
        free(s->strings[i]);
    free(s->strings);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* ---- price history pages ---- */

enum { F_TYPE, F_PRODUCT, F_PRICE, F_TIME, F_ZONE, N_FIELDS };
static const char *const price_fields[N_FIELDS] = {
    "instanceType", "productDescription", "spotPrice", "timestamp",
    "availabilityZone",
};

struct price_parse {
    struct aws_price_set *set;
    const char *region;
    char *next_token;
    size_t token_size;
    char field[N_FIELDS][96];
    int seen[N_FIELDS];
    size_t items;
    /* EC2 lists every series' price at one time together: the last
     * timestamp parsed is usually the next one too. */
    char last_time_text[96];
    ebb_time_ms last_time;
    char *why;
    size_t why_size;
    int failed;
};

static int in_price_item(const struct ebb_xml_path *p)
{
    return p->depth == 4 && strcmp(ebb_xml_up(p, 1), "item") == 0 &&
           strcmp(ebb_xml_up(p, 2), "spotPriceHistorySet") == 0;
}

/* "item 3: no spotPrice", "item 3: spotPrice \"abc\" is not a price" */
static void price_fail(struct price_parse *pp, const char *field,
                       const char *value)
{
    if (value == NULL)
        snprintf(pp->why, pp->why_size, "item %zu: no %s", pp->items + 1, field);
    else
        snprintf(pp->why, pp->why_size, "item %zu: %s \"%s\" is not valid",
                 pp->items + 1, field, value);
    pp->failed = EBB_EPROTO;
}

static void price_item_done(struct price_parse *pp)
{
    for (int f = 0; f < N_FIELDS; f++) {
        if (!pp->seen[f]) {
            price_fail(pp, price_fields[f], NULL);
            return;
        }
    }
    struct ebb_price pr = {
        .struct_size = sizeof(struct ebb_price),
        .provider = NULL,
        .market = EBB_MARKET_SPOT,
        .capacity = -1,
        .currency = "USD",
    };
    if (aws_parse_price(pp->field[F_PRICE], &pr.price_per_hour) != 0) {
        price_fail(pp, "spotPrice", pp->field[F_PRICE]);
        return;
    }
    if (strcmp(pp->field[F_TIME], pp->last_time_text) == 0) {
        pr.at = pp->last_time;
    } else if (ebb_parse_time(pp->field[F_TIME], &pr.at) == 0) {
        memcpy(pp->last_time_text, pp->field[F_TIME], sizeof(pp->last_time_text));
        pp->last_time = pr.at;
    } else {
        price_fail(pp, "timestamp", pp->field[F_TIME]);
        return;
    }
    struct aws_price_set *s = pp->set;
    pr.region = intern(s, pp->region);
    pr.zone = intern(s, pp->field[F_ZONE]);
    pr.instance_type = intern(s, pp->field[F_TYPE]);
    pr.product = intern(s, pp->field[F_PRODUCT]);
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        struct ebb_price *v = realloc(s->v, cap * sizeof(*v));
        if (v == NULL) {
            pp->failed = EBB_ENOMEM;
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    if (pr.region == NULL || pr.zone == NULL || pr.instance_type == NULL ||
        pr.product == NULL) {
        pp->failed = EBB_ENOMEM;
        return;
    }
    s->v[s->n++] = pr;
    pp->items++;
}

static void price_start(void *ud, const struct ebb_xml_path *p)
{
    struct price_parse *pp = ud;
    if (p->depth == 3 && strcmp(p->name[2], "item") == 0 &&
        strcmp(p->name[1], "spotPriceHistorySet") == 0)
        memset(pp->seen, 0, sizeof(pp->seen));
}

static void price_end(void *ud, const struct ebb_xml_path *p, const char *text,
                      size_t len)
{
    struct price_parse *pp = ud;
    if (p->depth == 1 &&
        strcmp(p->name[0], "DescribeSpotPriceHistoryResponse") != 0) {
        snprintf(pp->why, pp->why_size, "root element is <%s>", p->name[0]);
        pp->failed = EBB_EPROTO;
    } else if (p->depth == 2 && strcmp(p->name[1], "nextToken") == 0) {
        copy_text(pp->next_token, pp->token_size, text, len);
    } else if (p->depth == 3 && strcmp(p->name[2], "item") == 0 &&
               strcmp(p->name[1], "spotPriceHistorySet") == 0) {
        price_item_done(pp);
    } else if (in_price_item(p)) {
        for (int f = 0; f < N_FIELDS; f++) {
            if (strcmp(p->name[3], price_fields[f]) == 0) {
                copy_text(pp->field[f], sizeof(pp->field[f]), text, len);
                pp->seen[f] = 1;
            }
        }
    }
}

int aws_parse_price_page(const char *xml, size_t len, const char *region,
                         struct aws_price_set *set, char *next_token,
                         size_t token_size, char *why, size_t why_size)
{
    struct price_parse pp = {
        .set = set, .region = region, .next_token = next_token,
        .token_size = token_size, .why = why, .why_size = why_size,
    };
    next_token[0] = '\0';
    why[0] = '\0';
    size_t n_before = set->n;
    struct ebb_xml_handler h = {price_start, price_end, &pp.failed};
    int rc = ebb_xml_parse(xml, len, &h, &pp);
    if (rc != 0) {
        if (why[0] == '\0')
            snprintf(why, why_size, "%s", rc == EBB_ENOMEM ? "out of memory"
                                                            : "malformed XML");
        set->n = n_before;
        next_token[0] = '\0';
    }
    return rc;
}

/* ---- instances ---- */

struct inst_parse {
    struct aws_instance_set *set;
    struct aws_ec2_instance cur;
    int depth; /* of the instance's <item>; 0 outside one */
    char tag_key[64], tag_value[128];
    char *next_token;
    size_t token_size;
    int failed;
};

/* amiLaunchIndex: a small non-negative decimal (EBB_EPROTO otherwise). */
static int parse_index(const char *text, size_t len, int *out)
{
    int v = 0;
    if (len == 0 || len > 4)
        return EBB_EPROTO;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9')
            return EBB_EPROTO;
        v = v * 10 + (text[i] - '0');
    }
    *out = v;
    return 0;
}

static void inst_start(void *ud, const struct ebb_xml_path *p)
{
    struct inst_parse *ip = ud;
    if (ip->depth == 0 && strcmp(ebb_xml_up(p, 0), "item") == 0 &&
        strcmp(ebb_xml_up(p, 1), "instancesSet") == 0) {
        ip->depth = p->depth;
        memset(&ip->cur, 0, sizeof(ip->cur));
        ip->cur.launch_index = -1;
        ip->cur.rank_tag = -1;
    } else if (ip->depth > 0 && p->depth == ip->depth + 2 &&
               strcmp(ebb_xml_up(p, 1), "tagSet") == 0) {
        ip->tag_key[0] = ip->tag_value[0] = '\0';
    }
}

static void inst_tag_done(struct inst_parse *ip)
{
    if (strcmp(ip->tag_key, "ebb:job") == 0)
        snprintf(ip->cur.job_id, sizeof(ip->cur.job_id), "%s", ip->tag_value);
    else if (strcmp(ip->tag_key, "ebb:token") == 0)
        snprintf(ip->cur.token, sizeof(ip->cur.token), "%s", ip->tag_value);
    else if (strcmp(ip->tag_key, "ebb:rank") == 0 &&
             parse_index(ip->tag_value, strlen(ip->tag_value), &ip->cur.rank_tag) != 0)
        ip->cur.rank_tag = -1; /* not ebb's: the launch index counts */
}

static void inst_done(struct inst_parse *ip)
{
    struct aws_instance_set *s = ip->set;
    if (ip->cur.id[0] == '\0') {
        ip->failed = EBB_EPROTO;
        return;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct aws_ec2_instance *v = realloc(s->v, cap * sizeof(*v));
        if (v == NULL) {
            ip->failed = EBB_ENOMEM;
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = ip->cur;
}

static void inst_end(void *ud, const struct ebb_xml_path *p, const char *text,
                     size_t len)
{
    struct inst_parse *ip = ud;
    struct aws_ec2_instance *c = &ip->cur;
    if (ip->depth == 0) {
        if (p->depth == 2 && strcmp(p->name[1], "nextToken") == 0)
            copy_text(ip->next_token, ip->token_size, text, len);
        return;
    }
    int rel = p->depth - ip->depth;
    const char *name = ebb_xml_up(p, 0), *parent = ebb_xml_up(p, 1);
    if (rel == 0) {
        inst_done(ip);
        ip->depth = 0;
    } else if (rel == 1) {
        if (strcmp(name, "instanceId") == 0)
            copy_text(c->id, sizeof(c->id), text, len);
        else if (strcmp(name, "instanceType") == 0)
            copy_text(c->instance_type, sizeof(c->instance_type), text, len);
        else if (strcmp(name, "instanceLifecycle") == 0)
            copy_text(c->lifecycle, sizeof(c->lifecycle), text, len);
        else if (strcmp(name, "clientToken") == 0)
            copy_text(c->client_token, sizeof(c->client_token), text, len);
        else if (strcmp(name, "amiLaunchIndex") == 0)
            ip->failed = ip->failed ? ip->failed
                                    : parse_index(text, len, &c->launch_index);
        else if (strcmp(name, "launchTime") == 0 &&
                 ebb_parse_time(text, &c->launched_at) != 0)
            ip->failed = EBB_EPROTO;
    } else if (rel == 2) {
        if (strcmp(parent, "instanceState") == 0 && strcmp(name, "name") == 0)
            copy_text(c->state, sizeof(c->state), text, len);
        else if (strcmp(parent, "stateReason") == 0 && strcmp(name, "code") == 0)
            copy_text(c->state_reason, sizeof(c->state_reason), text, len);
        else if (strcmp(parent, "placement") == 0 &&
                 strcmp(name, "availabilityZone") == 0)
            copy_text(c->zone, sizeof(c->zone), text, len);
        else if (strcmp(parent, "placement") == 0 && strcmp(name, "groupName") == 0)
            copy_text(c->group, sizeof(c->group), text, len);
        else if (strcmp(parent, "tagSet") == 0 && strcmp(name, "item") == 0)
            inst_tag_done(ip);
    } else if (rel == 3 && strcmp(ebb_xml_up(p, 2), "tagSet") == 0) {
        if (strcmp(name, "key") == 0)
            copy_text(ip->tag_key, sizeof(ip->tag_key), text, len);
        else if (strcmp(name, "value") == 0)
            copy_text(ip->tag_value, sizeof(ip->tag_value), text, len);
    }
}

int aws_parse_instances(const char *xml, size_t len, struct aws_instance_set *set,
                        char *next_token, size_t token_size)
{
    struct inst_parse ip = {.set = set, .next_token = next_token,
                            .token_size = token_size};
    next_token[0] = '\0';
    size_t n_before = set->n;
    struct ebb_xml_handler h = {inst_start, inst_end, &ip.failed};
    int rc = ebb_xml_parse(xml, len, &h, &ip);
    if (rc != 0) {
        set->n = n_before;
        next_token[0] = '\0';
    }
    return rc;
}

/* ---- errors ---- */

struct err_parse {
    char *code, *message;
    size_t code_size, message_size;
    int found, failed;
};

static void err_end(void *ud, const struct ebb_xml_path *p, const char *text,
                    size_t len)
{
    struct err_parse *ep = ud;
    if (p->depth != 4 || strcmp(p->name[0], "Response") != 0 ||
        strcmp(p->name[1], "Errors") != 0 || strcmp(p->name[2], "Error") != 0)
        return;
    /* The first error is the one that counts; EC2 sends one. */
    if (strcmp(p->name[3], "Code") == 0 && !(ep->found & 1)) {
        copy_text(ep->code, ep->code_size, text, len);
        ep->found |= 1;
    } else if (strcmp(p->name[3], "Message") == 0 && !(ep->found & 2)) {
        copy_text(ep->message, ep->message_size, text, len);
        ep->found |= 2;
    }
}

int aws_parse_error(const char *xml, size_t len, char *code, size_t code_size,
                    char *message, size_t message_size)
{
    struct err_parse ep = {code, message, code_size, message_size, 0, 0};
    code[0] = message[0] = '\0';
    struct ebb_xml_handler h = {NULL, err_end, &ep.failed};
    if (ebb_xml_parse(xml, len, &h, &ep) != 0 || !(ep.found & 1))
        return EBB_ENOTFOUND;
    return 0;
}
