"""`nettune export` (csv, json, parquet: one row per run) and `nettune import` of real
iperf3 -J and iperf2 -y C outputs captured in tests/fixtures, round trip included."""
import json
from pathlib import Path

import pandas as pd
import pytest

from nettune.analysis.analyze import analyze
from nettune.analysis.data import load
from nettune.engines import get_engine
from nettune.engines.result import SideOutput
from nettune.errors import NettuneError
from nettune.studyfile.models import Workload
from nettune.store.writer import StoreWriter
from nettune.exporters.runs import export, frame
from nettune.importers import import_files, parse_sets

from conftest import ROOT, nettune
from study_builders import build

FIX = ROOT / "tests" / "fixtures"


def fixture(tool: str, mode: str, side: str = "client") -> Path:
    p = FIX / tool / mode / f"{side}.stdout"
    if not p.exists():
        pytest.skip(f"fixture {p} not captured")
    return p


def parsed_with_both_sides(tool: str, mode: str):
    """What a live run of this fixture stored: both sides, the real argv."""
    d = FIX / tool / mode
    meta = json.loads((d / "meta.json").read_text())
    side = lambda role: SideOutput(role=role, host="h", argv=meta[f"{role}_argv"] or [],  # noqa: E731
                                   stdout=(d / f"{role}.stdout").read_text() if (d / f"{role}.stdout").exists() else "")
    return get_engine(tool).parse(Workload.model_validate(meta["workload"]), side("client"), side("server"))


@pytest.fixture
def store(tmp_path):
    s = StoreWriter(tmp_path / "r.db")
    yield s
    s.close()


def test_export_one_row_per_run_with_parameters_as_columns(store, tmp_path):
    build(store, "A", [({"queues": q, "duration": 5}, 10.0 * q) for q in (1, 2)], runs=2, warmup=1, failed=1)
    runs = store.runs(store.find_study("A")["id"])
    df = frame(runs)
    assert len(df) == 8  # 2 points x (1 warm-up + 2 counted + 1 failed): nothing hidden
    assert list(df.columns[:5]) == ["study", "study_id", "point_idx", "queues", "param_duration"]  # no clash with the run's duration
    assert df["warmup"].sum() == 2 and (~df["ok"]).sum() == 2
    assert sorted(df["queues"].unique()) == [1, 2]
    counted = df[df["ok"] & ~df["warmup"]]
    assert (counted["total_bps"] == counted["receiver_bps"]).all()

    export(runs, "csv", tmp_path / "a.csv")
    export(runs, "parquet", tmp_path / "a.parquet")
    export(runs, "json", tmp_path / "a.json")
    csv = pd.read_csv(tmp_path / "a.csv")
    pq = pd.read_parquet(tmp_path / "a.parquet")
    js = json.loads((tmp_path / "a.json").read_text())
    assert len(csv) == len(pq) == len(js) == 8
    assert list(csv.columns) == list(pq.columns) == list(js[0])
    assert pq["receiver_bps"].tolist() == pytest.approx(df["receiver_bps"].tolist(), nan_ok=True)
    assert csv["receiver_bps"].tolist() == pytest.approx(df["receiver_bps"].tolist(), nan_ok=True)
    assert js[0]["queues"] == 1 and isinstance(js[0]["run"], int)


def test_export_errors(store):
    build(store, "A", [({"q": 1}, 1.0)])
    runs = store.runs(store.find_study("A")["id"])
    with pytest.raises(NettuneError, match="--out"):
        export(runs, "parquet", None)
    with pytest.raises(NettuneError, match="csv, json or parquet"):
        export(runs, "xlsx", None)


def test_mixed_type_parameter_still_exports_to_parquet(store, tmp_path):
    build(store, "mix", [({"window": 4}, 1.0), ({"window": "auto"}, 2.0)])
    export(store.runs(store.find_study("mix")["id"]), "parquet", tmp_path / "m.parquet")
    assert sorted(pd.read_parquet(tmp_path / "m.parquet")["window"].unique()) == ["4", "auto"]


