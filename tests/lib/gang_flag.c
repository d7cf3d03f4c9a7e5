/* A loaded provider that says it launches gangs (gang_flag.h). */
#include "gang_flag.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <ebb/provider.h>

#include "plugin/plugin.h"

void test_provider_launches_gangs(struct ebb__registry *r, const char *name)
{
    struct ebb__plugin_slot *s = ebb__registry_provider(r, name);
    assert_non_null(s);
    /* The loader's copy (struct ebb__plugin's `copy`) is what every reader
     * sees through plugin->provider. */
    s->plugin->copy.provider.flags |= EBB_PROVIDER_GANGS;
    assert_true((s->plugin->provider->flags & EBB_PROVIDER_GANGS) != 0);
}
