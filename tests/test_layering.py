"""The pipeline's stages import only earlier ones: the spec never loads the plan, and CLI
command modules import cli/app.py, never each other."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "nettune"


def test_the_spec_stage_loads_nothing_of_the_plan():
    code = ("import sys, nettune.spec, nettune.spec.load, nettune.spec.models, nettune.spec.ssh_hosts, nettune.spec.expr;"
            "print([m for m in sys.modules if m.startswith('nettune.plan')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cli_command_modules_do_not_import_each_other():
    # a command module registers commands; cli/dry_run_output.py, the --dry-run printer, registers none
    commands = {p.stem for p in (SRC / "cli").glob("*.py") if "app.command(" in p.read_text() or "add_typer(" in p.read_text()} - {"app", "main"}
    assert {"run", "lab", "knobs", "results", "analysis"} <= commands
    for path in (SRC / "cli").glob("*.py"):
        if path.stem not in commands:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                assert node.module not in commands, f"cli/{path.name} imports cli/{node.module}.py"
