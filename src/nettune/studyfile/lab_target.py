"""`[target] kind = "lab"`: hosts are network namespaces on this machine (needs root).

Plain: every host on one bridge. `link` shapes the hosts' links (studyfile/lab_link.py).
`nodes` groups hosts into nodes, like pods on Kubernetes nodes: each node has its own
bridge, and nodes are joined by a VXLAN overlay over an underlay (its own shaped link,
`underlay`), so same-node and cross-node traffic differ here as they do on a cluster.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .lab_link import LinkSpec, UnderlaySpec
from .field_types import MAX_LAB_HOSTS, Mtu, Queues, Strict, Template, ThisMachine, bench_subnet

MAX_NODES = 8  # node j's underlay address is .(2+j) of the lab's /24, below the hosts' .10
VXLAN_OVERHEAD = 50  # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8


def _name_ok(name: str, most: int) -> bool:
    return name.replace("-", "").replace("_", "").isalnum() and len(name) <= most


class LabTargetSpec(Strict, ThisMachine):
    """Built-in lab: one network namespace per host on a Linux bridge (needs root)."""

    kind: Literal["lab"]
    hosts: list[str] = Field(default=["server", "client"], min_length=1, max_length=MAX_LAB_HOSTS, description="Host names; each becomes a namespace nettune-<study>-<host>. With nodes: default all the nodes' hosts.")
    mtu: Mtu | Template = Field(default=1500, description="MTU of every host's interface (68..65535); the bridge, the lab's switch, passes any frame size. With nodes: default and at most the overlay's (underlay mtu - 50).")
    queues: Queues | Template = Field(default=1, description="tx/rx queues of each host's veth; changing it re-creates the veth.")
    subnet: str | None = Field(default=None, description="A /24 inside 198.18.0.0/15; default derived from the study name.")
    link: LinkSpec | None = Field(default=None, description="[target.link]: rate, delay (round trip), jitter, loss of every host's link (tc tbf + netem); [target.link.HOST] for one host. Sweepable.")
    nodes: dict[str, list[str]] | None = Field(default=None, description='Hosts grouped into nodes, e.g. { n1 = ["a", "b"], n2 = ["c", "d"] }: a bridge per node, nodes joined by VXLAN over the underlay.')
    placement: Literal["same-node", "cross-node"] | Template | None = Field(default=None, description='With nodes: put the workload\'s client on the server\'s node ("same-node") or on another node ("cross-node"), moving its veth between points; sweepable: placement = "{placement}". Default: the hosts stay where nodes puts them.')
    underlay: UnderlaySpec | None = Field(default=None, description="[target.underlay] (with nodes): mtu, rate, delay, jitter, loss of each node's link to the underlay.")

    @field_validator("subnet")
    @classmethod
    def _subnet(cls, v: str | None) -> str | None:
        return bench_subnet(v)

    @model_validator(mode="before")
    @classmethod
    def _node_defaults(cls, data: Any) -> Any:
        # with nodes, hosts default to the nodes' hosts and the MTU to the overlay's
        if not isinstance(data, dict) or not isinstance(data.get("nodes"), dict):
            return data
        data = dict(data)
        if "hosts" not in data and all(isinstance(v, list) for v in data["nodes"].values()):
            data["hosts"] = [h for hs in data["nodes"].values() for h in hs]
        under = data.get("underlay") if isinstance(data.get("underlay"), dict) else {}
        under_mtu = under.get("mtu", 1500)
        if "mtu" not in data and isinstance(under_mtu, int) and not isinstance(under_mtu, bool):
            data["mtu"] = under_mtu - VXLAN_OVERHEAD
        return data

    @model_validator(mode="after")
    def _check(self) -> "LabTargetSpec":
        if self.nodes is not None:
            self._check_nodes(self.nodes)  # first: a host on two nodes is that, not a duplicate host
        if len(set(self.hosts)) != len(self.hosts):
            raise ValueError("host names must be unique")
        for h in self.hosts:
            if not _name_ok(h, 32):
                raise ValueError(f"host name {h!r}: use letters, digits, '-' or '_' (at most 32)")
        if self.link is not None:
            for h in self.link.hosts:
                if h not in self.hosts:
                    raise ValueError(f"link.{h}: {h!r} is not a host of this lab ({', '.join(self.hosts)}); [target.link.HOST] names a host")
        if self.nodes is None:
            if self.placement is not None:
                raise ValueError("placement needs nodes: add nodes = { n1 = [...], n2 = [...] } or remove placement")
            if self.underlay is not None:
                raise ValueError("underlay needs nodes: add nodes = { n1 = [...], n2 = [...] } or remove [target.underlay]")
            return self
        if self.placement == "cross-node" and len(self.nodes) < 2:
            raise ValueError('placement = "cross-node" needs two nodes or more; add a node (it may have no hosts: n2 = [])')
        under = self.underlay or UnderlaySpec()
        if isinstance(self.mtu, int) and isinstance(under.mtu, int) and self.mtu > under.mtu - VXLAN_OVERHEAD:
            raise ValueError(f"mtu {self.mtu} is above the overlay's {under.mtu - VXLAN_OVERHEAD} (underlay mtu {under.mtu} - 50 for VXLAN); lower mtu or raise [target.underlay] mtu")
        return self

    def _check_nodes(self, nodes: dict[str, list[str]]) -> None:
        if not 1 <= len(nodes) <= MAX_NODES:
            raise ValueError(f"nodes: give 1 to {MAX_NODES} nodes, got {len(nodes)}")
        placed: dict[str, str] = {}
        for node, hosts in nodes.items():
            if not _name_ok(node, 12):
                raise ValueError(f"nodes: node name {node!r}: use letters, digits, '-' or '_' (at most 12)")
            for h in hosts:
                if h in placed:
                    raise ValueError(f"nodes: host {h!r} is on two nodes ({placed[h]} and {node}); put it on one")
                placed[h] = node
        missing = [h for h in self.hosts if h not in placed]
        extra = [h for h in placed if h not in self.hosts]
        if missing or extra:
            raise ValueError(f"nodes must place exactly the hosts: {'not placed: ' + ', '.join(missing) if missing else 'not hosts: ' + ', '.join(extra)}")

    def node_of(self, host: str) -> str | None:
        """The node a host is on (None: a lab without nodes)."""
        for node, hosts in (self.nodes or {}).items():
            if host in hosts:
                return node
        return None
