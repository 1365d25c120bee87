"""What `analyze()` returns: dataclasses whose `to_dict()` is exactly the JSON `nettune
analyze --format json` prints (fields in the order shown, Gbit/s-scaled values as the
metric's unit says). The report and the CLI read their attributes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .compare import Comparison
from .cost_curves import CostCurve
from .fairness import Fairness
from .frontier import Frontier
from .groups import GroupAnalysis
from .stability import RunStability
from .links import PairAnalysis
from .margins import MarginPoint
from .modes import PointBands
from .repeats import RepeatSuggestion
from .serial import JsonRecord
from .stats import Summary
from .design_noise import DesignNoise
from .effects import Effect
from .energy_verdicts import PointEnergy
from .sweep import Curve


@dataclass
class PointRow(JsonRecord):
    """One point's counted runs summarised in the metric's unit, with CPU per side."""

    point: dict[str, Any]
    label: str
    failed: int
    metric: str
    unit: str
    n: int
    mean: float | None
    median: float | None
    stdev: float | None
    min: float | None
    max: float | None
    cv: float | None
    ci_low: float | None
    ci_high: float | None
    half_width: float | None
    outliers: list[int]  # indices into the counted runs
    margin: float | None
    outlier_runs: list[int]  # their run numbers (0-based)
    cpu_client: float | None = None
    cpu_client_ci: float | None = None
    cpu_server: float | None = None
    cpu_server_ci: float | None = None
    cpu_host: float | None = None
    cpu_host_ci: float | None = None
    fairness: Fairness | None = None
    interval: str = "t"  # how ci_low/ci_high were made: t, log-t or bca (analysis/intervals.py)
    bands: str | None = None  # the runs split into two bands (analysis/modes.py): each band's mean and runs
    energy: list[PointEnergy] = field(default_factory=list)  # joules per run with its margin and watts, per source measured

    @classmethod
    def of(cls, point: dict[str, Any], label: str, failed: int, metric: str, unit: str, s: Summary,
           outlier_runs: list[int]) -> "PointRow":
        return cls(point, label, failed, metric, unit, s.n, s.mean, s.median, s.stdev, s.min, s.max, s.cv,
                   s.ci_low, s.ci_high, s.half_width, list(s.outliers), s.margin, outlier_runs, interval=s.interval)

    def cpu(self, side: str) -> tuple[float | None, float | None]:
        """(mean, 95% half-width) of the CPU of `side`: client, server or host."""
        return {"client": (self.cpu_client, self.cpu_client_ci), "server": (self.cpu_server, self.cpu_server_ci),
                "host": (self.cpu_host, self.cpu_host_ci)}[side]


@dataclass
class Best(JsonRecord):
    point: dict[str, Any]
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int


@dataclass
class LevelComparison(JsonRecord):
    """One level of a parameter against its first level (the baseline)."""

    param: str
    level: Any
    baseline: Any
    fixed: dict[str, Any]
    comparison: Comparison | None  # None: single runs, no test possible
    text: str

    @property
    def verdict(self) -> str | None:
        return None if self.comparison is None else self.comparison.verdict

    def to_dict(self) -> dict[str, Any]:
        out = {"param": self.param, "level": self.level, "baseline": self.baseline, "fixed": self.fixed}
        out |= self.comparison.to_dict() if self.comparison else {"verdict": None, "text": ""}
        return out | {"text": self.text}


@dataclass
class ParameterResult(JsonRecord):
    """What one swept parameter did: curves (numeric, >= 3 levels), comparisons, effect."""

    name: str
    kind: str  # numeric or categorical
    levels: list[Any]
    curves: list[Curve] = field(default_factory=list)
    comparisons: list[LevelComparison] = field(default_factory=list)
    effect: Effect | None = None
    cost_curves: list[CostCurve] = field(default_factory=list)  # CPU and power along it


@dataclass
class PointFairness(JsonRecord):
    point: dict[str, Any]
    label: str
    streams: int
    jain_mean: float
    jain_min: float
    slowest_gbps: float
    fastest_gbps: float
    runs: int

    @classmethod
    def of(cls, row: PointRow, f: Fairness) -> "PointFairness":
        return cls(row.point, row.label, f.streams, f.jain_mean, f.jain_min, f.slowest_gbps, f.fastest_gbps, f.runs)


@dataclass
class PointOutliers(JsonRecord):
    point: dict[str, Any]
    runs: list[int]


@dataclass
class NoisyPoint(JsonRecord):
    point: dict[str, Any]
    cv: float


@dataclass(repr=False)
class Analysis(JsonRecord):
    """A study analysed (`nettune analyze`; `nettune.results(db).analysis(study)`).

    Units, one system: every value of the metric (the points' mean, median, intervals,
    `best`, curves, the level comparisons' `mean_a`/`mean_b`, bands, pairs) is in `unit`,
    the metric's displayed unit (Gbit/s for throughput): the stored value (`stored_unit`,
    bit/s in the runs' frame) times `scale`. Throughput named `gbps` elsewhere (efficiency,
    fairness, stability) is Gbit/s too; CPU is in `cpu_units` (per side); changes and
    margins are in %, ratios have no unit. Example::

        a = nettune.results("results.db").analysis("quick")
        a.unit, a.best.point, a.best.mean   # 'Gbit/s', {'queues': 2, ...}, 9.4
        a.headline                          # the lines a reader needs first
        a.frame()                           # the points as a DataFrame
        a.to_dict()                         # `nettune analyze --format json`
    """

    study: str
    study_id: int
    metric: str
    unit: str
    higher_is_better: bool
    saturation_threshold: float
    params: list[str]  # every varying parameter
    parameters_swept: list[str]  # the independent ones (the axes)
    points: list[PointRow]
    best: Best
    parameters: list[ParameterResult] = field(default_factory=list)
    efficiency: list[Frontier] = field(default_factory=list)  # per cost: frontier, recommended point, waste
    fairness: list[PointFairness] = field(default_factory=list)
    instrument: list[str] = field(default_factory=list)
    outliers: list[PointOutliers] = field(default_factory=list)
    noisy: list[NoisyPoint] = field(default_factory=list)
    pairs: PairAnalysis | None = None  # a study over host pairs: per pair, per round, spread
    groups: GroupAnalysis | None = None  # analyze --by PARAM: each group's effects, interactions (analysis/groups.py)
    stability: list[RunStability] = field(default_factory=list)  # per run: steady, a step or a trend over time (analysis/stability.py)
    findings: list[str] = field(default_factory=list)
    headline: list[str] = field(default_factory=list)
    repeats: list[RepeatSuggestion] = field(default_factory=list)  # runs that would settle the closest calls
    share: float = 0.8  # of the best throughput the recommended point must reach (--share)
    interval: str = "Student's t"  # how every point's 95% interval was made
    interval_why: str = ""  # why, when not Student's t (skewed runs)
    cpu_units: dict[str, str] = field(default_factory=dict)  # side -> unit of its CPU column ("% of 1 core")
    policy: str = ""  # the multiplicity policy every verdict follows (analysis/policy.py)
    effect_tests: int = 0  # the family behind the "mattered" verdicts: each judged at 5% / this
    noise: DesignNoise | None = None  # single runs: the noise the design gives, or why none
    bands: list[PointBands] = field(default_factory=list)  # points whose runs split into two bands
    margins: list[MarginPoint] = field(default_factory=list)  # adaptive repeats: target_margin reached per point
    summary: list[str] = field(default_factory=list)  # at most five lines: best, mattered, recommended, how sure, next (digest.py)
    sections: dict[str, list[str]] = field(default_factory=dict)  # the findings grouped: throughput, cost, noise, instrument
    stored_unit: str = ""  # the metric's unit as stored (bit/s): a value here = the stored value * scale
    scale: float = 1.0

    def frame(self) -> Any:
        """The points as a pandas DataFrame: the swept parameters (ordered categoricals),
        then N, mean, median, stdev, the 95% interval (ci_low, ci_high), failed tests and
        the CPU per side; `df.attrs["units"]` names each column's unit."""
        import pandas as pd

        from .categories import categorical

        cols = ["n", "mean", "median", "stdev", "min", "max", "ci_low", "ci_high", "half_width", "cv", "failed",
                "cpu_client", "cpu_server", "cpu_host"]
        df = pd.DataFrame({p: pd.Series(categorical([r.point.get(p) for r in self.points])) for p in self.params})
        for c in cols:
            df[c] = pd.Series([r.__dict__[c] for r in self.points], dtype="Int64" if c in ("n", "failed") else "Float64")
        df.attrs["units"] = {c: self.unit for c in ("mean", "median", "stdev", "min", "max", "ci_low", "ci_high", "half_width")}
        df.attrs["units"] |= {f"cpu_{side}": unit for side, unit in self.cpu_units.items()}
        return df

    def __repr__(self) -> str:
        best = f"{self.best.mean:.4g} {self.unit}" if self.best.mean is not None else "none"
        lines = [f"Analysis({self.study!r} #{self.study_id}: {self.metric} in {self.unit}, {len(self.points)} points, best {best})"]
        # the five-line summary a notebook shows (best, mattered, recommended, how sure, next);
        # every finding is in .headline and .findings
        return "\n".join(lines + [f"  {h}" for h in self.summary or self.headline])
