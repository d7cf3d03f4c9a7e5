/* A small RFC 4180 reader for the CSV files ebb ships and reads: price and
 * availability traces and the instance catalog.
 *
 * It reads the whole file into memory once (our files are a few MB at most)
 * and splits records in place, so a field is a pointer into that buffer and
 * a record costs no allocation. What it accepts: fields separated by commas;
 * a field may be enclosed in double quotes, and then may hold commas, line
 * breaks and doubled quotes (""), which stand for one quote; records end in
 * LF or CRLF; the last record need not end in a line break. Empty lines are
 * skipped, and a UTF-8 byte order mark at the start is ignored. Anything
 * else (a quote inside an unquoted field, text after a closing quote, an
 * unterminated quote, a NUL byte) is an error that names the line.
 */
#ifndef EBB_CSV_H
#define EBB_CSV_H

#include <stddef.h>

#include <ebb/common.h>
#include <ebb/diag.h>

struct ebb__csv {
    char *name;     /* the path, as given, for messages; owned */
    char *data;     /* the whole file, NUL-terminated; owned */
    size_t size;    /* bytes in data, without the terminator */
    size_t pos;     /* where the next record starts */
    int next_line;  /* line number at pos */
    int line;       /* line on which the current record starts (1-based) */
    char **field;   /* the current record's fields, NUL-terminated */
    size_t n_field; /* how many */
    size_t cap_field;
};

/* Reads the file at `path` into `c`, ready for ebb__csv_next(). Returns 0,
 * EBB_EIO if the file cannot be read (d says why, naming the path) or
 * EBB_ENOMEM. On failure `c` holds nothing to free; on success release it
 * with ebb__csv_close(). */
int ebb__csv_open(struct ebb__csv *c, const char *path, struct ebb_diag *d);

/* Like ebb__csv_open() for `len` bytes of `text`, which are copied; `name`
 * stands for the file name in messages. For tests and fuzzing. */
int ebb__csv_open_mem(struct ebb__csv *c, const char *name, const char *text,
                      size_t len);

/* Splits the next non-empty record into c->field / c->n_field and sets
 * c->line to the line it starts on. The fields stay valid until the next
 * call or ebb__csv_close(). Returns 1 when a record was read, 0 at the end
 * of the file, EBB_EINVAL on malformed input ("file:line: message" in d),
 * EBB_ENOMEM. */
int ebb__csv_next(struct ebb__csv *c, struct ebb_diag *d);

/* Frees what ebb__csv_open() allocated. Safe on a zeroed struct. */
void ebb__csv_close(struct ebb__csv *c);

#endif
