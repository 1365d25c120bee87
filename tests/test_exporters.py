"""The exporter family: one writer per format, the same column rule in `results` and
`export` (a sweep parameter named like a run column is `param_<name>`), and the CSV
columns docs/results.md lists are the ones the CSV has."""
import csv
import io
import json
import re
from pathlib import Path

import pytest

from nettune.errors import NettuneError
from nettune.exporters.base import MEMBERS, Table, export_table, get_exporter
from nettune.store.writer import StoreWriter

from conftest import ROOT, nettune
from study_builders import build


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "r.db"
    with StoreWriter(path) as s:
        # `protocol` and `duration` are both sweep parameters and run columns
        build(s, "proto", [({"protocol": p, "duration": 5, "queues": q}, 1.0 * q) for p in ("tcp", "udp") for q in (1, 2)], runs=2)
    return path


def _header(text: str) -> list[str]:
    return next(csv.reader(io.StringIO(text)))


def test_a_parameter_named_protocol_is_one_column_in_every_format(db):
    header = _header(nettune("results", "proto", "--db", str(db), "--format", "csv", check=True).stdout)
    assert len(header) == len(set(header)), header
    assert header[:3] == ["param_protocol", "param_duration", "queues"]
    assert "protocol" in header and "duration" in header

    rows = list(csv.DictReader(io.StringIO(nettune("results", "proto", "--db", str(db), "--format", "csv", check=True).stdout)))
    assert {r["param_protocol"] for r in rows} == {"tcp", "udp"} and {r["protocol"] for r in rows} == {"tcp"}

    recs = json.loads(nettune("results", "proto", "--db", str(db), "--format", "json", check=True).stdout)
    assert {r["point"]["protocol"] for r in recs} == {"tcp", "udp"}  # nested: keeps its name

    md = nettune("results", "proto", "--db", str(db), "--format", "markdown", check=True).stdout
    cells = [c.strip() for c in md.splitlines()[0].strip("|").split("|")]
    assert len(cells) == len(set(cells)) and "protocol" in cells

    for fmt in ("csv", "json"):
        out = nettune("export", "proto", "--db", str(db), "--format", fmt, check=True).stdout
        cols = _header(out) if fmt == "csv" else list(json.loads(out)[0])
        assert len(cols) == len(set(cols)) and "param_protocol" in cols and "protocol" in cols


def _documented(begin: str, end: str) -> list[str]:
    text = (ROOT / "docs" / "results.md").read_text()
    block = text[text.index(begin) + len(begin): text.index(end)]
    return re.findall(r"`([a-z_]+)`", block)


def test_the_documented_csv_columns_are_the_csv_header(db):
    header = _header(nettune("results", "proto", "--db", str(db), "--format", "csv", check=True).stdout)
    assert header[3:] == _documented("<!-- csv-columns -->", "<!-- /csv-columns -->")


def test_the_documented_json_fields_are_the_json_keys(db):
    recs = json.loads(nettune("results", "proto", "--db", str(db), "--format", "json", check=True).stdout)
    text = (ROOT / "docs" / "results.md").read_text()
    block = text[text.index("| field | meaning |"): text.index("The CSV format is flat")]
    first_cells = [ln.split("|")[1] for ln in block.splitlines() if ln.startswith("| `")]
    assert [f for cell in first_cells for f in re.findall(r"`([a-z_]+)`", cell)] == list(recs[0])


def test_the_documented_export_columns_are_the_export_header(db, tmp_path):
    """`nettune export` writes the columns docs/results.md lists, in every format."""
    want = ["study", "study_id", "point_idx", "param_protocol", "param_duration", "queues"]
    want += _documented("<!-- export-columns -->", "<!-- /export-columns -->")
    assert _header(nettune("export", "proto", "--db", str(db), "--format", "csv", check=True).stdout) == want
    assert list(json.loads(nettune("export", "proto", "--db", str(db), "--format", "json", check=True).stdout)[0]) == want
    import pandas as pd

    nettune("export", "proto", "--db", str(db), "--format", "parquet", "--out", str(tmp_path / "e.parquet"), check=True)
    assert list(pd.read_parquet(tmp_path / "e.parquet").columns) == want


def test_every_member_is_registered_and_unknown_formats_are_refused(tmp_path):
    table = Table(["a", "b"], [{"a": 1, "b": "x|y"}, {"a": None, "b": ["w1", "w2"]}], left=frozenset({"b"}))
    for name in MEMBERS:
        exporter = get_exporter(name)
        assert exporter.name == name and exporter.suffix.startswith(".")
        out = tmp_path / f"t{exporter.suffix}"
        assert export_table(table, name, out) is None and out.stat().st_size > 0
    assert export_table(table, "csv", None) == "a,b\n1,x|y\n,w1; w2\n"
    assert export_table(table, "markdown", None) == "| a | b |\n|---:|---|\n| 1 | x\\|y |\n|  | ['w1', 'w2'] |\n"
    with pytest.raises(NettuneError, match="binary"):
        export_table(table, "parquet", None)
    with pytest.raises(NettuneError, match="unknown format 'xlsx'"):
        get_exporter("xlsx")
