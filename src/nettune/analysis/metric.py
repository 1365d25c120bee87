"""What a study's numbers mean: its primary metric, its unit and which way is better.

A network study's primary metric is throughput (Gbit/s, higher is better); a command
workload's (engine = "command": a timed build) is the wall seconds of its run (lower is
better, and lower is still "faster"). analyze, compare and report ask `primary()` when
no --metric is given, so a timed build is never judged as if more seconds were better.
Every metric (its label, scale and direction) is a row of the field table
(record/fields.py); analysis.data builds its METRICS from it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..record.fields import METRIC_FIELDS

if TYPE_CHECKING:
    from ..engines.result import TestResult

AUTO = "auto"  # --metric auto: the study's primary metric


@dataclass(frozen=True)
class MetricInfo:
    name: str
    unit: str
    higher_is_better: bool


# engine -> its primary metric (any other engine: "total")
PRIMARY: dict[str, MetricInfo] = {"command": MetricInfo("wall", "seconds", False)}
THROUGHPUT = MetricInfo("total", "Gbit/s", True)


def primary(engines: set[str]) -> MetricInfo:
    """The primary metric of a study whose runs used these engines."""
    found = {PRIMARY[e].name: PRIMARY[e] for e in engines if e in PRIMARY}
    if len(found) == 1 and len(engines) == 1:
        return next(iter(found.values()))
    return THROUGHPUT


def resolve(name: str | None, engines: set[str]) -> str:
    """--metric as given, or the study's primary metric for "auto"/None."""
    return primary(engines).name if name in (None, AUTO) else str(name)


def stopping_value(result: TestResult) -> float | None:
    """What adaptive repeats watch for one counted run: the primary metric (None: failed)."""
    if not result.ok:
        return None
    value = METRIC_FIELDS[primary({result.engine}).name].of_result(result)
    return None if value is None else float(value)


def time_words(comparison: Any, higher_is_better: bool, better: str) -> Any:
    """A comparison of elapsed times says so: "b is 13.5% faster (less time, 95% CI ...)"."""
    if higher_is_better or better != "faster" or comparison.verdict not in ("faster", "slower"):
        return comparison
    less = "less time" if comparison.verdict == "faster" else "more time"
    return replace(comparison, text=comparison.text.replace("(95% CI", f"({less}, 95% CI", 1))
