/* ebb providers / ebb policies: what ebbd loaded, and what each plugin
 * accepts in its section of ebb.yaml (read from the plugin's own table, so
 * `describe` works without a running daemon). */
#include <stdio.h>
#include <string.h>

#include "base/cfg_table.h"
#include "cli/cli.h"
#include "plugin/plugin.h"

static const char providers_usage[] =
    "Usage: ebb providers [--json]\n"
    "       ebb providers describe NAME [--json]\n"
    "\n"
    "Lists the providers ebbd loaded (the ones configured under providers:\n"
    "in ebb.yaml). `describe` prints the configuration keys the provider\n"
    "plugin NAME accepts, their types, defaults and meaning; it loads the\n"
    "plugin itself and needs no daemon.\n"
    "\n"
    "  --json  print JSON instead of a table\n";

static const char policies_usage[] =
    "Usage: ebb policies [--json]\n"
    "       ebb policies describe NAME [--json]\n"
    "\n"
    "Lists the policies ebbd loaded. `describe` prints the configuration keys\n"
    "of the policy plugin NAME (for its section under policies: in ebb.yaml);\n"
    "it needs no daemon.\n"
    "\n"
    "  --json  print JSON instead of a table\n";

/* Providers also show how their price polls fare. */
static void print_plugins(json_t *plugins, int with_status, const char *none)
{
    static const char *const headers[] = {"NAME", "DESCRIPTION", "PATH"};
    static const char *const status_headers[] = {"NAME", "STATUS", "DESCRIPTION"};
    struct cli_table *t = cli_table_new(3, with_status ? status_headers : headers);
    size_t i;
    json_t *p;
    json_array_foreach(plugins, i, p) {
        const char *status = json_string_value(json_object_get(p, "status"));
        const char *row[] = {
            json_string_value(json_object_get(p, "name")),
            with_status ? (status ? status : "-")
                        : json_string_value(json_object_get(p, "description")),
            json_string_value(json_object_get(p, with_status ? "description" : "path")),
        };
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout, none);
}

static int describe(enum ebb__plugin_kind kind, const char *name, int json)
{
    struct ebb__plugin_path path;
    if (ebb__plugin_path_init(&path, NULL) != 0)
        return CLI_FAIL;
    struct ebb__plugin *plugin;
    struct ebb_diag d = {{0}};
    int rc = ebb__plugin_open(kind, name, &path, &plugin, &d);
    ebb__plugin_path_free(&path);
    if (rc != 0) {
        fprintf(stderr, "ebb: %s\n", d.msg);
        return rc == EBB_ENOTFOUND ? CLI_USAGE : CLI_FAIL;
    }
    const struct ebb_cfg_key *keys = ebb__plugin_config_keys(plugin);
    if (json) {
        json_t *arr = json_array();
        for (const struct ebb_cfg_key *k = keys; k && k->key; k++)
            json_array_append_new(arr, json_pack("{s:s,s:s,s:s?,s:s}",
                "key", k->key, "type", ebb__cfg_type_name(k->type),
                "default", k->default_value, "help", k->help ? k->help : ""));
        json_t *o = json_pack("{s:s,s:s,s:s,s:o}", "name", plugin->name,
                              "description", ebb__plugin_description(plugin),
                              "path", plugin->path, "config", arr);
        cli_print_json(o);
        json_decref(o);
    } else {
        printf("%s: %s\n(%s)\n\n", plugin->name, ebb__plugin_description(plugin),
               plugin->path);
        printf("Configuration (ebb.yaml, under %s.%s):\n",
               ebb__plugin_kind_dir(kind), plugin->name);
        static const char *const headers[] = {"KEY", "TYPE", "DEFAULT", "DESCRIPTION"};
        struct cli_table *t = cli_table_new(4, headers);
        for (const struct ebb_cfg_key *k = keys; k && k->key; k++) {
            const char *row[] = {k->key, ebb__cfg_type_name(k->type),
                                 k->default_value ? k->default_value : "(none)",
                                 k->help};
            cli_table_add(t, row);
        }
        cli_table_print(t, stdout, "(no configuration keys)");
    }
    ebb__plugin_close(plugin);
    return CLI_OK;
}

static int run(struct cli *cli, int argc, char **argv, enum ebb__plugin_kind kind,
               const char *usage)
{
    if (cli_wants_help(argc, argv, usage))
        return CLI_OK;
    int json = 0;
    const char *describe_name = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "describe") == 0 && i == 1 && i + 1 < argc &&
                   argv[i + 1][0] != '-') {
            describe_name = argv[++i];
        } else {
            fprintf(stderr, "ebb %s: unexpected argument \"%s\"\n%s", argv[0],
                    argv[i], usage);
            return CLI_USAGE;
        }
    }
    if (describe_name != NULL)
        return describe(kind, describe_name, json);
    json_t *r;
    int code = cli_call(cli, "status", NULL, &r);
    if (code != CLI_OK)
        return code;
    const char *key = ebb__plugin_kind_dir(kind);
    json_t *list = json_object_get(r, key);
    if (json) {
        json_t *o = json_pack("{s:O}", key, list);
        cli_print_json(o);
        json_decref(o);
    } else {
        print_plugins(list, kind == EBB__PLUGIN_PROVIDER,
                      kind == EBB__PLUGIN_PROVIDER
                          ? "no providers configured (add one under "
                            "providers: in ebb.yaml)"
                          : "no policies installed");
    }
    json_decref(r);
    return CLI_OK;
}

int cmd_providers(struct cli *cli, int argc, char **argv)
{
    return run(cli, argc, argv, EBB__PLUGIN_PROVIDER, providers_usage);
}

int cmd_policies(struct cli *cli, int argc, char **argv)
{
    return run(cli, argc, argv, EBB__PLUGIN_POLICY, policies_usage);
}
