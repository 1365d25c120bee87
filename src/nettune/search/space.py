"""The search space of a study: its sweep's lists as parameters, a configuration as one
value of each, the defaults (the baseline), and the points a configuration runs as.

A parameter whose values change only [knobs] values is *knob-only*: at its default its
knobs are left as the host had them (stored as the value "default"). Every other
parameter's default is `[search] baseline` or its first value. Knobs that use no swept
parameter (`"cc" = "bbr"`) are left as found at the baseline and, one at a time, in the
winner's ablation (stored as `as_found = "cc"`). Which knobs a parameter drives is found
by resolving points that differ only in it, so templates and sweep expressions need no
second reading here.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from ..errors import SpecError
from ..plan.run_order import signature
from ..plan.points import Point, ResolvedPoint, expand, point_params, resolve
from ..studyfile import expr
from ..studyfile.load import find_line
from ..studyfile.models import Study, workload_kind
from ..studyfile.search_section import DEFAULT, SearchSpec

AS_FOUND = "as_found"  # the stored parameter naming the constant knobs a point leaves as found
DURATION = "duration"  # the stored parameter of a halving study: each point's test seconds
# what a reboot or restart depends on: the boot-time knobs (key, value, hosts), the restarting ones (key, value)
SwitchKey = tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...]  # plan/run_order.signature: costly knob values per level


@dataclass(frozen=True)
class Param:
    name: str
    values: tuple[Any, ...]  # as the sweep lists them
    scale: str  # categorical | ordered | log
    knob_only: bool  # only [knobs] values change with it
    default: Any  # its baseline value (DEFAULT: knobs as found)
    when: tuple[tuple[str, tuple[Any, ...]], ...] = ()  # searched only when these parameters hold one of these values

    @property
    def ordered(self) -> list[Any]:
        """Its values low to high (an ordered or log scale), else as listed."""
        return sorted(self.values) if self.scale != "categorical" else list(self.values)

    def active(self, values: dict[str, Any]) -> bool:
        return all(values.get(k) in vs for k, vs in self.when)


@dataclass(frozen=True)
class Config:
    """One configuration: a value per parameter (DEFAULT for a knob-only one left as found),
    the constant knobs left as found, and a short test's seconds (halving; None: the
    workload's own)."""

    values: tuple[tuple[str, Any], ...]
    as_found: frozenset[str] = frozenset()
    duration: int | None = None

    def get(self, name: str) -> Any:
        return dict(self.values)[name]

    def set(self, **changes: Any) -> "Config":
        return replace(self, values=tuple((k, changes.get(k, v)) for k, v in self.values))

    def full(self) -> "Config":
        """The same configuration at the workload's own test length."""
        return replace(self, duration=None)

    def short(self, seconds: int | None) -> "Config":
        return replace(self, duration=seconds)

    def key(self) -> str:
        return json.dumps([list(self.values), sorted(self.as_found), self.duration], sort_keys=True, default=str)

    def label(self, names: list[str] | None = None) -> str:
        shown = [f"{k}={v}" for k, v in self.values if names is None or k in names]
        if self.as_found:
            shown.append(f"{', '.join(sorted(self.as_found))} as found")
        if self.duration is not None:
            shown.append(f"{self.duration} s tests")
        return ", ".join(shown) or "(single point)"


