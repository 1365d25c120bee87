"""Builders of synthetic studies written into a real results database, shared by the
analysis, report, table and export tests (a test file never imports another)."""
import random
from typing import Any, Callable

from nettune.engines.result import Interval, StreamResult
from nettune.plan.pairs import mesh_rounds
from nettune.engines.result import TestResult as Result  # not "Test*": pytest would try to collect it
from nettune.studyfile.models import Study
from nettune.store.writer import StoreWriter

Cpu = Callable[[dict, float], tuple[float, float, float]]


def build(store: StoreWriter, name: str, points: list[tuple[dict[str, Any], float]], *, runs: int = 3, noise: float = 0.01,
          seed: int = 0, sweep: dict | None = None, engine: str = "iperf3", version: str = "3.16",
          cpu: Cpu = lambda p, g: (50.0, 60.0, 20.0), stream_skew: float = 0.0, warmup: int = 0, failed: int = 0,
          facts: dict | None = None) -> int:
    """Write a synthetic study: `points` are (params, true Gbit/s); each run adds gaussian noise."""
    if sweep is None:
        sweep = {k: list(dict.fromkeys(p[k] for p, _ in points)) for k in points[0][0]}
    study = Study.model_validate({"name": name, "target": {"kind": "local"}, "sweep": sweep})
    sid = store.begin_study(study, f'name = "{name}"\n# synthetic\n', f"{name}.toml")
    store.add_facts(sid, facts or {"client": {"cpu_count": 8, "kernel": "Linux 6.1"}})
    rng = random.Random(seed)
    for i, (params, gbps) in enumerate(points):
        pid = store.add_point(sid, i, params)
        n_streams = int(params.get("parallel", params.get("streams", 1)))
        for r in range(warmup + runs + failed):
            bps = gbps * 1e9 * (1 + rng.gauss(0, noise))
            if r < warmup:
                bps *= 5  # a warm-up that would distort every mean if it were counted
            ok = r < warmup + runs
            weights = [1 + stream_skew * k for k in range(n_streams)]
            streams = [StreamResult(id=k, receiver_bps=bps * w / sum(weights), sender_bps=bps * w / sum(weights)) for k, w in enumerate(weights)]
            c, s, h = cpu(params, gbps)
            res = Result(
                engine=engine, tool_version=version, ok=ok, error=None if ok else "connection refused",
                receiver_bps=bps if ok else None, sender_bps=bps if ok else None, duration=5.0,
                cpu_client=c, cpu_server=s, cpu_host=h, streams=streams if ok else [],
                intervals=[Interval(start=t, end=t + 1.0, bps=bps * (1 + rng.gauss(0, 0.02))) for t in range(5)] if ok else [],
            )
            store.add_run(sid, pid, r, r < warmup, res, {})
    store.finish_study(sid, "done")
    return sid


QUEUES = [1, 2, 4, 8, 16, 32, 40]
STUDY_A = [10, 19, 35, 55, 72, 75, 77]


def study_a(store: StoreWriter, name: str = "A") -> int:
    # queues x streams multiplier, streams derived: host CPU climbs faster than throughput
    pts = [({"queues": q, "mult": m, "streams": q * m}, g * (1 + 0.01 * m)) for q, g in zip(QUEUES, STUDY_A) for m in (1, 2)]
    host = {1: 4.0, 2: 6.0, 4: 10.0, 8: 14.0, 16: 30.0, 32: 60.0, 40: 75.0}
    return build(store, name, pts, sweep={"queues": QUEUES, "mult": [1, 2], "streams": "{queues} * {mult}"},
                 cpu=lambda p, g: (40.0 + p["queues"], 50.0 + p["queues"], host[p["queues"]]))


# a sweep of parallel streams that peaks, then declines
DP = [1, 2, 8, 10, 12, 20]
DG = [33, 61, 242, 288, 225, 163]


HOSTS = ["h1", "h2", "h3", "h4"]  # the mesh studies (issue 17)


def build_mesh(store: StoreWriter, name: str = "mesh", runs: int = 2, slow: str = "h3->h4", factor: float = 0.62,
               parallel: bool = True, noise: tuple[float, ...] = (0.0, 0.01, -0.01)) -> int:
    """A 4-host mesh, `runs` repeats: every link 10 Gbit/s but `slow` (x factor)."""
    study = Study.model_validate({"name": name, "target": {"kind": "lab", "hosts": HOSTS},
                                  "workload": {"pairs": "mesh", "parallel_pairs": parallel}})
    sid = store.begin_study(study, f'name = "{name}"\n', f"{name}.toml")
    pid = store.add_point(sid, 0, {})
    rounds = mesh_rounds(HOSTS)
    for run in range(runs):
        for r, rnd in enumerate(rounds):
            results = []
            for k, (a, b) in enumerate(rnd):
                label = f"{a}->{b}"
                bps = 10e9 * (factor if label == slow else 1.0) * (1 + noise[(run + k) % len(noise)])
                results.append(Result(engine="iperf3", tool_version="3.12", receiver_bps=bps, sender_bps=bps, duration=1.0,
                                      extra={"pair": label, "server": a, "client": b, "round": r, "round_pairs": len(rnd),
                                             "parallel": parallel}))
            if parallel:
                total = sum(x.total_bps or 0.0 for x in results)
                for x in results:
                    x.pair.round_total_bps = total
            store.add_runs(sid, pid, run, False, results)
    store.finish_study(sid, "done")
    return sid
