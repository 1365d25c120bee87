"""Verdicts an expert would sign (issue 29), checked by simulation on seeded synthetic studies:
the regression gate's false failures over unchanged reruns stay at or below its 5%, it finds a
30% drop and calls a 15% drop under 20% noise inconclusive; single-run studies of pure noise
almost never "matter" while real effects still do; pairwise and summary verdicts agree;
equivalence is never claimed from a wide interval. The statistical claims run through the very
functions check and analyze decide with (vectorised, thousands of studies in a second); the
end-to-end tests check that analyze and check decide exactly as those functions say."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from nettune.analysis.analyze import analyze
from nettune.analysis.compare import compare_values
from nettune.analysis.data import load
from nettune.analysis.design_noise import additive_tests
from nettune.analysis.policy import ALPHA
from nettune.analysis.regression import check, gate_arrays
from nettune.store.writer import StoreWriter

from study_builders import build

RNG = np.random.default_rng(29)


def draw(dist: str, shape: tuple[int, ...], n: int, cv: float, mean: float = 10.0) -> np.ndarray:
    """Runs of a point: normal, lognormal (right-skewed) or bimodal (two bands +-cv)."""
    size = shape + (n,)
    if dist == "normal":
        return RNG.normal(mean, cv * mean, size)
    if dist == "lognormal":
        s = math.sqrt(math.log(1 + cv**2))
        return mean * np.exp(RNG.normal(-s * s / 2, s, size))
    band = RNG.random(size) < 0.5
    return np.where(band, mean * (1 - cv), mean * (1 + cv)) * (1 + RNG.normal(0, 0.02, size))


def summary(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.full(x.shape[:-1], x.shape[-1]), x.mean(axis=-1), x.std(axis=-1, ddof=1)


@pytest.mark.parametrize("dist", ["normal", "lognormal", "bimodal"])
def test_the_gate_fails_unchanged_reruns_at_most_5_percent_of_the_time(dist):
    # 200 seeded pairs of studies of 20 points, 5 runs each, 15% noise, nothing changed: the old
    # gate (each point at p < 0.05) failed 3 to 4 in 10 of these
    before, after = draw(dist, (200, 20), 5, 0.15), draw(dist, (200, 20), 5, 0.15)
    g = gate_arrays(summary(before), summary(after), True, 0.05, 20)
    failed = (g["verdict"] == "regressed").any(axis=1).mean()
    assert failed <= ALPHA, failed
    # and the false alarm is not hidden by calling everything else fine: most unchanged points
    # at this noise are honestly inconclusive (the interval reaches beyond -5%)
    assert (g["verdict"] == "inconclusive").mean() > 0.9


def test_the_gate_finds_a_30_percent_drop_at_5_percent_noise():
    before = draw("normal", (200, 20), 5, 0.05)
    after = draw("normal", (200, 20), 5, 0.05) * 0.70
    g = gate_arrays(summary(before), summary(after), True, 0.05, 20)
    assert (g["verdict"] == "regressed").mean() >= 0.95
    # the detectable change it states for this N and noise is well under the 30%
    assert np.median(g["detectable"]) < 0.30


def test_a_15_percent_drop_under_20_percent_noise_with_3_runs_is_inconclusive():
    before = draw("normal", (200, 20), 3, 0.20)
    after = draw("normal", (200, 20), 3, 0.20) * 0.85
    g = gate_arrays(summary(before), summary(after), True, 0.05, 20)
    assert (g["verdict"] == "inconclusive").mean() >= 0.95
    assert not (g["verdict"] == "within-tolerance").any()  # never "fine" when the data cannot tell
    assert np.median(g["detectable"]) > 0.5  # the gate says it could only see far larger drops


def test_lower_is_better_regresses_upwards():
    before = draw("normal", (100, 4), 5, 0.03, mean=60.0)  # build seconds
    after = draw("normal", (100, 4), 5, 0.03, mean=60.0) * 1.30
    g = gate_arrays(summary(before), summary(after), False, 0.05, 4)
    assert (g["verdict"] == "regressed").mean() >= 0.95


def test_check_decides_as_the_gate_and_strict_fails_the_inconclusive(tmp_path):
    """End to end through the store: a 15% drop under 20% noise with 3 runs passes (it could
    not be shown), is named inconclusive, and --strict fails it with its own exit status."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with StoreWriter(a) as s:
        build(s, "s", [({"q": i}, 10.0) for i in range(4)], runs=3, noise=0.2, seed=11)
    with StoreWriter(b) as s:
        build(s, "s", [({"q": i}, 8.5) for i in range(4)], runs=3, noise=0.2, seed=12)
    with StoreWriter(a) as sa, StoreWriter(b) as sb:
        res = check(load(sa, "s"), load(sb, "s"), tolerance_pct=5)
        strict = check(load(sa, "s"), load(sb, "s"), tolerance_pct=5, strict=True)
    assert all(p.verdict == "inconclusive" for p in res.points) and res.exit_code == 0 and res.verdict == "pass"
    assert strict.exit_code == 3 and strict.verdict == "fail" and len(strict.inconclusive) == 4
    assert res.warnings and "larger than the tolerance" in res.warnings[0] and res.runs_needed and res.runs_needed > 3
    for p in res.points:  # each interval reaches across -5%: that is what inconclusive means
        assert p.ci_low_pct < -5 < p.ci_high_pct


