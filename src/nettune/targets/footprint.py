"""Where a study's target keeps its hosts' settings, known from the study file alone.

The knob journal's gate (knobs/gate.py) must tell, before anything connects or is
created, whether a change a killed run left pending lives on a host this study uses:
this machine (local and lab studies), the lab's own namespaces, a lab host reached over
SSH at an address of the lab's subnet, or a remote host at an address and port.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Footprint:
    machine: bool = False  # settings on this machine, outside any namespace
    namespaces: set[str] = field(default_factory=set)  # network namespaces of this machine
    subnets: list[Any] = field(default_factory=list)  # hosts reached at these addresses (ip_network)
    remotes: set[tuple[str, int]] = field(default_factory=set)  # (address lower-cased, port)


def footprint(study: Any) -> Footprint:
    spec = study.target
    if spec.kind == "local":
        return Footprint(machine=True)
    if spec.kind == "lab":
        from .labnet import LabLayout, default_subnet

        layout = LabLayout(study.name, list(spec.hosts), ipaddress.ip_network(spec.subnet) if spec.subnet else default_subnet(study.name))
        return Footprint(machine=True, namespaces={layout.ns(h) for h in layout.hosts}, subnets=[layout.subnet])
    return Footprint(remotes={(h.address.lower(), h.port) for h in spec.hosts.values()})