@dataclass
class Space:
    study: Study
    spec: SearchSpec
    params: list[Param]
    const_knobs: list[str]  # knob keys no parameter changes
    knobs_of: dict[str, list[str]]  # knob-only parameter -> the knob keys it changes
    grid: list[Config]  # every distinct candidate, in the sweep's order
    grid_index: dict[Config, int]  # candidate -> its point index in the sweep
    baseline: Config
    full_duration: int | None  # the workload's test seconds (None: a command workload has no fixed length)
    stored_keys: list[str] = field(default_factory=list)  # extra stored parameters (as_found, duration)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def config(self, values: dict[str, Any], as_found: frozenset[str] = frozenset(), duration: int | None = None) -> Config:
        """A configuration with each inactive conditional parameter held at its first value."""
        vals = dict(values)
        for p in self.params:
            if not p.active(vals):
                vals[p.name] = p.values[0]
        return Config(tuple((p.name, vals[p.name]) for p in self.params), as_found, duration)

    def on_grid(self, cfg: Config) -> bool:
        return cfg.full() in self.grid_index and not cfg.as_found

    def stored_params(self, cfg: Config) -> dict[str, Any]:
        """The parameters stored with a configuration's point (what results and compare show)."""
        values = dict(cfg.values)
        env = point_params(self.study, {p.name: (p.values[0] if values[p.name] == DEFAULT else values[p.name]) for p in self.params})
        defaulted = {p.name for p in self.params if values[p.name] == DEFAULT}
        out = {}
        for k, v in env.items():
            uses = expr.names_in(self.study.sweep[k]) if isinstance(self.study.sweep.get(k), str) else {k}
            out[k] = DEFAULT if uses & defaulted else v
        if AS_FOUND in self.stored_keys:
            out[AS_FOUND] = ",".join(sorted(cfg.as_found))
        if DURATION in self.stored_keys:
            out[DURATION] = cfg.duration if cfg.duration is not None else self.full_duration
        return out

    def from_stored(self, params: dict[str, Any]) -> Config | None:
        """The configuration a stored point ran (None: not one of this space's)."""
        try:
            values = {p.name: params[p.name] for p in self.params}
        except KeyError:
            return None
        found = frozenset(x for x in str(params.get(AS_FOUND) or "").split(",") if x)
        d = params.get(DURATION)
        duration = None if d is None or d == self.full_duration else int(d)
        cfg = Config(tuple((p.name, values[p.name]) for p in self.params), found, duration)
        return cfg

    def resolved(self, cfg: Config, index: int) -> ResolvedPoint:
        """The point a configuration runs as: its parameters filled in, its defaulted and
        as-found knobs left out (so the knobs layer leaves them as the host had them), and
        a short test's seconds."""
        values = {p.name: (p.values[0] if v == DEFAULT else v) for p, (_, v) in zip(self.params, cfg.values)}
        rp = resolve(self.study, Point(index, point_params(self.study, values)))
        rp = ResolvedPoint(Point(index, self.stored_params(cfg)), rp.target, rp.workload, dict(rp.extra))
        off = set(cfg.as_found) | {k for p in self.params if cfg.get(p.name) == DEFAULT for k in self.knobs_of.get(p.name, [])}
        if off and "knobs" in rp.extra:
            knobs = {k: v for k, v in dict(rp.extra["knobs"] or {}).items() if k not in off}
            if isinstance(knobs.get("hosts"), dict):
                knobs["hosts"] = {k: v for k, v in knobs["hosts"].items() if k not in off}
            rp.extra["knobs"] = knobs
        if cfg.duration is not None:
            rp.workload = rp.workload.model_copy(update={"duration": cfg.duration})
        return rp

    def switch_key(self, rp: ResolvedPoint) -> SwitchKey:
        """What changing costs a reboot or a VM restart: the values of the costly knobs, as
        the run's order groups them (plan/run_order.py)."""
        return signature(rp)

    def neighbours(self, cfg: Config) -> list[Config]:
        """The grid's configurations one step from cfg: each parameter one listed value up or
        down (a categorical one: each other value)."""
        out = []
        for p in self.params:
            vals = p.ordered
            v = cfg.get(p.name)
            if v not in vals:
                continue
            i = vals.index(v)
            near = [x for k, x in enumerate(vals) if k != i] if p.scale == "categorical" else [vals[k] for k in (i - 1, i + 1) if 0 <= k < len(vals)]
            for x in near:
                c = self.config(dict(cfg.set(**{p.name: x}).values), cfg.as_found)
                if c in self.grid_index and c != cfg and c not in out:
                    out.append(c)
        return out

    def factors(self, winner: Config) -> list[tuple[str, str, Config]]:
        """The winner's ablation, (parameter or knob, what changes, config): each parameter
        where it differs from the defaults put back to its default, and each constant knob
        left as found, one at a time."""
        out = []
        for p in self.params:
            if winner.get(p.name) != p.default:
                shown = f"{p.name} back to {'its default (its knobs as found)' if p.default == DEFAULT else p.default}"
                out.append((p.name, shown, self.config(dict(winner.set(**{p.name: p.default}).values), winner.as_found)))
        for k in self.const_knobs:
            if k not in winner.as_found:
                out.append((k, f"{k} left as found", replace(winner, as_found=winner.as_found | {k})))
        return [(f, n, c) for f, n, c in out if c != winner]

    def max_factors(self) -> int:
        return len(self.params) + len(self.const_knobs)


