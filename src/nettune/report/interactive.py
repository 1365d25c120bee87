"""report.html's interactive charts: plotly.js figures built from the same summaries as the
static charts (charts.py, kept for report.md), drawn by plotly's offline bundle inlined in
the file (no network: the `plotly` package ships plotly.min.js, we embed its text).

Each figure is plain JSON (data, layout): hovering a point shows its value with N and the 95%
interval (the same Summary as the tables, asymmetric where the interval is log-t or BCa);
clicking a legend entry hides or shows a series, dragging zooms (double-click resets), and the
CPU chart has buttons switching its unit (cores, % of one core, % of the machine) without any
script of ours: plotly's own `update` buttons swap the arrays computed here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..analysis.costs import Cost, costs
from ..analysis.data import Metric, PointData, StudyData
from ..analysis.stats import Summary, summarize
from .charts import series

CONFIG = {"displaylogo": False, "responsive": True, "showLink": False, "showSendToCloud": False}
LAYOUT = {"height": 430, "hovermode": "closest", "margin": {"t": 50, "r": 20}, "legend": {"font": {"size": 11}}}


@dataclass(frozen=True)
class Plot:
    name: str  # element id "plot-NAME"; the static chart of that name it stands for in report.html
    title: str
    figure: dict[str, Any]  # {"data": [...], "layout": {...}}
    replaces: bool = True  # False: the static chart shows something this one does not (kept beside it)


def _fmt(v: float | None) -> str:
    return "?" if v is None else f"{v:.4g}"


def _hover(label: str, s: Summary, unit: str) -> str:
    """One point's hover text: value, N and the interval (or why there is none)."""
    ci = (f"95% CI [{_fmt(s.ci_low)}, {_fmt(s.ci_high)}] ({s.interval})" if s.ci_low is not None and s.n >= 2
          else "single run: no interval")
    return f"{label}<br>{_fmt(s.mean)} {unit}<br>N={s.n}, {ci}"


def _x_axis(data: StudyData) -> tuple[str | None, bool, dict[str, Any]]:
    x = data.axes[0] if data.axes else None
    numeric = x is not None and all(isinstance(p.params.get(x), (int, float)) and not isinstance(p.params.get(x), bool)
                                    for p in data.points)
    axis: dict[str, Any] = {"title": {"text": x or ""}}
    if numeric:
        vals = sorted({float(p.params[x]) for p in data.points})  # type: ignore[index]
        if vals[0] > 0 and vals[-1] / vals[0] >= 8:
            axis |= {"type": "log", "tickvals": vals, "ticktext": [f"{v:g}" for v in vals]}  # doubling sweeps, as the PNG
    else:
        axis["type"] = "category"
    return x, numeric, axis


def _trace(name: str, pts: list[tuple[PointData, Summary]], data: StudyData, x: str | None, numeric: bool,
           unit: str) -> dict[str, Any]:
    xs = [(float(p.params[x]) if numeric else str(p.params.get(x))) if x else data.name for p, _ in pts]  # type: ignore[index]
    ys = [s.mean for _, s in pts]
    return {"type": "scatter", "mode": "lines+markers" if numeric else "markers", "name": name or data.name,
            "x": xs, "y": ys, "text": [_hover(p.label(data.params), s, unit) for p, s in pts],
            "hovertemplate": "%{text}<extra>%{fullData.name}</extra>",
            "error_y": _errors(pts, 1.0)}


def _errors(pts: list[tuple[PointData, Summary]], k: float) -> dict[str, Any]:
    """Error bars from each point's interval, which need not be symmetric (log-t, BCa)."""
    up = [(s.ci_high - s.mean) * k if s.ci_high is not None and s.mean is not None and s.n >= 2 else 0.0 for _, s in pts]
    down = [(s.mean - s.ci_low) * k if s.ci_low is not None and s.mean is not None and s.n >= 2 else 0.0 for _, s in pts]
    return {"type": "data", "symmetric": False, "array": up, "arrayminus": down, "visible": True}


def throughput_plot(data: StudyData, metric: Metric) -> Plot | None:
    x, numeric, axis = _x_axis(data)
    _, lines = series(data)
    traces = []
    for label, pts in lines:
        summed = [(p, summarize(p.values(metric)).scaled(metric.scale)) for p in pts]
        summed = [(p, s) for p, s in summed if s.n]
        if summed:
            traces.append(_trace(label, summed, data, x, numeric, metric.label))
    if not traces:
        return None
    title = f"{data.name}: {metric.label} (mean, 95% CI)"
    layout = LAYOUT | {"title": {"text": title}, "xaxis": axis, "yaxis": {"title": {"text": metric.label}, "rangemode": "tozero"}}
    return Plot("throughput", title, {"data": traces, "layout": layout})


