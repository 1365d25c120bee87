"""What a study's numbers mean: its primary metric, its unit and which way is better.

Each workload kind names its primary metric by field name and direction
(studyfile/workload_kind.py): throughput for the network kind (Gbit/s, higher is
better), the wall seconds of a command workload's run (lower is better, and lower is
still "faster"). analyze, compare and report ask `primary()` when no --metric is given,
so a timed build is never judged as if more seconds were better.
The command workload's own metrics (CPU seconds, peak RSS, energy) are listed here and
added to analysis.data's METRICS.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from ..studyfile.models import DEFAULT_KIND, WORKLOAD_KINDS, workload_kind

AUTO = "auto"  # --metric auto: the study's primary metric


@dataclass(frozen=True)
class MetricInfo:
    name: str
    unit: str
    higher_is_better: bool


# the analysis metric that reads the field a workload kind names as its primary
BY_FIELD: dict[str, str] = {"total_bps": "total", "wall_s": "wall"}


def _col(name: str) -> Callable[[Any], float | None]:
    return lambda r: r.get(name)


def _joules_per_run(r: Any) -> float | None:
    return r.get("energy_j")


# (name, label, scale, higher_is_better, better, worse, value of a RunRecord): analysis.data.Metric's fields
COMMAND_METRICS: list[tuple[str, str, float, bool, str, str, Callable[[Any], float | None]]] = [
    ("wall", "seconds", 1.0, False, "faster", "slower", _col("wall_s")),
    ("cpu_s", "CPU seconds", 1.0, False, "better", "worse", _col("cpu_s")),
    ("peak_rss", "peak RSS MiB", 1 / 1024, False, "better", "worse", _col("peak_rss_kb")),
    ("energy", "joules per run", 1.0, False, "better", "worse", _joules_per_run),
    ("power", "average W", 1.0, False, "better", "worse", _col("power_w")),
    ("meter_w", "meter W", 1.0, False, "better", "worse", _col("meter_w")),
]


def primary(engines: set[str]) -> MetricInfo:
    """The primary metric of a study whose runs used these engines: their workload kind's,
    or the default kind's (throughput) when they mix kinds or there are none."""
    kinds = {workload_kind(e).name: workload_kind(e) for e in engines}
    p = (next(iter(kinds.values())) if len(kinds) == 1 else WORKLOAD_KINDS[DEFAULT_KIND]).primary
    return MetricInfo(BY_FIELD[p.field], p.unit, p.higher_is_better)


def resolve(name: str | None, engines: set[str]) -> str:
    """--metric as given, or the study's primary metric for "auto"/None."""
    return primary(engines).name if name in (None, AUTO) else str(name)


def time_words(comparison: Any, higher_is_better: bool, better: str) -> Any:
    """A comparison of elapsed times says so: "b is 13.5% faster (less time, 95% CI ...)"."""
    if higher_is_better or better != "faster" or comparison.verdict not in ("faster", "slower"):
        return comparison
    less = "less time" if comparison.verdict == "faster" else "more time"
    return replace(comparison, text=comparison.text.replace("(95% CI", f"({less}, 95% CI", 1))
