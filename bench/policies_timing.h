/* bench-policies --timing: price-timing capture per trace family
 * (bench/policies_timing.c). */
#ifndef EBB_BENCH_POLICIES_TIMING_H
#define EBB_BENCH_POLICIES_TIMING_H

/* Runs the harness with the command line after `--timing`; prints
 * figures. Returns 0, 1 when a run fails, 2 for bad usage. */
int bench_timing_main(int argc, char **argv);

#endif
