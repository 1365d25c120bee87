"""The [search] section of a study file: measure a fraction of the sweep's grid and find
its best configuration, with a verdict against the defaults (docs/search.md).

    [search]
    method = "tpe"                     # grid (the default: every point) | tpe | halving | peak
    objective = "total"                # a metric of the field table (`--metric` names); its direction is the table's
    per = "cpu_host"                   # optional: objective per unit of this cost
    constraints = ["cpu_host <= 150"]  # a winner must satisfy every one
    budget = 24                        # tests, or a time: "45m"
    seed = 1

What the sweep's lists hold is the search space; what this section cannot check alone
(a parameter's name, a baseline value) is checked against the sweep when the file is read
(models.Study), and against the resolved points when the search starts (search/space.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import Field, field_validator, model_validator

from ..record.fields import FIELDS, METRIC_FIELDS
from .field_types import NotBool, Strict
from .rates import parse_rate

METHODS = ("grid", "tpe", "halving", "peak")
SCALES = ("categorical", "ordered", "log")
DEFAULT = "default"  # a knob-only parameter at its default: its knobs left as the host had them
_BUDGET_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)\s*$")
_CONSTRAINT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|<|>)\s*(\S+)\s*$")
Scalar = Union[bool, int, float, str]


@dataclass(frozen=True)
class Constraint:
    """`metric op bound`, the bound in the metric's stored unit (bit/s, %, s, ...)."""

    metric: str
    op: str
    bound: float

    def holds(self, value: float) -> bool:
        return {"<=": value <= self.bound, ">=": value >= self.bound, "<": value < self.bound, ">": value > self.bound}[self.op]

    @property
    def upper(self) -> bool:
        """The bound is a ceiling (<=, <): the value must stay below it."""
        return self.op in ("<=", "<")

    def text(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"


def parse_constraint(text: str) -> Constraint:
    """'cpu_host <= 150' -> Constraint; ValueError (a sentence) otherwise."""
    m = _CONSTRAINT.match(text)
    if m is None:
        raise ValueError(f"{text!r}: write METRIC OP NUMBER, e.g. 'cpu_host <= 150' or 'total >= 1G' (OP: <=, >=, <, >)")
    name, op, raw = m.groups()
    name = metric_name(name)
    if name not in METRIC_FIELDS:
        raise ValueError(f"{text!r}: {name!r} is not a metric; use one of {', '.join(METRIC_FIELDS)}")
    if METRIC_FIELDS[name].row.unit == "bit/s":
        try:
            bound = float(parse_rate(raw))
        except ValueError as e:
            raise ValueError(f"{text!r}: {e}") from None
    else:
        try:
            bound = float(raw)
        except ValueError:
            raise ValueError(f"{text!r}: {raw!r} is not a number (in {name}'s unit, {METRIC_FIELDS[name].row.unit})") from None
    return Constraint(name, op, bound)


def metric_name(name: str) -> str:
    """A metric by its `--metric` name or its field's (total_bps is total)."""
    f = FIELDS.get(name)
    return str(f.row.metric) if name not in METRIC_FIELDS and f is not None and f.row.metric in METRIC_FIELDS else name


def budget_seconds(text: str) -> float | None:
    """'45m' -> 2700.0; None when it is not a time."""
    m = _BUDGET_TIME.match(text)
    return None if m is None else float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]


class SearchParam(Strict):
    """How one sweep parameter is searched."""

    scale: Literal["categorical", "ordered", "log"] | None = Field(
        default=None, description="categorical: unordered choices; ordered: numbers on a linear scale; log: numbers on a log scale "
                                  "(default: ordered for numbers, log when they grow geometrically, categorical otherwise).")
    when: dict[str, Annotated[list[Scalar], Field(min_length=1)]] | None = Field(
        default=None, description="Conditional: searched only when these parameters have one of these values, e.g. "
                                  "{ cc = [\"bbr\"] }; otherwise held at its first value.")