# the CPU chart's units: (button label, axis title, factor from cores given the machine's cores)
def _units(found: list[Cost]) -> list[tuple[str, str, Any]]:
    units: list[tuple[str, str, Any]] = [("cores", "cores", lambda c: 1.0), ("% of one core", "% of one core", lambda c: 100.0)]
    if all(c.machine_cores for c in found):
        units.append(("% of the machine", "% of the machine's cores", lambda c: 100.0 / c.machine_cores))
    return units


def cpu_plot(data: StudyData) -> Plot | None:
    """Every CPU cost along the first swept parameter, one series per cost (and line), with a
    switch of unit. Watts stay in the static chart (then kept beside this one)."""
    every = costs(data)
    found = [c for c in every if c.is_cpu]
    if not found:
        return None
    x, numeric, axis = _x_axis(data)
    _, lines = series(data)
    traces, per_trace = [], []  # per trace: (cost, [(point, summary in cores)])
    for c in found:
        for label, pts in lines:
            summed = [(p, summarize(c.values(p))) for p in pts]
            summed = [(p, s) for p, s in summed if s.n]
            if summed:
                traces.append(_trace(f"{c.name}" + (f" ({label})" if label else ""), summed, data, x, numeric, "cores"))
                per_trace.append((c, summed))
    if not traces:
        return None
    buttons = []
    for label, axis_title, factor in _units(found):
        ys, texts, errors = [], [], []
        for c, summed in per_trace:
            k = factor(c)
            ys.append([s.mean * k if s.mean is not None else None for _, s in summed])
            texts.append([_hover(p.label(data.params), s.scaled(k), label) for p, s in summed])
            errors.append(_errors(summed, k))
        buttons.append({"label": label, "method": "update",
                        "args": [{"y": ys, "text": texts, "error_y": errors}, {"yaxis.title.text": f"CPU ({axis_title})"}]})
    title = f"{data.name}: CPU per side (mean, 95% CI)"
    layout = LAYOUT | {"title": {"text": title}, "xaxis": axis, "yaxis": {"title": {"text": "CPU (cores)"}, "rangemode": "tozero"},
                       "updatemenus": [{"type": "buttons", "direction": "right", "x": 1, "xanchor": "right", "y": 1.12,
                                        "yanchor": "bottom", "showactive": True, "active": 0, "buttons": buttons}]}
    return Plot("cpu", title, {"data": traces, "layout": layout}, replaces=len(found) == len(every))


def intervals_plot(data: StudyData, point: PointData) -> Plot | None:
    traces = []
    for r in (r for r in point.counted if r.intervals):
        for direction in ("forward", "reverse"):
            iv = [i for i in r.intervals if i.get("direction", "forward") == direction]
            if iv:
                traces.append({"type": "scatter", "mode": "lines+markers", "name": f"run {r.run}" + (" (reverse)" if direction == "reverse" else ""),
                               "x": [i["end"] for i in iv], "y": [i["bps"] / 1e9 for i in iv],
                               "line": {"dash": "dash" if direction == "reverse" else "solid"},
                               "hovertemplate": "%{x} s: %{y:.4g} Gbit/s<extra>%{fullData.name}</extra>"})
    if not traces:
        return None
    title = f"{data.name}: per-interval Gbit/s at {point.label(data.params)}"
    layout = LAYOUT | {"title": {"text": title}, "xaxis": {"title": {"text": "seconds"}}, "yaxis": {"title": {"text": "Gbit/s"}, "rangemode": "tozero"}}
    return Plot("intervals", title, {"data": traces, "layout": layout})


def interactive_plots(data: StudyData, metric: Metric, point: PointData | None) -> list[Plot]:
    plots = [throughput_plot(data, metric), cpu_plot(data), intervals_plot(data, point) if point else None]
    return [p for p in plots if p is not None]


def plotly_js() -> str:
    """plotly.js itself (the `plotly` package's offline bundle), to inline in the page."""
    from plotly.offline import get_plotlyjs  # noqa: PLC0415  (a few MB, read only when a report is written)

    return get_plotlyjs()
