"""The lab's nodes: hosts grouped like pods on Kubernetes nodes, joined as a CNI in VXLAN
mode joins them (pyroute2).

Each node is a namespace with a bridge (the hosts' switch on that node), a VXLAN device on
that bridge, and an underlay NIC whose peer sits on the root bridge (the underlay switch).
Every VXLAN device floods to the other nodes' underlay addresses (static all-zero FDB
entries, as flannel writes them) and learns the hosts' MACs; so a frame between hosts of
one node stays on its bridge, and one between nodes is encapsulated, crosses the underlay
(its own shaped link) and is decapsulated on the other node. The overlay's MTU is the
underlay's minus 50 (outer Ethernet, IPv4, UDP and VXLAN headers).
"""
from __future__ import annotations

from typing import Any

from pyroute2 import IPRoute, NetNS, netns

from . import lab_shaping
from .lab_layout import NODE_BRIDGE, NODE_UNDERLAY, NODE_VXLAN, VXLAN_PORT, LabLayout

VXLAN_OVERHEAD = 50
SWITCH_MTU = 65535


def nodes_up(lay: LabLayout, underlay_mtu: int, deadline: Any) -> None:
    """Create every node namespace, its bridge, underlay NIC and VXLAN device."""
    for node in lay.node_names():
        if lay.node_ns(node) not in netns.listnetns():
            netns.create(lay.node_ns(node))
        _underlay(lay, node, underlay_mtu, deadline)
        with deadline(f"setting up node {node}"), NetNS(lay.node_ns(node)) as ns:
            ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")
            if not ns.link_lookup(ifname=NODE_BRIDGE):
                ns.link("add", ifname=NODE_BRIDGE, kind="bridge")
            br = ns.link_lookup(ifname=NODE_BRIDGE)[0]
            ns.link("set", index=br, mtu=SWITCH_MTU, state="up")
            for idx in ns.link_lookup(ifname=NODE_VXLAN):
                ns.link("del", index=idx)
            ns.link(
                "add", ifname=NODE_VXLAN, kind="vxlan", vxlan_id=lay.vni, vxlan_local=lay.node_address(node),
                vxlan_port=VXLAN_PORT, vxlan_learning=1,
            )
            vx = ns.link_lookup(ifname=NODE_VXLAN)[0]
            ns.link("set", index=vx, mtu=underlay_mtu - VXLAN_OVERHEAD, master=br, state="up")
            for other in lay.node_names():
                if other != node:  # flood (ARP, unknown unicast) to every other node
                    ns.fdb("append", ifindex=vx, lladdr="00:00:00:00:00:00", dst=lay.node_address(other))


def _underlay(lay: LabLayout, node: str, mtu: int, deadline: Any) -> None:
    rif, nsname = lay.underlay_if(node), lay.node_ns(node)
    with deadline(f"creating the underlay link of node {node}"), IPRoute() as ipr:
        for idx in ipr.link_lookup(ifname=rif):
            ipr.link("del", index=idx)
        with NetNS(nsname) as ns:
            for idx in ns.link_lookup(ifname=NODE_UNDERLAY):
                ns.link("del", index=idx)
        ipr.link("add", ifname=rif, kind="veth", address=lay.mac(f"node:{node}", "r"),
                 peer={"ifname": NODE_UNDERLAY, "net_ns_fd": nsname, "address": lay.mac(f"node:{node}", "n")})
        br = ipr.link_lookup(ifname=lay.bridge)[0]
        ipr.link("set", index=ipr.link_lookup(ifname=rif)[0], mtu=SWITCH_MTU, master=br, state="up")
    with deadline(f"configuring the underlay link of node {node}"), NetNS(nsname) as ns:
        idx = ns.link_lookup(ifname=NODE_UNDERLAY)[0]
        ns.link("set", index=idx, mtu=mtu, state="up")
        ns.addr("add", index=idx, address=lay.node_address(node), prefixlen=lay.subnet.prefixlen)


def set_underlay_mtu(lay: LabLayout, mtu: int) -> None:
    for node in lay.node_names():
        with NetNS(lay.node_ns(node)) as ns:
            ns.link("set", index=ns.link_lookup(ifname=NODE_UNDERLAY)[0], mtu=mtu)
            ns.link("set", index=ns.link_lookup(ifname=NODE_VXLAN)[0], mtu=mtu - VXLAN_OVERHEAD)


def shape_underlay(lay: LabLayout, shape: Any) -> None:
    """Both ends of every node's underlay link (None: unshaped)."""
    for node in lay.node_names():
        with NetNS(lay.node_ns(node)) as ns:
            lab_shaping.apply(ns, NODE_UNDERLAY, shape)
        with IPRoute() as ipr:
            lab_shaping.apply(ipr, lay.underlay_if(node), shape)


def vxlan_counters(lay: LabLayout, node: str) -> dict[str, int]:
    """tx/rx packets and bytes of a node's VXLAN device, from netlink."""
    with NetNS(lay.node_ns(node)) as ns:
        link = ns.get_links(ns.link_lookup(ifname=NODE_VXLAN)[0])[0]
        st = link.get_attr("IFLA_STATS64")
        return {k: int(st[k]) for k in ("tx_packets", "rx_packets", "tx_bytes", "rx_bytes")}


def node_state(lay: LabLayout) -> dict[str, dict[str, Any]]:
    """Each node's underlay address and MTU and its overlay MTU, read back from netlink."""
    out: dict[str, dict[str, Any]] = {}
    for node in lay.node_names():
        with NetNS(lay.node_ns(node)) as ns:
            under = ns.get_links(ns.link_lookup(ifname=NODE_UNDERLAY)[0])[0]
            vx = ns.get_links(ns.link_lookup(ifname=NODE_VXLAN)[0])[0]
            out[node] = {"hosts": list((lay.nodes or {})[node]), "underlay_address": lay.node_address(node),
                         "underlay_mtu": under.get("mtu"), "overlay_mtu": vx.get("mtu")}
    return out
