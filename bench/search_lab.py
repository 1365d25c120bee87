"""bench/search part (b): a real lab sweep (queues x streams x MTU x socket buffer), its full
grid run with 3 runs per point (TCP, iperf3), then each method replayed over seeds on the
grid's stored runs: each measurement of a configuration is one of its stored runs drawn at
random (so the search meets the lab's real noise, and every seed costs no lab time).
Needs root (the lab creates network namespaces).

`peak` is measured on its own lab grid: streams (-P) over PEAK_P at the lab's defaults,
study D's question. On the 4-value streams slice of the main grid (12 tests) 25% is 3
tests, fewer than any ordered search's first pass (it reached the best after 4 of them in
every seed): that measured the slice's length, not the method.

`--grid-db PATH` keeps both grids' stored runs in PATH (a nettune database) and, when PATH
holds them already, replays from it without the lab: the figures can be recomputed, and
the methods changed and replayed, over the same measurements.

What the replay cannot reproduce: halving's short tests are drawn from full-length runs
(charged at their short cost), which favours halving; the order of the tests (drift,
warm caches) is the grid's, not the search's."""
from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from scipy import stats

from nettune import parse_study
from nettune.run.study import run_study
from nettune.store.writer import StoreWriter
from nettune.search.ledger import Ledger
from nettune.search.loop import end_start, winner_before
from nettune.search.objective import Observation, Reading, of_record
from nettune.search.session import plan_search
from nettune.search.simulate import sim_study_text

SWEEP: dict[str, list[Any]] = {"queues": [1, 2], "p": [1, 2, 4, 8], "mtu": [1500, 9000], "w": ["32K", "192K"]}
PEAK_SWEEP: dict[str, list[Any]] = {"p": [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24]}
RUNS = 3
FRACTION = 0.25


def grid_text(duration: int, sweep: dict[str, list[Any]], name: str) -> str:
    target = "".join(f'{k} = "{{{k}}}"\n' for k in ("mtu", "queues") if k in sweep)
    window = 'window = "{w}"\n' if "w" in sweep else ""
    return (f'name = "{name}"\n[target]\nkind = "lab"\nsubnet = "198.19.233.0/24"\n{target}'
            f'[workload]\nduration = {duration}\nparallel = "{{p}}"\n{window}port = 5399\n'
            "[sweep]\n" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in sweep.items()) + f"\n[repeat]\nruns = {RUNS}\n")


def key(values: dict[str, Any], names: list[str]) -> str:
    return json.dumps([str(values[k]) for k in names])


class Replay:
    """The search's Measurer over the grid's stored runs."""

    def __init__(self, plan: Any, runs: dict[str, list[Any]], names: list[str], seed: int):
        self.plan, self.runs, self.names = plan, runs, names
        self.rng = random.Random(seed)
        self.now = None

    def switch_key(self, cfg: Any) -> Any:
        return None

    def current(self) -> Any:
        return self.now

    def measure(self, cfg: Any, seq: int) -> Observation:
        self.now = cfg
        stored = self.runs[key(dict(cfg.values), self.names)]
        full = self.plan.space.full_duration
        frac = (cfg.duration / full) if cfg.duration is not None and full else 1.0
        if not stored:  # every grid run of this point failed: so does the replayed test
            return Observation(cfg, seq, {}, None, frac, frac * (full or 1), 0)
        metrics = Reading.of(self.plan.objective, [self.rng.choice(stored)], of_record).metrics()
        return Observation(cfg, seq, metrics, self.plan.objective.value(metrics), frac, frac * (full or 1), 0)


def run_grid(duration: int, sweep: dict[str, list[Any]], name: str, db: Path | None) -> tuple[dict[str, list[Any]], float | None]:
    """The grid's good runs by point, and the seconds it took (None: read back from `db`)."""
    names = list(sweep)
    took = None
    with tempfile.TemporaryDirectory() as d:
        path = db or Path(d) / "grid.db"
        with StoreWriter(path) as store:
            done = [s for s in store.studies() if s["name"] == name and s["status"] == "done"]
            if done:
                recs = [r for r in store.runs(done[-1]["id"]) if not r.warmup and r.ok]
            else:
                t0 = time.monotonic()
                out = run_study(parse_study(grid_text(duration, sweep, name)), store)
                if out.status != "done":
                    raise SystemExit(f"the lab grid did not finish: {out.status}")
                recs = [r for r in store.runs(out.study_id) if not r.warmup and r.ok]
                took = time.monotonic() - t0
    runs: dict[str, list[Any]] = {}
    for r in recs:
        runs.setdefault(key(r.point, names), []).append(r)
    want = 1
    for v in sweep.values():
        want *= len(v)
    if len(runs) < 0.9 * want:  # a grid with holes would make any search look good
        raise SystemExit(f"the lab grid measured only {len(runs)} of its {want} points (failed tests or a refused study: run it with `nettune run` to see why)")
    return runs, took


