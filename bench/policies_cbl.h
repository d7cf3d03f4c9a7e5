/* bench-policies --cbl: the Can't-Be-Late harness (bench/policies_cbl.c). */
#ifndef EBB_BENCH_POLICIES_CBL_H
#define EBB_BENCH_POLICIES_CBL_H

/* Runs the harness with the command line after `--cbl`; prints figures.
 * Returns 0, 1 when a run fails, 2 for bad usage. */
int bench_cbl_main(int argc, char **argv);

#endif
