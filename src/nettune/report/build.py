"""`nettune report`: report.md, charts (PNG + SVG) and one self-contained report.html.

The summary table is study A's: the swept parameters, Gbit/s, client, server and host
CPU, with N and the 95% interval next to every mean so no number stands without its
uncertainty.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.analyze import analyze
from ..analysis.data import PointData, StudyData, get_metric
from ..analysis.digest import SECTION_TITLES
from ..analysis.energy_verdicts import SOURCES
from ..analysis.frontier import SHARE
from ..analysis.metric import resolve
from ..analysis.sweep import SATURATION, num
from ..analysis.verdicts import Analysis, PointRow
from ..errors import NettuneError
from ..exporters.base import Table, export_table
from ..store.private_file import write_private
from .charts import Chart, all_charts
from .audit_section import audit_rows
from .cross_check_section import cross_check_md
from .html import render_html
from .interactive import interactive_plots
from .pair_matrix import pair_chart, pair_table, round_table
from .stability_chart import stability_chart
from .search_trace import SearchPart, search_md, search_part
from .workload_section import workload_md

Cell = tuple[str, Any]  # (text shown, value to sort by)


@dataclass
class Report:
    dir: Path
    markdown: Path
    html: Path
    charts: list[Chart] = field(default_factory=list)
    analysis: Analysis | None = None


def _cpu(row: PointRow, side: str) -> Cell:
    v, hw = row.cpu(side)
    if v is None:
        return ("", None)
    return (f"{v:.0f}" + (f" ± {hw:.0f}" if hw is not None else ""), v)


def summary_table(analysis: Analysis, params: list[str]) -> tuple[list[str], list[list[Cell]]]:
    unit = analysis.unit
    cpu = [f"{side} CPU ({analysis.cpu_units.get(side, '%')})" for side in ("client", "server", "host")]  # the unit in every header
    split = any(r.bands for r in analysis.points)  # two regimes under one mean: said next to it (analysis/modes.py)
    sources = [s for s in SOURCES if any(e.source == s for r in analysis.points for e in r.energy)]  # joules per run, W
    energy = [h for s in sources for h in (f"J per run ({s})", f"± J ({s})", f"W ({s})")]
    head = params + ["N", unit, "± 95%", "95% CI", "median", "sd", "min to max", "CV %", *(["two bands"] if split else []),
                     *cpu, *energy, "failed", "outlier runs"]
    rows = []
    for r in analysis.points:
        cells: list[Cell] = [(str(r.point.get(p, "")), r.point.get(p)) for p in params]
        ci = f"{num(r.ci_low)} to {num(r.ci_high)}" if r.ci_low is not None else ""
        rng = f"{num(r.min)} to {num(r.max)}" if r.n else ""
        cells += [(str(r.n), r.n), (num(r.mean) if r.n else "", r.mean),
                  (num(r.half_width) if r.half_width is not None else "", r.half_width), (ci, r.ci_low),
                  (num(r.median) if r.n else "", r.median), (num(r.stdev) if r.stdev is not None else "", r.stdev),
                  (rng, r.min), (f"{r.cv * 100:.1f}" if r.cv is not None else "", r.cv),
                  *([(r.bands or "", r.bands)] if split else []), _cpu(r, "client"), _cpu(r, "server"), _cpu(r, "host"),
                  *(c for s in sources for c in _energy(r, s)), (str(r.failed or ""), r.failed),
                  (", ".join(str(x + 1) for x in r.outlier_runs), len(r.outlier_runs))]
        rows.append(cells)
    return head, rows


def _energy(r: PointRow, source: str) -> list[Cell]:
    """A point's joules per run, its 95% margin and its watts from one source (empty when not measured)."""
    e = next((e for e in r.energy if e.source == source), None)
    if e is None:
        return [("", None)] * 3
    return [(num(e.joules), e.joules), (num(e.joules_ci) if e.joules_ci is not None else "", e.joules_ci),
            (num(e.watts) if e.watts is not None else "", e.watts)]


