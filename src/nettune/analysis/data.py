"""A study as the analysis sees it: its counted runs grouped by point, the swept
parameters, and the metrics a comparison or a chart can use.

Counted runs are the ok, non-warm-up ones. Failed runs are never averaged in (a
failure has no throughput) but they are counted and shown, so a point with fewer
runs than planned is visible.

A point of a study over host pairs (`[workload] pairs`) holds one test per pair per run:
different links, not repeats. Its values are one per run (repeat), the mean over that
run's pairs, so N is the number of repeats; each pair's own statistics are analysis.links'.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import NettuneError
from ..record.fields import FIELDS, METRIC_FIELDS, Field
from ..store.records import RunRecord
from ..store.base import ResultStore
from ..store.cpu_units import machine_cores
from .stats import Summary, summarize


@dataclass(frozen=True)
class Metric:
    name: str
    label: str  # column / axis label
    scale: float  # stored value * scale = displayed value
    higher_is_better: bool
    better: str  # verdict words for this metric
    worse: str
    get: Callable[[RunRecord], float | None]
    field: str = ""  # the field table's row (record/fields.py) it reads
    by: tuple[str, ...] = ()  # what fills it: engines, "probes", "pairs"

    def value(self, run: RunRecord) -> float | None:
        v = self.get(run)
        return None if v is None else float(v)


def _metric(f: Field) -> Metric:
    """The analysis's view of a field table row (record/fields.py) with a `--metric` name."""
    return Metric(str(f.row.metric), f.row.label, f.row.scale, f.row.better == "higher", *f.row.words, f.of, f.name, f.row.by)


# every metric, from the field table (the rows with a --metric name), primary ones first
METRICS: dict[str, Metric] = {m.name: m for m in sorted((_metric(f) for f in METRIC_FIELDS.values()), key=lambda m: m.name != "total")}
# a metric's field name reads as the metric (--metric energy_j is --metric energy), as exports name the columns
ALIASES = {f.name: m for m, f in METRIC_FIELDS.items() if f.name != m}


def get_metric(name: str) -> Metric:
    try:
        return METRICS[ALIASES.get(name, name)]
    except KeyError:
        raise NettuneError(f"--metric {name!r}: use one of {', '.join(METRICS)}") from None


ENERGY_UNITS = ("J", "W")


def why_missing(runs: list[RunRecord], m: Metric, where: str) -> str:
    """Why none of `where`'s counted runs (`runs`) has a value of `m`: the real cause (the
    metric is another workload's, a machine without powercap, a meter that never answered,
    a host without the peak helper), and the metrics that were measured instead."""
    if not runs:
        return f"{where} has no successful counted run"
    engines = sorted({r.engine for r in runs})
    head = f"{where}: none of its {len(runs)} counted run{'s' if len(runs) != 1 else ''} has {m.name} ({m.label})"
    if m.by and not ({*m.by} & {*engines, "probes"}):
        return f"{head}: {m.name} is measured by {' and '.join(m.by)} workloads, and these ran {', '.join(engines)}"
    cause = ""
    field = FIELDS.get(m.field)
    if field is not None and field.row.unit in ENERGY_UNITS:
        why = sorted({r.energy_why for r in runs if r.energy_why})
        cause = "; ".join(why)
        other = [f"--metric {f.row.metric} ({f.row.label})" for f in METRIC_FIELDS.values()
                 if f.group == "energy" and f.name != m.field and any(f.of(r) is not None for r in runs)]
        if other:
            cause += ("; " if cause else "") + "measured instead: " + ", ".join(other)
    elif m.field == "peak_rss_kb":
        cause = "; ".join(sorted({str(r.peak_rss_method) for r in runs if r.peak_rss_method}))
    return f"{head}: {cause}" if cause else f"{head} (stored by a nettune that did not measure it, or imported without it)"


def require_values(data: "StudyData", m: Metric) -> None:
    """A one-line refusal naming the real cause when the study has counted runs and none
    of them has a value of `m` (analyze, compare and check ask before anything else)."""
    counted = [r for p in data.points for r in p.counted]
    if counted and not any(m.value(r) is not None for r in counted):
        raise NettuneError(why_missing(counted, m, data.name))


def side_values(p: "PointData", m: Metric, name: str) -> list[float]:
    """A point's values of `m`; when fewer than 2 of its counted runs have one, the refusal
    names the real cause (none of them measured it, or only some)."""
    vals = p.values(m)
    counted = p.counted
    if len(vals) >= 2 or len(counted) < 2:
        return vals  # enough, or too few runs: the comparison's own message says so
    if not vals:
        raise NettuneError(why_missing(counted, m, name))
    raise NettuneError(f"{name}: only {len(vals)} of its {len(counted)} counted runs have {m.name} ({m.label}); a comparison needs 2 "
                       f"on each side")


