"""`nettune.results(db)`: a results database, read-only, as pandas DataFrames and typed
analysis results. A thin layer: the frames are the export tables typed for pandas
(api/frames.py), the analysis is `nettune analyze`'s, the comparison `nettune compare`'s.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ..analysis.serial import JsonRecord
from ..store.sqlite import Store

# pandas, scipy and the run layer are loaded by the methods that need them: `from nettune
# import results` stays cheap
if TYPE_CHECKING:
    import pandas as pd

    from ..analysis.compare import Comparison
    from ..analysis.data import StudyData
    from ..analysis.verdicts import Analysis
    from ..run.context import Outcome

StudyRef = Union[str, int, "Outcome", None]


def _ref(study: StudyRef) -> str | int | None:
    """A study's name or id; an Outcome gives its study's id."""
    if study is None or isinstance(study, (str, int)):
        return study
    return study.study_id


def _client(study: dict[str, Any]) -> str | None:
    """The study's client host as its stored definition names it (untrusted: None if unreadable)."""
    try:
        wl = json.loads(study.get("spec_json") or "{}").get("workload") or {}
        client = wl.get("client")
    except (ValueError, AttributeError):
        return None
    return client if isinstance(client, str) else None


@dataclass(frozen=True)
class ComparedPoint(JsonRecord):
    """One point both studies ran (or the one each side was narrowed to), compared."""

    point: str  # its parameters, "streams=4, queues=2" ("" when each side has one point)
    comparison: Comparison  # mean_a and mean_b in the StudyComparison's unit


@dataclass
class StudyComparison(JsonRecord):
    """`nettune compare A B` as a record: b against a, per common point.

    `unit` is the unit of every mean here (the metric's displayed unit, e.g. Gbit/s);
    ratios and their intervals have none, changes are in %. Several points are one family:
    each verdict is judged at 5% / the number of points. `frame()` gives a row per point.
    Example::

        cmp = nettune.results("results.db").compare("before", "after")
        cmp.verdicts              # {'streams=1': 'faster', ...}
        cmp.frame()               # point, verdict, change_pct and its 95% interval, means
    """

    a: str
    b: str
    metric: str
    unit: str
    higher_is_better: bool
    points: list[ComparedPoint] = field(default_factory=list)

    @property
    def verdicts(self) -> dict[str, str]:
        """Point -> verdict (faster, slower, equivalent, inconclusive; better/worse for
        metrics that are not speeds)."""
        return {p.point: p.comparison.verdict for p in self.points}

    def frame(self) -> pd.DataFrame:
        """A row per point: verdict, change in % with its 95% interval, p-value, means, N."""
        import pandas as pd

        rows = [{"point": p.point, "verdict": c.verdict, "change_pct": c.change_pct,
                 "ci_low_pct": None if c.ci_low is None else (c.ci_low - 1) * 100,
                 "ci_high_pct": None if c.ci_high is None else (c.ci_high - 1) * 100,
                 "p_value": c.p_value, "mean_a": c.mean_a, "mean_b": c.mean_b, "n_a": c.n_a, "n_b": c.n_b, "text": c.text}
                for p in self.points for c in [p.comparison]]
        df = pd.DataFrame(rows, columns=["point", "verdict", "change_pct", "ci_low_pct", "ci_high_pct", "p_value", "mean_a",
                                         "mean_b", "n_a", "n_b", "text"])
        df = df.astype({"verdict": "category", "change_pct": "Float64", "ci_low_pct": "Float64", "ci_high_pct": "Float64",
                        "p_value": "Float64", "mean_a": "Float64", "mean_b": "Float64", "n_a": "Int64", "n_b": "Int64",
                        "point": "string", "text": "string"})
        df.attrs["units"] = {"change_pct": "%", "ci_low_pct": "%", "ci_high_pct": "%", "mean_a": self.unit, "mean_b": self.unit}
        return df

    def __repr__(self) -> str:
        lines = [f"StudyComparison({self.b} vs {self.a}, {self.metric} in {self.unit})"]
        lines += [f"  {p.point or 'b vs a'}: {p.comparison.text}" for p in self.points]
        return "\n".join(lines)


