"""Issue 17 on the real lab with real iperf3 3.12 and iperf 2.1.8: a mesh's pairs and rounds
reach every export and the analysis, a paced rate means the same on both engines, every
engine mode survives run -> store -> export -> `nettune import`, and `nettune check`
fails a rerun that got slower than its baseline and passes an unchanged one."""
import csv
import io
import json
import math
from pathlib import Path

import pytest

from conftest import lab_leftovers, needs_iperf2, needs_iperf3, needs_root, nettune

pytestmark = [needs_root, needs_iperf3]

PAIR_COLS = ("pair", "server", "client", "round", "round_total_bps")


def study_text(name: str, engine: str = "iperf3", hosts: tuple[str, ...] = ("server", "client"), runs: int = 1, **wl: object) -> str:
    lines = [f'name = "{name}"', "[target]", 'kind = "lab"', f"hosts = {json.dumps(list(hosts))}", "mtu = 9000",
             "[workload]", f'engine = "{engine}"', "duration = 1", "auth = false"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in wl.items()]
    lines += ["[repeat]", f"runs = {runs}"]
    return "\n".join(lines) + "\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    f = tmp_path / f"{name}.toml"
    f.write_text(text)
    return f


def test_mesh_of_four_hosts_pairs_and_rounds_downstream(tmp_path):
    db = tmp_path / "r.db"
    f = write(tmp_path, "mesh", study_text("nt-h17-mesh", hosts=("h1", "h2", "h3", "h4"), runs=2, pairs="mesh", parallel_pairs=True))
    plan = " ".join(nettune("run", str(f), "--dry-run", check=True).stdout.split())
    assert "1 points x 2 runs x 6 host pairs (6 tests per point and run) = 12 tests" in plan
    nettune("run", str(f), "--db", str(db), check=True)
    assert not lab_leftovers()
    rows = list(csv.DictReader(io.StringIO(nettune("export", "nt-h17-mesh", "--db", str(db), "--format", "csv", check=True).stdout)))
    assert len(rows) == 12 and all(r["ok"] == "True" for r in rows)
    assert len({r["pair"] for r in rows}) == 6 and {r["round"] for r in rows} == {"0", "1", "2"}
    for r in rows:
        assert r["pair"] == f"{r['server']}->{r['client']}"
        together = [float(x["total_bps"]) for x in rows if x["run"] == r["run"] and x["round"] == r["round"]]
        assert len(together) == 2 and float(r["round_total_bps"]) == pytest.approx(sum(together))
    a = json.loads(nettune("analyze", "nt-h17-mesh", "--db", str(db), "--format", "json", check=True).stdout)
    assert a["points"][0]["n"] == 2  # repeats, not pairs
    assert sorted(p["pair"] for p in a["pairs"]["pairs"]) == sorted({r["pair"] for r in rows})
    assert [p["n"] for p in a["pairs"]["pairs"]] == [2] * 6
    assert len(a["pairs"]["rounds"]) == 3 and all(r["n"] == 2 for r in a["pairs"]["rounds"])
    text = nettune("analyze", "nt-h17-mesh", "--db", str(db), check=True).stdout
    assert "pair" in text and "h1->h2" in text
    out = tmp_path / "rep"
    nettune("report", "nt-h17-mesh", "--db", str(db), "--out", str(out), check=True)
    md = (out / "report.md").read_text()
    assert "## Pairs" in md and (out / "charts" / "pairs.png").is_file()