def within_noise_floor(values: dict[str, list[float]], best_k: str) -> float:
    """The lowest mean within noise of the grid's best: of the points Welch's test (3 runs
    each, p >= 0.05) cannot tell from the best, the lowest mean; every point at least that
    good is within noise too. Welch's test alone, pair by pair, is not monotone: on one
    grid here it called 36.64 Gbit/s (runs 35.1, 37.4, 37.4) within noise of 39.85 and
    36.77 (37.5, 37.1, 35.7) not, and a winner better than a point within noise is no miss."""
    best = values[best_k]
    same = [statistics.mean(v) for k, v in values.items()
            if k == best_k or stats.ttest_ind(v, best, equal_var=False).pvalue >= 0.05]
    return min(same)


GRIDS = ((("tpe", "halving"), SWEEP, "nt-bench-search", "queues x streams x MTU x buffer"),
         (("peak",), PEAK_SWEEP, "nt-bench-search-peak", "streams (-P) at the lab's defaults"))


def lab(duration: int, seeds: int, db: Path | None = None) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {"tpe": [], "halving": [], "peak": []}
    lines = []
    for methods, sweep, name, label in GRIDS:
        names = list(sweep)
        runs, took = run_grid(duration, sweep, name, db)
        values = {k: [float(r.total_bps or 0) for r in v] for k, v in runs.items()}
        best_k = max(values, key=lambda k: statistics.mean(values[k]))
        grid_tests = len(values) * RUNS
        how = f"in {took:.0f} s" if took is not None else f"read back from {db}"
        floor = within_noise_floor(values, best_k)
        print(f"\n(b) lab: the grid ({' x '.join(f'{k} {v}' for k, v in sweep.items())}), {len(values)} points x {RUNS} runs of {duration} s "
              f"{how}; best {dict(zip(names, json.loads(best_k)))}: {statistics.mean(values[best_k]) / 1e9:.2f} Gbit/s; within noise of it: "
              f"{sum(statistics.mean(v) >= floor for v in values.values())} points, from {floor / 1e9:.2f} Gbit/s")


        def near(cfg: Any) -> bool:
            k = key(dict(cfg.values), names)
            return k in values and statistics.mean(values[k]) >= floor

        for method in methods:
            for seed in range(seeds):
                rows[method].append(replay(method, seed, sweep, runs, duration, grid_tests, near))
        lines.append((label, grid_tests, methods))
    head = f"{'lab':44} {'tests':>5}  " + "  ".join(f"{m:>22}" for m in rows)
    print(head)
    print("-" * len(head))
    for label, grid_tests, methods in lines:
        cells = []
        for m, rs in rows.items():
            got = [r["reached"] / r["points"] for r in rs if r["reached"] is not None]
            cell = (f"{statistics.median(got):.0%}" if got else "-") + f" | {sum(r['success'] for r in rs)}/{len(rs)}"
            cells.append(cell if m in methods else "")
        print(f"{label:44} {grid_tests:>5}  " + "  ".join(f"{c:>22}" for c in cells))
    return rows


def replay(method: str, seed: int, sweep: dict[str, list[Any]], runs: dict[str, list[Any]], duration: int, grid_tests: int,
           near: Any) -> dict:
    """One seeded search replayed over the grid's runs: when its best so far first was
    within noise of the grid's best, and whether its winner is."""
    names = list(sweep)
    probe = plan_search(parse_study(t := sim_study_text(sweep, {"method": method, "seed": seed, "budget": 10_000, "objective": "total"},
                                                        duration=duration)), t)
    budget = max(int(FRACTION * grid_tests), 4) + probe.setting.confirm + int(probe.reserve + 0.999)
    text = sim_study_text(sweep, {"method": method, "seed": seed, "budget": budget, "objective": "total"}, duration=duration)
    plan = plan_search(parse_study(text), text)
    m = Replay(plan, {key(dict(c.values), names): runs.get(key(dict(c.values), names), []) for c in plan.space.grid}, names, seed)
    led = Ledger(plan.objective)
    plan.loop(m, led).run()
    cands = plan.strategy.candidates(led)
    reached, spent = None, 0.0
    for o in led.obs:
        spent += o.cost
        lead = led.leader([c for c in cands if led.first_seq(c) <= o.seq], before=o.seq + 1)
        if lead is not None and near(lead):
            reached = spent
            break
    start = end_start(led, plan.space.baseline, plan.setting.confirm)
    winner = winner_before(plan.strategy, led, start, plan.setting.confirm, plan.space.baseline)
    return {"surface": -1, "method": method, "seed": seed, "points": grid_tests, "reached": reached,
            "success": winner is not None and near(winner), "violated": False, "tests": led.spent(), "budget": budget,
            "winner": None if winner is None else dict(winner.values)}
