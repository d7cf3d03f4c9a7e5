/* Credentials from the environment or the shared credentials file (an INI
 * file: "[name]" sections of "key = value" lines, '#' and ';' comments). */
#include <ebb/aws_creds.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include <ebb/common.h>

#include "base/str.h"

void ebb_aws_creds_free(struct ebb_aws_creds *c)
{
    ebb__str_wipe(&c->access_key_id);
    ebb__str_wipe(&c->secret_access_key);
    ebb__str_wipe(&c->session_token);
}

static const char *nonempty_env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static char *trimmed_copy(const char *s, size_t len)
{
    while (len > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' ||
                       s[len - 1] == '\r' || s[len - 1] == '\n'))
        len--;
    char *out = malloc(len + 1);
    if (out != NULL) {
        memcpy(out, s, len);
        out[len] = '\0';
    }
    return out;
}

/* Stores `value` into the field that `key` names, if any. */
static int take_key(struct ebb_aws_creds *c, const char *key, const char *value,
                    size_t value_len)
{
    char **field = NULL;
    if (strcmp(key, "aws_access_key_id") == 0)
        field = &c->access_key_id;
    else if (strcmp(key, "aws_secret_access_key") == 0)
        field = &c->secret_access_key;
    else if (strcmp(key, "aws_session_token") == 0)
        field = &c->session_token;
    if (field == NULL)
        return 0;
    ebb__str_wipe(field);
    *field = trimmed_copy(value, value_len);
    return *field != NULL ? 0 : EBB_ENOMEM;
}

static int read_profile(struct ebb_aws_creds *c, FILE *f, const char *profile)
{
    char line[4096];
    int in_profile = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == ';' || *p == '\n' || *p == '\r' || *p == '\0')
            continue;
        if (*p == '[') {
            char *end = strchr(p, ']');
            char *name = end != NULL ? trimmed_copy(p + 1, (size_t)(end - p - 1)) : NULL;
            in_profile = name != NULL && strcmp(name, profile) == 0;
            free(name);
            continue;
        }
        char *eq = strchr(p, '=');
        if (!in_profile || eq == NULL)
            continue;
        char *key = trimmed_copy(p, (size_t)(eq - p));
        if (key == NULL)
            return EBB_ENOMEM;
        int rc = take_key(c, key, eq + 1, strlen(eq + 1));
        free(key);
        if (rc != 0)
            return rc;
    }
    OPENSSL_cleanse(line, sizeof(line));
    return 0;
}

static int from_file(struct ebb_aws_creds *c, char *err, size_t err_size)
{
    const char *profile = nonempty_env("AWS_PROFILE");
    if (profile == NULL)
        profile = "default";
    char path[1024];
    const char *file = nonempty_env("AWS_SHARED_CREDENTIALS_FILE");
    const char *home = nonempty_env("HOME");
    if (file != NULL)
        snprintf(path, sizeof(path), "%s", file);
    else if (home != NULL)
        snprintf(path, sizeof(path), "%s/.aws/credentials", home);
    else
        path[0] = '\0';

    FILE *f = path[0] != '\0' ? fopen(path, "r") : NULL;
    if (f == NULL) {
        snprintf(err, err_size,
                 "no AWS credentials: set AWS_ACCESS_KEY_ID and "
                 "AWS_SECRET_ACCESS_KEY, or write profile \"%s\" to %s",
                 profile, path[0] != '\0' ? path : "~/.aws/credentials");
        return EBB_EAUTH;
    }
    int rc = read_profile(c, f, profile);
    fclose(f);
    if (rc != 0)
        return rc;
    if (c->access_key_id == NULL || c->access_key_id[0] == '\0' ||
        c->secret_access_key == NULL || c->secret_access_key[0] == '\0') {
        snprintf(err, err_size,
                 "no AWS credentials in profile \"%s\" of %s: it needs "
                 "aws_access_key_id and aws_secret_access_key",
                 profile, path);
        ebb_aws_creds_free(c);
        return EBB_EAUTH;
    }
    if (c->session_token != NULL && c->session_token[0] == '\0')
        ebb__str_wipe(&c->session_token);
    snprintf(c->source, sizeof(c->source), "profile \"%s\" in %s", profile, path);
    return 0;
}

int ebb_aws_creds_load(struct ebb_aws_creds *c, char *err, size_t err_size)
{
    memset(c, 0, sizeof(*c));
    err[0] = '\0';
    const char *id = nonempty_env("AWS_ACCESS_KEY_ID");
    const char *secret = nonempty_env("AWS_SECRET_ACCESS_KEY");
    if (id == NULL && secret == NULL)
        return from_file(c, err, err_size);
    if (id == NULL || secret == NULL) {
        snprintf(err, err_size, "%s is set but %s is not: set both, or "
                 "neither to use a profile", id ? "AWS_ACCESS_KEY_ID" :
                 "AWS_SECRET_ACCESS_KEY", id ? "AWS_SECRET_ACCESS_KEY" :
                 "AWS_ACCESS_KEY_ID");
        return EBB_EAUTH;
    }
    const char *token = nonempty_env("AWS_SESSION_TOKEN");
    c->access_key_id = strdup(id);
    c->secret_access_key = strdup(secret);
    c->session_token = token != NULL ? strdup(token) : NULL;
    if (c->access_key_id == NULL || c->secret_access_key == NULL ||
        (token != NULL && c->session_token == NULL)) {
        ebb_aws_creds_free(c);
        return EBB_ENOMEM;
    }
    snprintf(c->source, sizeof(c->source), "environment");
    return 0;
}
