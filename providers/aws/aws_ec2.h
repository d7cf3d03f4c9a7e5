/* Parsers for the EC2 answers the aws provider reads: spot price history
 * pages, instances (RunInstances and DescribeInstances), and errors. Each
 * parses one whole body and either succeeds or leaves its output as it was.
 */
#ifndef AWS_EC2_H
#define AWS_EC2_H

#include <stddef.h>

#include <ebb/types.h>

/* Prices gathered over a poll. Strings are interned (a poll sees a few
 * zones, types and products thousands of times) and live as long as the
 * set. */
struct aws_price_set {
    struct ebb_price *v;
    size_t n, cap;
    char **strings; /* open-addressed intern table */
    size_t n_strings, cap_strings;
};

void aws_price_set_free(struct aws_price_set *s);

/* Appends the items of one DescribeSpotPriceHistory page to `set`, all of
 * them or none, as SPOT prices of `region` in USD with unknown capacity.
 * The page's nextToken ("" on the last page) is copied to `next_token`.
 * Returns 0, EBB_EPROTO (malformed XML, a missing field, a bad price or
 * time; `why` says which) or EBB_ENOMEM. */
int aws_parse_price_page(const char *xml, size_t len, const char *region,
                         struct aws_price_set *set, char *next_token,
                         size_t token_size, char *why, size_t why_size);

/* One instance as EC2 describes it; fixed-size fields, truncated if longer
 * than EC2 ever sends. */
struct aws_ec2_instance {
    char id[32];
    char state[24];        /* "pending", "running", "shutting-down", ... */
    char state_reason[64]; /* stateReason/code: "Server.SpotInstanceTermination" */
    char instance_type[32];
    char zone[32];
    char lifecycle[16];    /* "spot", or "" for on-demand */
    char job_id[128];      /* tag ebb:job */
    char token[128];       /* tag ebb:token */
    char group[64];        /* placement/groupName: "" outside a group */
    int launch_index;      /* amiLaunchIndex: its rank in a gang; -1 absent */
    int rank_tag;          /* tag ebb:rank (a replacement member's rank); -1 absent */
    char client_token[72]; /* clientToken: "" when none */
    ebb_time_ms launched_at;
    char region[32];       /* not in the XML: the caller fills it */
};

struct aws_instance_set {
    struct aws_ec2_instance *v;
    size_t n, cap;
};

/* Appends every instance of a RunInstances or DescribeInstances answer.
 * Returns 0, EBB_EPROTO or EBB_ENOMEM (the set is unchanged then). */
int aws_parse_instances(const char *xml, size_t len, struct aws_instance_set *set,
                        char *next_token, size_t token_size);

/* Reads EC2's error document (<Response><Errors><Error><Code>...). Returns
 * 0 with `code` and `message` filled, or EBB_ENOTFOUND when the body is not
 * one. */
int aws_parse_error(const char *xml, size_t len, char *code, size_t code_size,
                    char *message, size_t message_size);

/* Parses EC2's decimal price ("0.010000") into micro-units, rounding half
 * up past the sixth decimal. Returns 0, or EBB_EINVAL (also for a price
 * over EBB_MONEY_MAX). */
int aws_parse_price(const char *s, ebb_micros *out);

#endif
