/* A fake EC2 Query API endpoint on 127.0.0.1 for the aws provider's tests
 * and bench-ingest, built on src/io/httpd.h. It checks what EC2 checks: the
 * SigV4 signature, recomputed with its own canonical-request code (wrong:
 * 403 AuthFailure), the API version, the parameters. It serves spot price
 * history generated on the fly with real pagination (MaxResults,
 * NextToken), keeps instances across calls, honours ClientToken, and can be
 * told to fail, throttle, hang or send a malformed page. A ClientToken
 * is at most 64 ASCII characters, and one used again with other
 * parameters is refused (IdempotentParameterMismatch). It keeps
 * placement groups as EC2 does (a duplicate name refused with
 * InvalidPlacementGroup.Duplicate, an unknown one with .Unknown, deletion
 * while an instance in the group is not terminated with .InUse, a launch
 * into a cluster group in another zone than its instances' with
 * InvalidParameterCombination), launches
 * MinCount..MaxCount instances against a capacity (all or, below MinCount,
 * none), numbers them by amiLaunchIndex, filters DescribeInstances by a
 * tag or by client-token, and can be told to lie about what a
 * RunInstances started.
 *
 * The region of a call is the one its signature's credential scope names,
 * so one fake serves every region.
 */
#ifndef FAKE_EC2_H
#define FAKE_EC2_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebb/common.h>

struct fake_ec2;

/* Starts the fake on `loop` with credentials `akid`/`secret` (and
 * `session_token`, which every request must then carry, or NULL). */
int fake_ec2_start(struct fake_ec2 **out, uv_loop_t *loop, const char *akid,
                   const char *secret, const char *session_token);
/* Closes the server; `closed(arg)` runs once its handles are closed. */
void fake_ec2_close(struct fake_ec2 *f, void (*closed)(void *arg), void *arg);
const char *fake_ec2_url(const struct fake_ec2 *f);

/* Price history: `per_region` points for each region asked, over 3 zones
 * (REGIONa..c) and the instance types asked, from `first` every `step`,
 * newest last. Points before a request's StartTime are left out. */
void fake_ec2_set_prices(struct fake_ec2 *f, size_t per_region,
                         ebb_time_ms first, ebb_dur_ms step);

/* The next `count` calls of `action` (NULL: any action) answer HTTP
 * `status` with EC2 error `code` (e.g. 503 "RequestLimitExceeded"). */
void fake_ec2_fail(struct fake_ec2 *f, const char *action, int count,
                   int status, const char *code);
/* The next `count` calls of `action` are carried out but answered only
 * after `delay_ms` (clients time out first). */
void fake_ec2_hang(struct fake_ec2 *f, const char *action, int count,
                   int64_t delay_ms);
/* The `nth` (1-based) DescribeSpotPriceHistory answer from now on is cut
 * off in the middle of an item. */
void fake_ec2_malform_page(struct fake_ec2 *f, int nth);

/* EC2 reclaims spot instance `id`: shutting-down, reason
 * Server.SpotInstanceTermination. Returns 0 or EBB_ENOTFOUND. */
int fake_ec2_reclaim(struct fake_ec2 *f, const char *id);

struct fake_ec2_stats {
    uint64_t calls;          /* authenticated, well-formed calls */
    uint64_t auth_failures;  /* refused signatures or credentials */
    uint64_t price_pages;    /* DescribeSpotPriceHistory answers */
    uint64_t run_instances;  /* RunInstances calls (retries included) */
    uint64_t instances;      /* instances ever created */
    uint64_t faults;         /* injected failures and hangs served */
    uint64_t terminated;     /* instances TerminateInstances was asked for */
    uint64_t placement_groups; /* placement groups ever created */
};
void fake_ec2_stats(const struct fake_ec2 *f, struct fake_ec2_stats *out);

/* A parameter of the last call of `action`, or NULL (valid until the next
 * call of that action). */
const char *fake_ec2_last_param(const struct fake_ec2 *f, const char *action,
                                const char *name);

/* How many instances RunInstances may still start (each call starts
 * MaxCount of them, or what is left when that is at least MinCount, else
 * fails with 500 InsufficientInstanceCapacity); -1, the default: any. */
void fake_ec2_set_capacity(struct fake_ec2 *f, long instances);

/* How the next RunInstances answer lies about what it started (it starts
 * them all the same). */
enum fake_ec2_answer {
    FAKE_EC2_ANSWER_TRUE = 0,
    FAKE_EC2_ANSWER_SHORT,     /* the last instance left out */
    FAKE_EC2_ANSWER_DUP_INDEX, /* the last shown with amiLaunchIndex 0 */
    FAKE_EC2_ANSWER_COMMA_ID,  /* the first id shown with ",i-1" appended */
};
void fake_ec2_lie(struct fake_ec2 *f, enum fake_ec2_answer answer);

/* Every shutting-down instance becomes terminated (EC2 finishing). */
void fake_ec2_settle(struct fake_ec2 *f);

/* EC2 no longer lists instance `id` (a terminated one, an hour on):
 * every call naming it is InvalidInstanceID.NotFound. Returns 0 or
 * EBB_ENOTFOUND. */
int fake_ec2_forget(struct fake_ec2 *f, const char *id);

/* EC2 calls instance `id` `new_id` from now on (a hostile answer).
 * Returns 0 or EBB_ENOTFOUND. */
int fake_ec2_set_id(struct fake_ec2 *f, const char *id, const char *new_id);

/* Whether placement group `name` exists in `region`. */
int fake_ec2_group_exists(const struct fake_ec2 *f, const char *region,
                          const char *name);

/* Instance `id`'s amiLaunchIndex, or -1 when there is no such instance. */
int fake_ec2_launch_index(const struct fake_ec2 *f, const char *id);

/* The state name of instance `id`, or NULL. */
const char *fake_ec2_instance_state(const struct fake_ec2 *f, const char *id);

#endif