# -- single runs: no effect without a noise estimate ------------------------------------------

def _mattered(y: np.ndarray, k: int) -> np.ndarray:
    """analyze's decision for single-run full grids: each parameter's F test against the
    additive model's residuals, Bonferroni over the parameters (one test each)."""
    ps, _, _ = additive_tests(np.log(y), k)
    return np.minimum(1.0, ps * k) < ALPHA


def test_single_run_pure_noise_rarely_matters():
    y = draw("normal", (4000, 4, 3), 1, 0.20)[..., 0]
    assert _mattered(y, 2).any(axis=0).mean() <= 0.05  # any "mattered" in at most 5% of studies
    y = draw("lognormal", (4000, 2, 2, 2, 2), 1, 0.20)[..., 0]
    assert _mattered(y, 4).any(axis=0).mean() <= 0.05


def test_single_run_effects_of_3_times_the_noise_are_found():
    sd = 0.10  # log-scale noise, about 10% per run
    y = np.exp(RNG.normal(0, sd, (2000, 4, 3)) + 3 * sd * np.arange(4)[None, :, None])  # levels 3 noise apart
    found = _mattered(y, 2)
    assert found[0].mean() >= 0.95 and found[1].mean() <= 0.05
    y = np.exp(RNG.normal(0, sd, (2000, 2, 2, 2, 2)) + 3 * sd * np.arange(2)[None, :, None, None, None])  # 2^4, one 3-noise effect
    found = _mattered(y, 4)
    assert found[0].mean() >= 0.95 and found[1:].any(axis=0).mean() <= 0.05


def test_analyze_decides_single_runs_exactly_as_the_f_test(tmp_path):
    """analyze on seeded 4x3 single-run studies of pure noise: a parameter "mattered" exactly
    when its Bonferroni-adjusted F test says so, never from a fixed threshold; a study with
    a real effect says so; a one-parameter sweep cannot tell and says how to settle it."""
    with StoreWriter(tmp_path / "r.db") as store:
        matters = 0
        for seed in range(20):
            rng = np.random.default_rng(seed)
            vals = 10.0 * np.exp(rng.normal(0, 0.2, (4, 3)))
            build(store, f"n{seed}", [({"a": a, "b": b}, vals[i, j]) for i, a in enumerate((1, 2, 4, 8)) for j, b in enumerate("xyz")],
                  runs=1, noise=0.0)
            res = analyze(load(store, f"n{seed}"))
            want = _mattered(vals[None], 2)[:, 0]
            got = [p.effect.mattered for p in res.parameters]
            assert got == list(want), seed
            matters += any(got)
            assert all(p.effect.tested and "F test against the design's noise" in p.effect.test for p in res.parameters)
            assert not any(re.match(r"\w+ mattered", f) for f in res.findings + res.headline) or any(got)
        assert matters <= 1  # 20 studies of pure noise: at most one says anything mattered
        build(store, "real", [({"a": a, "b": b}, 10.0 * 1.5 ** i * (1 + 0.03 * (j - 1))) for i, a in enumerate((1, 2, 4, 8))
                              for j, b in enumerate("xyz")], runs=1, noise=0.02, seed=3)
        res = analyze(load(store, "real"))
        eff = {p.name: p.effect for p in res.parameters}
        assert eff["a"].mattered and eff["a"].text.startswith("a mattered (single runs: F test")
        build(store, "one", [({"a": a}, g) for a, g in zip((1, 2, 4, 8), (10.0, 14.0, 9.0, 12.0))], runs=1, noise=0.0)
        (p,) = analyze(load(store, "one")).parameters
        assert not p.effect.tested and not p.effect.mattered
        assert p.effect.text.startswith("a: cannot tell without repeats (single runs, no noise estimate)")
        assert "only one parameter is swept" in p.effect.test
        assert "run each point 3 times" in p.effect.text


