/* Job scripts and job documents shared by the agent tests. */
#ifndef EBB_TESTS_AGENT_JOBS_H
#define EBB_TESTS_AGENT_JOBS_H

/* Checkpoints following the protocol: into a "."-temporary, then renamed.
 * SIGUSR1 checkpoints and exits 0; SIGUSR2 checkpoints and goes on. Runs
 * STEPS steps of 50 ms (default 200), printing "step N" to stdout. */
#define JOB_CHECKPOINTS \
    "#!/bin/sh\n" \
    "n=0\n" \
    "save() {\n" \
    "  n=$((n+1)); d=\"$EBB_CHECKPOINT_DIR/.tmp-$$-$n\"\n" \
    "  mkdir \"$d\" && echo \"$i\" > \"$d/state\" && mv \"$d\" \"$EBB_CHECKPOINT_DIR/ckpt-$$-$n\"\n" \
    "}\n" \
    "trap 'save; exit 0' USR1\n" \
    "trap 'save' USR2\n" \
    "i=0\n" \
    "while [ $i -lt ${STEPS:-200} ]; do i=$((i+1)); echo \"step $i\"; sleep 0.05; done\n"

/* Ignores SIGUSR1 and leaves a child in its process group (its pid in
 * $EBB_CHECKPOINT_DIR/../child.pid). */
#define JOB_IGNORES \
    "#!/bin/sh\n" \
    "trap '' USR1\n" \
    "sleep 1000 &\n" \
    "echo $! > \"$EBB_CHECKPOINT_DIR/../child.pid\"\n" \
    "while :; do sleep 0.05; done\n"

/* On SIGUSR1 starts a checkpoint and never finishes it. */
#define JOB_HALF_WRITES \
    "#!/bin/sh\n" \
    "trap 'mkdir \"$EBB_CHECKPOINT_DIR/.tmp-half\"; echo partial > " \
    "\"$EBB_CHECKPOINT_DIR/.tmp-half/state\"' USR1\n" \
    "while :; do sleep 0.05; done\n"

/* Prints where it would resume from, and exits. */
#define JOB_PRINTS_RESUME \
    "#!/bin/sh\n" \
    "echo \"resume=[$EBB_RESUME_FROM]\"\n"

/* A job document: argv (JSON array), checkpoint fields after "dir", and
 * more top-level fields (each string starts with ", " when not empty). */
#define JOB_DOC \
    "{\"job_id\": \"j-20261130-0001\", \"instance_id\": \"local-3\", \"argv\": %s," \
    " \"shell\": %s, \"env\": {\"USER_VAR\": \"hello world\", \"STEPS\": \"%d\"}," \
    " \"workdir\": \"%s\", \"checkpoint\": {\"dir\": \"%s\"%s}," \
    " \"heartbeat_ms\": 150%s}"

#endif