@needs_iperf2
@pytest.mark.parametrize("engine", ["iperf3", "iperf2"])
def test_a_paced_1G_run_measures_10_to_the_9_bits_per_second(tmp_path, engine):
    """Paced TCP at "1G": 10^9 bit/s on both engines (iperf 2.1.8 handed "1G" would send 2^30)."""
    db = tmp_path / "r.db"
    f = write(tmp_path, f"pace-{engine}", study_text(f"nt-h17-pace-{engine}", engine, bitrate="1G"))
    nettune("run", str(f), "--db", str(db), check=True)
    (rec,) = json.loads(nettune("results", "--db", str(db), "--format", "json", check=True).stdout)
    assert rec["ok"], rec["error"]
    assert rec["receiver_bps"] == pytest.approx(1e9, rel=0.02)
    from nettune import Store

    with Store(db) as s:
        raw = s.raw_outputs(s.runs(s.find_study(None)["id"])[0].id)
    argv = next(r["command"] for r in raw if r["side"] == "client")
    assert argv[argv.index("-b") + 1] == "1000000000"
    assert not lab_leftovers()


MODES = {"tcp": {}, "udp": {"protocol": "udp", "bitrate": "200M"}, "reverse": {"reverse": True}, "bidir": {"bidir": True}, "p2": {"parallel": 2}}


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=0, abs_tol=0)
    return a == b


@needs_iperf2
@pytest.mark.parametrize("engine", ["iperf3", "iperf2"])
def test_every_mode_round_trips_through_every_export_and_import(tmp_path, engine):
    """run on the lab -> store -> export CSV, JSON, Parquet -> `nettune import` -> the same
    numbers, pairs and rounds, for TCP, UDP, reverse, bidir and -P 2."""
    from nettune import Store
    from nettune.store.sqlite import METRIC_COLUMNS as METRICS

    db = tmp_path / "r.db"
    # two pairs at once in round 0 (an aggregate), one in round 1
    pairs = [["h1", "h2"], ["h3", "h4"], ["h1", "h3"]]
    for mode, opts in MODES.items():
        f = write(tmp_path, mode, study_text(f"nt-h17-rt-{engine}-{mode}", engine, hosts=("h1", "h2", "h3", "h4"),
                                             pairs=pairs, parallel_pairs=True, **opts))
        nettune("run", str(f), "--db", str(db), check=True)
    assert not lab_leftovers()
    keep = ["run", "warmup", "ok", "error", "engine", "tool_version", "protocol", "started", "duration", *PAIR_COLS, *METRICS]
    for mode in MODES:
        name = f"nt-h17-rt-{engine}-{mode}"
        with Store(db) as s:
            before = s.runs(s.find_study(name)["id"])
        assert len(before) == 3 and all(r.ok for r in before), [r.error for r in before]
        assert {r.round for r in before} == {0, 1} and sum(r.round_total_bps is not None for r in before) == 2
        for fmt in ("csv", "json", "parquet"):
            out = tmp_path / f"{mode}.{fmt}"
            nettune("export", name, "--db", str(db), "--format", fmt, "--out", str(out), check=True)
            back = f"back-{engine}-{mode}-{fmt}"
            nettune("import", str(out), "--study", back, "--db", str(db), check=True)
            with Store(db) as s:
                after = s.runs(s.find_study(back)["id"])
            assert len(after) == len(before)
            for a, b in zip(before, after):
                diff = {k: (a[k], b[k]) for k in keep if not _same(a[k], b[k])}
                assert not diff, (mode, fmt, diff)
                assert a.total_bps == b.total_bps
                assert "; ".join(a.warnings) == "; ".join(b.warnings)  # exported joined, imported as one text
        if mode == "bidir":
            assert all(r.reverse_receiver_bps for r in before)
        if mode == "udp":
            assert all(r.lost_percent is not None and r.jitter_ms is not None for r in before)


