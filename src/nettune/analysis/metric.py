"""What a study's numbers mean: its primary metric, its unit and which way is better.

Each workload kind names its primary metric by field name and direction
(studyfile/workload_kind.py): throughput for the network kind (Gbit/s, higher is
better), the wall seconds of a command workload's run (lower is better, and lower is
still "faster"). analyze, compare and report ask `primary()` when no --metric is given,
so a timed build is never judged as if more seconds were better.
Every metric (its label, scale and direction) is a row of the field table
(record/fields.py); analysis.data builds its METRICS from it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..record.fields import FIELDS

from ..studyfile.models import DEFAULT_KIND, WORKLOAD_KINDS, workload_kind

AUTO = "auto"  # --metric auto: the study's primary metric


@dataclass(frozen=True)
class MetricInfo:
    name: str
    unit: str
    higher_is_better: bool


def primary(engines: set[str]) -> MetricInfo:
    """The primary metric of a study whose runs used these engines: their workload kind's,
    or the default kind's (throughput) when they mix kinds or there are none."""
    kinds = {workload_kind(e).name: workload_kind(e) for e in engines}
    p = (next(iter(kinds.values())) if len(kinds) == 1 else WORKLOAD_KINDS[DEFAULT_KIND]).primary
    return MetricInfo(str(FIELDS[p.field].row.metric), p.unit, p.higher_is_better)  # the field's --metric name


def resolve(name: str | None, engines: set[str]) -> str:
    """--metric as given, or the study's primary metric for "auto"/None."""
    return primary(engines).name if name in (None, AUTO) else str(name)


def time_words(comparison: Any, higher_is_better: bool, better: str) -> Any:
    """A comparison of elapsed times says so: "b is 13.5% faster (less time, 95% CI ...)"."""
    if higher_is_better or better != "faster" or comparison.verdict not in ("faster", "slower"):
        return comparison
    less = "less time" if comparison.verdict == "faster" else "more time"
    return replace(comparison, text=comparison.text.replace("(95% CI", f"({less}, 95% CI", 1))
