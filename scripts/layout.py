#!/usr/bin/env python3
"""The layout's checks, run by .ci/run (exit 1 when any fails):

1. No circle of file imports in the crates a reader navigates by file: `hooks-core/src`,
   `hooks-macros/src`, `cli/src`. Each `.rs` file is one module (`pipeline/mod.rs` is
   `pipeline`, `pipeline/observe.rs` is `pipeline::observe`); a file imports the modules its
   `crate::…`, `super::…` and `self::…` paths name (the longest known module prefix of each path,
   `use` groups expanded, comments ignored), and the children it declares when it names their
   items (`use child::Item`). A child naming its parent's items is no import: a parent declaring
   a child is how Rust nests modules. A circle is a strongly connected set of more than one file;
   each is printed with the edges that tie it.
2. ARCHITECTURE.md's "Parts" table is the map of `hooks-core/src` (and "The macros" the map of
   `hooks-macros/src`, file by file), and the maps are true: every
   file and folder there is named in the row of its part (a part is a top-level file or folder,
   named in a row's first cell; a file below it by its name or its path from the part; a
   `mod.rs` by its folder; a non-Rust file by its folder or a glob such as `migrations/*.sql`),
   and every `.rs` file or folder a row names exists in that part.
3. No function of `hooks-core/src`, `hooks-macros/src` or `cli/src` longer than 80 lines (from
   its `fn` line to its closing brace): a longer one is cut into steps that each have a name.

usage: python3 scripts/layout.py [REPO_ROOT]
"""
import fnmatch
import os
import re
import sys

CRATES = ["hooks-core/src", "hooks-macros/src", "cli/src"]
MAPPED = "hooks-core/src"


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel in (["lib"], ["main"]):
        return ()
    return tuple(rel)


def expand(prefix, body, out):
    """`a::{b, c::{d, e}}` as the paths it names, each appended to `out`."""
    depth, cur, items = 0, "", []
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    for it in items:
        it = it.strip()
        m = re.match(r"((?:\w+::)*)\{(.*)\}$", it, re.S)
        if m:
            expand(prefix + [p for p in m.group(1).split("::") if p], m.group(2), out)
        elif it:
            item = re.sub(r"\s+as\s+\w+$", "", it)
            out.append(prefix + [p for p in item.split("::") if p])


def paths(text):
    """Every `crate::a::b`, `super::a`, `self::a` path of a file, `use` groups expanded."""
    out = []
    for m in re.finditer(r"\b(crate|super|self)((?:::\w+)*)::\{", text):
        i = m.end() - 1
        depth, j = 0, i
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        expand([m.group(1)] + [p for p in m.group(2).split("::") if p], text[i + 1:j], out)
    for m in re.finditer(r"\b(crate|super|self)((?:::\w+)+)", text):
        out.append([m.group(1)] + [p for p in m.group(2).split("::") if p])
    return out


def resolve(here, path, known):
    """The module a path names: the longest known prefix, from the crate, itself or a parent."""
    if path[0] == "crate":
        base, rest = (), path[1:]
    elif path[0] == "self":
        base, rest = here, path[1:]
    else:
        base, rest = here, list(path)
        while rest and rest[0] == "super":
            base = base[:-1]
            rest = rest[1:]
    for k in range(len(rest), -1, -1):
        cand = tuple(base) + tuple(rest[:k])
        if cand in known:
            return cand
    return None


def import_graph(src):
    files = {}
    for root, _, fs in os.walk(src):
        for f in fs:
            if f.endswith(".rs"):
                p = os.path.join(root, f)
                files[module_of(src, p)] = p
    known = set(files)
    graph = {m: {} for m in files}
    for m, p in files.items():
        with open(p, encoding="utf-8") as f:
            text = re.sub(r"//[^\n]*", "", f.read())
        found = paths(text)
        for u in re.finditer(r"\buse\s+(\w+)((?:::\w+)*)::(\{?)", text):
            if m + (u.group(1),) in known:
                found.append(["self", u.group(1)] + [x for x in u.group(2).split("::") if x])
        for path in found:
            t = resolve(m, path, known)
            if t is None or t == m or t == () or t == m[:len(t)]:
                continue
            name = path[-1] if len(path) > 1 else ""
            graph[m].setdefault(t, set()).add(name)
    return files, graph


