/* Reading the files tests check against: the data under tests/data (found
 * through EBB_SOURCE_ROOT, "." without it) and the AWS SigV4 test suites'
 * request files (tests/unit/test_sigv4.c reads both layouts with one
 * parser). */
#ifndef EBB_TEST_DATA_H
#define EBB_TEST_DATA_H

#include <stddef.h>

#include <ebb/sigv4.h>

/* Writes "<EBB_SOURCE_ROOT>/tests/data/<rel>" into out (size bytes). */
void test_data_path(char *out, size_t size, const char *rel);

/* The whole file at `path`, NUL-terminated, a new string the caller
 * frees; its length in *len when len is not NULL. NULL when the file
 * cannot be opened (a short read fails the test). */
char *test_slurp(const char *path, size_t *len);

#define TEST_REQ_MAX 16

/* A request of a SigV4 suite, split in place: method, path, query (""
 * when none), up to TEST_REQ_MAX - 4 headers (names and values new
 * strings, room left for the headers a test adds), the body. */
struct test_req {
    char *method, *path, *query;
    struct ebb_sigv4_header h[TEST_REQ_MAX];
    char *names[TEST_REQ_MAX], *values[TEST_REQ_MAX];
    size_t n;
    const char *body;
};

/* Splits `text` (changed in place; p points into it): the request line
 * at its first and last space, "Name:value" header lines (continuations
 * start with a blank and join the value after a newline), a blank line,
 * the body. */
void test_req_parse(char *text, struct test_req *p);
/* Appends a header (copies of name and value). */
void test_req_add(struct test_req *p, const char *name, const char *value);
/* Points p->h at the names and values (after parsing and adding). */
void test_req_headers(struct test_req *p);
/* Frees the names and values. */
void test_req_free(struct test_req *p);

#endif
