"""The module import graph of src/nettune has no cycle, and no module imports another's
private names. Every import counts: at the top, inside a function, under TYPE_CHECKING;
an import put inside a function to dodge a cycle is still a dependency both ways, so a
cycle is untangled by moving what both sides need, never by hiding an import."""
from __future__ import annotations

import ast
from pathlib import Path

from test_layering import LATE_IMPORTS

SRC = Path(__file__).resolve().parent.parent / "src" / "nettune"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The nettune modules one file imports: `from .x import y` is x, or x.y when y is a
    module (`from . import lab_nodes`), and every package Python initialises on the way
    (importing run.workloads.base runs run/workloads/__init__.py, the registry that
    imports the members) unless the importing module is inside that package already."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "nettune":
                target = node.module
            else:
                continue
            subs = {f"{target}.{a.name}" for a in node.names} & modules
            out |= subs
            if target in modules and len(subs) < len(node.names):
                out.add(target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
    mine = {".".join(me.split(".")[:i]) for i in range(1, me.count(".") + 2)}  # my own packages (and me)
    out |= {pkg for m in list(out) for pkg in (".".join(m.split(".")[:i]) for i in range(1, m.count(".") + 1)) if pkg in modules} - mine
    return out - {me}


def import_graph() -> dict[str, set[str]]:
    """Every module's imports, but the layering's one deliberate backward edge
    (test_layering.LATE_IMPORTS: the study file asks the knob registry whether a knob kind
    exists, from inside a function): every later stage may reach the study file, so that
    edge would close a loop through any of them; no other edge may."""
    files = {module_name(p): p for p in SRC.rglob("*.py")}
    graph = {m: imports_of(p, set(files)) for m, p in files.items()}
    for file, pkg in LATE_IMPORTS:
        me = module_name(SRC / file)
        graph[me] = {m for m in graph[me] if m.split(".")[1] != pkg}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_the_detector_sees_cycles_through_function_and_type_only_imports(tmp_path):
    pkg = tmp_path / "nettune" / "p"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text("class A: ...\ndef f():\n    from .b import g\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\ndef g(): ...\n")
    (pkg / "c.py").write_text("from nettune.p import a\n")
    (pkg / "q").mkdir()
    (pkg / "q" / "__init__.py").write_text("from ..c import x\n")  # a registry importing back...
    (pkg / "q" / "base.py").write_text("")
    (pkg / "d.py").write_text("from nettune.p.q.base import B\n")  # ...runs when its base is imported
    mods = {"nettune.p", "nettune.p.a", "nettune.p.b", "nettune.p.c", "nettune.p.d", "nettune.p.q", "nettune.p.q.base"}
    global SRC
    old, SRC = SRC, tmp_path / "nettune"
    try:
        graph = {module_name(p): imports_of(p, mods) for p in pkg.rglob("*.py")}
    finally:
        SRC = old
    assert graph["nettune.p.a"] == {"nettune.p.b"} and graph["nettune.p.b"] == {"nettune.p.a"}
    assert graph["nettune.p.c"] == {"nettune.p.a"} and graph["nettune.p"] == {"nettune.p.a"}
    assert graph["nettune.p.d"] == {"nettune.p.q", "nettune.p.q.base"} and graph["nettune.p.q"] == {"nettune.p.c"}
    assert cycles(graph) == [["nettune.p.a", "nettune.p.b"]]


def test_no_import_cycle_in_src():
    graph = import_graph()
    assert "nettune.run.point_runner" in graph["nettune.run.study"]  # a top-level import
    assert "nettune.run.plan_time" in graph["nettune.commands.eta"]  # one inside a function (the run layer loads scipy)
    assert "nettune.run.workloads" in graph["nettune.run.study"]  # a package Python initialises on the way
    assert cycles(graph) == []


def private_imports(path: Path) -> list[str]:
    """`from .x import _name` (a module's private name used by another module)."""
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "nettune"):
            out += [f"{path.name}:{node.lineno} imports {a.name} from {'.' * node.level}{node.module or ''}"
                    for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_no_module_imports_another_modules_private_names(tmp_path):
    probe = tmp_path / "m.py"
    probe.write_text("from .driver import _failed, pick_port\nfrom nettune.x import __version__\nfrom os import _exit\n")
    assert private_imports(probe) == ["m.py:1 imports _failed from .driver"]
    bad = [line for p in sorted(SRC.rglob("*.py")) for line in private_imports(p)]
    assert bad == []
