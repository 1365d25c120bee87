"""`nettune check --history`: gate on a change point in a study's latest reruns instead of
one baseline. The history (analysis/history.py) holds the change points, found with a 5%
family-wise error over all its series; the gate reads the latest of each series:

  regressed          a change point among the latest `window` reruns (or the latest rerun
                     alone outside its prediction interval) whose step is worse than the
                     tolerance
  improved           ... better than the tolerance
  within tolerance   a change point there, its step within the tolerance
  no change          no change point among the latest reruns
  inconclusive       too few reruns to place or test a step, or a rerun without a counted run

Exit 0 when nothing regressed, 1 when a series regressed, 3 with --strict when a series is
inconclusive (2, an error, is the CLI's).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .changepoints import MIN_BEFORE, MIN_SIZE
from .history import History

WINDOW = 3  # the latest reruns a change point must fall in to gate


@dataclass
class SeriesVerdict:
    label: str
    point: dict[str, Any]
    pair: str | None
    verdict: str
    latest: float | None  # the latest rerun's mean (display units)
    change: dict[str, Any] | None = None  # the change point gated on (History's form)


@dataclass
class HistoryGate:
    study: str
    metric: str
    unit: str
    tolerance_pct: float
    window: int
    strict: bool
    reruns: int
    latest_study: int
    series: list[SeriesVerdict] = field(default_factory=list)
    policy: str = ""

    def of(self, verdict: str) -> list[SeriesVerdict]:
        return [s for s in self.series if s.verdict == verdict]

    @property
    def exit_code(self) -> int:
        if self.of("regressed"):
            return 1
        return 3 if self.strict and self.of("inconclusive") else 0

    @property
    def verdict(self) -> str:
        return {1: "regressed", 3: "inconclusive"}.get(self.exit_code, "pass")

    def to_dict(self) -> dict[str, Any]:
        return {"study": self.study, "metric": self.metric, "unit": self.unit, "tolerance_pct": self.tolerance_pct,
                "window": self.window, "strict": self.strict, "reruns": self.reruns, "latest_study": self.latest_study,
                "verdict": self.verdict, "exit_code": self.exit_code, "policy": self.policy,
                "series": [s.__dict__ for s in self.series]}


def gate(h: History, tolerance_pct: float, window: int = WINDOW, strict: bool = False) -> HistoryGate:
    """The verdict of each series on its latest reruns; the tolerance in percent."""
    n = len(h.reruns)
    out = HistoryGate(h.study, h.metric, h.unit, tolerance_pct, window, strict, n, h.reruns[-1].study_id, policy=h.policy)
    testable = n >= MIN_BEFORE + 1 or n >= 2 * MIN_SIZE
    for s in h.series:
        latest = s.values[-1].mean if s.values else None
        recent = [c for c in s.changes if c.step.at >= n - window]
        if any(v.mean is None for v in s.values) or not testable:
            verdict, change = "inconclusive", None
        elif not recent:
            verdict, change = "no change", None
        else:
            c = recent[-1]
            pct = c.step.pct
            worse = pct is not None and ((pct < 0) if h.higher_is_better else (pct > 0))
            beyond = pct is not None and abs(pct) > tolerance_pct
            verdict = ("regressed" if worse else "improved") if beyond else "within tolerance"
            change = c.to_dict()
        out.series.append(SeriesVerdict(s.label, s.point, s.pair, verdict, latest, change))
    return out