def pick_point(data: StudyData, filters: dict[str, str], analysis: Analysis) -> PointData | None:
    """The point for the time-series chart: --point, else the best one."""
    if filters:
        pts = data.select(filters)
        if len(pts) > 1:
            raise NettuneError(f"--point matches {len(pts)} points ({'; '.join(p.label() for p in pts[:4])}); add parameters to pick one")
        return pts[0]
    best = analysis.best.point
    return next((p for p in data.points if all(p.params.get(k) == v for k, v in best.items())), None)


def _md_table(columns: list[str], rows: list[list[str]], left: bool = False) -> list[str]:
    """A pipe table through the registry's markdown exporter: numbers right-aligned, prose left."""
    table = Table(columns, [dict(zip(columns, row)) for row in rows], left=frozenset(columns) if left else frozenset())
    return (export_table(table, "markdown", None) or "").splitlines()


def _pairs_md(analysis: Analysis) -> list[str]:
    """A study over host pairs: every link with its own N and CI, and the parallel rounds."""
    head, rows = pair_table(analysis)
    if not rows:
        return []
    lines = ["", "## Pairs", "", "Each pair is a link of its own: N counts its repeats, never the other pairs.", ""]
    lines += _md_table(head, rows)
    rhead, rrows = round_table(analysis)
    if rrows:
        lines += ["", "Parallel rounds: what their pairs reached together.", ""] + _md_table(rhead, rrows)
    return lines


def _audit_md(facts: dict[str, Any]) -> list[str]:
    if not any("doctor" in f for f in facts.values()):
        return []
    rows = audit_rows(facts)
    lines = ["## Host audit", "", "What `nettune doctor` found on the hosts before the first test (nothing was changed)."]
    return lines + ([""] + _md_table(["severity", "host", "check", "seen", "fix"], rows, left=True) if rows else ["", "Nothing above info."]) + [""]


def _boot_security(data: StudyData) -> list[str]:
    """A warning above the results when the study booted a host with mitigations=off
    (cmdline:mitigations as written, or a sweep value of it)."""
    from ..knobs.kinds.cmdline import SECURITY  # noqa: PLC0415

    spec = data.spec()
    for key, value in (spec.get("knobs") or {}).items():
        if not key.startswith("cmdline:mitigations"):
            continue
        text = str(value.get("value") if isinstance(value, dict) else value)
        swept = "{" in text and '"off"' in json.dumps(spec.get("sweep") or {})
        if text.strip().lower() == "off" or swept:
            return [f"**Security:** {SECURITY}. Results with it are not comparable to hosts that keep the mitigations.", ""]
    return []


def summary_md(analysis: Analysis) -> list[str]:
    """The at most five lines the report opens with (analysis/digest.py)."""
    return ["## Summary", ""] + [f"- {md_text(line)}" for line in analysis.summary] + [""]


def verdicts_md(analysis: Analysis, checked: bool = False) -> list[str]:
    """Every verdict, grouped under throughput, cost, noise and instrument; `checked`: the
    study has --cross-check tables, whose verdicts stand under them (once), not here."""
    lines = ["", "## Verdicts", ""]
    for section, found in analysis.sections.items():
        shown = [f for f in found if not (checked and f.startswith("cross-check at "))]
        lines += [f"### {SECTION_TITLES[section]}", ""] + [f"- {md_text(f)}" for f in shown] + [""] if shown else []
    return lines


def _emulated(data: StudyData) -> list[str]:
    """A line above the results when the hosts ran on emulated CPUs (the VM lab under TCG)."""
    from ..analysis.emulation import note  # noqa: PLC0415

    line = note(data.facts)
    return [f"**{line}.**", ""] if line else []


