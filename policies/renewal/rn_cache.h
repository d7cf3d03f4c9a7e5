/* rn_cache — what the renewal policy keeps between decisions: solved
 * tables (rn_dp.h) and the fits of the records last seen (rn_model.h),
 * each found again only for exactly the same inputs, so that a decision
 * answers what solving and fitting anew would. One instance's, used from
 * one thread at a time (as ebbd calls a policy). */
#ifndef EBB_RN_CACHE_H
#define EBB_RN_CACHE_H

#include <ebb/policy.h>

#include "rn_dp.h"
#include "rn_model.h"

struct rn_cache;

/* An empty cache, or NULL when out of memory. */
struct rn_cache *rn_cache_new(void);

/* Frees the cache and its tables; NULL is a no-op. */
void rn_cache_free(struct rn_cache *c);

/* A solved table for *want (compared bytewise: clear its padding): a
 * kept one with the same chain, prices and step, extended to want's grid
 * when it does not cover it yet (only the points it lacked are solved;
 * its values at every point of want's grid are want's), else one solved
 * now in place of the least recently used; tables least recently used
 * are dropped to keep the points kept under a bound. Valid until the
 * next call. NULL when the parameters are invalid or memory runs out. */
const struct rn_table *rn_cache_table(struct rn_cache *c,
                                      const struct rn_params *want);

/* The up and down mixtures of offer *o: its record (up_lengths,
 * down_lengths) fitted with the prior *up_prior / *down_prior worth
 * `weight` periods, memoized by the record's counts. Returns 0, leaving
 * *up and *down alone, when the offer has no record (or an ebbd older
 * than the record built the view); else 1. */
int rn_offer_fits(struct rn_cache *c, const struct ebb_offer *o,
                  const struct rn_mix *up_prior, const struct rn_mix *down_prior,
                  double weight, struct rn_mix *up, struct rn_mix *down);

#endif
