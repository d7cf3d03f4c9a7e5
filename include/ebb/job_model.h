/* ebb — the job as a model, for providers that simulate the job instead of
 * running it (the sim provider of `ebb backtest`).
 *
 * Why a separate struct: a real provider starts a machine and the job on it
 * reports its own progress, so how much work is left, how fast the machine
 * is and how the job checkpoints mean nothing to it. Only a provider that
 * plays the job out on a virtual clock needs them. Keeping them out of
 * struct ebb_launch keeps the launch what every provider must understand,
 * and lets this model grow for the simulator without touching the launch.
 *
 * ebbd fills one for every launch (struct ebb_launch.model) and sets
 * struct_size to its own sizeof; the reader follows the rules of
 * provider.h (refuse less than EBB_JOB_MODEL_SIZE_V1, read appended fields
 * only when struct_size covers them).
 */
#ifndef EBB_JOB_MODEL_H
#define EBB_JOB_MODEL_H

#include "common.h"

struct ebb_job_model {
    uint32_t struct_size;        /* sizeof(struct ebb_job_model) in ebbd */
    /* Reference work left since the checkpoint the launch resumes from. */
    ebb_dur_ms work_remaining;
    double speed;                /* reference work per wall time here */
    ebb_dur_ms restart_overhead; /* lost at start before work begins */
    ebb_dur_ms checkpoint_every; /* 0: no periodic checkpoints */
    ebb_dur_ms checkpoint_grace; /* how long a checkpoint may take */
};

#define EBB_JOB_MODEL_SIZE_V1                                                 \
    (offsetof(struct ebb_job_model, checkpoint_grace) + sizeof(ebb_dur_ms))

#endif
