"""halving: successive halving. Many configurations get a short test; the better half
is tested again, longer; the better half of those again, at full length; then a climb.

Rungs: a network test of D seconds runs D/4 (at least 1 s), then D/2, then D seconds once
(each rung a separate stored point with its `duration`); the loop's noise rule repeats the
last rung's leader and every rival within noise of it `confirm` times. A workload of no
fixed length (a command) runs 1, then 2, then `confirm` times. How many configurations
start is the most whose rungs fit two thirds of the search's budget (a short test counting
for the fraction of a full one it lasts); the last third is for the noise rule's repeats
and the climb: the leader's grid neighbours at full length (each parameter one listed
value up or down, those whose changed value did best over all tests first), and on from a
neighbour that leads, until the budget is spent. Which configurations start is a seeded
sample of the grid; each rung keeps the better half of the one before, never one shown
to break a constraint (its bound outside its interval) or failing; one only near a bound
goes on (the best that keeps a constraint often lies there)."""
from __future__ import annotations

import math
import random

from .base import Ask, StrategyBase
from .ledger import NO, UNKNOWN, Ledger
from .space import Config


class Halving(StrategyBase):
    name = "halving"

    def rungs(self) -> list[tuple[int | None, int]]:
        """(test seconds or None for full length, runs wanted at that length) per rung."""
        full = self.space.full_duration
        confirm = max(self.s.confirm, 3)
        if not full:
            return [(None, 1), (None, 2), (None, confirm)]
        out: list[tuple[int | None, int]] = []
        for d in (max(1, math.ceil(full / 4)), max(1, math.ceil(full / 2))):
            if d < full and (not out or out[-1][0] != d):
                out.append((d, 1))
        while len(out) < 2:
            out.append((None, len([r for r in out if r[0] is None]) + 1))
        return out + [(None, 1 if out[-1][0] is not None else confirm)]

    def cost(self, n0: int) -> float:
        """Tests the rungs take when n0 configurations start."""
        full = self.space.full_duration or 1
        total, had = 0.0, 0
        for r, (d, runs) in enumerate(self.rungs()):
            n = math.ceil(n0 / 2 ** r)
            extra = runs - (had if d is None else 0)
            total += n * max(0, extra) * ((d or full) / full)
            if d is None:
                had = runs
        return total

    def starters(self) -> list[Config]:
        grid = self.space.grid
        n0 = len(grid)
        settle = max(2 * (self.s.confirm - 1), self.s.units / 3)  # the noise rule's repeats and the climb (module doc)
        while n0 > 2 and self.cost(n0) + settle > self.s.units:
            n0 -= 1
        order = list(grid)
        random.Random(self.s.seed).shuffle(order)
        return order[:n0]

    def propose(self, ledger: Ledger) -> list[Ask]:
        members = self.starters()
        for d, runs in self.rungs():
            at = [c.short(d) for c in members]
            asks = [Ask(c, runs) for c in at if ledger.runs(c) < runs]
            if asks:
                return asks
            keep = math.ceil(len(members) / 2)
            # a configuration shown to break a constraint (or failing) goes no further, though
            # fewer than half go on; one only near a bound does (the best often lies there)
            alive = [i for i in range(len(members)) if not ledger.failed(at[i]) and not ledger.breaks(at[i])]
            ranked = sorted(alive, key=lambda i: self._rank(ledger, at[i]))
            members = [members[i] for i in sorted(ranked[:keep])]
        return self.climb(ledger)

    def climb(self, ledger: Ledger) -> list[Ask]:
        """Budget left after the rungs: the grid neighbours of the leader at full length (each
        parameter one listed value up or down), the most promising first: by the mean of every
        test (short ones too) of a configuration sharing the value the neighbour changes to;
        and on from a neighbour that leads. The loop stops it at the budget."""
        lead = ledger.leader([c for c in self.candidates(ledger) if not ledger.failed(c)])
        if lead is None:
            return []
        sign = 1.0 if self.s.objective.higher_is_better else -1.0
        by_value: dict[tuple[str, object], list[float]] = {}
        for o in ledger.obs:
            if o.value is not None:
                for k, v in o.config.values:
                    by_value.setdefault((k, v), []).append(o.value)

        def promise(c: Config) -> float:
            changed = [(k, v) for k, v in c.values if v != lead.get(k)]
            xs = [x for kv in changed for x in by_value.get(kv, [])]
            return -sign * sum(xs) / len(xs) if xs else 0.0

        todo = sorted((c for c in self.space.neighbours(lead) if not ledger.tried(c)), key=promise)
        return self.fresh(ledger, todo)

    def _rank(self, ledger: Ledger, cfg: Config) -> tuple[int, float]:
        e = ledger.estimate(cfg)
        bad = 1 if ledger.feasibility(cfg) in (NO, UNKNOWN) else 0
        return (bad, -(e.mean or 0.0) if self.s.objective.higher_is_better else (e.mean or 0.0))

    def describe(self) -> str:
        steps = []
        for r, (d, runs) in enumerate(self.rungs()):
            steps.append(f"{'full-length' if d is None else f'{d} s'} tests x{runs}")
        n0 = len(self.starters())
        return f"halving: {n0} of {len(self.space.grid)} configurations start ({', then the better half: '.join(steps)})"
