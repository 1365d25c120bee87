"""`nettune history`: every stored rerun of one study, per point and per pair, as a series
of means with their intervals, the change points in it, and what changed between the
reruns on each side of each (analysis/changepoints.py finds them).

A rerun is a stored study of the same name and the same points (the same parameters at
every point), finished or imported, in the order it was started; reruns of the name with
other points are left out and counted. In a store that several machines share
(PostgreSQL), every machine's reruns of the study are in the series.

The family (analysis/policy.py) is every test of the question "did this study change?":
two per series (a step inside it, the latest rerun alone), so identical reruns show a
change point in at most 5% of histories whatever the number of points and pairs.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import NettuneError
from ..store.base import ResultStore
from .changepoints import MIN_BEFORE, MIN_SIZE, Step, find_steps, latest_step
from .data import PointData, get_metric, load
from .metric import primary, resolve
from .policy import STATEMENT
from .stats import summarize

DONE = ("done", "imported")
SKIP_FACTS = ("loopback_ceiling", "doctor")  # measured by `nettune ceiling` when read back; findings compared apart


@dataclass
class Rerun:
    study_id: int
    started: float
    status: str
    nettune_version: str | None

    @property
    def when(self) -> str:
        return dt.datetime.fromtimestamp(self.started).strftime("%Y-%m-%d %H:%M")


@dataclass
class Value:
    """One rerun's mean at one point (and pair), with N and its 95% interval (display units)."""

    study_id: int
    started: float
    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass
class Change:
    """A change point with its step and what differed between the reruns either side."""

    step: Step
    study_before: int
    study_after: int
    changed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        s = self.step
        return {"kind": s.kind, "at": s.at, "study_before": self.study_before, "study_after": self.study_after, "before": s.before,
                "after": s.after, "step": s.size, "step_pct": s.pct, "ci_low": s.ci_low, "ci_high": s.ci_high, "n_before": s.n_before,
                "n_after": s.n_after, "p_value": s.p_value, "changed": self.changed}


@dataclass
class Series:
    label: str
    point: dict[str, Any]
    pair: str | None
    values: list[Value]
    changes: list[Change] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "point": self.point, "pair": self.pair, "values": [asdict(v) for v in self.values],
                "changes": [c.to_dict() for c in self.changes]}


@dataclass
class History:
    study: str
    metric: str
    unit: str
    higher_is_better: bool
    reruns: list[Rerun]
    series: list[Series]
    tests: int  # the family: two per series
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    policy: str = STATEMENT

    @property
    def changes(self) -> list[tuple[Series, Change]]:
        return [(s, c) for s in self.series for c in s.changes]

    def saved_rows(self) -> list[dict[str, Any]]:
        """Every change point as `nettune history --save` stores it (store/change_points_table.py)."""
        started = {r.study_id: r.started for r in self.reruns}
        return [{"series": s.label, "point": s.point, "pair": s.pair, "kind": c.step.kind, "study_before": c.study_before,
                 "study_after": c.study_after, "at_time": started[c.study_after], "before": c.step.before, "after": c.step.after,
                 "step": c.step.size, "ci_low": c.step.ci_low, "ci_high": c.step.ci_high, "p_value": c.step.p_value,
                 "changed": c.changed} for s, c in self.changes]

    def to_dict(self) -> dict[str, Any]:
        return {"study": self.study, "metric": self.metric, "unit": self.unit, "higher_is_better": self.higher_is_better,
                "reruns": [asdict(r) | {"when": r.when} for r in self.reruns], "series": [s.to_dict() for s in self.series],
                "tests": self.tests, "left_out": self.left_out, "notes": self.notes, "policy": self.policy}


def _key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=str)


def reruns_of(store: ResultStore, name: str, points: list[dict[str, Any]] | None) -> tuple[list[Rerun], list[str], list[dict[str, Any]]]:
    """The reruns of study `name` with these points (None: the latest finished one's), oldest
    first; what was left out and why; the points."""
    rows = [r for r in store.named(name) if r["status"] in DONE]
    if not rows:
        raise NettuneError(f"{store.where}: no finished study named {name!r} (see `nettune studies`)")
    want = {_key(p) for p in points} if points is not None else {_key(p["point"]) for p in store.points(rows[0]["id"])}
    keep, left = [], []
    for r in rows:
        have = {_key(p["point"]) for p in store.points(r["id"])}
        if have == want:
            keep.append(Rerun(r["id"], r["started"], r["status"], r.get("nettune_version")))
        else:
            left.append(f"#{r['id']} ({dt.datetime.fromtimestamp(r['started']):%Y-%m-%d %H:%M}): other points "
                        f"({len(have & want)} of its {len(have)} in common)")
    if not keep:
        raise NettuneError(f"{store.where}: no finished study named {name!r} has the study file's points; "
                           f"{len(rows)} of that name have other points (run the file, or give the name alone)")
    keep.sort(key=lambda r: (r.started, r.study_id))
    order = [p["point"] for p in store.points(keep[-1].study_id)]
    return keep, list(reversed(left)), order


