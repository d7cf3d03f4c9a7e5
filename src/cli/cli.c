#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/paths.h"
#include "base/str.h"
#include "base/yaml_doc.h"
#include "io/api_client.h"
#include "jobs/jobspec.h"
#include "jobs/schedule.h"

/* Long enough for slow store queries, short enough that a wedged daemon
 * does not hang scripts forever. */
#define CLI_TIMEOUT_MS 60000

int cli_call(struct cli *cli, const char *method, json_t *params,
             json_t **result)
{
    char *dir = ebb__state_dir_resolve(cli->state_dir_option);
    if (dir == NULL) {
        fprintf(stderr, "%s: no state directory: pass --state-dir or set "
                "EBB_STATE_DIR\n", cli->prog);
        return CLI_FAIL;
    }
    char *sock = ebb__path_join(dir, "ebb.sock");
    char err[512] = "";
    int rc = sock ? ebb__api_call(sock, method, params, CLI_TIMEOUT_MS, result,
                                  err, sizeof(err))
                  : EBB_ENOMEM;
    int code = CLI_OK;
    if (rc == EBB_ENOTFOUND || rc == EBB_EIO) {
        /* No socket, or a stale one nobody listens on. */
        fprintf(stderr, "%s: ebbd is not running for state directory %s; "
                "start it with: ebbd --state-dir %s &\n", cli->prog, dir, dir);
        code = CLI_FAIL;
    } else if (rc == EBB_EPERM) {
        fprintf(stderr, "%s: %s (ask an admin to add you to the socket's "
                "group)\n", cli->prog, err);
        code = CLI_FAIL;
    } else if (rc != 0) {
        fprintf(stderr, "%s: %s\n", cli->prog, err[0] ? err : ebb_strerror(rc));
        code = rc == 2 ? CLI_USAGE : CLI_FAIL;
    }
    free(sock);
    free(dir);
    return code;
}

void cli_print_json(json_t *value)
{
    char *text = json_dumps(value, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                  JSON_REAL_PRECISION(EBB__JSON_REAL_DIGITS));
    if (text != NULL) {
        puts(text);
        free(text);
    }
}

int cli_team_call(struct cli *cli, int argc, char **argv, const char *usage,
                  json_t **result, int *json)
{
    const char *team = NULL;
    *json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            *json = 1;
        } else if (strcmp(argv[i], "--team") == 0 && i + 1 < argc) {
            team = argv[++i];
        } else {
            fprintf(stderr, "ebb %s: unexpected argument \"%s\"\n%s", argv[0], argv[i],
                    usage);
            return CLI_USAGE;
        }
    }
    json_t *params = team != NULL ? json_pack("{s:s}", "team", team) : json_object();
    int code = cli_call(cli, argv[0], params, result);
    json_decref(params);
    return code;
}

int cli_wants_help(int argc, char **argv, const char *usage)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
    }
    return 0;
}

struct cli_table {
    size_t ncols;
    size_t nrows; /* including the header row */
    char **cells; /* nrows * ncols */
    unsigned char *right;
};

struct cli_table *cli_table_new(size_t ncols, const char *const *headers)
{
    struct cli_table *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->ncols = ncols;
    t->right = calloc(ncols, 1);
    cli_table_add(t, headers);
    return t;
}

void cli_table_right(struct cli_table *t, size_t col)
{
    if (t != NULL && t->right != NULL && col < t->ncols)
        t->right[col] = 1;
}

void cli_table_add(struct cli_table *t, const char *const *cells)
{
    if (t == NULL)
        return;
    char **grown = realloc(t->cells, (t->nrows + 1) * t->ncols * sizeof(*grown));
    if (grown == NULL)
        return;
    t->cells = grown;
    for (size_t c = 0; c < t->ncols; c++)
        grown[t->nrows * t->ncols + c] = strdup(cells[c] ? cells[c] : "");
    t->nrows++;
}

/* Display width of UTF-8 text: counts code points, not bytes, so that the
 * sparklines and currency symbols later shown in tables line up. */
static size_t text_width(const char *s)
{
    size_t w = 0;
    for (; s != NULL && *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

void cli_table_print(struct cli_table *t, FILE *out, const char *empty)
{
    if (t == NULL)
        return;
    if (t->nrows <= 1 && empty != NULL) {
        fprintf(out, "%s\n", empty);
    } else {
        size_t *width = calloc(t->ncols, sizeof(*width));
        for (size_t r = 0; width && r < t->nrows; r++)
            for (size_t c = 0; c < t->ncols; c++) {
                size_t w = text_width(t->cells[r * t->ncols + c]);
                if (w > width[c])
                    width[c] = w;
            }
        for (size_t r = 0; width && r < t->nrows; r++) {
            struct ebb_buf line = {0};
            for (size_t c = 0; c < t->ncols; c++) {
                const char *cell = t->cells[r * t->ncols + c];
                size_t pad = width[c] - text_width(cell);
                int last = c + 1 == t->ncols;
                if (t->right[c])
                    for (size_t i = 0; i < pad; i++)
                        ebb_buf_puts(&line, " ");
                ebb_buf_puts(&line, cell ? cell : "");
                if (!t->right[c] && !last)
                    for (size_t i = 0; i < pad; i++)
                        ebb_buf_puts(&line, " ");
                if (!last)
                    ebb_buf_puts(&line, "  ");
            }
            fprintf(out, "%s\n", line.data ? line.data : "");
            ebb_buf_free(&line);
        }
        free(width);
    }
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->right);
    free(t);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *grown = realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

json_t *cli_file_params(const char *what, const char *file)
{
    size_t len = 0;
    char *text = read_file(file, &len);
    if (text == NULL) {
        fprintf(stderr, "%s: cannot read %s: %s\n", what, file, strerror(errno));
        return NULL;
    }
    if (len > EBB__YAML_SPEC_MAX_BYTES) {
        fprintf(stderr, "%s: %s is %zu bytes; a job spec or schedule may be at "
                "most %u KiB\n", what, file, len, EBB__YAML_SPEC_MAX_BYTES / 1024);
        free(text);
        return NULL;
    }
    if (strlen(text) != len) {
        fprintf(stderr, "%s: %s holds a NUL byte; it should be YAML text\n",
                what, file);
        free(text);
        return NULL;
    }
    char cwd[4096];
    json_t *params = json_pack("{s:s,s:s,s:s}", "file", file, "yaml", text,
                               "workdir", getcwd(cwd, sizeof(cwd)) ? cwd : "");
    free(text);
    if (params == NULL)
        fprintf(stderr, "%s: %s is not UTF-8 text\n", what, file);
    return params;
}

int cli_check_file(const char *what, const char *file, int schedule)
{
    json_t *params = cli_file_params(what, file);
    if (params == NULL)
        return CLI_USAGE;
    const char *text = json_string_value(json_object_get(params, "yaml"));
    struct ebb_diag d = {{0}};
    int rc;
    if (schedule) {
        struct ebb__schedule s;
        rc = ebb__schedule_load_buffer(file, text, strlen(text), &s, &d);
        ebb__schedule_free(&s);
    } else {
        struct ebb__job_spec spec;
        rc = ebb__jobspec_load_buffer(file, text, strlen(text), &spec, &d);
        ebb__jobspec_free(&spec);
    }
    json_decref(params);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", what, d.msg[0] ? d.msg : ebb_strerror(rc));
        return CLI_USAGE;
    }
    printf("%s: ok\n", file);
    return CLI_OK;
}