# -- one policy: pairwise and summary verdicts never contradict --------------------------------

def test_pairwise_and_summary_verdicts_never_contradict(tmp_path):
    with StoreWriter(tmp_path / "r.db") as store:
        for seed in range(12):
            gain = [1.0, 1.1, 1.2, 1.35][seed % 4]  # effects near the edge of what 3 runs can show
            pts = [({"queues": q, "mult": m}, 20.0 * (gain if m == 2 else 1.0) * (1.05 if q == 2 else 1.0)) for q in (1, 2) for m in (1, 2)]
            build(store, f"s{seed}", pts, runs=3, noise=0.12, seed=seed)
            build(store, f"c{seed}", [({"w": w, "k": k}, 30.0 * (1 + 0.04 * gain * i)) for i, w in enumerate((1, 2, 4, 8)) for k in (0, 1)],
                  runs=3, noise=0.05, seed=100 + seed)
            for name in (f"s{seed}", f"c{seed}"):
                res = analyze(load(store, name))
                for p in res.parameters:
                    sig = [c.verdict in ("faster", "slower", "better", "worse") for c in p.comparisons if c.comparison]
                    sig += [c.shape != "flat" for c in p.curves if c.p_value is not None]
                    assert p.effect.mattered == any(sig), (name, p.name, p.effect.text)
                    if not p.effect.mattered:
                        assert "no effect shown" in p.effect.text and "nothing measurable" not in p.effect.text
                    for c in p.comparisons:  # every verdict is adjusted over the same family
                        assert c.comparison is None or c.comparison.family == res.effect_tests


# -- "not significant" is never "equal" ---------------------------------------------------------

def test_equivalence_is_never_claimed_from_a_wide_interval():
    rng = np.random.default_rng(5)
    claimed = 0
    for i in range(400):
        n, cv = 3 + i % 6, [0.01, 0.03, 0.1, 0.3][i % 4]
        a = list(10 * (1 + rng.normal(0, cv, n)))
        b = list(10 * (1 + rng.normal(0, cv, n)) * (1 + rng.normal(0, 0.02)))
        c = compare_values(a, b, margin=0.05)
        if c.equivalent:
            claimed += 1
            assert 0.95 <= c.tost_low <= c.tost_high <= 1.05, c
        if c.verdict == "inconclusive":
            assert "equal" not in c.text.replace("equivalent", "")
        plain = compare_values(a, b)
        assert plain.verdict != "equivalent" and not plain.equivalent  # no margin given, no equivalence
    assert claimed > 50  # tight runs do get their equivalence: the test is not vacuous
    # the gate's "within tolerance" is the same claim: only an interval inside the tolerance
    before, after = draw("normal", (100, 10), 4, 0.08), draw("normal", (100, 10), 4, 0.08)
    g = gate_arrays(summary(before), summary(after), True, 0.05, 10)
    within = g["verdict"] == "within-tolerance"
    assert ((g["lo"][within] >= -0.05) & (g["hi"][within] <= 0.05)).all()


