"""How long a study takes, counted the way the run spends it: what `--dry-run` prints,
what the 72-hour guard weighs, and what the progress bar says as tests finish.

    tests        each slot of the run's order (plan/run_order.py), as its workload kind
                 estimates it (duration + omit + overhead; a timed command: its declared
                 `duration`, else unknown until it has run once), plus `pause` between tests
    reboots      each change of a boot-time value (cmdline:KEY), per host it is set on, at
                 that host's reboot_timeout (the most the run waits for it), and the one
                 that puts the original back after the last test
    VM restarts  each change of a VM-restart value (pve_queues, libvirt_queues), per VM, at
                 the target's reconnect_timeout (the most the run waits for the guest)
    idle power   one window of `[probes] idle_power` seconds per point
Adaptive repeats may add rounds up to max_runs: `longest` counts them.

As tests finish, RunClock re-estimates what is left from what they took: a point measured
already by its own mean, any other by its estimate scaled by how far the measured tests
were from theirs (a timed command of unknown length by the mean of those measured). Once
a reboot (or a VM restart) is behind, those ahead count at the longest measured so far
(the settings' time of the slot it came before), not at their timeout.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..plan.points import ResolvedPoint, Slot
from ..plan.run_order import REBOOT, costly_changes, run_order
from ..studyfile.models import Study
from ..targets.base import Target
from .workloads import workload_run
from .workloads.base import OVERHEAD_GUESS


@dataclass
class PlanTime:
    tests: float = 0.0  # seconds of the tests the run makes up front (warm-up + min counted), pauses included
    adaptive: float = 0.0  # more seconds if adaptive repeats run every point to max_runs
    reboots: list[float] = field(default_factory=list)  # one entry per host reboot: its seconds
    restarts: list[float] = field(default_factory=list)  # one entry per VM restart
    idle: list[float] = field(default_factory=list)  # one entry per idle-power window
    unknown: list[str] = field(default_factory=list)  # what is not counted, and why

    @property
    def expected(self) -> float:
        return self.tests + sum(self.reboots) + sum(self.restarts) + sum(self.idle)

    @property
    def longest(self) -> float:
        return self.expected + self.adaptive


def slot_estimate(study: Study, rp: ResolvedPoint, test_hosts: list[str]) -> float:
    """First estimate of one slot of a point: its kind's, or only the overhead when the
    length of its tests is unknown before they run (a timed command without duration)."""
    kind = workload_run(rp.workload)
    if not kind.length_declared(study.workload):
        return OVERHEAD_GUESS * kind.tests_per_slot(rp.workload, test_hosts)
    return kind.slot_seconds(rp.workload, test_hosts)


def plan_time(study: Study, resolved: list[ResolvedPoint], target: Target | None = None,
              left: list[tuple[Slot, int]] | None = None, slots: list[Slot] | None = None) -> PlanTime:
    """The estimate of the whole plan, or (left) of a resumed study's slots still to run,
    with how many tests each still has. `slots`: the run's order, when the caller has it."""
    rep = study.repeat
    order = slots if slots is not None else run_order(study, resolved)
    hosts = {rp.point.index: list(target.test_hosts if target is not None else rp.target.test_hosts) for rp in resolved}
    by = {rp.point.index: rp for rp in resolved}
    est = {i: slot_estimate(study, rp, hosts[i]) for i, rp in by.items()}
    out = PlanTime()
    if left is not None:
        per_test = {i: est[i] / max(1, workload_run(by[i].workload).tests_per_slot(by[i].workload, hosts[i])) for i in by}
        out.tests = sum(per_test[s.point.index] * n for s, n in left) + rep.pause * max(0, len(left) - 1)
        order = [s for s, _ in left]
    else:
        out.tests = sum(est[s.point.index] for s in order) + rep.pause * max(0, len(order) - 1)
        if rep.adaptive:
            more = rep.max_counted - rep.min_counted
            out.adaptive = more * sum(est.values()) + rep.pause * more * len(est)
    unknown = sorted({i for i in by if not workload_run(by[i].workload).length_declared(study.workload)})
    if unknown:
        out.unknown.append("the timed command's length is unknown until its first run (only the overhead is counted; "
                           "[workload] duration = SECONDS counts it, and the progress bar counts the measured runs)")
    out.reboots, out.restarts = disruption_seconds(study, list(by.values()), order)
    probes = study.probes
    if probes is not None and probes.idle_power is not None:
        points = {s.point.index for s in order if not s.warmup}
        out.idle = [float(probes.idle_power)] * len(points)
    return out


