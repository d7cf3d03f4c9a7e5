/* Tests of how the engine judges gangs (what a policy sees of one, caps,
 * quotas, the backtest's yardsticks) need a market whose provider launches
 * gangs. This makes a loaded provider say so (EBB_PROVIDER_GANGS in the
 * loader's copy of its struct), whether or not its launch takes count > 1
 * yet: the judgement reads only the flag. */
#ifndef EBB_TEST_GANG_FLAG_H
#define EBB_TEST_GANG_FLAG_H

#include "plugin/registry.h"

/* Sets EBB_PROVIDER_GANGS on provider `name` of `r` (it must be loaded). */
void test_provider_launches_gangs(struct ebb__registry *r, const char *name);

#endif
