/* Logging to stderr with a level and a UTC timestamp.
 *
 * One process-wide threshold. The timestamp is the wall clock even when the
 * engine runs on a virtual clock: log lines tell when something happened to
 * the process, not in the simulation.
 */
#ifndef EBB_LOG_H
#define EBB_LOG_H

#include <stdarg.h>

#include <ebb/common.h>

/* Lines less severe than `level` are dropped. Default: EBB_LOG_INFO. */
void ebb__log_set_level(enum ebb_log_level level);
enum ebb_log_level ebb__log_get_level(void);

/* Parses "error", "warn", "info" or "debug". Returns 0 or EBB_EINVAL. */
int ebb__log_parse_level(const char *name, enum ebb_log_level *out);
const char *ebb__log_level_name(enum ebb_log_level level);

/* Writes "2026-11-30T11:09:45.123Z INFO  [component] message\n", one line
 * however the message was made: its control characters (a newline from a
 * request's field, an escape sequence) are written as \xNN, so text from
 * outside can never forge a line of its own. `component` may be NULL. */
void ebb__log(enum ebb_log_level level, const char *component,
              const char *fmt, ...) EBB_PRINTF(3, 4);
void ebb__logv(enum ebb_log_level level, const char *component,
               const char *fmt, va_list ap) EBB_PRINTF(3, 0);

/* Copies `msg` into dst (size bytes, NUL-terminated, cut short if need be)
 * with every control character (below 0x20, and 0x7f) written as \xNN. */
void ebb__log_escape(char *dst, size_t size, const char *msg);

#define ebb__error(...) ebb__log(EBB_LOG_ERROR, NULL, __VA_ARGS__)
#define ebb__warn(...) ebb__log(EBB_LOG_WARN, NULL, __VA_ARGS__)
#define ebb__info(...) ebb__log(EBB_LOG_INFO, NULL, __VA_ARGS__)
#define ebb__debug(...) ebb__log(EBB_LOG_DEBUG, NULL, __VA_ARGS__)

#endif
