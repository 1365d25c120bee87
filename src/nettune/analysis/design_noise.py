"""The noise of a single-run study, estimated from its design where the design allows.

With one run per point there is no run-to-run spread to test a difference against, and no
fixed threshold ("5% is noise") can stand in for one: the demo's queues "mattered" at 9.77
vs 14.0 Gbit/s and the next rerun said 26.0 vs 14.7. A full factorial sweep still holds a
noise estimate: fit the additive model (each swept parameter shifts the metric by its own
amount, on a log scale since throughput effects multiply), and what the model leaves over
is noise (plus any interaction, which only makes the estimate larger and the verdicts more
careful). Each parameter's main effect is then tested with an F test against it: two-way
ANOVA without replication (Tukey's classical design for single runs). This also covers
two-level factorials (2^k), where Lenth's pseudo standard error is the other textbook
choice; the additive model's F test is exact under its assumption and needs no
approximate degrees of freedom, so it is used for both.

A sweep that is not a full grid, or whose additive model leaves fewer than MIN_DF degrees of
freedom (one swept parameter; a 2 x 2 sweep leaves 1, an estimate whose 95% interval spans a
factor of 70), has no such estimate: analyze then says "cannot tell without repeats" and
how many runs would settle it. The core (`additive_tests`) takes a numpy array of any
number of studies at once, so the simulation tests judge thousands of seeded studies in
milliseconds through the very code analyze uses.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sst

from .data import Metric, StudyData
from .serial import JsonRecord

MIN_DF = 2  # residual degrees of freedom below which the design's noise is not worth quoting or testing against


@dataclass
class DesignNoise(JsonRecord):
    """Single runs: the noise the design gives, and each swept parameter's F test against it."""

    method: str  # "additive model over the full 4 x 3 sweep (log scale)"
    df: int  # residual degrees of freedom (0: no estimate)
    cv: float | None  # the residual standard deviation, as a fraction of the metric (log scale: ~CV)
    p_values: dict[str, float] = field(default_factory=dict)  # per swept parameter, unadjusted
    why_not: str = ""  # when there is no estimate, why


def additive_tests(y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """F tests of each factor's main effect in an additive model without replication.

    `y` has shape (..., L1, ..., Lk): one value per cell of a full k-factor grid, any leading
    batch shape. Returns (p-values, shape (k, ...)), the residual sd (shape (...)) and the
    residual degrees of freedom."""
    axes = tuple(range(y.ndim - k, y.ndim))
    levels = y.shape[y.ndim - k:]
    n = math.prod(levels)
    grand = y.mean(axis=axes, keepdims=True)
    fitted = np.broadcast_to(grand, y.shape).copy()
    ss = []
    for i, ax in enumerate(axes):
        eff = y.mean(axis=tuple(a for a in axes if a != ax), keepdims=True) - grand
        fitted = fitted + eff
        ss.append(n / levels[i] * (eff**2).sum(axis=axes))
    df = n - 1 - sum(lv - 1 for lv in levels)
    if df < 1:
        raise ValueError("the additive model leaves no degrees of freedom for the noise")
    res = ((y - fitted) ** 2).sum(axis=axes)
    total = ((y - grand) ** 2).sum(axis=axes)
    exact = res <= 1e-20 * total  # the model fits every cell up to rounding: nothing is left to call noise
    ps = []
    for i in range(k):
        with np.errstate(divide="ignore", invalid="ignore"):
            f = (ss[i] / (levels[i] - 1)) / (res / df)
        p = np.where(exact, np.where(ss[i] > 0, 0.0, 1.0), sst.f.sf(np.where(exact, 0.0, f), levels[i] - 1, df))
        ps.append(p)
    return np.array(ps), np.where(exact, 0.0, np.sqrt(res / df)), df


def grid(data: StudyData, m: Metric) -> tuple[np.ndarray | None, list[list[Any]], str]:
    """The single values of a full grid over the swept parameters, or None and why not."""
    axes = data.axes
    levels = [list(dict.fromkeys(p.params.get(a) for p in data.points)) for a in axes]
    cells: dict[tuple[Any, ...], float] = {}
    for p in data.points:
        vals = p.values(m)
        if len(vals) != 1:
            return None, levels, "some points have no counted run" if not vals else "some points have repeats"
        cells[tuple(json_key(p.params.get(a)) for a in axes)] = vals[0]
    want = list(itertools.product(*[[json_key(v) for v in lv] for lv in levels]))
    if len(axes) < 2:
        return None, levels, "only one parameter is swept, so the design leaves nothing over to estimate the noise from"
    if len(cells) != len(data.points) or set(cells) != set(want):
        return None, levels, "the sweep is not a full grid of its parameters, so the design gives no noise estimate"
    y = np.array([cells[c] for c in want], dtype=float).reshape([len(lv) for lv in levels])
    return y, levels, ""


def json_key(v: Any) -> str:
    return repr(v)


def design_noise(data: StudyData, m: Metric) -> DesignNoise:
    """The noise of a single-run study from its design, or why there is none."""
    y, levels, why = grid(data, m)
    if y is None:
        return DesignNoise("", 0, None, why_not=why)
    log = bool((y > 0).all())
    z = np.log(y) if log else y
    shape = " x ".join(str(len(lv)) for lv in levels)
    df = y.size - 1 - sum(len(lv) - 1 for lv in levels)
    if df < MIN_DF:
        return DesignNoise("", 0, None, why_not=f"the {shape} sweep leaves {df} degree{'s' if df != 1 else ''} of freedom to estimate the "
                                                  f"noise from, fewer than {MIN_DF}")
    ps, sd, df = additive_tests(z, len(levels))
    cv = float(sd) if log else float(sd) / abs(float(np.mean(y))) if np.mean(y) else None
    method = f"the residuals of an additive model over the full {shape} sweep ({'log scale, ' if log else ''}{df} df)"
    return DesignNoise(method, df, cv, {a: float(p) for a, p in zip(data.axes, ps)})