def test_check_json_csv_and_markdown_carry_structured_labels(tmp_path):
    from conftest import nettune

    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with StoreWriter(a) as s:
        build(s, "s", [({"q": 0, "name": "x, y"}, 10.0), ({"q": 1, "name": "x, y"}, 10.0)], runs=3, noise=0.01, seed=1)
    with StoreWriter(b) as s:
        build(s, "s", [({"q": 0, "name": "x, y"}, 7.0), ({"q": 1, "name": "x, y"}, 10.0)], runs=3, noise=0.01, seed=2)
    out = tmp_path / "c.json"
    r = nettune("check", "s", "--baseline", str(a), "--db", str(b), "--out", str(out), "--format", "json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)  # stdout holds the JSON alone
    assert doc == json.loads(out.read_text()) and doc["regressed"] == [{"point": {"q": 0, "name": "x, y"}, "pair": None, "label": "q=0, name=x, y"}]
    assert doc["tested"] == 2 and "Bonferroni" in doc["policy"]
    r = nettune("check", "s", "--baseline", str(a), "--db", str(b), "--out", str(out), "--format", "csv")
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [row["name"] for row in rows] == ["x, y", "x, y"] and rows[0]["verdict"] == "regressed" and rows[0]["q"] == "0"
    r = nettune("check", "s", "--baseline", str(a), "--db", str(b), "--out", str(out), "--format", "markdown")
    assert r.stdout.startswith("**FAIL") and "| regressed |" in r.stdout
    # at 80 columns the p column stays
    r = nettune("check", "s", "--baseline", str(a), "--db", str(b), "--out", str(out), env={"COLUMNS": "80"})
    head = next(ln for ln in r.stdout.splitlines() if " p " in f" {ln} " or ln.strip().endswith(" p"))
    assert head
    # an error still writes the JSON, with exit status 2
    r = nettune("check", "s", "--baseline", str(tmp_path / "none.db"), "--db", str(b), "--out", str(out))
    assert r.returncode == 2 and json.loads(out.read_text()) == {"verdict": "error", "error": r.stderr.strip().removeprefix("error: "),
                                                                   "exit_code": 2}


def test_check_refuses_an_untestable_baseline_before_rerunning(tmp_path):
    from conftest import nettune

    base = tmp_path / "base.db"
    with StoreWriter(base) as s:
        build(s, "never-run", [({"q": 1}, 10.0)], runs=1)
    study = tmp_path / "never-run.toml"
    study.write_text('name = "never-run"\n[target]\nkind = "lab"\n[workload]\nduration = 1\n[repeat]\nruns = 3\n')
    r = nettune("check", str(study), "--baseline", str(base), "--db", str(tmp_path / "new.db"), "--out", str(tmp_path / "c.json"))
    assert r.returncode == 2 and "no point with 2 counted runs" in r.stderr and "rerunning" not in r.stdout
    assert not (tmp_path / "new.db").exists()  # nothing was run
    single = tmp_path / "single.toml"
    single.write_text('name = "never-run"\n[target]\nkind = "lab"\n[workload]\nduration = 1\n')
    with StoreWriter(base) as s:
        build(s, "never-run", [({}, 10.0)], runs=3, sweep={})
    r = nettune("check", str(single), "--baseline", str(base), "--db", str(tmp_path / "new.db"), "--out", str(tmp_path / "c.json"))
    assert r.returncode == 2 and "[repeat] runs = 1" in r.stderr and not (tmp_path / "new.db").exists()


def test_compare_matches_like_with_like_or_refuses(tmp_path):
    from nettune.analysis.compare import within_study
    from nettune.errors import NettuneError

    with StoreWriter(tmp_path / "r.db") as store:
        pts = [({"queues": q, "mult": m, "streams": q * m}, 10.0 * q * (1.5 if m == 2 else 1)) for q in (1, 2) for m in (1, 2)]
        build(store, "q", pts, sweep={"queues": [1, 2], "mult": [1, 2], "streams": "{queues} * {mult}"}, noise=0.02)
        data = load(store, "q")
    overall, each = within_study(data, {"queues": "1"}, {"queues": "2"})
    assert [n for n, _ in each] == ["mult=1", "mult=2"] and overall.matched == ["mult=1", "mult=2"]
    assert overall.verdict == "faster" and overall.ratio == pytest.approx(2.0, rel=0.03)
    assert all(c.family == 2 and c.verdict == "faster" for _, c in each)  # each configuration: Bonferroni over the 2
    assert "over the 2 matched configurations (mult=1; mult=2" in overall.text
    assert overall.mean_a == pytest.approx((10.0 + 15.0) / 2 * 1e9, rel=0.03)  # the mean of the configurations' means (bit/s)
    with pytest.raises(NettuneError, match=r"differ in mult \(1, 2\).*name those parameters"):
        within_study(data, {"queues": "1"}, {"queues": "2", "mult": "2"})


def test_target_margin_not_reached_is_said_per_point(tmp_path):
    from nettune.studyfile.models import Study
    from nettune.engines.result import TestResult as Result

    spec = {"name": "ad", "target": {"kind": "local"}, "sweep": {"q": [1, 2]},
            "repeat": {"min_runs": 3, "max_runs": 8, "target_margin": 0.05}}
    with StoreWriter(tmp_path / "r.db") as s:
        sid = s.begin_study(Study.model_validate(spec), 'name = "ad"\n', "ad.toml")
        rng = np.random.default_rng(2)
        for i, (q, cv, n) in enumerate([(1, 0.01, 3), (2, 0.2, 8)]):
            pid = s.add_point(sid, i, {"q": q})
            for r in range(n):
                bps = 10e9 * (1 + rng.normal(0, cv))
                s.add_run(sid, pid, r, False, Result(engine="iperf3", tool_version="3.16", receiver_bps=bps, sender_bps=bps))
        s.finish_study(sid, "done")
        res = analyze(load(s, "ad"))
    got = {m.label: m for m in res.margins}
    assert got["q=1"].reached and not got["q=2"].reached and got["q=2"].runs_needed > 8
    line = next(h for h in res.headline if h.startswith("target_margin"))
    assert "not reached at 1 of 2 point(s) (max_runs = 8): q=2:" in line and "spread too much" in line
    assert not any("set [repeat] target_margin" in f for f in res.findings)  # it is set: never advised again


def test_two_bands_are_found_and_tied_to_the_client_cpu(tmp_path):
    from nettune.studyfile.models import Study
    from nettune.engines.result import TestResult as Result

    with StoreWriter(tmp_path / "r.db") as s:
        sid = s.begin_study(Study.model_validate({"name": "b", "target": {"kind": "local"}, "sweep": {"q": [1, 2]}}), 'name = "b"\n', "b.toml")
        rng = np.random.default_rng(4)
        for i, q in enumerate((1, 2)):
            pid = s.add_point(sid, i, {"q": q})
            for r in range(10):
                high = q == 1 and r % 2 == 0  # q=1: two regimes, with the client's CPU; q=2: one
                g = (19.0 if high else 12.0) * (1 + rng.normal(0, 0.03))
                s.add_run(sid, pid, r, False, Result(engine="iperf3", tool_version="3.16", receiver_bps=g * 1e9, sender_bps=g * 1e9,
                                                     cpu_client=95.0 if high else 60.0 + rng.normal(0, 3), cpu_server=50.0 + rng.normal(0, 3)))
        s.finish_study(sid, "done")
        res = analyze(load(s, "b"))
    (b,) = res.bands
    assert b.label == "q=1" and [x.runs for x in b.bands] == [5, 5] and b.cpu["client"] > 0.9
    assert "two bands" in b.text and "client's CPU" in b.text and "iperf3 -A" in b.text
    row = next(r for r in res.points if r.point == {"q": 1})
    assert row.bands and "5 runs" in row.bands


def test_a_command_study_speaks_of_time_and_cpu_not_throughput(tmp_path):
    from nettune.studyfile.models import Study
    from nettune.engines.result import TestResult as Result

    spec = {"name": "build", "target": {"kind": "local"}, "workload": {"engine": "command", "run": "make"},
            "sweep": {"n": [1, 2, 4]}}
    with StoreWriter(tmp_path / "r.db") as s:
        sid = s.begin_study(Study.model_validate(spec), 'name = "build"\n', "build.toml")
        rng = np.random.default_rng(1)
        for i, (n, wall) in enumerate([(1, 12.0), (2, 14.0), (4, 16.3)]):
            pid = s.add_point(sid, i, {"n": n})
            for r in range(4):
                w = wall * (1 + rng.normal(0, 0.02))
                s.add_run(sid, pid, r, False, Result(engine="command", ok=True, duration=w, cpu_host=10.0 * n + rng.normal(0, 0.5),
                                                     extra={"command": {"wall_s": w, "cpu_s": w * n, "exit_code": 0}}))
        s.finish_study(sid, "done")
        res = analyze(load(s, "build"))
    text = "\n".join(res.findings + res.headline)
    assert "throughput" not in text and "Gbit/s" not in text
    eff = res.parameters[0].effect
    assert eff.mattered and f"{eff.change_pct:+.1f}% from n=1 to n=4" in eff.text and "ANOVA across 3 levels" in eff.text
    assert eff.change_pct == pytest.approx((16.3 / 12.0 - 1) * 100, abs=3)  # as compare states it: b / a - 1


def test_the_band_test_holds_its_level_on_one_band():
    """Runs of one normal (or, on the log scale it uses, lognormal) band are called two bands
    at most 5% of the time; two clear bands of 12 runs are found."""
    from nettune.analysis.modes import p_value, split_stat

    for n in (6, 8, 12):
        share, _ = split_stat(np.log(draw("lognormal", (3000,), n, 0.25)))
        assert np.mean([p_value(float(s), n) < 0.05 for s in share]) <= 0.06  # 0.05 up to the simulation's own error
    two = np.where(RNG.random((500, 12)) < 0.5, 12.0, 19.0) * (1 + RNG.normal(0, 0.03, (500, 12)))
    share, _ = split_stat(np.log(two))
    assert np.mean([p_value(float(s), 12) < 0.05 for s in share]) >= 0.8
