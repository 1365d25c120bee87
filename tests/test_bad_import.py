"""`nettune import` of bad files (issue 8, item 2): random bytes and the real iperf3/iperf2
outputs of tests/fixtures cut at any byte are refused, one `error: FILE: reason` line
each, exit 2 and nothing written; with some usable files, exit 1 and those imported
(docs/results.md). Also the issue's cases through the real entry point.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from nettune.engines.iperf2_enhanced import REPORT
from nettune.importers.intake import read_files
from nettune.importers.params import parse_value

from bad_input_util import FUZZ, Place, assert_one_line_error, base_study, check_rejected_import, hints, to_toml
from conftest import ROOT, nettune

FIX = ROOT / "tests" / "fixtures"


FIXTURES = sorted(p for p in FIX.glob("iperf*/*/*.stdout") if p.stat().st_size)


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
    """Cut inside a line (every line end: the test below, deterministic)."""
    text = fixture.read_bytes()
    # cut before the end of the report (only the final newline gone leaves iperf3's JSON whole)
    cut = text[: data.draw(st.integers(1, len(text.rstrip(b"\n")) - 1))]
    assume(not cut.endswith(b"\n"))
    place = Place()
    try:
        # what a user who knows the test gives; without it a cut after whole rows can look
        # like a shorter test (docs/results.md)
        check_rejected_import([place.file(cut, fixture.parent.name + ".out")], place, hints(fixture))
    finally:
        place.close()


# What a whole iperf2 report may end without, so a cut that drops only these leaves one no
# check can tell from a whole one (docs/importing.md): "[ CT] final connect times"; in a
# server's log also its [SUM] lines (a server stopped after its streams' final lines, as
# nettune stops its own, has none) and, as the sender of -d's connection back, "Sent N
# datagrams" and the "Server Report:" block (lost with the last datagram's ack).
MAYBE_NOT_PRINTED = re.compile(r"^\[\s*\d+\] Sent \d+ datagrams")
SERVER_REPORT_BLOCK = re.compile(r"^\[\s*\d+\] Server Report:\n\[ ID\].*\n\[ *\*?\d+\] .*\n?", re.M)


def _cannot_tell(fixture: Path, kept: str, dropped: str) -> str | None:
    """Why a cut of a whole iperf2 report (of 2 s or more) after `kept` cannot be told
    from a whole one."""
    if fixture.parent.parent.name != "iperf2":
        return None
    if dropped.startswith("-" * 20) and fixture.name.startswith("server") and REPORT.match(kept.splitlines()[-1]):
        return "a server's log is its tests one after the other: cut between them, fewer tests"
    server = fixture.name.startswith("server")
    # a client's report is held to more: its [SUM] and the server reports it relays (the
    # importer asks for them; a server's log of -d relays the client's, maybe never sent)
    rest = (SERVER_REPORT_BLOCK.sub("", dropped) if server else dropped).splitlines()
    if all(ln.startswith("[ CT] ") or server and (MAYBE_NOT_PRINTED.match(ln) or ln.startswith("[SUM] ")) for ln in rest):
        return "only lines iperf2 prints only sometimes"
    return None


def test_real_outputs_cut_at_every_line_end_are_not_imported():
    """Every line end of every saved report before its last line: refused, except where what
    is gone is what a whole report may lack (_cannot_tell); at least one refusal in each."""
    skipped = []
    for fixture in FIXTURES:
        text = fixture.read_text()
        lines = text.splitlines(keepends=True)
        whole = len(text.rstrip("\n"))
        params = {k: parse_value(v) for k, v in (h.removeprefix("--set=").split("=", 1) for h in hints(fixture))}
        if fixture.parent.parent.name == "iperf2" and params["duration"] < 2:
            continue  # the rows of a 1 s test before its final rows are the same 0-1 s rows again
        refused = 0
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / (fixture.parent.name + ".out")
            for n in range(1, len(lines)):
                kept = "".join(lines[:n])
                if len(kept) >= whole:
                    break
                why = _cannot_tell(fixture, kept, text[len(kept):])
                if why:
                    skipped.append((fixture, n, why))
                    continue
                path.write_text(kept)
                got = read_files([path], params)
                assert all(r[1] is None for r in got), f"{fixture} cut after line {n} ({lines[n - 1].strip()!r}) was imported"
                refused += 1
        assert refused or len(lines) < 3, fixture
    # what the fixtures hold today: a change that grows this list should say why
    assert len(skipped) < 0.1 * sum(len(f.read_text().splitlines()) for f in FIXTURES), skipped


def test_import_rules_for_several_files():
    good = FIX / "iperf3" / "tcp_p4" / "client.stdout"
    place = Place()
    try:
        cut = place.file(good.read_bytes()[:700], "cut.json")
        empty = place.file(b"", "empty.json")
        binary = place.file(b"\x89PNG\r\n\x1a\n\x00\x00", "chart.png")
        escape = place.file(good.read_text().replace("\n", "\n\x1b[31m", 1), "escape.json")  # a terminal escape in the JSON
        lines = check_rejected_import([cut, empty, binary, place.dir], place)
        # a PNG is named (issue 37: UTF-16, gzip and other packings are told apart from binary data)
        assert "not valid JSON" in lines[0] and "empty file" in lines[1] and "a PNG image" in lines[2] and "is a directory" in lines[3]
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
