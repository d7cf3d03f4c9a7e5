/* Fuzz target: the JSON of the agent protocol (docs/agent-protocol.md) on
 * both ends. ebbd reads reports (POST /v1/agent/events) with
 * ebb__agent_report_parse() (daemon/agent_api_parse.c), on a listener that
 * faces the network; ebb-agent reads the job document (GET /v1/agent/job)
 * with agent_jobdoc_parse() (agent/jobdoc.c). Every input goes to both, the
 * report after the same json_loadb() and object check agent_api.c does.
 *
 * Invariants: a refused report says why; an accepted one has a known kind,
 * progress has a fraction, a checkpoint a path, and one GPU is counted per
 * element of "gpus", and its path is at most 4096 bytes, its source and
 * GPU model at most 256 (#16 point 11). A refused job document says why; an accepted one has
 * an argv of at least one string, NULL-terminated argv and env of
 * NAME=value strings, a checkpoint dir, keep >= 1 and both signals. */
#include <string.h>

#include <jansson.h>

#include "agent/jobdoc.h"
#include "daemon/agent_api_parse.h"
#include "fuzz.h"

static void check_report(const uint8_t *data, size_t size)
{
    json_t *body = json_loadb((const char *)data, size, 0, NULL);
    if (!json_is_object(body)) {
        json_decref(body);
        return;
    }
    struct ebb__agent_report r;
    const char *why = NULL;
    if (ebb__agent_report_parse(body, &r, &why) != 0) {
        FUZZ_CHECK(why != NULL && why[0] != '\0');
    } else {
        FUZZ_CHECK(r.kind >= EBB__AGENT_HOST &&
                   r.kind <= EBB__AGENT_CHECKPOINT_SKIPPED);
        FUZZ_CHECK(r.bytes >= 0 && r.upload_ms >= 0 && r.resume_id >= 0 &&
                   r.download_bytes >= 0 && r.download_ms >= 0);
        if (r.kind == EBB__AGENT_CHECKPOINT_FALLBACK ||
            r.kind == EBB__AGENT_CHECKPOINT_SKIPPED)
            FUZZ_CHECK(r.reason != NULL);
        if (r.kind == EBB__AGENT_PROGRESS)
            FUZZ_CHECK(r.fraction >= 0);
        if (r.kind == EBB__AGENT_CHECKPOINT)
            FUZZ_CHECK(r.path != NULL);
        /* What a report brings into the job's rows is bounded. */
        FUZZ_CHECK(r.path == NULL || strlen(r.path) <= 4096);
        FUZZ_CHECK(r.reason == NULL || strlen(r.reason) <= 256);
        FUZZ_CHECK(r.gpu_model == NULL || strlen(r.gpu_model) <= 256);
        json_t *gpus = json_object_get(body, "gpus");
        FUZZ_CHECK(r.n_gpus == (json_is_array(gpus) ? json_array_size(gpus)
                                                     : 0));
        FUZZ_CHECK(r.pcie_width_min >= 0);
    }
    json_decref(body);
}

static void check_strv(char **v, int need_eq)
{
    FUZZ_CHECK(v != NULL);
    for (size_t i = 0; v[i] != NULL; i++)
        FUZZ_CHECK(!need_eq || strchr(v[i], '=') != NULL);
}

static void check_jobdoc(const uint8_t *data, size_t size)
{
    struct agent_jobdoc doc;
    char err[256];
    err[0] = '\0';
    if (agent_jobdoc_parse((const char *)data, size, &doc, err,
                           sizeof(err)) != 0) {
        FUZZ_CHECK(err[0] != '\0');
    } else {
        check_strv(doc.argv, 0);
        FUZZ_CHECK(doc.argv[0] != NULL);
        check_strv(doc.env, 1);
        FUZZ_CHECK(doc.ckpt_dir != NULL && doc.ckpt_dir[0] != '\0');
        FUZZ_CHECK(doc.keep >= 1);
        FUZZ_CHECK(doc.signal != 0 && doc.periodic_signal != 0);
    }
    agent_jobdoc_free(&doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_report(data, size);
    check_jobdoc(data, size);
    return 0;
}
