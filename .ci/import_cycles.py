#!/usr/bin/env python3
"""Fails when two source files of one crate import each other, directly or through others.

A file's imports are the `crate::a::b` paths it names (in `use` items or inline), resolved to the
longest module path that is a file of the crate (`a/b.rs` or `a/b/mod.rs`, `a.rs`, ...). `super::`
paths are resolved against the file's own module. A module's `mod.rs` (or `a.rs` holding `mod`
items) declaring its children is not an import. Test modules (`#[cfg(test)] mod tests { .. }`
at the end of a file) are left out: a test may read anything.

    python3 .ci/import_cycles.py rune-macros/src rune-runtime/src src rune-ops/src
"""
import os
import re
import sys

PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\};", re.S)


def modules(root):
    """Module path (tuple) -> file, for every .rs file under root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
            if rel[-1] == "mod" or rel == ["lib"] or rel == ["main"]:
                rel = rel[:-1]
            out[tuple(rel)] = os.path.join(d, f)
    return out


def strip_tests(text):
    i = text.find("#[cfg(test)]\nmod tests")
    return text if i < 0 else text[:i]


def group_paths(prefix, body):
    """The paths of a `use prefix::{a, b::{c, d}}` group, flattened one level at a time."""
    out, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    out.append(cur)
    paths = []
    for item in (s.strip() for s in out):
        if not item:
            continue
        if "{" in item:
            head, rest = item.split("{", 1)
            paths += group_paths(prefix + "::" + head.rstrip(":").strip(), rest.rsplit("}", 1)[0])
        else:
            paths.append(prefix + "::" + item.split(" as ")[0].strip())
    return paths


def imports(mod, text, mods):
    text = strip_tests(re.sub(r"//[^\n]*", "", text))
    paths = []
    for m in USE_GROUP.finditer(text):
        paths += group_paths(m.group(1) + m.group(2), m.group(3))
    paths += [m.group(1) + m.group(2) for m in PATH.finditer(text)]
    deps = set()
    for p in paths:
        parts = p.split("::")
        if parts[0] == "super":
            base = list(mod[:-1])
            parts = parts[1:]
            while parts and parts[0] == "super":
                base, parts = base[:-1], parts[1:]
            parts = base + parts
        else:
            parts = parts[1:]
        for n in range(len(parts), 0, -1):
            target = tuple(parts[:n])
            if target in mods:
                # A module's parents are not its imports (they declare it).
                if target != mod and target != mod[: len(target)]:
                    deps.add(target)
                break
    return deps


def cycles(root):
    mods = modules(root)
    graph = {m: imports(m, open(f, encoding="utf-8").read(), mods) for m, f in mods.items()}
    found, state, stack = [], {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                found.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def main():
    bad = False
    for root in sys.argv[1:]:
        for c in cycles(root):
            bad = True
            print(f"{root}: import cycle " + " -> ".join("::".join(m) or "crate" for m in c))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
