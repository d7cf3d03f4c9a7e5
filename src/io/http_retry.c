/* The HTTP client's policy, apart from its plumbing: which failures are
 * retried, how long to wait (Retry-After), how curl's errors map to ebb's,
 * and what of a URL may be logged. Pure functions, tested directly. */
#include "io/http_retry.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <ebb/backoff.h>
#include "io/http_client.h"

/* Finds header `name` in a raw header block; the value is trimmed of
 * surrounding blanks and is not NUL-terminated. */
static bool find_header(const char *block, const char *name, const char **val,
                        size_t *val_len)
{
    size_t name_len = strlen(name);
    const char *line = block;
    while (*line != '\0') {
        const char *eol = strchr(line, '\n');
        const char *end = eol ? eol : line + strlen(line);
        if ((size_t)(end - line) > name_len &&
            strncasecmp(line, name, name_len) == 0 && line[name_len] == ':') {
            const char *v = line + name_len + 1;
            while (v < end && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = end;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            *val = v;
            *val_len = (size_t)(ve - v);
            return true;
        }
        if (eol == NULL)
            break;
        line = eol + 1;
    }
    return false;
}

int ebb__http_header(const char *block, const char *name, char *out, size_t size)
{
    const char *v;
    size_t n;
    if (block == NULL || !find_header(block, name, &v, &n))
        return EBB_ENOTFOUND;
    if (n >= size)
        return EBB_EPROTO;
    memcpy(out, v, n);
    out[n] = '\0';
    return 0;
}

/* curl_getdate() parses every date format HTTP allows. */
static bool header_date(const char *block, const char *name, time_t *out)
{
    char tmp[128];
    if (ebb__http_header(block, name, tmp, sizeof(tmp)) != 0 || tmp[0] == '\0')
        return false;
    *out = curl_getdate(tmp, NULL);
    return *out != -1;
}

int ebb__http_header_time(const char *block, const char *name, ebb_time_ms *out)
{
    time_t t;
    if (block == NULL || !header_date(block, name, &t))
        return EBB_ENOTFOUND;
    *out = (ebb_time_ms)t * 1000;
    return 0;
}

int ebb__http_parse_retry_after(const char *headers, ebb_dur_ms *out)
{
    const char *v;
    size_t n;
    if (headers == NULL || !find_header(headers, "Retry-After", &v, &n) || n == 0)
        return EBB_ENOTFOUND;

    const ebb_dur_ms cap_s = EBB__HTTP_RETRY_AFTER_CAP_MS / EBB_MS_PER_SECOND;
    if (v[0] >= '0' && v[0] <= '9') {
        ebb_dur_ms secs = 0;
        for (size_t i = 0; i < n; i++) {
            if (v[i] < '0' || v[i] > '9')
                return EBB_ENOTFOUND;
            if (secs <= cap_s)
                secs = secs * 10 + (v[i] - '0');
        }
        *out = (secs > cap_s ? cap_s : secs) * EBB_MS_PER_SECOND;
        return 0;
    }

    /* An HTTP-date. Measuring it against the response's own Date header
     * keeps this free of the local clock and immune to clock skew; RFC 9110
     * has every origin server with a clock send Date. */
    time_t when, date;
    if (!header_date(headers, "Retry-After", &when) ||
        !header_date(headers, "Date", &date))
        return EBB_ENOTFOUND;
    ebb_dur_ms secs = when > date ? (ebb_dur_ms)(when - date) : 0;
    *out = (secs > cap_s ? cap_s : secs) * EBB_MS_PER_SECOND;
    return 0;
}

/* URLs may carry credentials (user:pass@) or API keys in the query string
 * (some marketplaces want them there), so logs get scheme, host and path
 * only. */
void ebb__http_loggable_url(const char *url, char *out, size_t size)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    size_t authority = strcspn(host, "/?#");
    const char *at = memchr(host, '@', authority);
    size_t scheme_len = (size_t)(host - url);
    const char *rest = at ? at + 1 : host;
    size_t rest_len = strcspn(rest, "?#");
    snprintf(out, size, "%.*s%.*s", (int)scheme_len, url, (int)rest_len, rest);
}

int ebb__http_error_of(CURLcode c)
{
    switch (c) {
    case CURLE_OPERATION_TIMEDOUT:
        return EBB_ETIMEDOUT;
    case CURLE_OUT_OF_MEMORY:
        return EBB_ENOMEM;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return EBB_EINVAL;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_TOO_MANY_REDIRECTS:
        return EBB_EPROTO;
    default:
        return EBB_EIO;
    }
}

/* Only failures where the request surely or very likely never reached the
 * server's application logic, or where the server asked us to come back,
 * are retried; anything else would risk doing a non-idempotent call twice
 * for no gain. Timeouts are the exception the callers accept: provider
 * calls carry idempotency tokens. */
bool ebb__http_retryable(CURLcode c, long status)
{
    switch (c) {
    case CURLE_OK:
        return status >= 500 || status == 429;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
        return true;
    default:
        return false;
    }
}


bool ebb__http_should_retry(CURLcode c, long status,
                            const struct ebb_http_response *res,
                            ebb_http_classify_fn classify, void *arg)
{
    int verdict = classify != NULL ? classify(arg, res) : -1;
    if (verdict >= 0)
        return verdict > 0;
    return ebb__http_retryable(c, status);
}

ebb_dur_ms ebb__http_retry_delay(ebb_dur_ms base, ebb_dur_ms cap, int attempts_done,
                                 uint64_t rnd)
{
    ebb_dur_ms ceiling =
        ebb_backoff_after(base, cap, attempts_done > 0 ? (unsigned)attempts_done : 0);
    if (ceiling <= 0)
        return 0;
    return (ebb_dur_ms)(rnd % ((uint64_t)ceiling + 1));
}
