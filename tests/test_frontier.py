"""Efficiency verdicts a reader can act on (issue 12): on a study-A-shaped sweep (queues x
streams: a cheap low-throughput corner, saturation, hypervisor CPU that keeps rising) the
analysis recommends the knee of the throughput-vs-cost frontier, never the cheap corner, and
names where extra CPU buys nothing; cost curves say where CPU climbs."""
import json
from pathlib import Path

import pytest

from nettune.analysis.analyze import analyze
from nettune.analysis.data import load
from nettune.analysis.frontier import FrontierPoint, knee, pareto
from nettune.engines.result import TestResult as Result
from nettune.studyfile.models import Study
from nettune.store.writer import StoreWriter

from conftest import nettune

QUEUES = [1, 2, 4, 8, 16, 32]
STREAMS = [1, 4, 16]
BASE = {1: 29.0, 2: 42.0, 4: 55.0, 8: 64.0, 16: 68.0, 32: 69.5}  # saturates from 8 queues on
PER_STREAMS = {1: 0.80, 4: 0.95, 16: 1.0}


def gbps(q: int, s: int) -> float:
    return BASE[q] * PER_STREAMS[s]


def build_sweep(store: StoreWriter, name: str = "A2", runs: int = 3) -> int:
    """Study-A-shaped: server CPU near zero at the corner (1 queue, 1 stream), hypervisor CPU
    (% of the hypervisor's 32 cores) rising with queues long after throughput stopped."""
    study = Study.model_validate({"name": name, "target": {"kind": "local"}, "sweep": {"queues": QUEUES, "streams": STREAMS}})
    sid = store.begin_study(study, f'name = "{name}"\n', f"{name}.toml")
    store.add_facts(sid, {"client": {"cpu_count": 8}, "pve": {"cpu_count": 32}})
    i = 0
    for q in QUEUES:
        for s in STREAMS:
            pid = store.add_point(sid, i, {"queues": q, "streams": s})
            i += 1
            for r in range(runs):
                jitter = 1 + 0.01 * ((r % 3) - 1)
                g = gbps(q, s) * jitter
                res = Result(engine="iperf3", tool_version="3.16", receiver_bps=g * 1e9, sender_bps=g * 1e9, duration=5.0,
                             cpu_client=5.0 + 0.9 * g, cpu_server=(0.5 + 0.5 * q * s) * jitter, cpu_host=3.0 + q * 1.2,
                             cpu_extra={"hypervisor:pve": (3.0 + 1.5 * q + 0.3 * s) * jitter})
                store.add_run(sid, pid, r, False, res, {})
    store.finish_study(sid, "done")
    return sid


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "r.db"
    with StoreWriter(path) as s:
        build_sweep(s)
        build_sweep(s, "once", runs=1)
    return path


def analysis(db: Path, name: str = "A2", **kw):
    with StoreWriter(db) as s:
        return analyze(load(s, name), **kw)


def test_the_cheap_corner_wins_the_ratio_but_is_never_recommended(db):
    res = analysis(db)
    eff = {e.cost: e for e in res.efficiency}
    assert {"cpu_client", "cpu_server", "cpu_host", "hypervisor:pve"} <= set(eff)
    server = eff["cpu_server"]
    # what the old verdict did: the most Gbit/s per server core is the corner (1 queue, 1 stream)
    ratio = max(server.frontier, key=lambda p: p.gbps / p.cost)
    assert ratio.point == {"queues": 1, "streams": 1} and server.cheapest.point == ratio.point
    best = max(r.mean for r in res.points)
    for e in eff.values():
        assert e.point != {"queues": 1, "streams": 1}
        assert e.gbps >= 0.8 * best - 1e-9 and e.share_of_best == pytest.approx(e.gbps / e.best.gbps)
    # the knee of host CPU: 8 queues x 16 streams, 64 Gbit/s for 1 core (study A's authors' answer)
    host = eff["cpu_host"]
    assert host.point == {"queues": 8, "streams": 16}
    assert host.gbps == pytest.approx(64.0, rel=0.01) and host.cost_value == pytest.approx((3 + 8 * 1.2) / 100 * 8, rel=0.01)
    assert "recommended queues=8, streams=16: 64.0 Gbit/s" in host.text and "= 13% of 8 cores" in host.text
    # server CPU grows with streams: 16 queues x 4 streams is both faster (64.6) and cheaper than 8 x 16, which is
    # off the frontier; the knee is 8 x 4 (60.8 Gbit/s, 87% of the best, for a sixth of a core): 16 x 4 lies barely
    # farther above the chord (0.77 vs 0.75) for twice the CPU
    assert server.point == {"queues": 8, "streams": 4} and "queues=8, streams=16" in server.dominated
    assert server.cost_value == pytest.approx((0.5 + 0.5 * 32) / 100, rel=0.01)


def test_frontier_is_pareto_with_marginal_gbps_per_core(db):
    res = analysis(db)
    hyp = next(e for e in res.efficiency if e.cost == "hypervisor:pve")
    front = hyp.frontier
    assert [p.cost for p in front] == sorted(p.cost for p in front)
    assert all(b.gbps > a.gbps for a, b in zip(front, front[1:]))
    labels = {p.label for p in front}
    # every point off the frontier is beaten on both counts by a frontier point
    for p in res.points:
        if p.label not in labels:
            assert p.label in hyp.dominated
    for a, b in zip(front, front[1:]):
        assert b.marginal == pytest.approx((b.gbps - a.gbps) / (b.cost - a.cost))
    assert hyp.machine_cores == 32  # % of the hypervisor's 32 cores, converted to cores


