/* A provider whose struct_size does not cover the first version of struct
 * ebb_provider (it claims to end before the functions): the loader must
 * refuse it with a message that says what to set. */
#include <ebb/provider.h>

static const struct ebb_provider tiny_provider = {
    .abi = EBB_PROVIDER_ABI,
    .struct_size = offsetof(struct ebb_provider, create),
    .name = "abi_tiny",
    .description = "claims a struct smaller than the first version",
};

const struct ebb_provider *ebb_provider_entry(void)
{
    return &tiny_provider;
}
