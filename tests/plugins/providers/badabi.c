/* A provider built for an ABI this ebb does not speak: the loader must
 * refuse it with a message that says to rebuild. */
#include <ebb/provider.h>

static const struct ebb_provider badabi_provider = {
    .abi = EBB_PROVIDER_ABI + 98,
    .struct_size = sizeof(struct ebb_provider),
    .name = "badabi",
    .description = "claims a future ABI",
};

const struct ebb_provider *ebb_provider_entry(void)
{
    return &badabi_provider;
}
