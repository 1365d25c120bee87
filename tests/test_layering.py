"""The pipeline's stages import only earlier ones: the spec never loads the plan, and CLI
command modules import cli/app.py, never each other."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "nettune"


def test_the_spec_stage_loads_nothing_of_the_plan():
    code = ("import sys, nettune.studyfile, nettune.studyfile.load, nettune.studyfile.models, nettune.studyfile.ssh_hosts, nettune.studyfile.expr;"
            "print([m for m in sys.modules if m.startswith('nettune.plan')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cli_command_modules_do_not_import_each_other():
    # a command module registers commands; cli/dry_run_output.py, the --dry-run printer, registers none
    commands = {p.stem for p in (SRC / "cli").glob("*.py") if "app.command(" in p.read_text() or "add_typer(" in p.read_text()} - {"app", "main"}
    assert {"run_commands", "lab_commands", "knobs_commands", "results_commands", "analysis_commands"} <= commands
    for path in (SRC / "cli").glob("*.py"):
        if path.stem not in commands:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                assert node.module not in commands, f"cli/{path.name} imports cli/{node.module}.py"


# The pipeline, earliest first (docs/architecture.md draws it). A module may import from its
# own package and from earlier ones, never from a later one; `run` (orchestration) and `cli`
# come last. Imports inside functions count too: they are dependencies all the same.
PIPELINE = ["errors", "record", "studyfile", "plan", "targets", "knobs", "engines", "probes", "doctor", "store", "analysis",
            "search", "exporters", "importers", "report", "run", "api", "commands", "setup_tools", "cli"]
# (file, later package it imports) -> why it may
LATE_IMPORTS = {
    ("studyfile/knobs_section.py", "knobs"): "an unknown knob kind is refused while the file is read, and only the knob registry knows the kinds",
    ("studyfile/kubernetes_target.py", "knobs"): "a Kubernetes knob that can never reach its pods is refused while the file is read, and only a knob's kind knows which sysctls it writes",
    ("plan/study_file.py", "knobs"): "every point's knob values are checked when the file is loaded (the dry run refuses what the run "
                                     "refuses), and only the knob kinds know their values",
}


def imported_packages(path: Path) -> list[tuple[int, str]]:
    """(line, top-level nettune package) of every relative import in one source file."""
    rel = path.relative_to(SRC).parts
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            base = list(rel[:-1])[: len(rel) - node.level] if node.level > 1 else list(rel[:-1])
            target = base + (node.module.split(".") if node.module else [])
            names = [target[0]] if target else [a.name for a in node.names]
            out += [(node.lineno, n) for n in names]
    return out


def test_no_stage_imports_a_later_one():
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        own = rel.parts[0].removesuffix(".py")
        if own not in PIPELINE:
            continue
        for line, pkg in imported_packages(path):
            if pkg in PIPELINE and PIPELINE.index(pkg) > PIPELINE.index(own) and (rel.as_posix(), pkg) not in LATE_IMPORTS:
                bad.append(f"{rel}:{line} imports {pkg} (a later stage than {own})")
    assert not bad, "\n".join(bad)


def test_every_package_has_a_place_in_the_pipeline():
    packages = {p.name.removesuffix(".py") for p in SRC.iterdir() if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"}
    assert packages - {"__init__", "data"} <= set(PIPELINE), packages - set(PIPELINE)
    for file, pkg in LATE_IMPORTS:
        assert (SRC / file).is_file() and pkg in PIPELINE


def test_one_file_name_one_job():
    # two modules with the same file name doing different jobs are misread in tracebacks and
    # reviews; a family's protocol (base.py) and registry (registry.py) are the same job in each
    shared = {"__init__.py", "__main__.py", "base.py", "registry.py"}
    seen: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        seen.setdefault(path.name, []).append(path.relative_to(SRC).as_posix())
    assert {n: p for n, p in seen.items() if len(p) > 1 and n not in shared} == {}
