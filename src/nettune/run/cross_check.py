"""`nettune run --cross-check`: after the study, while its target is still up, every point
analysis marks tool-bound is run again with the other engine and with iperf3 fanned out,
and the numbers are put side by side with a verdict (study D: "iperf3 3.12 single
process: 32.7; iperf3 x4 processes: 281; iperf2: 286 -> the path carries at least 286;
the first number measured iperf3").

Each configuration gets the study's counted runs per point, at the point's own settings
(target and knobs as for the study). Its tests are stored whole (raw outputs too) in a
study of their own, named `<study>.cross-check`, and the side-by-side rows and the
verdict in the `cross_checks` table (store/instrument_tables.py) of the checked study,
where the run summary and the report read them.
"""
from __future__ import annotations

from typing import Any

from ..analysis.cross_checks import cross_check_verdict
from ..analysis.data import load
from ..analysis.instrument import tool_bound_points
from ..engines import network_engine
from ..engines.choice import auto_processes, config_label
from ..engines.result import TestResult
from ..plan.points import ResolvedPoint
from ..store.base import ResultStore
from ..targets.procs import study_owner
from .context import RunContext
from .engine_choice import HostAnswers
from .point_runner import PointRunner
from .slots import run_slot
from .workloads import workload_hosts, workload_run


def tool_bound_indices(store: ResultStore, study_id: int) -> list[int]:
    data = load(store, str(study_id))
    return tool_bound_points(data, data.params)[2]


def cross_check(runner: PointRunner, study_id: int, points: list[int] | None = None) -> list[dict[str, Any]]:
    """Cross-check `points` (default: those analysis marks tool-bound) with the study's
    runner (its target, knobs and store); returns what it stored in `cross_checks`."""
    ctx = runner.ctx
    store, study = ctx.store, ctx.study
    idx = tool_bound_indices(store, study_id) if points is None else points
    kinds = {i: workload_run(ctx.by_index[i].workload) for i in idx}
    left_out = sorted({k.name for k in kinds.values() if not k.cross_checked})
    if left_out:  # a timed command has no other engine
        ctx.progress.message(f"cross-check: {', '.join(left_out)} workload points are not network tests; not cross-checked")
        idx = [i for i in idx if kinds[i].cross_checked]
    if not idx:
        ctx.progress.message("cross-check: no point was tool-bound, nothing to re-run")
        return []
    check = study.model_copy(update={"name": f"{study.name}.cross-check"[:80],
                                     "description": f"cross-check of study #{study_id} ({study.name})"})
    check_id = store.begin_study(check, None, None, owner=study_owner())
    out, status = [], "failed"
    try:
        n = 0
        for i in idx:
            rp = ctx.by_index[i]
            measured: list[dict[str, Any] | None] = [_stored_row(store, study_id, rp)]
            for engine, procs in _configs(runner, rp):
                n += 1
                measured.append(_run_config(runner, rp, engine, procs, check_id, n))
            rows = [r for r in measured if r is not None]
            text = verdict(rows)
            store.add_cross_check(study_id, i, rp.point.label(), rows, text, check_id)
            ctx.progress.message(f"cross-check {rp.point.label()}: {len(rows)} configurations measured")  # the verdict: in the summary
            out.append({"point_idx": i, "label": rp.point.label(), "rows": rows, "verdict": text})
        status = "done"
    finally:
        store.finish_study(check_id, status)
    return out


def _answers(ctx: RunContext) -> HostAnswers:
    return ctx.answers if ctx.answers is not None else HostAnswers(ctx.target)


def _configs(runner: PointRunner, rp: ResolvedPoint) -> list[tuple[str, int]]:
    """The other engine and iperf3 fanned out, for this point (what it ran left out)."""
    wl = rp.workload
    streams = int(wl.parallel)
    client = workload_hosts(wl, runner.ctx.target)[-1]
    answers = _answers(runner.ctx)
    cores = answers.cores(client)
    v3 = answers.version("iperf3", client)
    fan = max(2, auto_processes("iperf3", v3, streams, cores)) if streams > 1 else 1
    ran = (str(wl.engine), int(wl.processes or 1))
    configs = [("iperf3", fan)] if fan > 1 else []
    configs.append(("iperf2", 1) if wl.engine == "iperf3" else ("iperf3", 1))
    return [c for c in configs if c != ran]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _row(engine: str, procs: int, version: str, values: list[float], failed: int) -> dict[str, Any]:
    label = f"{engine} {version}".strip() + (f" x{procs} processes" if procs > 1 else (" single process" if engine == "iperf3" else ""))
    mean = _mean(values)
    return {"config": config_label(engine, procs), "label": label, "engine": engine, "processes": procs, "version": version,
            "gbps": None if mean is None else mean / 1e9, "n": len(values), "failed": failed,
            "values": [v / 1e9 for v in values]}  # every run: the verdict's interval (analysis/cross_checks.py)


def _stored_row(store: ResultStore, study_id: int, rp: ResolvedPoint) -> dict[str, Any]:
    """What the study itself measured at this point (its counted runs)."""
    runs = [r for r in store.runs(study_id, include_warmup=False) if r.point_idx == rp.point.index]
    ok = [r for r in runs if r.ok and r.total_bps is not None]
    version = next((r.tool_version for r in ok if r.tool_version), "")
    return _row(str(rp.workload.engine), int(rp.workload.processes or 1), version or "", [float(r.total_bps or 0.0) for r in ok], len(runs) - len(ok))


def _run_config(runner: PointRunner, rp: ResolvedPoint, engine_name: str, procs: int, check_id: int, n: int) -> dict[str, Any] | None:
    ctx = runner.ctx
    wl = rp.workload.model_copy(update={"engine": engine_name, "processes": procs})
    client = workload_hosts(wl, ctx.target)[-1]
    version = _answers(ctx).version(engine_name, client)
    if not version:
        ctx.progress.message(f"cross-check {rp.point.label()}: {engine_name} is not installed on {client}, left out")
        return None
    refused = ctx.access.admit(wl) if ctx.access is not None else None  # its servers protected like the study's
    if refused:
        ctx.progress.message(f"cross-check {rp.point.label()}: {config_label(engine_name, procs)} left out: auth = {refused}")
        return None
    engine = network_engine(engine_name)
    runner.enter(rp)
    params = dict(rp.point.params) | {"cross_check": config_label(engine_name, procs)}
    pid = ctx.store.add_point(check_id, n, params)
    values: list[float] = []
    failed = 0
    for run in range(ctx.study.repeat.min_counted):
        def keep(r: TestResult, run: int = run) -> None:
            ctx.store.add_run(check_id, pid, run, False, r, runner.settings)

        def keep_round(rs: list[TestResult], run: int = run) -> None:
            ctx.store.add_runs(check_id, pid, run, False, rs, runner.settings)

        results = run_slot(engine, wl, ctx.target, version, keep, on_round=keep_round, access=ctx.access)
        ok = [r.total_bps for r in results if r.ok and r.total_bps is not None]
        failed += len(results) - len(ok)
        if ok and len(ok) == len(results):
            values.append(float(sum(ok)))
    return _row(engine_name, procs, version, values, failed)


def verdict(rows: list[dict[str, Any]]) -> str:
    """The rows side by side, and what they say about the first number (with an interval:
    analysis/cross_checks.py, which analyze recomputes from the same rows)."""
    return cross_check_verdict(rows).text