def disruption_seconds(study: Study, resolved: list[ResolvedPoint], order: list[Slot]) -> tuple[list[float], list[float]]:
    """(reboots, VM restarts) along `order`, each at the seconds the run waits for it at most."""
    reboots: list[float] = []
    restarts: list[float] = []
    for what, _at, seconds in disruptions(study, resolved, order):
        (reboots if what == REBOOT else restarts).append(seconds)
    return reboots, restarts


def disruptions(study: Study, resolved: list[ResolvedPoint], order: list[Slot]) -> list[tuple[str, int, float]]:
    """(what, position in `order`, seconds) of every host reboot and VM restart along it: a
    boot-time change once per host it is set on, a VM-restart change once per VM."""
    by = {rp.point.index: rp for rp in resolved}
    spec = study.target
    out: list[tuple[str, int, float]] = []
    for ch in costly_changes(order, list(by.values())):
        if ch.what == REBOOT:
            hosts = sorted({h for _k, _v, hs in ch.values for h in hs} | {h for k in ch.changed for h in _hosts_of(resolved, k)})
            out += [(REBOOT, ch.at, spec.disruption_seconds(REBOOT, h)) for h in hosts or list(spec.hosts)]
        else:
            out += [(ch.what, ch.at, spec.disruption_seconds(ch.what, "")) for _k in ch.changed]
    return out


def _hosts_of(resolved: list[ResolvedPoint], key: str) -> set[str]:
    """The hosts [knobs.hosts] gives a knob at any point."""
    out: set[str] = set()
    for rp in resolved:
        out |= set(((rp.extra.get("knobs") or {}).get("hosts") or {}).get(key) or [])
    return out


class RunClock:
    """What is left of a run, re-estimated as its tests finish (see the module doc)."""

    def __init__(self, study: Study, resolved: list[ResolvedPoint], target: Target, left: list[tuple[Slot, int]], per_slot: dict[int, int]):
        self.study, self.per_slot = study, per_slot
        by = {rp.point.index: rp for rp in resolved}
        hosts = list(target.test_hosts)
        self.est = {i: slot_estimate(study, rp, hosts) for i, rp in by.items()}
        self.order = [s for s, _ in left]
        self.at = 0  # slots of `order` done
        self.remaining: dict[int, int] = {}
        for s in self.order:
            self.remaining[s.point.index] = self.remaining.get(s.point.index, 0) + 1
        self.measured: dict[int, list[float]] = {}
        self.planned_sum = 0.0
        self.measured_sum = 0.0
        self.costly = disruptions(study, resolved, self.order)
        # what a reboot / VM restart took, the longest of those behind (with their settings'
        # time): those ahead count at it, not at their timeout, once one is behind
        self.took: dict[str, float] = {}
        probes = study.probes
        self.idle_s = float(probes.idle_power) if probes is not None and probes.idle_power is not None else 0.0
        self.idle_points = {s.point.index for s in self.order if not s.warmup} if self.idle_s else set()

    def slot_done(self, slot: Slot, seconds: float, setup: float = 0.0) -> None:
        """A slot of the run's order ended after `seconds` of tests; `setup`: the seconds
        its settings took before them (a reboot or VM restart among them)."""
        i = slot.point.index
        if self.at < len(self.order) and self.order[self.at] is slot:
            for what, at, bound in self.costly:  # a reboot or restart made before this slot: learn how long it takes
                if at == self.at and setup > 0:
                    self.took[what] = min(bound, max(self.took.get(what, 0.0), setup))
            self.at += 1
            self.remaining[i] = max(0, self.remaining.get(i, 0) - 1)
        self.measured.setdefault(i, []).append(seconds)
        self.planned_sum += self.est[i]
        self.measured_sum += seconds
        if not slot.warmup:
            self.idle_points.discard(i)

    def seconds_left(self) -> float:
        """Seconds still to go: the tests (see the module doc), pauses, the reboots and VM
        restarts not reached yet, the idle-power windows not taken yet."""
        scale = self.measured_sum / self.planned_sum if self.planned_sum > 0 else 1.0
        tests = 0.0
        for i, n in self.remaining.items():
            if n:
                have = self.measured.get(i)
                tests += n * (sum(have) / len(have) if have else self.est[i] * scale)
        left = len(self.order) - self.at
        return tests + self.study.repeat.pause * max(0, left - 1) + self.disruptions_left() + self.idle_s * len(self.idle_points)

    def disruptions_left(self) -> float:
        """Seconds of the reboots and VM restarts still ahead."""
        return sum(min(sec, self.took.get(w, sec)) for w, at, sec in self.costly if at >= self.at)

    def tests_left(self) -> int:
        """Tests of the run's order not made yet (adaptive rounds are counted as they come)."""
        return sum(n * self.per_slot.get(i, 1) for i, n in self.remaining.items())