def md_text(text: Any) -> str:
    """Text from the database as Markdown prose: HTML in it is shown, never rendered."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;")  # '>' alone opens no tag


def render_markdown(data: StudyData, analysis: Analysis, charts: list[Chart], out: Path, search: SearchPart | None = None) -> str:
    s = data.study
    head, rows = summary_table(analysis, data.params)
    started = dt.datetime.fromtimestamp(s["started"]).strftime("%Y-%m-%d %H:%M") if s.get("started") else "?"
    engines = sorted({f"{r.engine} {r.tool_version or ''}".strip() for r in data.runs})
    # the database may come from anyone: its texts are text in the report, never HTML
    lines = [f"# {md_text(s['name'])}", ""]
    if s.get("description"):
        lines += [md_text(s["description"]), ""]
    lines += [f"Study #{s['id']}, {s['status']}, started {started}; target {s.get('target_kind') or '?'}; "
              f"tool {', '.join(engines) or '?'}. Means of counted runs (warm-up and failed runs excluded) "
              f"with 95% intervals: {analysis.interval}" + (f", because {analysis.interval_why}" if analysis.interval_why else "") + ".",
              ""] + _boot_security(data) + _emulated(data) + summary_md(analysis) + ["## Results", ""]
    lines += _md_table(head, [[c[0] for c in row] for row in rows])
    lines += _pairs_md(analysis)
    lines += workload_md(data, analysis, _md_table)  # a command workload: CPU, RSS, exit, energy, idle power
    lines += verdicts_md(analysis, bool(s.get("cross_checks")))
    lines += search_md(search, md_text)  # [search]: the answer, importances beside the ablation
    lines += _audit_md(data.facts)
    lines += cross_check_md(s, _md_table)  # nettune run --cross-check: side by side
    if charts:
        lines += ["## Charts", ""]
        for c in charts:
            rel_png, rel_svg = c.png.relative_to(out).as_posix(), c.svg.relative_to(out).as_posix()
            lines += [f"### {c.title}", "", f"![{c.title}]({rel_png})", "", f"[SVG]({rel_svg})", ""]
    lines += ["## Host facts", ""]
    if data.facts:
        for host, facts in ((h, {k: v for k, v in f.items() if k != "doctor"}) for h, f in data.facts.items()):
            lines += [f"### {host}", ""]
            lines += _md_table(["fact", "value"], [[str(k), json.dumps(v) if isinstance(v, (dict, list)) else str(v)] for k, v in facts.items()], left=True)
            lines.append("")
    else:
        lines += ["(none recorded)", ""]
    lines += ["## Study file", ""]
    text = s.get("spec_text") or json.dumps(data.spec(), indent=2)
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", text)), default=0))  # longer than any run of ` in it
    lines += [f"{fence}{'toml' if s.get('spec_text') else 'json'}", text.rstrip("\n"), fence, ""]
    return "\n".join(lines)


def build_report(data: StudyData, out: Path, point: dict[str, str] | None = None, metric: str = "auto",
                 threshold: float = SATURATION, share: float = SHARE) -> Report:
    metric = resolve(metric, data.engines)  # "auto": throughput, or a command's wall seconds
    m = get_metric(metric)
    analysis = analyze(data, metric, threshold, share)  # checks --share before anything is written
    chosen = pick_point(data, point or {}, analysis)
    try:
        out.mkdir(parents=True, exist_ok=True, mode=0o700)  # a new report folder (charts too) is the owner's alone
    except OSError as e:
        raise NettuneError(f"--out {out}: cannot create the directory ({e.strerror})") from None
    charts = all_charts(data, out / "charts", m, chosen, analysis.efficiency, [cc for p in analysis.parameters for cc in p.cost_curves])
    charts += [c for c in [stability_chart(data, analysis, out / "charts")] if c is not None]  # every point's intervals over time
    pairs = pair_chart(analysis, out / "charts", {k: chosen.params.get(k) for k in data.params} if chosen else None)
    charts += [pairs] if pairs else []
    search = search_part(data, out / "charts")
    charts += [search.chart] if search is not None and search.chart is not None else []
    md = out / "report.md"
    write_private(md, render_markdown(data, analysis, charts, out, search))  # 0600 (store/private_file.py)
    head, rows = summary_table(analysis, data.params)
    html = out / "report.html"
    write_private(html, render_html(data, analysis, head, rows, charts, chosen.label(data.params) if chosen else None, pair_table(analysis),
                                    search.lines if search is not None else [], interactive_plots(data, m, chosen)))
    return Report(out, md, html, charts, analysis)
