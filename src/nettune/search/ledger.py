"""Everything a search measured, in order, and what it says: each configuration's mean
with its 95% interval, whether it is shown to satisfy the constraints, the budget spent.

A configuration measured once has no spread of its own; its interval takes the noise of
the others (their coefficients of variation pooled, weighted by degrees of freedom), so a
single lucky run reads as what it is: one draw of a noisy quantity. With no other
configuration measured twice its interval is unbounded."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from ..analysis.stats import t_critical
from .objective import Objective, Observation
from .space import Config

YES, UNSURE, NO, UNKNOWN = "yes", "unsure", "no", "unknown"


@dataclass(frozen=True)
class Estimate:
    n: int
    mean: float | None
    half: float  # 95% half-width (inf: unknown)

    @property
    def lo(self) -> float:
        return -math.inf if self.mean is None else self.mean - self.half

    @property
    def hi(self) -> float:
        return math.inf if self.mean is None else self.mean + self.half


def _mean_sd(xs: list[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0


def _t(df: float, level: float) -> float:
    return t_critical(int(max(1, round(df))) + 1, level)


class Ledger:
    def __init__(self, objective: Objective):
        self.objective = objective
        self.obs: list[Observation] = []
        self.by: dict[Config, list[Observation]] = {}
        self._noise: dict[tuple[str | None, int | None, int | None], tuple[float, float]] = {}

    def add(self, o: Observation) -> None:
        self.obs.append(o)
        self.by.setdefault(o.config, []).append(o)
        self._noise.clear()

    @property
    def next_seq(self) -> int:
        return len(self.obs)

    def tried(self, cfg: Config) -> bool:
        return cfg in self.by

    def runs(self, cfg: Config) -> int:
        """Observations of cfg, failed ones included (what the budget paid for)."""
        return len(self.by.get(cfg, []))

    def values(self, cfg: Config, metric: str | None = None, before: int | None = None, since: int | None = None) -> list[float]:
        """Its objective (or a metric's) values, in order; only those measured before seq
        `before` / at or after seq `since` when given."""
        out = []
        for o in self.by.get(cfg, []):
            if (before is not None and o.seq >= before) or (since is not None and o.seq < since):
                continue
            v = o.value if metric is None else o.metrics.get(metric)
            if v is not None and (metric is None or o.ok):
                out.append(float(v))
        return out

    def n(self, cfg: Config, before: int | None = None) -> int:
        return len(self.values(cfg, before=before))

    def failed(self, cfg: Config) -> bool:
        """Tried and never measured (every test failed)."""
        return self.tried(cfg) and not self.values(cfg)

    def noise(self, metric: str | None = None, duration: int | None = None, before: int | None = None) -> tuple[float, float]:
        """(pooled coefficient of variation, its degrees of freedom) over the configurations of
        this test length measured at least twice; (nan, 0) when none is."""
        key = (metric, duration, before)
        if key not in self._noise:
            self._noise[key] = self._pooled(metric, duration, before)
        return self._noise[key]

    def _pooled(self, metric: str | None, duration: int | None, before: int | None) -> tuple[float, float]:
        ss, df = 0.0, 0.0
        for cfg in self.by:
            if cfg.duration != duration:
                continue
            xs = self.values(cfg, metric, before=before)
            if len(xs) >= 2:
                m, sd = _mean_sd(xs)
                if m != 0:
                    ss += (len(xs) - 1) * (sd / abs(m)) ** 2
                    df += len(xs) - 1
        return (math.sqrt(ss / df), df) if df else (math.nan, 0.0)

    def estimate(self, cfg: Config, metric: str | None = None, before: int | None = None, since: int | None = None,
                 level: float = 0.95) -> Estimate:
        """Mean and half-width: its own spread from 3 runs on, the pooled noise below (the
        larger of the two at 2 runs: one difference says little about spread)."""
        xs = self.values(cfg, metric, before=before, since=since)
        if not xs:
            return Estimate(0, None, math.inf)
        m, sd = _mean_sd(xs)
        cv, pdf = self.noise(metric, cfg.duration, before=before)
        pooled = abs(m) * cv if pdf else math.nan
        if len(xs) >= 3 or (len(xs) == 2 and not pdf):
            half = _t(len(xs) - 1, level) * sd / math.sqrt(len(xs))
            if len(xs) == 2 and pdf:
                half = max(half, _t(pdf, level) * pooled / math.sqrt(2))
        elif pdf:
            s = max(sd, pooled) if len(xs) == 2 else pooled
            half = _t(pdf, level) * s / math.sqrt(len(xs))
        else:
            half = math.inf
        return Estimate(len(xs), m, half)

    def feasibility(self, cfg: Config, before: int | None = None) -> str:
        """yes: every constraint shown to hold (its one-sided 95% bound inside); no: a mean
        breaks one; unsure: the means hold but not every bound; unknown: not measured."""
        if not self.objective.constraints:
            return YES if self.n(cfg, before) else UNKNOWN
        out = YES
        for c in self.objective.constraints:
            e = self.estimate(cfg, c.metric, before=before, level=0.90)  # its upper (or lower) end: one-sided 95%
            if e.mean is None:
                return UNKNOWN if not self.n(cfg, before) else UNSURE
            if not c.holds(e.mean):
                return NO
            if not c.holds(e.hi if c.upper else e.lo):
                out = UNSURE
        return out

    def breaks(self, cfg: Config) -> bool:
        """Shown to break a constraint: the bound outside its one-sided 95% interval. A short
        test with no test of its length repeated takes the noise of the full-length tests (a
        floor: short tests are noisier), so one run a little over a bound is not yet shown to
        break it (a configuration near a bound is often the best that keeps it)."""
        for c in self.objective.constraints:
            e = self.estimate(cfg, c.metric, level=0.90)
            if e.mean is None:
                continue
            half = e.half
            if math.isinf(half) and cfg.duration is not None:
                cv, df = self.noise(c.metric, None)
                if df:
                    half = _t(df, 0.90) * abs(e.mean) * cv / math.sqrt(e.n)
            if (e.mean - half > c.bound) if c.upper else (e.mean + half < c.bound):
                return True
        return False

    def better(self, a: Config, b: Config, before: int | None = None) -> bool:
        ea, eb = self.estimate(a, before=before), self.estimate(b, before=before)
        return ea.mean is not None and (eb.mean is None or self.objective.better(ea.mean, eb.mean))

    def leader(self, cands: Iterable[Config], min_n: int = 1, allow: tuple[str, ...] = (YES, UNSURE),
               before: int | None = None) -> Config | None:
        """The best configuration by mean among those with at least min_n values whose
        feasibility is allowed (ties: the first measured)."""
        best: Config | None = None
        for c in cands:
            if self.n(c, before) < min_n or self.feasibility(c, before) not in allow:
                continue
            if best is None or self.better(c, best, before):
                best = c
        return best

    def spent(self) -> float:
        return sum(o.cost for o in self.obs)

    def seconds(self) -> float:
        return sum(o.seconds for o in self.obs)

    def switches(self) -> int:
        return sum(o.switches for o in self.obs)

    def first_seq(self, cfg: Config) -> int:
        return self.by[cfg][0].seq if cfg in self.by else math.inf  # type: ignore[return-value]
