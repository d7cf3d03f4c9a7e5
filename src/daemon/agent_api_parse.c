/* The agent's event reports (see agent_api_parse.h). */
#include "daemon/agent_api_parse.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>

static const struct {
    const char *name;
    enum ebb__agent_kind kind;
} kinds[] = {
    {"host", EBB__AGENT_HOST},         {"started", EBB__AGENT_STARTED},
    {"heartbeat", EBB__AGENT_HEARTBEAT}, {"progress", EBB__AGENT_PROGRESS},
    {"checkpoint", EBB__AGENT_CHECKPOINT}, {"notice", EBB__AGENT_NOTICE},
    {"exited", EBB__AGENT_EXITED},
    {"checkpoint_fallback", EBB__AGENT_CHECKPOINT_FALLBACK},
    {"checkpoint_skipped", EBB__AGENT_CHECKPOINT_SKIPPED},
};

/* Bytes and milliseconds an agent measures: not negative, and below
 * what any transfer could take (a petabyte, a week). */
#define REPORT_BYTES_MAX ((int64_t)1 << 50)
#define REPORT_MS_MAX ((int64_t)7 * 24 * 3600 * 1000)

/* What one report may bring into the job's rows: a checkpoint's path is
 * a path (PATH_MAX), and so, with a few words, is why a job could not
 * start; a notice's source and a GPU's model are short names.
 * An agent on a rented host is not trusted to keep its strings small, and
 * each becomes a row of `ebb job show`. */
#define REPORT_PATH_MAX 4096
#define REPORT_NAME_MAX 256
/* A host's driver and CUDA versions ("535.104.05", "12.2"). */
#define REPORT_VERSION_MAX 63
/* A link faster than any NIC sold (3.2 Tbps is p5's EFA), in Mbps. */
#define REPORT_LINK_MBPS_MAX ((int64_t)100 * 1000 * 1000)

/* The string at `key` of `body`, NULL when absent; sets *too_long when it
 * is over `max` bytes. */
static const char *bounded(json_t *body, const char *key, size_t max, bool *too_long)
{
    json_t *v = json_object_get(body, key);
    if (json_is_string(v) && json_string_length(v) > max)
        *too_long = true;
    return json_string_value(v);
}

/* The non-negative integer at `key`, 0 when absent; sets *bad when it is
 * not one or over `max`. */
static int64_t measured(json_t *body, const char *key, int64_t max, bool *bad)
{
    json_t *v = json_object_get(body, key);
    if (v == NULL)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max) {
        *bad = true;
        return 0;
    }
    return json_integer_value(v);
}

/* A host report's versions, link and address (what a gang's nodes are
 * compared by, and where their peers reach them: docs/gangs.md). The
 * address must be an IP address, as it becomes the gang's MASTER_ADDR. */
static int host_parse(json_t *body, struct ebb__agent_report *r, const char **why)
{
    bool too_long = false, bad = false;
    r->driver_version = bounded(body, "driver_version", REPORT_VERSION_MAX, &too_long);
    r->cuda_version = bounded(body, "cuda_version", REPORT_VERSION_MAX, &too_long);
    r->addr = bounded(body, "addr", INET6_ADDRSTRLEN - 1, &too_long);
    r->link_mbps = measured(body, "link_mbps", REPORT_LINK_MBPS_MAX, &bad);
    r->port = (int)measured(body, "port", 65535, &bad);
    unsigned char ip[sizeof(struct in6_addr)];
    if (!too_long && r->addr != NULL && r->addr[0] != '\0' &&
        inet_pton(AF_INET, r->addr, ip) != 1 && inet_pton(AF_INET6, r->addr, ip) != 1)
        bad = true;
    if (too_long || bad) {
        *why = "\"driver_version\" and \"cuda_version\" are at most 63 bytes, "
               "\"addr\" an IP address, \"port\" 0..65535, \"link_mbps\" 0..10^8";
        return EBB_EINVAL;
    }
    return 0;
}

