"""`nettune import` of bad files (issue 8, item 2): random bytes and the real iperf3/iperf2
outputs of tests/fixtures cut at any byte are refused, one `error: FILE: reason` line
each, exit 2 and nothing written; with some usable files, exit 1 and those imported
(docs/results.md). Also the issue's cases through the real entry point.
"""
from __future__ import annotations

import json

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

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
