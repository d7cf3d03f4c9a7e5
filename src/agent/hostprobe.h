/* What the host has: its GPUs, driver and CUDA versions as nvidia-smi
 * reports them.
 *
 * Rental hosts (vast.ai and the like) sometimes sell a GPU behind a PCIe
 * x1 riser or with less memory than listed; ebbd compares the probe with
 * the job's requirements and may answer "release" before the job starts.
 * The nodes of a gang must also match one another (driver, CUDA).
 */
#ifndef EBB_AGENT_HOSTPROBE_H
#define EBB_AGENT_HOSTPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct agent_gpu {
    char model[128];
    int64_t memory_mb;   /* 0 when nvidia-smi said "[N/A]" */
    int pcie_width;      /* lanes, 0 when unknown */
    int pcie_gen;        /* 0 when unknown */
    char driver[64];     /* driver version, "" when unknown */
};

/* The command line the probe runs (after nvidia-smi's path). */
#define AGENT_NVIDIA_SMI_QUERY \
    "--query-gpu=name,memory.total,pcie.link.width.current,pcie.link.gen.current," \
    "driver_version"

/* Parses nvidia-smi's "csv,noheader,nounits" output, one GPU a line:
 * "Tesla V100-SXM2-16GB, 16160, 16, 3, 535.104.05". Returns the number of
 * GPUs read (at most `max`), or EBB_EINVAL when a line does not have five
 * fields. */
int agent_hostprobe_parse(const char *csv, struct agent_gpu *gpus, size_t max);

/* The CUDA version in plain nvidia-smi's header ("... CUDA Version: 12.2
 * |") into `out`: digits and dots, "" when there is none. */
void agent_hostprobe_cuda(const char *text, char *out, size_t size);

#define AGENT_MAX_GPUS 64

/* The probe's outcome: `have_smi` false when nvidia-smi is not on PATH;
 * `ok` false when it ran but failed (its message is in the log). */
struct agent_host {
    bool have_smi, ok;
    struct agent_gpu gpus[AGENT_MAX_GPUS];
    size_t n;
    char cuda[32];       /* "12.2", "" when unknown */
};
typedef void (*agent_hostprobe_cb)(void *arg, const struct agent_host *host);

/* Runs nvidia-smi (found on PATH) on `loop`: its GPU query, then, when
 * that worked, plain nvidia-smi for the CUDA version in its header, each
 * bounded by `timeout_ms`. Calls `cb` once when it is done and its
 * handles are closed (also from a later loop turn when nvidia-smi is
 * absent). Returns 0 or EBB_ENOMEM. */
int agent_hostprobe_start(uv_loop_t *loop, int64_t timeout_ms,
                          agent_hostprobe_cb cb, void *arg);

#endif
