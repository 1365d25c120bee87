"""The target-kind protocol: what a kind of target answers from the study file alone,
before (or without) its Target (base.py), so that no file outside a target's own asks
which kind a study has. The registry (targets/__init__.py TARGETS) maps `[target] kind`
to a member: lab/lab_kind.py, local_kind.py, ssh/ssh_kind.py, kubernetes/kubernetes_kind.py.
"""
from __future__ import annotations

import os
import shutil
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..studyfile.models import Study
from .base import Host, Target
from .footprint import Footprint

TOOLS = ("iperf3", "iperf")  # what `nettune hosts` looks for on each test host


@dataclass
class HostCheck:
    """One host as `nettune hosts` shows it: how nettune reaches it, and (after connecting)
    whether it answers and has its tools."""

    name: str
    role: str
    address: str
    port: int | None
    user: str
    key: str
    jump: str
    known_hosts: str
    sudo: bool
    source: str
    ok: bool = True
    reason: str = ""
    tools: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # inventory settings not honoured
    ran: list[str] = field(default_factory=list)  # ssh_config Match exec commands run to resolve it
    unresolved: list[str] = field(default_factory=list)  # what was not run (a dry run): values guessed
    connect_timeout: float | None = None
    version: str = ""  # what it runs, once connected (a Kubernetes API server's version)


@dataclass
class CeilingPath:
    """A path `nettune ceiling` measures for a study of this kind (beyond loopbacks): its
    target (created for it, closed after), server and client, and its path class."""

    target: Target
    server: Host
    client: Host
    path: str  # the class analysis/ceilings.py matches points against
    label: str  # how the output names it


class HostReconnector(Protocol):
    """Reaches one kind's hosts again from the journal's records of them (Host.reach()),
    for `nettune restore` in a new process: one per restore, closed after it."""

    def host(self, label: str, reach: dict[str, Any]) -> Host:
        """The host `reach` describes, connected. ValueError/KeyError: the record is
        unusable; ConnectionError: refused key, unreachable, sudo broken."""
        ...

    def close(self) -> None: ...


class TargetKind(Protocol):
    """What a kind of target answers from the study file alone: nothing connects and
    nothing is created."""

    name: str  # the `[target] kind` value

    def make(self, study: Study) -> Target:
        """The study's Target (raises NotRoot etc. before anything is created)."""
        ...

    def footprint(self, study: Study) -> Footprint:
        """Where the target keeps its hosts' settings (the knob journal's gate)."""
        ...

    def server_address(self, study: Study, host: str) -> str:
        """The address `host`'s server gets in a run (for `nettune run --dry-run`)."""
        ...

    def planned_port(self, study: Study) -> int | None:
        """The port a run gives a server whose workload sets none, if known before the run
        (the dry run shows it); None: the run asks the host for a free port at each test."""
        ...

    def ceiling_path(self, study: Study) -> AbstractContextManager[CeilingPath] | None:
        """A path of this kind's own that `nettune ceiling STUDY` measures (the lab's
        unshaped link), created on entering and removed on leaving; None: none (its hosts'
        loopbacks are measured)."""
        ...

    def path_class(self, spec: dict[str, Any], settings: dict[str, Any], client: str | None) -> tuple[str | None, bool]:
        """From a stored study (its file as JSON) and a run's settings in force: (the class
        of the run's path, which ceilings of that class judge; whether it is the ceiling's
        own path, unchanged by shaping or knobs: then judging it is circular). (None,
        False): a path no ceiling judges."""
        ...

    def both_ends_here(self, spec: dict[str, Any]) -> bool:
        """Whether every host of a stored study of this kind runs on one machine (a busy
        machine then measured itself, not the path)."""
        ...

    def describe_hosts(self, study: Study) -> list[HostCheck]:
        """How each host is reached (`nettune hosts`, nothing connected)."""
        ...

    def check_hosts(self, study: Study, rows: list[HostCheck]) -> None:
        """Connect to each described host (one at a time) and look for its tools; fills
        each row's ok, reason and tools."""
        ...

    def left_out(self, study: Study) -> dict[str, str]:
        """Hosts the target's sources name but does not reach (an inventory's
        ansible_connection=local hosts...), and why."""
        ...

    def resolution_notes(self, study: Study) -> list[str]:
        """What reading the study's hosts ran or did not run, one line each (said by
        `nettune run` before anything starts, and by its dry run)."""
        ...

    def inventory_read(self, study: Study) -> str | None:
        """How the hosts' inventory was read (ansible-inventory, or nettune's own reader
        with nothing run), None without an inventory."""
        ...

    def knob_os(self, study: Study, host: str) -> tuple[str | None, str | None]:
        """(the host's OS if the study alone tells it, else None; the default device of its
        interface knobs, else None), for the dry run's knob commands."""
        ...

    def clear_dead(self, study: Study, owners: set[str]) -> list[str]:
        """Before a run: remove what killed runs of this study (their owner tokens) left on
        this machine; what was removed, for the log."""
        ...

    def reaches(self, reach: dict[str, Any]) -> bool:
        """Is this journal record of a host (Host.reach()) one of this kind's hosts?"""
        ...

    def reconnector(self) -> HostReconnector:
        """What reaches this kind's hosts again for `nettune restore`."""
        ...


class TargetKindBase:
    """Defaults of the TargetKind protocol: hosts that are this machine (their tools are
    this machine's, Linux, nothing of theirs survives a killed run)."""

    name: str

    def make(self, study: Study) -> Target:
        raise NotImplementedError(f"target kind {self.name!r} does not say how to make its target")

    def where(self, study: Study, host: str) -> str:
        """Where a host of this machine lives, as `nettune hosts` says it."""
        return "this machine"

    def planned_port(self, study: Study) -> int | None:
        return None

    def ceiling_path(self, study: Study) -> AbstractContextManager[CeilingPath] | None:
        return None

    def path_class(self, spec: dict[str, Any], settings: dict[str, Any], client: str | None) -> tuple[str | None, bool]:
        return None, False  # remote paths: their NICs carry them, no ceiling of this machine's predicts them

    def both_ends_here(self, spec: dict[str, Any]) -> bool:
        return False

    def describe_hosts(self, study: Study) -> list[HostCheck]:
        user = str(os.environ.get("USER") or "root")
        return [HostCheck(h, "test", self.where(study, h), None, user, "-", "-", "-", False, f"target kind {self.name}")
                for h in study.target.test_hosts]

    def check_hosts(self, study: Study, rows: list[HostCheck]) -> None:
        for r in rows:  # this machine's binaries
            r.tools = {tool: shutil.which(tool) for tool in TOOLS}
            missing = [k for k, v in r.tools.items() if not v]
            r.ok, r.reason = not missing, "missing: " + ", ".join(missing) if missing else ""

    def left_out(self, study: Study) -> dict[str, str]:
        return {}

    def resolution_notes(self, study: Study) -> list[str]:
        return []

    def inventory_read(self, study: Study) -> str | None:
        return None

    def knob_os(self, study: Study, host: str) -> tuple[str | None, str | None]:
        return "linux", None

    def clear_dead(self, study: Study, owners: set[str]) -> list[str]:
        return []

    def reaches(self, reach: dict[str, Any]) -> bool:
        return False  # hosts of this machine: the journal records no way to reach them

    def reconnector(self) -> HostReconnector:
        raise NotImplementedError(f"target kind {self.name!r} records no way to reach its hosts again")
