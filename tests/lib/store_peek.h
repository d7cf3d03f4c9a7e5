/* For tests only: the SQLite connection under a store handle, so that a
 * test can check (or set up) what the database holds with SQL of its own,
 * independently of the store's queries, also in a ":memory:" store. ebb's
 * own code never gets the connection: it asks the store for typed rows
 * (tests/check_source.py keeps <sqlite3.h> to src/store/). */
#ifndef EBB_STORE_PEEK_H
#define EBB_STORE_PEEK_H

#include <sqlite3.h>

#include "store/store.h"

/* The connection under `s`; the handle keeps ownership. */
sqlite3 *ebb_test_store_db(struct ebb__store *s);

#endif
