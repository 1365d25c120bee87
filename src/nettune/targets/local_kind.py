"""The local target kind: every host is this machine, reached over loopback (local.py; the
sandbox test seam, sandbox.py, stands in for it when a test enables it)."""
from __future__ import annotations

from ..studyfile.models import Study
from .base import Target
from .target_kind import TargetKindBase
from .footprint import Footprint
from .local import LocalHost, LocalTarget
from .sandbox import SandboxTarget, sandbox_dir


class LocalKind(TargetKindBase):
    name = "local"

    def make(self, study: Study) -> Target:
        root = sandbox_dir()  # a test seam (NETTUNE_SANDBOX, tests only): see sandbox.py
        return SandboxTarget(study, root) if root is not None else LocalTarget(study)

    def footprint(self, study: Study) -> Footprint:
        return Footprint(machine=True)

    def server_address(self, study: Study, host: str) -> str:
        return LocalHost(host).address
