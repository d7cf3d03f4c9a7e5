#include "plugin/plugin.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/paths.h"
#include "base/str.h"
#include "ebb_build_config.h"

const char *ebb__plugin_kind_dir(enum ebb__plugin_kind kind)
{
    return kind == EBB__PLUGIN_PROVIDER ? "providers" : "policies";
}

static const char *kind_noun(enum ebb__plugin_kind kind)
{
    return kind == EBB__PLUGIN_PROVIDER ? "provider" : "policy";
}

static int path_add(struct ebb__plugin_path *path, const char *dir, size_t len)
{
    if (len == 0)
        return 0;
    char **dirs = realloc(path->dirs, (path->n + 1) * sizeof(*dirs));
    if (dirs == NULL)
        return EBB_ENOMEM;
    path->dirs = dirs;
    path->dirs[path->n] = strndup(dir, len);
    if (path->dirs[path->n] == NULL)
        return EBB_ENOMEM;
    path->n++;
    return 0;
}

int ebb__plugin_path_init(struct ebb__plugin_path *path,
                          const struct ebb_string_list *configured)
{
    *path = (struct ebb__plugin_path){0};
    int rc = 0;
    for (size_t i = 0; configured != NULL && i < configured->n && rc == 0; i++)
        rc = path_add(path, configured->items[i], strlen(configured->items[i]));
    const char *env = getenv("EBB_PLUGIN_PATH");
    while (env != NULL && *env != '\0' && rc == 0) {
        const char *colon = strchr(env, ':');
        size_t len = colon ? (size_t)(colon - env) : strlen(env);
        rc = path_add(path, env, len);
        env = colon ? colon + 1 : NULL;
    }
    /* An uninstalled program loads the plugins built beside it, never an
     * installed set that may be another version. */
    const char *built = ebb__uninstalled_build_root();
    const char *last = built != NULL ? built : EBB_PLUGIN_DIR;
    if (rc == 0)
        rc = path_add(path, last, strlen(last));
    if (rc != 0)
        ebb__plugin_path_free(path);
    return rc;
}

void ebb__plugin_path_free(struct ebb__plugin_path *path)
{
    for (size_t i = 0; i < path->n; i++)
        free(path->dirs[i]);
    free(path->dirs);
    *path = (struct ebb__plugin_path){0};
}

/* Checks the exported struct: the major ABI must match exactly, and the
 * struct must be at least as large as the first version of this ABI so that
 * every field we read exists. Fields appended since are read only when
 * struct_size covers them (the copy in ebb__plugin_open_file()); fields this ebb does not know are
 * ignored. */
static int check_abi(enum ebb__plugin_kind kind, const char *file,
                     const void *entry, struct ebb_diag *d)
{
    uint32_t abi, size, want_abi;
    size_t min_size;
    if (kind == EBB__PLUGIN_PROVIDER) {
        const struct ebb_provider *p = entry;
        abi = p->abi;
        size = p->struct_size;
        want_abi = EBB_PROVIDER_ABI;
        min_size = EBB_PROVIDER_SIZE_V1;
    } else {
        const struct ebb_policy *p = entry;
        abi = p->abi;
        size = p->struct_size;
        want_abi = EBB_POLICY_ABI;
        min_size = EBB_POLICY_SIZE_V1;
    }
    if (abi != want_abi) {
        ebb_diag_set(d, NULL, 0,
                      "%s: built for %s ABI %u, but this ebb speaks ABI %u; "
                      "rebuild the plugin against this ebb's include/ebb headers",
                      file, kind_noun(kind), abi, want_abi);
        return EBB_EABI;
    }
    if (size < min_size) {
        ebb_diag_set(d, NULL, 0,
                      "%s: struct_size %u is smaller than the first version "
                      "of struct ebb_%s in ABI %u (%zu bytes); set "
                      "struct_size = sizeof(struct ebb_%s) and rebuild",
                      file, size, kind_noun(kind), want_abi, min_size,
                      kind_noun(kind));
        return EBB_EABI;
    }
    return 0;
}

/* How much of a plugin's struct of `struct_size` bytes fits the core's of
 * `size`: the rest of the core's copy stays zero (calloc()). */
