"""No file outside a family member asks which member it has: no `study.target.kind ==
"lab"`, no `isinstance(spec, SshTargetSpec)`, no `engine == "command"` or `engine.network`.
A target kind answers for itself (targets/target_kind.py, the spec's own properties), a
workload kind too (studyfile/workload_kind.py, run/workloads/); a new member is then one
file (per half), not an edit in every file that switches."""
from __future__ import annotations

import ast
from pathlib import Path

from nettune.studyfile.models import DEFAULT_KIND, TARGET_KINDS, WORKLOAD_KINDS

SRC = Path(__file__).resolve().parent.parent / "src" / "nettune"

# The members' own files: a member may name itself.
MEMBERS = (
    "targets/lab/", "targets/ssh/", "targets/kubernetes/", "targets/local.py", "targets/local_kind.py", "targets/sandbox.py",
    "targets/loopback.py", "targets/vmlab/", "studyfile/lab_target.py", "studyfile/vmlab_target.py", "studyfile/kubernetes_target.py", "studyfile/ssh_hosts.py",
    "studyfile/network_workload.py", "studyfile/command_workload.py", "run/workloads/", "engines/timed_command.py",
)
# engine names that select a kind other than the default one, and the kinds' names
WORKLOAD_WORDS = {e for k in WORKLOAD_KINDS.values() if k.name != DEFAULT_KIND for e in k.engines} | set(WORKLOAD_KINDS) - {DEFAULT_KIND}


def _last_name(node: ast.AST) -> str:
    """`kind` of study.target.kind, `engine` of wl.engine or engine, '' otherwise."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _literals(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def switches(text: str) -> list[tuple[int, str]]:
    """(line, what) of every place that tells members apart by their name."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            names = {_last_name(s) for s in sides}
            words = set().union(*(_literals(s) for s in sides))
            if "kind" in names and words & set(TARGET_KINDS):
                out.append((node.lineno, f"target kind {sorted(words & set(TARGET_KINDS))}"))
            # `name` only as an attribute (kind.name == "command"): a bare `name` is any name
            # (ssh_config's `Match command` criterion is not a workload kind)
            attrs = {s.attr for s in sides if isinstance(s, ast.Attribute)}
            if (names & {"engine", "engines", "kind"} or "name" in attrs) and words & WORKLOAD_WORDS:
                out.append((node.lineno, f"workload kind {sorted(words & WORKLOAD_WORDS)}"))
        elif isinstance(node, ast.Call) and _last_name(node.func) == "isinstance" and len(node.args) == 2:
            classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            named = [_last_name(c) for c in classes if _last_name(c).endswith("TargetSpec")]
            if named:
                out.append((node.lineno, f"isinstance {named}"))
        elif isinstance(node, ast.Attribute) and node.attr == "network" and "engine" in ast.unparse(node.value).lower():
            out.append((node.lineno, "engine.network"))
    return out


def test_the_detector_sees_each_form():
    src = ('if study.target.kind == "lab": pass\nif spec.kind in ("ssh", "local"): pass\nif isinstance(t, SshTargetSpec): pass\n'
           'if wl.engine == "command": pass\nif not get_engine(x).network: pass\nif r.engine != "iperf3": pass\n'
           'if conn not in ("ssh", "smart"): pass\nif spec.network == "host": pass\n')
    assert [line for line, _ in switches(src)] == [1, 2, 3, 4, 5]


def test_no_file_outside_a_member_switches_on_a_kind():
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(MEMBERS):
            continue
        bad += [f"{rel}:{line}: {what}" for line, what in switches(path.read_text())]
    assert bad == []
    for member in MEMBERS:
        assert (SRC / member).exists(), member
