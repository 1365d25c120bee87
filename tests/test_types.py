"""The run layer, the store and the analysis are typed end to end: src/nettune/{run,store,
analysis} pass mypy --strict (pinned in the `test` extra; configured in pyproject.toml
[tool.mypy]), and none of the run layer's parameters is `Any` where a protocol or a record
exists (JSON-shaped records, dict[str, Any], stay)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "src" / "nettune" / "run"


def test_run_store_and_analysis_pass_a_strict_type_check():
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert "No module named mypy" not in r.stderr, "mypy is missing: pip install -e '.[test]' (scripts/test.sh does)"
    assert r.returncode == 0, r.stdout + r.stderr
    config = (ROOT / "pyproject.toml").read_text()  # what [tool.mypy] checks
    assert all(f'"src/nettune/{layer}"' in config for layer in ("run", "store", "analysis"))


def untyped(text: str) -> list[str]:
    """Parameters, returns and attributes annotated with Any (but dict[str, Any])."""
    out = []
    for node in ast.walk(ast.parse(text)):
        anns: list[tuple[str, ast.expr | None]] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            anns += [(f"{node.name}({p.arg})", p.annotation) for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, [a.vararg, a.kwarg])]]
            anns.append((f"{node.name} -> ", node.returns))
        elif isinstance(node, ast.AnnAssign):
            anns.append((ast.unparse(node.target), node.annotation))
        for what, ann in anns:
            if ann is not None and "Any" in ast.unparse(ann).replace("dict[str, Any]", ""):
                out.append(f"{node.lineno}: {what}: {ast.unparse(ann)}")
    return out


def test_the_detector_sees_any_but_json_records():
    src = "def f(a: Any, b: dict[str, Any], c: list[Any] | None, d: int) -> Any: ...\nx: Any = 1\n"
    assert untyped(src) == ["1: f(a): Any", "1: f(c): list[Any] | None", "1: f -> : Any", "2: x: Any"]


def test_no_parameter_of_the_run_layer_is_any():
    bad = [f"run/{p.relative_to(RUN)}:{line}" for p in sorted(RUN.rglob("*.py")) for line in untyped(p.read_text())]
    assert bad == []
