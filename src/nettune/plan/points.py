"""Turn a study's [sweep] into points, and a point into concrete settings.

Lists in [sweep] form a cartesian product (in file order, last one fastest); a string
is an expression over other parameters, evaluated per point; a scalar is a constant.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..errors import SpecError
from ..studyfile import expr
from ..studyfile.command_fields import fill_workload
from ..studyfile.load import find_line, spec_error
from ..studyfile.models import Study, Workload, workload_kind
from .point_hosts import check_point_hosts


# Default limit on a sweep's points (`nettune run --max-points N` raises it): past this a
# sweep is nearly always a typo, and expanding it would take minutes and gigabytes.
MAX_POINTS = 10_000


@dataclass(frozen=True)
class Point:
    """One point of a study's sweep: its index (0-based, in sweep order) and its parameters
    with every expression filled in. Example::

        study = nettune.load_study("examples/quick.toml")
        [p.label() for p in nettune.expand(study)]   # ['queues=1, mult=1, streams=1', ...]
    """

    index: int
    params: dict[str, Any]

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.params.items()) or "(single point)"


@dataclass
class ResolvedPoint:
    """Concrete settings of one point: every placeholder filled and validated."""

    point: Point
    target: Any  # the target spec model with concrete values
    workload: Workload
    extra: dict[str, Any] = field(default_factory=dict)  # other sections filled for this point (knobs...)


@dataclass(frozen=True)
class Slot:
    """One test to run: a point, its run number, and whether it is a warm-up."""

    point: Point
    run: int
    warmup: bool


def count_points(study: Study) -> int:
    """How many points the sweep has, from the list lengths alone (nothing is expanded)."""
    n = 1
    for v in study.sweep.values():
        if isinstance(v, list):
            n *= len(v)
    return n


def check_point_count(study: Study, max_points: int = MAX_POINTS, text: str = "", file: str = "<study>") -> int:
    """Refuse, before anything is expanded, a sweep of more than max_points points."""
    n = count_points(study)
    if n > max_points:
        sizes = " x ".join(str(len(v)) for v in study.sweep.values() if isinstance(v, list))
        raise SpecError(file, "sweep", f"{n:,} points ({sizes} values) is more than the limit of {max_points:,}; "
                        f"use fewer values, or raise the limit with `nettune run --max-points {n}`", find_line(text, ["sweep"]))
    return n


def expand(study: Study) -> list[Point]:
    """Every point of the study's sweep, in order: the product of its lists, constants
    added, expressions ("{queues} * {mult}") evaluated. Example::

        points = nettune.expand(nettune.load_study("examples/quick.toml"))
        len(points), points[0].params           # 4, {'queues': 1, 'mult': 1, 'streams': 1}
    """
    lists = {k: v for k, v in study.sweep.items() if isinstance(v, list)}
    return [Point(i, point_params(study, dict(zip(lists, combo)))) for i, combo in enumerate(itertools.product(*lists.values()) if lists else [()])]


def point_params(study: Study, values: dict[str, Any]) -> dict[str, Any]:
    """A point's parameters from one value per sweep list (any value, listed or not: a
    search's baseline may be off the grid): the constants, then every expression in the
    order they depend on each other, in the file's key order so tables read as written."""
    consts = {k: v for k, v in study.sweep.items() if not isinstance(v, (list, str))}
    exprs = {k: v for k, v in study.sweep.items() if isinstance(v, str)}
    env: dict[str, Any] = dict(values) | consts
    for name in _expr_order(exprs, set(values) | set(consts)):
        env[name] = expr.evaluate(exprs[name], env)
    return {k: env[k] for k in study.sweep}


def _expr_order(exprs: dict[str, str], known: set[str]) -> list[str]:
    order: list[str] = []
    pending = dict(exprs)
    while pending:
        ready = [k for k, v in pending.items() if expr.names_in(v) <= known | set(order)]
        if not ready:
            missing = {k: expr.names_in(v) - known - set(order) - set(pending) for k, v in pending.items()}
            bad = next(((k, m) for k, m in missing.items() if m), None)
            if bad:
                raise expr.ExprError(f"{bad[0]} = {pending[bad[0]]!r} uses unknown parameter(s) {', '.join(sorted(bad[1]))}")
            raise expr.ExprError(f"circular expressions among: {', '.join(sorted(pending))}")
        for k in ready:
            order.append(k)
            del pending[k]
    return order


def resolve(study: Study, point: Point) -> ResolvedPoint:
    raw = study.model_dump(mode="python")
    env = dict(point.params)
    target = type(study.target).model_validate(expr.fill(raw["target"], env))
    workload = Workload.model_validate(fill_workload(raw["workload"], env))  # command strings: values shell-quoted
    extra = {k: expr.fill(v, env) for k, v in raw.items() if k not in ("target", "workload", "sweep", "repeat", "name", "description")}
    return ResolvedPoint(point, target, workload, extra)


def expand_and_check(study: Study, text: str = "", file: str = "<study>") -> list[ResolvedPoint]:
    """Expand and resolve every point; any problem becomes a SpecError naming the field."""
    try:
        points = expand(study)
    except expr.ExprError as e:
        key = str(e).split(" ", 1)[0]
        loc = ["sweep", key] if key in study.sweep else ["sweep"]
        raise SpecError(file, ".".join(loc), str(e), find_line(text, loc)) from None
    resolved = []
    for p in points:
        try:
            resolved.append(resolve(study, p))
        except expr.ExprError as e:
            raise SpecError(file, "", f"at point {p.label()}: {e}") from None
        except ValidationError as e:
            section = _section_of(e, study)
            model = {"workload": Workload, "target": type(study.target)}.get(section, type(study))
            err = spec_error(e, model, text, file)
            field = f"{section}.{err.field}" if section else err.field
            raise SpecError(file, field, f"{err.problem} (at point {p.label()})", find_line(text, field.split("."))) from None
        problem = workload_kind(str(resolved[-1].workload.engine)).check(resolved[-1].workload)  # the kind's rules, on this point's values
        if problem:
            raise SpecError(file, "workload", f"{problem} (at point {p.label()})", find_line(text, ["workload"]))
        check_point_hosts(study, resolved[-1], text, file)  # hosts the sweep names ("{os}-a") exist at this point
    return resolved


def _section_of(e: ValidationError, study: Study) -> str:
    """The section whose model failed: the workload, or the study's own target spec."""
    return {Workload.__name__: "workload", type(study.target).__name__: "target"}.get(e.title, "")


def schedule(study: Study, points: list[Point]) -> list[Slot]:
    """The order tests run in; interleaved by default so drift over time spreads evenly."""
    rep = study.repeat
    total = rep.warmup + rep.min_counted  # adaptive studies add rounds at run time
    per_point = [[Slot(p, r, r < rep.warmup) for r in range(total)] for p in points]
    if rep.order == "sequential":
        return [s for slots in per_point for s in slots]
    rounds = [[slots[r] for slots in per_point] for r in range(total)]
    if rep.order == "shuffled":
        rng = random.Random(rep.seed)
        for rnd in rounds:
            rng.shuffle(rnd)
    return [s for rnd in rounds for s in rnd]
