"""bench/search part (b): a real lab sweep (queues x streams x MTU x socket buffer), its full
grid run with 3 runs per point (TCP, iperf3), then each method replayed over seeds on the
grid's stored runs: each measurement of a configuration is one of its stored runs drawn at
random (so the search meets the lab's real noise, and every seed costs no lab time).
Needs root (the lab creates network namespaces).

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
RUNS = 3
FRACTION = 0.25


def grid_text(duration: int) -> str:
    return ('name = "nt-bench-search"\n[target]\nkind = "lab"\nsubnet = "198.19.233.0/24"\nmtu = "{mtu}"\nqueues = "{queues}"\n'
            f'[workload]\nduration = {duration}\nparallel = "{{p}}"\nwindow = "{{w}}"\nport = 5399\n'
            "[sweep]\n" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in SWEEP.items()) + f"\n[repeat]\nruns = {RUNS}\n")


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


def run_grid(duration: int) -> tuple[dict[str, list[Any]], float]:
    names = list(SWEEP)
    with tempfile.TemporaryDirectory() as d:
        t0 = time.monotonic()
        with StoreWriter(Path(d) / "grid.db") as store:
            out = run_study(parse_study(grid_text(duration)), store)
            if out.status != "done":
                raise SystemExit(f"the lab grid did not finish: {out.status}")
            recs = [r for r in store.runs(out.study_id) if not r.warmup and r.ok]
    runs: dict[str, list[Any]] = {}
    for r in recs:
        runs.setdefault(key(r.point, names), []).append(r)
    want = 1
    for v in SWEEP.values():
        want *= len(v)
    if len(runs) < 0.9 * want:  # a grid with holes would make any search look good
        raise SystemExit(f"the lab grid measured only {len(runs)} of its {want} points (failed tests or a refused study: run it with `nettune run` to see why)")
    return runs, time.monotonic() - t0


def lab(duration: int, seeds: int) -> dict[str, list[dict]]:
    names = list(SWEEP)
    runs, took = run_grid(duration)
    values = {k: [float(r.total_bps or 0) for r in v] for k, v in runs.items()}
    best_k = max(values, key=lambda k: statistics.mean(values[k]))
    best = json.loads(best_k)
    points = len(values)
    print(f"\n(b) lab: the grid ({' x '.join(f'{k} {v}' for k, v in SWEEP.items())}), {points} points x {RUNS} runs of {duration} s "
          f"in {took:.0f} s; best {dict(zip(names, best))}: {statistics.mean(values[best_k]) / 1e9:.2f} Gbit/s")

    def near(cfg: Any, names_: list[str], fixed: dict[str, Any]) -> bool:
        k = key({**fixed, **dict(cfg.values)}, names)
        if k not in values:
            return False
        a, b = values[k], values[best_k]
        return k == best_k or statistics.mean(a) >= statistics.mean(b) or stats.ttest_ind(a, b, equal_var=False).pvalue >= 0.05

    rows: dict[str, list[dict]] = {"tpe": [], "halving": [], "peak": []}
    for method in rows:
        # peak: the streams slice through the grid's best (its other values held there)
        sweep = {"p": SWEEP["p"]} if method == "peak" else SWEEP
        fixed = {k: best[i] for i, k in enumerate(names) if k not in sweep}
        grid_tests = len(values) * RUNS if method != "peak" else len(SWEEP["p"]) * RUNS
        for seed in range(seeds):
            probe = plan_search(parse_study(t := sim_study_text(sweep, {"method": method, "seed": seed, "budget": 10_000, "objective": "total"},
                                                                duration=duration)), t)
            budget = max(int(FRACTION * grid_tests), 4) + probe.setting.confirm + int(probe.reserve + 0.999)
            text = sim_study_text(sweep, {"method": method, "seed": seed, "budget": budget, "objective": "total"}, duration=duration)
            plan = plan_search(parse_study(text), text)
            # the search's configurations (over `sweep`) -> the grid's runs of the same point
            m = Replay(plan, {key(dict(c.values), list(sweep)): runs.get(key({**fixed, **dict(c.values)}, names), []) for c in plan.space.grid},
                       list(sweep), seed)
            led = Ledger(plan.objective)
            plan.loop(m, led).run()
            cands = plan.strategy.candidates(led)
            reached, spent = None, 0.0
            for o in led.obs:
                spent += o.cost
                lead = led.leader([c for c in cands if led.first_seq(c) <= o.seq], before=o.seq + 1)
                if lead is not None and near(lead, list(sweep), fixed):
                    reached = spent
                    break
            start = end_start(led, plan.space.baseline, plan.setting.confirm)
            winner = winner_before(plan.strategy, led, start, plan.setting.confirm)
            rows[method].append({"surface": -1, "method": method, "seed": seed, "points": grid_tests, "reached": reached,
                                 "success": winner is not None and near(winner, list(sweep), fixed), "violated": False,
                                 "tests": led.spent(), "budget": budget})
    head = f"{'lab':44} {'tests':>5}  " + "  ".join(f"{m:>22}" for m in rows)
    print(head)
    print("-" * len(head))
    cells = []
    for m, rs in rows.items():
        got = [r["reached"] / r["points"] for r in rs if r["reached"] is not None]
        cells.append(f"{statistics.median(got):.0%}" if got else "-")
        cells[-1] += f" | {sum(r['success'] for r in rs)}/{len(rs)}"
    print(f"{'queues x streams x MTU x buffer (peak: streams)':44} {points * RUNS:>5}  " + "  ".join(f"{c:>22}" for c in cells))
    return rows
