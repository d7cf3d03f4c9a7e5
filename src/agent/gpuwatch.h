/* GPU utilisation while the job runs: nvidia-smi sampled once a heartbeat,
 * the mean over the host's GPUs sent with the next heartbeat as
 * `gpu_util` (docs/agent-protocol.md), for ebbd's GPU guard (docs/agent.md
 * "Stall guard"). Off on a host where the probe found no GPU. */
#ifndef EBB_AGENT_GPUWATCH_H
#define EBB_AGENT_GPUWATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

/* The command line a sample runs (after nvidia-smi's path). */
#define AGENT_NVIDIA_SMI_UTIL_QUERY "--query-gpu=utilization.gpu"

struct agent_gpuwatch {
    uv_loop_t *loop;
    char *path;       /* nvidia-smi's; NULL: off */
    bool sampling;    /* a run is out */
    int latest;       /* the last sample's mean %; -1: none since taken */
};

/* Parses the sample's "csv,noheader,nounits" output, one GPU a line
 * ("87"). Returns the mean over the GPUs that gave a number 0..100,
 * rounded, or -1 when none did ("[N/A]", "[Not Supported]", garbage). */
int agent_gpuwatch_parse(const char *csv);

/* Off, until agent_gpuwatch_enable. */
void agent_gpuwatch_init(struct agent_gpuwatch *w, uv_loop_t *loop);
/* Turns sampling on where nvidia-smi is on PATH (the probe found GPUs). */
void agent_gpuwatch_enable(struct agent_gpuwatch *w);
/* The latest sample (-1: none since the last call), and starts the next
 * unless one is out. */
int agent_gpuwatch_take(struct agent_gpuwatch *w);
/* Frees what it holds (after the loop has run to its end). */
void agent_gpuwatch_free(struct agent_gpuwatch *w);

#endif
