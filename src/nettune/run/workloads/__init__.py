"""Workload kinds, their run half: one member per kind, under the name its study-file half
has in studyfile/models.py WORKLOAD_KINDS (the protocol: base.py)."""
from __future__ import annotations

from ...studyfile.models import workload_kind
from ...studyfile.workload import Workload
from ...targets.base import HostSet
from .base import WorkloadRun
from .command_run import CommandRun
from .network_run import NetworkRun

WORKLOADS: dict[str, WorkloadRun] = {"network": NetworkRun(), "command": CommandRun()}


def run_of(engine: str) -> WorkloadRun:
    """The run half of the kind `engine` selects (a stored run's engine, or a workload's)."""
    return WORKLOADS[workload_kind(engine).name]


def workload_run(wl: Workload) -> WorkloadRun:
    return run_of(str(wl.engine))


def workload_hosts(wl: Workload, target: HostSet) -> list[str]:
    """Hosts a workload runs its tool on (preflight checks each): server and client, or
    every host of its pairs; a command workload's one host."""
    return workload_run(wl).hosts(wl, list(target.test_hosts))


__all__ = ["WORKLOADS", "WorkloadRun", "run_of", "workload_hosts", "workload_run"]
