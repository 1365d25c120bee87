"""Runs one test of a command workload (`engine = "command"`, the command kind:
run/workloads/command_run.py): setup, the timed run, cleanup, on one host of any target (through the Host protocol: a local process, a lab
host's namespace, an ssh host).

Measured per run, by a small helper that starts `run` (engines/rss_helper.py: a
Python of builtin modules only, so nettune's own size never enters the peak): the wall
seconds of `run` from its fork to its exit, the user and system CPU seconds of its whole
process tree (the process and every descendant it reaped), its peak RSS (the largest
process of the tree) and the exit status; the host's CPU % over the run and its energy
come from the probes every test gets, the meter integrated over the run's own window.
On a host without python3 the command runs unwrapped: wall seconds from just before it
is started to the moment its exit is seen (over ssh with the channel's round trip), CPU
seconds from wait4 (the shell's `times` over ssh), and no peak RSS (its method says why). A step that exits non-zero or runs past the timeout fails the run with the last
lines of its stderr; the study goes on. A timeout (or Ctrl-C) stops the process group the
step leads, by its PID; cleanup runs after every run whose setup started.
"""
from __future__ import annotations

import sys
import time

from ..engines.result import SideOutput, TestResult
from ..engines.rss_helper import take_report, wrapped
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


def peak_helper(host: Host) -> tuple[str | None, str]:
    """The python3 that runs the peak-RSS helper on `host` (this machine's own interpreter
    for hosts on it), or None and why there is none."""
    if host.on_this_machine:
        return sys.executable, ""
    python = host.which("python3")
    if python:
        return python, ""
    return None, f"not measured: no python3 on {host.name} (the helper that keeps nettune's size out of the peak needs it)"


def _timed(host: Host, argv: list[str], env: dict[str, str] | None, limit: float, probes: list[Probe],
           measured: CommandRun) -> tuple[SideOutput, str | None]:
    """The timed step, inside the probes' window; fills `measured`."""
    side = SideOutput(role="run", host=host.name, argv=list(argv), started=time.time())
    python, why_not = peak_helper(host)
    for p in probes:
        p.start()
    t0 = time.monotonic()
    try:
        spawned = wrapped(python, argv) if python else argv
        proc = host.spawn(spawned, env=env) if env else host.spawn(spawned)
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
    report, side.stderr = take_report(side.stderr) if python else (None, side.stderr)
    measured.exit_code, measured.timed_out = side.exit_code, side.timed_out
    if report is not None and not side.timed_out:  # the command's own numbers, from its fork to its exit
        t0 = max(t0, t1 - report.wall_s)  # its window ends when its exit was seen, without the helper's start
        measured.wall_s, measured.cpu_user_s, measured.cpu_sys_s = round(report.wall_s, 6), report.user_s, report.sys_s
        measured.cpu_s = round(report.user_s + report.sys_s, 6)
        measured.peak_rss_kb, measured.peak_rss_method = report.max_rss_kb, report.method
    else:
        ru = proc.rusage_tree() or {}
        cpu = proc.cpu_seconds()
        measured.wall_s = round(t1 - t0, 6)
        measured.cpu_s = None if cpu is None or side.timed_out else round(cpu, 6)
        measured.cpu_user_s = ru.get("user") if not side.timed_out else None
        measured.cpu_sys_s = ru.get("sys") if not side.timed_out else None
        measured.peak_rss_method = why_not or ("not measured: the run did not finish" if side.timed_out or proc.lost
                                               else "not measured: the helper gave no report")
    for p in probes:
        p.run_window(t0, t1)
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
