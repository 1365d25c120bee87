"""The analysis on constructed sweeps written into a real results database: a saturating
curve, a peak then a decline, a flat line, a noisy one, knobs that did and did not
matter, CPU efficiency, stream fairness and the instrument-bottleneck hint."""
import json
from pathlib import Path

import pytest

from nettune.analysis.analyze import analyze
from nettune.analysis.compare import between_studies, within_study
from nettune.analysis.data import load
from nettune.analysis.fairness import jain
from nettune.errors import NettuneError
from nettune.store.writer import StoreWriter

from conftest import nettune
from study_builders import DG, DP, build, study_a


@pytest.fixture
def store(tmp_path: Path) -> StoreWriter:
    s = StoreWriter(tmp_path / "r.db")
    yield s
    s.close()


def curves(result: dict, param: str) -> list[dict]:
    return next(p for p in result["parameters"] if p["name"] == param)["curves"]


def test_saturating_curve(store):
    study_a(store)
    res = analyze(load(store, "A"))
    assert res["parameters_swept"] == ["queues", "mult"]  # streams is derived, not an axis
    for c in curves(res, "queues"):
        assert c["shape"] == "saturating" and c["saturation_x"] == 16
        assert c["knee_x"] in (8, 16) and not c["peak_at_edge"]
    assert any("saturates at queues=16" in f for f in res["findings"])
    assert not any("more queues is not better" in f for f in res["findings"])
    assert any(f.startswith("queues mattered") for f in res["findings"])


def test_best_throughput_per_cpu(store):
    # issue 12: the ratio "most Gbit/s per core" (queues=8 here) gave way to the knee of the
    # throughput-vs-cost frontier among points reaching 80% of the best (tests/test_frontier.py)
    study_a(store)
    res = analyze(load(store, "A"))
    eff = {e["cost"]: e for e in res["efficiency"]}
    host = eff["cpu_host"]
    assert host["point"]["queues"] == 16 and host["machine_cores"] == 8
    assert host["cost_value"] == pytest.approx(30 / 100 * 8)  # host CPU is % of all 8 cores, converted to cores
    assert "cores" in host["text"] and "30% of 8 cores" in host["text"]
    assert {"cpu_client", "cpu_server", "cpu_host"} <= set(eff)


@pytest.mark.parametrize("runs", [3, 1])
def test_peak_then_decline_is_a_peak(store, runs):
    build(store, "D", [({"parallel": p}, g) for p, g in zip(DP, DG)], runs=runs, engine="iperf2", version="2.1.8")
    res = analyze(load(store, "D"))
    (c,) = curves(res, "parallel")
    assert c["shape"] == "peak" and c["peak_x"] == 10 and not c["peak_at_edge"]
    assert c["decline_pct"] == pytest.approx(163 / 288 * 100 - 100, abs=3)
    text = " ".join(res["findings"])
    assert "peak at parallel=10" in text and "more parallel is not better" in text
    assert "still rising" not in text and "saturates" not in text
    assert res["best"]["point"] == {"parallel": 10}


def test_flat_line_has_no_significant_effect(store):
    build(store, "flat", [({"window": w}, 40.0) for w in (1, 2, 4, 8, 16)], noise=0.02)
    res = analyze(load(store, "flat"))
    (c,) = curves(res, "window")
    assert c["shape"] == "flat" and c["p_value"] >= 0.05
    eff = res["parameters"][0]["effect"]
    assert eff["mattered"] is False
    assert any(f.startswith("window: no effect shown (one-way ANOVA") for f in res["findings"])  # never "changed nothing"
    assert not any("nothing measurable" in f or "as equal" in f for f in res["findings"])


def test_noisy_sweep_is_not_overclaimed(store):
    # a real +10% trend under 30% run-to-run noise with 3 runs: cannot be told from noise
    build(store, "noisy", [({"queues": q}, g) for q, g in zip([1, 2, 4, 8], [50, 52, 54, 55])], noise=0.3, seed=5)
    res = analyze(load(store, "noisy"))
    (c,) = curves(res, "queues")
    assert c["shape"] == "flat"
    assert res["noisy"] and any("noisy" in f and "target_margin" in f for f in res["findings"])


