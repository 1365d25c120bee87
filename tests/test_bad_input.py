"""Bad input (issue 8, item 2): a study file or an imported file that is wrong in any way
gives exit status 2, exactly one line on stderr starting with `error:` that names the
file, no traceback, and nothing created: no network namespace, no knob journal, no
database (or no new study and no new rows in an existing one).

Study files are generated from the real schema (`nettune schema`): a valid study of
quick.toml's shape with one field given a value outside its range, a value of a type the
field does not take, an unknown key, an empty list or a missing required field; plus
random bytes and the real examples cut or with a byte changed. Imported files are random
bytes and the real iperf3/iperf2 outputs of tests/fixtures cut at any byte.

Most cases run in-process (typer's CliRunner on nettune.cli.main.app, stderr kept apart)
for speed; a few go through `python -m nettune.cli` so the real entry point is covered.
`nettune run` without --dry-run only ever gets files load_study rejects, so no case can
start a study.
"""
from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from nettune.cli.main import app
from nettune.errors import SpecError
from nettune.spec import load_study, parse_study
from nettune.spec.models import json_schema

from conftest import EXAMPLES, ROOT, nettune

FIX = ROOT / "tests" / "fixtures"
SCHEMA = json_schema()
DEFS = SCHEMA["$defs"]
SECTIONS = {"workload": DEFS["Workload"], "repeat": DEFS["Repeat"], "target": DEFS["LabTarget"]}
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


def test_the_generator_writes_the_valid_base_study():
    study = parse_study(to_toml(base_study()), "base.toml")
    assert study.name == "h1-fuzz" and len(study.sweep["queues"]) == 2
    assert parse_study(to_toml(base_study() | {"description": 'a "quoted"\tline\x7f'}), "b.toml").description.endswith("\x7f")


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
        assert "expected time: about" in r.stdout
        place.nothing_created()
        assert our_namespaces() <= before
    finally:
        place.close()


# --- study files from the schema ------------------------------------------------------

def _members(prop: dict[str, Any]) -> list[dict[str, Any]]:
    return prop.get("anyOf") or prop.get("oneOf") or [prop]