static size_t covered(uint32_t struct_size, size_t size)
{
    return struct_size < size ? struct_size : size;
}

int ebb__plugin_open_file(enum ebb__plugin_kind kind, const char *file,
                          struct ebb__plugin **out, struct ebb_diag *d)
{
    *out = NULL;
    /* RTLD_LOCAL keeps one plugin's symbols from satisfying another's;
     * RTLD_NOW makes a missing dependency fail here, not mid-run. */
    void *dl = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        ebb_diag_set(d, NULL, 0, "cannot load %s plugin: %s (run `ldd %s` to "
                      "see which library is missing)", kind_noun(kind),
                      dlerror(), file);
        return EBB_EIO;
    }
    const char *symbol = kind == EBB__PLUGIN_PROVIDER ? "ebb_provider_entry"
                                                      : "ebb_policy_entry";
    void *sym = dlsym(dl, symbol);
    if (sym == NULL) {
        ebb_diag_set(d, NULL, 0, "%s: not an ebb %s plugin (no exported "
                      "symbol %s; export it with EBB_EXTERN)", file,
                      kind_noun(kind), symbol);
        dlclose(dl);
        return EBB_EABI;
    }
    const void *entry;
    /* POSIX guarantees that a dlsym() result converts to a function
     * pointer; the memcpy keeps -Wpedantic quiet about the conversion. */
    if (kind == EBB__PLUGIN_PROVIDER) {
        ebb_provider_entry_fn fn;
        memcpy(&fn, &sym, sizeof(fn));
        entry = fn();
    } else {
        ebb_policy_entry_fn fn;
        memcpy(&fn, &sym, sizeof(fn));
        entry = fn();
    }
    if (entry == NULL) {
        ebb_diag_set(d, NULL, 0, "%s: %s() returned NULL", file, symbol);
        dlclose(dl);
        return EBB_EABI;
    }
    int rc = check_abi(kind, file, entry, d);
    if (rc != 0) {
        dlclose(dl);
        return rc;
    }
    struct ebb__plugin *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        dlclose(dl);
        return EBB_ENOMEM;
    }
    p->kind = kind;
    p->dl = dl;
    p->path = strdup(file);
    if (kind == EBB__PLUGIN_PROVIDER) {
        const struct ebb_provider *src = entry;
        memcpy(&p->copy.provider, src,
               covered(src->struct_size, sizeof(p->copy.provider)));
        p->provider = &p->copy.provider;
        p->name = strdup(p->provider->name ? p->provider->name : "");
    } else {
        const struct ebb_policy *src = entry;
        memcpy(&p->copy.policy, src,
               covered(src->struct_size, sizeof(p->copy.policy)));
        p->policy = &p->copy.policy;
        p->name = strdup(p->policy->name ? p->policy->name : "");
    }
    if (p->path == NULL || p->name == NULL) {
        ebb__plugin_close(p);
        return EBB_ENOMEM;
    }
    *out = p;
    return 0;
}

static int file_exists(const char *file)
{
    struct stat st;
    return stat(file, &st) == 0 && S_ISREG(st.st_mode);
}

int ebb__plugin_open(enum ebb__plugin_kind kind, const char *name,
                     const struct ebb__plugin_path *path,
                     struct ebb__plugin **out, struct ebb_diag *d)
{
    *out = NULL;
    if (name[0] == '\0' || strchr(name, '/') != NULL) {
        ebb_diag_set(d, NULL, 0, "\"%s\" is not a valid %s name",
                      name, kind_noun(kind));
        return EBB_EINVAL;
    }
    for (size_t i = 0; i < path->n; i++) {
        char *file = ebb_strfmt("%s/%s/%s.so", path->dirs[i],
                                 ebb__plugin_kind_dir(kind), name);
        if (file == NULL)
            return EBB_ENOMEM;
        if (!file_exists(file)) {
            free(file);
            continue;
        }
        int rc = ebb__plugin_open_file(kind, file, out, d);
        if (rc == 0 && strcmp((*out)->name, name) != 0) {
            ebb_diag_set(d, NULL, 0, "%s: the plugin calls itself \"%s\"; "
                          "rename the file or the plugin so they agree",
                          file, (*out)->name);
            ebb__plugin_close(*out);
            *out = NULL;
            rc = EBB_EABI;
        }
        free(file);
        return rc;
    }
    char dirs[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < path->n && used < sizeof(dirs); i++) {
        int n = snprintf(dirs + used, sizeof(dirs) - used, "%s%s/%s",
                         i ? ", " : "", path->dirs[i], ebb__plugin_kind_dir(kind));
        if (n < 0)
            break;
        used += (size_t)n;
    }
    ebb_diag_set(d, NULL, 0, "no %s plugin named \"%s\" (looked in %s; set "
                  "plugin_dirs in ebb.yaml or EBB_PLUGIN_PATH)",
                  kind_noun(kind), name, dirs);
    return EBB_ENOTFOUND;
}

