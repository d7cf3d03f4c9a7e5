/* A provider plugin's whole conversation with its cloud, answered from a
 * fuzz input, for the targets of the plugins whose parsing happens in
 * their HTTP callbacks (fuzz-alibaba.c, fuzz-vastai.c).
 *
 * The host lent to the plugin is a small event loop of its own with a
 * virtual clock: each HTTP request the plugin starts is answered, in the
 * order they were started, with the next answer cut from the input (its
 * prepare hook runs before each attempt and its classify hook after each
 * attempt but the last, as ebbd's client does); when no answer is left
 * the request fails as a refused connection would. Timers fire in the
 * order of their due times, the clock jumping to each. The plugin is made
 * from its own configuration table applied to `config_yaml`, then polled,
 * asked to list, to launch and to terminate, and destroyed; what it still
 * has in flight then is cancelled as ebbd's host would.
 *
 * The input is a list of answers separated by a line "--"; each is an
 * HTTP status on its own line (200 when the first line is not a number)
 * followed by the body:
 *   200
 *   {"SpotPrices": ...}
 *   --
 *   400
 *   {"Code": "Throttling.User"}
 *
 * Invariants: every operation's callback runs exactly once, by the time
 * destroy() has returned at the latest; what a callback hands over is
 * well formed (strings set, a launched instance with an id, prices with a
 * currency and a price >= 0); requests are well formed. */
#ifndef EBB_FUZZ_PROVIDER_H
#define EBB_FUZZ_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/provider.h>

/* What to ask the plugin for besides a poll, list and terminate. */
struct fuzz_provider_case {
    const char *config_yaml;   /* the `providers.NAME:` mapping */
    struct ebb_launch launch;  /* struct_size is filled in */
    const char *terminate_id;  /* an instance id to terminate */
};

/* Runs the conversation described above for `p` over the input. */
void fuzz_provider_run(const struct ebb_provider *p,
                       const struct fuzz_provider_case *c,
                       const uint8_t *data, size_t size);

#endif
