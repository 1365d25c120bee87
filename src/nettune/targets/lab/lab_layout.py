"""The names and addresses of one study's lab, computed from the study alone (creating
nothing, so `nettune run --dry-run` shows what the run will use).

  namespace  nettune-<study>-<host>
  bridge     nt<id>br        (id = 5 hex chars of sha1(study))
  veth       nt<id>r<i> on the host's switch, nt<id>n<i> inside the host's namespace
With nodes (pods on Kubernetes nodes, rehearsed): node j is a namespace
nettune-<study>.<node> holding the node's bridge nt-nodebr (the hosts' switch), a VXLAN
device nt-vxlan on that bridge and its underlay NIC nt-underlay, whose peer nt<id>u<j>
is on the root bridge nt<id>br, which is then the underlay switch.
Addresses come from 198.18.0.0/15 (RFC 2544 benchmarking): a /24 per study, the bridge
gets .1, node j's underlay address .(2+j), host i .(10+i).
"""
from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass, field
from typing import Any

from ...errors import NettuneError

BENCH_NET = ipaddress.ip_network("198.18.0.0/15")
NODE_BRIDGE = "nt-nodebr"
NODE_VXLAN = "nt-vxlan"
NODE_UNDERLAY = "nt-underlay"
VXLAN_PORT = 4789


def short_id(study: str) -> str:
    return hashlib.sha1(study.encode()).hexdigest()[:5]


def default_subnet(study: str) -> ipaddress.IPv4Network:
    # 512 /24s in 198.18.0.0/15; skip the .0 network of each half for readability
    n = int(hashlib.sha1(study.encode()).hexdigest()[5:11], 16) % 510 + 1
    base = int(BENCH_NET.network_address) + (n + (1 if n >= 256 else 0)) * 256
    return ipaddress.ip_network(f"{ipaddress.ip_address(base)}/24")


@dataclass
class LabLayout:
    study: str
    hosts: list[str]
    subnet: ipaddress.IPv4Network
    nodes: dict[str, list[str]] | None = None
    sid: str = field(init=False)

    def __post_init__(self) -> None:
        self.sid = short_id(self.study)
        if not self.subnet.subnet_of(BENCH_NET):  # type: ignore[arg-type]
            raise NettuneError(f"lab subnet {self.subnet} is outside 198.18.0.0/15 (the benchmarking range); pick one inside it")

    @property
    def bridge(self) -> str:
        return f"nt{self.sid}br"

    def ns(self, host: str) -> str:
        return f"nettune-{self.study}-{host}"

    def root_if(self, host: str) -> str:
        return f"nt{self.sid}r{self.hosts.index(host)}"

    def ns_if(self, host: str) -> str:
        return f"nt{self.sid}n{self.hosts.index(host)}"

    def address(self, host: str) -> str:
        return str(self.subnet.network_address + 10 + self.hosts.index(host))

    def mac(self, host: str, side: str) -> str:
        """Locally administered unicast MAC derived from study, host and side."""
        h = hashlib.sha1(f"{self.study}/{host}/{side}".encode()).digest()
        return "02:" + ":".join(f"{b:02x}" for b in h[:5])

    @property
    def bridge_address(self) -> str:
        return str(self.subnet.network_address + 1)

    # nodes
    def node_names(self) -> list[str]:
        return list(self.nodes or {})

    def node_ns(self, node: str) -> str:
        return f"nettune-{self.study}.{node}"  # '.' is not allowed in host names: never a host's

    def node_of(self, host: str) -> str | None:
        for node, hosts in (self.nodes or {}).items():
            if host in hosts:
                return node
        return None

    def switch_ns(self, host: str) -> str | None:
        """The namespace of the host's switch end (None: this machine's root namespace)."""
        node = self.node_of(host)
        return self.node_ns(node) if node is not None else None

    def underlay_if(self, node: str) -> str:
        return f"nt{self.sid}u{self.node_names().index(node)}"

    def node_address(self, node: str) -> str:
        return str(self.subnet.network_address + 2 + self.node_names().index(node))

    @property
    def vni(self) -> int:
        return int(self.sid, 16) % 0xFFFFFF + 1

    def namespaces(self) -> list[str]:
        """Every namespace of this lab: hosts, then nodes."""
        return [self.ns(h) for h in self.hosts] + [self.node_ns(n) for n in self.node_names()]

    def root_links(self) -> list[str]:
        """Links of this lab in the root namespace."""
        if self.nodes:
            return [self.bridge] + [self.underlay_if(n) for n in self.node_names()]
        return [self.bridge] + [self.root_if(h) for h in self.hosts]


def study_layout(study: Any) -> LabLayout:
    """The lab a study gets (names, addresses)."""
    spec = study.target
    subnet = ipaddress.ip_network(spec.subnet) if spec.subnet else default_subnet(study.name)
    return LabLayout(study.name, list(spec.hosts), subnet, dict(spec.nodes) if spec.nodes else None)  # type: ignore[arg-type]