def test_it_names_where_extra_cpu_buys_nothing(db):
    res = analysis(db)
    hyp = next(e for e in res.efficiency if e.cost == "hypervisor:pve")
    w = hyp.wasted
    assert w is not None and w.gain_pct < 10 and w.cost_pct > w.gain_pct
    assert w.to_point == {"queues": 32, "streams": 16}
    assert f"from {w.label} on, +{w.cost_pct:.0f}% hypervisor pve CPU for +{w.gain_pct:.0f}% throughput" in w.text
    assert any("extra hypervisor pve CPU buys almost nothing" in f for f in res.findings)


def test_share_moves_the_recommendation(db):
    low, high = analysis(db, share=0.5), analysis(db, share=0.99)
    s_low = next(e for e in low.efficiency if e.cost == "cpu_server")
    s_high = next(e for e in high.efficiency if e.cost == "cpu_server")
    assert s_high.share_of_best >= 0.99 and s_high.point == {"queues": 32, "streams": 16}
    assert s_low.cost_value <= s_high.cost_value and s_low.share == 0.5


def test_cost_curves_say_where_cpu_climbs(db):
    res = analysis(db)
    queues = next(p for p in res.parameters if p.name == "queues")
    hyp = [c for c in queues.cost_curves if c.cost == "hypervisor:pve" and c.fixed == {"streams": 16}]
    assert len(hyp) == 1 and hyp[0].shape == "climbing" and hyp[0].climbs_from is not None
    # from 4 to 8 queues hypervisor CPU grows +43% while throughput gains +16%; below, they grow together
    assert hyp[0].climbs_from == 4
    assert any(f.startswith("hypervisor pve CPU climbs faster than throughput along queues (streams=1: from queues=2; streams=4: from queues=2; streams=16: from queues=4)") for f in res.findings)


def test_knee_and_pareto_on_hand_made_points():
    pts = [FrontierPoint({"p": i}, str(i), g, c, 3) for i, (g, c) in enumerate([(29, 0.02), (50, 0.3), (64, 0.5), (66, 1.5), (60, 2.0)])]
    front = pareto(pts)
    assert [p.point["p"] for p in front] == [0, 1, 2, 3]  # (60, 2.0) is slower and dearer than (66, 1.5)
    assert knee(front, 0.8 * 66).point == {"p": 2}
    assert knee(front, 0.99 * 66).point == {"p": 3}


def test_single_runs_are_tentative_and_repeats_are_suggested(db):
    res = analysis(db, "once")
    assert all(e.tentative and e.text.startswith("single runs, tentative:") for e in res.efficiency)
    assert res.repeats and res.repeats[0].runs == 3 and "no point has repeats yet" in res.repeats[0].text


def test_analyze_json_has_the_new_verdicts(db):
    p = nettune("analyze", "A2", "--db", str(db), "--format", "json", "--share", "0.9", check=True)
    out = json.loads(p.stdout)
    server = next(e for e in out["efficiency"] if e["cost"] == "cpu_server")
    assert server["share"] == 0.9 and server["share_of_best"] >= 0.9 and server["frontier"] and server["unit"] == "cores"
    assert out["share"] == 0.9 and out["interval"] == "Student's t" and out["cpu_units"]["server"] == "% of 1 core"
    assert "cost_curves" in out["parameters"][0] and "repeats" in out
    bad = nettune("analyze", "A2", "--db", str(db), "--share", "1.5")
    assert bad.returncode != 0 and "--share 1.5" in bad.stderr and "Traceback" not in bad.stderr


def test_watts_get_a_frontier_of_their_own(tmp_path):
    """A machine's measured power (extra["energy"], probes/powercap.py) is a cost like CPU."""
    study = Study.model_validate({"name": "w", "target": {"kind": "local"}, "sweep": {"streams": [1, 2, 4, 8]}})
    with StoreWriter(tmp_path / "w.db") as s:
        sid = s.begin_study(study, 'name = "w"\n', "w.toml")
        for i, (streams, g, w) in enumerate([(1, 20.0, 40.0), (2, 36.0, 44.0), (4, 40.0, 60.0), (8, 41.0, 90.0)]):
            pid = s.add_point(sid, i, {"streams": streams})
            for r in range(3):
                s.add_run(sid, pid, r, False, Result(engine="iperf3", receiver_bps=g * 1e9 * (1 + 0.01 * r),
                                                      extra={"energy": {"machine": {"joules": {"package-0": w * 5}, "watts": w + r}}}))
        res = analyze(load(s, "w"))
    (watts,) = [e for e in res.efficiency if e.cost == "watts:machine"]
    assert watts.unit == "W" and watts.point == {"streams": 2} and watts.cost_value == pytest.approx(45.0)
    assert watts.wasted is not None and "machine power" in watts.wasted.text and "Gbit/s per extra W" in watts.wasted.text


def test_report_takes_share_like_analyze(db, tmp_path):
    """`report --share` moves the report's recommendation and its chart's share line as
    `analyze --share` does; a bad share is refused the same way, before anything is written."""
    nettune("report", "A2", "--db", str(db), "--out", str(tmp_path / "half"), "--share", "0.5", check=True)
    nettune("report", "A2", "--db", str(db), "--out", str(tmp_path / "default"), check=True)
    half, default = (tmp_path / "half" / "report.md").read_text(), (tmp_path / "default" / "report.md").read_text()
    assert "frontier among points reaching 50% of the best" in half and "reaching 80%" not in half
    assert "frontier among points reaching 80% of the best" in default
    assert "50% of the best" in (tmp_path / "half" / "charts" / "frontier.svg").read_text()  # the chart's dotted line
    bad = nettune("report", "A2", "--db", str(db), "--out", str(tmp_path / "bad"), "--share", "1.5")
    assert bad.returncode != 0 and "--share 1.5" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "bad").exists()
