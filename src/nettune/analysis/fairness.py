"""How evenly parallel streams shared the link (study D saw 1.6 to 6.8 Gbit/s in one test).

Jain's fairness index (sum x)^2 / (n * sum x^2) is 1 when every stream got the same
rate and 1/n when one stream got everything.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..store.records import RunRecord
from .serial import JsonRecord

# Below this a reader should be told the streams were uneven.
UNEVEN = 0.9


def jain(rates: Sequence[float]) -> float | None:
    xs = [float(x) for x in rates]
    sq = sum(x * x for x in xs)
    if not xs or sq == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sq)


def stream_rates(run: RunRecord) -> list[float]:
    """Per-stream rates of the main direction (receiver side, else sender side)."""
    out = []
    for s in run.forward_streams:
        v = s.get("receiver_bps") if s.get("receiver_bps") is not None else s.get("sender_bps")
        if v is not None:
            out.append(float(v))
    return out


@dataclass(frozen=True)
class Fairness(JsonRecord):
    streams: int  # streams per test
    jain_mean: float
    jain_min: float  # the least fair run
    slowest_gbps: float  # slowest stream seen in any counted run, Gbit/s (as every throughput of an analysis)
    fastest_gbps: float
    runs: int


def fairness(runs: list[RunRecord]) -> Fairness | None:
    """Fairness over the counted runs of one point; None if no run had > 1 stream."""
    per_run = [r for r in (stream_rates(run) for run in runs) if len(r) > 1]
    if not per_run:
        return None
    idx = [j for j in (jain(r) for r in per_run) if j is not None]
    if not idx:
        return None
    every = [x for r in per_run for x in r]
    return Fairness(max(len(r) for r in per_run), sum(idx) / len(idx), min(idx), min(every) / 1e9, max(every) / 1e9, len(per_run))
