#!/usr/bin/env python3
"""The source rules the compiler cannot see, checked on every file.

1. Layers (docs/architecture.md): a file under src/<folder>/ includes
   headers only from its own folder or from folders before it in LAYERS;
   the programs (daemon, cli, agent) never include one another, and the
   agent, which runs on rented machines, uses only base and io. Every
   project header is included with its folder ("store/store.h"). A
   folder's internal.h (engine/internal.h) is for that folder's own files:
   the rest of src/ sees its front header (engine/engine.h).
2. The plugin SDK: providers/ and policies/ include only <ebb/...> (the
   SDK), their own folder's headers, and policies/common's or
   providers/common's shared helpers.
3. Banned calls (curl's docs/internals/CODE_STYLE and our STYLE.md):
   sprintf, vsprintf, strcpy, strcat, strncat, strtok, atoi, atol, atoll,
   gets, and tmpnam have safer forms we always use instead.
4. The store owns all SQL: in src/, providers/ and policies/ only
   src/store/ includes <sqlite3.h>; the rest asks the store for typed
   rows. (Tests may check a database with SQL of their own, through
   tests/lib/store_peek.h; bench/ measures the store against plain
   SQLite.)

Prints each violation as FILE:LINE: what is wrong, and exits 1 when there
is any. Run it as `python3 tests/check_source.py [ROOT]`.
"""
import os
import re
import sys

LAYERS = ['base', 'io', 'objstore', 'store', 'config', 'plugin', 'market', 'jobs',
          'engine', 'report']
PROGRAMS = {
    'daemon': set(LAYERS),
    'cli': set(LAYERS),
    'agent': {'base', 'io'},
}
BANNED = ['sprintf', 'vsprintf', 'strcpy', 'strcat', 'strncat', 'strtok',
          'atoi', 'atol', 'atoll', 'gets', 'tmpnam']
CORE_FOLDERS = set(LAYERS) | set(PROGRAMS)
# Only this folder talks to SQLite (rule 4).
SQL_FOLDER = 'store'
SQL_HEADER = 'sqlite3.h'
# Headers generated into the build root, not part of any layer.
GENERATED = {'ebb_build_config.h'}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
BANNED_CALL = re.compile(r'(?<![\w.>])(' + '|'.join(BANNED) + r')\s*\(')


def code_lines(text):
    """The file's lines with comments and string literals blanked, so that
    a word in a comment or a message is not taken for a call."""
    out, i, n = [], 0, len(text)
    buf = []
    state = None
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ''
        if state is None:
            if c == '/' and nxt == '*':
                state, i = 'block', i + 2
                buf.append('  ')
                continue
            if c == '/' and nxt == '/':
                state = 'line'
            elif c in '"\'':
                state = c
            buf.append(c)
        elif state == 'block':
            if c == '*' and nxt == '/':
                state, i = None, i + 2
                buf.append('  ')
                continue
            buf.append('\n' if c == '\n' else ' ')
        elif state == 'line':
            if c == '\n':
                state = None
                buf.append(c)
            else:
                buf.append(' ')
        else:  # inside a string or character literal
            if c == '\\':
                buf.append('  ' if nxt != '\n' else ' \n')
                i += 2
                continue
            if c == state:
                state = None
                buf.append(c)
            else:
                buf.append('\n' if c == '\n' else ' ')
        i += 1
    out = ''.join(buf).split('\n')
    return out


def check_core_include(rel, folder, target, problems, where):
    if target in GENERATED:
        return
    if '/' not in target:
        problems.append(f'{where}: "{target}": include project headers '
                        f'with their folder ("{folder}/{target}" or the '
                        f'folder it lives in)')
        return
    dep = target.split('/', 1)[0]
    if dep == folder:
        return
    if os.path.basename(target) == 'internal.h':
        problems.append(f'{where}: "{target}": a folder\'s internal.h is for '
                        f'its own files; use its front header ({dep}/{dep}.h '
                        f'or another public one), or add an accessor there')
        return
    if folder in LAYERS:
        if dep not in LAYERS:
            problems.append(f'{where}: "{target}": a layer never includes '
                            f'a program\'s headers')
        elif LAYERS.index(dep) > LAYERS.index(folder):
            problems.append(f'{where}: "{target}": {folder}/ comes before '
                            f'{dep}/ in the layers and must not include it '
                            f'(move what it needs down, or add the function '
                            f'to {folder}/)')
        return
    allowed = PROGRAMS.get(folder)
    if allowed is None:
        problems.append(f'{where}: src/{folder}/ is not a known layer or '
                        f'program; add it to tests/check_source.py')
    elif dep in PROGRAMS:
        problems.append(f'{where}: "{target}": programs never include one '
                        f'another\'s headers')
    elif dep not in allowed:
        problems.append(f'{where}: "{target}": src/{folder}/ may use only '
                        f'{", ".join(sorted(allowed))}')


def check_plugin_include(path, kind, target, problems, where):
    if kind == '<':
        if target.split('/', 1)[0] in CORE_FOLDERS:
            problems.append(f'{where}: <{target}>: plugins include only the '
                            f'SDK (<ebb/...>) and system headers')
        return
    if target.startswith('ebb/'):
        return
    here = os.path.dirname(path)
    if '/' not in target and os.path.exists(os.path.join(here, target)):
        return
    # policies/common/ and providers/common/ are the plugins' own shared
    # code (compiled into each module that uses it, never part of the
    # core): "common/policy_util.h", "common/gang_join.h".
    for kind_dir in ('policies', 'providers'):
        top = os.path.join(ROOT, kind_dir)
        if (here.startswith(top) and target.startswith('common/') and
                os.path.exists(os.path.join(top, target))):
            return
    problems.append(f'{where}: "{target}": plugins include only the SDK '
                    f'(<ebb/...>) and their own folder\'s headers')


def check_sql_include(parts, kind, target, problems, where):
    if kind != '<' or target != SQL_HEADER:
        return
    if parts[0] == 'src' and len(parts) == 3 and parts[1] == SQL_FOLDER:
        return
    problems.append(f'{where}: <{SQL_HEADER}>: only src/{SQL_FOLDER}/ talks '
                    f'to SQLite (add a query to src/{SQL_FOLDER}/ that '
                    f'returns typed rows, and call it)')


def main():
    problems = []
    for top in ('src', 'providers', 'policies', 'tests', 'bench'):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if not name.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                with open(path, encoding='utf-8') as f:
                    text = f.read()
                for no, line in enumerate(code_lines(text), 1):
                    m = BANNED_CALL.search(line)
                    if m:
                        problems.append(f'{rel}:{no}: {m.group(1)}() is '
                                        f'banned (STYLE.md); use its bounded '
                                        f'or checked form')
                parts = rel.split(os.sep)
                for no, line in enumerate(text.split('\n'), 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    where = f'{rel}:{no}'
                    if parts[0] in ('src', 'providers', 'policies'):
                        check_sql_include(parts, m.group(1), m.group(2),
                                          problems, where)
                    if parts[0] == 'src' and len(parts) == 3:
                        if m.group(1) == '"':
                            check_core_include(rel, parts[1], m.group(2),
                                               problems, where)
                    elif parts[0] in ('providers', 'policies'):
                        check_plugin_include(path, m.group(1), m.group(2),
                                             problems, where)
    for p in problems:
        print(p)
    if problems:
        print(f'{len(problems)} source rule violation(s)')
        return 1
    print('source rules hold')
    return 0


ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), '..'))

if __name__ == '__main__':
    sys.exit(main())
