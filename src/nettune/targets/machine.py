"""This machine as hosts, for the layers that change settings (knobs) without a target.

A host-wide value of a lab study lives on this machine, not in a host's namespace; a
journal record names a namespace after the run that wrote it has gone. These functions
(and Target.scratch, targets/scratch.py, for a knob checked before the lab exists) give
the knobs layer hosts for those cases, so it never builds a target's host class itself.
"""
from __future__ import annotations

from .base import Host
from .lab.lab_host import LabHost
from .local import LocalHost


def machine_host(name: str = "machine") -> Host:
    """This machine, outside any network namespace."""
    return LocalHost(name)


def namespace_host(name: str, netns: str, interface: str = "") -> Host:
    """A named network namespace of this machine (one nettune created)."""
    return LabHost(name, netns, "", interface)
