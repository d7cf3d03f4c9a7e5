/* Internal to ckpt_upload.c (the exchange with ebbd) and ckpt_transfer.c
 * (the objects' PUTs): one upload and its transfers (see store.h). */
#ifndef EBB_AGENT_UPLOAD_INTERNAL_H
#define EBB_AGENT_UPLOAD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "agent/ckpt_seal.h"
#include "agent/jobdoc.h"
#include "io/ckpt_manifest.h"
#include "io/clock.h"
#include "io/http_client.h"

struct agent;

/* Where an upload is: walking its files, offering it (POST), waiting for
 * URLs, transferring, committing, waiting for `durable`, over. The hash
 * pass runs from the offer until it is done, beside the transfers. */
enum up_state { UP_WALKING, UP_POSTING, UP_PREPARING, UP_TRANSFER, UP_COMMITTING,
                UP_COMPLETING, UP_ENDING };

/* One PUT: a whole object or one part of it. */
struct xfer {
    struct agent_upload *u;
    size_t file;
    int number;          /* 0: the whole object in one PUT */
    uint64_t offset, length;  /* in the stored object */
    char *url;
    char etag[256];
    bool done, running;
    struct ebb__http_stream s;
    struct agent_seal_reader reader;   /* open while it runs */
    unsigned char *buf;  /* the reader's chunk, one of the upload's while it runs */
    uv_work_t work;      /* file:// */
    agent_fp *fps;       /* file://: the chunks' fingerprints, matched when done */
    uint64_t n_fps;      /* chunks read, in order (an empty plain file reads none) */
    int work_rc;
    char why[300];
};

/* One checkpoint on its way to the store. */
struct agent_upload {
    struct agent *a;      /* NULL once the agent let go of it */
    char name[EBB__CKPT_NAME_MAX + 1];  /* the loop's copy (the walk rewrites m) */
    enum up_state state;
    struct ebb__ckpt_manifest m;
    uint64_t stored_bytes;
    /* What the thread pool reads: copies, so that the agent may let go. */
    int dirfd;
    bool encrypt;
    struct ebb__ckpt_key key;
    struct agent_seal seal;
    struct ebb__ckpt_sums *sums;  /* per file, from the hash pass */
    int hash_rc;
    char hash_why[512];
    uv_work_t hash_work;
    bool periodic;
    int64_t duration_ms;
    double fraction;      /* the job's progress when it appeared; < 0: none */
    int64_t seq;
    uv_work_t work;
    int work_rc;
    char why[512];
    struct ebb__timer poll_timer;
    int64_t poll_deadline;
    /* Chunk buffers (EBB__CKPT_STREAM_MEMORY) no transfer holds: at most
     * `parallel` are ever made, each reused from part to part. */
    unsigned char *spare[AGENT_PARALLEL_MAX];
    size_t n_spare;
    struct xfer *xfers;
    size_t n_xfers, running, done;
    size_t cursor;        /* transfers before it are started or done */
    int refreshes;
    bool refresh_wanted;  /* a URL was refused: fresh ones once none is out */
    int64_t started_ms, transfer_ms, committed_ms;
    int pending;          /* callbacks still to come (HTTP, thread pool) */
};

/* ckpt_upload.c: a callback came back (true: the upload is still the
 * agent's); giving up; the commit once every transfer is done; fresh URLs
 * after a 403. */
bool agent_up_alive(struct agent_upload *u);
void agent_up_fail(struct agent_upload *u, const char *fmt, ...) EBB_PRINTF(2, 3);
/* ckpt_upload.c: gives up on a checkpoint the store cannot hold as it is,
 * with a `checkpoint_skipped` event. */
void agent_up_refuse(struct agent_upload *u, const char *why);
void agent_up_commit(struct agent_upload *u);
void agent_up_refresh(struct agent_upload *u);

/* ckpt_transfer.c: takes the `uploading` answer's URLs (the first time, or
 * fresh ones for what is left); returns 0 or EBB_EPROTO / EBB_ENOMEM with
 * `why`. */
int agent_up_take_urls(struct agent_upload *u, json_t *files, char *why, size_t len);

/* ckpt_transfer.c: what a transfer holds while it runs (its reader, its
 * chunk buffer, back among the spares, its fingerprints) is let go; safe
 * on one that holds nothing. */
void agent_xfer_release(struct xfer *x);

/* ckpt_transfer.c: starts transfers up to `parallel`; asks for fresh URLs
 * when one was refused and none is out; commits when all are done and
 * the hash pass is back. */
void agent_up_run(struct agent_upload *u);

#endif
