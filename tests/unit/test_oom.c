/* Out-of-memory tests (SQLite's OOM tests, curl's torture mode): each
 * parser, and the store, is run once per allocation it makes, with that
 * allocation failing (tests/lib/failalloc.h). Each run must end either in
 * the same result as a run without failures or in a clean error: the
 * parser's documented code for it (EBB_ENOMEM) with a message where the
 * parser gives messages, nothing half-built handed out, and nothing
 * leaked (the suite runs under ASan's leak checker in sanitizer builds and
 * under valgrind with `--setup valgrind`). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include <ebb/trace.h>

#include "base/str.h"
#include "base/tz.h"
#include "config/config_file.h"
#include "failalloc.h"
#include "io/api_request.h"
#include "io/ckpt_manifest.h"
#include "io/http_head.h"
#include "jobs/jobspec.h"
#include "jobs/schedule.h"
#include "market/catalog.h"
#include "market/store_prices.h"
#include "store/store.h"

/* Every one of the first EVERY_UPTO allocations of a run fails once; past
 * that (only the store's migrations get there: SQLite makes some 16000
 * allocations to open a database) every STRIDE-th, so the suite stays
 * quick; runs are cut short at MAX_ALLOCS. */
#define EVERY_UPTO 2000
#define STRIDE 7
#define MAX_ALLOCS 40000

/* ---- helpers ---- */

/* A case's input, read before any allocation is armed to fail. */
struct input {
    char *path; /* absolute */
    char *text; /* the file's bytes, NUL-terminated */
    size_t len;
};