def _bounded() -> list[tuple[str, str, dict[str, Any], bool]]:
    """(section, field, the numeric member with its bounds, takes a '{param}' template)."""
    out = []
    for section, schema in SECTIONS.items():
        for name, prop in schema["properties"].items():
            members = _members(prop)
            templated = any("pattern" in m for m in members)
            for m in members:
                if m.get("type") in ("integer", "number") and any(k in m for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
                    out.append((section, name, m, templated))
    return out


BOUNDED = _bounded()


@st.composite
def outside(draw: Any, m: dict[str, Any]) -> Any:
    """A number outside the member's range (or NaN, which is in no range)."""
    whole = m["type"] == "integer"
    sides = []
    lo = m.get("minimum", m.get("exclusiveMinimum"))
    hi = m.get("maximum", m.get("exclusiveMaximum"))
    if lo is not None:
        top = lo - 1 if "minimum" in m else lo
        sides.append(st.integers(max_value=int(math.floor(top))) if whole else st.floats(max_value=top, exclude_max="minimum" in m, allow_nan=False))
    if hi is not None:
        bottom = hi + 1 if "maximum" in m else hi
        sides.append(st.integers(min_value=int(math.ceil(bottom))) if whole else st.floats(min_value=bottom, exclude_min="maximum" in m, allow_nan=False))
    if not whole:
        sides.append(st.just(float("nan")))
    return draw(st.one_of(sides))


@st.composite
def out_of_range(draw: Any) -> dict[str, Any]:
    section, name, member, templated = draw(st.sampled_from(BOUNDED))
    value = draw(outside(member))
    doc = base_study()
    if templated and draw(st.booleans()):
        # through the sweep: only one point is bad, and load must still find it
        doc[section][name] = "{bad}"
        ok = member.get("minimum", 1) if member["type"] == "integer" else 1.0
        doc["sweep"]["bad"] = draw(st.permutations([ok, value]))
    else:
        doc[section][name] = value
    return doc


def _types(prop: dict[str, Any]) -> set[str]:
    """JSON types the field takes; 'text' when any string (no pattern, enum or const) does."""
    types = set()
    for m in _members(prop):
        t = m.get("type")
        if t == "string" and not any(k in m for k in ("pattern", "enum", "const")):
            types.add("text")
        elif t:
            types.add(t)
    return types


WRONG = {  # a value of each kind, and the JSON types that would take it
    "table": ({"a": 1}, {"object"}),
    "array": ([1, "x"], {"array"}),
    "text": ("zz!", {"text"}),
    "bool": (True, {"boolean"}),
    "int": (7, {"integer", "number"}),
    "fraction": (2.5, {"number"}),
}


@st.composite
def wrong_type(draw: Any) -> dict[str, Any]:
    section = draw(st.sampled_from(sorted(SECTIONS)))
    props = SECTIONS[section]["properties"]
    name = draw(st.sampled_from(sorted(p for p in props if p != "kind")))
    takes = _types(props[name])
    kinds = sorted(k for k, (_, accepted) in WRONG.items() if not accepted & takes)
    assume(kinds)
    doc = base_study()
    doc[section][name] = WRONG[draw(st.sampled_from(kinds))][0]
    return doc


@st.composite
def unknown_key(draw: Any) -> dict[str, Any]:
    where = draw(st.sampled_from(["(top)", *sorted(SECTIONS)]))
    known = set(SCHEMA["properties"]) if where == "(top)" else set(SECTIONS[where]["properties"])
    key = draw(st.from_regex(r"\A[a-z][a-z0-9_]{0,11}\Z").filter(lambda k: k not in known))
    doc = base_study()
    (doc if where == "(top)" else doc[where])[key] = draw(st.sampled_from([1, "x", True, [1]]))
    return doc


@st.composite
def empty_list(draw: Any) -> dict[str, Any]:
    doc = base_study()
    which = draw(st.sampled_from(["sweep", "hosts", "pairs", "knob hosts"]))
    if which == "sweep":
        doc["sweep"][draw(st.sampled_from(["queues", "mult", "extra"]))] = []
    elif which == "hosts":
        doc["target"]["hosts"] = []
    elif which == "pairs":
        doc["workload"]["pairs"] = []
    else:
        doc["knobs"] = {"sysctl:net.core.rmem_max": 212992, "hosts": {"sysctl:net.core.rmem_max": []}}
    return doc


@st.composite
def missing_or_bad_name(draw: Any) -> dict[str, Any]:
    doc = base_study()
    which = draw(st.sampled_from(["name", "target", "kind", "bad name", "bad kind"]))
    if which == "name":
        del doc["name"]
    elif which == "target":
        del doc["target"]
    elif which == "kind":
        del doc["target"]["kind"]
    elif which == "bad name":
        doc["name"] = draw(st.text(max_size=80).filter(lambda s: not re.fullmatch(SCHEMA["properties"]["name"]["pattern"], s)))
    else:
        doc["target"]["kind"] = draw(st.text(max_size=20).filter(lambda s: s not in ("lab", "local", "ssh")))
    return doc


@FUZZ
@given(st.one_of(out_of_range(), wrong_type(), unknown_key(), empty_list(), missing_or_bad_name()))
def test_invalid_study_files_from_the_schema_are_refused(doc):
    check_rejected_study(to_toml(doc))


@settings(max_examples=25, deadline=None)
@given(out_of_range())
def test_out_of_range_errors_say_the_allowed_range(doc):
    line = check_rejected_study(to_toml(doc))
    assert re.search(r"out of range: allowed (\S+ to \S+|at least|at most|more than|less than)", line), line


def test_known_bad_study_files(tmp_path):
    """The cases issue 8 reported, each with the message a user needs."""
    cases = {
        b"\xff\xfe\x00": "not UTF-8 text: byte 0xff at column 1 (it looks like UTF-16); save the file as UTF-8",
        b'name = "h1-x"\n# caf\xe9\n': ":2: not UTF-8 text: byte 0xe9 at column 6",
        to_toml(base_study()).replace("mult = [1, 2]", "mult = []").encode(): "sweep.mult: empty list: give at least one value",
        to_toml(base_study()).replace("duration = 2", "duration = 100000000").encode(): "workload.duration: 100000000 is out of range: allowed 1 to 86400",
        to_toml(base_study()).replace("runs = 1", "runs = true").encode(): "repeat.runs: expected a whole number, got true",
        b'name = "h1-x"\x00\n': "contains a NUL byte",
        b"a = " + b"[" * 5000 + b"]" * 5000: "nested hundreds of levels deep",
        b"x" * (2 << 20): "larger than 1 MiB, too big to be a study TOML file",
        b"a = " + b"9" * 5000: "not valid TOML: Exceeds the limit (4300 digits)",
        to_toml(base_study() | {"target": {"kind": "lab", "subnet": "garbage"}}).encode(): "target.subnet: 'garbage'",
        to_toml(base_study() | {"target": {"kind": "lab", "hosts": ["a"]}, "workload": {"pairs": "mesh"}}).encode(): "needs at least two test hosts",
    }
    for data, want in cases.items():
        assert want in check_rejected_study(data)
    place = Place()
    try:  # a directory, and a named pipe nobody writes to (open() would wait forever)
        assert "is a directory" in assert_one_line_error(place.invoke("run", str(place.dir), "--db", str(place.db)), str(place.dir))
        os.mkfifo(place.dir / "pipe")
        pipe = str(place.dir / "pipe")
        assert "empty file" in assert_one_line_error(place.invoke("run", pipe, "--db", str(place.db)), pipe)
        check_rejected_import([place.dir / "pipe"], place)
        place.nothing_created()
    finally:
        place.close()


NAMES = ["queues", "mult", "streams", "e0", "e1", "e2", "nope"]
LEAF = st.one_of(st.integers().map(str), st.sampled_from(NAMES), st.sampled_from(["{queues}", "{e0}"]),
                 st.floats(allow_nan=False, allow_infinity=False).map(repr), st.sampled_from(["'a'", "x.y", "f(1)", "[1]", ""]))
EXPR = st.recursive(LEAF, lambda e: st.one_of(
    st.tuples(e, st.sampled_from(["+", "-", "*", "/", "//", "%", "**"]), e).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
    e.map(lambda x: f"-{x}"),
    st.lists(e, min_size=0, max_size=3).map(lambda xs: f"{'min' if len(xs) % 2 else 'max'}({', '.join(xs)})"),
), max_leaves=25)


@FUZZ
@given(st.lists(EXPR, min_size=1, max_size=3), st.sampled_from(["duration", "parallel", "congestion", "bitrate"]), st.booleans())
@example(["99999999", "{e0} * {e0}", "{e1} * {e1}"], "congestion", True)  # doubles its digits at each step
@example(["-" * 1000 + "1"], "duration", False)
@example(["1" + "+1" * 5000], "duration", False)
@example(["(" * 300 + "1" + ")" * 300], "duration", False)
def test_sweep_expressions(exprs, field, use_it):
    """Arithmetic in [sweep] and templates: a plan or a one-line refusal, never a crash
    (a number growing without bound, a parser recursing, min() of text...)."""
    doc = base_study()
    for i, e in enumerate(exprs):
        doc["sweep"][f"e{i}"] = e
    if use_it:
        doc["workload"][field] = "{e%d}" % (len(exprs) - 1) if field != "congestion" else "cc{e0}"
    check_any_study(to_toml(doc))


KNOB_KEY = st.one_of(st.text(max_size=30), st.sampled_from(["sysctl:net.core.rmem_max", "mtu", "offload:gro", "command:x", "cmdline", "mtu@eth0", "hosts"]))
KNOB_VALUE = st.recursive(st.one_of(st.integers(), st.text(max_size=10), st.booleans(), st.floats()),
                          lambda v: st.one_of(st.lists(v, max_size=3), st.dictionaries(st.sampled_from(["value", "read", "apply", "scope", "zz"]), v, max_size=3)),
                          max_leaves=6)


@FUZZ
@given(st.dictionaries(KNOB_KEY, KNOB_VALUE, min_size=1, max_size=3))
def test_knob_sections(knobs):
    """[knobs] of any shape: a plan (dry run only) or a one-line refusal."""
    check_any_study(to_toml(base_study() | {"knobs": knobs}))


def test_an_ssh_inventory_is_read_as_carefully_as_the_study():
    place = Place()
    try:
        study = place.file('name = "h1-inv"\n[target]\nkind = "ssh"\ninventory = "inv.toml"\n')
        for data, want in [(b"\xff\xfe\x00", "inv.toml:1: not UTF-8 text"), (b"a = " + b"[" * 5000 + b"]" * 5000, "nested hundreds of levels deep")]:
            place.file(data, "inv.toml")
            assert want in assert_one_line_error(place.invoke("run", str(study), "--db", str(place.db)), "inv.toml")
        place.nothing_created()
    finally:
        place.close()


# --- random bytes and the real examples, cut or changed -------------------------------

EXAMPLE_TEXTS = {p.name: p.read_bytes() for p in sorted(EXAMPLES.glob("*.toml"))}


@FUZZ
@given(st.binary(max_size=600))
@example(b"\xff\xfe\x00")
@example(b"")
def test_random_bytes_as_a_study_file(data):
    check_rejected_study(data)  # no name, no target: never a study


@FUZZ
@given(st.sampled_from(sorted(EXAMPLE_TEXTS)), st.data())
def test_cut_examples(name, data):
    text = EXAMPLE_TEXTS[name]
    check_any_study(text[: data.draw(st.integers(0, len(text) - 1))])


@FUZZ
@given(st.sampled_from(sorted(EXAMPLE_TEXTS)), st.data())
def test_examples_with_a_byte_changed(name, data):
    text = bytearray(EXAMPLE_TEXTS[name])
    text[data.draw(st.integers(0, len(text) - 1))] = data.draw(st.integers(0, 255))
    check_any_study(bytes(text))


# --- the point-count guard and the expected time --------------------------------------

def test_point_count_is_refused_before_anything_is_expanded(monkeypatch):
    import nettune.plan.points as points

    def no(*a: Any, **k: Any) -> None:
        raise AssertionError("the sweep was expanded before the point count was checked")

    monkeypatch.setattr(points, "expand", no)
    doc = base_study()
    doc["sweep"] = {"a": list(range(5000)), "b": list(range(5000))}
    with pytest.raises(SpecError, match=r"25,000,000 points \(5000 x 5000 values\) is more than the limit of 10,000; .*--max-points 25000000"):
        parse_study(to_toml(doc), "s.toml")
    line = check_rejected_study(to_toml(doc))
    assert "sweep: 25,000,000 points" in line


def test_max_points_library_and_cli():
    doc = base_study()
    doc["sweep"] = {"queues": [1, 2, 3], "mult": [1, 2, 3, 4], "streams": "{queues} * {mult}"}
    text = to_toml(doc)
    assert len(points_of(parse_study(text, "s.toml"))) == 12  # default limit: 10,000
    with pytest.raises(SpecError, match="12 points"):
        parse_study(text, "s.toml", max_points=11)
    place = Place()
    try:
        path = place.file(text)
        assert load_study(path, max_points=12).name == "h1-fuzz"
        assert "--max-points 12" in assert_one_line_error(place.invoke("run", str(path), "--dry-run", "--max-points", "11"), str(path))
        r = place.invoke("run", str(path), "--dry-run", "--max-points", "12")
        assert r.exit_code == 0 and "12 points x 1 runs = 12 tests" in r.stdout
        place.nothing_created()
    finally:
        place.close()


def points_of(study: Any) -> list[Any]:
    from nettune.plan.points import expand

    return expand(study)


def test_a_plan_longer_than_72_hours_needs_allow_long():
    doc = base_study()
    doc["workload"]["duration"] = 86400  # 4 points x 1 day
    place = Place()
    try:
        path = place.file(to_toml(doc))
        r = place.invoke("run", str(path), "--dry-run", "--db", str(place.db))
        assert r.exit_code == 0 and "expected time: about 4d00h" in r.stdout and "--allow-long" in r.stdout
        before = our_namespaces()
        line = assert_one_line_error(place.invoke("run", str(path), "--db", str(place.db)), str(path))
        assert "about 4d00h, more than 72 hours" in line and "--allow-long" in line
        place.nothing_created()
        assert our_namespaces() <= before
    finally:
        place.close()


def test_expected_time_of_adaptive_repeats_and_pairs():
    from nettune.plan.points import expand_and_check
    from nettune.run.eta import describe, human_seconds, plan_seconds

    doc = base_study()
    doc["repeat"] = {"min_runs": 3, "max_runs": 5, "target_margin": 0.05, "pause": 1}
    study = parse_study(to_toml(doc), "s.toml")
    low, high = plan_seconds(study, expand_and_check(study))
    assert low == pytest.approx(4 * 3 * 2.6 + (12 - 1) * 1)  # 4 points x 3 runs x (2 s + overhead) + pauses
    assert high == pytest.approx(4 * 5 * 2.6 + (20 - 1) * 1)
    assert "up to" in describe(study, expand_and_check(study))
    doc = base_study() | {"target": {"kind": "lab", "hosts": ["a", "b", "c", "d"]}, "sweep": {}}
    doc["workload"] = {"duration": 10, "pairs": "mesh"}
    sequential = parse_study(to_toml(doc), "s.toml")
    doc["workload"]["parallel_pairs"] = True
    rounds = parse_study(to_toml(doc), "s.toml")
    assert plan_seconds(sequential, expand_and_check(sequential))[0] == pytest.approx(6 * 10.6)  # 6 pairs one after another
    assert plan_seconds(rounds, expand_and_check(rounds))[0] == pytest.approx(3 * 10.6)  # 3 rounds of 2 pairs at once
    assert [human_seconds(s) for s in (45, 725, 12000, 3 * 86400 + 7200, 4e9)] == ["45s", "12m05s", "3h20m", "3d02h", "126.8 years"]


# --- nettune import --------------------------------------------------------------------

FIXTURES = sorted(p for p in FIX.glob("iperf*/*/*.stdout") if p.stat().st_size)


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
        with sqlite3.connect(place.db) as db:
            assert [n for (n,) in db.execute("SELECT name FROM studies ORDER BY id")] == studies
            assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == len(studies)
    return lines


@FUZZ
@given(st.binary(max_size=2000))
@example(b"\xff\xfe\x00")
@example(b"{" * 100000)
@example(b"[" * 100000)
@example(b'{"start": ' + b"9" * 5000 + b"}")
def test_random_bytes_are_not_imported(data):
    place = Place()
    try:
        check_rejected_import([place.file(data, "random.json")], place)
    finally:
        place.close()


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(FIXTURES), st.data())
def test_cut_real_outputs_are_not_imported(fixture, data):
    text = fixture.read_bytes()
    # cut before the end of the report (only the final newline gone leaves iperf3's JSON whole)
    cut = text[: data.draw(st.integers(1, len(text.rstrip(b"\n")) - 1))]
    at_line_end = cut.endswith(b"\n")
    duration = json.loads((fixture.parent / "meta.json").read_text())["workload"]["duration"]
    # The rows of a 1 s iperf2 test before its final rows are the same 0-1 s rows again: a
    # cut between them leaves a whole-looking report that no check can tell from a real one.
    assume(not (at_line_end and duration < 2))
    place = Place()
    try:
        # what a user who knows the test gives; without it a cut after whole rows can look
        # like a shorter test (docs/results.md)
        check_rejected_import([place.file(cut, fixture.parent.name + ".out")], place, hints(fixture))
    finally:
        place.close()


