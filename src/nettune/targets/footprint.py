"""Where a target keeps its hosts' settings, known from the study file alone (each target
kind's `footprint`, targets/base.py TargetKind). The knob journal's gate (knobs/gate.py)
must tell, before anything connects or is created, whether a change a killed run left
pending lives on a host this study uses: this machine (local and lab studies), the lab's
own namespaces, a lab host reached over SSH at an address of the lab's subnet, or a
remote host at an address and port.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Footprint:
    machine: bool = False  # settings on this machine, outside any namespace
    namespaces: set[str] = field(default_factory=set)  # network namespaces of this machine
    subnets: list[Any] = field(default_factory=list)  # hosts reached at these addresses (ip_network)
    remotes: set[tuple[str, int]] = field(default_factory=set)  # (address lower-cased, port)
