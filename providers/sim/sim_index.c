/* The sim's instances, every one ever launched, in launch order, found by
 * id (instance n is "sim-<n>", at index n - 1) and by idempotency token
 * (an open-addressing hash table; a gang's members share their launch's
 * token): a launch and a terminate cost the same with ten instances or
 * ten thousand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static size_t token_hash(const char *token)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const char *c = token; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    return (size_t)h;
}

static void token_put(struct sim_instance **slots, size_t cap,
                      struct sim_instance *in)
{
    size_t i = token_hash(in->token) & (cap - 1);
    while (slots[i] != NULL)
        i = (i + 1) & (cap - 1);
    slots[i] = in;
}

int sim_index_reserve(struct sim *s, size_t n)
{
    if (s->n_inst + n > s->cap_inst) {
        size_t cap = s->cap_inst ? s->cap_inst * 2 : 16;
        while (cap < s->n_inst + n)
            cap *= 2;
        struct sim_instance **v = realloc(s->inst, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        s->inst = v;
        s->cap_inst = cap;
    }
    /* The table stays at most half full (a power of two for the mask). */
    if (2 * (s->n_inst + n) > s->cap_tokens) {
        size_t cap = s->cap_tokens ? s->cap_tokens * 2 : 32;
        while (cap < 2 * (s->n_inst + n))
            cap *= 2;
        struct sim_instance **slots = calloc(cap, sizeof(*slots));
        if (slots == NULL)
            return EBB_ENOMEM;
        for (size_t i = 0; i < s->n_inst; i++)
            token_put(slots, cap, s->inst[i]);
        free(s->by_token);
        s->by_token = slots;
        s->cap_tokens = cap;
    }
    return 0;
}

void sim_index_add(struct sim *s, struct sim_instance *in)
{
    s->inst[s->n_inst++] = in;
    token_put(s->by_token, s->cap_tokens, in);
}

struct sim_instance *sim_find_token(const struct sim *s, const char *token)
{
    if (s->cap_tokens == 0)
        return NULL;
    size_t i = token_hash(token) & (s->cap_tokens - 1);
    for (; s->by_token[i] != NULL; i = (i + 1) & (s->cap_tokens - 1)) {
        if (strcmp(s->by_token[i]->token, token) == 0)
            return s->by_token[i]->lead;
    }
    return NULL;
}

struct sim_instance *sim_find_id(const struct sim *s, const char *id)
{
    unsigned long long n = 0;
    char rest;
    if (sscanf(id, "sim-%llu%c", &n, &rest) != 1 || n == 0 || n > s->n_inst)
        return NULL;
    struct sim_instance *in = s->inst[n - 1];
    return strcmp(in->id, id) == 0 ? in : NULL;
}

void sim_index_free(struct sim *s)
{
    free(s->inst);
    free(s->by_token);
    s->inst = s->by_token = NULL;
    s->n_inst = s->cap_inst = s->cap_tokens = 0;
}
