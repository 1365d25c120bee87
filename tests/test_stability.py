"""Stability per run (issue 19): from a run's stored intervals, a step ("throughput fell 30%
after 120 s"), a drift, noise, or steady; shown by analyze and charted by the report."""
from __future__ import annotations

import random
from types import SimpleNamespace

from nettune.analysis.analyze import analyze
from nettune.analysis.data import load
from nettune.analysis.stability import run_stability
from nettune.store.writer import StoreWriter

from study_builders import build


def _run(rates: list[float], every: float = 2.0, run: int = 0):
    ivs = [{"start": i * every, "end": (i + 1) * every, "bps": r * 1e9} for i, r in enumerate(rates)]
    ivs.append({"start": 0.0, "end": 1.0, "bps": 1.0, "direction": "reverse"})  # another direction: not this series
    return SimpleNamespace(intervals=ivs, run=run, pair=None)


def _noisy(rates: list[float], sd: float = 0.01, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [r * (1 + rng.gauss(0, sd)) for r in rates]


def test_a_step_down_is_said_with_its_time_and_size():
    r = run_stability(_run(_noisy([10.0] * 60 + [7.0] * 240)), {"os": "freebsd"}, "os=freebsd")
    assert r.verdict == "fell" and r.step_at_s == 120.0 and round(r.step_pct) == -30
    assert r.text.startswith("throughput fell 30% after 120 s (")
    up = run_stability(_run(_noisy([5.0] * 10 + [8.0] * 10)), {}, "")
    assert up.verdict == "rose" and up.step_at_s == 20.0


def test_steady_drifting_noisy_and_too_short():
    steady = run_stability(_run(_noisy([9.5] * 120)), {}, "")
    assert steady.verdict == "steady" and steady.cv < 0.03 and steady.text.startswith("steady")
    drift = run_stability(_run(_noisy([10.0 - 2.0 * i / 299 for i in range(300)])), {}, "")
    assert drift.verdict == "drifting" and drift.trend_pct_per_min < -1.5 and drift.trend_p < 0.001
    noisy = run_stability(_run([10.0, 6.0] * 30), {}, "")
    assert noisy.verdict == "noisy" and noisy.cv > 0.2
    assert run_stability(_run([10.0, 10.0, 10.0]), {}, "") is None  # three intervals: too few to judge


def test_analyze_reports_stability_per_run(tmp_path):
    with StoreWriter(tmp_path / "r.db") as store:
        build(store, "s", [({"mtu": 1500}, 5.0), ({"mtu": 9000}, 9.0)], runs=3)
        res = analyze(load(store, "s"))
    assert len(res.stability) == 6 and {r.intervals for r in res.stability} == {5}
    head = next(f for f in res.findings if f.startswith("stability over each run (6 runs, intervals of 1 s): "))
    assert "with a step or a trend" in head
    assert res.to_dict()["stability"][0]["verdict"] in ("steady", "noisy", "drifting", "fell", "rose")


def test_report_has_the_stability_chart(tmp_path):
    from nettune.report.build import build_report

    with StoreWriter(tmp_path / "r.db") as store:
        build(store, "s", [({"mtu": 1500}, 5.0), ({"mtu": 9000}, 9.0)], runs=2)
        rep = build_report(load(store, "s"), tmp_path / "out")
    chart = next(c for c in rep.charts if c.name == "stability")
    assert chart.png.stat().st_size > 1000 and chart.svg.read_text().count("<svg") == 1
    md = rep.markdown.read_text()
    assert "Per-interval throughput and stability per run" in md and "stability over each run (4 runs" in md
