#include "base/csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Takes ownership of `data` (size bytes plus a NUL) and checks it once for
 * NUL bytes, which would silently cut fields short later. */
static int init(struct ebb__csv *c, const char *name, char *data, size_t size,
                struct ebb_diag *d)
{
    memset(c, 0, sizeof(*c));
    const char *nul = memchr(data, '\0', size);
    if (nul != NULL) {
        int line = 1;
        for (const char *p = data; p < nul; p++)
            line += *p == '\n';
        ebb_diag_set(d, name, line,
                      "contains a NUL byte; this is not a text CSV file");
        free(data);
        return EBB_EINVAL;
    }
    c->name = strdup(name);
    if (c->name == NULL) {
        free(data);
        return EBB_ENOMEM;
    }
    c->data = data;
    c->size = size;
    c->next_line = 1;
    /* A byte order mark, as spreadsheet programs write. */
    if (size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        c->pos = 3;
    return 0;
}

int ebb__csv_open(struct ebb__csv *c, const char *path, struct ebb_diag *d)
{
    memset(c, 0, sizeof(*c));
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        ebb_diag_set(d, path, 0, "cannot open: %s", strerror(errno));
        return EBB_EIO;
    }
    size_t cap = 1 << 16, size = 0;
    char *data = malloc(cap);
    if (data == NULL) {
        fclose(f);
        return EBB_ENOMEM;
    }
    for (;;) {
        if (cap - size < 2) {
            char *bigger = realloc(data, cap * 2);
            if (bigger == NULL) {
                free(data);
                fclose(f);
                return EBB_ENOMEM;
            }
            data = bigger;
            cap *= 2;
        }
        size_t got = fread(data + size, 1, cap - size - 1, f);
        size += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        ebb_diag_set(d, path, 0, "cannot read: %s", strerror(errno));
        free(data);
        return EBB_EIO;
    }
    data[size] = '\0';
    return init(c, path, data, size, d);
}

int ebb__csv_open_mem(struct ebb__csv *c, const char *name, const char *text,
                      size_t len)
{
    memset(c, 0, sizeof(*c));
    char *data = malloc(len + 1);
    if (data == NULL)
        return EBB_ENOMEM;
    memcpy(data, text, len);
    data[len] = '\0';
    return init(c, name, data, len, NULL);
}

static int push_field(struct ebb__csv *c, char *start)
{
    if (c->n_field == c->cap_field) {
        size_t cap = c->cap_field ? c->cap_field * 2 : 16;
        char **bigger = realloc(c->field, cap * sizeof(*bigger));
        if (bigger == NULL)
            return EBB_ENOMEM;
        c->field = bigger;
        c->cap_field = cap;
    }
    c->field[c->n_field++] = start;
    return 0;
}

/* Fields are unescaped in place: `w` (where the next output byte goes)
 * never passes `r` (the next input byte), because an escape is always
 * longer than what it stands for. Each field ends with a NUL written over
 * its delimiter, which has been read by then. */
int ebb__csv_next(struct ebb__csv *c, struct ebb_diag *d)
{
    char *s = c->data;
    size_t r = c->pos;

    /* Skip empty lines. */
    for (;;) {
        if (r < c->size && s[r] == '\n') {
            r++;
            c->next_line++;
        } else if (r + 1 < c->size && s[r] == '\r' && s[r + 1] == '\n') {
            r += 2;
            c->next_line++;
        } else {
            break;
        }
    }
    c->n_field = 0;
    if (r >= c->size) {
        c->pos = r;
        return 0;
    }
    c->line = c->next_line;

    size_t w = r;
    for (;;) {
        char *start = s + w;
        if (s[r] == '"') {
            int open_line = c->next_line;
            r++;
            for (;;) {
                if (r >= c->size) {
                    ebb_diag_set(d, c->name, open_line,
                                  "quoted field is not closed (a field that "
                                  "starts with \" must end with \")");
                    return EBB_EINVAL;
                }
                if (s[r] == '"') {
                    if (r + 1 < c->size && s[r + 1] == '"') {
                        s[w++] = '"';
                        r += 2;
                        continue;
                    }
                    r++;
                    break;
                }
                if (s[r] == '\n')
                    c->next_line++;
                s[w++] = s[r++];
            }
            if (r < c->size && s[r] != ',' && s[r] != '\n' &&
                !(s[r] == '\r' && r + 1 < c->size && s[r + 1] == '\n')) {
                ebb_diag_set(d, c->name, c->next_line,
                              "text after the closing quote of field %zu "
                              "(write a quote inside a quoted field as \"\")",
                              c->n_field + 1);
                return EBB_EINVAL;
            }
        } else {
            while (r < c->size && s[r] != ',' && s[r] != '\n') {
                if (s[r] == '"') {
                    ebb_diag_set(d, c->name, c->next_line,
                                  "quote inside unquoted field %zu (quote the "
                                  "whole field and double the quote: "
                                  "\"a \"\"b\"\"\")",
                                  c->n_field + 1);
                    return EBB_EINVAL;
                }
                if (s[r] == '\r' && (r + 1 >= c->size || s[r + 1] != '\n')) {
                    ebb_diag_set(d, c->name, c->next_line,
                                  "carriage return not followed by a line "
                                  "feed (lines must end in LF or CRLF)");
                    return EBB_EINVAL;
                }
                if (s[r] == '\r')
                    break;
                s[w++] = s[r++];
            }
        }
        /* s[r] is now ',', '\n', '\r' of CRLF, or the end. */
        char delim = r < c->size ? s[r] : '\0';
        s[w] = '\0';
        if (push_field(c, start) != 0)
            return EBB_ENOMEM;
        if (delim == ',') {
            r++;
            w = r;
            continue;
        }
        if (delim == '\r')
            r++;
        if (r < c->size) {
            r++; /* the '\n' */
            c->next_line++;
        }
        break;
    }
    c->pos = r;
    return 1;
}

void ebb__csv_close(struct ebb__csv *c)
{
    free(c->name);
    free(c->data);
    free(c->field);
    memset(c, 0, sizeof(*c));
}
