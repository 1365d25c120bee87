"""One search, from the defaults to the answer, over anything that measures (a Measurer):
the run layer's slots on a real target (run/search_trials.py), or a simulated surface
(search/simulate.py, for the bench and for tests without root).

    1. the defaults (the baseline), `confirm` values (a failed test run again, at most MAX_FAILED times);
    2. the method's proposals, each measured, and the noise rule: the leader needs
       `confirm` runs before it wins, and every configuration whose interval overlaps the
       leader's gets `confirm` runs too, so a lucky single run never wins; the rule waits
       while the budget left holds more than it would take (the method explores first),
       and runs when it does not and when the method has nothing more to ask; stops when
       the method is done or the budget (minus what step 3 needs) is spent;
    3. the end, in `confirm` interleaved rounds: the defaults again (the drift check), the
       winner again (fresh runs: the luck that selected it does not count in its
       verdict), and the winner with each factor put back to its default (the ablation).

Everything is decided from the ledger, so a resumed search (its ledger read back from the
stored runs) continues where the killed one stopped: a step already measured is never
measured again, and the end phase is recognised by the defaults' runs beyond `confirm`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from .base import Ask, Setting, Strategy
from .ledger import NO, UNSURE, YES, Ledger
from .space import Config

MAX_RUNS_UNSURE = 6  # runs a leader only near a constraint's bound may get before it is left out
# why the search phase stopped, said beside "N of a budget of M tests spent": the end phase is
# held back at its most (every ablation) and often takes less, so "the budget was spent"
# would contradict the numbers next to it
SHARE_SPENT = "the search's share of the budget was spent (the rest kept for the end phase)"
MAX_FAILED = 2  # failed tests a leader may have on its way to `confirm` values (then it stays unconfirmed)


class Measurer(Protocol):
    def measure(self, cfg: Config, seq: int) -> Any:
        """Run one counted slot of cfg and return its Observation (search/objective.py)."""
        ...

    def switch_key(self, cfg: Config) -> Any:
        """Configurations with different keys need a reboot or a domain restart between them."""
        ...

    def current(self) -> Config | None:
        """The configuration in force now (None before the first)."""
        ...


@dataclass(frozen=True)
class Budget:
    units: float | None  # tests (a short test its fraction, a reboot reboot_cost)
    seconds: float | None  # a time budget instead

    def text(self) -> str:
        return f"{self.units:g} tests" if self.units is not None else f"{(self.seconds or 0) / 60:g} minutes"


def end_start(ledger: Ledger, baseline: Config, confirm: int) -> int | None:
    """Seq of the end phase's first run, None before it: the defaults' first run after the
    start phase, which ends at their `confirm`-th value or, failures tried again, at their
    (confirm + MAX_FAILED)-th run."""
    good = 0
    for i, o in enumerate(ledger.by.get(baseline, [])):
        if good >= confirm or i >= confirm + MAX_FAILED:
            return o.seq
        good += o.value is not None
    return None


def contenders(strategy: Strategy, ledger: Ledger, baseline: Config) -> list[Config]:
    """What may be the answer: the method's candidates and the defaults, also where they are
    no grid point (a knob-only parameter's knobs left as found): a configuration measured
    worse than the defaults is never called the winner."""
    cands = strategy.candidates(ledger)
    return cands + [baseline] if baseline in ledger.by and baseline not in cands else cands


def winner_before(strategy: Strategy, ledger: Ledger, before: int | None, confirm: int, baseline: Config) -> Config | None:
    """The configuration the end phase confirms: the best shown to satisfy the constraints
    among those with `confirm` runs, else among all measured."""
    cands = contenders(strategy, ledger, baseline)
    confirmed = ledger.leader(cands, min_n=confirm, allow=(YES,), before=before)
    # a configuration with fewer runs (failed tests, or the budget ran out before the noise
    # rule reached it) whose interval lies wholly beyond the confirmed leader's is no lucky
    # run: it is the better answer, and the end phase measures it afresh for its verdict
    top = ledger.leader(cands, min_n=2, allow=(YES,), before=before)
    if confirmed is not None and top is not None and top != confirmed:
        c, t = ledger.estimate(confirmed, before=before), ledger.estimate(top, before=before)
        if c.mean is not None and t.mean is not None and (t.lo > c.hi if ledger.objective.higher_is_better else t.hi < c.lo):
            return top
    return (confirmed or ledger.leader(cands, allow=(YES,), before=before)
            or ledger.leader(cands, allow=(YES, UNSURE), before=before))


def end_configs(setting: Setting, winner: Config | None) -> list[tuple[str, Config]]:
    """(role, config) of the end phase's rounds: the defaults, the winner, each ablation."""
    space = setting.space
    out = [("baseline", space.baseline)]
    if winner is not None and winner != space.baseline:
        out.append(("winner", winner))
        for _, name, cfg in space.factors(winner):
            if cfg not in [c for _, c in out]:
                out.append((f"ablation: {name}", cfg))
    return out


class SearchLoop:
    def __init__(self, setting: Setting, strategy: Strategy, measurer: Measurer, ledger: Ledger, budget: Budget,
                 reserve: float, say: Callable[[str], None] | None = None):
        self.s = setting
        self.strategy = strategy
        self.m = measurer
        self.ledger = ledger
        self.budget = budget
        self.reserve = reserve  # budget units the end phase needs
        self.say = say or (lambda text: None)
        self.stopped = ""  # why the search phase ended

    @property
    def baseline(self) -> Config:
        return self.s.space.baseline

    def _measure(self, cfg: Config) -> None:
        self.ledger.add(self.m.measure(cfg, self.ledger.next_seq))

    def room(self, cost: float = 1.0) -> bool:
        """Is there budget for one more test of this cost beside the end phase's reserve?"""
        if self.budget.seconds is not None:
            per = self._seconds_per_test()
            return self.ledger.seconds() + per * (cost + self.reserve) <= self.budget.seconds
        return self.ledger.spent() + cost + self.reserve <= (self.budget.units or 0) + 1e-9

    def _seconds_per_test(self) -> float:
        full = [o.seconds / max(o.cost, 1e-9) for o in self.ledger.obs if o.config.duration is None and o.seconds > 0]
        return sum(full) / len(full) if full else 1.0

    def run(self) -> None:
        while (len(self.ledger.values(self.baseline)) < self.s.confirm and self.ledger.runs(self.baseline) < self.s.confirm + MAX_FAILED
               and end_start(self.ledger, self.baseline, self.s.confirm) is None):  # a failed run of the defaults is run again
            self._measure(self.baseline)
        if end_start(self.ledger, self.baseline, self.s.confirm) is None:
            self.search()
        self.end()

    def search(self) -> None:
        """The method's proposals, each measured; the noise rule is deferred while the budget
        left beyond the end phase holds more than settling would take (settle_units), and
        runs whenever it does not and when the method has nothing more to ask: a lucky run
        still never wins, but a rising curve's every new leader is not measured `confirm`
        times on its way up. Each step is decided from the ledger alone (a resumed search
        takes the same steps)."""
        while True:
            batch = self.strategy.propose(self.ledger)
            progressed = False
            for ask in self._ordered(batch):
                while self.ledger.runs(ask.config) < ask.runs:
                    cost = self._cost(ask.config)
                    if not self.room(cost + self.settle_units()) and not self.noise_rule():
                        return
                    if not self.room(cost):
                        self.stopped = SHARE_SPENT
                        return
                    self._measure(ask.config)
                    progressed = True
            if not progressed:
                if self.undecided() is not None:
                    if not self.noise_rule():
                        return
                    continue  # the settled picture may change what the method asks
                self.stopped = self.stopped or ("the method finished" if not batch else "the method asked for nothing new")
                return

    def settle_units(self) -> float:
        """What the noise rule would spend now: the leader's and each overlapping rival's
        runs short of `confirm` (what exploring must leave; at most half the search's)."""
        led, need = self.ledger, 0.0
        cands = [c for c in self.strategy.candidates(led) if not led.failed(c)]
        lead = led.leader(cands)
        if lead is None:
            return 0.0
        top = led.estimate(lead)
        higher = self.s.objective.higher_is_better
        for c in cands:
            e = led.estimate(c)
            if c == lead or (e.mean is not None and led.feasibility(c) != NO and (e.hi > top.lo if higher else e.lo < top.hi)):
                need += max(0, self.s.confirm - led.runs(c))
        return min(need, self.s.units / 2)

    def noise_rule(self) -> bool:
        """Re-measure what noise leaves undecided; False when the budget ran out."""
        while (cfg := self.undecided()) is not None:
            if not self.room():
                self.stopped = SHARE_SPENT
                return False
            self._measure(cfg)
        return True

    def undecided(self) -> Config | None:
        """The leader before it has `confirm` runs (or while only near a constraint's bound),
        then any configuration with fewer whose interval overlaps the leader's."""
        led = self.ledger
        cands = [c for c in self.strategy.candidates(led) if not led.failed(c)]
        lead = led.leader(cands)
        if lead is None:
            return None
        n, tries = led.n(lead), led.runs(lead)
        if (n < self.s.confirm and tries < self.s.confirm + MAX_FAILED) or (led.feasibility(lead) == UNSURE and tries < MAX_RUNS_UNSURE):
            return lead
        top = led.estimate(lead)
        higher = self.s.objective.higher_is_better
        rivals = sorted((c for c in cands if c != lead and led.runs(c) < self.s.confirm and led.feasibility(c) != NO),
                        key=lambda c: -(led.estimate(c).mean or 0) if higher else (led.estimate(c).mean or 0))
        for c in rivals:
            e = led.estimate(c)
            if e.mean is not None and (e.hi > top.lo if higher else e.lo < top.hi):
                return c
        return None

    def _cost(self, cfg: Config) -> float:
        full = self.s.space.full_duration
        return (cfg.duration / full) if cfg.duration is not None and full else 1.0

    def _ordered(self, batch: list[Ask]) -> list[Ask]:
        """The batch grouped by reboot/restart key, the group in force first (fewest switches)."""
        now = self.m.current()
        key_now = self.m.switch_key(now) if now is not None else None
        groups: dict[Any, list[Ask]] = {}
        for a in batch:
            groups.setdefault(self.m.switch_key(a.config), []).append(a)
        keys = sorted(groups, key=lambda k: (k != key_now, list(groups).index(k)))
        return [a for k in keys for a in groups[k]]

    def end(self) -> None:
        """`confirm` interleaved rounds of the defaults, the winner and its ablations."""
        start = end_start(self.ledger, self.baseline, self.s.confirm)
        winner = winner_before(self.strategy, self.ledger, start if start is not None else self.ledger.next_seq, self.s.confirm,
                               self.baseline)
        configs = [c for _, c in end_configs(self.s, winner)]
        # a failed test is measured again (at most MAX_FAILED more rounds), so one crash of the
        # tool does not leave the verdict without its `confirm` values on each side
        for rnd in range(self.s.confirm + MAX_FAILED):
            todo = [c for c in configs if self._end_values(c, start) < self.s.confirm and self._end_runs(c, start) <= rnd]
            rest = [a.config for a in self._ordered([Ask(c, 0) for c in todo if c != self.baseline])]
            # each round begins with the defaults (their first run here marks the end phase)
            for cfg in ([self.baseline] if self.baseline in todo else []) + rest:
                self._measure(cfg)
                if start is None:
                    start = end_start(self.ledger, self.baseline, self.s.confirm)

    def _end_values(self, cfg: Config, start: int | None) -> int:
        return 0 if start is None else len(self.ledger.values(cfg, since=start))

    def _end_runs(self, cfg: Config, start: int | None) -> int:
        if start is None:
            return 0
        return sum(1 for o in self.ledger.by.get(cfg, []) if o.seq >= start)


def reserve_units(setting: Setting, reboot_cost: float, switching: bool) -> float:
    """What the end phase may take: `confirm` rounds of the defaults, the winner and one
    ablation per factor (reboots at their cost when the space has boot-time knobs)."""
    k = 2 + setting.space.max_factors()
    return setting.confirm * k * (1 + (reboot_cost if switching else 0.0))


def default_units(setting: Setting, reserve: float) -> float:
    """The budget when the study gives none: the defaults, the end phase, and a quarter of
    the grid's tests (at least 8)."""
    return setting.confirm + reserve + max(8, math.ceil(len(setting.space.grid) * setting.initial / 4))