def build_space(study: Study, text: str = "", file: str = "<study>") -> Space:
    """The space of a study with a [search] section (SpecError naming the field when the
    sweep cannot be searched as asked)."""
    spec = study.search or SearchSpec()
    lists = {k: list(v) for k, v in study.sweep.items() if isinstance(v, list)}
    points = expand(study)
    first = {k: v[0] for k, v in lists.items()}
    base_rp = resolve(study, Point(0, point_params(study, first)))
    knobs_at = _knobs(base_rp)
    params: list[Param] = []
    knobs_of: dict[str, list[str]] = {}
    for name, values in lists.items():
        knob_only = True
        changed: set[str] = set()
        for v in values[1:]:
            rp = resolve(study, Point(0, point_params(study, first | {name: v})))
            if _rest(rp) != _rest(base_rp):
                knob_only = False
            changed |= {k for k in set(knobs_at) | set(_knobs(rp)) if knobs_at.get(k) != _knobs(rp).get(k)}
        knob_only = knob_only and bool(changed)
        knobs_of[name] = sorted(changed)
        sp = spec.params.get(name)
        scale = (sp.scale if sp is not None and sp.scale else _scale(values))
        if name in spec.baseline:
            default = spec.baseline[name]
        else:
            default = DEFAULT if knob_only else values[0]
        if knob_only and DEFAULT in values:
            raise SpecError(file, f"sweep.{name}", f"{DEFAULT!r} is a value of {name}, and a search stores its knobs' default as "
                            f"{DEFAULT!r}: rename that value", find_line(text, ["sweep", name]))
        when = tuple((k, tuple(vs)) for k, vs in ((sp.when or {}) if sp is not None else {}).items())
        params.append(Param(name, tuple(values), scale, knob_only, default, when))
    used = {k for ks in knobs_of.values() for k in ks}
    const_knobs = sorted(k for k in knobs_at if k not in used)
    for extra in (AS_FOUND, DURATION):
        if extra in study.sweep:
            raise SpecError(file, f"sweep.{extra}", f"a search stores its own parameter {extra!r}: rename this sweep parameter",
                            find_line(text, ["sweep", extra]))
    space = Space(study, spec, params, const_knobs, {k: v for k, v in knobs_of.items() if v}, [], {}, Config(()), _duration(base_rp))
    seen: dict[Config, int] = {}
    for pt in points:
        cfg = space.config({k: pt.params[k] for k in lists})
        seen.setdefault(cfg, pt.index)
    space.grid = list(seen)
    space.grid_index = seen
    space.baseline = Config(tuple((p.name, p.default) for p in params), frozenset(const_knobs))
    space.stored_keys = ([AS_FOUND] if const_knobs else []) + ([DURATION] if spec.method == "halving" and space.full_duration else [])
    return space


def _knobs(rp: ResolvedPoint) -> dict[str, str]:
    knobs = dict(rp.extra.get("knobs") or {})
    knobs.pop("hosts", None)
    return {k: json.dumps(v, sort_keys=True, default=str) for k, v in knobs.items()}


def _rest(rp: ResolvedPoint) -> str:
    """Everything of a resolved point but its knobs."""
    extra = {k: v for k, v in rp.extra.items() if k != "knobs"}
    return json.dumps([rp.target.model_dump(mode="json"), rp.workload.model_dump(mode="json"), extra], sort_keys=True, default=str)


def _duration(rp: ResolvedPoint) -> int | None:
    d = rp.workload.duration
    return int(d) if isinstance(d, int) and workload_kind(str(rp.workload.engine)).fixed_length else None


def _scale(values: list[Any]) -> str:
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "categorical"
    srt = sorted(float(v) for v in values)
    if len(srt) >= 3 and srt[0] > 0:
        ratios = sorted(b / a for a, b in zip(srt, srt[1:]))
        if ratios[len(ratios) // 2] >= 1.5 and srt[-1] / srt[0] >= 8:
            return "log"  # values that grow geometrically (1, 2, 4, 8, ...; 64K, 256K, 1M, ...)
    return "ordered"


def distance(param: Param, a: Any, b: Any) -> float:
    """How far apart two values of an ordered parameter are on its scale."""
    if param.scale == "log":
        return abs(math.log(float(a)) - math.log(float(b)))
    return abs(float(a) - float(b))


def nearest(param: Param, x: float) -> Any:
    """The listed value nearest x on the parameter's scale."""
    return min(param.values, key=lambda v: distance(param, v, x))


def iter_configs(space: Space) -> Iterator[Config]:
    yield from space.grid
