"""The command workload kind's report part: the report's "Timed command" section and the
results table of its runs (report/table.py KIND_TABLES). Per point, study C's
statistics of the wall time (N, mean, sd, 95% margin, min to max) next to the CPU
seconds of the process tree, host CPU, peak RSS, energy per run, idle power and failures
with their exit codes. Energy columns say why they are empty."""
from __future__ import annotations

from typing import Any, Callable

from ..analysis.data import StudyData
from ..analysis.energy_verdicts import idle_watts, point_energy
from ..analysis.stats import summarize
from ..analysis.sweep import num
from ..analysis.verdicts import Analysis
from ..exporters.runs import param_column, param_names
from ..store.records import RunRecord
from ..studyfile.command_workload import CommandWorkload
from ..studyfile.models import workload_kind

KIND = CommandWorkload.name  # the workload kind this section reports


def _mean(vals: list[Any]) -> str:
    xs = [float(v) for v in vals if v is not None]
    return num(summarize(xs).mean) if xs else ""


def workload_rows(data: StudyData) -> tuple[list[str], list[list[str]]]:
    params = data.params
    head = params + ["N", "wall s", "sd", "± 95%", "margin %", "min to max", "CPU s", "host CPU %", "peak RSS MiB",
                     "J per run", "± J", "W", "energy from", "idle W", "failed (exit codes)"]
    idle = idle_watts(data)
    rows = []
    for p in data.points:
        s = summarize([float(r.wall_s) for r in p.counted if r.wall_s is not None])
        failed = [r for r in p.runs if not r.ok and not r.warmup]
        codes = sorted({str(r.exit_code) if r.exit_code is not None else "-" for r in failed})
        e = next(iter(point_energy(p)), None)  # powercap, else the meter: joules per run, its margin, joules / seconds
        rows.append([str(p.params.get(k, "")) for k in params] + [
            str(s.n), num(s.mean) if s.n else "", num(s.stdev) if s.stdev is not None else "",
            num(s.half_width) if s.half_width is not None else "", f"{s.margin * 100:.1f}" if s.margin is not None else "",
            f"{num(s.min)} to {num(s.max)}" if s.n else "", _mean([r.cpu_s for r in p.counted]),
            _mean([r.cpu_host for r in p.counted]), _mean([r.peak_rss_kb / 1024 if r.peak_rss_kb else None for r in p.counted]),
            num(e.joules) if e else "", num(e.joules_ci) if e and e.joules_ci is not None else "",
            num(e.watts) if e and e.watts is not None else "", e.source if e else "",
            num(idle[p.idx]) if p.idx in idle else "", f"{len(failed)} ({', '.join(codes)})" if failed else ""])
    return head, rows


def workload_md(data: StudyData, analysis: Analysis, md_table: Callable[[list[str], list[list[str]], bool], list[str]]) -> list[str]:
    if not any(workload_kind(e).name == KIND for e in data.engines):
        return []
    head, rows = workload_rows(data)
    lines = ["", "## Timed command", "", "Wall seconds of `run` (lower is better): mean, sample sd, Student-t 95% margin; "
             "CPU seconds of its whole process tree; peak RSS of its largest process (nettune's own size never in it); "
             "energy per run over every host measured (powercap, else the meter) with its Student-t 95% margin, and the "
             "watts of the configuration: its joules / its seconds.", ""]
    lines += md_table(head, rows, False)
    why = sorted({r.energy_why for r in data.runs if r.energy_why})
    if why:
        lines += ["", "Energy not measured: " + "; ".join(why)]
    notes = sorted({r.energy_note for r in data.runs if r.energy_note}, key=len)
    if notes:
        lines += ["", f"Energy caveat ({sum(1 for r in data.runs if r.energy_note)} runs): " + notes[0]]
    methods = sorted({r.peak_rss_method for r in data.runs if r.peak_rss_method})
    if methods:
        lines += ["", "Peak RSS: " + "; ".join(methods) + " (docs/workloads.md)"]
    fails = [r for r in data.runs if not r.ok and workload_kind(r.engine).name == KIND]
    if fails:
        lines += ["", "Failed runs:", ""] + [f"- {r.point_idx}/{r.run}: {r.error}" for r in fails[:20]]
    return lines


def command_columns(runs: list[RunRecord]) -> tuple[list[str], list[list[str]]]:
    """`nettune results` for a command workload: one row per run, its own measurements."""
    metered = any(r.meter_j is not None for r in runs)
    fixed = ["run", "wall s", "CPU s", "host CPU%", "peak RSS MiB", "J", "W", *(["meter J", "meter W"] if metered else []), "exit", "status"]
    params = param_names(runs)
    head = [param_column(p, fixed) for p in params] + fixed
    rows = []
    for r in runs:
        status = "ok" if r.ok else f"FAILED: {r.error}"
        rows.append([str(r.point.get(p, "")) for p in params] + [
            f"{r.run}" + (" (warm-up)" if r.warmup else ""), "" if r.wall_s is None else f"{r.wall_s:.3f}",
            "" if r.cpu_s is None else f"{r.cpu_s:.2f}", "" if r.cpu_host is None else f"{r.cpu_host:.0f}",
            "" if r.peak_rss_kb is None else f"{r.peak_rss_kb / 1024:.1f}", "" if r.energy_j is None else num(r.energy_j),
            "" if r.power_w is None else num(r.power_w),
            *(["" if r.meter_j is None else num(r.meter_j), "" if r.meter_w is None else num(r.meter_w)] if metered else []),
            "" if r.exit_code is None else str(r.exit_code), status])
    return head, rows
