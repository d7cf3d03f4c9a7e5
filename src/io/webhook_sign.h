/* Webhook signatures (docs/notify.md), Stripe's scheme: the header
 * Ebb-Signature: v1=<hex HMAC-SHA256 with the channel's secret over
 * "<timestamp>.<body>">, where <timestamp> is the Ebb-Timestamp header,
 * the wall clock's unix seconds when the attempt was sent. Receivers
 * recompute it and reject stale timestamps. */
#ifndef EBB_IO_WEBHOOK_SIGN_H
#define EBB_IO_WEBHOOK_SIGN_H

#include <stddef.h>
#include <stdint.h>

/* "v1=" + 64 hex digits + NUL. */
#define EBB__WEBHOOK_SIG_SIZE 68

/* Writes the Ebb-Signature value for `body` (`body_len` bytes) sent at
 * unix second `timestamp`, signed with the `secret_len` bytes at `secret`,
 * into `out`. Returns 0, or EBB_EINVAL (no secret), EBB_ENOMEM or EBB_EIO (libcrypto
 * failed), leaving `out` "". */
int ebb__webhook_signature(const void *secret, size_t secret_len,
                           int64_t timestamp, const void *body, size_t body_len,
                           char out[EBB__WEBHOOK_SIG_SIZE]);

#endif
