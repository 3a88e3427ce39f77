#!/usr/bin/env python3
"""scripts/check-layers.py [LIB]: lib/'s folders include only what
lib/README.md allows, and form no cycle (LIB: another lib/ folder to check,
with its own README.md).

lib/README.md's table has one row a folder: | `name` | owns | may include |,
the last cell a comma-separated list of folders, or "—" for none.  Every
file under lib/ includes project headers as "folder/file.h"; a file in
folder A may include A's own headers and those of the folders A's row
names.  Fails (exit 1, one line a fault) on: an include of another
folder's header that the row does not allow, a project include without
its folder, a header that does not exist, a folder missing from the table
or a row without a folder, and a cycle among the rows' allowances (so
none among the includes).  Exit 0 prints the folders in an order where
each comes after everything it includes."""
import os
import re
import sys

lib = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib")
faults = []

allow = {}
row = re.compile(r"^\|\s*`([a-z0-9_]+)`\s*\|.*\|\s*([^|]*?)\s*\|\s*$")
with open(os.path.join(lib, "README.md"), encoding="utf-8") as f:
    for n, line in enumerate(f, 1):
        m = row.match(line)
        if not m:
            continue
        cell = m.group(2)
        deps = [] if cell in ("—", "-", "") else [d.strip() for d in cell.split(",")]
        allow[m.group(1)] = (set(deps), n)

folders = sorted(d for d in os.listdir(lib) if os.path.isdir(os.path.join(lib, d)))
for d in folders:
    if d not in allow:
        faults.append(f"lib/{d}/: no row in lib/README.md")
for d, (deps, n) in sorted(allow.items()):
    if d not in folders:
        faults.append(f"lib/README.md:{n}: no folder lib/{d}/")
    for e in sorted(deps):
        if e not in allow:
            faults.append(f"lib/README.md:{n}: {d} may include '{e}', which has no row")

inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for d in folders:
    for fn in sorted(os.listdir(os.path.join(lib, d))):
        if not fn.endswith((".c", ".h", ".cu", ".cuh")):
            continue
        path = os.path.join(lib, d, fn)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in inc.finditer(text):
            name = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            where = f"lib/{d}/{fn}:{line}"
            if "/" not in name:
                faults.append(f'{where}: "{name}": a project include names its folder ("folder/{name}")')
                continue
            to = name.split("/", 1)[0]
            if not os.path.isfile(os.path.join(lib, name)):
                faults.append(f'{where}: "{name}": no such file under lib/')
            elif to != d and to not in allow.get(d, (set(), 0))[0]:
                faults.append(f'{where}: "{name}": {d} may not include {to} (lib/README.md)')

# The allowances form no cycle: peel folders with nothing left to include.
order, left = [], {d: set(deps) & set(allow) for d, (deps, _) in allow.items()}
while left:
    ready = sorted(d for d, deps in left.items() if not deps - set(order))
    if not ready:
        faults.append("lib/README.md: a cycle among " + ", ".join(sorted(left)))
        break
    for d in ready:
        order.append(d)
        del left[d]

for f in faults:
    print(f"check-layers: {f}", file=sys.stderr)
if faults:
    sys.exit(1)
print(" < ".join(order))
