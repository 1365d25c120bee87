"""The workload-kind protocol, its run half: how a run uses a kind of workload.

The study-file half (studyfile/workload_kind.py) says which engines select a kind, what
its fields must be, which hosts it uses and its primary metric. This half, one member
per kind under the same name (`WORKLOADS` in run/workloads/__init__.py), says what the
run, the ETA and the dry run do with it: the tool checked on its hosts before anything is
created (`preflight`), the engine whose servers the study's credentials protect, how
many tests a slot holds and how long they take, the commands `--dry-run` shows, how one
slot runs, the failed result of a point that never came into force, and the number
adaptive repeats watch. No caller compares an engine name to tell which kind it has.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Protocol

from ...engines.base import Engine
from ...engines.result import TestResult
from ...plan.points import ResolvedPoint
from ...probes.base import Probe
from ...studyfile.models import Study, workload_kind
from ...studyfile.workload import Workload
from ...targets.base import Target
from ..network_steps import ServerAccess

OVERHEAD_GUESS = 0.6  # seconds per test beyond its own length, for the first ETA only


@dataclass
class SlotRun:
    """What one slot's tests need: its resolved workload, the target, the tool version the
    preflight read, where each result goes the moment it ends, and what it skips."""

    workload: Workload
    target: Target
    tool_version: str
    on_result: Callable[[TestResult], object]
    on_round: Callable[[list[TestResult]], object] | None = None  # a parallel round's results, stored together
    skip: Collection[str] = ()  # pair labels ("a->b") stored by a run that was killed
    access: ServerAccess | None = None  # servers' binding and credentials
    meters: Callable[[], list[Probe]] | None = None  # the [probes] power meter, a fresh probe per test


@dataclass
class PlannedTest:
    """One point of `nettune run --dry-run`: the commands of its (first) test, and what to
    know about them (commands/dry_run.py collects them, cli/dry_run_output.py prints)."""

    index: int
    label: str  # the point's parameters, e.g. "streams=4"
    target: str  # the target settings that vary per point, e.g. "mtu=9000, queues=2" ('' if none)
    server_host: str
    client_host: str
    server_argv: list[str]
    client_argv: list[str]
    client_env: dict[str, str]
    notes: list[str] = field(default_factory=list)  # every note of this point
    own_notes: list[str] = field(default_factory=list)  # those not common to every point
    roles: tuple[str, str] = ("server", "client")  # what the two commands are (a command workload: setup, run)


@dataclass(frozen=True)
class ToolVersion:
    """The version the dry run builds commands for ('' = unknown: version-dependent
    options left out), and a note saying why when it is unknown."""

    version: str
    note: str = ""


class WorkloadRun(Protocol):
    name: str  # the kind's name: studyfile WORKLOAD_KINDS and WORKLOADS share it
    cross_checked: bool  # `--cross-check` re-runs its tool-bound points with the other network engines

    def hosts(self, wl: Workload, test_hosts: list[str]) -> list[str]:
        """The hosts a resolved workload runs its tool on (of the target's test hosts), in
        the order the preflight asks them (the last one is the client whose tool version
        is recorded)."""
        ...

    def server_engine(self, wl: Workload) -> Engine | None:
        """The network engine whose servers the study's credentials protect; None when
        its tests start no server."""
        ...

    def tests_per_slot(self, wl: Workload, test_hosts: list[str]) -> int:
        """Tests one slot stores (1, or one per host pair)."""
        ...

    def slot_seconds(self, wl: Workload, test_hosts: list[str]) -> float:
        """First estimate of one slot's seconds, for the ETA and `--dry-run`."""
        ...

    def test_seconds(self, wl: Workload) -> float:
        """First estimate of one test's seconds (a resumed study's tests left)."""
        ...

    def length_declared(self, written: Workload) -> bool:
        """Is a test's length known before it runs, from the [workload] as written (a
        network test: its duration; a timed command: only a declared `duration`)?"""
        ...

    def preflight(self, engine: str, resolved: list[ResolvedPoint], target: Target) -> str:
        """Before anything is created: the tool of `engine` (its points in `resolved`) is on
        every host that runs it; its version (ToolMissing, NettuneError otherwise)."""
        ...

    def planned(self, study: Study, rp: ResolvedPoint, tool: ToolVersion, notes: list[str]) -> PlannedTest:
        """The commands a point's first test would start, as `--dry-run` shows them
        (`notes`: the point's knob lines, said first)."""
        ...

    def run_slot(self, slot: SlotRun) -> list[TestResult]:
        """Run one slot's tests; every result goes to slot.on_result as it ends. Never
        raises for a failing test (its result says why)."""
        ...

    def failed(self, wl: Workload, tool_version: str, why: str) -> TestResult:
        """The result of a test that could not start (a point whose settings are not in force)."""
        ...

    def value(self, result: TestResult) -> float | None:
        """The primary metric of one test (what adaptive repeats watch); None when it failed."""
        ...

    def result_text(self, result: TestResult) -> str:
        """One ok test's primary value as the run's progress line shows it ("9.41 Gbit/s")."""
        ...


class WorkloadRunBase:
    """Defaults of the WorkloadRun protocol: a kind whose tests start no server, one test
    per slot, on the hosts its study-file half names, never cross-checked."""

    name: str
    cross_checked = False

    def hosts(self, wl: Workload, test_hosts: list[str]) -> list[str]:
        return workload_kind(str(wl.engine)).point_hosts(wl, test_hosts)

    def server_engine(self, wl: Workload) -> Engine | None:
        return None

    def tests_per_slot(self, wl: Workload, test_hosts: list[str]) -> int:
        return 1

    def slot_seconds(self, wl: Workload, test_hosts: list[str]) -> float:
        return self.test_seconds(wl) * self.tests_per_slot(wl, test_hosts)

    def test_seconds(self, wl: Workload) -> float:
        return float(wl.duration) + float(wl.omit) + OVERHEAD_GUESS

    def length_declared(self, written: Workload) -> bool:
        """Is a test's length known before it runs (from the [workload] as written)?"""
        return True
