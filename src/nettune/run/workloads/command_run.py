"""The command workload kind, its run half: one command timed on one host (its
study-file half: studyfile/command_workload.py; the tool: engines/timed_command.py).

Preflight: every point's host exists and has sh, and an argv `run` names a program that
host has. A slot is one test: setup, the timed run, cleanup (run/command_driver.py).
Nothing serves, so the study's credentials leave it alone, and `--cross-check` has no
other engine to compare it with. A command's length is unknown before it runs: the plan
counts `[workload] duration` when the file declares it (else only the overhead, and says
the length is unknown), and the progress bar corrects it from the runs themselves
(run/plan_time.py).
"""
from __future__ import annotations

import shlex

from ...engines.result import TestResult
from ...engines.timed_command import CommandEngine
from ...errors import ToolMissing
from ...plan.points import ResolvedPoint
from ...record.parts import CommandRun as CommandMeasures
from ...studyfile.models import Study
from ...studyfile.workload import Workload
from ...targets.base import Target
from ..command_driver import command_host, run_command_test
from .base import PlannedTest, SlotRun, ToolVersion, WorkloadRunBase

ENGINE = CommandEngine()


class CommandRun(WorkloadRunBase):
    name = "command"

    def preflight(self, engine: str, resolved: list[ResolvedPoint], target: Target) -> str:
        """Every point's host exists and has sh, and an argv `run` names a program that
        host has. Returns the version the store records ("sh")."""
        seen: set[tuple[str, str]] = set()
        for rp in resolved:
            wl = rp.workload
            host = command_host(wl, target)
            for prog in ("sh", *([str(wl.run[0])] if isinstance(wl.run, list) and not wl.cwd else [])):
                if (host.name, prog) in seen:
                    continue
                seen.add((host.name, prog))
                if host.which(prog) is None:
                    hint = ENGINE.install_hint if prog == "sh" else "install it, or give its full path in run = [...]"
                    raise ToolMissing(f"workload.run: {prog} is not installed on {host.name}: {hint}")
        return ENGINE.version("")

    def planned(self, study: Study, rp: ResolvedPoint, tool: ToolVersion, notes: list[str]) -> PlannedTest:
        """Setup and the timed run on its one host (cleanup in a note)."""
        wl = rp.workload
        host = self.hosts(wl, list(rp.target.test_hosts))[0]
        cleanup = ENGINE.step_argv(wl, "cleanup")
        notes = notes + ([f"cleanup: {' '.join(shlex.quote(a) for a in cleanup)}"] if cleanup else [])
        return PlannedTest(rp.point.index, rp.point.label(), "", host, host, ENGINE.step_argv(wl, "setup") or [],
                           ENGINE.step_argv(wl, "run") or [], dict(wl.env), notes=notes, roles=("setup", "run"))

    def run_slot(self, slot: SlotRun) -> list[TestResult]:
        res = run_command_test(ENGINE, slot.workload, command_host(slot.workload, slot.target), slot.target.extra_machines,
                               slot.meters() if slot.meters else None)
        slot.on_result(res)
        return [res]

    def length_declared(self, written: Workload) -> bool:
        return "duration" in written.model_fields_set  # a declared expectation of the command's length

    def failed(self, wl: Workload, tool_version: str, why: str) -> TestResult:
        return ENGINE.result(wl, None, CommandMeasures(), why)

    def value(self, result: TestResult) -> float | None:
        return result.duration if result.ok else None  # the wall seconds of `run` (CommandEngine.result)

    def result_text(self, result: TestResult) -> str:
        return "" if result.duration is None else f"{result.duration:.3f} s"