def test_still_rising_at_the_edge(store):
    build(store, "rising", [({"streams": s}, g) for s, g in zip([1, 2, 4, 8], [10, 20, 38, 70])])
    res = analyze(load(store, "rising"))
    (c,) = curves(res, "streams")
    assert c["shape"] == "rising" and c["peak_at_edge"]
    assert any("widen the range of streams" in f for f in res["findings"])


def test_knobs_that_mattered_and_knobs_that_did_not(store):
    # study E: each knob alone against the baseline, three runs each
    knobs = {"baseline": 65.0, "rmem_max": 65.2, "netdev_max_backlog": 64.9, "mtu9000": 72.0}
    build(store, "E", [({"knob": k}, g) for k, g in knobs.items()], noise=0.01, seed=2)
    res = analyze(load(store, "E"))
    cmp = {c["level"]: c for c in res["parameters"][0]["comparisons"]}
    assert cmp["mtu9000"]["verdict"] == "faster"
    assert cmp["rmem_max"]["verdict"] == cmp["netdev_max_backlog"]["verdict"] == "inconclusive"
    text = "\n".join(res["findings"])
    assert "knob=rmem_max vs knob=baseline: no difference shown" in text
    assert "knob=mtu9000 vs knob=baseline: b is" in text and "Bonferroni over 3 tests" in text  # the knob's 3 comparisons
    assert res["effect_tests"] == 3 and cmp["mtu9000"]["family"] == 3
    assert cmp["mtu9000"]["p_value"] == pytest.approx(3 * cmp["mtu9000"]["p_raw"])


def test_a_parameter_that_changed_nothing_among_ones_that_did(store):
    pts = [({"mtu": m, "tw_reuse": t}, 10.0 * (1.5 if m == 9000 else 1)) for m in (1500, 9000) for t in (0, 1)]
    build(store, "two", pts, noise=0.01, seed=3)
    res = analyze(load(store, "two"))
    eff = {p["name"]: p["effect"] for p in res["parameters"]}
    assert eff["mtu"]["mattered"] and not eff["tw_reuse"]["mattered"]


def test_jain_index():
    assert jain([5, 5, 5, 5]) == pytest.approx(1.0)
    assert jain([10, 0, 0, 0]) == pytest.approx(0.25)
    assert jain([]) is None


def test_uneven_streams_are_reported(store):
    build(store, "fair", [({"parallel": p}, 40.0) for p in (1, 4, 8)], stream_skew=1.0)
    res = analyze(load(store, "fair"))
    fair = {f["point"]["parallel"]: f for f in res["fairness"]}
    assert 1 not in fair  # one stream: nothing to share
    assert fair[8]["jain_min"] < 0.9 and fair[8]["slowest_gbps"] < fair[8]["fastest_gbps"]
    assert any("uneven" in f and "Jain" in f for f in res["findings"])


def test_instrument_bottleneck_old_iperf3(store):
    pts = [({"parallel": p}, 32.0) for p in (1, 5)]
    build(store, "old", pts, version="3.12", cpu=lambda p, g: (99.5, 70.0, 10.0))
    build(store, "new", pts, version="3.16", cpu=lambda p, g: (99.5, 70.0, 10.0))
    old = analyze(load(store, "old"))
    assert len(old["instrument"]) == 1 and "the tool was likely the bottleneck" in old["instrument"][0]  # CPU alone: likely
    assert "client process" in old["instrument"][0] and "3.12" in old["instrument"][0]
    assert analyze(load(store, "new"))["instrument"] == []


