"""`nettune run --dry-run` as data: the plan of a study, with the exact commands a run
would start, computed with the run's own code and without creating anything.

The same code as the run: points from plan.points, test counts and pair rounds from
run.study / run.slots, the expected time from run.eta, server addresses as the target
gives them (targets.footprint.server_address: the lab's layout, an ssh host's address,
loopback), command lines from the engine's argv builders. The tool version those
builders get is the one the run would get where it can be read without creating
anything: hosts on this machine (the target spec's on_this_machine: lab, local) run
this machine's binaries, so it is the installed tool's; a remote host's is only known
once connected, so its commands are shown without the options that depend on the
version, and a note says so. The CLI
(cli/dry_run_output.py) only prints a DryRun."""
from __future__ import annotations

import shlex

from dataclasses import dataclass, field, replace
from typing import Any

from ..engines import get_engine
from ..engines.access import Access, placeholder
from ..engines.base import Engine
from ..knobs.base import Loc
from ..knobs.keys import summary as knob_summary
from ..plan.points import ResolvedPoint, expand_and_check
from ..studyfile.models import Study, Workload
from ..targets.footprint import planned_port, server_address
from .dry_run_knobs import knob_lines
from ..run.engine_choice import planned_choices
from .eta import MAX_HOURS, describe, plan_seconds
from ..run.slots import pair_rounds

DEFAULT_PORT = 5201  # built into the command, then shown as FREE_PORT where the run picks one itself
FREE_PORT = "<port>"  # the run asks the server host for a free port when the test starts


@dataclass
class PlannedTest:
    """One point: the commands of its (first) test, and what to know about them."""

    index: int
    label: str  # the point's parameters, e.g. "streams=4"
    target: str  # the target settings that vary per point, e.g. "mtu=9000, queues=2" ('' if none)
    server_host: str
    client_host: str
    server_argv: list[str]
    client_argv: list[str]
    client_env: dict[str, str]
    notes: list[str] = field(default_factory=list)  # every note of this point
    own_notes: list[str] = field(default_factory=list)  # those not common to every point
    roles: tuple[str, str] = ("server", "client")  # what the two commands are (a command workload: setup, run)


@dataclass
class ToolVersion:
    """The version the commands are built for ('' = unknown: version-dependent options left out)."""

    version: str
    note: str = ""


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
    planned: list[PlannedTest]
    common_notes: list[str]  # notes every point has, said once


def dry_run(study: Study, text: str, file: str, db: Any = None) -> DryRun:
    """The whole plan of `study` (the file's text and name for error messages); `db`: the
    results database the run would use (read, never created: its loopback ceilings
    decide engine = "auto" as in the run)."""
    from ..run.study import tests_per_slot  # noqa: PLC0415 - run.study pulls in scipy; the CLI starts without it
    from ..store.instrument_tables import open_read_only  # noqa: PLC0415

    conn = open_read_only(db)
    try:
        resolved, choice_notes = planned_choices(study, expand_and_check(study, text, file), conn)  # engine = "auto" made concrete
    finally:
        if conn is not None:
            conn.close()
    per_point = study.repeat.warmup + study.repeat.min_counted
    per_run = [tests_per_slot(rp, rp.target) for rp in resolved]  # every host pair is a test of its own
    tests = per_point * sum(per_run)
    pairs = per_run[0] if study.workload.pairs is not None and len(set(per_run)) == 1 else None
    versions: dict[str, ToolVersion] = {}
    planned = []
    for rp in resolved:
        engine = get_engine(rp.workload.engine)
        tool = versions.setdefault(engine.name, tool_version(study, engine))
        planned.append(planned_test(study, rp, engine, tool))
    boot_notes(study, resolved, planned, text, file)
    common = [n for n in planned[0].notes if all(n in p.notes for p in planned)] if len(planned) > 1 else []
    common += choice_notes
    for p in planned:
        p.own_notes = [n for n in p.notes if n not in common]
    return DryRun(
        name=study.name, target_kind=study.target.kind, points=len(resolved), runs_per_point=per_point,
        tests=tests, host_pairs=pairs, order=study.repeat.order, expected=describe(study, resolved),
        too_long=plan_seconds(study, resolved)[1] > MAX_HOURS * 3600, max_hours=MAX_HOURS,
        planned=planned, common_notes=common,
    )


