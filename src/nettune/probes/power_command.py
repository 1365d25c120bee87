"""An external power meter (`[probes] power_command = ["/usr/local/bin/plug-watts"]`): a
command run on the machine nettune runs on that prints the watts a smart plug (or any
meter) reads. Read once a second from the start of the window to its end, each reading
with the time it was taken; written to the result's energy part as its `meter`, or why no
reading could be had.

Time of a reading: a meter command takes a while to answer (a smart plug over HTTP: a
tenth of a second or more), so a reading is dated at the middle of its command's run, the
best estimate of when the plug measured it. Energy is integrated over the run's own window
(from the command's start to its exit for a timed command, `run_window`; the probe's
start to stop otherwise): the trapezoid rule over the readings dated inside the window,
the power at each edge held at the nearest reading inside (a build's power steps up when
it starts and down when it ends, so a reading from before or after the run would pull its
edges toward the idle). A reading dated after the window's end (its command was still
answering when the run ended) is never used, so the idle after a run does not leak into
it; a run with no reading inside at all (shorter than the meter's answer) holds the one
taken as the probe started, just before it. Watts are joules / the window's seconds. A run shorter than MIN_INTERVALS meter
intervals rests on one or two readings: it is measured but flagged as too short to meter.
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from ..engines.result import TestResult
from ..record.parts import MeterReading
from ..targets.procs import run_local
from .base import ProbeBase

INTERVAL = 1.0  # seconds between readings
MIN_INTERVALS = 3  # a window shorter than this many intervals is too short to meter
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


@dataclass(frozen=True)
class Reading:
    t: float  # time.monotonic() when it was taken: the middle of its command's run
    watts: float
    answer_s: float  # how long the meter command took to answer


class Sampler:
    """Reads the meter every `interval` seconds on a thread until stopped (the first reading
    at once, so a short run still has one), each reading with its time."""

    def __init__(self, argv: list[str], interval: float | None = None):
        self.argv, self.interval = argv, interval or INTERVAL
        self.readings: list[Reading] = []
        self.why = ""
        self.t0 = self.t1 = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def watts(self) -> list[float]:
        """The watts of the readings taken inside the window (none dated after its end)."""
        return [r.watts for r in self.readings if self.t0 <= r.t <= (self.t1 or r.t)]

    def start(self) -> None:
        self.t0, self.t1, self.readings, self.why = time.monotonic(), 0.0, [], ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="nettune-power-meter", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        tick = self.t0
        while True:
            asked = time.monotonic()
            w, why = read_watts(self.argv)
            answered = time.monotonic()
            if w is None:
                self.why = why
            else:
                self.readings.append(Reading((asked + answered) / 2, w, answered - asked))
            tick += self.interval
            if self._stop.wait(max(0.0, tick - time.monotonic())):
                return

    def stop(self) -> None:
        self.t1 = time.monotonic()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


def integrate(readings: list[Reading], a: float, b: float) -> tuple[float, int] | None:
    """(joules, readings used) over [a, b]: the trapezoid rule over the readings dated
    inside, the power at each edge held at the nearest of them (a run's power steps at its
    start and end: a reading from before or after it would pull it toward the idle). A run
    with no reading inside (shorter than the meter's answer) holds the last reading taken
    before it, as the probe started. A reading dated after `b` is never used. None when no
    reading is dated before `b`."""
    before_end = sorted((r for r in readings if r.t <= b), key=lambda r: r.t)
    if not before_end or b <= a:
        return None
    inside = [r for r in before_end if r.t >= a] or before_end[-1:]
    pts = [(a, inside[0].watts)] + [(r.t, r.watts) for r in inside if r.t >= a] + [(b, inside[-1].watts)]
    joules = sum((t2 - t1) * (w1 + w2) / 2 for (t1, w1), (t2, w2) in zip(pts, pts[1:]))
    return joules, len(inside)


def meter_summary(s: Sampler, window: tuple[float, float] | None = None) -> dict[str, Any]:
    """The meter over `window` (monotonic start, end; default the sampler's own)."""
    a, b = window or (s.t0, s.t1)
    done = integrate(s.readings, a, b)
    if done is None:
        late = sum(1 for r in s.readings if r.t > b)
        if s.readings and late:
            return {"why": f"no meter reading dated before the end of the run's {b - a:.2f} s ({late} dated after it, the meter answering in "
                           f"{max(r.answer_s for r in s.readings):.2f} s): too short to meter"}
        return {"why": s.why or "power_command gave no reading"}
    joules, n = done
    used = [r.watts for r in s.readings if a <= r.t <= b] or [max((r for r in s.readings if r.t <= a), key=lambda r: r.t).watts]
    out: dict[str, Any] = {"watts": round(joules / (b - a), 3), "joules": round(joules, 3), "min_w": min(used), "max_w": max(used),
                           "samples": n, "seconds": round(b - a, 6), "late": sum(1 for r in s.readings if r.t > b)}
    if b - a < MIN_INTERVALS * s.interval:
        out["too_short"] = (f"the run's {b - a:.2f} s are shorter than {MIN_INTERVALS} meter intervals ({s.interval:g} s each): "
                            f"its joules rest on {n} reading{'s' if n != 1 else ''}")
    return out


class PowerCommandProbe(ProbeBase):
    def __init__(self, argv: list[str]):
        self.sampler = Sampler(argv)
        self.window: tuple[float, float] | None = None

    def start(self) -> None:
        self.sampler.start()

    def stop(self) -> None:
        self.sampler.stop()

    def run_window(self, t0: float, t1: float) -> None:
        self.window = (t0, t1)

    def write(self, res: TestResult) -> None:
        energy = res.energy_part()
        energy.meter = MeterReading.model_validate(meter_summary(self.sampler, self.window))
        energy.settle()
