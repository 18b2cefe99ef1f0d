#!/usr/bin/env python3
"""The include graph of the C tree, and the rule that it has no circle.

A module is a file stem of src/<part>/ and include/<part>/ (x.c and x.h together); module A
depends on module B when x.c or x.h of A includes "<part>/B.h". Within each part the modules
must form layers: no circle, so that a reader can draw them from the lowest (which include
nothing of their part) up to the binary's main. make check runs this (scripts/check.sh).

  python3 scripts/includes.py           exit 1 and each circle, or "no circle"
  python3 scripts/includes.py --layers  also each part's modules by layer, lowest first
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z]+)/([a-z0-9_]+)\.h"')


def graph():
    deps = {}
    for base in ("src", "include"):
        for path in sorted((ROOT / base).glob("*/*.[ch]")):
            module = (path.parent.name, path.stem)
            edges = deps.setdefault(module, set())
            for line in path.read_text(encoding="utf-8").splitlines():
                m = INCLUDE.match(line)
                if m and (m.group(1), m.group(2)) != module:
                    edges.add((m.group(1), m.group(2)))
    return {m: {d for d in e if d in deps} for m, e in deps.items()}


def circles(deps):
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(deps):
        if root in index:
            continue
        work = [(root, iter(sorted(deps[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(deps[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layers(deps, part):
    """The part's modules by layer: a module's layer is one above the highest of its own
    part's dependencies (other parts are below every part that uses them)."""
    level = {}

    def depth(m):
        if m not in level:
            level[m] = 0
            level[m] = 1 + max((depth(d) for d in deps[m] if d[0] == part), default=-1)
        return level[m]

    for m in deps:
        if m[0] == part:
            depth(m)
    by = {}
    for m, n in level.items():
        by.setdefault(n, []).append(m[1])
    return [sorted(by[n]) for n in sorted(by)]


def main():
    deps = graph()
    found = circles(deps)
    if "--layers" in sys.argv[1:] and not found:
        for part in sorted({m[0] for m in deps}):
            print(f"{part}:")
            for n, mods in enumerate(layers(deps, part)):
                print(f"  {n}: {' '.join(mods)}")
    for c in found:
        print("circle: " + " ".join(f"{p}/{m}" for p, m in c))
    if found:
        return 1
    print(f"no circle among {len(deps)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
