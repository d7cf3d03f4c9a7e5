#include "io/api_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/str.h"
#include "io/api_server.h"

static int connect_socket(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (ebb__strlcpy(addr.sun_path, path, sizeof(addr.sun_path))) {
        snprintf(err, errlen, "socket path too long: %s", path);
        return EBB_EINVAL;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return EBB_EIO;
    }
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        int e = errno;
        close(fd);
        snprintf(err, errlen, "cannot connect to %s: %s", path, strerror(e));
        return e == ENOENT ? EBB_ENOTFOUND : e == EACCES ? EBB_EPERM : EBB_EIO;
    }
    return fd;
}

static int send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads until the first newline. Returns 0 with the line in *buf. */
static int read_line(int fd, int timeout_ms, struct ebb_buf *buf, char *err,
                     size_t errlen)
{
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int ready = poll(&pfd, 1, timeout_ms);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0) {
            snprintf(err, errlen, "ebbd did not answer within %d s",
                     timeout_ms / 1000);
            return EBB_ETIMEDOUT;
        }
        char chunk[65536];
        ssize_t n = ready < 0 ? -1 : recv(fd, chunk, sizeof(chunk), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "ebbd closed the connection without answering");
            return EBB_EIO;
        }
        char *nl = memchr(chunk, '\n', (size_t)n);
        ebb_buf_append(buf, chunk, nl ? (size_t)(nl - chunk) : (size_t)n);
        if (buf->failed || buf->len > EBB__API_MAX_MESSAGE) {
            /* Not EBB_EIO: ebbd is running, its answer is what failed. */
            snprintf(err, errlen, "answer too large: more than the %u MiB an answer "
                     "may hold", EBB__API_MAX_MESSAGE >> 20);
            return EBB_EPROTO;
        }
        if (nl != NULL)
            return 0;
    }
}

int ebb__api_call(const char *socket_path, const char *method,
                  json_t *params, int timeout_ms, json_t **result,
                  char *err, size_t errlen)
{
    *result = NULL;
    int fd = connect_socket(socket_path, err, errlen);
    if (fd < 0)
        return fd;
    json_t *req = json_pack("{s:i,s:s,s:o}", "id", 1, "method", method,
                            "params", params ? json_incref(params) : json_object());
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    struct ebb_buf line = {0};
    int rc = 0;
    if (text == NULL) {
        rc = EBB_ENOMEM;
    } else {
        struct ebb_buf out = {0};
        ebb_buf_puts(&out, text);
        ebb_buf_puts(&out, "\n");
        free(text);
        if (out.failed || send_all(fd, out.data, out.len) != 0) {
            snprintf(err, errlen, "cannot send to ebbd: %s", strerror(errno));
            rc = EBB_EIO;
        }
        ebb_buf_free(&out);
    }
    if (rc == 0)
        rc = read_line(fd, timeout_ms, &line, err, errlen);
    close(fd);
    if (rc != 0) {
        ebb_buf_free(&line);
        return rc;
    }
    json_error_t jerr;
    json_t *answer = json_loadb(line.data ? line.data : "", line.len, 0, &jerr);
    ebb_buf_free(&line);
    if (answer == NULL) {
        snprintf(err, errlen, "ebbd sent invalid JSON: %s", jerr.text);
        return EBB_EPROTO;
    }
    json_t *error = json_object_get(answer, "error");
    if (error != NULL) {
        const char *msg = json_string_value(json_object_get(error, "message"));
        const char *code = json_string_value(json_object_get(error, "code"));
        int bad_input = code != NULL && (strcmp(code, "invalid") == 0 ||
                                         strcmp(code, "bad_request") == 0);
        snprintf(err, errlen, "%s", msg ? msg : "ebbd reported an error");
        json_decref(answer);
        return bad_input ? 2 : 1;
    }
    *result = json_incref(json_object_get(answer, "result"));
    json_decref(answer);
    if (*result == NULL) {
        snprintf(err, errlen, "ebbd's answer has no result");
        return EBB_EPROTO;
    }
    return 0;
}
