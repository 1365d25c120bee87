"""Published numbers as one side of `nettune compare`: an article's N, mean and sd.

`--a-stats N,MEAN,SD` gives one summary; `--a-table FILE` a summary table: a CSV with a
header, parameter columns, and the columns `n`, `mean`, `sd` (`N`, `stdev` also accepted),
one row per configuration. Means and sds are in the metric's display unit (Gbit/s for
throughput, as `analyze` prints it). Each row is compared with the study's point of the same
parameters (Welch's test on the summary against the point's counted runs).
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from ..errors import NettuneError
from .compare import Comparison, SideStats, compare_stats
from .data import Metric, StudyData, same_value
from .stats import summarize

N_COLS, MEAN_COLS, SD_COLS = ("n", "runs"), ("mean",), ("sd", "stdev", "std")


def parse_stats(text: str, opt: str, m: Metric) -> SideStats:
    """N,MEAN,SD (MEAN and SD in the metric's display unit) -> stored units."""
    parts = [x.strip() for x in text.split(",")]
    try:
        if len(parts) != 3:
            raise ValueError
        n, mean, sd = int(parts[0]), float(parts[1]), float(parts[2])
    except ValueError:
        raise NettuneError(f"{opt} {text!r}: write N,MEAN,SD (e.g. {opt} 5,9.41,0.12; MEAN and SD in {m.label})") from None
    if n < 2 or sd < 0:
        raise NettuneError(f"{opt} {text!r}: N must be >= 2 and SD >= 0 (Welch's test needs a spread on each side)")
    return SideStats(n, mean / m.scale, sd / m.scale)


def _col(head: list[str], names: tuple[str, ...], path: Path, what: str) -> int:
    low = [h.strip().lower() for h in head]
    for n in names:
        if n in low:
            return low.index(n)
    raise NettuneError(f"{path}: the header has no {what} column ({' or '.join(names)}); its columns are {', '.join(head)}")


def read_table(path: Path, m: Metric) -> list[tuple[dict[str, str], SideStats]]:
    """The rows of a summary table: (parameters as written, summary in stored units)."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise NettuneError(f"--a-table {path}: cannot read it ({e})") from None
    rows = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise NettuneError(f"{path}: a summary table needs a header line and at least one row (columns: parameters, n, mean, sd)")
    head = [h.strip() for h in rows[0]]
    ni, mi, si = _col(head, N_COLS, path, "N"), _col(head, MEAN_COLS, path, "mean"), _col(head, SD_COLS, path, "sd")
    params = [i for i in range(len(head)) if i not in (ni, mi, si)]
    out = []
    for line, row in enumerate(rows[1:], 2):
        if len(row) != len(head):
            raise NettuneError(f"{path}: line {line} has {len(row)} fields, the header {len(head)}")
        try:
            stats = parse_stats(f"{row[ni]},{row[mi]},{row[si]}", f"{path}: line {line}:", m)
        except NettuneError as e:
            raise NettuneError(str(e).replace(" N,MEAN,SD", " n, mean and sd")) from None
        out.append(({head[i]: row[i].strip() for i in params}, stats))
    return out


def versus_table(data: StudyData, rows: list[tuple[dict[str, str], SideStats]], m: Metric,
                 higher_is_better: bool | None = None, path: str = "published") -> list[tuple[str, Comparison]]:
    """Each published row (side a) against the study's runs at the same parameters (side b)."""
    hib = m.higher_is_better if higher_is_better is None else higher_is_better
    found = []
    for params, a in rows:
        pts = [p for p in data.points if all(same_value(p.params.get(k), v) for k, v in params.items())]
        label = ", ".join(f"{k}={v}" for k, v in params.items()) or "(single point)"
        if len(pts) > 1:
            _refuse_pooling(data, pts, f"{path}: the row {label}")
        vals = pts[0].values(m) if pts else []
        if len(vals) >= 2:
            found.append((label, a, summarize(vals)))
    out = []
    for label, a, s in found:  # one family: the rows compared (Bonferroni over them)
        assert s.mean is not None and s.stdev is not None
        out.append((label, compare_stats(a, SideStats(s.n, s.mean, s.stdev), hib, (m.better, m.worse), m.name,
                                         (f"{path} {label}", f"{data.name} {label}"), len(found))))
    if not out:
        have = "; ".join(p.label() for p in data.points[:6])
        raise NettuneError(f"{path}: no row matches a point of {data.name} with 2 or more counted runs (its points: {have})")
    return out


def side_summary(data: StudyData, filters: dict[str, str], m: Metric) -> tuple[str, SideStats]:
    """A study's side as a summary (pooled counted runs of the points matching `filters`)."""
    pts = data.select(filters) if filters else data.points
    what: Any = ",".join(f"{k}={v}" for k, v in filters.items())
    if len(pts) > 1:
        _refuse_pooling(data, pts, f"{data.name} {what}".strip())
    s = summarize(pts[0].values(m))
    if s.n < 2 or s.mean is None or s.stdev is None:
        raise NettuneError(f"{data.name}: {s.n} counted run(s) match; Welch's test needs at least 2")
    return f"{data.name} {what}".strip(), SideStats(s.n, s.mean, s.stdev)


def _refuse_pooling(data: StudyData, pts: list[Any], what: str) -> None:
    """A summary is one configuration: several points would pool unlike things as repeats."""
    differ = {k: sorted({str(p.params.get(k)) for p in pts}) for k in data.params}
    named = "; ".join(f"{k} ({', '.join(v)})" for k, v in differ.items() if len(v) > 1)
    raise NettuneError(f"{what} matches {len(pts)} points that differ in {named}: a published summary is one configuration; "
                       "name those parameters too")
