/* Reading what an agent sends to ebbd's checkpoint endpoints
 * (daemon_ckpt.c, docs/agent-protocol.md "Checkpoint transfer (ebbd)"),
 * apart from the HTTP server and the store so that it can be fuzzed
 * (tests/fuzz/fuzz-agent-ckpt.c).
 *
 * Every field is checked with the manifest reader's own rules
 * (io/ckpt_manifest.h: names, paths, their order, sizes within the
 * format's, stored sizes that match the plaintext's), so what ebbd
 * accepts is a checkpoint a manifest can describe, and object keys built
 * from it stay inside the job's prefix. */
#ifndef EBB_AGENT_CKPT_PARSE_H
#define EBB_AGENT_CKPT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "io/ckpt_manifest.h"
#include "objstore/objstore.h"

/* The longest ETag ebbd keeps: S3's are 34 bytes with their quotes, a
 * multipart one a few more; anything much longer is not an ETag. */
#define EBB__CKPT_ETAG_MAX 128

/* The most URLs one checkpoint's uploads need (a file's PUT or each of its
 * parts): what one GET of its state holds (about 500 bytes each) and the
 * multipart uploads ebbd creates for it stay bounded whatever sizes an
 * agent claims. 100000 parts of 64 MiB are 6.4 TB. */
#define EBB__CKPT_URLS_MAX 100000

/* What the checkpoint's store allows. */
struct ebb__ckpt_offer_rules {
    const char *job_id;
    bool encrypt;
    const char *key_id;     /* the job key's id (EBB__CKPT_KEY_ID_SIZE) */
    uint32_t key_version;
    int64_t part_size;      /* objects above it go in parts */
    bool multipart;         /* the store has multipart uploads (not file://) */
};

/* Reads POST /v1/agent/checkpoints's body ({"name", "kind", "files":
 * [{"path", "size", "stored_size"}]}) into *m (cleared first; the caller
 * frees it with ebb__ckpt_manifest_clear()); the hashes stay zero.
 * Returns 0, EBB_EINVAL with a sentence for the agent in `why`, or
 * EBB_ENOMEM. */
int ebb__agent_ckpt_offer_parse(const json_t *body,
                                const struct ebb__ckpt_offer_rules *rules,
                                struct ebb__ckpt_manifest *m, char *why,
                                size_t why_len);

/* The number of parts an object of `stored_size` bytes goes in: 0 for a
 * single PUT (at most `part_size`, or no multipart), else
 * ceil(stored_size / part_size). */
int64_t ebb__ckpt_parts_of(int64_t stored_size, int64_t part_size, bool multipart);

/* What a commit says besides the files. */
struct ebb__ckpt_commit_meta {
    int64_t upload_ms, duration_ms;
    bool periodic;
    double fraction;        /* < 0: not given */
};

/* Reads POST /v1/agent/checkpoints/SEQ/commit's body against the offered
 * checkpoint `m` (the same files in the same order with the same sizes):
 * fills each file's sha256 and stored_sha256 in `m`, and sets *etags to a
 * new JSON array with, for each file, its ETag (a string: "" when the
 * agent gave none to a file:// store) or the array of its parts' ETags
 * in part order. Returns 0, EBB_EINVAL with `why`, or EBB_ENOMEM. */
int ebb__agent_ckpt_commit_parse(const json_t *body, struct ebb__ckpt_manifest *m,
                                 int64_t part_size, bool multipart,
                                 json_t **etags, struct ebb__ckpt_commit_meta *meta,
                                 char *why, size_t why_len);

#endif
