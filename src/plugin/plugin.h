/* The plugin loader: finds provider and policy shared modules, opens them
 * with dlopen(RTLD_NOW | RTLD_LOCAL), checks their ABI and hands back the
 * struct they export. Every failure is reported with what to do about it.
 *
 * Search order for a plugin NAME of a KIND ("providers" or "policies"):
 * each directory D of the search path is tried as D/KIND/NAME.so. The path
 * is: `plugin_dirs` from ebb.yaml, then the colon-separated EBB_PLUGIN_PATH,
 * then the install directory (EBB_PLUGIN_DIR, e.g. /usr/lib/.../ebb), or,
 * for a program run from its build tree, that build tree instead.
 */
#ifndef EBB_PLUGIN_H
#define EBB_PLUGIN_H

#include <ebb/config.h>
#include <ebb/diag.h>
#include <ebb/policy.h>
#include <ebb/provider.h>

enum ebb__plugin_kind {
    EBB__PLUGIN_PROVIDER,
    EBB__PLUGIN_POLICY,
};

struct ebb__plugin {
    enum ebb__plugin_kind kind;
    char *name;
    char *path;
    void *dl;
    /* Exactly one is set, by kind, and points at the copy below. */
    const struct ebb_provider *provider;
    const struct ebb_policy *policy;
    /* The struct the plugin exported as this ebb reads it: the fields its
     * struct_size covers, copied, and the rest zero (appended after the
     * plugin was built; each reads as absent). So no reader tests
     * struct_size again; struct_size here is the plugin's. */
    union {
        struct ebb_provider provider;
        struct ebb_policy policy;
    } copy;
};

struct ebb__plugin_path {
    char **dirs;
    size_t n;
};

/* Builds the search path from the configured directories (may be NULL) and
 * the environment. Returns 0 or EBB_ENOMEM. Free with
 * ebb__plugin_path_free(). */
int ebb__plugin_path_init(struct ebb__plugin_path *path,
                          const struct ebb_string_list *configured);
void ebb__plugin_path_free(struct ebb__plugin_path *path);

/* "providers" or "policies". */
const char *ebb__plugin_kind_dir(enum ebb__plugin_kind kind);

/* Finds and opens plugin `name`. On failure returns EBB_ENOTFOUND (no such
 * plugin on the path), EBB_EABI (refused: another ABI, or a struct_size
 * smaller than the first version's) or EBB_EIO (dlopen failed), with a
 * message in `d`. The caller owns *out; close it with ebb__plugin_close(). */
int ebb__plugin_open(enum ebb__plugin_kind kind, const char *name,
                     const struct ebb__plugin_path *path,
                     struct ebb__plugin **out, struct ebb_diag *d);

/* Opens the plugin at an explicit file path (tests, `ebb providers
 * describe ./x.so`). Same errors as ebb__plugin_open(). */
int ebb__plugin_open_file(enum ebb__plugin_kind kind, const char *file,
                          struct ebb__plugin **out, struct ebb_diag *d);

/* dlcloses and frees; NULL is ignored. The struct the plugin exported must
 * not be used afterwards. */
void ebb__plugin_close(struct ebb__plugin *plugin);

/* The configuration table and size a plugin declared. */
const struct ebb_cfg_key *ebb__plugin_config_keys(const struct ebb__plugin *p);
size_t ebb__plugin_config_size(const struct ebb__plugin *p);
const char *ebb__plugin_description(const struct ebb__plugin *p);

/* Calls `cb` once per distinct plugin name of `kind` found on the path, in
 * path order then name order (a name found earlier hides later ones). */
int ebb__plugin_list(enum ebb__plugin_kind kind,
                     const struct ebb__plugin_path *path,
                     void (*cb)(void *arg, const char *name, const char *file),
                     void *arg);

#endif
