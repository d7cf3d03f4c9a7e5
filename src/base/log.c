#include "base/log.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static enum ebb_log_level threshold = EBB_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void ebb__log_set_level(enum ebb_log_level level)
{
    threshold = level;
}

enum ebb_log_level ebb__log_get_level(void)
{
    return threshold;
}

int ebb__log_parse_level(const char *name, enum ebb_log_level *out)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (enum ebb_log_level)i;
            return 0;
        }
    }
    return EBB_EINVAL;
}

const char *ebb__log_level_name(enum ebb_log_level level)
{
    if ((unsigned)level < sizeof(level_names) / sizeof(level_names[0]))
        return level_names[level];
    return "?";
}

void ebb__log_escape(char *dst, size_t size, const char *msg)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p != '\0'; p++) {
        int control = *p < 0x20 || *p == 0x7f;
        size_t need = control ? 4 : 1;
        if (n + need >= size)
            break;
        if (control) {
            dst[n++] = '\\';
            dst[n++] = 'x';
            dst[n++] = hex[*p >> 4];
            dst[n++] = hex[*p & 0xf];
        } else {
            dst[n++] = (char)*p;
        }
    }
    if (size > 0)
        dst[n] = '\0';
}

void ebb__logv(enum ebb_log_level level, const char *component,
               const char *fmt, va_list ap)
{
    if (level > threshold)
        return;

    /* Log timestamps are wall-clock process time, not engine time, so this
     * is the one place besides the clock module that reads the time. */
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);

    char msg[2048];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    char line[4096];
    int n = snprintf(line, sizeof(line), "%s.%03ldZ %-5s ", when,
                     (long)(tv.tv_usec / 1000), ebb__log_level_name(level));
    if (component != NULL && n >= 0 && (size_t)n < sizeof(line))
        n += snprintf(line + n, sizeof(line) - (size_t)n, "[%s] ", component);
    if (n >= 0 && (size_t)n < sizeof(line))
        ebb__log_escape(line + n, sizeof(line) - (size_t)n, msg);
    /* One fputs per line keeps lines whole when several processes share
     * the terminal. */
    size_t len = strlen(line);
    if (len > 0 && line[len - 1] != '\n' && len + 1 < sizeof(line)) {
        line[len] = '\n';
        line[len + 1] = '\0';
    }
    fputs(line, stderr);
}

void ebb__log(enum ebb_log_level level, const char *component,
              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ebb__logv(level, component, fmt, ap);
    va_end(ap);
}
