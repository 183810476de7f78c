#!/usr/bin/env python3
"""Architecture figures for the swamp crate, read from its sources (no cargo),
and the rules they must keep.

Usage: python3 scripts/arch_stats.py [--json] [--check]. For src/ minus
unit-test code (items under `#[cfg(test)]`, files named tests.rs or declared
by a `#[cfg(test)] mod x;`) it prints: 1. import circles, i.e. strongly
connected components of size > 1, each edge with its number of citing lines
and an example file:line, (a) between top-level modules, (b) between sibling
units: for every directory module D below the top level (a mod.rs, or an x.rs
with children in x/), each child file D/a.rs is a unit and each child
directory D/b/ (with b.rs if so declared) is one unit; an edge from a file of
unit A to a file of unit B is an edge between A and B, and edges to or from
D's own file are left out (a parent declares and re-exports its children,
which use what it holds); units are files on disk, so an x.rs declaring a
`#[path]` sibling is that sibling's peer (keep a module's children in its directory);
2. functions over 80 and over 120 lines (`fn` line to closing brace);
3. `pub` items and fields versus `pub(crate)`/`pub(super)`/`pub(in ..)`;
4. `unsafe` occurrences; 5. integration-test binaries (tests/*.rs,
tests/<dir>/main.rs); 6. src/cli/ lines using crate::apply, crate::state,
crate::lock or crate::store; 7. the largest files, each counting its lines
minus those of its `#[cfg(test)]` items; 8. `unreachable!` occurrences.

Then the checks, each `ok` or `FAILED` with file:line examples: R1 no circle
in 1a; R2 none in 1b; R3 no path in 6 (types the engine re-exports aside);
R4 at most MAX_LONG functions over LONG lines and MAX_VERY_LONG over VERY_LONG;
R5 no file over MAX_FILE_LINES lines by 7's count. With --check the exit
status is 1 if a check failed (also with --json, whose `checks` holds them).

Heuristics and limits: a lexer, not a parser. Comments, strings, raw strings
and char literals are blanked first (a char literal is told from a lifetime by
its closing quote), so doc links and SAFETY comments never count. Modules are
followed from src/lib.rs through `mod x;` (honouring `#[path]`); inline
`mod x { }` blocks get their own path; src/main.rs (the binary's crate root)
counts for 2-4 only. Edges come from `use` trees (groups, `self`, `as`, globs)
and from code paths starting `crate::`, `super::`, `self::` or a child
module's name. A path is charged to the longest module prefix it names,
following `pub use` re-exports (`use super::Plan`, re-exported from
plan/action.rs, is an edge to action.rs, not plan/mod.rs); a glob import is an
edge to the globbed module. Not seen: paths made by macros, glob-imported names
used bare, `#[cfg]`s other than test. macro_rules! bodies count as code. A
function's length includes its nested closures and fns; trait methods without
a body are skipped.
"""
import bisect, json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
LONG, VERY_LONG = 80, 120             # function lengths counted (section 2)
MAX_LONG, MAX_VERY_LONG = 10, 0       # R4: how many may pass each
MAX_FILE_LINES = 1200                 # R5: a file's lines outside tests
LARGEST_SHOWN = 10                    # files listed in section 7
CLI_WATCH = ("apply", "state", "lock", "store")  # R3: src/cli/ names none
TOKEN = re.compile(r"//|/\*|(?<!\w)b?r#*\"|\"|'")
STRING = re.compile(r'"(?:\\.|[^"\\])*"?', re.S)
CHAR = re.compile(r"'(?:\\.[^']*|[^\\'\n])'")
TEST_ATTR = re.compile(r"#\[cfg\((?:all\()?test\b[^\]]*\]")
USE = re.compile(r"(?<![\w:])use\s+")
PATH = re.compile(r"(?<![\w:$.])\w+(?:::\w+)+")
UTOK = re.compile(r"\w+|\*|::|\{|\}|,")
MOD_DECL = re.compile(r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
PUB = re.compile(r"\bpub\b(\s*\(\s*(?:crate|super|self|in\b[^)]*)\))?\s*")

def blank(text, spans):
    """text with every non-newline character in the spans turned into a space."""
    out = list(text)
    for a, b in spans:
        out[a:b] = re.sub(r"[^\n]", " ", text[a:b])
    return "".join(out)

def strip(src):
    """Blank comments and literals (newlines kept, so offsets and lines hold)."""
    spans, i, n = [], 0, len(src)
    while m := TOKEN.search(src, i):
        i, t = m.start(), m.group()
        if t == "//": j = src.find("\n", i) % (n + 1)
        elif t == "/*":
            depth, j = 1, i + 2
            while j < n and depth:
                two = src[j:j + 2]
                depth, j = (depth + (1 if two == "/*" else -1), j + 2) if two in ("/*", "*/") else (depth, j + 1)
        elif "r" in t:  # raw string
            close = '"' + "#" * t.count("#")
            j = src.find(close, m.end()) % (n + 1) + len(close)
        elif t == '"': j = STRING.match(src, i).end()
        elif c := CHAR.match(src, i): j = c.end()
        else:  # a lifetime or label
            i += 1; continue
        spans.append((i, j))
        i = max(j, i + 1)
    return blank(src, spans)

def match_brace(code, i):
    """Index just past the brace matching the `{` at code[i]."""
    depth = 0
    for k in range(i, len(code)):
        depth += {"{": 1, "}": -1}.get(code[k], 0)
        if depth == 0: return k + 1
    return len(code)

def item_end(code, i, is_use=False):
    """(end, has_body) of the item at i: through the first `;` at depth 0,
    or through the `{...}` block met first at depth 0."""
    depth, opening = 0, "([{" if is_use else "(["
    for k in range(i, len(code)):
        c = code[k]
        if c in opening: depth += 1
        elif c in ")]}" and depth: depth -= 1
        elif depth == 0 and c == ";": return k + 1, False
        elif depth == 0 and c == "{": return match_brace(code, k), True
    return len(code), False

def mask_tests(code):
    """(code with every #[cfg(test)] item blanked, the blanked spans)."""
    spans = []
    for m in TEST_ATTR.finditer(code):
        j = m.end()
        while a := re.compile(r"\s*#\[").match(code, j):  # further attributes
            j = a.end()
            while code[j - 1] != "]" or code[a.end():j].count("[") >= code[a.end():j].count("]"):
                j += 1
        spans.append((m.start(), item_end(code, j, bool(re.match(r"\s*(pub\S*\s+)?use\b", code[j:])))[0]))
    return blank(code, spans), spans

class File:
    def __init__(self, path, modpath):
        self.path, self.rel, self.modpath = path, str(path.relative_to(ROOT)), modpath
        self.raw = path.read_text()
        self.stripped = strip(self.raw)
        self.code, self.test_spans = mask_tests(self.stripped)
        self.starts = [0] + [m.end() for m in re.finditer("\n", self.raw)]
        self.inline = [(m.start(), match_brace(self.code, m.end() - 1), m.group(1))
                       for m in re.finditer(r"\bmod\s+(\w+)\s*\{", self.code)]

    def line(self, off): return bisect.bisect_right(self.starts, off)

    def where(self, off): return f"{self.rel}:{self.line(off)}"
    def module_at(self, off):
        return self.modpath + tuple(n for a, b, n in self.inline if a <= off < b)

def load_tree():
    """Follow `mod x;` from lib.rs: (files, {module path: File}, files left out)."""
    files, mods, left_out = [], {}, []
    def visit(path, modpath):
        f = File(path, modpath)
        files.append(f)
        if modpath is None: return
        mods[modpath] = f
        for a, _, _ in f.inline: mods[f.module_at(a)] = f
        base = path.parent if path.name in ("mod.rs", "lib.rs") else path.parent / path.stem
        for m in MOD_DECL.finditer(f.stripped):
            p, name = re.search(r'path\s*=\s*"([^"]+)"', f.raw[m.start(1):m.end(1)]), m.group(2)
            cands = [path.parent / p.group(1)] if p else [base / f"{name}.rs", base / name / "mod.rs"]
            child = next((c for c in cands if c.exists()), None)
            if child and (child.name == "tests.rs" or any(a <= m.start(2) < b for a, b in f.test_spans)):
                left_out.append(str(child.relative_to(ROOT)) + " (test)")
            elif child:
                visit(child, f.module_at(m.start()) + (name,))
    visit(SRC / "lib.rs", ())
    if (SRC / "main.rs").exists(): visit(SRC / "main.rs", None)
    seen = {str(f.path.relative_to(ROOT)) for f in files} | {s.split()[0] for s in left_out}
    left_out += [str(p.relative_to(ROOT)) + (" (test)" if p.name == "tests.rs" else " (not a module)")
                 for p in SRC.rglob("*.rs") if str(p.relative_to(ROOT)) not in seen]
    return files, mods, sorted(set(left_out))

def absolute(segs, here, mods):
    """Absolute path (tuple) of a path used in module `here`; None if not a crate path."""
    if segs[0] == "crate": return tuple(segs[1:])
    if segs[0] in ("super", "self"):
        while segs and segs[0] in ("super", "self"):
            here, segs = (here[:-1] if segs[0] == "super" else here), segs[1:]
        return here + tuple(segs)
    return here + tuple(segs) if here + (segs[0],) in mods else None

def module_of(full, mods, reexports, hops=0):
    """Longest module prefix of an absolute path, following `pub use` re-exports."""
    k = max(k for k in range(len(full) + 1) if full[:k] in mods)
    target = reexports.get(full[:k], {}).get(full[k]) if k < len(full) and hops < 8 else None
    return module_of(target + full[k + 1:], mods, reexports, hops + 1) if target else full[:k]

def use_leaves(code, start, end):
    """(segments, offset, name bound) of every leaf of the use tree in code[start:end]."""
    toks, out = [(t.group(), t.start()) for t in UTOK.finditer(code, start, end)], []
    def tree(k, segs, off=start, alias=None):
        while k < len(toks) and toks[k][0] not in ",}":
            t, o = toks[k]
            if t == "{": return group(k + 1, segs) + 1
            if t == "as": alias, k = toks[k + 1][0], k + 1
            elif t != "::": segs, off = segs + [t], o
            k += 1
        while len(segs) > 1 and segs[-1] in ("self", "*"): segs = segs[:-1]
        if segs and segs[-1] != "*": out.append((segs, off, alias or segs[-1]))
        return k
    def group(k, prefix):
        while k < len(toks) and toks[k][0] != "}":
            k = tree(k, list(prefix))
            k += k < len(toks) and toks[k][0] == ","
        return k
    tree(0, [])
    return out

def raw_refs(f, mods):
    """(offset, absolute path, text, name re-exported or None) for f's crate paths."""
    refs, uses = [], []
    for m in USE.finditer(f.code):
        end = item_end(f.code, m.end(), is_use=True)[0]
        exported = re.search(r"\bpub\b[^;{}]*$", f.code[max(0, m.start() - 30):m.start()])
        for segs, off, name in use_leaves(f.code, m.end(), end):
            refs.append((off, absolute(segs, f.module_at(off), mods), "use " + "::".join(segs),
                         name if exported else None))
        uses.append((m.start(), end))
    for m in PATH.finditer(blank(f.code, uses)):
        refs.append((m.start(), absolute(m.group().split("::"), f.module_at(m.start()), mods), m.group(), None))
    return [r for r in refs if r[1] is not None]

def circles(edge_sites):
    """{(a, b): [sites]} -> strongly connected components of size > 1 (Tarjan)."""
    adj, index, low, stack, comps = {}, {}, {}, [], []
    for a, b in edge_sites: adj.setdefault(a, set()).add(b); adj.setdefault(b, set())
    def visit(v):
        index[v] = low[v] = len(index); stack.append(v)
        for w in sorted(adj[v]):
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in stack: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = stack[stack.index(v):]; del stack[stack.index(v):]
            if len(comp) > 1: comps.append(sorted(comp))
    for v in sorted(adj):
        if v not in index: visit(v)
    return [{"members": c, "edges": [{"from": a, "to": b, "lines": len(s), "example": s[0]}
                                     for (a, b), s in sorted(edge_sites.items()) if a in c and b in c]}
            for c in sorted(comps)]

def measure():
    files, mods, left_out = load_tree()
    graph = [f for f in files if f.modpath]
    refs = {f.rel: raw_refs(f, mods) for f in graph}
    reexports, top_sites, sib_sites, cli, cli_files = {}, {}, {}, [], {}
    for f in graph:
        for off, full, _, name in refs[f.rel]:
            if name: reexports.setdefault(f.module_at(off), {})[name] = full
    for f in graph:
        for off, full, text, _ in sorted(refs[f.rel]):
            target, site = module_of(full, mods, reexports), (f.rel, f.line(off))
            if not target: continue  # the crate root
            if target[0] != f.modpath[0]:
                top_sites.setdefault((f.modpath[0], target[0]), []).append(site)
            elif (g := mods[target]) is not f:
                # Sibling units: the first parts where the two paths part, under their
                # deepest common directory D; D/mod.rs is D's own file, src/ is 1a's.
                a, b = f.path.relative_to(SRC).parts, g.path.relative_to(SRC).parts
                k = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
                ua, ub = a[k].removesuffix(".rs"), b[k].removesuffix(".rs")
                if k and ua != ub and "mod" not in (ua, ub):
                    sib_sites.setdefault(("/".join(("src",) + a[:k]) + "/", ua, ub), []).append(site)
            if f.modpath[0] == "cli" and target[0] in CLI_WATCH:
                # Named directly, or vocabulary the engine re-exports.
                direct = any(seg in CLI_WATCH for seg in text.removeprefix("use ").split("::")[:2])
                cli.append({"at": "%s:%d" % site, "module": target[0], "path": text, "direct": direct})
                if not direct: continue
                lines = cli_files.setdefault(f.rel, {}).setdefault(target[0], [])
                lines += [site[1]] if site[1] not in lines else []
    fmt = lambda sites: ["%s:%d" % s for s in sorted(set(sites))]
    by_dir = {}
    for (d, a, b), sites in sib_sites.items():
        # A unit shows as a.rs, b/ or, for a b.rs with children in b/, b.rs+b/.
        unit = lambda u: "+".join(n for n in (u + ".rs", u + "/") if (ROOT / d / n).exists())
        by_dir.setdefault(d, {})[unit(a), unit(b)] = fmt(sites)
    funcs, vis, unsafe, unreachable, sizes = [], {"pub": {}, "restricted": {}}, [], [], []
    for f in files:
        for m in re.finditer(r"\bfn\s+(\w+)", f.code):
            end, body = item_end(f.code, m.end())
            n = f.line(end - 1) - f.line(m.start()) + 1
            if body and n > LONG: funcs.append({"at": f.where(m.start()), "name": m.group(1), "lines": n})
        for m in PUB.finditer(f.code):
            rest = f.code[m.end():m.end() + 80]
            k = re.match(r"(?:(?:const|async|unsafe|extern)\s+)*(fn)\b|(struct|enum|mod|const|static"
                         r"|type|trait|use|union|macro)\b|(\w+\s*:(?!:))", rest)
            kind = (k.group(1) or k.group(2) or "field") if k else "tuple field"
            bucket = vis["restricted" if m.group(1) else "pub"]
            bucket[kind] = bucket.get(kind, 0) + 1
        at_line = lambda m: {"at": f.where(m.start()), "text": f.raw.splitlines()[f.line(m.start()) - 1].strip()}
        unsafe += [at_line(m) for m in re.finditer(r"\bunsafe\b", f.code)]
        unreachable += [at_line(m) for m in re.finditer(r"\bunreachable!", f.code)]
        test_lines = {n for a, b in f.test_spans for n in range(f.line(a), f.line(max(a, b - 1)) + 1)}
        sizes.append({"file": f.rel, "lines": len(f.raw.splitlines()) - len(test_lines),
                      "test_lines": len(test_lines)})
    funcs.sort(key=lambda x: (-x["lines"], x["at"]))
    sizes.sort(key=lambda x: (-x["lines"], x["file"]))
    tests = sorted(str(p.relative_to(ROOT)) for p in [*(ROOT / "tests").glob("*.rs"),
                                                       *(ROOT / "tests").glob("*/main.rs")])
    return {
        "left_out": left_out,
        "import_circles": {
            "top_level_edges": len(top_sites), "top_level": circles({k: fmt(v) for k, v in top_sites.items()}),
            "sibling_edges": len(sib_sites),
            "sibling": {d: c for d, e in sorted(by_dir.items()) if (c := circles(e))}},
        "long_functions": {"over_%d" % LONG: len(funcs), "over_%d" % VERY_LONG:
                           sum(x["lines"] > VERY_LONG for x in funcs), "list": funcs},
        "visibility": {k: {"total": sum(d.values()), "by_kind": dict(sorted(d.items()))} for k, d in vis.items()},
        "unsafe": {"count": len(unsafe), "list": unsafe},
        "integration_test_binaries": {"count": len(tests), "list": tests},
        "cli_imports": {"count": sum(c["direct"] for c in cli), "files": len(cli_files),
                        "through_engine": sum(not c["direct"] for c in cli), "list": cli,
                        "by_file": {f: dict(sorted(d.items())) for f, d in cli_files.items()}},
        "largest_files": {"over_%d" % MAX_FILE_LINES: [x for x in sizes if x["lines"] > MAX_FILE_LINES],
                          "list": sizes[:LARGEST_SHOWN]},
        "unreachable": {"count": len(unreachable), "list": unreachable},
    }

def checks(r):
    """{rule: {"rule": what it asks, "ok": bool, "detail": [what broke, with file:line]}}."""
    ic, lf, ci = r["import_circles"], r["long_functions"], r["cli_imports"]
    circle = lambda c: ", ".join(c["members"]) + " (" + "; ".join(
        f"{e['from']} -> {e['to']} at {e['example']}" for e in c["edges"]) + ")"
    over = lambda n: [f"{x['at']} {x['name']} ({x['lines']})" for x in lf["list"] if x["lines"] > n]
    detail = {
        "top_level_circles": ("no import circle between top-level modules (1a)",
                              [circle(c) for c in ic["top_level"]]),
        "sibling_circles": ("no import circle between sibling units (1b)",
                            [f"in {d}: {circle(c)}" for d, cs in ic["sibling"].items() for c in cs]),
        "cli_engine_paths": ("src/cli/ names no crate::{%s} path (6)" % ",".join(CLI_WATCH),
                             [f"{c['at']} {c['path']}" for c in ci["list"] if c["direct"]]),
        "long_functions": (f"at most {MAX_LONG} functions over {LONG} lines, {MAX_VERY_LONG} over {VERY_LONG}",
                           [f"{len(fs)} over {n} lines (at most {most}): " + ", ".join(fs)
                            for n, most in ((LONG, MAX_LONG), (VERY_LONG, MAX_VERY_LONG))
                            if len(fs := over(n)) > most]),
        "large_files": (f"no file over {MAX_FILE_LINES} lines outside tests",
                        [f"{x['file']} ({x['lines']} lines, and {x['test_lines']} of tests)"
                         for x in r["largest_files"]["over_%d" % MAX_FILE_LINES]]),
    }
    return {k: {"rule": rule, "ok": not d, "detail": d} for k, (rule, d) in detail.items()}

def show_circles(comps, indent):
    if not comps: print(indent + "(none)")
    for c in comps:
        print(f"{indent}circle of {len(c['members'])}: {', '.join(c['members'])}")
        for e in c["edges"]:
            print(f"{indent}  {e['from']} -> {e['to']}  ({e['lines']} lines, e.g. {e['example']})")

def main():
    r = measure()
    r["checks"] = checks(r)
    failed = not all(c["ok"] for c in r["checks"].values())
    if "--json" in sys.argv[1:]:
        print(json.dumps(r, indent=2))
        return int(failed and "--check" in sys.argv[1:])
    ic = r["import_circles"]
    print("Left out:", ", ".join(r["left_out"]) or "nothing")
    print(f"\n1a. Import circles between top-level modules ({ic['top_level_edges']} edges in all)")
    show_circles(ic["top_level"], "  ")
    print(f"\n1b. Import circles between sibling units of a directory module ({ic['sibling_edges']} edges in all)")
    if not ic["sibling"]: print("  (none)")
    for d, comps in ic["sibling"].items():
        print(f"  [{d}]"); show_circles(comps, "    ")
    lf = r["long_functions"]
    print(f"\n2. Functions over {LONG} lines: {lf['over_%d' % LONG]}; over {VERY_LONG} lines: "
          f"{lf['over_%d' % VERY_LONG]}")
    for x in lf["list"]: print(f"  {x['lines']:4}  {x['at']}  {x['name']}")
    kinds = lambda v: f"{v['total']} (" + ", ".join(f"{k} {n}" for k, n in v["by_kind"].items()) + ")"
    print(f"\n3. pub items and fields: {kinds(r['visibility']['pub'])}")
    print(f"   pub(crate)/pub(super)/pub(in ..): {kinds(r['visibility']['restricted'])}")
    print(f"\n4. unsafe occurrences: {r['unsafe']['count']}")
    for x in r["unsafe"]["list"]: print(f"  {x['at']}  {x['text']}")
    it = r["integration_test_binaries"]
    print(f"\n5. Integration-test binaries: {it['count']} ({', '.join(it['list'])})")
    ci = r["cli_imports"]
    print(f"\n6. src/cli/ uses of crate::{{{','.join(CLI_WATCH)}}}: {ci['count']} paths in {ci['files']} files"
          f" (and {ci['through_engine']} of their types the engine re-exports)")
    for file, by_mod in ci["by_file"].items():
        print(f"  {file}: " + "; ".join(f"{m} at {','.join(map(str, ls))}" for m, ls in by_mod.items()))
    lg = r["largest_files"]
    print(f"\n7. Largest files, lines outside #[cfg(test)] items: {len(lg['over_%d' % MAX_FILE_LINES])}"
          f" over {MAX_FILE_LINES}")
    for x in lg["list"]: print(f"  {x['lines']:5}  {x['file']}  (+{x['test_lines']} test)")
    print(f"\n8. unreachable! occurrences: {r['unreachable']['count']}")
    for x in r["unreachable"]["list"]: print(f"  {x['at']}  {x['text']}")
    print("\nChecks")
    for n, c in enumerate(r["checks"].values(), 1):
        print(f"  R{n}. {c['rule']}: " + ("ok" if c["ok"] else "FAILED: " + c["detail"][0]))
        for d in c["detail"][1:]: print(f"       {d}")
    return int(failed and "--check" in sys.argv[1:])

if __name__ == "__main__":
    sys.exit(main())
