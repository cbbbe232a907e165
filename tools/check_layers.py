#!/usr/bin/env python3
"""Fails on an #include that crosses the layer order, or on an include cycle between folders.

The layer table is CMake's (CMakeLists.txt, novaserve_layer()), written by the configure step to
BUILD/layers.txt, one line per layer: "name folders deps" with comma-separated lists. A file in a
layer's folder may include headers of its own layer and of every layer it links, directly or
through its dependencies; nothing else. Within one layer, the folders' include graph must stay
acyclic too (the formats layer's gguf may include quant, never both ways).

Usage: check_layers.py --layers build/layers.txt --src src
Exit status: 0 clean, 1 on violations (each printed as file:line), 2 on a bad table or tree.
"""

import argparse
import os
import re
import sys

# Both spellings: "a/b.h", and <a/b.h> where src/a is a project folder; with or without a space.
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
# A computed include (#include MACRO) cannot be checked, so it is refused.
COMPUTED_INCLUDE = re.compile(r'^\s*#\s*include\s*[A-Za-z_]')


def fail_usage(message):
    print(f"check_layers: {message}", file=sys.stderr)
    sys.exit(2)


def read_layers(path):
    """Returns {layer: (folders, deps)} in file order."""
    layers = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) not in (2, 3):
                fail_usage(f"{path}:{n}: expected 'name folders [deps]', got {line.strip()!r}")
            name, folders = parts[0], parts[1].split(",")
            deps = parts[2].split(",") if len(parts) == 3 else []
            if name in layers:
                fail_usage(f"{path}:{n}: layer {name} declared twice")
            layers[name] = (folders, deps)
    for name, (_, deps) in layers.items():
        for d in deps:
            if d not in layers:
                fail_usage(f"layer {name} links unknown layer {d}")
    return layers


def reachable(layers, start):
    """The layers `start` links, directly or transitively, itself included."""
    seen, stack = set(), [start]
    while stack:
        layer = stack.pop()
        if layer in seen:
            continue
        seen.add(layer)
        stack.extend(layers[layer][1])
    return seen


def layer_cycle(layers):
    """A cycle in the layer links, as a list of names, or None."""
    state = {}

    def visit(layer, path):
        state[layer] = 1
        for d in layers[layer][1]:
            if state.get(d) == 1:
                return path[path.index(d):] + [d] if d in path else [layer, d]
            if d not in state:
                found = visit(d, path + [d])
                if found:
                    return found
        state[layer] = 2
        return None

    for layer in layers:
        if layer not in state:
            found = visit(layer, [layer])
            if found:
                return found
    return None


def folder_cycles(edges):
    """Strongly connected components of more than one folder (Tarjan), each sorted. `edges` maps a
    folder to {target folder: where the first such include is}."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    nodes = set(edges) | {b for bs in edges.values() for b in bs}

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", required=True, help="layers.txt written by CMake")
    ap.add_argument("--src", required=True, help="the source root (src/)")
    args = ap.parse_args()
    if not os.path.isdir(args.src):
        fail_usage(f"--src {args.src}: not a directory")
    layers = read_layers(args.layers)
    cycle = layer_cycle(layers)
    if cycle:
        fail_usage("the layer links form a cycle: " + " -> ".join(cycle))

    folder_layer = {}
    for name, (folders, _) in layers.items():
        for folder in folders:
            if folder in folder_layer:
                fail_usage(f"folder {folder} is in layers {folder_layer[folder]} and {name}")
            folder_layer[folder] = name
    allowed = {name: reachable(layers, name) for name in layers}

    violations, folder_edges, n_files, n_includes = [], {}, 0, 0
    for dirpath, _, files in sorted(os.walk(args.src)):
        folder = os.path.relpath(dirpath, args.src).replace(os.sep, "/")
        # Every file is read, whatever its suffix (.inc, .hh and .cc include too).
        sources = sorted(files)
        if not sources:
            continue
        if folder not in folder_layer:
            violations.append(f"{args.src}/{folder}/: folder is in no layer (add it to a "
                              "novaserve_layer() in CMakeLists.txt)")
            continue
        layer = folder_layer[folder]
        for name in sources:
            n_files += 1
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    where = f"{args.src}/{folder}/{name}:{n}"
                    if COMPUTED_INCLUDE.match(line):
                        violations.append(f"{where}: a computed #include cannot be checked; name "
                                          "the header")
                        continue
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    bracket, header = m.group(1), m.group(2)
                    if header.startswith(("./", "../")):
                        # Relative to the including file: normalise to a src/-relative path.
                        header = os.path.normpath(os.path.join(folder, header)).replace(os.sep, "/")
                        if header.startswith("../"):
                            violations.append(f"{where}: includes {m.group(2)}, outside {args.src}")
                            continue
                    if "/" not in header:
                        continue  # same-folder include (or a system header like <vector>)
                    target = os.path.dirname(header)
                    if bracket == "<" and not os.path.isdir(os.path.join(args.src, target)):
                        continue  # a system or package header (<nlohmann/json.hpp>)
                    n_includes += 1
                    target_layer = folder_layer.get(target)
                    if target_layer is None:
                        violations.append(f"{where}: includes {header}, whose folder is in no "
                                          "layer")
                        continue
                    if target != folder:
                        folder_edges.setdefault(folder, {}).setdefault(target, where)
                    if target_layer not in allowed[layer]:
                        violations.append(
                            f"{where}: includes {header}: layer {layer} does not link layer "
                            f"{target_layer} (it links: "
                            f"{', '.join(sorted(allowed[layer] - {layer})) or 'nothing'})")
    for component in folder_cycles(folder_edges):
        edges = [f"    {a} -> {b} at {w}" for a in component
                 for b, w in sorted(folder_edges.get(a, {}).items()) if b in component]
        violations.append("include cycle between folders: " + " <-> ".join(component) + "\n" +
                          "\n".join(edges))

    for v in violations:
        print(v)
    print(f"check_layers: {n_files} files, {n_includes} cross-folder includes, {len(layers)} "
          f"layers, {len(violations)} violation(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
