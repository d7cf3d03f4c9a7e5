#include "plugin/plugin_abi.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

void ebb__abi_room_free(struct ebb__abi_room *room)
{
    free(room->mem);
    *room = (struct ebb__abi_room){0};
}

static void *room_get(struct ebb__abi_room *room, size_t size)
{
    if (size > room->size) {
        void *mem = realloc(room->mem, size);
        if (mem == NULL)
            return NULL;
        room->mem = mem;
        room->size = size;
    }
    return room->mem;
}

/* Whether `plugin`'s struct `what` of `struct_size` bytes holds at least
 * the first version (`v1` bytes); logs the refusal. */
static int check_size(const char *plugin, const char *what,
                      uint32_t struct_size, size_t v1)
{
    if (struct_size >= v1)
        return 0;
    ebb__error("%s: struct %s with struct_size %u is smaller than its first "
               "version (%zu bytes); the plugin must set struct_size = "
               "sizeof(struct %s): rebuild it against this ebb's include/ebb",
               plugin, what, struct_size, v1, what);
    return EBB_EABI;
}

/* Checks that an array's elements all have the first one's struct_size
 * (`stride`), that it holds the first version and keeps elements aligned
 * (a compiler's sizeof always does). */
static int check_array(const char *plugin, const char *what, const void *array,
                       size_t n, uint32_t stride, size_t v1, size_t align)
{
    int rc = check_size(plugin, what, stride, v1);
    if (rc != 0)
        return rc;
    if (stride % align != 0) {
        ebb__error("%s: struct %s with struct_size %u is not a multiple of "
                   "its alignment (%zu); set struct_size = sizeof(struct %s)",
                   plugin, what, stride, align, what);
        return EBB_EABI;
    }
    for (size_t i = 1; i < n; i++) {
        uint32_t size;
        memcpy(&size, (const char *)array + i * stride, sizeof(size));
        if (size != stride) {
            ebb__error("%s: struct %s [%zu] has struct_size %u, [0] has %u; "
                       "every element of one array must have the same size",
                       plugin, what, i, size, stride);
            return EBB_EABI;
        }
    }
    return 0;
}

/* The bytes of a plugin's struct of `struct_size` that fit this ebb's of
 * `size`: the rest of the copy keeps its defaults. */
static size_t covered(uint32_t struct_size, size_t size)
{
    return struct_size < size ? struct_size : size;
}

static int read_shape(const char *plugin, const struct ebb_shape *in,
                      struct ebb_shape *out)
{
    int rc = check_size(plugin, "ebb_shape", in->struct_size, EBB_SHAPE_SIZE_V1);
    if (rc != 0)
        return rc;
    *out = (struct ebb_shape){.machine_id = ""};
    memcpy(out, in, covered(in->struct_size, sizeof(*out)));
    out->struct_size = sizeof(*out);
    return 0;
}

static int shape_is_ours(const struct ebb_shape *s)
{
    return s == NULL || s->struct_size == sizeof(*s);
}

int ebb__abi_read_prices(const char *plugin, const struct ebb_price *prices,
                         size_t n, struct ebb__abi_room *room,
                         const struct ebb_price **out)
{
    *out = prices;
    if (n == 0)
        return 0;
    uint32_t stride = prices[0].struct_size;
    int rc = check_array(plugin, "ebb_price", prices, n, stride,
                         EBB_PRICE_SIZE_V1, alignof(struct ebb_price));
    if (rc != 0)
        return rc;
    /* The common case, a plugin built with this ebb's headers, costs one
     * look at each price and no copy. */
    int ours = stride == sizeof(struct ebb_price);
    for (size_t i = 0; ours && i < n; i++)
        ours = shape_is_ours(prices[i].shape);
    if (ours)
        return 0;
    struct ebb_price *copy =
        room_get(room, n * (sizeof(struct ebb_price) + sizeof(struct ebb_shape)));
    if (copy == NULL)
        return EBB_ENOMEM;
    struct ebb_shape *shapes = (struct ebb_shape *)(void *)(copy + n);
    for (size_t i = 0; i < n; i++) {
        const char *in = (const char *)prices + i * stride;
        copy[i] = (struct ebb_price){.capacity = -1};
        memcpy(&copy[i], in, covered(stride, sizeof(copy[i])));
        copy[i].struct_size = sizeof(copy[i]);
        if (copy[i].shape == NULL)
            continue;
        rc = read_shape(plugin, copy[i].shape, &shapes[i]);
        if (rc != 0)
            return rc;
        copy[i].shape = &shapes[i];
    }
    *out = copy;
    return 0;
}

int ebb__abi_read_instances(const char *plugin, const struct ebb_instance *list,
                            size_t n, struct ebb__abi_room *room,
                            const struct ebb_instance **out)
{
    *out = list;
    if (n == 0)
        return 0;
    uint32_t stride = list[0].struct_size;
    int rc = check_array(plugin, "ebb_instance", list, n, stride,
                         EBB_INSTANCE_SIZE_V1, alignof(struct ebb_instance));
    if (rc != 0 || stride == sizeof(struct ebb_instance))
        return rc;
    struct ebb_instance *copy = room_get(room, n * sizeof(*copy));
    if (copy == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        copy[i] = (struct ebb_instance){0};
        memcpy(&copy[i], (const char *)list + i * stride,
               covered(stride, sizeof(copy[i])));
        copy[i].struct_size = sizeof(copy[i]);
    }
    *out = copy;
    return 0;
}

int ebb__abi_read_event(const char *plugin, const struct ebb_instance_event *ev,
                        struct ebb_instance_event *out)
{
    int rc = check_size(plugin, "ebb_instance_event", ev->struct_size,
                        EBB_INSTANCE_EVENT_SIZE_V1);
    if (rc != 0)
        return rc;
    *out = (struct ebb_instance_event){.checkpoint_path = NULL};
    memcpy(out, ev, covered(ev->struct_size, sizeof(*out)));
    out->struct_size = sizeof(*out);
    return 0;
}

int ebb__abi_read_series_key(const char *plugin, const struct ebb_series_key *key,
                             struct ebb_series_key *out)
{
    int rc = check_size(plugin, "ebb_series_key", key->struct_size,
                        EBB_SERIES_KEY_SIZE_V1);
    if (rc != 0)
        return rc;
    *out = (struct ebb_series_key){0};
    memcpy(out, key, covered(key->struct_size, sizeof(*out)));
    out->struct_size = sizeof(*out);
    return 0;
}

int ebb__abi_read_http(const char *plugin, const struct ebb_http_request *req,
                       struct ebb_http_request *out)
{
    int rc = check_size(plugin, "ebb_http_request", req->struct_size,
                        EBB_HTTP_REQUEST_SIZE_V1);
    if (rc != 0)
        return rc;
    *out = (struct ebb_http_request){0};
    memcpy(out, req, covered(req->struct_size, sizeof(*out)));
    out->struct_size = sizeof(*out);
    return 0;
}
