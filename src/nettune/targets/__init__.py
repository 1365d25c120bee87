"""Targets: where tests run. One member per kind; this registry maps `[target] kind` to it
(targets/base.py TargetKind: what a kind answers from the study file alone, and its Target)."""
from __future__ import annotations

from ..errors import NettuneError
from ..studyfile.models import Study
from .base import CommandResult, Host, Proc, Target
from .target_kind import HostCheck, TargetKind
from .footprint import Footprint
from .kubernetes.kubernetes_kind import KubernetesKind
from .lab.lab_kind import LabKind
from .local_kind import LocalKind
from .ssh.ssh_kind import SshKind
from .vmlab.vmlab_kind import VmlabKind

TARGETS: dict[str, TargetKind] = {"lab": LabKind(), "local": LocalKind(), "ssh": SshKind(), "kubernetes": KubernetesKind(),
                                 "vmlab": VmlabKind()}


def target_kind(study: Study) -> TargetKind:
    """The member of the study's `[target] kind`."""
    return TARGETS[study.target.kind]


def kind_named(name: str | None) -> TargetKind | None:
    """The member of a stored study's target kind (None: a kind this nettune does not know,
    e.g. an import's)."""
    return TARGETS.get(name or "")


def make_target(study: Study) -> Target:
    return target_kind(study).make(study)


def footprint(study: Study) -> Footprint:
    """Where the study's target keeps its hosts' settings (the knob journal's gate)."""
    return target_kind(study).footprint(study)


def server_address(study: Study, host: str) -> str:
    """The address `host`'s server gets in a run of `study` (for `--dry-run`)."""
    return target_kind(study).server_address(study, host)


def planned_port(study: Study) -> int | None:
    """The port a run of `study` gives a server whose workload sets none, or None where the
    run asks the host for a free one at each test (for `--dry-run`)."""
    return target_kind(study).planned_port(study)


def require_kind(study: Study, kind: str, file: str, what: str) -> None:
    """A command that serves one kind of target (`nettune lab up`, `nettune k8s manifests`)
    refuses a study of another kind in one line."""
    if study.target.kind != kind:
        raise NettuneError(f"{file}: [target] kind is {study.target.kind!r}; {what} needs kind = {kind!r}")


__all__ = ["CommandResult", "Footprint", "Host", "HostCheck", "Proc", "Target", "TargetKind", "TARGETS", "footprint", "kind_named", "make_target",
           "planned_port", "require_kind", "server_address", "target_kind"]
