/* Fuzz target: job specs (jobs/jobspec*.c), as ebbd reads the YAML that
 * `ebb submit` sends, as `ebb backtest` reads a workload, and as ebbd reads
 * a spec back from its store (JSON).
 *
 * Invariants: a failure says why and leaves the spec zeroed; a spec read
 * from YAML survives the store's round trip: to JSON, back, and to JSON
 * again gives the same JSON; an input that is a JSON object goes to the
 * JSON reader too, and what it accepts round-trips the same way. */
#include <jansson.h>

#include "fuzz.h"
#include "jobs/jobspec.h"

static int zeroed(const struct ebb__job_spec *s)
{
    static const struct ebb__job_spec zero;
    return memcmp(s, &zero, sizeof(zero)) == 0;
}

/* to_json(spec) == to_json(from_json(to_json(spec))). */
static void check_round_trip(const struct ebb__job_spec *spec)
{
    json_t *j = ebb__jobspec_to_json(spec);
    FUZZ_CHECK(j != NULL);
    struct ebb__job_spec again;
    struct ebb_diag d;
    ebb_diag_clear(&d);
    if (ebb__jobspec_from_json(j, &again, &d) != 0) {
        fprintf(stderr, "stored spec refused: %s\n", d.msg);
        FUZZ_CHECK(!"a spec the reader accepted comes back from the store");
    }
    json_t *j2 = ebb__jobspec_to_json(&again);
    FUZZ_CHECK(j2 != NULL);
    FUZZ_CHECK(json_equal(j, j2));
    json_decref(j2);
    json_decref(j);
    ebb__jobspec_free(&again);
}

static void check_yaml(const uint8_t *data, size_t size)
{
    struct ebb__job_spec spec;
    struct ebb_diag d;
    ebb_diag_clear(&d);
    if (ebb__jobspec_load_buffer("job.yaml", (const char *)data, size, &spec,
                                 &d) != 0) {
        FUZZ_CHECK(d.msg[0] != '\0' && zeroed(&spec));
        return;
    }
    FUZZ_CHECK(spec.argc >= 1 && spec.argv[spec.argc] == NULL);
    FUZZ_CHECK(spec.work > 0);
    check_round_trip(&spec);
    ebb__jobspec_free(&spec);
    FUZZ_CHECK(zeroed(&spec));
}

static void check_workload(const uint8_t *data, size_t size)
{
    struct ebb__workload *w;
    struct ebb_diag d;
    ebb_diag_clear(&d);
    if (ebb__workload_load_buffer("workload.yaml", (const char *)data, size,
                                  &w, &d) != 0) {
        FUZZ_CHECK(w == NULL && d.msg[0] != '\0');
        return;
    }
    for (size_t i = 0; i < w->n; i++) {
        FUZZ_CHECK(w->jobs[i].has_submit);
        check_round_trip(&w->jobs[i]);
    }
    ebb__workload_free(w);
}

static void check_json(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, 0, NULL);
    if (j == NULL)
        return;
    struct ebb__job_spec spec;
    struct ebb_diag d;
    ebb_diag_clear(&d);
    if (ebb__jobspec_from_json(j, &spec, &d) == 0) {
        check_round_trip(&spec);
        ebb__jobspec_free(&spec);
    } else {
        FUZZ_CHECK(d.msg[0] != '\0' && zeroed(&spec));
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_yaml(data, size);
    check_workload(data, size);
    check_json(data, size);
    return 0;
}
