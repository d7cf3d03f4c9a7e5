/* bench-spec-parse: how long ebbd's loop spends on one job spec, the
 * worst a user can send within ebb__ylimits_spec (base/yaml_doc.h: 256 KiB,
 * 20000 nodes, 1000 entries per mapping or list, 16 levels), and how fast it refuses
 * what is over them (#15 finding 4: a 1.1 MB spec with 80,000 env keys
 * held the loop for 221 s).
 *
 * Each case is parsed the way ebbd's submit parses it
 * (ebb__jobspec_load_buffer: YAML tree, limits, duplicate keys, the
 * spec's own checks) and, as the baseline, by libyaml's event parser
 * alone over the same bytes (no tree, no checks: the least any YAML
 * reader must spend). The best of several runs is printed in ms with the
 * ratio. Figures only; nothing passes or fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaml.h>

#include <ebb/buf.h>
#include "base/yaml_doc.h"
#include "jobs/jobspec.h"

#define RUNS 7

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char head[] = "name: big\nrun: [python3, train.py]\nwork: 1h\n"
                           "deadline: 12h\nmarket: spot\n";

/* `n` env keys, each value `value_len` bytes. */
static void env_spec(struct ebb_buf *b, size_t n, size_t value_len)
{
    ebb_buf_append(b, head, strlen(head));
    ebb_buf_append(b, "env:\n", 5);
    char *value = malloc(value_len + 1);
    memset(value, 'v', value_len);
    value[value_len] = '\0';
    for (size_t i = 0; i < n; i++)
        ebb_buf_printf(b, "  K%zu: %s\n", i, value);
    free(value);
}

/* `n` one-letter items in each of the spec's lists (run, and the four in
 * resources): the most nodes per byte. */
static void list_spec(struct ebb_buf *b, size_t n)
{
    static const char *const lists[] = {"run", "resources:\n  instance_types",
                                        "  zones", "  regions", "  providers"};
    ebb_buf_puts(b, "name: big\nwork: 1h\ndeadline: 12h\n");
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        ebb_buf_printf(b, "%s: [", lists[l]);
        for (size_t i = 0; i < n; i++)
            ebb_buf_append(b, i == 0 ? "a" : ",a", i == 0 ? 1 : 2);
        ebb_buf_append(b, "]\n", 2);
    }
}

/* Under a key the spec does not know (refused only once the tree is
 * built): `lists` flow lists of 999 items, as many nodes as the limits
 * allow. */
static void nodes_spec(struct ebb_buf *b, size_t lists)
{
    ebb_buf_puts(b, "name: big\nwork: 1h\ndeadline: 12h\nrun: [a]\nextra:\n");
    for (size_t l = 0; l < lists; l++) {
        ebb_buf_printf(b, "  l%zu: [", l);
        for (size_t i = 0; i < 999; i++)
            ebb_buf_append(b, i == 0 ? "a" : ",a", i == 0 ? 1 : 2);
        ebb_buf_append(b, "]\n", 2);
    }
}

/* One double-quoted argument of escapes, close to 256 KiB. */
static void escaped_spec(struct ebb_buf *b)
{
    ebb_buf_puts(b, "name: big\nwork: 1h\ndeadline: 12h\nrun: [\"");
    for (size_t i = 0; i < 43000; i++)
        ebb_buf_puts(b, "\\u00e9");
    ebb_buf_puts(b, "\"]\n");
}

/* libyaml's events only, the baseline. */
static void events_only(const char *text, size_t len)
{
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    for (int done = 0; !done;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev))
            break;
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
}

static double best_spec(const char *text, size_t len, char *msg, size_t msg_size)
{
    double best = 1e30;
    for (int r = 0; r < RUNS; r++) {
        struct ebb__job_spec spec;
        struct ebb_diag d = {{0}};
        double t0 = now_ms();
        int rc = ebb__jobspec_load_buffer("job.yaml", text, len, &spec, &d);
        double t = now_ms() - t0;
        if (rc == 0)
            ebb__jobspec_free(&spec);
        snprintf(msg, msg_size, "%s", rc == 0 ? "accepted" : d.msg);
        best = t < best ? t : best;
    }
    return best;
}

static double best_events(const char *text, size_t len)
{
    double best = 1e30;
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_ms();
        events_only(text, len);
        double t = now_ms() - t0;
        best = t < best ? t : best;
    }
    return best;
}

static void run_case(const char *label, struct ebb_buf *b)
{
    char msg[sizeof(((struct ebb_diag *)0)->msg)];
    double spec = best_spec(b->data, b->len, msg, sizeof(msg));
    double events = best_events(b->data, b->len);
    printf("%-34s %8zu B  spec %8.3f ms  libyaml events %8.3f ms  ratio %6.2f\n"
           "    %s\n",
           label, b->len, spec, events, events > 0 ? spec / events : 0.0, msg);
    ebb_buf_free(b);
}

int main(void)
{
    struct ebb_buf b = {0};
    printf("best of %d runs; the spec's time is what ebbd's loop spends\n", RUNS);

    env_spec(&b, 1000, 240);
    run_case("1000 env keys, 240 B values", &b);
    env_spec(&b, 1000, 20);
    run_case("1000 env keys, 20 B values", &b);
    list_spec(&b, 1000);
    run_case("5 lists of 1000 items", &b);
    nodes_spec(&b, 20);
    run_case("19,990 nodes under an unknown key", &b);
    escaped_spec(&b);
    run_case("one 252 KiB argument of \\u escapes", &b);

    env_spec(&b, 1001, 20);
    run_case("refused: 1001 env keys", &b);
    list_spec(&b, 1001);
    run_case("refused: 5 lists of 1001 items", &b);
    env_spec(&b, 80000, 4);
    run_case("refused: 80,000 env keys (1.1 MB)", &b);

    /* The duplicate check itself, on the unbounded reader ebb.yaml uses:
     * 80,000 keys, once O(n^2) (221 s), now sorted. */
    env_spec(&b, 80000, 4);
    double best = 1e30;
    for (int r = 0; r < RUNS; r++) {
        struct ebb__ydoc *doc = NULL;
        struct ebb_diag d = {{0}};
        double t0 = now_ms();
        ebb__ydoc_load_buffer("job.yaml", b.data, b.len, &doc, &d);
        double t = now_ms() - t0;
        ebb__ydoc_free(doc);
        best = t < best ? t : best;
    }
    double events = best_events(b.data, b.len);
    printf("%-34s %8zu B  tree %8.3f ms  libyaml events %8.3f ms  ratio %6.2f\n",
           "unbounded tree, 80,000 keys", b.len, best, events, best / events);
    ebb_buf_free(&b);
    return 0;
}
