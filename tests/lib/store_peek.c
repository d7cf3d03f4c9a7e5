/* The tests' way to the store's SQLite connection (store_peek.h): the one
 * file outside src/store/ that sees the handle's insides. */
#include "store_peek.h"

#include "store/store_internal.h"

sqlite3 *ebb_test_store_db(struct ebb__store *s)
{
    return s->db;
}
