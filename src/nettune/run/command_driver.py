"""Runs one test of a command workload (`engine = "command"`, the command kind:
run/workloads/command_run.py): setup, the timed run, cleanup, on one host of any target (through the Host protocol: a local process, a lab
host's namespace, an ssh host).

Measured per run: the wall seconds of `run` (from just before it is started to the
moment its exit is seen, polled every few milliseconds; over ssh this includes the
channel's round trip), the user and system CPU seconds of its whole process tree (wait4's
rusage locally, the shell's `times` over ssh: the process and every descendant it
reaped), peak RSS (the largest process of the tree, where the host reports it), the
host's CPU % over the run and its energy (the probes every test gets), and the exit
status. A step that exits non-zero or runs past the timeout fails the run with the last
lines of its stderr; the study goes on. A timeout (or Ctrl-C) stops the process group the
step leads, by its PID; cleanup runs after every run whose setup started.
"""
from __future__ import annotations

import time

from ..engines.result import SideOutput, TestResult
from ..engines.timed_command import CommandEngine, stderr_tail
from ..errors import NettuneError
from ..probes.base import Probe
from ..record.parts import CommandRun, StepSummary
from ..probes.registry import window_probes
from ..studyfile.models import workload_kind
from ..studyfile.workload import Workload
from ..targets.base import Host, HostSet, Proc

POLL_MAX = 0.005  # seconds between looks at a running command: the wall time's resolution


def command_host(wl: Workload, target: HostSet) -> Host:
    """The host a resolved command workload runs on (default: the target's first test host)."""
    name = workload_kind(str(wl.engine)).point_hosts(wl, list(target.test_hosts))[0]
    if name not in target.hosts:
        raise NettuneError(f"workload.host = {name!r} is not a host of the target ({', '.join(target.hosts)})")
    return target.hosts[name]


def run_command_test(engine: CommandEngine, wl: Workload, host: Host, extra_machines: dict[str, Host],
                     meters: list[Probe] | None = None) -> TestResult:
    """One run: setup, run (timed, probed), cleanup. Never raises for a failing command;
    a lost connection to the host gives a failed result with the reason."""
    measured = CommandRun(host=host.name)
    warnings: list[str] = []
    error: str | None = None
    run_side: SideOutput | None = None
    probes: list[Probe] = []
    env = dict(wl.env) or None
    limit = engine.timeout(wl)
    try:
        try:
            setup = engine.step_argv(wl, "setup")
            if setup is not None:
                side, err = _step(host, setup, env, limit, "setup")
                measured.setup = _summary(side)
                if err:
                    raise _StepFailed(err)
            run_argv = engine.step_argv(wl, "run")
            assert run_argv is not None  # the spec requires run
            probes = window_probes(host, extra_machines) + list(meters or [])
            run_side, error = _timed(host, run_argv, env, limit, probes, measured)
        except _StepFailed as e:
            error = str(e)
        finally:
            cleanup = engine.step_argv(wl, "cleanup")
            if cleanup is not None:  # also after a failed setup or run: it may have left files
                side, err = _step(host, cleanup, env, limit, "cleanup")
                measured.cleanup = _summary(side)
                if err:
                    warnings.append(err)
    except ConnectionError as e:
        error = f"connection lost: {e}"
    res = engine.result(wl, run_side, measured, error)
    res.warnings += warnings
    for p in probes:
        p.write(res)
    return res


class _StepFailed(Exception):
    pass


def _timed(host: Host, argv: list[str], env: dict[str, str] | None, limit: float, probes: list[Probe],
           measured: CommandRun) -> tuple[SideOutput, str | None]:
    """The timed step, inside the probes' window; fills `measured`."""
    side = SideOutput(role="run", host=host.name, argv=list(argv), started=time.time())
    for p in probes:
        p.start()
    t0 = time.monotonic()
    try:
        proc = host.spawn(argv, env=env) if env else host.spawn(argv)
    except (OSError, ValueError) as e:  # a program that is not there (an argv is exec'd directly); an env value ssh cannot pass
        for p in probes:
            p.stop()
        return side, f"run could not start: {e}"
    try:
        exited = _wait(proc, t0 + limit)
        t1 = time.monotonic()
    finally:
        proc.stop_group()  # a timeout, a Ctrl-C, or what the command left running in its group
    for p in probes:
        p.stop()
    _finish(proc, side, not exited)
    ru = proc.rusage_tree() or {}
    cpu = proc.cpu_seconds()
    measured.wall_s, measured.exit_code, measured.timed_out = round(t1 - t0, 6), side.exit_code, side.timed_out
    measured.cpu_s = None if cpu is None or side.timed_out else round(cpu, 6)
    measured.cpu_user_s = ru.get("user") if not side.timed_out else None
    measured.cpu_sys_s = ru.get("sys") if not side.timed_out else None
    measured.peak_rss_kb = int(ru["max_rss_kb"]) if "max_rss_kb" in ru and not side.timed_out else None
    if proc.lost:
        return side, f"connection lost during the run: {proc.lost}"
    if side.timed_out:
        return side, f"run did not finish within {limit:.0f}s; its process group was stopped" + _said(side)
    if side.exit_code != 0:
        measured.stderr_tail = stderr_tail(side.stderr)
        return side, f"run exited with code {side.exit_code}" + _said(side)
    return side, None


def _step(host: Host, argv: list[str], env: dict[str, str] | None, limit: float, name: str) -> tuple[SideOutput, str | None]:
    """An untimed step (setup, cleanup): (its output, why it failed or None)."""
    side = SideOutput(role=name, host=host.name, argv=list(argv), started=time.time())
    try:
        proc = host.spawn(argv, env=env) if env else host.spawn(argv)
    except (OSError, ValueError) as e:
        return side, f"{name} could not start: {e}"
    try:
        exited = _wait(proc, time.monotonic() + limit)
    finally:
        proc.stop_group()
    _finish(proc, side, not exited)
    if proc.lost:
        return side, f"connection lost during {name}: {proc.lost}"
    if side.timed_out:
        return side, f"{name} did not finish within {limit:.0f}s; its process group was stopped" + _said(side)
    if side.exit_code != 0:
        return side, f"{name} exited with code {side.exit_code}" + _said(side)
    return side, None


def _wait(proc: Proc, deadline: float) -> bool:
    """Poll until the process exits (True) or the deadline passes (False)."""
    delay = 0.0005
    while proc.poll() is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 1.5, POLL_MAX)
    return True


def _finish(proc: Proc, side: SideOutput, timed_out: bool) -> None:
    side.exit_code = proc.poll()
    side.timed_out = timed_out
    side.stdout, side.stderr = proc.output()
    side.ended = time.time()


def _said(side: SideOutput) -> str:
    tail = stderr_tail(side.stderr, 3)
    return f": {' | '.join(tail)}" if tail else ""


def _summary(side: SideOutput) -> StepSummary:
    """What is kept of an untimed step: its command, how it ended, its last stderr lines."""
    return StepSummary(argv=side.argv, exit_code=side.exit_code, timed_out=side.timed_out, stderr_tail=stderr_tail(side.stderr, 5))