class SearchSpec(Strict):
    """Search the sweep's grid by measuring a fraction of it (docs/search.md)."""

    method: Literal["grid", "tpe", "halving", "peak"] = Field(
        default="grid", description="grid: every point (no search); tpe: a model-based optimizer (optuna's TPE); halving: "
                                    "successive halving; peak: one ordered parameter's peak.")
    objective: str = Field(default="auto", description="The metric to optimise (a `--metric` name of the field table: total, wall, "
                                                       "cpu_host, ...); its direction is the table's. auto: the workload kind's primary metric.")
    per: str | None = Field(default=None, description="Optimise the objective per unit of this cost metric (cpu_host, power, ...).")
    constraints: list[str] = Field(default_factory=list, description="'METRIC OP NUMBER' each (OP: <=, >=, <, >), in the metric's "
                                                                     "stored unit; a winner satisfies every one.")
    budget: Annotated[int, NotBool, Field(ge=1, le=100_000)] | str = Field(
        default=0, description="Tests the search may run (a short test counts for its fraction of a full one), or a time such "
                               "as \"45m\", \"2h\". Baseline, confirmation and ablation are inside it. Default: the grid's size.")
    seed: Annotated[int, NotBool] = Field(default=0, description="Seed of every random choice (the same seed, the same search).")
    parameter: str | None = Field(default=None, description="peak: the ordered parameter (default: the sweep's only list).")
    baseline: dict[str, Scalar] = Field(
        default_factory=dict, description="The defaults' values of parameters that are not only knob values (default: each "
                                          "one's first value; a knob-only parameter's default leaves its knobs as found).")
    confirm: Annotated[int, NotBool] = Field(default=3, ge=2, le=100, description="Runs on each side of the final comparisons "
                                                                                  "(the defaults, the winner, each ablation).")
    reboot_cost: Annotated[float, NotBool] = Field(default=4.0, ge=0, le=1000, description="Tests a reboot or a domain restart "
                                                                                          "counts for in a budget of tests.")
    params: dict[str, SearchParam] = Field(default_factory=dict, description="Per sweep parameter: its scale, its condition.")

    @field_validator("objective", "per")
    @classmethod
    def _metric(cls, v: str | None) -> str | None:
        if v is not None and v != "auto":
            v = metric_name(v)
        if v is None or v == "auto" or v in METRIC_FIELDS:
            return v
        raise ValueError(f"{v!r} is not a metric; use one of {', '.join(METRIC_FIELDS)}")

    @field_validator("constraints")
    @classmethod
    def _constraints(cls, v: list[str]) -> list[str]:
        for c in v:
            parse_constraint(c)
        return v

    @field_validator("budget")
    @classmethod
    def _budget(cls, v: int | str) -> int | str:
        if isinstance(v, str):
            s = budget_seconds(v)
            if s is None or s <= 0:
                raise ValueError(f"{v!r}: give a number of tests (24) or a time (\"45m\", \"2h\", \"900s\")")
        return v

    @model_validator(mode="after")
    def _per(self) -> "SearchSpec":
        if self.per is not None:
            if self.objective != "auto" and METRIC_FIELDS[self.objective].row.better != "higher":
                raise ValueError(f"per = {self.per!r}: a cost divides an objective where higher is better (total, sender, ...), "
                                 f"not {self.objective!r}")
            if METRIC_FIELDS[self.per].row.better != "lower":
                raise ValueError(f"per = {self.per!r}: the cost must be a metric where lower is better (cpu_host, power, energy, ...)")
        return self

    def parsed_constraints(self) -> list[Constraint]:
        return [parse_constraint(c) for c in self.constraints]

    def budget_time(self) -> float | None:
        """The budget in seconds, when it is a time."""
        return budget_seconds(self.budget) if isinstance(self.budget, str) else None

    def check_sweep(self, sweep: dict[str, Any]) -> str | None:
        """What the sweep cannot give this search (one sentence), or None."""
        lists = [k for k, v in sweep.items() if isinstance(v, list)]
        for name in [*self.params, *(self.baseline), *([self.parameter] if self.parameter else [])]:
            if name not in sweep:
                return f"{name!r} is not a sweep parameter (the sweep has: {', '.join(sweep) or 'none'})"
            if name not in lists:
                return f"{name!r} is not a list in [sweep]: only listed values are searched"
        for name, p in self.params.items():
            for other, values in (p.when or {}).items():
                if other not in lists or other == name:
                    return f"params.{name}.when: {other!r} is not another list of the sweep"
                bad = [v for v in values if v not in sweep[other]]
                if bad:
                    return f"params.{name}.when: {bad[0]!r} is not one of {other}'s values {sweep[other]}"
            if p.scale in ("ordered", "log") and not all(_number(v) for v in sweep[name]):
                return f"params.{name}.scale = {p.scale!r}: its values {sweep[name]} are not all numbers"
            if p.scale == "log" and not all(v > 0 for v in sweep[name]):
                return f"params.{name}.scale = 'log': its values must be above 0"
        if self.method == "peak":
            if self.parameter is None and len(lists) != 1:
                return f"method = 'peak' searches one ordered parameter: name it with parameter = (the sweep lists {', '.join(lists) or 'none'})"
            name = self.parameter or lists[0]
            others = [k for k in lists if k != name]
            if others:
                return f"method = 'peak' varies only {name!r}: make {', '.join(others)} constants, or use method = 'tpe'"
            if not all(_number(v) and v > 0 for v in sweep[name]) or len(sweep[name]) < 3:
                return f"method = 'peak': {name!r} needs at least 3 numbers above 0 (it has {sweep[name]})"
        if self.method != "grid" and not lists:
            return f"method = {self.method!r} needs a sweep with at least one list to search"
        return None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
