/* What the host has: its GPUs as nvidia-smi reports them.
 *
 * Rental hosts (vast.ai and the like) sometimes sell a GPU behind a PCIe
 * x1 riser or with less memory than listed; ebbd compares the probe with
 * the job's requirements and may answer "release" before the job starts.
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
};

/* The command line the probe runs (after nvidia-smi's path). */
#define AGENT_NVIDIA_SMI_QUERY \
    "--query-gpu=name,memory.total,pcie.link.width.current,pcie.link.gen.current"

/* Parses nvidia-smi's "csv,noheader,nounits" output, one GPU a line:
 * "Tesla V100-SXM2-16GB, 16160, 16, 3". Returns the number of GPUs read
 * (at most `max`), or EBB_EINVAL when a line does not have four fields. */
int agent_hostprobe_parse(const char *csv, struct agent_gpu *gpus, size_t max);

/* The probe's outcome: `have_smi` false when nvidia-smi is not on PATH;
 * `ok` false when it ran but failed (its message is in the log). */
typedef void (*agent_hostprobe_cb)(void *arg, bool have_smi, bool ok,
                                   const struct agent_gpu *gpus, size_t n);

#define AGENT_MAX_GPUS 64

/* Runs nvidia-smi (found on PATH) on `loop`, bounded by `timeout_ms`, and
 * calls `cb` once when it is done and its handles are closed (also from a
 * later loop turn when nvidia-smi is absent). Returns 0 or EBB_ENOMEM. */
int agent_hostprobe_start(uv_loop_t *loop, int64_t timeout_ms,
                          agent_hostprobe_cb cb, void *arg);

#endif