static void input_load(struct input *in, const char *rel)
{
    in->path = ebb_strfmt("%s/%s", getenv("EBB_SOURCE_ROOT"), rel);
    assert_non_null(in->path);
    FILE *f = fopen(in->path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", in->path);
    in->text = malloc(1 << 20);
    assert_non_null(in->text);
    in->len = fread(in->text, 1, (1 << 20) - 1, f);
    in->text[in->len] = '\0';
    fclose(f);
}

static void input_free(struct input *in)
{
    free(in->path);
    free(in->text);
}

static char *dumps(json_t *j)
{
    char *s = j != NULL ? json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

/* ---- one case: parse (allocations counted), describe, free ---- */

struct oom_case {
    const char *name;
    /* Builds the object into *obj; 0 or an EBB_E* code. On failure it
     * checks what the parser promises (message, nothing to free). */
    const char *file; /* the input, under the source root */
    int (*parse)(const struct input *in, void **obj);
    /* What the object holds, as text (caller frees); run unarmed. */
    char *(*describe)(void *obj);
    void (*free_obj)(void *obj);
    /* The store answers a failed SQLite allocation with the error of the
     * step it broke (EBB_EDB, "...: out of memory"), not EBB_ENOMEM: any
     * error with a message is clean there. */
    int any_error;
};

static struct ebb_diag diag; /* the last parse's message */

static int spec_zeroed(const struct ebb__job_spec *s)
{
    static const struct ebb__job_spec zero;
    return memcmp(s, &zero, sizeof(zero)) == 0;
}

/* job spec YAML */
static int jobspec_parse(const struct input *in, void **obj)
{
    struct ebb__job_spec *s = malloc(sizeof(*s));
    int rc = s != NULL ? ebb__jobspec_load_buffer("full.yaml", in->text,
                                                  in->len, s, &diag)
                       : EBB_ENOMEM;
    if (rc != 0 && s != NULL)
        assert_true(spec_zeroed(s));
    if (rc != 0)
        free(s);
    *obj = rc == 0 ? s : NULL;
    return rc;
}

static char *jobspec_describe(void *obj)
{
    return dumps(ebb__jobspec_to_json(obj));
}

static void jobspec_free(void *obj)
{
    ebb__jobspec_free(obj);
    free(obj);
}

/* job spec JSON, as ebbd reads it back from its store */
static int jobspec_json_parse(const struct input *in, void **obj)
{
    json_t *j = json_loadb(in->text, in->len, 0, NULL);
    if (j == NULL)
        return EBB_ENOMEM;
    struct ebb__job_spec *s = malloc(sizeof(*s));
    int rc = s != NULL ? ebb__jobspec_from_json(j, s, &diag) : EBB_ENOMEM;
    json_decref(j);
    if (rc != 0 && s != NULL)
        assert_true(spec_zeroed(s));
    if (rc != 0)
        free(s);
    *obj = rc == 0 ? s : NULL;
    return rc;
}

/* workload */
static int workload_parse(const struct input *in, void **obj)
{
    struct ebb__workload *w = NULL;
    int rc = ebb__workload_load_buffer("workload.yaml", in->text, in->len, &w,
                                       &diag);
    if (rc != 0)
        assert_null(w);
    *obj = w;
    return rc;
}

static char *workload_describe(void *obj)
{
    struct ebb__workload *w = obj;
    json_t *a = json_array();
    for (size_t i = 0; i < w->n; i++)
        json_array_append_new(a, ebb__jobspec_to_json(&w->jobs[i]));
    return dumps(a);
}

static void workload_free(void *obj)
{
    ebb__workload_free(obj);
}

/* schedule */
static int schedule_parse(const struct input *in, void **obj)
{
    struct ebb__schedule *s = malloc(sizeof(*s));
    int rc = s != NULL ? ebb__schedule_load_buffer("nightly.yaml", in->text,
                                                   in->len, s, &diag)
                       : EBB_ENOMEM;
    if (rc != 0)
        free(s);
    *obj = rc == 0 ? s : NULL;
    return rc;
}

static char *schedule_describe(void *obj)
{
    struct ebb__schedule *s = obj;
    json_t *j = ebb__jobspec_to_json(&s->job);
    json_object_set_new(j, "cron", json_string(s->cron_text));
    json_object_set_new(j, "tz", json_string(ebb__tz_name(s->tz)));
    json_object_set_new(j, "window", json_integer(s->window));
    return dumps(j);
}

static void schedule_free(void *obj)
{
    ebb__schedule_free(obj);
    free(obj);
}

/* ebb.yaml */
static int config_parse(const struct input *in, void **obj)
{
    struct ebb__config *c = NULL;
    int rc = ebb__config_load_buffer("ebb.yaml", in->text, in->len, &c, &diag);
    *obj = c;
    return rc;
}

static char *config_describe(void *obj)
{
    struct ebb__config *c = obj;
    return ebb_strfmt("%d %s %zu", (int)c->log_level, c->default_policy,
                      c->n_providers);
}

static void config_free(void *obj)
{
    ebb__config_free(obj);
}

/* a TZif file */
static int tz_parse(const struct input *in, void **obj)
{
    struct ebb__tz *tz = NULL;
    int rc = ebb__tz_from_tzif("America/New_York",
                               (const unsigned char *)in->text, in->len, &tz,
                               &diag);
    if (rc != 0)
        assert_null(tz);
    *obj = tz;
    return rc;
}

static char *tz_describe(void *obj)
{
    return ebb_strfmt("%s %d %d", ebb__tz_name(obj),
                      (int)ebb__tz_offset(obj, 1796083200),
                      (int)ebb__tz_offset(obj, 1783000000));
}

static void tz_free(void *obj)
{
    ebb__tz_free(obj);
}

/* a price trace */
static int trace_parse(const struct input *in, void **obj)
{
    struct ebb_price_trace *t = NULL;
    int rc = ebb_price_trace_load(in->path, &t, &diag);
    if (rc != 0)
        assert_null(t);
    *obj = t;
    return rc;
}

static char *trace_describe(void *obj)
{
    struct ebb_price_trace *t = obj;
    return ebb_strfmt("%zu %lld %lld %s", t->n_series, (long long)t->first_at,
                      (long long)t->last_at, t->series[0].instance_type);
}

static void trace_free(void *obj)
{
    ebb_price_trace_free(obj);
}

/* the instance catalog */
static int catalog_parse(const struct input *in, void **obj)
{
    struct ebb__catalog *c = NULL;
    int rc = ebb__catalog_load(in->path, &c, &diag);
    if (rc != 0)
        assert_null(c);
    *obj = c;
    return rc;
}

static char *catalog_describe(void *obj)
{
    struct ebb__catalog *c = obj;
    return ebb_strfmt("%zu %s", c->n_entry, c->entry[0].instance_type);
}

static void catalog_free(void *obj)
{
    ebb__catalog_free(obj);
}

/* the default prices of checkpoint stores */
static int store_prices_parse(const struct input *in, void **obj)
{
    struct ebb__store_prices *p = NULL;
    int rc = ebb__store_prices_load(in->path, &p, &diag);
    if (rc != 0)
        assert_null(p);
    *obj = p;
    return rc;
}

static char *store_prices_describe(void *obj)
{
    struct ebb__store_prices *p = obj;
    return ebb_strfmt("%zu %s %lld", p->n_row, p->row[0].region,
                      (long long)p->row[0].storage);
}

static void store_prices_free(void *obj)
{
    ebb__store_prices_free(obj);
}

/* an API request line */
static int api_parse(const struct input *in, void **obj)
{
    struct ebb__api_request *r = malloc(sizeof(*r));
    if (r == NULL)
        return EBB_ENOMEM;
    int rc = ebb__api_request_parse(in->text, in->len, r, &diag);
    if (rc != 0) {
        ebb__api_request_free(r);
        free(r);
        r = NULL;
    }
    *obj = r;
    return rc;
}

static char *api_describe(void *obj)
{
    struct ebb__api_request *r = obj;
    json_t *j = json_pack("{s:O,s:s,s:O}", "id", r->id, "method", r->method,
                          "params", r->params);
    return dumps(j);
}

static void api_free(void *obj)
{
    ebb__api_request_free(obj);
    free(obj);
}

/* an HTTP request head */
static int http_parse(const struct input *in, void **obj)
{
    struct ebb__http_head *h = malloc(sizeof(*h));
    if (h == NULL)
        return EBB_ENOMEM;
    int rc = ebb__http_parse_head(in->text, in->len, h);
    if (rc != EBB__HTTP_HEAD_DONE) {
        free(h);
        h = NULL;
    }
    *obj = h;
    return rc;
}

static char *http_describe(void *obj)
{
    struct ebb__http_head *h = obj;
    return ebb_strfmt("%s %s %s %zu %zu", h->method, h->path, h->query,
                      h->n_headers, h->body_len);
}

static void http_free(void *obj)
{
    ebb__http_head_free(obj);
    free(obj);
}

/* the store: open (migrations), a job and a price written and read back */
static int store_parse(const struct input *in, void **obj)
{
    (void)in;
    struct ebb__store *s = NULL;
    char err[256] = "";
    int rc = ebb__store_open(":memory:", &s, err, sizeof(err));
    if (rc != 0) {
        assert_null(s);
        assert_true(err[0] != '\0');
        snprintf(diag.msg, sizeof(diag.msg), "%s", err);
        return rc;
    }
    struct ebb__job_row row = {
        .id = "j-1", .name = "n", .spec_yaml = "name: n\n", .spec_json = "{}",
        .state = "pending", .policy = "uniform-progress", .owner_uid = 1000,
        .submitted_at = 1, .budget = -1, .currency = "USD",
    };
    rc = ebb__store_job_insert(s, &row);
    const char *what = "job insert";
    struct ebb_price p = {
        .struct_size = sizeof(p), .region = "us-east-1", .zone = "us-east-1a",
        .instance_type = "p3.2xlarge", .product = "Linux/UNIX",
        .market = EBB_MARKET_SPOT, .at = 1000, .price_per_hour = 918000,
        .currency = "USD", .capacity = -1,
    };
    if (rc == 0) {
        what = "price insert";
        rc = ebb__store_put_price(s, "aws", &p);
        rc = rc == 1 ? 0 : rc == 0 ? EBB_EEXISTS : rc;
    }
    if (rc != 0) {
        snprintf(diag.msg, sizeof(diag.msg), "%s: %s", what,
                 ebb_strerror(rc));
        ebb__store_close(s);
        return rc;
    }
    *obj = s;
    return 0;
}

static char *store_describe(void *obj)
{
    ebb_time_ms cursor = 0;
    int rc = ebb__store_price_cursor(obj, "aws", NULL, &cursor);
    return ebb_strfmt("%d %lld", rc, (long long)cursor);
}

static void store_free(void *obj)
{
    ebb__store_close(obj);
}

/* a checkpoint manifest, under the fuzz corpus's fixed key */
static int manifest_parse(const struct input *in, void **obj)
{
    struct ebb__ckpt_key k;
    for (size_t i = 0; i < sizeof(k.bytes); i++)
        k.bytes[i] = (unsigned char)i;
    struct ebb__ckpt_manifest *m = NULL;
    struct ebb__ckpt_error err;
    int rc = ebb__ckpt_manifest_read(in->text, in->len, &k, &m, &err);
    if (rc != 0) {
        assert_null(m);
        snprintf(diag.msg, sizeof(diag.msg), "%s", err.diag.msg);
    }
    *obj = m;
    return rc;
}

static char *manifest_describe(void *obj)
{
    struct ebb__ckpt_key k;
    for (size_t i = 0; i < sizeof(k.bytes); i++)
        k.bytes[i] = (unsigned char)i;
    char *text = NULL;
    size_t len;
    struct ebb__ckpt_error err;
    return ebb__ckpt_manifest_write(obj, &k, &text, &len, &err) == 0 ? text : NULL;
}

static void manifest_free(void *obj)
{
    ebb__ckpt_manifest_free(obj);
}

static const struct oom_case cases[] = {
    {"jobspec", "tests/data/jobs/full.yaml", jobspec_parse, jobspec_describe,
     jobspec_free, 0},
    {"jobspec-json", "tests/fuzz/corpus/jobspec/stored-1.json",
     jobspec_json_parse, jobspec_describe, jobspec_free, 0},
    {"workload", "tests/data/jobs/workload.yaml", workload_parse,
     workload_describe, workload_free, 0},
    {"schedule", "examples/nightly.yaml", schedule_parse, schedule_describe,
     schedule_free, 0},
    {"config", "examples/ebb.yaml", config_parse, config_describe,
     config_free, 0},
    {"config-stores", "tests/fuzz/corpus/config/stores.yaml", config_parse,
     config_describe, config_free, 0},
    {"config-quotas", "tests/fuzz/corpus/config/quotas.yaml", config_parse,
     config_describe, config_free, 0},
    {"tz", "tests/fuzz/corpus/tz/America_New_York", tz_parse, tz_describe,
     tz_free, 0},
    {"trace", "tests/data/traces/prices_good.csv", trace_parse,
     trace_describe, trace_free, 0},
    {"catalog", "tests/data/traces/catalog_good.csv", catalog_parse,
     catalog_describe, catalog_free, 0},
    {"store-prices", "data/store_prices.csv", store_prices_parse,
     store_prices_describe, store_prices_free, 0},
    {"api", "tests/fuzz/corpus/api/req-11.json", api_parse, api_describe,
     api_free, 0},
    {"http", "tests/fuzz/corpus/http/agent-event.txt", http_parse,
     http_describe, http_free, 0},
    {"ckpt-manifest", "tests/fuzz/corpus/ckpt-manifest/valid-encrypted-dir.json",
     manifest_parse, manifest_describe, manifest_free, 0},
    {"store", "tests/fuzz/corpus/api/req-01.json", store_parse,
     store_describe, store_free, 1},
};

/* Fails allocation n = 1, 2, ... of the case (see EVERY_UPTO) until a run
 * makes fewer than n allocations. */
static void run_case(const struct oom_case *c)
{
    struct input in;
    input_load(&in, c->file);
    void *obj = NULL;
    failalloc_arm(0);
    diag.msg[0] = '\0';
    int rc = c->parse(&in, &obj);
    long total = failalloc_count();
    if (rc != 0)
        fail_msg("%s: fails without an allocation failure: %d %s", c->name, rc,
                 diag.msg);
    char *want = c->describe(obj);
    assert_non_null(want);
    c->free_obj(obj);
    long n = 1, tried = 0;
    for (; n <= MAX_ALLOCS; n += n < EVERY_UPTO ? 1 : STRIDE) {
        tried++;
        obj = NULL;
        diag.msg[0] = '\0';
        failalloc_arm(n);
        rc = c->parse(&in, &obj);
        int hit = failalloc_hit();
        failalloc_arm(0);
        if (!hit) {
            assert_int_equal(rc, 0);
            c->free_obj(obj);
            break;
        }
        if (rc == 0) {
            /* The failure was absorbed (a retry, a cache): the result must
             * be what it is without one. */
            char *got = c->describe(obj);
            if (got == NULL || strcmp(got, want) != 0) {
                fprintf(stderr, "%s: allocation %ld failed; got\n  %s\n"
                        "instead of\n  %s\n", c->name, n, got, want);
                fail_msg("%s: allocation %ld failed and the result differs",
                         c->name, n);
            }
            free(got);
            c->free_obj(obj);
            continue;
        }
        if (c->any_error && rc < 0 && diag.msg[0] != '\0')
            continue;
        if (rc != EBB_ENOMEM)
            fail_msg("%s: allocation %ld of %ld failed and the parse returned "
                     "%d, not EBB_ENOMEM (%s)", c->name, n, total, rc,
                     diag.msg);
    }
    free(want);
    input_free(&in);
    print_message("%s: %ld allocations, %ld of them failed in turn\n",
                  c->name, total, tried - 1);
}

static void test_oom(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i]);
}

int main(void)
{
    failalloc_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
