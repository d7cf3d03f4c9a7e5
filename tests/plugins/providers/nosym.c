/* A shared module that exports no entry point: not an ebb plugin. */
#include <ebb/common.h>

EBB_EXTERN int nosym_something(void);

int nosym_something(void)
{
    return 42;
}
