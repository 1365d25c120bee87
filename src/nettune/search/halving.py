"""halving: successive halving. Many configurations get a short test; the better half
is tested again, longer; the better half of those again, at full length and repeated.

Rungs: a network test of D seconds runs D/4 (at least 1 s), then D/2, then D seconds
`confirm` times (each rung a separate stored point with its `duration`); a workload of
no fixed length (a command) runs 1, then 2, then `confirm` times. How many
configurations start is the most whose rungs fit the search's budget, a short test
counting for the fraction of a full one it lasts. Which configurations start is a
seeded sample of the grid; each rung keeps the better half of the one before
(configurations shown to break a constraint, or failing, last)."""
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
        return out + [(None, confirm)]

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
        while n0 > 2 and self.cost(n0) > self.s.units:
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
            ranked = sorted(range(len(members)), key=lambda i: self._rank(ledger, at[i]))
            members = [members[i] for i in sorted(ranked[:keep])]
        return []

    def _rank(self, ledger: Ledger, cfg: Config) -> tuple[int, float]:
        e = ledger.estimate(cfg)
        feas = ledger.feasibility(cfg)
        if e.mean is None:
            return (3, 0.0)
        bad = 2 if feas == NO else (1 if feas == UNKNOWN else 0)
        return (bad, -e.mean if self.s.objective.higher_is_better else e.mean)

    def describe(self) -> str:
        steps = []
        for r, (d, runs) in enumerate(self.rungs()):
            steps.append(f"{'full-length' if d is None else f'{d} s'} tests x{runs}")
        n0 = len(self.starters())
        return f"halving: {n0} of {len(self.space.grid)} configurations start ({', then the better half: '.join(steps)})"
