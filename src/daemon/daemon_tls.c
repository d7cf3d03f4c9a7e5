/* The agent listener's certificate, and what agents are told to trust it
 * by (docs/security.md, "The agent channel").
 *
 * agent_api.tls_cert/tls_key name a certificate; without them ebbd makes
 * its own in the state directory (tls_cert.c) for the host agents are
 * told to reach. Agents get the certificate's public-key pin when it is
 * self-signed, the CA of agent_api.tls_ca when one is configured, and
 * neither for a certificate a public CA signed (the instance's own CAs
 * verify it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/str.h"
#include "daemon/daemon.h"
#include "io/httpd.h"
#include "io/tls.h"

#define MAX_CA_FILE (256 * 1024)

/* The host agents are told to reach, for the certificate's name: the
 * configured URL's, else the listen address unless it is a wildcard,
 * else this machine's name. */
static void agent_host(const struct ebb__config *cfg, char *host, size_t size)
{
    const char *url = cfg->agent_url;
    const char *start = url != NULL ? strstr(url, "://") : NULL;
    if (start != NULL) {
        start += 3;
        size_t len = start[0] == '[' ? strcspn(start + 1, "]") : strcspn(start, ":/");
        snprintf(host, size, "%.*s", (int)len, start + (start[0] == '['));
        if (host[0] != '\0')
            return;
    }
    uint16_t port;
    if (ebb__httpd_parse_address(cfg->agent_listen, host, size, &port) == 0 &&
        strcmp(host, "0.0.0.0") != 0 && strcmp(host, "::") != 0)
        return;
    if (gethostname(host, size) != 0 || host[0] == '\0')
        snprintf(host, size, "localhost");
    host[size - 1] = '\0';
}

/* Reads the PEM file agents are to verify the chain with. */
static char *read_ca(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "agent_api.tls_ca: %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *text = NULL;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
              st.st_size <= MAX_CA_FILE;
    if (ok) {
        text = calloc(1, (size_t)st.st_size + 1);
        ok = text != NULL && read(fd, text, (size_t)st.st_size) == st.st_size &&
             strstr(text, "-----BEGIN CERTIFICATE-----") != NULL;
    }
    close(fd);
    if (!ok) {
        snprintf(err, errlen, "agent_api.tls_ca: %s: not a PEM certificate file "
                 "of at most 256 KiB", path);
        free(text);
        return NULL;
    }
    return text;
}

int ebb__daemon_agent_tls(struct ebb__daemon *d, struct ebb__tls_ctx **out,
                          char *err, size_t errlen)
{
    const struct ebb__config *cfg = d->config;
    *out = NULL;
    if (!cfg->agent_tls)
        return 0;
    char *cert = cfg->agent_tls_cert ? strdup(cfg->agent_tls_cert) : NULL;
    char *key = cfg->agent_tls_key ? strdup(cfg->agent_tls_key) : NULL;
    int rc = 0;
    if (cfg->agent_tls_cert == NULL) {
        char host[256];
        agent_host(cfg, host, sizeof(host));
        rc = ebb__tls_cert_ensure(d->state_dir, host, &cert, &key, err, errlen);
    } else if (cert == NULL || key == NULL) {
        rc = EBB_ENOMEM;
    }
    if (rc == 0)
        rc = ebb__tls_ctx_new(out, cert, key, err, errlen);
    if (rc == 0 && cfg->agent_tls_ca != NULL) {
        d->agent_tls_ca = read_ca(cfg->agent_tls_ca, err, errlen);
        rc = d->agent_tls_ca != NULL ? 0 : EBB_EINVAL;
    }
    if (rc == 0) {
        const char *pin = ebb__tls_ctx_pin(*out);
        bool pinned = d->agent_tls_ca == NULL && ebb__tls_ctx_self_signed(*out);
        snprintf(d->agent_tls_pin, sizeof(d->agent_tls_pin), "%s", pinned ? pin : "");
        ebb__info("agents verify ebbd's certificate %s by %s%s", cert,
                  pinned ? "its pin " : d->agent_tls_ca ? "the CA in " : "the instance's CAs",
                  pinned ? pin : d->agent_tls_ca ? cfg->agent_tls_ca : "");
    } else {
        ebb__tls_ctx_free(*out);
        *out = NULL;
    }
    free(cert);
    free(key);
    return rc;
}
