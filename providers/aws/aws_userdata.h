/* User data for the instances the aws provider launches. */
#ifndef AWS_USERDATA_H
#define AWS_USERDATA_H

#include <stddef.h>

/* The boot script that writes the agent's one-time enrolment token to
 * /run/ebb/agent-token, runs `agent_setup` (shell, may be "" or NULL) and
 * starts `agent_command` against `agent_url`, trusting ebbd's certificate
 * by the CA `tls_ca` (PEM text, written to /run/ebb/ebbd-ca.pem) or else
 * the pin `tls_pin` (either may be NULL). `tokens` holds `n_tokens`
 * tokens: one for a single instance; a gang's in rank order, of which
 * each member takes the one at its ami-launch-index, read from the
 * instance metadata (IMDSv2) at boot. Every value is shell-quoted.
 * Returns a new string or NULL when out of memory. */
char *aws_userdata_script(const char *agent_command, const char *agent_setup,
                          const char *agent_url, const char *const *tokens,
                          size_t n_tokens, const char *tls_pin,
                          const char *tls_ca);

/* Standard base64 of the string `s` (EC2 wants UserData so); NULL when out
 * of memory. */
char *aws_base64(const char *s);

#endif
