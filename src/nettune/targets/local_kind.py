"""The local target kind: every host is this machine, reached over loopback (local.py; the
sandbox test seam, sandbox.py, stands in for it when a test enables it)."""
from __future__ import annotations

from typing import Any

from ..studyfile.models import Study
from .base import Host, Target
from .footprint import Footprint
from .local import LocalHost, LocalTarget
from .sandbox import SandboxHost, SandboxTarget, sandbox_dir
from .target_kind import HostReconnector, TargetKindBase


class SandboxReconnector:
    """The sandbox's hosts again (the test seam's directory trees): no connection."""

    def host(self, label: str, reach: dict[str, Any]) -> Host:
        try:
            return SandboxHost.from_reach(label, reach)
        except OSError as e:
            raise ConnectionError(str(e)) from None

    def close(self) -> None:
        pass


class LocalKind(TargetKindBase):
    name = "local"

    def make(self, study: Study) -> Target:
        root = sandbox_dir()  # a test seam (NETTUNE_SANDBOX, tests only): see sandbox.py
        return SandboxTarget(study, root) if root is not None else LocalTarget(study)

    def footprint(self, study: Study) -> Footprint:
        return Footprint(machine=True)

    def server_address(self, study: Study, host: str) -> str:
        return LocalHost(host).address

    def path_class(self, spec: dict[str, Any], settings: dict[str, Any], client: str | None) -> tuple[str | None, bool]:
        return "loopback", True  # the loopback ceiling's own path: judging it with that ceiling is circular

    def both_ends_here(self, spec: dict[str, Any]) -> bool:
        return True

    def knob_os(self, study: Study, host: str) -> tuple[str | None, str | None]:
        """This machine; the default device of interface knobs is the one `make`'s hosts
        have: none for loopback hosts (name one, KIND@DEV), lo for the sandbox's."""
        return "linux", (SandboxHost.interface if sandbox_dir() is not None else None)

    def reaches(self, reach: dict[str, Any]) -> bool:
        return bool(reach.get("sandbox"))  # only the sandbox's hosts record a way back (this machine needs none)

    def reconnector(self) -> HostReconnector:
        return SandboxReconnector()