def test_warmup_and_failed_runs_are_not_counted(store):
    build(store, "w", [({"q": q}, 10.0 * q) for q in (1, 2)], warmup=1, failed=1, noise=0.0)
    res = analyze(load(store, "w"))
    for row in res["points"]:
        assert row["n"] == 3 and row["failed"] == 1
        assert row["mean"] == pytest.approx(10.0 * row["point"]["q"])


def test_within_and_between_study_comparisons(store):
    build(store, "E", [({"knob": "off"}, 50.0), ({"knob": "on"}, 55.0)], seed=1)
    c, each = within_study(load(store, "E"), {"knob": "off"}, {"knob": "on"})
    assert c.verdict == "faster" and c.n_a == c.n_b == 3 and each == []
    build(store, "before", [({}, 50.0)], sweep={}, seed=4)
    build(store, "after", [({}, 50.0)], sweep={}, seed=5)
    [(label, c)] = between_studies(load(store, "before"), load(store, "after"), {}, {})
    assert c.verdict == "inconclusive"
    with pytest.raises(NettuneError, match="no point matches"):
        within_study(load(store, "E"), {"knob": "maybe"}, {"knob": "on"})


def test_compare_cli_json_and_one_line_errors(tmp_path):
    db = tmp_path / "r.db"
    with StoreWriter(db) as s:
        build(s, "E", [({"knob": "off"}, 50.0), ({"knob": "on"}, 60.0)], seed=1)
        build(s, "single", [({"knob": "off"}, 50.0)], runs=1)
    p = nettune("compare", "E", "--a", "knob=off", "--b", "knob=on", "--format", "json", "--db", str(db), check=True)
    out = json.loads(p.stdout)
    assert out["verdict"] == "faster" and (out["n_a"], out["n_b"]) == (3, 3)
    assert out["ci_low"] < out["ratio"] < out["ci_high"] and 0 <= out["p_value"] < 0.05
    p = nettune("compare", "E", "--a", "knob=off", "--b", "knob=on", "--db", str(db), check=True)
    assert "b is" in p.stdout and "faster" in p.stdout
    p = nettune("compare", "single", "E", "--a", "knob=off", "--b", "knob=on", "--db", str(db))
    assert p.returncode == 2 and "at least 2" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = nettune("compare", "E", "--a", "knob", "--b", "knob=on", "--db", str(db))
    assert p.returncode == 2 and "KEY=VAL" in p.stderr and "Traceback" not in p.stderr


def test_analyze_cli(tmp_path):
    db = tmp_path / "r.db"
    with StoreWriter(db) as s:
        build(s, "D", [({"parallel": p}, g) for p, g in zip(DP, DG)])
    p = nettune("analyze", "D", "--format", "json", "--db", str(db), check=True)
    res = json.loads(p.stdout)
    assert res["parameters"][0]["curves"][0]["shape"] == "peak"
    p = nettune("analyze", "D", "--db", str(db), check=True)
    assert "peak at parallel=10" in p.stdout
    p = nettune("analyze", "nope", "--db", str(db))
    assert p.returncode == 2 and "no study 'nope'" in p.stderr


def test_headline_names_the_best_point_and_what_limited_it(store):
    pts = [({"parallel": p}, g) for p, g in ((1, 20.0), (2, 26.0), (4, 27.0))]
    build(store, "old", pts, version="3.12", cpu=lambda p, g: (99.5, 70.0, 10.0))
    build(store, "new", pts, version="3.16")
    build(store, "once", pts, version="3.16", runs=1)
    old = analyze(load(store, "old"))["headline"]
    assert old[0].startswith("best: ") and "at parallel=4" in old[0] and "95% CI" in old[0]
    assert old[1].startswith("bottleneck: likely the tool") and "client" in old[1] and "100%" in old[1]  # CPU alone: likely
    new = analyze(load(store, "new"))["headline"]
    assert len(new) == 2 and new[1].startswith("mattered most: parallel")
    once = analyze(load(store, "once"))["headline"]
    assert "single run" in once[0] and once[-1].startswith("single runs: no noise estimate")
