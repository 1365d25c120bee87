"""peak: the peak of one ordered parameter (study D's -P: more streams help, then hurt).

Coarse: from the smallest value, each next probe the first listed value at least double
the last, until two probes after the best are both below it by more than noise (or the
list ends). Then refine: between the best and its nearest probed neighbours, the middle
listed value, until the best's neighbours on both sides are measured. The answer is the
peak and the shape after it ("peak at P=10, 288 Gbit/s; -22% at 12, -43% at 20"), never
only the largest value tried. Every step follows from the ledger alone."""
from __future__ import annotations

from .base import Ask, StrategyBase
from .ledger import Ledger
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
            if self.past_peak(ledger, probed):
                break
            nxt = next((j for j in range(i + 1, len(values)) if values[j] >= 2 * values[i]), len(values) - 1)
            if nxt <= i:
                break
            i = nxt
        measured = sorted(j for j in range(len(values)) if ledger.n(self.at(j)))
        best = ledger.leader([self.at(j) for j in measured])
        if best is None:
            return []
        b = values.index(best.get(self.param.name))
        left = max((j for j in measured if j < b), default=None)
        right = min((j for j in measured if j > b), default=None)
        if right is not None and right - b > 1:
            return [Ask(self.at((b + right) // 2), self.s.initial)]
        if left is not None and b - left > 1:
            return [Ask(self.at((left + b + 1) // 2), self.s.initial)]
        return []

    def past_peak(self, ledger: Ledger, probed: list[int]) -> bool:
        """Two probes after the best, each below it by more than noise."""
        cfgs = [self.at(j) for j in probed]
        best = ledger.leader(cfgs)
        if best is None:
            return False
        top = ledger.estimate(best)
        after = cfgs[cfgs.index(best) + 1:]
        if len(after) < 2 or top.mean is None:
            return False

        def below(c: Config) -> bool:
            e = ledger.estimate(c)
            return e.mean is None or (e.hi < top.mean if self.s.objective.higher_is_better else e.lo > top.mean)

        return all(below(c) for c in after[-2:])

    def describe(self) -> str:
        p = self.param
        return (f"peak over {p.name} ({', '.join(map(str, p.ordered))}): doubling from {p.ordered[0]} until two probes fall "
                "below the best by more than noise, then halving the gaps around the best")
