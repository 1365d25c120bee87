"""The workload-kind protocol, its study-file half: what the study file, the plan, analysis
and report ask of a kind of workload.

A workload kind is what a `[workload]` section runs: traffic between hosts (the network
kind: iperf3, iperf2) or one timed command on one host (the command kind), and later
others (a VM lab, a search). Its `engines` are the `engine =` values that select it. It
says which of the section's fields it needs or refuses (`check`), which hosts a point
uses and where the file names them, and its primary metric: a measurement's field name
(`total_bps`, `wall_s`: the names the store and analysis give measurements) and which
way is better. How a run uses the kind (preflight, the ETA, the dry run's commands, one
slot) is its run half, `run/workloads/` (the same name in `WORKLOADS`).

Members subclass WorkloadKindBase and are listed in studyfile/models.py `WORKLOAD_KINDS`;
no caller compares an engine name to find out which kind it has.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .expr import has_placeholder
from .workload import Workload


@dataclass(frozen=True)
class PrimaryMetric:
    """The number a kind's studies are judged by when no --metric is given."""

    field: str  # the measurement's field name (store, exports, analysis): "total_bps", "wall_s"
    unit: str  # as a reader reads it: "Gbit/s", "seconds"
    higher_is_better: bool


@dataclass(frozen=True)
class HostField:
    """A host a resolved workload names, and the field that names it ("workload.server")."""

    field: str
    name: str


class WorkloadKind(Protocol):
    name: str  # "network", "command": WORKLOAD_KINDS' key and run/workloads' member
    engines: tuple[str, ...]  # the `engine =` values that select this kind
    primary: PrimaryMetric
    fixed_length: bool  # its tests last [workload] duration seconds (a halving search runs shorter ones first)

    def check(self, wl: Workload) -> str | None:
        """Why the section's fields do not make a workload of this kind (one line), else
        None; asked of the file as written and of every resolved point."""
        ...

    def check_written(self, wl: Workload, test_hosts: list[str]) -> str | None:
        """What only the file as written can show (a placeholder inside quotes), and hosts
        it names literally that are not test hosts; templates are checked per point."""
        ...

    def host_fields(self, wl: Workload) -> list[HostField]:
        """The hosts a resolved workload names, each with its field (every one must be a
        test host at every point)."""
        ...

    def hosts_problem(self, wl: Workload, test_hosts: list[str]) -> tuple[str, str] | None:
        """(field, why) when the named hosts exist but give no test (pairs = "mesh" over
        one host); None when they do."""
        ...

    def follows_sweep(self, wl: Workload) -> bool:
        """Does the sweep choose the hosts (a template in a field that names them)?"""
        ...

    def point_hosts(self, wl: Workload, test_hosts: list[str]) -> list[str]:
        """The hosts a resolved point runs its tests on (its knobs default to these when the
        sweep chooses them)."""
        ...


class WorkloadKindBase:
    """Defaults of the WorkloadKind protocol: a kind that names no hosts and whose fields
    need nothing beyond their own types."""

    name: str
    engines: tuple[str, ...]
    primary: PrimaryMetric
    fixed_length = True

    def check(self, wl: Workload) -> str | None:
        return None

    def check_written(self, wl: Workload, test_hosts: list[str]) -> str | None:
        for h in self.host_fields(wl):
            if "{" not in h.name and h.name not in test_hosts:  # a template ("{os}-a") is checked at every point
                return f"{h.field} = {h.name!r} is not a target host that runs tests ({', '.join(test_hosts)})"
        return None

    def host_fields(self, wl: Workload) -> list[HostField]:
        return []

    def hosts_problem(self, wl: Workload, test_hosts: list[str]) -> tuple[str, str] | None:
        return None

    def follows_sweep(self, wl: Workload) -> bool:
        return has_placeholder([h.name for h in self.host_fields(wl)])

    def point_hosts(self, wl: Workload, test_hosts: list[str]) -> list[str]:
        return list(dict.fromkeys(h.name for h in self.host_fields(wl)))
