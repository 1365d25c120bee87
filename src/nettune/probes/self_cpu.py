"""nettune's own CPU during a test (cpu_extra["nettune"]), in % of one core."""
from __future__ import annotations

import resource
import time

from ..engines.result import TestResult
from .base import ProbeBase


class SelfCpu(ProbeBase):
    """nettune's own CPU during a test (cpu_extra["nettune"]), to prove the instrument
    stays out of the way."""

    def __init__(self) -> None:
        self.start_cpu = 0.0
        self.t0 = 0.0
        self.pct = 0.0

    @staticmethod
    def _cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    def start(self) -> None:
        self.start_cpu, self.t0 = self._cpu(), time.monotonic()

    def stop(self) -> None:
        dt = time.monotonic() - self.t0
        self.pct = 100.0 * (self._cpu() - self.start_cpu) / dt if dt > 0 else 0.0

    def write(self, res: TestResult) -> None:
        res.cpu_extra["nettune"] = self.pct
