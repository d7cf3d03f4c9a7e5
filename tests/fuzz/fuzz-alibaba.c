/* Fuzz target: what the alibaba provider reads from ECS's JSON answers
 * (providers/alibaba: the RPC call's error codes and throttling in
 * ali_rpc.c, spot price pages in ali_prices.c, RunInstances and
 * DescribeInstances in ali_instances.c), through the plugin's own
 * operations driven by fuzz_provider.c: the input is the sequence of
 * answers ECS gives to a poll, a list, a launch and a terminate (format
 * and invariants in fuzz_provider.h). */
#include <ebb/units.h>

#include "fuzz.h"
#include "fuzz_provider.h"

static const struct fuzz_provider_case ecs = {
    .config_yaml =
        "regions: [cn-hangzhou, ap-southeast-1]\n"
        "instance_types: [ecs.gn6v-c8g1.2xlarge, ecs.gn6i-c4g1.xlarge]\n"
        "history: 2d\n"
        "image_id: m-ebb-agent\n"
        "security_group_id: sg-ebb\n"
        "vswitches: [cn-hangzhou-h=vsw-h, cn-hangzhou-i=vsw-i]\n"
        "retry_backoff: 5ms\n"
        "retries: 2\n",
    .launch = {
        .token = "t-0123456789abcdef", .job_id = "j-20261201-0001",
        .provider = "alibaba", .region = "cn-hangzhou", .zone = "",
        .instance_type = "ecs.gn6v-c8g1.2xlarge", .market = EBB_MARKET_SPOT,
        .max_price_per_hour = 9500000, .currency = "CNY", .count = 1,
        .agent_url = "https://ebbd.example.com:7443",
        .agent_token = "t-0123456789abcdef.enrol-secret",
    },
    .terminate_id = "i-bp67acfmxazb4p",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The plugin reads its keys from the environment, as in ebbd. */
    setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAIfakekey0123", 0);
    setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "fakeSecretValue0123456789", 0);
    fuzz_provider_run(ebb_provider_entry(), &ecs, data, size);
    return 0;
}
