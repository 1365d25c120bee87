"""Studies over host pairs downstream of the run (issue 17): pair, server, client, round
and the round's aggregate are real columns of the store and of every export; the analysis
treats a pair as a link (N = its repeats), never as a repeat of another pair."""
import csv
import io
import json
import sqlite3
from pathlib import Path

import pytest

from nettune.analysis.analyze import analyze
from nettune.analysis.data import load
from nettune.engines.result import TestResult as Result  # not "Test*": pytest would collect it
from nettune.plan.pairs import mesh_rounds
from nettune.studyfile.models import Study
from nettune.store.writer import StoreWriter
from nettune.store import sqlite as st

from conftest import ROOT, nettune
from study_builders import HOSTS, build_mesh

@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "r.db"
    with StoreWriter(path) as s:
        build_mesh(s)
    return path


def test_pair_and_round_are_columns_of_the_stored_run(db):
    with StoreWriter(db) as s:
        runs = s.runs(s.find_study("mesh")["id"])
        row = s.db.execute("SELECT pair, server, client, round, round_total_bps FROM runs ORDER BY id LIMIT 1").fetchone()
    assert len(runs) == 12 and len({r.pair for r in runs}) == 6
    assert tuple(row) == (runs[0].pair, runs[0].server, runs[0].client, runs[0].round, runs[0].round_total_bps)
    assert runs[0].pair == f"{runs[0].server}->{runs[0].client}"
    assert {r.round for r in runs} == {0, 1, 2}
    by_round = {(r.run, r.round): r.round_total_bps for r in runs}
    for r in runs:
        assert r.round_total_bps == by_round[(r.run, r.round)]
        assert r.round_total_bps == pytest.approx(sum(x.total_bps for x in runs if x.run == r.run and x.round == r.round))


def test_every_export_carries_pair_and_round(db, tmp_path):
    import pandas as pd

    csv_rows = list(csv.DictReader(io.StringIO(nettune("export", "mesh", "--db", str(db), "--format", "csv", check=True).stdout)))
    json_rows = json.loads(nettune("export", "mesh", "--db", str(db), "--format", "json", check=True).stdout)
    nettune("export", "mesh", "--db", str(db), "--format", "parquet", "--out", str(tmp_path / "m.parquet"), check=True)
    pq_rows = pd.read_parquet(tmp_path / "m.parquet").to_dict("records")
    for rows in (csv_rows, json_rows, pq_rows):
        assert len(rows) == 12
        assert sorted({str(r["pair"]) for r in rows}) == sorted({f"{a}->{b}" for rnd in mesh_rounds(HOSTS) for a, b in rnd})
        assert {int(r["round"]) for r in rows} == {0, 1, 2}
        assert all(str(r["pair"]) == f"{r['server']}->{r['client']}" for r in rows)
        assert all(float(r["round_total_bps"]) > float(r["total_bps"]) for r in rows)
    res_csv = list(csv.DictReader(io.StringIO(nettune("results", "mesh", "--db", str(db), "--format", "csv", check=True).stdout)))
    assert {(r["pair"], r["round"]) for r in res_csv} == {(r["pair"], str(r["round"])) for r in json_rows}
    table = nettune("results", "mesh", "--db", str(db), check=True).stdout
    assert "h3->h4" in table and "round" in table


def test_analyze_gives_each_pair_its_repeats_and_names_the_slow_link(db):
    with StoreWriter(db) as s:
        a = analyze(load(s, "mesh"))
    assert a.points[0].n == 2  # repeats, not 6 pairs x 2
    assert a.pairs is not None and len(a.pairs.pairs) == 6
    assert all(p.n == 2 for p in a.pairs.pairs)
    slow = [x for x in a.pairs.spread if x.direction == "below"]
    assert [x.pair for x in slow] == ["h3->h4"]
    assert slow[0].pct == pytest.approx(38, abs=1.5)
    assert any("link h3->h4 is 38% below the others" in f for f in a.findings)
    assert any("link h3->h4 is 38% below" in h for h in a.headline)
    assert len(a.pairs.rounds) == 3 and all(r.n == 2 and r.ci_low is not None for r in a.pairs.rounds)
    js = json.loads(nettune("analyze", "mesh", "--db", str(db), "--format", "json", check=True).stdout)
    assert [p["n"] for p in js["pairs"]["pairs"]] == [2] * 6
    text = nettune("analyze", "mesh", "--db", str(db), check=True).stdout
    assert "h3->h4" in text and "38% below" in text


def test_equal_links_get_no_spread_verdict(tmp_path):
    with StoreWriter(tmp_path / "r.db") as s:
        build_mesh(s, "even", factor=1.0)
        a = analyze(load(s, "even"))
    assert a.pairs is not None and a.pairs.spread == []
    assert any("was shown to differ from the others" in f for f in a.findings)


def test_single_runs_give_no_spread_verdict(tmp_path):
    with StoreWriter(tmp_path / "r.db") as s:
        build_mesh(s, "once", runs=1)
        a = analyze(load(s, "once"))
    assert a.pairs is not None and a.pairs.spread == [] and all(p.n == 1 for p in a.pairs.pairs)
    assert any("one counted run each" in f for f in a.findings)


def test_a_schema_2_database_gets_the_pair_columns_from_extra(tmp_path):
    db = tmp_path / "old.db"
    with StoreWriter(db) as s:
        build_mesh(s, "old")
    # make it a schema-2 database: the runs table as it was, without the pair columns
    con = sqlite3.connect(db)
    for col in ("pair", "server", "client", "round", "round_total_bps"):
        con.execute(f"ALTER TABLE runs DROP COLUMN {col}")
    con.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    con.commit()
    con.close()
    with StoreWriter(db) as s:
        assert s.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(st.SCHEMA_VERSION)
        runs = s.runs(s.find_study("old")["id"])
    assert len({r.pair for r in runs}) == 6 and all(r.pair == r.extra["pair"] and r.round == r.extra["round"] for r in runs)
    assert all(r.round_total_bps == r.extra["round_total_bps"] for r in runs)


