/* One stored object brought in over HTTP while it is opened
 * (ckpt_fetch.c), for ckpt_resume.c.
 *
 * The object comes as ranged GETs of AGENT_FETCH_RANGE bytes, `parallel`
 * in flight, each into a slot of a ring of parallel + 1; the opening
 * stream (agent_ckpt_unstage_file on the thread pool) reads the slots in
 * order through agent_fetch_read and frees each one it has read, which
 * lets the next GET start. Download, decryption, hashing and the disk's
 * write-back so overlap, nothing is staged on disk, and memory is the
 * ring's (parallel + 1) * AGENT_FETCH_RANGE whatever the object's size.
 * An object of at most one range is one plain GET.
 *
 * Every answer must be the range asked for of an object of the
 * manifest's size (its Content-Range; a plain GET's length), or the
 * fetch fails saying how the stored object differs. A 403 (most likely
 * an expired URL) stops new GETs; once none is out, `refused` runs, and
 * agent_fetch_url() asks again for the ranges refused with a fresh URL,
 * keeping those that arrived. Other errors have been retried by the HTTP
 * client (5xx, SlowDown, no answer) and fail the fetch.
 */
#ifndef EBB_AGENT_CKPT_FETCH_H
#define EBB_AGENT_CKPT_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ebb/common.h>

struct agent;
struct agent_fetch;

/* Bytes per ranged GET: two chunks of the format and a little. */
#define AGENT_FETCH_RANGE ((size_t)8 << 20)

struct agent_fetch_hooks {
    /* A 403 came and no GET is out: agent_fetch_url() or agent_fetch_fail(). */
    void (*refused)(void *arg);
    /* The fetch failed and its last GET out came back. */
    void (*settled)(void *arg);
    void *arg;
};

/* A fetcher of `parallel` GETs at once for agent `a`; NULL when out of
 * memory. Close it with agent_fetch_close(). */
struct agent_fetch *agent_fetch_new(struct agent *a, int parallel,
                                    const struct agent_fetch_hooks *hooks);

/* Starts fetching the `size` stored bytes of file `path` (for messages)
 * from `url`; the previous fetch must be over (no GET out, its reader
 * done). Returns 0 or EBB_ENOMEM; a GET that cannot start fails the
 * fetch. */
int agent_fetch_begin(struct agent_fetch *f, const char *path, const char *url,
                      uint64_t size);

/* A fresh URL after `refused`: the refused ranges are asked again. */
int agent_fetch_url(struct agent_fetch *f, const char *url);

/* Ends the fetch: no new GET, and the reader gets EBB_EIO. The first
 * reason given stays (agent_fetch_failure); NULL gives none. */
void agent_fetch_fail(struct agent_fetch *f, const char *fmt, ...) EBB_PRINTF(2, 3);

/* Whether a GET is out. */
bool agent_fetch_busy(const struct agent_fetch *f);

/* Why the fetch failed (a sentence naming the file), or "". */
const char *agent_fetch_failure(const struct agent_fetch *f);

/* Body bytes received for this fetch. */
uint64_t agent_fetch_bytes(const struct agent_fetch *f);

/* An ebb__ckpt_read_fn over the fetch (`arg`), for its one reader on the
 * thread pool: blocks until the next bytes are there; 0 after the last,
 * EBB_EIO once the fetch failed. */
ssize_t agent_fetch_read(void *arg, void *buf, size_t len);

/* Lets go of it: no hook runs any more; memory goes once no GET is out.
 * Its reader must be done. */
void agent_fetch_close(struct agent_fetch *f);

#endif
