#!/usr/bin/env python3
"""The engine's call direction (src/engine/internal.h), checked.

internal.h lists the engine's files from the top (engine.c) down to the
leaf (engine_state.c) and says that each file calls only the files listed
below it. This script finds, for every src/engine/engine*.c, the ebb__
functions it names that another engine file defines, and reports each one
defined in a file listed above it (or not listed at all): a call upward,
which would bring back the include/call cycle the list rules out.
vengine.c is the engine's first outside user: it may include only
engine/engine.h.

Prints each violation as FILE:LINE: what is wrong and exits 1 when there
is any. Run it as `python3 tests/check_engine_calls.py [ROOT]`.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_source import code_lines  # noqa: E402

LISTED = re.compile(r'^ \*   (engine[a-z_]*\.c)\b')
NAME = re.compile(r'\b(ebb__[a-z0-9_]+)\s*\(')
# A definition starts at the line's beginning: "type name(" with no
# indentation, and is followed by a body, not a ';'.
DEFINITION = re.compile(r'^[a-z][^;()]*?\b(ebb__[a-z0-9_]+)\s*\(')


def call_order(internal_h):
    """The engine's files from the top down, as internal.h lists them."""
    order = []
    with open(internal_h, encoding='utf-8') as f:
        for line in f:
            m = LISTED.match(line)
            if m:
                order.append(m.group(1))
    return order


def definitions(lines):
    """The ebb__ functions defined in a file's code lines."""
    names = set()
    for no, line in enumerate(lines):
        m = DEFINITION.match(line)
        if not m:
            continue
        rest = '\n'.join(lines[no:])[m.end():]
        body, end = rest.find('{'), rest.find(';')
        if body != -1 and (end == -1 or body < end):
            names.add(m.group(1))
    return names


def main(root):
    engine = os.path.join(root, 'src', 'engine')
    order = call_order(os.path.join(engine, 'internal.h'))
    problems = []
    if not order:
        problems.append('src/engine/internal.h: no call direction list found')
    files = sorted(n for n in os.listdir(engine)
                   if n.startswith('engine') and n.endswith('.c'))
    lines, owner = {}, {}
    for name in files:
        with open(os.path.join(engine, name), encoding='utf-8') as f:
            lines[name] = code_lines(f.read())
        for fn in definitions(lines[name]):
            owner[fn] = name
        if name not in order:
            problems.append(f'src/engine/{name}: not in the call direction '
                            f'list of src/engine/internal.h; add it there')
    for name in files:
        if name not in order:
            continue
        for no, line in enumerate(lines[name], 1):
            for m in NAME.finditer(line):
                callee = owner.get(m.group(1))
                if callee is None or callee == name or callee not in order:
                    continue
                if order.index(callee) < order.index(name):
                    problems.append(
                        f'src/engine/{name}:{no}: {m.group(1)}() is '
                        f'{callee}\'s, listed above {name} in '
                        f'src/engine/internal.h: a call upward (move it '
                        f'down, or hand it over as a verdict or callback)')
    with open(os.path.join(engine, 'vengine.c'), encoding='utf-8') as f:
        for no, line in enumerate(f, 1):
            if re.match(r'\s*#\s*include\s*"engine/internal\.h"', line):
                problems.append(f'src/engine/vengine.c:{no}: the engine on '
                                f'the virtual clock uses engine/engine.h only')
    for p in problems:
        print(p)
    if problems:
        print(f'{len(problems)} engine call direction violation(s)')
        return 1
    print(f'engine call direction holds ({len(order)} files)')
    return 0


if __name__ == '__main__':
    sys.exit(main(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                                  os.path.join(os.path.dirname(__file__), '..'))))