def test_import_rules_for_several_files():
    good = FIX / "iperf3" / "tcp_p4" / "client.stdout"
    place = Place()
    try:
        cut = place.file(good.read_bytes()[:700], "cut.json")
        empty = place.file(b"", "empty.json")
        binary = place.file(b"\x89PNG\r\n\x1a\n\x00\x00", "chart.png")
        escape = place.file(good.read_text().replace("\n", "\n\x1b[31m", 1), "escape.json")  # a terminal escape in the JSON
        lines = check_rejected_import([cut, empty, binary, place.dir], place)
        assert "not valid JSON" in lines[0] and "empty file" in lines[1] and "binary data" in lines[2] and "is a directory" in lines[3]
        # some usable: imported, one error line per other file, exit 1
        r = place.invoke("import", str(cut), str(good), str(empty), "--study", "h1-imp", "--db", str(place.db))
        assert r.exit_code == 1 and "imported 1 of 3 files" in r.stdout
        assert [ln.split(": ")[1] for ln in r.stderr.splitlines()] == [str(cut), str(empty)]
        # an existing database: a bad file adds no study and no row
        lines = check_rejected_import([escape, binary], place, studies=["h1-imp"])
        assert "\x1b" not in lines[0]  # quoted as text, never sent to the terminal
    finally:
        place.close()


