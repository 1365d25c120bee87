"""`nettune run --dry-run` as data: the plan of a study, with the exact commands a run
would start, computed with the run's own code and without creating anything.

The same code as the run: points from plan.points, each point's test count, time and
commands from its workload kind (run/workloads/: the network kind's engine argv builders
with server addresses as the target kind gives them, the lab's layout, an ssh host's
address, loopback; a command's setup and run), the expected time from commands/eta.py. The tool version those
builders get is the one the run would get where it can be read without creating
anything: hosts on this machine (the target spec's on_this_machine: lab, local) run
this machine's binaries, so it is the installed tool's; a remote host's is only known
once connected, so its commands are shown without the options that depend on the
version, and a note says so. The CLI
(cli/dry_run_output.py) only prints a DryRun."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..engines import get_engine
from ..engines.base import Tool
from ..knobs.keys import summary as knob_summary
from ..knobs.kinds.sysctl_unsafe import danger_notes
from ..knobs.offline import check_offline
from ..plan.points import ResolvedPoint, Slot, expand_and_check
from ..plan.run_order import run_order
from ..run.engine_choice import planned_choices
from ..run.workloads import workload_run
from ..run.workloads.base import PlannedTest as PlannedTest, ToolVersion as ToolVersion
from ..studyfile.models import Study
from ..targets.base import Host
from ..targets.local import LocalHost
from .dry_run_disruptions import steps
from .dry_run_knobs import knob_lines
from .eta import MAX_HOURS, describe, plan_eta


@dataclass
class DryRun:
    name: str
    target_kind: str
    points: int
    runs_per_point: int  # warm-up + counted runs each point gets up front
    tests: int
    host_pairs: int | None  # tests per run of a point when the workload runs over host pairs (one per pair)
    order: str
    expected: str  # "about 12m05s", with the adaptive upper bound if any
    too_long: bool  # longer than MAX_HOURS: the run needs --allow-long
    max_hours: int
    planned: list[PlannedTest]  # in the order the run first reaches each point
    common_notes: list[str]  # notes every point has, said once
    sequence: list[tuple[int, int]] = field(default_factory=list)  # the run's order: (point index, tests in a row)


def dry_run(study: Study, text: str, file: str, db: str | Path | None = None) -> DryRun:
    """The whole plan of `study` (the file's text and name for error messages); `db`: the
    results database the run would use (read, never created: its loopback ceilings
    decide engine = "auto" as in the run)."""
    from ..store.locate import open_read_only  # noqa: PLC0415

    store = open_read_only(db)
    try:
        resolved, choice_notes = planned_choices(study, expand_and_check(study, text, file), store)  # engine = "auto" made concrete
    finally:
        if store is not None:
            store.close()
    check_offline(study, resolved, text, file)  # what loading the file refuses (a Study made without loading one)
    per_point = study.repeat.warmup + study.repeat.min_counted
    per_run = [workload_run(rp.workload).tests_per_slot(rp.workload, list(rp.target.test_hosts)) for rp in resolved]  # every host pair is a test of its own
    tests = per_point * sum(per_run)
    pairs = per_run[0] if study.workload.pairs is not None and len(set(per_run)) == 1 else None
    order = run_order(study, resolved)  # the run's own order (plan/run_order.py)
    by_index = {rp.point.index: rp for rp in resolved}
    versions: dict[str, ToolVersion] = {}
    planned: list[PlannedTest] = []
    for index in dict.fromkeys(s.point.index for s in order):  # each point where the run first reaches it
        rp = by_index[index]
        engine = get_engine(str(rp.workload.engine))
        tool = versions.setdefault(engine.name, tool_version(study, engine))
        planned.append(planned_test(study, rp, tool))
    disruption_notes(study, resolved, order, planned)
    common = [n for n in planned[0].notes if all(n in p.notes for p in planned)] if len(planned) > 1 else []
    common += choice_notes
    common += danger_notes(list(study.knobs.knobs()) if study.knobs else [])  # sysctl_unsafe: the denylist's override, said loudly
    for p in planned:
        p.own_notes = [n for n in p.notes if n not in common]
    eta = plan_eta(study, resolved)
    return DryRun(
        name=study.name, target_kind=study.target.kind, points=len(resolved), runs_per_point=per_point,
        tests=tests, host_pairs=pairs, order=study.repeat.order, expected=describe(study, resolved, eta),
        too_long=eta.longest > MAX_HOURS * 3600, max_hours=MAX_HOURS,
        planned=planned, common_notes=common, sequence=sequence(order),
    )


def sequence(order: list[Slot]) -> list[tuple[int, int]]:
    """The run's order as (point index, tests in a row) runs: '#3 x3, #1 x3, ...'."""
    out: list[tuple[int, int]] = []
    for s in order:
        if out and out[-1][0] == s.point.index:
            out[-1] = (s.point.index, out[-1][1] + 1)
        else:
            out.append((s.point.index, 1))
    return out


def disruption_notes(study: Study, resolved: list[ResolvedPoint], order: list[Slot], planned: list[PlannedTest]) -> None:
    """Every reboot, VM restart and link reset of the run, with its commands and its
    restore, on the point it comes before (the restores after the last test: on the
    last point printed)."""
    by_point = {p.index: p for p in planned}
    for step in steps(study, resolved, order):
        target = by_point.get(step.index, planned[-1])
        for line in step.text.split("\n"):
            if line not in target.notes:
                target.notes.append(line)


def planned_test(study: Study, rp: ResolvedPoint, tool: ToolVersion) -> PlannedTest:
    """A point's commands as the run builds them (its workload kind's), after the point's
    knob lines."""
    knobs = rp.extra.get("knobs")
    notes = [f"knobs: {knob_summary(knobs)}"] + knob_lines(study, rp) if knobs else []  # each host's own OS's commands
    return workload_run(rp.workload).planned(study, rp, tool, notes)


def tool_version(study: Study, engine: Tool) -> ToolVersion:
    """The version the run would find (run.study.preflight asks the client host the same
    way): this machine's installed tool for the lab and loopback, whose hosts run this
    machine's binaries; unknown for remote hosts until connected (a dry run connects to none)."""
    if not study.target.on_this_machine:
        return ToolVersion("", f"{engine.name} version unknown until connected: commands shown without the options "
                               "that depend on it (each host's own version decides them at run time)")
    return installed_version(engine, LocalHost("machine"))


def installed_version(engine: Tool, host: Host) -> ToolVersion:
    """The engine's tool version on `host`, as the run's preflight reads it."""
    if host.which(engine.binary) is None:
        return ToolVersion("", f"{engine.binary} is not installed here (the run would stop: {engine.install_hint}); "
                               "commands shown without the options that depend on its version")
    r = host.probe_run(engine.version_argv(), timeout=10)
    found = engine.version(r.stdout + r.stderr)
    if found:
        return ToolVersion(found)
    return ToolVersion("", f"cannot tell the version of {engine.binary} (the run would stop); "
                           "commands shown without the options that depend on it")