def circles(src):
    """The import circles of a crate's files, each as (files, edges) printed by `main`."""
    files, graph = import_graph(src)
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)

    for v in sorted(graph):
        if v not in index:
            strong(v)
    name = lambda m: os.path.relpath(files[m], src)
    lines = []
    for comp in sorted((sorted(c) for c in sccs if len(c) > 1), key=len, reverse=True):
        lines.append(f"{src}: circle: " + ", ".join(name(m) for m in comp))
        for a in comp:
            for b, used in sorted(graph[a].items()):
                if b in comp:
                    items = ", ".join(sorted(u for u in used if u)) or "(module)"
                    lines.append(f"  {name(a)} -> {name(b)}: {items}")
    return lines


def parts_rows(architecture):
    """The Parts table's rows: (the part names of the first cell, every backticked name)."""
    with open(architecture, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Parts\n(.*?)^## ", text, re.S | re.M)
    if not m:
        return None
    rows = []
    for line in m.group(1).splitlines():
        if not line.startswith("| `"):
            continue
        cells = line.split(" | ")
        parts = re.findall(r"`([^`]+)`", cells[0])
        names = set(re.findall(r"`([^`]+)`", line))
        rows.append((parts, names))
    return rows


def covered(rel, names):
    """Whether a path below its part (`postgres/sql.rs`) is named in the part's row."""
    base = os.path.basename(rel)
    if base == "mod.rs":
        return True
    if rel in names or base in names:
        return True
    if base.endswith(".rs"):
        return False
    # A non-Rust file: by a glob over its path's tail, or by its folder.
    tails = ["/".join(rel.split("/")[i:]) for i in range(rel.count("/") + 1)]
    if any("*" in n and fnmatch.fnmatch(t, n) for n in names for t in tails):
        return True
    return folder_named(os.path.dirname(rel), names)


def folder_named(rel, names):
    """Whether a folder below its part is named: `sqlite/`, or a path or glob through it."""
    last = os.path.basename(rel)
    for n in names:
        dirs = n.rstrip("/").split("/") if n.endswith("/") else n.split("/")[:-1]
        if "/".join(dirs).endswith(rel) or (dirs and dirs[-1] == last):
            return True
    return False


def map_problems(root):
    src = os.path.join(root, MAPPED)
    rows = parts_rows(os.path.join(root, "ARCHITECTURE.md"))
    if rows is None:
        return ["ARCHITECTURE.md has no \"## Parts\" section"]
    problems = []
    by_part = {}
    for parts, names in rows:
        for p in parts:
            part = p.rstrip("/")
            # In a row of several parts, `mcp/server.rs` names the part `mcp/`'s `server.rs`.
            row_parts = [q.rstrip("/") for q in parts]
            own = {n[len(part) + 1:] for n in names if n.startswith(part + "/")}
            plain = {n for n in names if not any(n.startswith(q + "/") for q in row_parts)}
            by_part[part] = plain | own
    for top in sorted(os.listdir(src)):
        if top in ("lib.rs",):
            continue
        if top not in by_part and top.rstrip("/") not in by_part:
            problems.append(f"{MAPPED}/{top}: no row of ARCHITECTURE.md's Parts names it")
            continue
        names = by_part[top]
        full = os.path.join(src, top)
        if not os.path.isdir(full):
            continue
        for dirpath, dirnames, filenames in os.walk(full):
            rel_dir = os.path.relpath(dirpath, full)
            for d in dirnames:
                rel = os.path.normpath(os.path.join(rel_dir, d))
                if not folder_named(rel, names):
                    problems.append(f"{MAPPED}/{top}/{rel}/: the Parts row of `{top}/` does not name it")
            for f in filenames:
                rel = os.path.normpath(os.path.join(rel_dir, f))
                if not covered(rel, names):
                    problems.append(f"{MAPPED}/{top}/{rel}: the Parts row of `{top}/` does not name it")
    for part, names in by_part.items():
        full = os.path.join(src, part)
        if not os.path.exists(full) and not os.path.exists(full + ".rs"):
            problems.append(f"ARCHITECTURE.md's Parts names `{part}`, which {MAPPED} does not have")
            continue
        if not os.path.isdir(full):
            continue
        existing = set()
        for dirpath, dirnames, filenames in os.walk(full):
            rel_dir = os.path.relpath(dirpath, full)
            for x in dirnames + filenames:
                rel = os.path.normpath(os.path.join(rel_dir, x))
                existing.update({rel, x})
                if x in dirnames:
                    existing.update({rel + "/", x + "/"})
        for n in sorted(names):
            if n.rstrip("/") in by_part:
                continue
            looks_like_file = re.fullmatch(r"[\w./-]+(\.rs|/)", n) and "::" not in n
            if looks_like_file and n not in existing and n.rstrip("/") != part:
                problems.append(f"ARCHITECTURE.md's Parts row of `{part}/` names `{n}`, which is not in {MAPPED}/{part}/")
    return problems


def macros_problems(root):
    """Every file of hooks-macros/src in ARCHITECTURE.md's "The macros" table, and only those."""
    with open(os.path.join(root, "ARCHITECTURE.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## The macros\n(.*?)^## ", text, re.S | re.M)
    if not m:
        return ["ARCHITECTURE.md has no \"## The macros\" section"]
    named = set(re.findall(r"^\| `([^`]+)` \|", m.group(1), re.M))
    src = os.path.join(root, "hooks-macros/src")
    files = set()
    for dirpath, _, filenames in os.walk(src):
        for f in filenames:
            files.add(os.path.relpath(os.path.join(dirpath, f), src))
    problems = [f"hooks-macros/src/{f}: ARCHITECTURE.md's \"The macros\" does not name it" for f in sorted(files - named)]
    problems += [f"ARCHITECTURE.md's \"The macros\" names `{n}`, which hooks-macros/src does not have" for n in sorted(named - files)]
    return problems


MAX_FN_LINES = 80


def long_functions(root):
    """Every function over MAX_FN_LINES lines in CRATES, as `path:line: fn name is N lines`."""
    found = []
    fn_line = re.compile(r"\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?fn\s+(\w+)")
    for crate in CRATES:
        src = os.path.join(root, crate)
        for dirpath, _, filenames in os.walk(src):
            for f in sorted(filenames):
                if not f.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    lines = fh.read().split("\n")
                for i, line in enumerate(lines):
                    m = fn_line.match(line)
                    if not m:
                        continue
                    end = body_end(lines, i)
                    if end is not None and end - i + 1 > MAX_FN_LINES:
                        rel = os.path.relpath(path, root)
                        found.append(f"{rel}:{i + 1}: fn {m.group(5)} is {end - i + 1} lines (at most {MAX_FN_LINES})")
    return found


def body_end(lines, start):
    """The line of the brace that closes the function starting at `start` (None for a
    declaration without a body); strings, characters and line comments are skipped."""
    depth, opened = 0, False
    for j in range(start, len(lines)):
        code = re.sub(r'"(\\.|[^"\\])*"', '""', lines[j])
        code = re.sub(r"'(\\.|[^'\\])'", "''", code).split("//")[0]
        for ch in code:
            if ch == "{":
                depth += 1
                opened = True
            elif ch == "}":
                depth -= 1
            elif ch == ";" and not opened and depth == 0:
                return None
        if opened and depth == 0:
            return j
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    out = []
    for crate in CRATES:
        out += circles(os.path.join(root, crate))
    out += map_problems(root)
    out += macros_problems(root)
    out += long_functions(root)
    for line in out:
        print(line)
    print(f"layout: {'ok' if not out else 'problems above'}")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
