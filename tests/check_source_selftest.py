#!/usr/bin/env python3
"""tests/check_source.py against small trees made for the purpose: each
rule must report the file that breaks it, and leave alone the one that
keeps it. Run it as `python3 tests/check_source_selftest.py`."""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     'check_source.py')

# (files of the tree, lines the check must print, exit status)
CASES = [
    ({'src/report/r.c': '#include <sqlite3.h>\n'},
     ['src/report/r.c:1: <sqlite3.h>: only src/store/ talks to SQLite'], 1),
    ({'src/daemon/d.c': '#include <stdio.h>\n#include <sqlite3.h>\n'},
     ['src/daemon/d.c:2: <sqlite3.h>: only src/store/ talks to SQLite'], 1),
    ({'providers/p/p.c': '#include <sqlite3.h>\n'},
     ['providers/p/p.c:1: <sqlite3.h>: only src/store/ talks to SQLite'], 1),
    ({'src/store/s.c': '#include <sqlite3.h>\n',
      'tests/unit/t.c': '#include <sqlite3.h>\n',
      'bench/b.c': '#include <sqlite3.h>\n'},
     ['source rules hold'], 0),
    # providers/common/ is the providers' own shared code, as
    # policies/common/ is the policies'; a header not there is not.
    ({'providers/common/gang_join.h': '',
      'providers/p/p.c': '#include "common/gang_join.h"\n'},
     ['source rules hold'], 0),
    ({'providers/p/p.c': '#include "common/gang_join.h"\n'},
     ['providers/p/p.c:1: "common/gang_join.h": plugins include only the SDK'], 1),
    ({'policies/common/policy_util.h': '',
      'providers/p/p.c': '#include "common/policy_util.h"\n'},
     ['providers/p/p.c:1: "common/policy_util.h": plugins include only the SDK'], 1),
]


def run(files):
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w', encoding='utf-8') as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECK, root], capture_output=True,
                           text=True, check=False)
        return p.returncode, p.stdout


def main():
    failed = 0
    for files, want, status in CASES:
        rc, out = run(files)
        missing = [w for w in want if not any(l.startswith(w)
                                              for l in out.splitlines())]
        if rc != status or missing:
            failed += 1
            print(f'{sorted(files)}: exit {rc} (want {status}), '
                  f'missing {missing}; printed:\n{out}')
    print(f'{len(CASES) - failed} of {len(CASES)} cases pass')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