void ebb__plugin_close(struct ebb__plugin *plugin)
{
    if (plugin == NULL)
        return;
    if (plugin->dl != NULL)
        dlclose(plugin->dl);
    free(plugin->name);
    free(plugin->path);
    free(plugin);
}

const struct ebb_cfg_key *ebb__plugin_config_keys(const struct ebb__plugin *p)
{
    return p->kind == EBB__PLUGIN_PROVIDER ? p->provider->config_keys
                                           : p->policy->config_keys;
}

size_t ebb__plugin_config_size(const struct ebb__plugin *p)
{
    return p->kind == EBB__PLUGIN_PROVIDER ? p->provider->config_size
                                           : p->policy->config_size;
}

const char *ebb__plugin_description(const struct ebb__plugin *p)
{
    const char *desc = p->kind == EBB__PLUGIN_PROVIDER ? p->provider->description
                                                       : p->policy->description;
    return desc ? desc : "";
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int seen(char **names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

int ebb__plugin_list(enum ebb__plugin_kind kind,
                     const struct ebb__plugin_path *path,
                     void (*cb)(void *arg, const char *name, const char *file),
                     void *arg)
{
    char **shown = NULL;
    size_t n_shown = 0;
    int rc = 0;
    for (size_t i = 0; i < path->n && rc == 0; i++) {
        char *dir = ebb_strfmt("%s/%s", path->dirs[i], ebb__plugin_kind_dir(kind));
        if (dir == NULL) {
            rc = EBB_ENOMEM;
            break;
        }
        DIR *dh = opendir(dir);
        char **names = NULL;
        size_t n_names = 0;
        while (dh != NULL && rc == 0) {
            struct dirent *de = readdir(dh);
            if (de == NULL)
                break;
            size_t len = strlen(de->d_name);
            if (len <= 3 || strcmp(de->d_name + len - 3, ".so") != 0)
                continue;
            char **grown = realloc(names, (n_names + 1) * sizeof(*names));
            if (grown == NULL) {
                rc = EBB_ENOMEM;
                break;
            }
            names = grown;
            names[n_names] = strndup(de->d_name, len - 3);
            if (names[n_names] == NULL)
                rc = EBB_ENOMEM;
            else
                n_names++;
        }
        if (dh != NULL)
            closedir(dh);
        if (n_names > 0)
            qsort(names, n_names, sizeof(*names), cmp_str);
        for (size_t j = 0; j < n_names; j++) {
            if (rc == 0 && !seen(shown, n_shown, names[j])) {
                char *file = ebb_strfmt("%s/%s.so", dir, names[j]);
                char **grown = realloc(shown, (n_shown + 1) * sizeof(*shown));
                if (file == NULL || grown == NULL) {
                    free(file);
                    if (grown != NULL)
                        shown = grown;
                    rc = EBB_ENOMEM;
                } else {
                    shown = grown;
                    cb(arg, names[j], file);
                    free(file);
                    shown[n_shown++] = names[j];
                    names[j] = NULL;
                }
            }
            free(names[j]);
        }
        free(names);
        free(dir);
    }
    for (size_t i = 0; i < n_shown; i++)
        free(shown[i]);
    free(shown);
    return rc;
}
