"""What a study's target is, known from the study file alone (nothing connects or is created).

footprint(): where the target keeps its hosts' settings. The knob journal's gate
(knobs/gate.py) must tell, before anything connects or is created, whether a change a
killed run left pending lives on a host this study uses: this machine (local and lab
studies), the lab's own namespaces, a lab host reached over SSH at an address of the
lab's subnet, or a remote host at an address and port.

server_address(): the address a host's server gets in a run, for `nettune run --dry-run`.

A new target kind adds its answers here (the only place outside its own files that
knows target kinds; the rest asks the spec: on_this_machine, queues, test_hosts).
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


def footprint(study: Any) -> Footprint:
    spec = study.target
    if spec.kind == "local":
        return Footprint(machine=True)
    if spec.kind == "lab":
        from .lab.labnet import study_layout  # noqa: PLC0415 - pyroute2, only for the lab

        layout = study_layout(study)
        return Footprint(machine=True, namespaces={layout.ns(h) for h in layout.hosts}, subnets=[layout.subnet])
    if spec.kind == "kubernetes":  # node knobs, journaled by node name (kubernetes_host.reach)
        return Footprint(remotes={(n.lower(), 0) for n in spec.nodes})
    return Footprint(remotes={(h.address.lower(), h.port) for h in spec.hosts.values()})


LAB_PORT = 5201  # a lab namespace is nettune's own: its servers always listen here (LabHost.free_port)


def planned_port(study: Any) -> int | None:
    """The port a run of `study` gives a server whose workload sets none: the lab's fixed
    one; None where the run asks the host for a free port when the test starts."""
    return LAB_PORT if study.target.kind == "lab" else None


def server_address(study: Any, host: str) -> str:
    """The address `host`'s server has in a run of `study`: the lab's layout, the ssh
    host's address, the local host's loopback address."""
    spec = study.target
    if spec.kind == "lab":
        from .lab.labnet import study_layout  # noqa: PLC0415 - pyroute2, only for the lab

        return study_layout(study).address(host)
    if spec.kind == "ssh":
        return str(spec.hosts[host].address)
    if spec.kind == "kubernetes":  # known once the pod (or its Service) exists
        return f"<{'ClusterIP of' if spec.via == 'service' else 'IP of pod'} {host}>"
    from .local import LocalHost  # noqa: PLC0415

    return LocalHost(host).address
