"""Targets: where tests run. One file per kind; this registry maps `[target] kind` to it."""
from __future__ import annotations

from typing import Any, Callable

from .base import CommandResult, Host, Proc, Target


def _lab(study: Any) -> Target:
    from .lab.lab import LabTarget

    return LabTarget(study)


def _local(study: Any) -> Target:
    from .local import LocalTarget
    from .sandbox import SandboxTarget, sandbox_dir

    root = sandbox_dir()  # a test seam (NETTUNE_SANDBOX, tests only): see sandbox.py
    return SandboxTarget(study, root) if root is not None else LocalTarget(study)


def _ssh(study: Any) -> Target:
    from .ssh.ssh import SshTarget

    return SshTarget(study)


def _kubernetes(study: Any) -> Target:
    from .kubernetes.kubernetes import KubeTarget

    return KubeTarget(study)


def _vmlab(study: Any) -> Target:
    from .vmlab.vm_target import VmlabTarget

    return VmlabTarget(study)


TARGETS: dict[str, Callable[[Any], Target]] = {"lab": _lab, "local": _local, "ssh": _ssh, "kubernetes": _kubernetes, "vmlab": _vmlab}


def make_target(study: Any) -> Target:
    return TARGETS[study.target.kind](study)


__all__ = ["CommandResult", "Host", "Proc", "Target", "TARGETS", "make_target"]
