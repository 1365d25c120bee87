"""`nettune check` without the lab: the verdict per point and per pair, the tolerance, the
exit status (0 pass, 1 regression, 2 error), the JSON it writes, and a baseline that is
an export or a study imported from iperf logs."""
import json
import sqlite3
from pathlib import Path

import pytest

from nettune.analysis.data import load
from nettune.analysis.regression import check, parse_tolerance
from nettune.errors import NettuneError
from nettune.store.writer import StoreWriter

from conftest import ROOT, nettune
from study_builders import build, build_mesh


def _dbs(tmp_path: Path, before: list[float], after: list[float], runs: int = 3, noise: float = 0.01) -> tuple[Path, Path]:
    a, b = tmp_path / "before.db", tmp_path / "after.db"
    with StoreWriter(a) as s:
        build(s, "s", [({"q": i}, g) for i, g in enumerate(before)], runs=runs, noise=noise, seed=1)
    with StoreWriter(b) as s:
        build(s, "s", [({"q": i}, g) for i, g in enumerate(after)], runs=runs, noise=noise, seed=2)
    return a, b


def test_verdicts_per_point(tmp_path):
    a, b = _dbs(tmp_path, [10, 10, 10, 10], [7, 13, 10.2, 10.0])
    with StoreWriter(a) as sa, StoreWriter(b) as sb:
        res = check(load(sa, "s"), load(sb, "s"), tolerance_pct=5)
    verdicts = [p.verdict for p in res.points]
    assert verdicts[0] == "regressed" and verdicts[1] == "improved"
    # 3 runs at 1% noise, 4 points: a simultaneous interval about +-5% wide; never a regression
    assert verdicts[2] in ("within-tolerance", "not-worse", "inconclusive") and verdicts[3] in ("within-tolerance", "not-worse", "inconclusive")
    assert [r["label"] for r in res.regressed] == ["q=0"] and [r["label"] for r in res.improved] == ["q=1"] and res.exit_code == 1
    assert res.regressed[0]["point"] == {"q": 0}  # labels in structured fields
    assert res.points[0].change_pct == pytest.approx(-30, abs=2) and res.points[0].p_value < 0.05
    assert res.tested == 4 and res.points[0].p_value == pytest.approx(min(1, 4 * res.points[0].p_raw))  # adjusted over the 4 points
    assert res.points[0].ci_high_pct < -5  # the whole simultaneous interval lies beyond the tolerance
    with StoreWriter(a) as sa, StoreWriter(b) as sb:
        loose = check(load(sa, "s"), load(sb, "s"), tolerance_pct=50)
    assert loose.regressed == [] and loose.exit_code == 0 and loose.points[0].verdict == "within-tolerance"


def test_lower_is_better_metric_regresses_upwards(tmp_path):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with StoreWriter(a) as s:
        build(s, "s", [({"q": 1}, 1.0)], runs=3, cpu=lambda p, g: (50.0, 60.0, 20.0))
    with StoreWriter(b) as s:
        build(s, "s", [({"q": 1}, 1.0)], runs=3, cpu=lambda p, g: (50.0, 60.0, 30.0))
    with StoreWriter(a) as sa, StoreWriter(b) as sb:
        res = check(load(sa, "s"), load(sb, "s"), metric="cpu_host")
    # identical runs on each side: no noise, the difference is all there is
    assert res.points[0].verdict == "regressed" and res.points[0].change_pct == pytest.approx(50)


def test_single_runs_and_missing_points(tmp_path):
    a, b = _dbs(tmp_path, [10, 10], [10, 10], runs=1)
    with StoreWriter(a) as sa, StoreWriter(b) as sb, pytest.raises(NettuneError, match="2 counted runs"):
        check(load(sa, "s"), load(sb, "s"))
    a2, b2 = tmp_path / "a2.db", tmp_path / "b2.db"
    with StoreWriter(a2) as s:
        build(s, "s", [({"q": 0}, 10.0), ({"q": 1}, 10.0)], runs=3)
    with StoreWriter(b2) as s:
        build(s, "s", [({"q": 0}, 10.0), ({"q": 2}, 10.0)], runs=3)
    with StoreWriter(a2) as sa, StoreWriter(b2) as sb:
        res = check(load(sa, "s"), load(sb, "s"))
    assert sorted(p.verdict for p in res.points if p.label != "q=0") == ["missing", "missing"]
    with StoreWriter(tmp_path / "c.db") as s:
        build(s, "s", [({"other": 5}, 10.0)], runs=3)
    with StoreWriter(a2) as sa, StoreWriter(tmp_path / "c.db") as sc, pytest.raises(NettuneError, match="no point in common"):
        check(load(sa, "s"), load(sc, "s"))


def test_per_pair_comparison(tmp_path):
    with StoreWriter(tmp_path / "a.db") as s:
        build_mesh(s, "m", runs=3, factor=1.0)
    with StoreWriter(tmp_path / "b.db") as s:
        build_mesh(s, "m", runs=3, slow="h2->h4", factor=0.6)
    with StoreWriter(tmp_path / "a.db") as sa, StoreWriter(tmp_path / "b.db") as sb:
        res = check(load(sa, "m"), load(sb, "m"))
    assert len(res.points) == 6 and [r["label"] for r in res.regressed] == ["h2->h4"] and res.regressed[0]["pair"] == "h2->h4"
    assert all(p.n_before == p.n_after == 3 for p in res.points)


