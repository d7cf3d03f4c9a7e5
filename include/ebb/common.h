/* ebb — shared value types and error codes.
 *
 * This header is part of the plugin ABI: providers and policies may use
 * everything here. Keep it free of libuv, libcurl and sqlite types.
 */
#ifndef EBB_COMMON_H
#define EBB_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define EBB_EXTERN __attribute__((visibility("default")))
#define EBB_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define EBB_EXTERN
#define EBB_PRINTF(fmt, args)
#endif

/* 1 when the struct at `v`, a pointer to `type`, was built with field `f`:
 * its struct_size covers the field. Every struct that crosses the plugin
 * ABI starts with `uint32_t struct_size` (see provider.h). */
#define EBB_HAS(type, v, f)                                                   \
    ((size_t)(v)->struct_size >= offsetof(type, f) + sizeof((v)->f))

/* Time is milliseconds since the Unix epoch, UTC; durations likewise. */
typedef int64_t ebb_time_ms;
typedef int64_t ebb_dur_ms;

/* Money is integer micro-units of its currency (1 USD = 1000000), so sums in
 * the ledger are exact. Convert to decimal only for display. */
typedef int64_t ebb_micros;
#define EBB_MICROS_PER_UNIT INT64_C(1000000)

#define EBB_MS_PER_SECOND INT64_C(1000)
#define EBB_MS_PER_MINUTE INT64_C(60000)
#define EBB_MS_PER_HOUR INT64_C(3600000)
#define EBB_MS_PER_DAY INT64_C(86400000)

/* An amount of money with its ISO 4217 currency code ("USD", "CNY"). */
struct ebb_money {
    ebb_micros amount;
    char currency[4];
};

/* Every error ebb returns, as negative codes: EBB_ENOMEM == -1 and so on.
 * XX(NAME, message). Append only: the numbers are part of the ABI. */
#define EBB_ERRNO_MAP(XX)                                                   \
    XX(NOMEM, "out of memory")                                              \
    XX(INVAL, "invalid argument")                                           \
    XX(IO, "input/output error")                                            \
    XX(NOTFOUND, "not found")                                               \
    XX(EXISTS, "already exists")                                            \
    XX(BUSY, "resource busy")                                               \
    XX(TIMEDOUT, "timed out")                                               \
    XX(CANCELED, "canceled")                                                \
    XX(PROTO, "protocol error")                                             \
    XX(HTTP, "HTTP error")                                                  \
    XX(ABI, "plugin ABI mismatch")                                          \
    XX(CONFIG, "configuration error")                                       \
    XX(DB, "database error")                                                \
    XX(NOCAPACITY, "no capacity")                                           \
    XX(UNSUPPORTED, "not supported")                                        \
    XX(AUTH, "authentication failed")                                       \
    XX(THROTTLED, "throttled")                                              \
    XX(PERM, "permission denied")                                           \
    XX(SHUTDOWN, "shutting down")

enum ebb_errno {
    EBB_OK = 0,
#define EBB__ERRNO_ENUM(name, msg) EBB__ERRNO_SEQ_##name,
    EBB_ERRNO_MAP(EBB__ERRNO_ENUM)
#undef EBB__ERRNO_ENUM
};

#define EBB__ERRNO_NEG(name, msg) EBB_E##name = -EBB__ERRNO_SEQ_##name,
enum ebb_error_code { EBB_ERRNO_MAP(EBB__ERRNO_NEG) };
#undef EBB__ERRNO_NEG

/* The message for an EBB_E* code (or "success" for 0). Never NULL. Inline so
 * that plugins need no symbol from the host to call it. */
static inline const char *ebb_strerror(int code)
{
    switch (code) {
    case EBB_OK:
        return "success";
#define EBB__ERRNO_CASE(name, msg)                                          \
    case EBB_E##name:                                                       \
        return msg;
        EBB_ERRNO_MAP(EBB__ERRNO_CASE)
#undef EBB__ERRNO_CASE
    default:
        return "unknown error";
    }
}

/* Where a spot instance or an on-demand one is bought. */
enum ebb_market {
    EBB_MARKET_SPOT = 0,
    EBB_MARKET_ON_DEMAND = 1,
};

/* Log levels, most severe first. */
enum ebb_log_level {
    EBB_LOG_ERROR = 0,
    EBB_LOG_WARN = 1,
    EBB_LOG_INFO = 2,
    EBB_LOG_DEBUG = 3,
};

#endif