def history(store: ResultStore, name: str, points: list[dict[str, Any]] | None = None, metric: str = "auto") -> History:
    """The history of study `name` (its reruns with `points`, else the latest's)."""
    reruns, left, order = reruns_of(store, name, points)
    data = {r.study_id: load(store, r.study_id) for r in reruns}
    engines = set().union(*(d.engines for d in data.values()))
    m = get_metric(resolve(metric, engines))
    info = primary(engines)
    unit = info.unit if m.name == info.name else m.label
    series: list[Series] = []
    for params in order:
        per = [next(p for p in data[r.study_id].points if p.params == params) for r in reruns]
        pairs: list[str | None] = [*sorted({pair for p in per for pair in p.by_pair()})] or [None]  # None: the point as a whole
        for pair in pairs:
            series.append(Series(_label(params, pair), params, pair, [_value(r, p, m, pair) for r, p in zip(reruns, per)]))
    tests = 2 * len(series)
    notes = []
    if len(reruns) < 2 * MIN_SIZE:
        notes.append(f"{len(reruns)} rerun(s): a change point needs {MIN_SIZE} reruns on each side of it, and the latest "
                     f"rerun is compared with at least {MIN_BEFORE} before it")
    for i, s in enumerate(series):
        xs = [v.mean for v in s.values]
        if any(x is None for x in xs):
            notes.append(f"{s.label}: a rerun has no counted run there; its series is not tested")
            continue
        vals = [float(x) for x in xs if x is not None]
        steps = find_steps(vals, tests)
        last = latest_step(vals, steps[-1].at if steps else 0, tests)
        if last is not None and not any(st.at == last.at for st in steps):
            steps.append(last)
        s.changes = [Change(st, reruns[st.at - 1].study_id, reruns[st.at].study_id,
                            what_changed(store, data, reruns[st.at - 1], reruns[st.at], s.point)) for st in steps]
    return History(name, m.name, unit, m.higher_is_better, reruns, series, tests, left, notes)


def _label(params: dict[str, Any], pair: str | None) -> str:
    text = ", ".join(f"{k}={v}" for k, v in params.items()) or "(single point)"
    return f"{text} {pair}" if pair else text


def _value(r: Rerun, p: PointData, m: Any, pair: str | None) -> Value:
    runs = p.by_pair().get(pair, []) if pair is not None else None
    vals = [v for x in runs if (v := m.value(x)) is not None] if runs is not None else p.values(m)
    s = summarize([v * m.scale for v in vals])
    return Value(r.study_id, r.started, s.n, s.mean, s.ci_low if s.n > 1 else None, s.ci_high if s.n > 1 else None)


def _flat(d: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(d, dict):
        out: dict[str, str] = {}
        for k, v in d.items():
            out |= _flat(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    return {prefix: json.dumps(d, sort_keys=True) if isinstance(d, list) else str(d)}


def _findings(facts: dict[str, Any]) -> set[str]:
    """Doctor's findings of every host above info, as 'host: check (severity)'."""
    out = set()
    for host, f in facts.items():
        for x in (f.get("doctor") or []) if isinstance(f, dict) else []:
            if isinstance(x, dict) and x.get("severity") not in (None, "info", "ok"):
                out.add(f"{host}: {x.get('check') or x.get('id') or '?'} ({x.get('severity')})")
    return out


def what_changed(store: ResultStore, data: dict[int, Any], a: Rerun, b: Rerun, point: dict[str, Any]) -> list[str]:
    """What differed between two reruns: nettune, tools, host facts (kernel...), doctor's
    findings, the settings in force at the point. [] when nothing recorded differs."""
    out = []
    if a.nettune_version != b.nettune_version:
        out.append(f"nettune {a.nettune_version or 'unknown'} -> {b.nettune_version or 'unknown'}")
    da, db = data[a.study_id], data[b.study_id]
    tools = [sorted({f"{r.engine} {r.tool_version or '?'}" for r in d.runs}) for d in (da, db)]
    if tools[0] != tools[1]:
        out.append(f"tools {', '.join(tools[0])} -> {', '.join(tools[1])}")
    fa, fb = ({h: {k: v for k, v in f.items() if k not in SKIP_FACTS} for h, f in d.facts.items()} for d in (da, db))
    flat_a, flat_b = _flat(fa), _flat(fb)
    for k in sorted(set(flat_a) | set(flat_b)):
        if flat_a.get(k) != flat_b.get(k):
            out.append(f"{k.replace('.', ' ', 1) if '.' in k else k}: {flat_a.get(k, '(none)')} -> {flat_b.get(k, '(none)')}")
    gone, new = _findings(da.facts) - _findings(db.facts), _findings(db.facts) - _findings(da.facts)
    out += [f"doctor no longer finds {x}" for x in sorted(gone)] + [f"doctor finds {x}" for x in sorted(new)]
    sa, sb = (_settings(d, point) for d in (da, db))
    for k in sorted(set(sa) | set(sb)):
        if sa.get(k) != sb.get(k):
            out.append(f"in force at the point: {k} {sa.get(k, '(none)')} -> {sb.get(k, '(none)')}")
    return out


def _settings(d: Any, point: dict[str, Any]) -> dict[str, str]:
    """The settings stored with the point's first counted run (knobs, target state)."""
    p = next((p for p in d.points if p.params == point), None)
    run = next(iter(p.counted), None) if p is not None else None
    return _flat(run.settings) if run is not None else {}