@dataclass
class PointData:
    idx: int
    params: dict[str, Any]
    runs: list[RunRecord] = field(default_factory=list)  # every run of the point, incl. warm-up

    @property
    def counted(self) -> list[RunRecord]:
        return [r for r in self.runs if r.ok and not r.warmup]

    @property
    def failed(self) -> int:
        return sum(1 for r in self.runs if not r.ok and not r.warmup)

    @property
    def has_pairs(self) -> bool:
        """Whether the point's tests ran over host pairs (a mesh, a star, a pair list)."""
        return any(r.pair is not None for r in self.runs)

    def by_pair(self) -> dict[str, list[RunRecord]]:
        """The counted runs of each pair (in first-seen order): N per pair = its repeats."""
        out: dict[str, list[RunRecord]] = {}
        for r in self.counted:
            if r.pair is not None:
                out.setdefault(r.pair, []).append(r)
        return out

    def run_values(self, metric: Metric) -> list[tuple[int, float]]:
        """(run number, value) per counted run; over pairs, one per run: the mean of its pairs."""
        if not self.has_pairs:
            return [(r.run, v) for r in self.counted if (v := metric.value(r)) is not None and v == v]
        per_run: dict[int, list[float]] = {}
        for r in self.counted:
            v = metric.value(r)
            if v is not None and v == v:
                per_run.setdefault(r.run, []).append(v)
        return [(run, sum(vs) / len(vs)) for run, vs in sorted(per_run.items())]

    def values(self, metric: Metric) -> list[float]:
        return [v for _, v in self.run_values(metric)]

    def summary(self, metric: Metric) -> Summary:
        return summarize(self.values(metric))

    def label(self, keys: list[str] | None = None) -> str:
        keys = list(self.params) if keys is None else keys
        return ", ".join(f"{k}={self.params[k]}" for k in keys if k in self.params) or "(single point)"


@dataclass
class StudyData:
    study: dict[str, Any]
    points: list[PointData]
    facts: dict[str, dict[str, Any]]
    axes: list[str]  # independently swept parameters (lists in [sweep])
    derived: list[str]  # varying parameters computed from others ("{queues} * {mult}")

    @property
    def name(self) -> str:
        return str(self.study["name"])

    @property
    def params(self) -> list[str]:
        """Every parameter that varies, in the study file's order."""
        order = list(self.points[0].params) if self.points else []
        return [k for k in order if k in self.axes or k in self.derived]

    @property
    def runs(self) -> list[RunRecord]:
        return [r for p in self.points for r in p.runs]

    @property
    def engines(self) -> set[str]:
        """The engines its runs used (analysis.metric picks the primary metric from them)."""
        return {r.engine for r in self.runs}

    def spec(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.study.get("spec_json") or "{}"))
        except ValueError:
            return {}

    def select(self, filters: dict[str, str]) -> list[PointData]:
        """Points whose parameters match every KEY=VAL (compared as written)."""
        known = set(self.points[0].params) if self.points else set()
        for k in filters:
            if k not in known:
                raise NettuneError(f"{self.name}: no parameter {k!r}; its parameters are: {', '.join(sorted(known)) or 'none'}")
        out = [p for p in self.points if all(same_value(p.params.get(k), v) for k, v in filters.items())]
        if not out:
            want = ",".join(f"{k}={v}" for k, v in filters.items())
            have = "; ".join(p.label() for p in self.points[:6])
            raise NettuneError(f"{self.name}: no point matches {want}; points are: {have}")
        return out

    def host_cores(self) -> int | None:
        """CPU count of the machine whose /proc/stat gives host CPU (the client's)."""
        wl = self.spec().get("workload") or {}
        return machine_cores(wl.get("client"), self.facts)


def jsonable(obj: Any) -> Any:
    """Plain JSON: NaN/inf (a gain from zero) become null, tuples become lists."""
    if isinstance(obj, float):
        return None if obj != obj or obj in (float("inf"), float("-inf")) else obj
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


def same_value(have: Any, want: str) -> bool:
    if str(have) == want or (isinstance(have, bool) and str(have).lower() == want.lower()):
        return True
    try:
        return float(have) == float(want)
    except (TypeError, ValueError):
        return False


def parse_filter(text: str | None, opt: str) -> dict[str, str]:
    """KEY=VAL[,KEY=VAL...] -> dict; a malformed item is a one-line error."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise NettuneError(f"{opt} {text!r}: write KEY=VAL[,KEY=VAL...], e.g. {opt} queues=8,streams=16")
        out[k.strip()] = v.strip()
    return out


def load(store: ResultStore, ref: str | int | None) -> StudyData:
    study = store.find_study(ref)
    study["cross_checks"] = store.cross_checks(study["id"])  # nettune run --cross-check (analysis/instrument.py)
    study["idle"] = store.idle(study["id"])  # [probes] idle_power (analysis/energy_verdicts.py)
    pts = {p["idx"]: PointData(p["idx"], p["point"]) for p in store.points(study["id"])}
    for r in store.runs(study["id"]):
        pts.setdefault(r.point_idx, PointData(r.point_idx, r.point)).runs.append(r)
    points = [pts[i] for i in sorted(pts)]
    axes, derived = _axes(study, points)
    return StudyData(study, points, store.facts(study["id"]), axes, derived)


def _axes(study: dict[str, Any], points: list[PointData]) -> tuple[list[str], list[str]]:
    varying = [k for k in (points[0].params if points else {}) if len({json.dumps(p.params.get(k)) for p in points}) > 1]
    try:
        sweep = json.loads(study.get("spec_json") or "{}").get("sweep") or {}
    except ValueError:
        sweep = {}
    derived = [k for k in varying if isinstance(sweep.get(k), str)]
    axes = [k for k in varying if k not in derived]
    return axes, derived