def test_bad_set_values_are_one_error_before_any_file_is_read():
    place = Place()
    try:
        good = FIX / "iperf3" / "tcp_p4" / "client.stdout"
        r = place.invoke("import", str(good), "--study", "h1-imp", "--set", "parallel=0", "--db", str(place.db))
        assert_one_line_error(r, "--set parallel")
        r = place.invoke("import", str(good), "--study", "bad name", "--db", str(place.db))
        assert_one_line_error(r, "--study 'bad name'")
        place.nothing_created()
    finally:
        place.close()


# --- the real entry point ----------------------------------------------------------------

def test_real_entry_point(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    db = tmp_path / "r.db"
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe\x00")
    huge = tmp_path / "huge.toml"
    doc = base_study()
    doc["sweep"] = {"a": list(range(5000)), "b": list(range(5000))}
    huge.write_text(to_toml(doc))
    cut = tmp_path / "cut.csv"
    cut.write_bytes((FIX / "iperf2" / "tcp_p4" / "client.stdout").read_bytes()[:500])
    runs = [
        (["run", str(bad), "--db", str(db)], "not UTF-8 text"),
        (["run", str(huge), "--db", str(db)], "25,000,000 points"),
        (["run", str(huge), "--dry-run", "--db", str(db)], "--max-points 25000000"),
        (["import", str(cut), "--study", "h1-imp", "--db", str(db)], "cut off"),
    ]
    for args, want in runs:
        p = nettune(*args, timeout=60)  # a hang would be a failure, not a slow pass
        assert p.returncode == 2 and "Traceback" not in p.stdout + p.stderr, p.stderr
        assert len(p.stderr.splitlines()) == 1 and p.stderr.startswith("error: ") and want in p.stderr, p.stderr
    assert not db.exists() and not (tmp_path / "state").exists()
