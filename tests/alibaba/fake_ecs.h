/* A fake Alibaba Cloud ECS endpoint for the provider tests, served by
 * src/io/httpd.c on 127.0.0.1.
 *
 * It checks every request as ECS would: a POST form whose V1 signature it
 * recomputes with its own code (its own encoder, OpenSSL's HMAC-SHA1),
 * known credentials, unused nonces, the common parameters; and it keeps a
 * small world: spot price rows per region and type (answered in pages),
 * instances with their ClientToken and tags, created Amount at a time
 * (MinAmount <= Amount, else 400 InvalidMinAmount.Malformed; all or none
 * against a stock), named by HostName with UniqueSuffix as ECS does (a
 * HostName against ECS's rules: 400 InvalidHostName.Malformed). A
 * ClientToken is at most 64 ASCII characters; one used again with other
 * parameters is 400 IdempotentParameterMismatch. DescribeInstances
 * filters by the tag ebb-token or ebb-join.
 * Tests inject throttling, errors, lost answers, sold-out zones and
 * RunInstances answers that lie.
 */
#ifndef EBB_TEST_FAKE_ECS_H
#define EBB_TEST_FAKE_ECS_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>

#include "io/httpd.h"

struct fake_price {
    const char *region, *zone, *type;
    ebb_time_ms at;
    double spot, origin;
};

struct fake_instance {
    char id[32], region[32], zone[32], type[48], token[80], job_id[64];
    char client_token[80]; /* the RunInstances that created it; "" */
    char join[80];         /* its tag ebb-join; "" for none */
    uint64_t params;       /* that RunInstances' parameters, hashed */
    char status[16];
    char strategy[24];
    char host[72];  /* HostName, with UniqueSuffix's 001.. when asked */
    int ebb_tagged;
    int recycling;
};

/* How the next RunInstances answer lies about what it created (it
 * creates them all the same). */
enum fake_ecs_lie {
    FAKE_ECS_TRUE = 0,
    FAKE_ECS_SHORT,     /* the last id left out of InstanceIdSet */
    FAKE_ECS_DUP_HOST,  /* the last instance named like the first */
    FAKE_ECS_COMMA_ID,  /* the first id shown with ",i-1" appended */
};

/* One request the fake accepted (signature good), for assertions. */
struct fake_call {
    char action[40], region[32];
    char start[32], end[32];
    long offset;
};

struct fake_ecs {
    const char *key_id, *secret;
    const struct fake_price *prices;
    size_t n_prices;
    size_t page_size;      /* price rows per page */
    size_t list_page;      /* instances per DescribeInstances page */
    /* Injected faults, each consumed as it fires. */
    int throttle_next;     /* answer this many requests 400 Throttling.User */
    int lose_next_run;     /* create, then answer 503 (the client retries) */
    int no_stock;          /* RunInstances: 403 OperationDenied.NoStock */
    /* With stock_limited, RunInstances creates at most `stock` more
     * instances: Amount of them, or what is left when that is at least
     * MinAmount, else none (403 OperationDenied.NoStock). */
    int stock_limited, stock;
    enum fake_ecs_lie lie_next_run;
    int delay_ms;          /* delay every answer */
    /* DescribeSpotPriceHistory of this type: the first fail_type_after
     * pages are answered, then fail_type_next requests 400 (a final
     * error, not retried). */
    const char *fail_type;
    int fail_type_after, fail_type_next;
    /* What it saw. */
    int requests, throttled, bad_signatures;
    struct fake_call calls[256];
    size_t n_calls;
    struct fake_instance inst[32];
    size_t n_inst;
    int next_id;
    char last_run[4096]; /* RunInstances' decoded form, "k=v\n" sorted */
    char nonces[256][40];
    size_t n_nonces;
};

/* The ebb__httpd handler; arg is a struct fake_ecs. */
void fake_ecs_handle(const struct ebb__httpd_request *req,
                     struct ebb__httpd_response *res, void *arg);

/* The fake's own V1 signature of decoded parameters (keys[i]=values[i],
 * Signature not among them), base64 into out[29]. */
void fake_ecs_v1_signature(const char *method, const char *const *keys,
                           const char *const *values, size_t n,
                           const char *secret, char out[29]);

/* Adds an instance straight into the fake's world (as if launched
 * earlier, or by someone else when not ebb_tagged). */
struct fake_instance *fake_ecs_add_instance(struct fake_ecs *e, const char *region,
                                            const char *zone, const char *token,
                                            const char *job_id);

/* How many calls of `action` it accepted. */
int fake_ecs_count(const struct fake_ecs *e, const char *action);

/* The value of `key` in the last RunInstances form, or NULL. Static
 * storage, overwritten by the next call. */
const char *fake_ecs_run_param(const struct fake_ecs *e, const char *key);

#endif
