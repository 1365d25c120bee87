"""Linux machine CPU: /proc/stat through the host."""
from __future__ import annotations

import time

from .machine_cpu import MachineCpu, MachineTimes, parse_proc_stat


class ProcStatCpu(MachineCpu):
    """A Linux machine: /proc/stat."""

    def read(self) -> MachineTimes:
        return parse_proc_stat(self.host.read_text("/proc/stat"), time.monotonic())
