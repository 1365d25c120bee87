"""What a search optimises, read off a test: the objective metric (a row of the field
table, its direction the table's), optionally per unit of a cost, and the constraints'
metrics. One observation is one counted slot: the mean over its host pairs, as analysis
reads a point's runs (analysis/data.py), so the search and `nettune analyze` agree."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..analysis.metric import primary
from ..record.fields import METRIC_FIELDS
from ..studyfile.models import Study
from ..studyfile.search_section import Constraint, SearchSpec
from .space import Config


@dataclass(frozen=True)
class Objective:
    metric: str  # a metric name of the field table
    per: str | None  # cost metric: the objective is metric / per
    higher_is_better: bool
    constraints: tuple[Constraint, ...] = ()

    @property
    def names(self) -> list[str]:
        """Every metric an observation keeps."""
        return list(dict.fromkeys([self.metric, *([self.per] if self.per else []), *(c.metric for c in self.constraints)]))

    @property
    def title(self) -> str:
        """What is optimised: 'total', 'total per cpu_host'."""
        return self.metric if self.per is None else f"{self.metric} per {self.per}"

    @property
    def label(self) -> str:
        """The unit values are shown in: 'Gbit/s', 'seconds', 'bit/s per %'."""
        row = METRIC_FIELDS[self.metric].row
        return row.label if self.per is None else f"{row.unit} per {METRIC_FIELDS[self.per].row.unit}"

    @property
    def scale(self) -> float:
        """Stored value x scale = shown value (Gbit/s for bit/s); 1 for a ratio."""
        return METRIC_FIELDS[self.metric].row.scale if self.per is None else 1.0

    @property
    def words(self) -> tuple[str, str]:
        return METRIC_FIELDS[self.metric].row.words if self.per is None else ("better", "worse")

    def value(self, metrics: dict[str, float | None]) -> float | None:
        v = metrics.get(self.metric)
        if v is None or self.per is None:
            return v
        c = metrics.get(self.per)
        return None if c is None or c <= 0 else v / c

    def show(self, v: float | None) -> str:
        return "-" if v is None else f"{v * self.scale:.4g}"

    def better(self, a: float, b: float) -> bool:
        """a is better than b."""
        return a > b if self.higher_is_better else a < b


def objective_of(study: Study) -> Objective:
    spec = study.search or SearchSpec()
    name = primary({str(study.workload.engine)}).name if spec.objective == "auto" else spec.objective
    return Objective(name, spec.per, METRIC_FIELDS[name].row.better == "higher", tuple(spec.parsed_constraints()))


@dataclass(frozen=True)
class Observation:
    """One counted slot of one configuration."""

    config: Config
    seq: int  # its place in the search's order (0, 1, ...)
    metrics: dict[str, float | None]
    value: float | None  # the objective; None: the test failed or did not give it
    cost: float = 1.0  # budget units: tests (a short test its fraction), reboots at their cost
    seconds: float = 0.0
    switches: int = 0  # reboots or domain restarts before it
    point: int | None = None  # the stored point's index
    run: int | None = None

    @property
    def ok(self) -> bool:
        return self.value is not None


@dataclass
class Reading:
    """The metrics of one slot from its tests (TestResults while running, RunRecords read
    back): the mean over the slot's tests (its host pairs) of each metric."""

    values: dict[str, list[float | None]] = field(default_factory=dict)

    @classmethod
    def of(cls, objective: Objective, tests: Iterable[Any], get: Callable[[Any, str], Any]) -> "Reading":
        out = cls()
        for t in tests:
            for name in objective.names:
                out.values.setdefault(name, []).append(_num(get(t, name)))
        return out

    def metrics(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name, vs in self.values.items():
            good = [v for v in vs if v is not None]
            out[name] = sum(good) / len(good) if good and len(good) == len(vs) else None
        return out


def of_result(result: Any, name: str) -> Any:
    """A metric of a TestResult (engines/result.py): its field or its part's."""
    return METRIC_FIELDS[name].of_result(result) if result.ok else None


def of_record(record: Any, name: str) -> Any:
    """A metric of a stored run (store/records.py RunRecord)."""
    return METRIC_FIELDS[name].of(record) if record.ok else None


def _num(v: Any) -> float | None:
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if f != f else f
