/* Reading what agents send to ebbd's agent endpoint (agent_api.c), apart
 * from the HTTP server and the engine so that it can be fuzzed
 * (tests/fuzz/fuzz-agent-api.c). */
#ifndef EBB_AGENT_API_PARSE_H
#define EBB_AGENT_API_PARSE_H

#include <jansson.h>

#include "engine/engine.h"

/* Reads the body of POST /v1/agent/events (a JSON object, borrowed) into
 * *r (docs/agent-protocol.md). The strings in *r are borrowed from `body`
 * and live as long as it does. Returns 0, or EBB_EINVAL with *why a static
 * sentence for the agent ("\"kind\" is missing or not a known event"). */
int ebb__agent_report_parse(json_t *body, struct ebb__agent_report *r,
                            const char **why);

#endif