def test_a_single_pair_study_has_null_pair_columns(tmp_path):
    from study_builders import build

    with StoreWriter(tmp_path / "r.db") as s:
        build(s, "one", [({"q": 1}, 1.0)], runs=2)
        runs = s.runs(s.find_study("one")["id"])
    assert all(r.pair is None and r.round is None and r.round_total_bps is None for r in runs)


def test_a_mesh_report_draws_the_pair_matrix_and_rounds(db, tmp_path):
    out = tmp_path / "rep"
    nettune("report", "mesh", "--db", str(db), "--out", str(out), check=True)
    md = (out / "report.md").read_text()
    assert "## Pairs" in md and "| h3->h4 | h3 | h4 | 2 |" in md
    assert "Parallel rounds" in md and (out / "charts" / "pairs.png").is_file()
    svg = (out / "charts" / "pairs.svg").read_text()
    assert "pair matrix" in svg
    html = (out / "report.html").read_text()
    assert 'id="pairs"' in html and "h3-&gt;h4" in html
    text = nettune("analyze", "mesh", "--db", str(db), check=True).stdout
    assert "pairs: each link on its own" in text


def test_a_star_report_draws_one_bar_per_spoke(tmp_path):
    with StoreWriter(tmp_path / "r.db") as s:
        study = Study.model_validate({"name": "star", "target": {"kind": "lab", "hosts": HOSTS}, "workload": {"pairs": "star:h1"}})
        sid = s.begin_study(study, 'name = "star"\n', "star.toml")
        pid = s.add_point(sid, 0, {})
        for run in range(2):
            for r, client in enumerate(HOSTS[1:]):
                bps = (5e9 if client == "h4" else 9e9) * (1 + 0.01 * run)
                s.add_run(sid, pid, run, False, Result(engine="iperf3", receiver_bps=bps, sender_bps=bps,
                                                       extra={"pair": f"h1->{client}", "server": "h1", "client": client, "round": r}))
        s.finish_study(sid, "done")
    out = tmp_path / "rep"
    nettune("report", "star", "--db", str(tmp_path / "r.db"), "--out", str(out), check=True)
    assert "one bar per spoke" in (out / "charts" / "pairs.svg").read_text()
    assert "link h1->h4 is 44% below the others" in (out / "report.md").read_text()


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_an_export_imports_back_with_its_points_and_numbers(tmp_path, fmt):
    """Parameters of every kind (bool, float, text, one named like a run column) and the
    run columns come back from each format as they were (no lab: a synthetic study)."""
    from study_builders import build

    db = tmp_path / "r.db"
    pts = [({"rev": r, "rate": 1.5, "cc": cc, "protocol": "udp", "q": q}, 2.0 * q) for r in (True, False) for cc in ("bbr", "cubic") for q in (1, 2)]
    with StoreWriter(db) as s:
        build(s, "kinds", pts, runs=2, warmup=1, failed=1, version="3.10")
        before = s.runs(s.find_study("kinds")["id"])
    out = tmp_path / f"e.{fmt}"
    nettune("export", "kinds", "--db", str(db), "--format", fmt, "--out", str(out), check=True)
    r = nettune("import", str(out), "--study", "back", "--db", str(db), check=True)
    assert f"imported {len(before)} runs" in r.stdout
    with StoreWriter(db) as s:
        after = s.runs(s.find_study("back")["id"])
    assert [a.point for a in after] == [b.point for b in before]
    for a, b in zip(before, after):
        for k in ("run", "warmup", "ok", "error", "engine", "tool_version", "protocol", "started", "duration", "receiver_bps", "sender_bps",
                  "cpu_client", "cpu_server", "cpu_host", "pair", "round"):
            assert a[k] == b[k], (k, a[k], b[k])
        assert "; ".join(a.warnings) == "; ".join(b.warnings)
    assert after[0].tool_version == "3.10"
    again = nettune("import", str(out), "--study", "back", "--db", str(db))
    assert again.returncode == 2 and "already" in again.stderr


def test_a_broken_export_is_one_error_line_and_nothing_is_written(db, tmp_path):
    out = tmp_path / "e.json"
    nettune("export", "mesh", "--db", str(db), "--format", "json", "--out", str(out), check=True)
    cut = tmp_path / "cut.json"
    cut.write_text(out.read_text()[:1500])
    csv_out = tmp_path / "e.csv"
    nettune("export", "mesh", "--db", str(db), "--format", "csv", "--out", str(csv_out), check=True)
    lines = csv_out.read_text().splitlines()
    short = tmp_path / "short.csv"
    short.write_text(",".join(lines[0].split(",")[:20]) + "\n")  # the header of another table
    new_db = tmp_path / "new.db"
    for bad, why in ((cut, "not valid JSON"), (short, "not a `nettune export` file")):
        r = nettune("import", str(bad), "--study", "x", "--db", str(new_db))
        assert r.returncode == 2 and r.stderr.startswith("error:") and why in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and not new_db.exists()
    mixed = nettune("import", str(out), str(ROOT / "tests" / "fixtures" / "iperf3" / "udp" / "client.stdout"), "--study", "x", "--db", str(new_db))
    assert mixed.returncode == 2 and "on their own" in mixed.stderr and not new_db.exists()
