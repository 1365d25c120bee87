"""Single runs (issue 12): a shape seen on one run per point is worded as a guess, and
`analyze` names the repeats that would settle the closest calls, sized from the spread
of similar points when there is one."""
from pathlib import Path

import pytest

from nettune.analysis.analyze import analyze
from nettune.analysis.data import load
from nettune.analysis.repeats import runs_needed
from nettune.store.writer import StoreWriter

from study_builders import DG, DP, build


@pytest.fixture
def store(tmp_path: Path) -> StoreWriter:
    s = StoreWriter(tmp_path / "r.db")
    yield s
    s.close()


def test_a_single_run_peak_is_tentative(store):
    # a 7% single-run difference: 100 at parallel=8, 93 at parallel=16
    build(store, "once", [({"parallel": p}, g) for p, g in zip([1, 2, 4, 8, 16], [40, 70, 90, 100, 93])], runs=1, noise=0.0)
    res = analyze(load(store, "once"))
    (c,) = res.parameters[0].curves
    assert c.shape == "peak"
    # one parameter swept with single runs: no design noise either, so only a description
    assert c.text.startswith("single runs, no noise estimate: looks like a peak at parallel=8")
    assert c.text.endswith("cannot tell it from noise without repeats") and c.p_value is None
    eff = res.parameters[0].effect
    assert not eff.tested and not eff.mattered and eff.text.startswith("parallel: cannot tell without repeats")
    calls = {tuple(r.labels): r for r in res.repeats}
    assert ("parallel=8", "parallel=16") in calls  # the peak against the value after it
    r = calls[("parallel=8", "parallel=16")]
    assert r.runs == 3 and r.cv is None and "no point has repeats yet" in r.text
    assert any(f.startswith("to settle parallel=8 vs parallel=16") for f in res.findings)


def test_repeats_are_sized_from_similar_points(store):
    # single runs at the peak, but repeats elsewhere (3% spread) tell how many runs the call needs
    pts = [({"parallel": p}, g) for p, g in zip([1, 2, 4, 8, 16], [40, 70, 90, 100, 93])]
    sid = build(store, "mixed", pts[:3], runs=4, noise=0.03, seed=4, sweep={"parallel": [1, 2, 4, 8, 16]})
    build(store, "tmp", pts[3:], runs=1, noise=0.0)
    # move the single-run points into the first study: one study, some points repeated
    store.db.execute("UPDATE points SET study_id=?, idx=idx+3 WHERE study_id=(SELECT id FROM studies WHERE name='tmp')", (sid,))
    store.db.execute("UPDATE runs SET study_id=? WHERE study_id=(SELECT id FROM studies WHERE name='tmp')", (sid,))
    store.db.commit()
    res = analyze(load(store, "mixed"))
    r = next(r for r in res.repeats if r.labels == ["parallel=8", "parallel=16"])
    assert r.cv is not None and 0.005 < r.cv < 0.08 and "similar points" in r.cv_from
    assert r.runs == runs_needed(r.diff_pct / 100, r.cv) and 2 <= r.runs <= 10


def test_settled_calls_ask_for_nothing(store):
    build(store, "D", [({"parallel": p}, g) for p, g in zip(DP, DG)], runs=3, noise=0.01)
    res = analyze(load(store, "D"))
    assert res.repeats == []  # every call is significant already
    (c,) = res.parameters[0].curves
    assert not c.text.startswith("single runs")


def test_runs_needed_grows_as_the_difference_shrinks():
    assert runs_needed(0.10, 0.03) == 3
    assert runs_needed(0.03, 0.03) > runs_needed(0.05, 0.03) > runs_needed(0.10, 0.03)
    assert runs_needed(0.001, 0.05) is None  # beyond 30 runs: not settled, and not "equal" either