@pytest.mark.parametrize("text,pct", [("5%", 5.0), ("5", 5.0), (" 2.5 % ", 2.5), ("0", 0.0)])
def test_tolerance(text, pct):
    assert parse_tolerance(text) == pct


@pytest.mark.parametrize("bad", ["five", "-1%", "100%", ""])
def test_bad_tolerance(bad):
    with pytest.raises(NettuneError, match="--tolerance"):
        parse_tolerance(bad)


def test_cli_exit_status_and_json(tmp_path):
    a, b = _dbs(tmp_path, [10, 10], [7, 10])
    out = tmp_path / "c.json"
    r = nettune("check", "s", "--baseline", str(a), "--db", str(b), "--out", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    res = json.loads(out.read_text())
    assert res["verdict"] == "fail" and res["exit_code"] == 1 and [r["label"] for r in res["regressed"]] == ["q=0"]
    assert {"before", "after", "change_pct", "p_value", "verdict"} <= set(res["points"][0])
    assert "regressed" in r.stdout and "FAIL" in r.stdout
    # the export of the baseline works as the baseline
    exp = tmp_path / "before.parquet"
    nettune("export", "s", "--db", str(a), "--format", "parquet", "--out", str(exp), check=True)
    r = nettune("check", "s", "--baseline", str(exp), "--db", str(b), "--out", str(out))
    assert r.returncode == 1 and json.loads(out.read_text())["regressed"][0]["point"] == {"q": 0}
    # an unchanged rerun passes
    r = nettune("check", "s", "--baseline", str(b), "--db", str(b), "--baseline-study", "1", "--out", str(out))
    assert r.returncode == 2 and "itself" in r.stderr  # the same study as its own baseline is refused
    c = tmp_path / "copy.db"
    sqlite3.connect(b).backup(sqlite3.connect(c))
    r = nettune("check", "s", "--baseline", str(c), "--db", str(b), "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(out.read_text())["verdict"] == "pass" and "PASS" in r.stdout


@pytest.mark.parametrize("args,why", [
    (["--baseline", "nothing.db"], "no such file"),
    (["--baseline", "{notdb}"], "neither a results database nor"),
    (["--baseline", "{a}", "--tolerance", "x"], "--tolerance"),
    (["--baseline", "{a}", "--metric", "speed"], "--metric"),
    (["--baseline", "{a}", "--baseline-study", "nope"], "no study"),
])
def test_cli_errors_are_one_line_and_exit_2(tmp_path, args, why):
    a, b = _dbs(tmp_path, [10], [10])
    notdb = tmp_path / "x.txt"
    notdb.write_text("hello\n")
    args = [x.format(a=a, notdb=notdb) for x in args]
    r = nettune("check", "s", "--db", str(b), *args, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error:") and why in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_check_a_study_imported_from_iperf_logs(tmp_path):
    """The same three iperf3 logs imported on each side: nothing changed, exit 0 (one log
    three times would be one test: an iperf3 test is imported once, issue 37)."""
    logs = [str(ROOT / "tests" / "fixtures" / "iperf3" / m / "client.stdout") for m in ("tcp_p4", "interval2", "reverse")]
    for db in ("a.db", "b.db"):
        nettune("import", *logs, "--study", "legacy", "--db", str(tmp_path / db), check=True)
    out = tmp_path / "c.json"
    r = nettune("check", "legacy", "--baseline", str(tmp_path / "a.db"), "--db", str(tmp_path / "b.db"), "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    (pt,) = json.loads(out.read_text())["points"]
    # the same three tests on both sides: no change, but three different tests (4 streams, one,
    # reverse) spread far more than the tolerance, so the gate cannot say the point is within
    # it: inconclusive, which passes unless --strict
    assert pt["verdict"] == "inconclusive" and pt["n_before"] == pt["n_after"] == 3


def test_a_point_whose_rerun_tests_all_failed_is_a_regression(tmp_path):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with StoreWriter(a) as s:
        build(s, "s", [({"q": 0}, 10.0), ({"q": 1}, 10.0)], runs=3)
    with StoreWriter(b) as s:
        build(s, "s", [({"q": 0}, 10.0), ({"q": 1}, 10.0)], runs=3)
        s.db.execute("UPDATE runs SET ok=0, error='connection refused', receiver_bps=NULL, sender_bps=NULL WHERE point_id="
                     "(SELECT id FROM points WHERE idx=1)")
        s.db.commit()
    with StoreWriter(a) as sa, StoreWriter(b) as sb:
        res = check(load(sa, "s"), load(sb, "s"))
    assert [p.verdict for p in res.points][1] == "failed" and [r["label"] for r in res.regressed] == ["q=1"] and res.exit_code == 1
    assert "every rerun test failed (3)" in res.points[1].text