def boot_notes(study: Study, resolved: list[ResolvedPoint], planned: list[PlannedTest], text: str, file: str) -> None:
    """Every reboot the run makes for boot-time knobs, with its commands, on the point it
    comes before (plan/boot_order.py orders points so there are as few as possible)."""
    from ..knobs.kinds.cmdline import security_warning  # noqa: PLC0415
    from ..knobs.registry import KINDS  # noqa: PLC0415
    from ..plan.boot_order import boot_ordered, boot_values, check_boot_hosts, reboots  # noqa: PLC0415
    from ..plan.points import schedule  # noqa: PLC0415

    check_boot_hosts(study, resolved, text, file)
    by_point = {p.index: p for p in planned}
    for index, shown in reboots(boot_ordered(schedule(study, [r.point for r in resolved]), resolved), resolved):
        target = by_point.get(index, planned[-1])
        rp = next((r for r in resolved if r.point.index == index), None)
        cmds = []
        for key, value, _h in boot_values(rp) if rp is not None else ():
            arg = key.split(":", 1)[1]
            cmds += KINDS["cmdline"].commands(Loc(key, "cmdline", arg), {"true": True, "false": None}.get(value, value))[:3]
            warn = security_warning(arg, value)
            if warn:
                target.notes.append("SECURITY: " + warn)
        when = "before this point" if rp is not None else "after the last test"
        target.notes.append(f"REBOOT {when}: boot-time knobs -> {shown}; edit (the host's family decides): {' | '.join(cmds) or 'put the journaled files back'}; "
                            "then reboot, wait for SSH, check /proc/cmdline")


def planned_test(study: Study, rp: ResolvedPoint, engine: Engine, tool: ToolVersion) -> PlannedTest:
    """A point's commands as the run builds them (engine.warnings first, as run.driver does)."""
    wl, notes = engine.warnings(rp.workload)
    knobs = rp.extra.get("knobs")
    notes += [f"knobs: {knob_summary(knobs)}"] + knob_lines(study, rp) if knobs else []  # each host's own OS's commands
    if not engine.network:  # engine = "command": setup and the timed run on one host
        from ..run.command_driver import planned_steps  # noqa: PLC0415

        return PlannedTest(rp.point.index, rp.point.label(), "", *planned_steps(engine, wl, rp.target), dict(wl.env),
                           notes=notes + planned_cleanup(engine, wl), roles=("setup", "run"))
    notes += [tool.note] if tool.note else []
    server, client = wl.server, wl.client
    if wl.pairs is not None:
        rounds = pair_rounds(wl, rp.target)
        server, client = rounds[0][0]
        shown = " | ".join(", ".join(f"{a}->{b}" for a, b in rnd) for rnd in rounds)
        mode = "pairs of a round at once" if wl.parallel_pairs else "one pair at a time"
        notes.insert(0, f"{sum(map(len, rounds))} pairs in {len(rounds)} rounds ({mode}): {shown}; commands shown for {server}->{client}")
    address = server_address(study, server)
    access, note = planned_access(engine, wl, address)
    notes += [note] if note else []
    port = wl.port or planned_port(study)
    target = ", ".join(f"{k}={v}" for k, v in rp.target.model_dump().items() if k in ("mtu", "queues"))
    return PlannedTest(
        index=rp.point.index, label=rp.point.label(), target=target, server_host=server, client_host=client,
        server_argv=_port_shown(engine.server_argv(wl, port or DEFAULT_PORT, tool.version, access), port),
        client_argv=_port_shown(engine.client_argv(wl, address, port or DEFAULT_PORT, tool.version, access), port),
        client_env=engine.client_env(access), notes=notes,
    )


def _port_shown(argv: list[str], port: int | None) -> list[str]:
    """The command with FREE_PORT where the run puts a port it picks itself."""
    if port is not None:
        return argv
    return [FREE_PORT if i and argv[i - 1] in ("-p", "--port") and a == str(DEFAULT_PORT) else a for i, a in enumerate(argv)]


def planned_cleanup(engine: Any, wl: Workload) -> list[str]:
    argv = engine.step_argv(wl, "cleanup")
    return [f"cleanup: {' '.join(shlex.quote(a) for a in argv)}"] if argv else []


def tool_version(study: Study, engine: Engine) -> ToolVersion:
    """The version the run would find (run.study.preflight asks the client host the same
    way): this machine's installed tool for the lab and loopback, whose hosts run this
    machine's binaries; unknown for remote hosts until connected (a dry run connects to none)."""
    if not study.target.on_this_machine:
        return ToolVersion("", f"{engine.name} version unknown until connected: commands shown without the options "
                               "that depend on it (each host's own version decides them at run time)")
    from ..targets.local import LocalHost  # noqa: PLC0415

    return installed_version(engine, LocalHost("machine"))


def installed_version(engine: Engine, host: Any) -> ToolVersion:
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


def planned_access(engine: Engine, wl: Workload, bind: str) -> tuple[Access, str]:
    """The server's binding and credentials as a run would use them (secrets as names),
    and a note on them ('' if none)."""
    bound = bind if wl.bind else None
    if wl.auth is False:
        return Access(bind=bound), "auth = false: servers accept any client"
    if engine.auth == "password":
        note = "" if wl.auth is True else f"auth auto: credentials used if every host's {engine.name} has authentication"
        return replace(placeholder(bound), permit_key=None), note
    why = engine.permit_key_usable(wl)
    return (Access(bind=bound), why) if why else (replace(placeholder(bound), user=None, public_key=None), "")
