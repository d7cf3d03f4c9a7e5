/* The SigV4 signer of base (ebb/sigv4.h), as the aws provider uses it, against every case of the AWS test suite
 * (tests/data/sigv4, Apache-2.0, see its README): canonical request,
 * string to sign and Authorization header must match byte for byte.
 *
 * Temporary credentials: where a case's signed request carries an
 * X-Amz-Security-Token header its .req lacks, the token is signed as the
 * provider signs it for EC2, except in post-sts-header-after, whose point
 * is a token added after signing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ebb/sigv4.h>
#include "base/str.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

struct parsed {
    char *method, *path, *query;
    struct ebb_sigv4_header h[16];
    char *names[16], *values[16];
    size_t n;
    const char *body;
};

/* Splits a .req: the request line at its first and last space, header
 * lines (continuations start with a blank), a blank line, the body. */
static void parse_req(char *text, struct parsed *p)
{
    memset(p, 0, sizeof(*p));
    char *eol = strchr(text, '\n');
    assert_non_null(eol);
    *eol = '\0';
    char *first = strchr(text, ' ');
    char *last = strrchr(text, ' ');
    assert_true(first != NULL && last > first);
    *first = *last = '\0';
    p->method = text;
    p->path = first + 1;
    char *q = strchr(p->path, '?');
    p->query = "";
    if (q != NULL) {
        *q = '\0';
        p->query = q + 1;
    }
    char *line = eol + 1;
    p->body = "";
    while (line != NULL && *line != '\0') {
        char *next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (*line == '\0') {
            p->body = next != NULL ? next : "";
            break;
        }
        if ((*line == ' ' || *line == '\t') && p->n > 0) {
            char *prev = p->values[p->n - 1];
            p->values[p->n - 1] = ebb_strfmt("%s\n%s", prev, line);
            free(prev);
        } else {
            char *colon = strchr(line, ':');
            assert_non_null(colon);
            assert_true(p->n < 15);
            p->names[p->n] = strndup(line, (size_t)(colon - line));
            p->values[p->n] = strdup(colon + 1);
            p->n++;
        }
        line = next;
    }
}

static int has_header(const struct parsed *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcasecmp(p->names[i], name) == 0)
            return 1;
    return 0;
}

/* The X-Amz-Security-Token value in a signed request, or NULL. */
static char *token_in(const char *sreq)
{
    const char *t = strstr(sreq, "\nX-Amz-Security-Token:");
    if (t == NULL)
        return NULL;
    t += strlen("\nX-Amz-Security-Token:");
    return strndup(t, strcspn(t, "\n"));
}

static int run_case(const char *dir, const char *name)
{
    char path[2400];
    char *ext[5];
    static const char *const exts[5] = {"req", "creq", "sts", "authz", "sreq"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof(path), "%s/%s.%s", dir, name, exts[i]);
        ext[i] = slurp(path);
        assert_non_null(ext[i]);
    }
    struct parsed p;
    parse_req(ext[0], &p);
    char *token = token_in(ext[4]);
    if (token != NULL && !has_header(&p, "X-Amz-Security-Token") &&
        strcmp(name, "post-sts-header-after") != 0) {
        p.names[p.n] = strdup("X-Amz-Security-Token");
        p.values[p.n] = token;
        token = NULL;
        p.n++;
    }
    free(token);
    for (size_t i = 0; i < p.n; i++)
        p.h[i] = (struct ebb_sigv4_header){p.names[i], p.values[i]};

    struct ebb_sigv4_request req = {
        .method = p.method, .path = p.path, .query = p.query,
        .headers = p.h, .n_headers = p.n,
        .payload = p.body, .payload_len = strlen(p.body),
    };
    struct ebb_sigv4_scope scope = {
        .access_key_id = "AKIDEXAMPLE",
        .secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        .region = "us-east-1",
        .service = "service",
        .amz_date = "20150830T123600Z",
    };
    struct ebb_sigv4_result r;
    int failed = 0;
    if (ebb_sigv4_sign(&req, &scope, &r) != 0) {
        print_error("%s: signing failed\n", name);
        failed = 1;
    } else {
        const char *got[3] = {r.canonical_request, r.string_to_sign, r.authorization};
        for (int i = 0; i < 3; i++) {
            if (strcmp(got[i], ext[i + 1]) != 0) {
                print_error("%s.%s differs:\n--- expected\n%s\n--- got\n%s\n",
                            name, exts[i + 1], ext[i + 1], got[i]);
                failed = 1;
            }
        }
        ebb_sigv4_result_free(&r);
    }
    for (size_t i = 0; i < p.n; i++) {
        free(p.names[i]);
        free(p.values[i]);
    }
    for (int i = 0; i < 5; i++)
        free(ext[i]);
    return failed;
}

/* Visits every case directory (one holding <dirname>.req) below `dir`. */
static void walk(const char *dir, int *cases, int *failures)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[1100], req[2400];
        snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(sub, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        snprintf(req, sizeof(req), "%s/%s.req", sub, e->d_name);
        if (stat(req, &st) == 0) {
            (*cases)++;
            *failures += run_case(sub, e->d_name);
        }
        walk(sub, cases, failures);
    }
    closedir(d);
}

static void test_suite(void **state)
{
    (void)state;
    const char *root = getenv("EBB_SOURCE_ROOT");
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/tests/data/sigv4", root ? root : ".");
    int cases = 0, failures = 0;
    walk(dir, &cases, &failures);
    /* All 34 cases ran; none may fail. */
    assert_int_equal(cases, 34);
    assert_int_equal(failures, 0);
}

/* A bad X-Amz-Date and a malformed query escape are refused. */
static void test_rejects(void **state)
{
    (void)state;
    struct ebb_sigv4_header h[1] = {{"Host", "example.amazonaws.com"}};
    struct ebb_sigv4_request req = {.method = "GET", .path = "/", .query = "",
                                    .headers = h, .n_headers = 1};
    struct ebb_sigv4_scope scope = {.access_key_id = "AKID",
                                    .secret_access_key = "secret",
                                    .region = "us-east-1", .service = "ec2",
                                    .amz_date = "2015-08-30T12:36:00Z"};
    struct ebb_sigv4_result r;
    assert_int_equal(ebb_sigv4_sign(&req, &scope, &r), EBB_EINVAL);
    scope.amz_date = "20150830T123600Z";
    req.query = "a=%zz";
    assert_int_equal(ebb_sigv4_sign(&req, &scope, &r), EBB_EINVAL);
}

static void test_amz_date(void **state)
{
    (void)state;
    char d[17];
    ebb_sigv4_amz_date(INT64_C(1440938160000), d); /* 2015-08-30T12:36:00Z */
    assert_string_equal(d, "20150830T123600Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suite),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_amz_date),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
