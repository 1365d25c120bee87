"""The results table (`nettune results`): one row per test, study A's columns first; the
same columns are the readable table the markdown exporter writes (exporters.runs)."""
from __future__ import annotations

from typing import Callable

from ..exporters.runs import param_column, param_names
from ..store.cpu_units import label as unit_label, native_unit
from ..store.records import RunRecord
from ..studyfile.models import workload_kind
from .fit import Fitted, fit_table


def _g(bps: float | None) -> str:
    return "" if bps is None else f"{bps / 1e9:.2f}"


def _pct(v: float | None) -> str:
    return "" if v is None else f"{v:.0f}"


CPU = [("cpu_client", "client CPU"), ("cpu_server", "server CPU"), ("cpu_host", "host CPU"), ("cpu_host_softirq", "softirq")]


def cpu_columns(runs: list[RunRecord]) -> list[tuple[str, str]]:
    """The CPU columns of these runs: the processes' and the client's machine always; the
    server's machine and each hypervisor when a run has them (study A's three machines)."""
    out = list(CPU)
    if any(r.cpu_server_host is not None for r in runs):
        out.insert(3, ("cpu_server_host", "server machine CPU"))
    out += [(k, f"{k.split(':', 1)[1]} CPU") for k in sorted({k for r in runs for k in r.cpu_extra if k.startswith("hypervisor:")})]
    return out


def _value(r: RunRecord, col: str) -> float | None:
    return r.cpu_extra.get(col) if ":" in col else r.get(col)  # "hypervisor:NAME": a cpu_extra figure


def _cpu_units(runs: list[RunRecord], cols: list[tuple[str, str]]) -> dict[str, str | None]:
    """The one unit of each CPU column over these runs (None: they mix units)."""
    out: dict[str, str | None] = {}
    for col, _ in cols:
        units = {r.cpu_units.get(col) or native_unit(col) for r in runs if _value(r, col) is not None} or {native_unit(col)}
        out[col] = units.pop() if len(units) == 1 else None
    return out


def _cpu_cell(r: RunRecord, col: str, mixed: bool) -> str:
    v = _value(r, col)
    if v is None or not mixed:
        return _pct(v)
    return f"{_pct(v)} {unit_label(r.cpu_units.get(col) or native_unit(col))}"  # mixed units: each cell says its own


# The table's own columns; a parameter of one of these names is shown as param_<name>.
FIXED = ["pair", "round", "run", "Gbit/s", "round Gbit/s", "rev Gbit/s", "client CPU", "server CPU", "host CPU", "softirq", "server machine CPU",
         "retrans", "loss %", "jitter ms", "status"]


def _command_columns(runs: list[RunRecord]) -> tuple[list[str], list[list[str]]]:
    from .workload_section import command_columns  # noqa: PLC0415 - its section's statistics load scipy; `nettune results` starts without it

    return command_columns(runs)


# The results table of a workload kind with a table of its own (its report part), by the
# kind's name; every other kind's runs get the network table below (Gbit/s, CPU, loss).
KIND_TABLES: dict[str, Callable[[list[RunRecord]], tuple[list[str], list[list[str]]]]] = {"command": _command_columns}


def columns(runs: list[RunRecord]) -> tuple[list[str], list[list[str]]]:
    kinds = {workload_kind(r.engine).name for r in runs}
    own = KIND_TABLES.get(next(iter(kinds))) if len(kinds) == 1 else None
    if own is not None:  # e.g. a timed command: seconds, not Gbit/s
        return own(runs)
    params = param_names(runs)
    multi = any(r.run > 0 or r.warmup for r in runs)
    pairs = any(r.pair for r in runs)
    has_retr = any(r.retransmits is not None for r in runs)
    has_rev = any(r.reverse_receiver_bps is not None for r in runs)
    has_agg = any(r.round_total_bps is not None for r in runs)  # parallel rounds: what the pairs reached together
    has_udp = any(r.lost_percent is not None for r in runs)
    head = [param_column(p, FIXED) for p in params]
    head += (["pair", "round"] if pairs else []) + (["run"] if multi else []) + ["Gbit/s"] + (["rev Gbit/s"] if has_rev else [])
    head += ["round Gbit/s"] if has_agg else []
    cpu = cpu_columns(runs)
    units = _cpu_units(runs, cpu)  # every CPU header names its unit: "client CPU (% of 1 core)"
    head += [f"{name} ({unit_label(u) if (u := units[col]) else 'mixed units'})" for col, name in cpu]
    head += (["retrans"] if has_retr else []) + (["loss %", "jitter ms"] if has_udp else []) + ["status"]
    rows = []
    for r in runs:
        row = [str(r.point.get(p, "")) for p in params]
        if pairs:
            row += [r.pair or "", "" if r.round is None else str(r.round + 1)]
        if multi:
            row.append(f"{r.run}" + (" (warm-up)" if r.warmup else ""))
        row.append(_g(r.receiver_bps))
        if has_rev:
            row.append(_g(r.reverse_receiver_bps))
        if has_agg:
            row.append(_g(r.round_total_bps))
        row += [_cpu_cell(r, col, units[col] is None) for col, _ in cpu]
        if has_retr:
            row.append("" if r.retransmits is None else str(r.retransmits))
        if has_udp:
            row += ["" if r.lost_percent is None else f"{r.lost_percent:.2f}", "" if r.jitter_ms is None else f"{r.jitter_ms:.3f}"]
        status = "ok" if r.ok else f"FAILED: {r.error}"
        if r.ok and r.warnings:
            status = "ok; " + "; ".join(r.warnings)
        row.append(status)
        rows.append(row)
    return head, rows


# Hidden first when the terminal is too narrow for every column (least important first).
DROP_ORDER = ["J", "W", "peak RSS MiB", "softirq", "jitter ms", "loss %", "retrans", "host CPU%", "host CPU", "server machine CPU", "round", "rev Gbit/s", "round Gbit/s", "run",
              "server CPU", "client CPU"]  # "host CPU%": a timed command's table (report/workload_section.py)


def rich_table(title: str, runs: list[RunRecord], width: int) -> Fitted:
    """The results table for a terminal `width` columns wide; values are never broken."""
    head, rows = columns(runs)
    # CPU headers carry their unit ("host CPU (% of all cores)"): drop them by their name
    drop = [next((h for h in head if h == d or h.startswith(d + " (")), d) for d in DROP_ORDER]
    styles = [None if row[-1].startswith("ok") else "red" for row in rows]
    return fit_table(head, rows, width, drop_order=drop, prose=["status"], styles=styles, title=title, title_justify="left")

