"""Runs that split into two bands: two regimes reported as one mean describe neither.

On a busy or unpinned host the same point can land in two regimes, e.g. 10.6-13.6 and
15-24 Gbit/s depending on where the scheduler put the client; "17.8 +- 3.8" is then the
mean of two things. Per point with at least MIN_RUNS counted runs, nettune tests for two
bands with the best split of the sorted runs (on a log scale for a positive metric):
the share of the spread that split explains (between-band / total sum of squares, each band
at least MIN_BAND runs) is the Engelman-Hartigan statistic for two normal clusters; its
p-value comes from the same statistic on normal samples of the same size (seeded, so a
report is reproducible; the statistic does not depend on the mean or spread). The points
tested are one family (Bonferroni, analysis/policy.py). A split is then set against the
client's and the server's CPU per run (Pearson's r): bands that follow the CPU point at
placement, and the advice is to pin the processes to fixed cores.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats as sst

from .data import METRICS, Metric, PointData, StudyData
from .policy import ALPHA, adjusted, over
from .serial import JsonRecord
from .sweep import num

MIN_RUNS = 6  # fewer runs cannot show two bands of at least MIN_BAND each with any power
MIN_BAND = 2  # one odd run is an outlier (stats.mad_outliers), not a band
NULL_DRAWS = 20000
SEED = 29
CPU_SIDES = {"client": "cpu_client", "server": "cpu_server"}


@dataclass
class Band(JsonRecord):
    runs: int
    mean: float
    low: float
    high: float


@dataclass
class PointBands(JsonRecord):
    point: dict[str, Any]
    label: str
    n: int
    explained: float  # share of the spread the best split explains (0..1)
    p_value: float  # against one normal band, adjusted over the points tested
    bands: list[Band] = field(default_factory=list)  # low band first
    cpu: dict[str, float] = field(default_factory=dict)  # side -> Pearson r of the run values with that side's CPU
    text: str = ""


def split_stat(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best two-band split of each row of x (..., n): (explained share, runs in the low band)."""
    xs = np.sort(x, axis=-1)
    n = xs.shape[-1]
    k = np.arange(MIN_BAND, n - MIN_BAND + 1)
    c = np.cumsum(xs, axis=-1)
    total = c[..., -1:]
    lo = c[..., k - 1] / k
    hi = (total - c[..., k - 1]) / (n - k)
    between = k * (n - k) / n * (hi - lo) ** 2
    tss = ((xs - xs.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(tss[..., None] > 0, between / tss[..., None], 0.0)
    best = share.argmax(axis=-1)
    return np.take_along_axis(share, best[..., None], -1)[..., 0], k[best]


@lru_cache(maxsize=64)
def null_stats(n: int) -> np.ndarray:
    """The statistic on NULL_DRAWS normal samples of n runs, sorted (seeded)."""
    rng = np.random.default_rng(SEED + n)
    return np.sort(split_stat(rng.standard_normal((NULL_DRAWS, n)))[0])


def p_value(stat: float, n: int) -> float:
    null = null_stats(n)
    above = null.size - np.searchsorted(null, stat, side="left")
    return float((1 + above) / (1 + null.size))


def _pearson(x: list[float], y: list[float]) -> float | None:
    if len(x) < 5 or len(set(y)) < 2 or len(set(x)) < 2:
        return None
    return float(sst.pearsonr(x, y)[0])


def bands(data: StudyData, m: Metric, params: list[str]) -> list[PointBands]:
    """The points whose runs split into two bands (significant after Bonferroni over the
    points tested), with the bands and their relation to CPU."""
    tested: list[tuple[PointData, list[float], float, int, float]] = []
    for p in data.points:
        vals = p.values(m)
        if len(vals) < MIN_RUNS:
            continue
        x = np.log(vals) if min(vals) > 0 else np.array(vals)
        split_share, split_k = split_stat(np.asarray(x, dtype=float))
        tested.append((p, vals, float(split_share), int(split_k), p_value(float(split_share), len(vals))))
    out = []
    family = len(tested)
    for p, vals, share, k, pv in tested:
        padj = adjusted(pv, family)
        if padj >= ALPHA:
            continue
        srt = sorted(vals)
        parts = [srt[:k], srt[k:]]
        found = PointBands(p.params, p.label(params), len(vals), share, padj,
                           [Band(len(b), math.fsum(b) / len(b) * m.scale, b[0] * m.scale, b[-1] * m.scale) for b in parts])
        runs = [r for r in p.counted if m.value(r) is not None]
        for side, col in CPU_SIDES.items():
            pairs = [(m.value(r), METRICS[col].value(r)) for r in runs]
            r = _pearson([float(a) for a, c in pairs if a is not None and c is not None], [float(c) for a, c in pairs if a is not None and c is not None])
            if r is not None:
                found.cpu[side] = r
        found.text = _text(found, m, family, data.engines)
        out.append(found)
    return out


def _text(b: PointBands, m: Metric, family: int, engines: set[str]) -> str:
    lo, hi = b.bands
    adj = f", {over(family, 'points')}" if family > 1 else ""
    head = (f"{b.label}: the runs split into two bands, {num(lo.low)}-{num(lo.high)} ({lo.runs} runs) and {num(hi.low)}-{num(hi.high)} "
            f"({hi.runs} runs) {m.label} (the split explains {b.explained * 100:.0f}% of the spread; p={b.p_value:.2g} against one "
            f"normal band{adj}): their mean describes neither")
    cpu = max(b.cpu.items(), key=lambda kv: abs(kv[1])) if b.cpu else None
    tie = f"; the runs go with the {cpu[0]}'s CPU (r={cpu[1]:.2f}), a sign of where the scheduler placed it" if cpu and abs(cpu[1]) >= 0.5 else ""
    if engines & {"iperf3", "iperf2"}:
        pin = ("pin the client and server to fixed cores so that every run measures one placement (iperf3 -A, or taskset; "
               "nettune has no affinity setting of its own yet)")
    else:
        pin = "pin the workload to fixed CPUs (taskset, or vCPU pinning for a guest) so that every run measures one placement"
    return f"{head}{tie}; {pin}"