def test_check_fails_a_slower_rerun_and_passes_an_unchanged_one(tmp_path):
    """Paced TCP (deterministic): the baseline at 200M; the same study again passes (exit 0),
    paced to 150M it fails (exit 1) naming the point; an export works as the baseline; an
    unreadable baseline is an error (exit 2)."""
    base_db, new_db = tmp_path / "base.db", tmp_path / "new.db"
    same = write(tmp_path, "check", study_text("nt-h17-check", runs=3, bitrate="200M"))
    slow = write(tmp_path, "check-slow", study_text("nt-h17-check", runs=3, bitrate="150M"))
    nettune("run", str(same), "--db", str(base_db), check=True)

    ok = nettune("check", str(same), "--baseline", str(base_db), "--db", str(new_db), "--out", str(tmp_path / "ok.json"))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    res = json.loads((tmp_path / "ok.json").read_text())
    assert res["verdict"] == "pass" and res["regressed"] == [] and res["exit_code"] == 0
    (pt,) = res["points"]
    assert pt["verdict"] in ("within-tolerance", "not-worse") and pt["n_before"] == pt["n_after"] == 3
    assert abs(pt["change_pct"]) < 5 and "PASS" in ok.stdout

    bad = nettune("check", str(slow), "--baseline", str(base_db), "--db", str(new_db), "--out", str(tmp_path / "bad.json"))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    res = json.loads((tmp_path / "bad.json").read_text())
    (pt,) = res["points"]
    assert res["verdict"] == "fail" and pt["verdict"] == "regressed" and pt["p_value"] < 0.05
    assert pt["change_pct"] == pytest.approx(-25, abs=3) and pt["before"] == pytest.approx(0.2, rel=0.03)
    assert "regressed" in bad.stdout and "FAIL" in bad.stdout

    # the slow run as the baseline of the stored unchanged run: that one improved
    export = tmp_path / "slow.csv"
    nettune("export", "nt-h17-check", "--db", str(new_db), "--format", "csv", "--out", str(export), check=True)
    up = nettune("check", "1", "--baseline", str(export), "--db", str(new_db), "--out", str(tmp_path / "up.json"))
    assert up.returncode == 0, up.stdout + up.stderr
    res = json.loads((tmp_path / "up.json").read_text())
    assert res["points"][0]["verdict"] == "improved" and [r["label"] for r in res["improved"]] == [res["points"][0]["label"]]
    assert "improved" in up.stdout

    err = nettune("check", str(same), "--baseline", str(tmp_path / "nothing.db"), "--db", str(new_db), "--out", str(tmp_path / "err.json"))
    assert err.returncode == 2 and err.stderr.startswith("error:") and "Traceback" not in err.stderr
    assert json.loads((tmp_path / "err.json").read_text())["verdict"] == "error"  # written on every exit, into --out (not the cwd)
    assert not lab_leftovers()


def test_two_reruns_of_one_study_pass_the_gate_in_both_directions(tmp_path):
    """Issue 29: the same study run twice is no regression whichever run is the baseline (the
    old gate failed one direction: -18.3%, p=0.041). Two points, paced so that the machine's
    load is not what is measured; the rerun goes through `nettune check STUDY.toml`."""
    study = write(tmp_path, "twice", study_text("nt-h29-twice", runs=3, bitrate="300M", parallel="{p}").replace(
        "[repeat]", "[sweep]\np = [1, 2]\n[repeat]"))
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    nettune("run", str(study), "--db", str(one), check=True)
    first = nettune("check", str(study), "--baseline", str(one), "--db", str(two), "--out", str(tmp_path / "a.json"))
    assert first.returncode == 0, first.stdout + first.stderr
    back = nettune("check", "nt-h29-twice", "--baseline", str(two), "--db", str(one), "--out", str(tmp_path / "b.json"))
    assert back.returncode == 0, back.stdout + back.stderr
    for out in ("a.json", "b.json"):
        res = json.loads((tmp_path / out).read_text())
        assert res["verdict"] == "pass" and res["regressed"] == [] and res["tested"] == 2
        assert all(p["verdict"] not in ("regressed", "failed") for p in res["points"])
        assert all(p["ci_low_pct"] is not None and p["detectable_pct"] is not None for p in res["points"])
    assert "Bonferroni" in back.stdout and "PASS" in back.stdout
    assert not lab_leftovers()
