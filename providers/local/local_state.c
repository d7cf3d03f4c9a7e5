/* State files of local instances: PLUGIN_DIR/<key>.json, one per instance
 * and one per member of a gang (which names its launch's token, its rank,
 * the gang's size and whether a join started it, so that the gang is
 * found again). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "local.h"

static char *state_path(const struct local *l, const char *key)
{
    char *path = NULL;
    return asprintf(&path, "%s/%s.json", l->dir, key) < 0 ? NULL : path;
}

int local_state_save(struct local *l, const struct local_inst *inst)
{
    char *path = state_path(l, inst->key);
    char *tmp = NULL;
    if (path == NULL || asprintf(&tmp, "%s.tmp", path) < 0) {
        free(path);
        return EBB_ENOMEM;
    }
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:b,s:I,s:I,s:I}", "token", inst->token,
                          "key", inst->key, "id", inst->id, "job_id", inst->job_id,
                          "rank", (json_int_t)inst->rank, "size", (json_int_t)inst->size,
                          "joined", inst->joined,
                          "pid", (json_int_t)inst->pid,
                          "start_ticks", (json_int_t)inst->start_ticks,
                          "launched_at", (json_int_t)inst->launched_at);
    /* Written aside and renamed, so a crash never leaves half a file. */
    int rc = j != NULL && json_dump_file(j, tmp, JSON_COMPACT) == 0 &&
                     rename(tmp, path) == 0
                 ? 0
                 : EBB_EIO;
    if (rc != 0) {
        l->host->log(l->host->ctx, EBB_LOG_ERROR, "cannot write %s", path);
        unlink(tmp);
    }
    json_decref(j);
    free(tmp);
    free(path);
    return rc;
}

void local_state_remove(struct local *l, const struct local_inst *inst)
{
    char *path = state_path(l, inst->key);
    if (path != NULL)
        unlink(path);
    free(path);
}

/* A file written before gangs names no key, rank or size: a single
 * instance, whose key is its token. */
static struct local_inst *inst_from_json(json_t *j)
{
    const char *token = json_string_value(json_object_get(j, "token"));
    const char *key = json_string_value(json_object_get(j, "key"));
    json_int_t size = json_object_get(j, "size") ? json_integer_value(json_object_get(j, "size"))
                                                 : 1;
    json_int_t rank = json_integer_value(json_object_get(j, "rank"));
    if (key == NULL)
        key = token;
    const char *id = json_string_value(json_object_get(j, "id"));
    const char *job = json_string_value(json_object_get(j, "job_id"));
    struct local_inst *inst = calloc(1, sizeof(*inst));
    if (inst == NULL || token == NULL || id == NULL || job == NULL ||
        strlen(token) >= sizeof(inst->token) || strlen(key) >= sizeof(inst->key) ||
        strlen(id) >= sizeof(inst->id) || strlen(job) >= sizeof(inst->job_id) ||
        size < 1 || size > EBB_GANG_MAX || rank < 0 || rank >= size) {
        free(inst);
        return NULL;
    }
    snprintf(inst->token, sizeof(inst->token), "%s", token);
    snprintf(inst->key, sizeof(inst->key), "%s", key);
    inst->rank = (unsigned)rank;
    inst->size = (unsigned)size;
    inst->joined = json_is_true(json_object_get(j, "joined"));
    snprintf(inst->id, sizeof(inst->id), "%s", id);
    snprintf(inst->job_id, sizeof(inst->job_id), "%s", job);
    inst->pid = (pid_t)json_integer_value(json_object_get(j, "pid"));
    inst->start_ticks =
        (unsigned long long)json_integer_value(json_object_get(j, "start_ticks"));
    inst->launched_at = json_integer_value(json_object_get(j, "launched_at"));
    return inst;
}

void local_state_load(struct local *l)
{
    if (l->loaded || l->dir == NULL)
        return;
    l->loaded = 1;
    DIR *dir = opendir(l->dir);
    struct dirent *de;
    for (;;) {
        de = dir != NULL ? readdir(dir) : NULL;
        if (de == NULL)
            break;
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        char *path = NULL;
        if (asprintf(&path, "%s/%s", l->dir, de->d_name) < 0)
            continue;
        json_t *j = json_load_file(path, 0, NULL);
        struct local_inst *inst = j ? inst_from_json(j) : NULL;
        if (inst != NULL) {
            ebb_list_insert_head(&l->insts, &inst->node);
        } else {
            l->host->log(l->host->ctx, EBB_LOG_WARN, "ignoring unreadable "
                         "instance file %s", path);
        }
        json_decref(j);
        free(path);
    }
    if (dir != NULL)
        closedir(dir);
}