class Results:
    """A results database opened read-only, for notebooks.

    Studies are named by name (the latest run of that name), by id (7 or "#7"), by the
    `Outcome` run_study returned, or None (the latest study). Example::

        import nettune
        res = nettune.results("results.db")
        res.studies()                       # one row per study
        runs = res.runs("quick")            # one row per test, typed columns
        runs.attrs["units"]["receiver_bps"]  # 'bit/s'
        ts = res.series("quick")            # one row per interval and stream
        a = res.analysis("quick")           # nettune analyze's result, in a.unit
        res.compare("before", "after").frame()
    """

    def __init__(self, db: str | os.PathLike[str] | Store = "nettune.db"):
        self.store = db if isinstance(db, Store) else Store(db)
        self.path = self.store.path

    def close(self) -> None:
        """Close the database (a `with` block does it)."""
        self.store.close()

    def __enter__(self) -> "Results":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"nettune.Results({str(self.path)!r}: {len(self.store.studies())} studies)"

    def studies(self) -> pd.DataFrame:
        """One row per study, oldest first: id, name, status (running, done, failed,
        interrupted, imported), target kind, started and finished (UTC datetimes), and how
        many points, runs and failed runs it holds."""
        import pandas as pd

        rows = self.store.studies()
        cols = ["id", "name", "status", "target_kind", "started", "finished", "points", "runs", "failed", "description"]
        df = pd.DataFrame(rows, columns=cols)
        for c in ("started", "finished"):
            df[c] = pd.to_datetime(df[c].astype("Float64"), unit="s", utc=True)
        return df.astype({"id": "Int64", "name": "string", "status": "category", "target_kind": "category", "points": "Int64",
                          "runs": "Int64", "failed": "Int64", "description": "string"})

    def _study(self, study: StudyRef) -> dict[str, Any]:
        return self.store.find_study(_ref(study))

    def records(self, study: StudyRef = None) -> list[Any]:
        """The study's stored tests as `RunRecord`s (every field, the series as stored)."""
        return self.store.runs(self._study(study)["id"])

    def runs(self, study: StudyRef = None, *, counted: bool = False) -> pd.DataFrame:
        """One row per test of the study (warm-ups and failed tests included, flagged by
        `warmup` and `ok`; counted=True keeps only what the analysis counts). Parameters
        are ordered categoricals, `started` a UTC datetime, values nullable numbers in
        `df.attrs["units"]` (bits/s, bytes, ...), one column per setting in force."""
        s = self._study(study)
        runs = self.store.runs(s["id"])
        if counted:
            runs = [r for r in runs if r.ok and not r.warmup]
        from ..store.cpu_units import machine_cores
        from .frames import runs_frame

        df = runs_frame(runs, machine_cores(_client(s), self.store.facts(s["id"])))
        df.attrs |= {"study": s["name"], "study_id": s["id"]}
        return df

    def series(self, study: StudyRef = None, *, per: str = "stream", counted: bool = True) -> pd.DataFrame:
        """The study's interval series, long: one row per test, direction, interval and
        stream (per="interval": the streams' totals), with `time` (the interval's end, s
        from the test's start), `bps`, `retransmits`, `cwnd` and `rtt_us`, joined to
        runs() by `run_id`. counted=False keeps warm-ups and failed tests too."""
        s = self._study(study)
        runs = self.store.runs(s["id"])
        if counted:
            runs = [r for r in runs if r.ok and not r.warmup]
        from .frames import series_frame

        df = series_frame(runs, per)
        df.attrs |= {"study": s["name"], "study_id": s["id"]}
        return df

    def data(self, study: StudyRef = None) -> StudyData:
        """The study as the analysis reads it (points, counted runs, facts)."""
        from ..analysis.data import load

        return load(self.store, _ref(study))

    def analysis(self, study: StudyRef = None, *, metric: str = "auto", by: str | None = None, share: float = 0.8,
                 saturation: float = 0.1) -> Analysis:
        """`nettune analyze` as a record (`Analysis`): every value of the metric in
        `analysis.unit` (Gbit/s for throughput), CPU in `analysis.cpu_units`, changes in %;
        `analysis.frame()` gives the points as a DataFrame, `to_dict()` the JSON."""
        from ..analysis.analyze import analyze
        from ..analysis.data import load

        return analyze(load(self.store, _ref(study)), metric, saturation, share, by)

    def compare(self, a: StudyRef, b: StudyRef, *, metric: str = "auto", a_where: dict[str, Any] | None = None,
                b_where: dict[str, Any] | None = None, margin: float | None = None, b_from: "Results | None" = None) -> StudyComparison:
        """Study b against study a (`nettune compare A B`): one comparison, or one per
        point both ran. a_where / b_where narrow a side to points ({"streams": 4});
        margin (%) allows an "equivalent" verdict; b_from reads b from another database."""
        from ..analysis.compare import between_studies
        from ..analysis.data import get_metric, load
        from ..analysis.metric import resolve

        da = load(self.store, _ref(a))
        db = load((b_from or self).store, _ref(b))
        m = get_metric(resolve(metric, da.engines | db.engines))
        fa = {k: str(v) for k, v in (a_where or {}).items()}
        fb = {k: str(v) for k, v in (b_where or {}).items()}
        pairs = between_studies(da, db, fa, fb, metric, None, margin)
        scaled = [ComparedPoint(label, replace(c, mean_a=c.mean_a * m.scale, mean_b=c.mean_b * m.scale)) for label, c in pairs]
        return StudyComparison(da.name, db.name, m.name, m.label, m.higher_is_better, scaled)


def results(db: str | os.PathLike[str] = "nettune.db") -> Results:
    """Open a results database read-only, for DataFrames and analyses (see `Results`).

    A path that does not exist is FileNotFoundError: nothing is ever created. Example::

        import nettune
        with nettune.results("results.db") as res:
            df = res.runs("quick")
            df.groupby("streams", observed=True)["receiver_bps"].mean()
    """
    return Results(Path(db))
