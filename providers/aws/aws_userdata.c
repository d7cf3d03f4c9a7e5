/* The instance's user data: a shell script that cloud-init runs at first
 * boot to start ebb-agent with its token. The token goes to a file on
 * /run (memory, mode 0600), never onto the agent's command line, as
 * docs/agent-protocol.md requires. */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include <ebb/buf.h>

#include "aws_userdata.h"

/* Appends `s` as one single-quoted shell word. */
static void shell_quote(struct ebb_buf *b, const char *s)
{
    ebb_buf_puts(b, "'");
    for (; *s != '\0'; s++) {
        if (*s == '\'')
            ebb_buf_puts(b, "'\\''");
        else
            ebb_buf_append(b, s, 1);
    }
    ebb_buf_puts(b, "'");
}

/* A gang member's token: the one at the instance's ami-launch-index,
 * which it reads from IMDSv2 (a session token first, as the launch
 * requires: MetadataOptions.HttpTokens=required). */
static void gang_token(struct ebb_buf *b, const char *const *tokens, size_t n)
{
    ebb_buf_puts(b, "imds=http://169.254.169.254/latest\n"
                     "imds_token=$(curl -sf -X PUT \"$imds/api/token\" "
                     "-H 'X-aws-ec2-metadata-token-ttl-seconds: 300')\n"
                     "rank=$(curl -sf -H \"X-aws-ec2-metadata-token: $imds_token\" "
                     "\"$imds/meta-data/ami-launch-index\")\n"
                     "case \"$rank\" in\n");
    for (size_t i = 0; i < n; i++) {
        ebb_buf_printf(b, "%zu) printf '%%s' ", i);
        shell_quote(b, tokens[i]);
        ebb_buf_puts(b, " > /run/ebb/agent-token ;;\n");
    }
    ebb_buf_puts(b, "*) echo \"ebb: no agent token for ami-launch-index '$rank'\" >&2;"
                     " exit 1 ;;\nesac\n");
}

char *aws_userdata_script(const char *agent_command, const char *agent_setup,
                          const char *agent_url, const char *const *tokens,
                          size_t n_tokens, const char *tls_pin,
                          const char *tls_ca)
{
    struct ebb_buf b = {0};
    ebb_buf_puts(&b, "#!/bin/sh\n"
                      "# Written by ebb: starts ebb-agent with its token.\n"
                      "set -e\n"
                      "umask 077\n"
                      "mkdir -p /run/ebb\n");
    if (n_tokens > 1) {
        gang_token(&b, tokens, n_tokens);
    } else {
        ebb_buf_puts(&b, "printf '%s' ");
        shell_quote(&b, tokens[0]);
        ebb_buf_puts(&b, " > /run/ebb/agent-token\n");
    }
    if (tls_ca != NULL) {
        ebb_buf_puts(&b, "printf '%s' ");
        shell_quote(&b, tls_ca);
        ebb_buf_puts(&b, " > /run/ebb/ebbd-ca.pem\n");
    }
    if (agent_setup != NULL && agent_setup[0] != '\0') {
        ebb_buf_puts(&b, agent_setup);
        ebb_buf_puts(&b, "\n");
    }
    ebb_buf_puts(&b, "nohup ");
    shell_quote(&b, agent_command);
    ebb_buf_puts(&b, " --ebbd ");
    shell_quote(&b, agent_url);
    if (tls_ca != NULL) {
        ebb_buf_puts(&b, " --ebbd-ca /run/ebb/ebbd-ca.pem");
    } else if (tls_pin != NULL) {
        ebb_buf_puts(&b, " --ebbd-pin ");
        shell_quote(&b, tls_pin);
    }
    ebb_buf_puts(&b, " --token-file /run/ebb/agent-token --metadata-kind aws"
                      " >>/var/log/ebb-agent.log 2>&1 &\n");
    return ebb_buf_take(&b);
}

char *aws_base64(const char *s)
{
    size_t len = strlen(s);
    char *out = malloc(4 * ((len + 2) / 3) + 1);
    if (out != NULL)
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)len);
    return out;
}
