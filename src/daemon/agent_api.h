/* ebbd's HTTP endpoint for ebb-agent (docs/agent-protocol.md) and the
 * IMDSv2-compatible metadata endpoint of local instances, both on
 * agent_api.listen.
 *
 * Every agent request carries its instance's bearer token; one without a
 * valid token is answered 401 and logged (without the token). Reports
 * become engine events; the answer says what the agent should do next.
 * The job's output is appended to <logs_dir>/<job id>.log.
 */
#ifndef EBB_AGENT_API_H
#define EBB_AGENT_API_H

#include <uv.h>

#include "engine/engine.h"
#include "io/httpd.h"
#include "io/tls.h"

struct ebb__agent_api;

/* Listens on `address` ("IP:PORT"). Returns 0, EBB_EINVAL (not an
 * address), EBB_EIO (cannot listen; err says why) or EBB_ENOMEM. */
int ebb__agent_api_start(struct ebb__agent_api **out, uv_loop_t *loop,
                         struct ebb__engine *engine, const char *address,
                         const char *logs_dir, char *err, size_t errlen);

/* Serves TLS with `tls` (taken: freed when the API is; NULL: plain HTTP)
 * from now on. Unless `insecure`, a plain request from a peer that is not
 * on this host is refused (403). Call it before the loop runs. */
void ebb__agent_api_secure(struct ebb__agent_api *api, struct ebb__tls_ctx *tls,
                           bool insecure);

/* Durable checkpoints (daemon_ckpt.h): `job_doc` adds a job's store to
 * its job document (non-zero: the document is not served, 503); `serve`
 * answers /v1/agent/checkpoints... and /v1/agent/resume for an
 * authenticated job, `rank` the gang rank its bearer token names (0 for
 * a single instance). Without hooks those answer 404. */
struct ebb__agent_ckpt_hooks {
    int (*job_doc)(void *arg, struct ebb__job *job, json_t *doc);
    void (*serve)(void *arg, struct ebb__job *job, unsigned rank,
                  const struct ebb__httpd_request *req, struct ebb__httpd_response *res);
    void *arg;
};
void ebb__agent_api_ckpt(struct ebb__agent_api *api,
                         const struct ebb__agent_ckpt_hooks *hooks);

/* Its HTTP server, to give it limits (daemon_limits.c). Borrowed. */
struct ebb__httpd *ebb__agent_api_httpd(struct ebb__agent_api *api);

/* The URL agents reach it at: "http(s)://IP:PORT" with the port it got. */
const char *ebb__agent_api_url(const struct ebb__agent_api *api);

/* Closes the listener and its connections; `cb(arg)` runs once every
 * handle is closed. */
void ebb__agent_api_close(struct ebb__agent_api *api, void (*cb)(void *arg),
                          void *arg);

/* The log file of job `id` under `logs_dir`; caller frees. */
char *ebb__agent_log_path(const char *logs_dir, const char *id);

#endif
