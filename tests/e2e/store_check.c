/* store_check DB: the store's own checks on a file, for the shell and
 * Python tests: SQLite's integrity_check, then ebb__store_check_billing
 * (every instance that ran is billed exactly once, none ends before it
 * started). Prints "ok" and exits 0, or prints what is wrong and exits 1;
 * exits 2 when the file cannot be opened. The file is opened at the
 * version it has (nothing is migrated: the checks read only), so that a
 * file of an older ebbd can be checked and that ebbd can still open it. */
#include <stdio.h>

#include "store/store.h"
#include "store/store_clock.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: store_check DB\n");
        return 2;
    }
    struct ebb__store *s = NULL;
    char err[1024] = "";
    if (ebb__store_open_at_version(argv[1], 1, &s, err, sizeof(err)) != 0) {
        fprintf(stderr, "store_check: %s\n", err);
        return 2;
    }
    int bad = ebb__store_integrity_check(s, err, sizeof(err)) != 0 ||
              ebb__store_check_billing(s, err, sizeof(err)) != 0;
    printf("%s\n", bad ? err : "ok");
    ebb__store_close(s);
    return bad;
}
