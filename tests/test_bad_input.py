"""Bad input (issue 8, item 2): a study file or an imported file that is wrong in any way
gives exit status 2, exactly one line on stderr starting with `error:` that names the
file, no traceback, and nothing created: no network namespace, no knob journal, no
database (or no new study and no new rows in an existing one).

Study files are generated from the real schema (`nettune schema`): a valid study of
quick.toml's shape with one field given a value outside its range, a value of a type the
field does not take, an unknown key, an empty list or a missing required field; plus
random bytes and the real examples cut or with a byte changed. `nettune import` is in
test_bad_import.py, the point-count guard and the expected time in test_plan_limits.py.

Most cases run in-process (typer's CliRunner on nettune.cli.main.app, stderr kept apart)
for speed; test_bad_import.py sends a few through `python -m nettune.cli` so the real
entry point is covered. `nettune run` without --dry-run only ever gets files load_study
rejects, so no case can start a study. Helpers: bad_input_util.py.
"""
from __future__ import annotations

import math
import os
import re
from typing import Any

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from nettune import parse_study
from nettune.studyfile.models import json_schema

from bad_input_util import FUZZ, Place, assert_one_line_error, base_study, check_any_study, check_rejected_import, check_rejected_study, to_toml
from conftest import EXAMPLES

SCHEMA = json_schema()
DEFS = SCHEMA["$defs"]
SECTIONS = {"workload": DEFS["Workload"], "repeat": DEFS["Repeat"], "target": DEFS["LabTargetSpec"]}


def test_the_generator_writes_the_valid_base_study():
    study = parse_study(to_toml(base_study()), "base.toml")
    assert study.name == "h1-fuzz" and len(study.sweep["queues"]) == 2
    assert parse_study(to_toml(base_study() | {"description": 'a "quoted"\tline\x7f'}), "b.toml").description.endswith("\x7f")


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
