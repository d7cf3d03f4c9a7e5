/* A fake vast.ai API for the provider tests, served by src/io/httpd.c on
 * 127.0.0.1, answering as the documented API does (the OpenAPI files in
 * research/vastai): it checks the Bearer key (a wrong one gets 404
 * "Invalid user key" on the offer search, 401 elsewhere), answers offer
 * searches with realistic rows (dph_base, min_bid, storage_total_cost, and
 * dph_total as the search type computes it: the minimum bid plus storage
 * for bid searches) and refuses a search without the CLI's external:
 * {eq: false}; rents asks into instances, destroys them and lists them
 * only through the paginated GET /api/v1/instances/ (list_page rows a
 * page, next_token / after_token). Tests outbid an instance, lose a
 * rent's answer, rate-limit (429 with Retry-After) and refuse keys.
 */
#ifndef EBB_TEST_FAKE_VAST_H
#define EBB_TEST_FAKE_VAST_H

#include <stddef.h>

#include "io/httpd.h"

struct fake_offer {
    long long ask_id, machine_id;
    const char *gpu_name, *geolocation;
    int num_gpus;
    double dph_base, min_bid;
    double storage_per_hour; /* storage_total_cost at the allocated disk */
    int gpu_ram_mb, cpu_ram_mb, cpu_cores;
};

struct fake_vm {
    long long id, ask_id, machine_id;
    char label[128], gpu_name[48], geolocation[48];
    int num_gpus, is_bid;
    double price;
    char actual[16], intended[16], cur[16];
    char onstart[256], token[96], image[64];
};

struct fake_vast {
    const char *api_key;
    const struct fake_offer *offers;
    size_t n_offers;
    int rate_limit_next; /* answer this many requests 429 (Retry-After: 0) */
    int lose_next_rent;  /* rent, then answer 503 */
    int delay_ms;
    size_t list_page; /* instances per list page; 0: 25, the API's most */
    /* What it saw. */
    int requests, unauthorized, rate_limited, searches, rents, deletes, lists;
    int bad_requests; /* refused as malformed (a search without external) */
    char last_query[4096];
    struct fake_vm vm[16];
    size_t n_vm;
    long long next_id;
};

void fake_vast_handle(const struct ebb__httpd_request *req,
                      struct ebb__httpd_response *res, void *arg);

/* Adds an instance as if rented earlier (label may be anything). */
struct fake_vm *fake_vast_add(struct fake_vast *f, const char *label, int is_bid);

/* The instance outbid: vast.ai stops it. */
void fake_vast_outbid(struct fake_vm *vm);

#endif
