"""Helpers of the bad-input tests (test_bad_input.py, test_bad_import.py, test_plan_limits.py):
a valid study to spoil, a small TOML writer, and what "refused, nothing created" means."""
from __future__ import annotations

import json
import math
import re
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

from nettune.cli.main import app
from nettune.errors import SpecError
from nettune import load_study

# ~80 generated cases a test keeps each of these files around half a minute on two cores
FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def base_study() -> dict[str, Any]:
    """Valid: quick.toml's shape (lab, templates, an expression in the sweep)."""
    return {
        "name": "h1-fuzz",
        "target": {"kind": "lab", "hosts": ["server", "client"], "queues": "{queues}"},
        "workload": {"engine": "iperf3", "duration": 2, "parallel": "{streams}"},
        "sweep": {"queues": [1, 2], "mult": [1, 2], "streams": "{queues} * {mult}"},
        "repeat": {"runs": 1},
    }


# --- writing TOML (the test builds files the way a person would write them) -------------

def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else _str(k)


def _str(s: str) -> str:
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"


def to_toml(doc: dict[str, Any]) -> str:
    lines = [f"{_key(k)} = {_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += ["", f"[{_key(k)}]"] + [f"{_key(a)} = {_value(b)}" for a, b in v.items()]
    return "\n".join(lines) + "\n"


# --- what "nothing created" means -----------------------------------------------------

def our_namespaces() -> set[str]:
    """Namespaces a study of these tests could create (other sessions' labs may come and go)."""
    from pyroute2 import netns

    return {n for n in netns.listnetns() if n.startswith(("nettune-h1-", "nettune-quick-", "nettune-knobs-", "nettune-mesh-", "nettune-repeats-"))}


class Place:
    """A fresh directory per case: the file, the --db path, NETTUNE_STATE_DIR."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="h1-bad-")
        self.dir = Path(self.tmp.name)
        self.db = self.dir / "results.db"
        self.state = self.dir / "state"

    def file(self, data: bytes | str, name: str = "study.toml") -> Path:
        p = self.dir / name
        p.write_bytes(data.encode() if isinstance(data, str) else data)
        return p

    def invoke(self, *args: str) -> Any:
        return CliRunner().invoke(app, list(args), env={"NETTUNE_STATE_DIR": str(self.state), "COLUMNS": "80"})

    def nothing_created(self) -> None:
        assert not self.db.exists(), "a database was created"
        assert not (self.state / "journal.jsonl").exists() and not self.state.exists(), "the knob journal was written"

    def close(self) -> None:
        self.tmp.cleanup()


def assert_one_line_error(result: Any, names: str) -> str:
    """Exit 2, one `error:` line naming `names`, no traceback."""
    out, err = result.stdout, result.stderr
    assert result.exit_code == 2, (result.exit_code, out, err, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in out + err
    lines = err.splitlines()  # splitlines: \r, \x0b, \u2028... would count as breaks too
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert names in lines[0], (names, lines[0])
    return lines[0]


def check_rejected_study(text: bytes | str) -> str:
    """The file is invalid: `run --dry-run` and `run` both refuse it the same way."""
    place = Place()
    try:
        path = place.file(text)
        before = our_namespaces()
        line = assert_one_line_error(place.invoke("run", str(path), "--dry-run", "--db", str(place.db)), str(path))
        assert_one_line_error(place.invoke("run", str(path), "--db", str(place.db)), str(path))
        place.nothing_created()
        assert our_namespaces() <= before
        return line
    finally:
        place.close()


def check_any_study(text: bytes | str) -> None:
    """Valid or not, the CLI answers cleanly: a plan (exit 0) or the one-line refusal.
    A file load_study accepts is only dry-run, never run."""
    place = Place()
    try:
        path = place.file(text)
        try:
            load_study(path)
        except SpecError:
            place.close()
            check_rejected_study(text)
            return
        before = our_namespaces()
        r = place.invoke("run", str(path), "--dry-run", "--db", str(place.db))
        assert r.exit_code == 0 and r.exception is None, (r.stdout, r.stderr, r.exception)
        assert re.search(r"expected time: (about|at most) ", r.stdout), r.stdout  # at most: restarts or reboots at their timeout
        place.nothing_created()
        assert our_namespaces() <= before
    finally:
        place.close()


def hints(fixture: Path) -> list[str]:
    """--set values from the fixture's recorded workload (what a user who knows the test gives)."""
    wl = json.loads((fixture.parent / "meta.json").read_text())["workload"]
    return [f"--set={k}={str(wl[k]).lower()}" for k in ("protocol", "parallel", "reverse", "bidir", "duration")]


def check_rejected_import(files: list[Path], place: Place, extra: list[str] = (), studies: list[str] | None = None) -> list[str]:
    """Every file is unusable: one `error: FILE: ...` line each, exit 2, nothing written."""
    r = place.invoke("import", *map(str, files), "--study", "h1-imp", "--db", str(place.db), *extra)
    assert r.exit_code == 2, (r.stdout, r.stderr, r.exception)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.stdout + r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == len(files) and all(ln.startswith(f"error: {f}: ") for ln, f in zip(lines, files)), r.stderr
    if studies is None:
        place.nothing_created()
    else:
        with closing(sqlite3.connect(place.db)) as db:
            assert [n for (n,) in db.execute("SELECT name FROM studies ORDER BY id")] == studies
            assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == len(studies)
    return lines
