/* Reading what a plugin built under the ABI's size rules (include/ebb/
 * provider.h): each reader refuses a struct smaller than its first
 * version, steps through arrays by the plugin's struct_size, and hands the
 * core the struct laid out as this ebb knows it, with every appended field
 * the plugin's struct does not cover set to what its comment says an
 * absent field means. So the rest of the core reads plain structs and
 * never tests struct_size itself.
 *
 * Each reader that refuses logs one error naming the plugin and what to
 * do, and returns EBB_EABI.
 */
#ifndef EBB_PLUGIN_ABI_H
#define EBB_PLUGIN_ABI_H

#include <ebb/http.h>
#include <ebb/types.h>

/* Where the array readers copy to when a plugin's layout is not this
 * ebb's. Start it zeroed; it grows as needed and may be reused for later
 * calls; free it with ebb__abi_room_free(). */
struct ebb__abi_room {
    void *mem;
    size_t size;
};

void ebb__abi_room_free(struct ebb__abi_room *room);

/* Reads the `n` prices the provider `plugin` passed to a poll callback.
 * Sets *out to `prices` itself when every price and shape was built with
 * this ebb's structs, or else to a copy in `room` (capacity -1, shape NULL
 * and machine_id "" where the plugin's structs do not cover them). *out
 * stays valid while both `prices` and `room` do. Returns 0, EBB_EABI (a
 * price or shape smaller than its first version, or prices of different
 * sizes) or EBB_ENOMEM. */
int ebb__abi_read_prices(const char *plugin, const struct ebb_price *prices,
                         size_t n, struct ebb__abi_room *room,
                         const struct ebb_price **out);

/* Reads the `n` instances the provider `plugin` passed to a list or launch
 * callback, as ebb__abi_read_prices() does (fields appended after the
 * first version zero where not covered). */
int ebb__abi_read_instances(const char *plugin, const struct ebb_instance *list,
                            size_t n, struct ebb__abi_room *room,
                            const struct ebb_instance **out);

/* Copies the event `ev` the provider `plugin` reported into *out
 * (checkpoint_path NULL where not covered). Returns 0 or EBB_EABI. */
int ebb__abi_read_event(const char *plugin, const struct ebb_instance_event *ev,
                        struct ebb_instance_event *out);

/* Copies the series key `key` the plugin `plugin` asked a cursor for into
 * *out. Returns 0 or EBB_EABI. The strings stay the plugin's. */
int ebb__abi_read_series_key(const char *plugin, const struct ebb_series_key *key,
                             struct ebb_series_key *out);

/* Copies the HTTP request `req` the plugin `plugin` asked for into *out.
 * Returns 0 or EBB_EABI. The strings and arrays stay the plugin's. */
int ebb__abi_read_http(const char *plugin, const struct ebb_http_request *req,
                       struct ebb_http_request *out);

#endif
