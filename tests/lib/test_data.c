/* Reading test data and SigV4 suite requests (test_data.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/str.h"
#include "test_data.h"

void test_data_path(char *out, size_t size, const char *rel)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    snprintf(out, size, "%s/tests/data/%s", root ? root : ".", rel);
}

char *test_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(n >= 0);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    if (len != NULL)
        *len = (size_t)n;
    return s;
}

void test_req_parse(char *text, struct test_req *p)
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
            assert_true(p->n < TEST_REQ_MAX - 4);
            p->names[p->n] = strndup(line, (size_t)(colon - line));
            p->values[p->n] = strdup(colon + 1);
            p->n++;
        }
        line = next;
    }
}

void test_req_add(struct test_req *p, const char *name, const char *value)
{
    assert_true(p->n < TEST_REQ_MAX);
    p->names[p->n] = strdup(name);
    p->values[p->n] = strdup(value);
    p->n++;
}

void test_req_headers(struct test_req *p)
{
    for (size_t i = 0; i < p->n; i++)
        p->h[i] = (struct ebb_sigv4_header){p->names[i], p->values[i]};
}

void test_req_free(struct test_req *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->names[i]);
        free(p->values[i]);
    }
}
