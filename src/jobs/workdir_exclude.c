/* workdir_exclude: which files of a job's workdir the packing leaves out.
 * gitignore's simple forms only (see ebb__workdir_pattern_check()); what
 * gitignore has beyond them (negation, "**") is refused rather than
 * half-understood, so a pattern never means less than its writer thought. */
#include <fnmatch.h>
#include <string.h>

#include "jobs/jobspec.h"

int ebb__workdir_pattern_check(const char *p, const char **why)
{
    size_t len = strlen(p);
    *why = NULL;
    if (len == 0 || strcmp(p, "/") == 0)
        *why = "is empty";
    else if (len > EBB__WORKDIR_PATTERN_MAX)
        *why = "is longer than 255 characters";
    else if (p[0] == '!')
        *why = "negates: \"!\" patterns are not supported (leave the file out of "
               "the other patterns instead)";
    else if (strstr(p, "**") != NULL)
        *why = "holds \"**\", which is not supported (a pattern without \"/\" "
               "already matches at any depth)";
    if (*why != NULL)
        return 0;
    /* No part may be "." or "..": the pattern names paths in the workdir. */
    for (const char *part = p + (p[0] == '/'); *part != '\0';) {
        size_t n = strcspn(part, "/");
        if ((n == 1 && part[0] == '.') || (n == 2 && part[0] == '.' && part[1] == '.')) {
            *why = "holds a \".\" or \"..\" part (patterns name paths inside the workdir)";
            return 0;
        }
        if (n == 0 && part[1] != '\0') {
            *why = "holds an empty part (\"//\")";
            return 0;
        }
        part += n + (part[n] == '/');
    }
    return 1;
}

/* Whether pattern `p` matches `path` (a directory when is_dir). */
static int matches(const char *p, const char *path, int is_dir)
{
    char pat[EBB__WORKDIR_PATTERN_MAX + 1];
    size_t len = strlen(p);
    if (len > EBB__WORKDIR_PATTERN_MAX)
        return 0;
    memcpy(pat, p, len + 1);
    if (pat[len - 1] == '/') { /* directories only */
        if (!is_dir)
            return 0;
        pat[--len] = '\0';
    }
    /* As in gitignore, "*" matches a leading "." too ("*.pt": ".x.pt"). */
    if (strchr(pat, '/') != NULL) /* a path from the workdir's top */
        return fnmatch(pat + (pat[0] == '/'), path, FNM_PATHNAME) == 0;
    const char *base = strrchr(path, '/');
    return fnmatch(pat, base ? base + 1 : path, 0) == 0;
}

int ebb__workdir_excluded(const struct ebb_string_list *exclude, const char *path,
                          int is_dir)
{
    for (size_t i = 0; i < exclude->n; i++)
        if (matches(exclude->items[i], path, is_dir))
            return 1;
    return 0;
}
