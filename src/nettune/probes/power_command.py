"""An external power meter (`[probes] power_command = ["/usr/local/bin/plug-watts"]`): a
command run on the machine nettune runs on that prints the watts a smart plug (or any
meter) reads. Sampled once a second from the start of the window to its end; written to
the result's energy part as its `meter` (watts: mean, joules: mean x seconds, min_w, max_w,
samples), or why no sample could be read.
"""
from __future__ import annotations

import re
import threading
import time
from typing import Any

from ..engines.result import TestResult
from ..record.parts import MeterReading
from ..targets.procs import run_local
from .base import ProbeBase

INTERVAL = 1.0  # seconds between samples
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def read_watts(argv: list[str], timeout: float = 5.0) -> tuple[float | None, str]:
    """One reading: the first number the command prints (watts), or None and why."""
    r = run_local(argv, timeout=timeout)
    if r.returncode != 0:
        return None, f"power_command {argv[0]} exited with code {r.returncode}: {r.said(2, 200)}"
    m = NUMBER.search(r.stdout)
    if m is None:
        return None, f"power_command {argv[0]} printed no number of watts ({r.stdout.strip()[:60]!r})"
    return float(m.group(0)), ""


class Sampler:
    """Reads the meter every INTERVAL seconds on a thread until stopped (the first reading
    at once, so a run shorter than a second still has one)."""

    def __init__(self, argv: list[str], interval: float = INTERVAL):
        self.argv, self.interval = argv, interval
        self.watts: list[float] = []
        self.why = ""
        self.t0 = self.t1 = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.t0, self.watts, self.why = time.monotonic(), [], ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="nettune-power-meter", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        tick = self.t0
        while True:
            w, why = read_watts(self.argv)
            if w is None:
                self.why = why
            else:
                self.watts.append(w)
            tick += self.interval
            if self._stop.wait(max(0.0, tick - time.monotonic())):
                return

    def stop(self) -> None:
        self.t1 = time.monotonic()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


class PowerCommandProbe(ProbeBase):
    def __init__(self, argv: list[str]):
        self.sampler = Sampler(argv)

    def start(self) -> None:
        self.sampler.start()

    def stop(self) -> None:
        self.sampler.stop()

    def write(self, res: TestResult) -> None:
        energy = res.energy_part()
        energy.meter = MeterReading.model_validate(meter_summary(self.sampler))
        energy.settle()


def meter_summary(s: Sampler) -> dict[str, Any]:
    if not s.watts:
        return {"why": s.why or "power_command gave no reading"}
    mean = sum(s.watts) / len(s.watts)
    return {"watts": round(mean, 3), "joules": round(mean * max(0.0, s.t1 - s.t0), 3), "min_w": min(s.watts),
            "max_w": max(s.watts), "samples": len(s.watts)}
