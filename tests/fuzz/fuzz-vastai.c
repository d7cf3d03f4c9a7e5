/* Fuzz target: what the vastai provider reads from vast.ai's JSON answers
 * (providers/vastai: the call's status and errors in vast_api.c, offers
 * and prices in vast_offers.c, instances, launches and bids in
 * vast_instances.c), through the plugin's own operations driven by
 * fuzz_provider.c: the input is the sequence of answers vast.ai gives to
 * a poll, a list, a launch and a terminate (format and invariants in
 * fuzz_provider.h). */
#include <ebb/units.h>

#include "fuzz.h"
#include "fuzz_provider.h"

static const struct fuzz_provider_case vast = {
    .config_yaml =
        "gpu_names: [\"RTX 4090\", \"A100 SXM4 80GB\"]\n"
        "gpu_count: 1\n"
        "min_gpu_ram_gb: 20\n"
        "min_reliability: 0.99\n"
        "image: \"ghcr.io/example/ebb-agent:1\"\n"
        "retry_backoff: 5ms\n",
    .launch = {
        .token = "tok-1", .job_id = "j-20261130-0007", .provider = "vastai",
        .region = "US", .zone = "88888", .instance_type = "RTX_4090x1",
        .market = EBB_MARKET_SPOT, .max_price_per_hour = 300000,
        .currency = "USD", .count = 1,
        .agent_url = "https://ebbd.example.com:7443",
        .agent_token = "tok-1.enrol-secret",
    },
    .terminate_id = "4242",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The plugin reads its key from the environment, as in ebbd. */
    setenv("VAST_API_KEY", "vast-fuzz-key-0123456789", 0);
    fuzz_provider_run(ebb_provider_entry(), &vast, data, size);
    return 0;
}
