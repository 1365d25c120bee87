"""peak: the peak of one ordered parameter (study D's -P: more streams help, then hurt).

Coarse: from the smallest value, each next probe the first listed value at least double
the last, until the curve is seen falling after the best: its two last probes both below
the best by more than noise and the last below the one before it (their intervals apart:
a dip that stays flat, the foot of a second peak, does not stop it), or the list ends.
Before that decision the best gets `confirm` runs (the decision is only as good as the
best's mean). Then refine around every local maximum of the probes whose interval
overlaps the best's, not only the best (a curve may have two peaks): between it and
its nearest probed neighbours, the middle listed value (first on the side of a neighbour
higher by more than noise, else in the wider gap), until its neighbours on both sides are measured; one step for each such maximum
per batch, the highest first. The answer is the peak and the shape after it ("peak at
P=10, 288 Gbit/s; -22% at 12, -43% at 20"), never only the largest value tried. Every
step follows from the ledger alone."""
from __future__ import annotations

from .base import Ask, StrategyBase
from .ledger import Estimate, Ledger
from .space import Config, Param


class Peak(StrategyBase):
    name = "peak"

    @property
    def param(self) -> Param:
        name = self.space.spec.parameter or self.space.params[0].name
        return self.space.param(name)

    def at(self, i: int) -> Config:
        return self.space.config({self.param.name: self.param.ordered[i]})

    def propose(self, ledger: Ledger) -> list[Ask]:
        values = self.param.ordered
        probed: list[int] = []
        i = 0
        while True:
            if ledger.runs(self.at(i)) < self.s.initial:
                return [Ask(self.at(i), self.s.initial)]
            probed.append(i)
            best = ledger.leader([self.at(j) for j in probed])
            if best is not None and len(probed) - probed.index(values.index(best.get(self.param.name))) > 2:
                if ledger.runs(best) < self.s.confirm:
                    return [Ask(best, self.s.confirm)]
                if self.past_peak(ledger, probed, best):
                    break
            nxt = next((j for j in range(i + 1, len(values)) if values[j] >= 2 * values[i]), len(values) - 1)
            if nxt <= i:
                break
            i = nxt
        return self.refine(ledger)

    def refine(self, ledger: Ledger) -> list[Ask]:
        """One step around each local maximum whose interval overlaps the best's."""
        values = self.param.ordered
        measured = [j for j in range(len(values)) if ledger.n(self.at(j))]
        best = ledger.leader([self.at(j) for j in measured])
        if best is None:
            return []
        top = ledger.estimate(best)
        est = {j: ledger.estimate(self.at(j)) for j in measured}
        peaks = [j for k, j in enumerate(measured) if self._local_max(est, measured, k) and self._overlaps(est[j], top)]
        peaks.sort(key=lambda j: -(est[j].mean or 0) if self.s.objective.higher_is_better else (est[j].mean or 0))
        asks: list[Ask] = []
        for j in peaks:
            k = measured.index(j)
            sides = [(measured[k - 1], (measured[k - 1] + j + 1) // 2) if k > 0 else None,
                     (measured[k + 1], (j + measured[k + 1]) // 2) if k + 1 < len(measured) else None]
            open_sides = [s for s in sides if s is not None and abs(s[0] - j) > 1]
            if not open_sides:
                continue
            nb = open_sides[0]
            if len(open_sides) == 2:  # toward a neighbour higher by more than noise, else into the wider gap
                (lft, _), (rgt, _) = open_sides
                if self._apart(est[lft], est[rgt]):
                    nb = min(open_sides, key=lambda s: self._rank(est[s[0]]))
                elif rgt - j > j - lft:
                    nb = open_sides[1]
            cfg = self.at(nb[1])
            if cfg not in [a.config for a in asks]:
                asks.append(Ask(cfg, self.s.initial))
        return asks

    def _rank(self, e: Estimate) -> float:
        if e.mean is None:
            return float("inf")
        return -e.mean if self.s.objective.higher_is_better else e.mean

    def _local_max(self, est: dict[int, Estimate], measured: list[int], k: int) -> bool:
        mine = self._rank(est[measured[k]])
        return all(mine <= self._rank(est[measured[n]]) for n in (k - 1, k + 1) if 0 <= n < len(measured))

    def _overlaps(self, e: Estimate, top: Estimate) -> bool:
        return e.mean is not None and (e.hi >= top.lo if self.s.objective.higher_is_better else e.lo <= top.hi)

    def _below(self, e: Estimate, than: float | None) -> bool:
        """Shown worse than `than` (a mean) by more than noise."""
        return than is not None and (e.mean is None or (e.hi < than if self.s.objective.higher_is_better else e.lo > than))

    def _apart(self, a: Estimate, b: Estimate) -> bool:
        """Their intervals do not overlap."""
        return a.mean is not None and b.mean is not None and (a.hi < b.lo or b.hi < a.lo)

    def past_peak(self, ledger: Ledger, probed: list[int], best: Config) -> bool:
        """The two last probes below the best by more than noise, the last below the one before."""
        cfgs = [self.at(j) for j in probed]
        after = cfgs[cfgs.index(best) + 1:]
        if len(after) < 2:
            return False
        top = ledger.estimate(best)
        prev, last = ledger.estimate(after[-2]), ledger.estimate(after[-1])
        falling = self._apart(last, prev) and self._rank(last) > self._rank(prev)
        return self._below(prev, top.mean) and self._below(last, top.mean) and falling

    def describe(self) -> str:
        p = self.param
        return (f"peak over {p.name} ({', '.join(map(str, p.ordered))}): doubling from {p.ordered[0]} until the curve falls "
                "below the best by more than noise, then halving the gaps around each local maximum within noise of the best")
