/* Where ebb finds AWS credentials (the aws provider, and checkpoint
 * stores on s3://), in the order the AWS CLI
 * uses: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN)
 * from the environment, else the profile AWS_PROFILE ("default") in the
 * shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else
 * ~/.aws/credentials).
 *
 * Secrets are kept here only; messages name the variable, file and
 * profile, never a key.
 */
#ifndef EBB_AWS_CREDS_H
#define EBB_AWS_CREDS_H

#include <stddef.h>

#include "common.h"

struct ebb_aws_creds {
    char *access_key_id;
    char *secret_access_key;
    char *session_token; /* NULL without temporary credentials */
    char source[256];    /* "environment" or "profile default in /home/u/.aws/credentials" */
};

/* Loads credentials. Returns 0, EBB_EAUTH with a message in `err` (what
 * is missing and how to provide it), or EBB_ENOMEM. */
int ebb_aws_creds_load(struct ebb_aws_creds *c, char *err, size_t err_size);

/* Wipes and frees the strings. */
void ebb_aws_creds_free(struct ebb_aws_creds *c);

#endif