int ebb__agent_report_parse(json_t *body, struct ebb__agent_report *r,
                            const char **why)
{
    const char *kind = json_string_value(json_object_get(body, "kind"));
    *r = (struct ebb__agent_report){.fraction = -1};
    size_t i = 0;
    while (i < sizeof(kinds) / sizeof(kinds[0]) &&
           (kind == NULL || strcmp(kinds[i].name, kind) != 0))
        i++;
    if (i == sizeof(kinds) / sizeof(kinds[0])) {
        *why = "\"kind\" is missing or not a known event";
        return EBB_EINVAL;
    }
    r->kind = kinds[i].kind;
    json_t *fraction = json_object_get(body, "fraction");
    if (fraction != NULL && json_is_number(fraction))
        r->fraction = json_number_value(fraction);
    if (r->kind == EBB__AGENT_PROGRESS && r->fraction < 0) {
        *why = "progress needs \"fraction\" (0..1)";
        return EBB_EINVAL;
    }
    bool too_long = false;
    r->path = bounded(body, "path", REPORT_PATH_MAX, &too_long);
    if (r->kind == EBB__AGENT_CHECKPOINT && r->path == NULL) {
        *why = "checkpoint needs \"path\"";
        return EBB_EINVAL;
    }
    r->duration = json_integer_value(json_object_get(body, "duration_ms"));
    bool out_of_range = false;
    r->bytes = measured(body, "bytes", REPORT_BYTES_MAX, &out_of_range);
    r->upload_ms = measured(body, "upload_ms", REPORT_MS_MAX, &out_of_range);
    r->resume_id = measured(body, "resume_id", INT64_MAX, &out_of_range);
    r->download_bytes = measured(body, "download_bytes", REPORT_BYTES_MAX, &out_of_range);
    r->download_ms = measured(body, "download_ms", REPORT_MS_MAX, &out_of_range);
    if (out_of_range) {
        *why = "\"bytes\", \"upload_ms\", \"resume_id\", \"download_bytes\" and "
               "\"download_ms\" are integers from 0 (a petabyte, a week at most)";
        return EBB_EINVAL;
    }
    r->has_gpu_util = json_object_get(body, "gpu_util") != NULL;
    if (r->has_gpu_util) {
        bool bad = false;
        r->gpu_util = (int)measured(body, "gpu_util", 100, &bad);
        if (bad) {
            *why = "\"gpu_util\" is an integer percentage, 0..100";
            return EBB_EINVAL;
        }
    }
    r->deadline = json_integer_value(json_object_get(body, "deadline_ms"));
    r->reason = bounded(body, "source", REPORT_NAME_MAX, &too_long);
    if (r->kind == EBB__AGENT_CHECKPOINT_FALLBACK || r->kind == EBB__AGENT_CHECKPOINT_SKIPPED) {
        r->path = bounded(body, "name", REPORT_NAME_MAX, &too_long);
        r->reason = bounded(body, "reason", REPORT_NAME_MAX, &too_long);
        if (r->reason == NULL) {
            *why = "checkpoint_fallback and checkpoint_skipped need \"reason\"";
            return EBB_EINVAL;
        }
    }
    r->status = (int)json_integer_value(json_object_get(body, "status"));
    r->signal = (int)json_integer_value(json_object_get(body, "signal"));
    r->stopped = json_is_true(json_object_get(body, "stopped"));
    r->error = bounded(body, "error", REPORT_PATH_MAX, &too_long);
    r->nvidia_smi = json_is_true(json_object_get(body, "nvidia_smi"));
    size_t k;
    json_t *gpu;
    json_array_foreach(json_object_get(body, "gpus"), k, gpu) {
        double mem = (double)json_integer_value(json_object_get(gpu, "memory_mb")) / 1024;
        int width = (int)json_integer_value(json_object_get(gpu, "pcie_width"));
        if (r->n_gpus == 0 || mem < r->gpu_memory_gb_min)
            r->gpu_memory_gb_min = mem;
        if (width > 0 && (r->pcie_width_min == 0 || width < r->pcie_width_min))
            r->pcie_width_min = width;
        if (r->n_gpus == 0)
            r->gpu_model = bounded(gpu, "model", REPORT_NAME_MAX, &too_long);
        r->n_gpus++;
    }
    if (too_long) {
        *why = "\"path\" is longer than 4096 bytes, or \"source\", \"name\", "
               "\"reason\" or a GPU's \"model\" longer than 256";
        return EBB_EINVAL;
    }
    return r->kind == EBB__AGENT_HOST ? host_parse(body, r, why) : 0;
}
