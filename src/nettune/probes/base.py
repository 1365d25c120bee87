"""The probe protocol: something measured during every test, next to the tool's numbers.

The driver (run.driver) opens a window just before the client starts and closes it
right after the client ended; each probe samples at both ends and then writes what it
measured into the TestResult, once both processes are done (exact CPU times of a remote
process are known only then). A probe never raises for a host it cannot read: it writes
nothing (an empty column), since a 0 would read as an idle machine.

Members, one file each, all subclassing ProbeBase: process_cpu (process CPU per side),
linux_cpu (machine CPU from /proc/stat), freebsd_cpu (machine CPU from kern.cp_time), both
on machine_cpu's shared MachineCpu, and self_cpu (nettune's own CPU); probes.registry picks
them for a test. A new probe (power, CPU frequency...) is one new file here and one line
in the registry.
"""
from __future__ import annotations

from typing import Protocol

from ..engines.result import TestResult


class Probe(Protocol):
    def start(self) -> None:
        """Sample at the start of the window (just before the client starts)."""
        ...

    def stop(self) -> None:
        """Sample at the end of the window (right after the client ended)."""
        ...

    def run_window(self, t0: float, t1: float) -> None:
        """The measured run's own window (time.monotonic() at its start and at its exit),
        when the workload knows it more tightly than start and stop (a timed command)."""
        ...

    def write(self, res: TestResult) -> None:
        """Put what was measured into `res` (nothing when it could not be measured)."""
        ...


class ProbeBase:
    """Defaults for every probe: a probe samples nothing and writes nothing unless it
    overrides a step, so a probe that needs only the end of the window (or only writes)
    overrides just that."""

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def run_window(self, t0: float, t1: float) -> None:
        return None

    def write(self, res: TestResult) -> None:
        return None
