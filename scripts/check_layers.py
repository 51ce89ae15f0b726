#!/usr/bin/env python3
"""Checks the module graph of the library (docs/architecture.md) on the source side.

The build declares the modules, their dependencies and the public headers each owns
(cmake/layers.cmake) and writes them to <build>/layers.json; this script reads that file and
checks, without compiling anything:
  1. the graph: every dependency names a module declared before it (bottom-up), so the graph
     has no cycle and no back edge;
  2. the include lines: a source of module M includes only public headers (include/tl/...) of M
     and of the modules below M (the transitive closure of its dependencies), and private
     headers ("x.h") only from its own directory, never "../other/x.h";
  3. every src/ source belongs to exactly one module, every public header to one;
  4. the Python extension (python/src/) includes public headers only.
The link side (a module links with nothing but the modules below it) is checked by the
layercheck shared libraries (ctest layers_link). Usage:
  check_layers.py <source dir> <build dir>/layers.json
Exits 1 listing every violation, 0 when there is none.
"""

from __future__ import annotations

import json
import os
import re
import sys

# Known include edges that the link check shows to be header-only, each with its reason. Keep
# this list short: an entry is a debt, not a design.
ALLOWED: dict[tuple[str, str], str] = {
    ("ir", "tl/op.h"): "TileOpNode points to its OpDef: the ir module reads OpDef fields (the op "
                       "name, attribute specs) but calls nothing of src/op; the OpDef struct "
                       "moves to a header of its own once the op-trait work (issue 28 item 1) lands",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def closure(mods: dict[str, dict], name: str) -> set[str]:
    seen: set[str] = set()
    stack = [name]
    while stack:
        m = stack.pop()
        if m in seen:
            continue
        seen.add(m)
        stack.extend(mods[m]["deps"])
    return seen


def check(src_dir: str, graph: dict) -> list[str]:
    errors: list[str] = []
    mods: dict[str, dict] = {}
    for m in graph["modules"]:
        for d in m["deps"]:
            if d not in mods:
                errors.append(f"module {m['name']}: depends on {d}, not declared below it (back edge)")
        mods[m["name"]] = m

    owner_of_header: dict[str, str] = {}
    for name, m in mods.items():
        for h in m["headers"]:
            if h in owner_of_header:
                errors.append(f"header {h}: owned by both {owner_of_header[h]} and {name}")
            owner_of_header[h] = name
    for root, _, files in os.walk(os.path.join(src_dir, "include")):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), os.path.join(src_dir, "include"))
            if rel not in owner_of_header:
                errors.append(f"include/{rel}: no module owns it (HEADERS in cmake/layers.cmake)")

    module_of_source: dict[str, str] = {}
    for name, m in mods.items():
        for s in m["sources"]:
            if s.startswith(("src/", "cann_ops_tilelang/")):
                module_of_source[s] = name
    for root, _, files in [w for d in ("src", "cann_ops_tilelang") for w in os.walk(os.path.join(src_dir, d))]:
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), src_dir)
            if f.endswith(".cpp") and rel not in module_of_source:
                errors.append(f"{rel}: in no module")

    # A private header belongs to the module of the sources in its directory.
    dir_module: dict[str, set[str]] = {}
    for s, name in module_of_source.items():
        dir_module.setdefault(os.path.dirname(s), set()).add(name)

    def check_file(rel: str, name: str) -> None:
        allowed = closure(mods, name)
        text = open(os.path.join(src_dir, rel), encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            if inc in owner_of_header:
                owner = owner_of_header[inc]
                if owner not in allowed and (name, inc) not in ALLOWED:
                    errors.append(f"{rel}: includes {inc} of module {owner}, which is not below "
                                  f"module {name}")
            elif inc.startswith("tl/"):
                errors.append(f"{rel}: includes {inc}, which no module owns")
            elif "/" in inc or not os.path.exists(os.path.join(src_dir, os.path.dirname(rel), inc)):
                errors.append(f"{rel}: includes {inc}, a private header of another directory")

    for rel, name in sorted(module_of_source.items()):
        check_file(rel, name)
    # A directory shared by two modules (src/ir: ir and parser): a private header is held to
    # the rule of the modules whose sources include it (all of the directory's if none does).
    def includers(d: str, f: str) -> set[str]:
        return {name for s, name in module_of_source.items() if os.path.dirname(s) == d
                and f in INCLUDE.findall(open(os.path.join(src_dir, s), encoding="utf-8").read())}

    for d, names in sorted(dir_module.items()):
        for f in sorted(os.listdir(os.path.join(src_dir, d))):
            if f.endswith(".h"):
                for name in sorted(includers(d, f) or names):
                    check_file(os.path.join(d, f), name)
    for name, m in mods.items():
        for h in m["headers"]:
            check_file(os.path.join("include", h), name)
    # The Python extension is a client of the library: public headers and its own files only.
    py_src = os.path.join(src_dir, "python", "src")
    for f in sorted(os.listdir(py_src)) if os.path.isdir(py_src) else []:
        text = open(os.path.join(py_src, f), encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            if inc not in owner_of_header and not os.path.exists(os.path.join(py_src, inc)):
                errors.append(f"python/src/{f}: includes {inc}, not a public header of the library")
    return errors


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    graph = json.load(open(sys.argv[2], encoding="utf-8"))
    errors = check(sys.argv[1], graph)
    for e in errors:
        print(e)
    names = [m["name"] for m in graph["modules"]]
    if errors:
        print(f"check_layers: {len(errors)} violation(s) of the layer rule (docs/architecture.md)")
        return 1
    print(f"check_layers: {len(names)} modules, bottom-up: {' < '.join(names)}; no back edge")
    return 0


if __name__ == "__main__":
    sys.exit(main())
