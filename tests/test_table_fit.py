"""Tables for people at any terminal width: a value is never broken, headers fold at spaces
only, columns that do not fit are hidden and named, and --format outputs are never cut."""
import re
from pathlib import Path

import pytest
from rich.console import Console

from nettune.report.fit import fit_table
from nettune.report.table import columns, rich_table
from nettune.store.writer import StoreWriter

from conftest import ROOT, nettune
from study_builders import build


def render(table, width: int) -> str:
    con = Console(width=width, record=True, color_system=None)
    con.print(table, crop=False)
    return con.export_text()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    # examples/knobs.toml's shape: a socket-buffer value of 7 digits swept with the MTU
    path = tmp_path / "r.db"
    with StoreWriter(path) as s:
        build(s, "buffers", [({"rmem": r, "mtu": m}, 9.0 + m / 9000) for r in (212992, 6291456) for m in (1500, 9000)], runs=2)
    return path


def _cells(runs: list) -> set[str]:
    _, rows = columns(runs)
    return {c for row in rows for c in row if c}


@pytest.mark.parametrize("width", [60, 80, 100, 200])
def test_no_value_is_ever_broken(db, width):
    with StoreWriter(db) as s:
        runs = s.runs(s.find_study("buffers")["id"])
    fitted = rich_table("buffers", runs, width)
    text = render(fitted.table, width)
    assert max(len(line) for line in text.splitlines()) <= width
    head, rows = columns(runs)
    shown = [h for h in head if h not in fitted.hidden]
    for row in rows:
        cells = [c for h, c in zip(head, row) if h in shown and h != "status"]
        # every cell of the row is whole, in order, on one line of the rendered table
        pattern = r"[\s│]+".join(re.escape(c) for c in cells if c)
        assert re.search(pattern, text), f"row {cells} broken at width {width}:\n{text}"
    assert "6291456" in text and "62914\n" not in text


def test_headers_fold_at_spaces_only_and_hidden_columns_are_named(db):
    with StoreWriter(db) as s:
        runs = s.runs(s.find_study("buffers")["id"])
    head, _ = columns(runs)
    wide = rich_table("buffers", runs, 250)
    assert wide.hidden == [] and wide.note(250) is None
    narrow = rich_table("buffers", runs, 60)
    assert narrow.hidden and set(narrow.hidden) <= set(head)
    assert "softirq (% of all cores)" in narrow.hidden  # the least important column goes first (its unit in its name: issue 12)
    text = render(narrow.table, 60)
    words = {w for h in head if h not in narrow.hidden for w in h.split()}
    for token in re.findall(r"\S+", text.split("\n", 3)[-1]):
        if token.isalpha() and token not in words and token != "ok":
            pytest.fail(f"header word split: {token!r}\n{text}")
    assert "hidden to fit 60 columns: " + ", ".join(narrow.hidden) in narrow.note(60)


def test_fit_table_keeps_every_column_when_only_the_box_is_too_wide():
    head = ["queues", "client CPU%", "status"]
    rows = [["1", "89", "ok"], ["32", "100", "ok; server busy, retried (attempt 2)"]]
    boxed = render(fit_table(head, rows, 80, prose=["status"]).table, 80)
    assert "│" in boxed and "client CPU%" in boxed  # room for everything: headers whole
    tight = fit_table(head, rows, 30, drop_order=["client CPU%"], prose=["status"])
    assert tight.hidden == []  # unboxed and headers folded: still fits
    text = render(tight.table, 30)
    assert "│" not in text and "client" in text and "CPU%" in text
    assert "retried" in text  # prose wraps at words


def test_cli_tables_at_80_columns_and_formats_never_cut(db):
    r = nettune("results", "buffers", "--db", str(db), env={"COLUMNS": "80"})
    assert r.returncode == 0, r.stderr
    assert all(len(line) <= 80 for line in r.stdout.splitlines())
    assert "6291456" in r.stdout
    r = nettune("results", "buffers", "--db", str(db), env={"COLUMNS": "60"})
    assert "6291456" in r.stdout and "hidden to fit 60 columns" in r.stdout
    for fmt in ("markdown", "csv", "json"):
        out = nettune("results", "buffers", "--db", str(db), "--format", fmt, env={"COLUMNS": "40"}).stdout
        assert "softirq" in out or "cpu_host_softirq" in out  # every column, whatever the width
        assert out.count("6291456") == 4
    a = nettune("analyze", "buffers", "--db", str(db), env={"COLUMNS": "80"})
    assert a.returncode == 0, a.stderr
    assert all(len(line) <= 80 for line in a.stdout.splitlines())
    assert "6291456" in a.stdout


def test_too_narrow_for_any_table_stacks_rows_as_blocks():
    head = ["knob", "value", "[x]"]
    rows = [["sysctl:net.core.netdev_max_backlog", "/sys/class/net/eth0/queues/tx-0/xps_cpus", "[bold]a[/]"]]
    fitted = fit_table(head, rows, 40)
    text = render(fitted.table, 40)
    assert "sysctl:net.core.netdev_max_backlog" in text  # the heading line
    assert "/sys/class/net/eth0/queues/tx-0/xps_cpus" in text.replace("\n    ", " ")  # never split
    assert "[x]: [bold]a[/]" in text  # cells and headers are plain text, not markup


def test_dry_run_at_80_columns_breaks_commands_only_between_arguments(tmp_path):
    r = nettune("run", str(ROOT / "examples" / "mesh.toml"), "--dry-run", "--db", str(tmp_path / "r.db"), env={"COLUMNS": "80"})
    assert r.returncode == 0, r.stderr
    assert "1 points x 1 runs x 6 host pairs (6 tests per point and run) = 6 tests" in " ".join(r.stdout.split())
    assert all(len(line) <= 80 for line in r.stdout.splitlines())
    wide = nettune("run", str(ROOT / "examples" / "mesh.toml"), "--dry-run", "--db", str(tmp_path / "r.db"), env={"COLUMNS": "2000"}).stdout
    client = next(line for line in wide.splitlines() if line.strip().startswith("client"))
    # the same arguments, in the same order, whatever the width: only the line breaks differ
    narrow = r.stdout.split("   client", 1)[1].split("\n   note", 1)[0]  # the plan's row (an engine note may say "client" first)
    assert narrow.split() == client.split()[1:]
    assert not (tmp_path / "r.db").exists()
