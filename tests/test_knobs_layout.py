"""The knobs package keeps its shape: every kind declares its key shape (the registry is the
only list of kinds), knob code asks no object what it can do and builds no target class,
and the spec layer does not import the knobs layer when it is imported."""
import ast
import subprocess
import sys
from pathlib import Path

from nettune.knobs.base import Kind
from nettune.knobs.keys import parse_key
from nettune.knobs.registry import KINDS, NEVER

SRC = Path(__file__).resolve().parents[1] / "src" / "nettune"


def _imports(path: Path, top_level_only: bool = False) -> list[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            out.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def test_every_kind_declares_its_key_shape():
    for name, kind in KINDS.items():
        assert isinstance(kind, Kind) and kind.name == name
        assert kind.takes_arg in ("required", "never", "optional"), name
        if kind.takes_arg == "required":
            assert kind.example_arg, name
            assert parse_key(f"{name}:{kind.example_arg}").kind == name
        if kind.table_value:
            assert kind.table_hint, name
    assert not set(NEVER) & set(KINDS)


def test_knob_code_asks_no_object_what_it_can_do():
    for path in sorted((SRC / "knobs").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("getattr", "hasattr"), f"{path.name}:{node.lineno}"


def test_knob_code_builds_no_target_class():
    # hosts come through the Host/Target protocol, targets/machine.py and targets/reconnect.py
    for path in sorted((SRC / "knobs").glob("*.py")):
        for mod in _imports(path):
            assert mod not in ("..targets.lab", "..targets.local", "..targets.ssh", "..targets.sshproc", "..targets.labnet"), f"{path.name}: {mod}"


def test_the_spec_layer_does_not_import_knobs():
    for path in sorted((SRC / "spec").glob("*.py")):
        assert not [m for m in _imports(path, top_level_only=True) if "knobs" in m.split(".")], path.name
    code = "import sys, nettune.studyfile; print(sorted(m for m in sys.modules if m.startswith('nettune.knobs')))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"
