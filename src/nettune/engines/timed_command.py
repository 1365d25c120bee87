"""A workload that is any command (`[workload] engine = "command"`): a timed build, a
benchmark script. One host runs setup (untimed), run (timed) and cleanup (untimed).

This tool (a Tool, not a network Engine: no server, no client, nothing to parse) only
builds command lines and the result; the command workload kind
(run/workloads/command_run.py, run/command_driver.py) starts the processes and measures them. An argv list is run as written (no shell); a string runs
with `sh -c` (its sweep values were shell-quoted when the point was resolved, see
studyfile/command_workload.py). `cwd` is entered by a fixed `sh -c 'cd -- "$1" ...' ` line that
takes the directory as an argument, so it never becomes shell text either.

The primary metric is the wall seconds of `run` (lower is better), stored as the test's
`duration` and in its `command` part (record/parts.CommandRun) with the CPU seconds of its
process tree, peak RSS and exit status; a non-zero exit is a failed run carrying its last
stderr lines.
"""
from __future__ import annotations

from typing import Any

from ..studyfile.workload import Workload
from .base import EngineBase
from ..record.parts import CommandRun
from .result import SideOutput, TestResult

DEFAULT_TIMEOUT = 3600.0  # seconds each step may take when [workload] timeout is not set
STDERR_LINES = 20  # last lines of stderr kept with a failed step
# cd into the directory given as $1, then run the rest of the arguments as they are
CD_ARGV = 'cd -- "$1" || exit 126; shift; exec "$@"'


class CommandEngine(EngineBase):
    name = "command"
    binary = "sh"  # string commands and cwd need a POSIX sh on the host
    install_hint = "a POSIX sh (every Linux and FreeBSD has one)"

    def version(self, version_output: str) -> str:
        return "sh"

    def version_argv(self) -> list[str]:
        return ["sh", "-c", "exit 0"]

    # -- what the command driver asks ---------------------------------------------------
    def step_argv(self, wl: Workload, step: str) -> list[str] | None:
        """The argv of `step` ("setup", "run", "cleanup") for a resolved point; None if unset."""
        value = {"setup": wl.setup, "run": wl.run, "cleanup": wl.cleanup}[step]
        if value is None:
            return None
        argv = ["sh", "-c", value] if isinstance(value, str) else [word_text(w) for w in value]
        if wl.cwd:
            return ["sh", "-c", CD_ARGV, "nettune-cwd", wl.cwd, *argv]
        return argv

    def timeout(self, wl: Workload) -> float:
        return float(wl.timeout) if wl.timeout is not None else DEFAULT_TIMEOUT

    def result(self, wl: Workload, run: SideOutput | None, measured: CommandRun, error: str | None) -> TestResult:
        """The TestResult of one run: ok unless `error` (setup failed, run exited non-zero or
        timed out). `measured` holds wall_s, cpu_s, cpu_user_s, cpu_sys_s, peak_rss_kb,
        exit_code, host and the setup/cleanup summaries."""
        if measured.timed_out:
            measured.wall_s = None  # a run stopped at the timeout has no wall time of its own
        return TestResult(engine=self.name, tool_version="sh", ok=error is None, error=error, protocol="",
                          duration=measured.wall_s if error is None else None, client=run, command=measured)


def word_text(word: Any) -> str:
    """An argv word as text ("{jobs}" filled in a number: 2, 2.5)."""
    if isinstance(word, float) and word.is_integer():
        return str(int(word))
    return str(word)


def stderr_tail(text: str, lines: int = STDERR_LINES) -> list[str]:
    """The last non-empty lines of a step's stderr (why a build failed is at its end)."""
    return [ln.rstrip() for ln in text.splitlines() if ln.strip()][-lines:]