@pytest.mark.parametrize("tool, mode, side", [
    ("iperf3", "tcp_p4", "client"), ("iperf3", "udp", "client"), ("iperf3", "bidir", "client"), ("iperf3", "reverse", "client"),
    ("iperf2", "tcp_p4", "server"), ("iperf2", "udp", "server"),
])
def test_import_then_export_round_trip(store, tmp_path, tool, mode, side):
    path = fixture(tool, mode, side)
    out = import_files(store, [path], "old", {"mode": mode})
    assert out.imported == 1 and not out.rejected
    study = store.find_study("old")
    assert (study["status"], study["target_kind"]) == ("imported", "import")
    [run] = store.runs(study["id"])
    live = parsed_with_both_sides(tool, mode)
    assert run["receiver_bps"] == pytest.approx(live.receiver_bps, rel=1e-9)
    assert run["engine"] == tool and run["point"] == {"mode": mode}
    assert store.raw_outputs(run["id"])[0]["stdout"] == path.read_text()  # the file, verbatim
    if live.reverse_receiver_bps:
        assert run["reverse_receiver_bps"] == pytest.approx(live.reverse_receiver_bps, rel=1e-9)
    if live.lost_percent is not None:
        assert run["lost_percent"] == pytest.approx(live.lost_percent)
    # export it again: the numbers survive the round trip
    export(store.runs(study["id"]), "parquet", tmp_path / "x.parquet")
    row = pd.read_parquet(tmp_path / "x.parquet").iloc[0]
    assert row["mode"] == mode and row["receiver_bps"] == pytest.approx(live.receiver_bps, rel=1e-9)
    assert row["total_bps"] == pytest.approx(live.total_bps, rel=1e-9)


def test_iperf2_client_side_report_is_imported_with_a_warning(store):
    out = import_files(store, [fixture("iperf2", "tcp_p4", "client")], "old", {})
    [run] = store.runs(out.study_id)
    assert run["receiver_bps"] == pytest.approx(parsed_with_both_sides("iperf2", "tcp_p4").sender_bps, rel=1e-9)
    assert any("one side's iperf2 report" in w for w in run["warnings"])


def test_broken_files_are_rejected_and_the_rest_imported(store, tmp_path):
    good = fixture("iperf3", "tcp_p4")
    truncated = tmp_path / "truncated.json"
    truncated.write_text(good.read_text()[:700])
    garbage = tmp_path / "notes.txt"
    garbage.write_text("[ ID] Interval  Transfer  Bitrate\n[  5] 0.00-10.00 sec  11 GBytes  9.4 Gbits/sec\n")
    empty = tmp_path / "empty.json"
    empty.write_text("")
    files = [truncated, good, garbage, fixture("iperf3", "refused"), empty, tmp_path / "missing.json", fixture("iperf2", "tcp_p4", "server")]
    out = import_files(store, files, "old", {"queues": 8})
    assert out.imported == 2
    why = {Path(f.path).name if Path(f.path).parent == tmp_path else f.path: f.message for f in out.rejected}
    assert "not valid JSON" in why["truncated.json"] or "not a readable iperf3" in why["truncated.json"]
    assert "neither iperf3 JSON" in why["notes.txt"]
    assert "empty file" in why["empty.json"]
    assert "no such file" in why["missing.json"]
    assert any("unable to connect" in m for m in why.values())  # iperf3's own error, passed on
    assert all("\n" not in m for m in why.values())
    assert len(store.runs(out.study_id)) == 2


def test_imports_build_a_sweep_that_analyzes(store):
    for q in (1, 2, 4):
        files = [fixture("iperf3", "tcp_p4"), fixture("iperf3", "reverse")]
        import_files(store, files, "legacy", {"queues": q})
    data = load(store, "legacy")
    assert [p.params for p in data.points] == [{"queues": 1}, {"queues": 2}, {"queues": 4}]
    assert data.axes == ["queues"] and all(len(p.counted) == 2 for p in data.points)
    res = analyze(data)
    assert res["parameters"][0]["curves"][0]["shape"] == "flat"  # the same logs at every point
    assert len(store.studies()) == 1  # one imported study, added to


def test_import_refuses_a_study_run_by_nettune(store):
    build(store, "A", [({"q": 1}, 1.0)])
    with pytest.raises(NettuneError, match="run by nettune"):
        import_files(store, [fixture("iperf3", "tcp_p4")], "A", {})
    with pytest.raises(NettuneError, match="--study"):
        import_files(store, [fixture("iperf3", "tcp_p4")], "bad name!", {})


def test_parse_sets():
    assert parse_sets(["queues=8,mtu=9000", "tuned=throughput-performance", "pin=true", "x=1.5"]) == {
        "queues": 8, "mtu": 9000, "tuned": "throughput-performance", "pin": True, "x": 1.5}
    with pytest.raises(NettuneError, match="KEY=VAL"):
        parse_sets(["queues"])


def test_import_and_export_cli(tmp_path):
    db = tmp_path / "r.db"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    p = nettune("import", str(fixture("iperf3", "tcp_p4")), str(bad), "--study", "old", "--set", "queues=8", "--db", str(db))
    assert p.returncode == 1  # some files rejected: one `error: FILE: reason` line each
    assert "imported 1 of 2 files" in p.stdout
    assert p.stderr.splitlines() == [f"error: {bad}: looks like JSON but is not a readable iperf3 -J log: "
                                     "output is not valid JSON (Expecting property name enclosed in double quotes at line 1, truncated?)"]
    p = nettune("import", str(bad), "--study", "new", "--db", str(db))
    assert p.returncode == 2 and p.stderr.startswith(f"error: {bad}: ") and p.stderr.count("\n") == 1
    with StoreWriter(db) as s:
        assert [r["name"] for r in s.studies()] == ["old"]  # nothing added
    p = nettune("export", "old", "--format", "json", "--db", str(db), check=True)
    [row] = json.loads(p.stdout)
    assert row["queues"] == 8 and row["engine"] == "iperf3" and row["ok"] is True
    p = nettune("export", "old", "--db", str(db), check=True)
    assert p.stdout.splitlines()[0].startswith("study,study_id,point_idx,queues,run")
    out = tmp_path / "o.parquet"
    nettune("export", "old", "-f", "parquet", "-o", str(out), "--db", str(db), check=True)
    assert len(pd.read_parquet(out)) == 1


def test_iperf3_server_side_logs(store):
    out = import_files(store, [fixture("iperf3", "tcp_p4", "server"), fixture("iperf3", "reverse", "server")], "srv", {})
    assert out.imported == 1
    assert "server-side log of a reverse/bidir test" in out.rejected[0].message
    [run] = store.runs(out.study_id)
    assert run["receiver_bps"] == pytest.approx(parsed_with_both_sides("iperf3", "tcp_p4").receiver_bps, rel=1e-6)
    assert run["sender_bps"] is None and any("server's log" in w for w in run["warnings"])


def test_a_failed_import_of_an_export_leaves_no_new_database(store, tmp_path):
    """An export whose study cannot be stored (a bad --study name) is refused after the
    database was opened: a database the import created goes again, an existing one stays."""
    build(store, "A", [({"queues": q, "duration": 5}, 10.0 * q) for q in (1, 2)], runs=2)
    export(store.runs(store.find_study("A")["id"]), "csv", tmp_path / "a.csv")
    new = tmp_path / "new.db"
    p = nettune("import", str(tmp_path / "a.csv"), "--study", "bad name!", "--db", str(new))
    assert p.returncode != 0 and "--study" in p.stderr and p.stderr.count("\n") == 1
    assert not list(tmp_path.glob("new.db*"))
    p = nettune("import", str(tmp_path / "a.csv"), "--study", "bad name!", "--db", str(store.path))
    assert p.returncode != 0 and store.path.exists() and store.find_study("A") is not None
