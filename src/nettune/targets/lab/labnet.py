"""The lab's network: one namespace per host on a bridge, one veth pair per host (pyroute2);
with nodes, the hosts' bridges are per node (lab_nodes.py). Names and addresses:
lab_layout.py; link shaping: lab_shaping.py; records and removal (`nettune lab down`): lab_cleanup.py.
"""
from __future__ import annotations

import json
import signal
import threading
import time
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from pyroute2 import IPRoute, NetNS, netns

from ..netns_access import NetlinkPool

from ...errors import NettuneError
from . import lab_nodes, lab_shaping
from .lab_layout import BENCH_NET, LabLayout, default_subnet, short_id, study_layout  # noqa: F401 - re-exported
from .lab_cleanup import (LAB_DIR, LINK_RE, NETNS_DIR, clear_dead_lab, down_all, down_one, leftovers, live_labs,  # noqa: F401 - re-exported
                          pids_in_namespace, remove_lab, remove_namespace, removal_plan, require_root)
from ..procs import owner_token, private_dirs



NETLINK_DEADLINE = 60.0
# The bridge and its ports are the lab's switch: like a jumbo-capable switch they pass
# any frame, so the hosts' own MTU (target.mtu, or an "mtu" knob on a host) decides.
SWITCH_MTU = 65535


@contextmanager
def deadline(what: str, seconds: float = NETLINK_DEADLINE):
    """Bound a block of netlink calls: pyroute2 waits for replies without a timeout, and a
    reply that never comes (seen while another process removed namespaces) must fail the
    run, not hang it. Only the main thread can take SIGALRM; elsewhere this is a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise NettuneError(f"lab: {what} got no answer from the kernel within {seconds:.0f}s; run `nettune lab down` and retry")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class LabNet:
    """Creates, adjusts and removes one study's lab network."""

    def __init__(self, layout: LabLayout):
        self.layout = layout
        self.link: Any = None  # spec LinkSpec in force (None: unshaped)
        self.underlay: Any = None  # spec UnderlaySpec in force
        self._shaped = False  # any shaping asked so far
        self.netlink = NetlinkPool()  # one socket per namespace for the lab's life

    def __enter__(self) -> "LabNet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.netlink.close()  # a one-off use (the bastion host): its sockets must not keep namespaces alive

    def _nl(self, ns: str | None) -> AbstractContextManager[Any]:
        """A netlink socket into a namespace (None: the root one), kept between calls."""
        return self.netlink.socket(ns)

    def _switch(self, host: str) -> AbstractContextManager[Any]:
        """Netlink to the namespace of the host's switch end (root, or its node's)."""
        return self._nl(self.layout.switch_ns(host))

    def up(self, mtu: int, queues: int | dict[str, int], underlay_mtu: int = 1500) -> None:
        require_root()
        lay = self.layout
        self.save_state(carry=False)
        with deadline("creating the bridge"), self._nl(None) as ipr:
            if not ipr.link_lookup(ifname=lay.bridge):
                ipr.link("add", ifname=lay.bridge, kind="bridge")
            br = ipr.link_lookup(ifname=lay.bridge)[0]
            ipr.link("set", index=br, mtu=SWITCH_MTU, state="up")
            _ensure_addr(ipr, br, lay.bridge_address, lay.subnet.prefixlen)
        if lay.nodes:
            lab_nodes.nodes_up(lay, underlay_mtu, deadline)
        for h in lay.hosts:
            if lay.ns(h) not in netns.listnetns():
                netns.create(lay.ns(h))
            with deadline(f"setting up {lay.ns(h)}"), self._nl(lay.ns(h)) as ns:
                ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")
            self.recreate_veth(h, mtu, queues[h] if isinstance(queues, dict) else queues)

    def recreate_veth(self, host: str, mtu: int, queues: int) -> None:
        """(Re)create a host's veth pair: the lab's stand-in for restarting a VM's NIC. Its
        switch end is on the root bridge, or on its node's bridge in the node's namespace."""
        lay = self.layout
        rif, nif, nsname = lay.root_if(host), lay.ns_if(host), lay.ns(host)
        with deadline(f"re-creating the veth of {host}"), self._switch(host) as ipr:
            for idx in ipr.link_lookup(ifname=rif):
                ipr.link("del", index=idx)
            with self._nl(nsname) as ns:
                for idx in ns.link_lookup(ifname=nif):
                    ns.link("del", index=idx)
            # Stable MACs, like a VM's NIC across restarts: peers' ARP caches stay valid
            # after a re-creation (a new MAC stalls connections from the root namespace).
            ipr.link(
                "add", ifname=rif, kind="veth", num_tx_queues=queues, num_rx_queues=queues, address=lay.mac(host, "r"),
                peer={"ifname": nif, "net_ns_fd": nsname, "num_tx_queues": queues, "num_rx_queues": queues, "address": lay.mac(host, "n")},
            )
            br = ipr.link_lookup(ifname=lab_nodes.NODE_BRIDGE if lay.node_of(host) else lay.bridge)[0]
            idx = ipr.link_lookup(ifname=rif)[0]
            ipr.link("set", index=idx, mtu=SWITCH_MTU, master=br, state="up")
        with deadline(f"configuring the veth of {host}"), self._nl(nsname) as ns:
            idx = ns.link_lookup(ifname=nif)[0]
            ns.link("set", index=idx, mtu=mtu, state="up")
            _ensure_addr(ns, idx, lay.address(host), lay.subnet.prefixlen)
            _wait_oper_up(ns, idx)
        self.shape_host(host)  # a new veth has the default qdiscs

    def move_host(self, host: str, node: str, mtu: int, queues: int) -> None:
        """Put a host on another node: its veth's switch end moves to that node's bridge (a
        pod rescheduled); the lab's record follows so cleanup finds every namespace."""
        lay = self.layout
        with deadline(f"moving {host} to node {node}"), self._switch(host) as old:
            for idx in old.link_lookup(ifname=lay.root_if(host)):
                old.link("del", index=idx)
        lay.nodes = {n: [h for h in hs if h != host] + ([host] if n == node else []) for n, hs in (lay.nodes or {}).items()}
        self.save_state()
        self.recreate_veth(host, mtu, queues)

    def set_shaping(self, link: Any, underlay: Any) -> None:
        """Shape every host's link ([target.link]) and the nodes' underlay links."""
        self._shaped = self._shaped or link is not None or underlay is not None  # shaped before: unshaping must clear it
        self.link, self.underlay = link, underlay
        for h in self.layout.hosts:
            self.shape_host(h)
        if self.layout.nodes:
            with deadline("shaping the underlay"):
                lab_nodes.shape_underlay(self.layout, underlay)

    def adopt(self, link: Any, underlay: Any) -> None:
        """The shaping a lab already has (one `nettune lab up` left): in force, not applied again."""
        self.link, self.underlay = link, underlay
        self._shaped = self._shaped or link is not None or underlay is not None

    def shape_host(self, host: str) -> None:
        shape = self.link.for_host(host) if self.link is not None else None
        if shape is None and not self.shaped_once:
            return  # never shaped: the default qdiscs are already there
        lay = self.layout
        # the rate on the switch end only, towards this host, by sender (lab_shaping.py: a
        # rate on a sender's own end holds its socket back instead of dropping)
        senders = [(lay.address(h), self.link.for_host(h) if self.link is not None else None) for h in lay.hosts if h != host]
        with deadline(f"shaping the link of {host}"), self._nl(lay.ns(host)) as ns, self._switch(host) as sw:
            lab_shaping.apply(ns, lay.ns_if(host), lab_shaping.without_rate(shape))
            lab_shaping.apply_switch_end(sw, lay.root_if(host), shape, senders)

    def shaping_state(self) -> dict[str, Any]:
        """Per host: the shape asked for and the qdiscs on each end, read back from netlink."""
        lay, out = self.layout, {}
        for h in lay.hosts:
            with self._nl(lay.ns(h)) as ns, self._switch(h) as sw:
                out[h] = {
                    "shape": self.link.for_host(h).values() if self.link is not None else {},
                    "host_end": [q["kind"] for q in lab_shaping.qdiscs(ns, lay.ns_if(h))],
                    "switch_end": [q["kind"] for q in lab_shaping.qdiscs(sw, lay.root_if(h))],
                }
        return out

    @property
    def shaped_once(self) -> bool:
        """True once any shaping was asked of this lab (then unshaped hosts get their qdiscs cleared)."""
        return self._shaped

    def add_host(self, host: str, mtu: int = 1500) -> "LabLayout":
        """One more namespace on the bridge (the lab's SSH bastion), recorded with the lab so
        `nettune lab down` removes it; returns the layout that includes it."""
        require_root()
        lay = self.layout
        if host not in lay.hosts:
            lay = self.layout = LabLayout(lay.study, lay.hosts + [host], lay.subnet, lay.nodes)
        self.save_state()
        if lay.ns(host) not in netns.listnetns():
            netns.create(lay.ns(host))
        with deadline(f"setting up {lay.ns(host)}"), self._nl(lay.ns(host)) as ns:
            ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")
        self.recreate_veth(host, mtu, 1)
        return lay

    def set_mtu(self, mtu: int) -> None:
        """The hosts' MTU; the switch side already passes any frame size."""
        lay = self.layout
        for h in lay.hosts:
            with deadline(f"setting the MTU of {h}"), self._nl(lay.ns(h)) as ns:
                ns.link("set", index=ns.link_lookup(ifname=lay.ns_if(h))[0], mtu=mtu)

    def state(self) -> dict[str, dict[str, int | str]]:
        """Actual MTU and queue counts of each host's interface, read back from netlink."""
        out: dict[str, dict[str, int | str]] = {}
        for h in self.layout.hosts:
            with self._nl(self.layout.ns(h)) as ns:
                idx = ns.link_lookup(ifname=self.layout.ns_if(h))
                if not idx:
                    continue
                link = ns.get_links(idx[0])[0]
                out[h] = {
                    "interface": self.layout.ns_if(h),
                    "address": self.layout.address(h),
                    "mtu": link.get("mtu"),
                    "tx_queues": link.get("num_tx_queues"),
                    "rx_queues": link.get("num_rx_queues"),
                }
        return out

    def down(self) -> None:
        self.netlink.close()  # an open socket would keep a namespace (and its veth ends) alive
        remove_lab(self.layout)

    def record(self) -> dict[str, Any]:
        """This lab's record as saved (empty when there is none or it is unreadable)."""
        try:
            st = json.loads((LAB_DIR / f"{self.layout.study}.json").read_text())
        except (OSError, ValueError):
            return {}
        return st if isinstance(st, dict) else {}

    def save_state(self, carry: bool = True, **fields: Any) -> None:
        """Record the lab (hosts, subnet, nodes, the process using it); what `nettune lab
        up` recorded (`kept`: the user's lab, and its configuration) stays unless `carry`
        is False (a lab being created: nothing earlier is its)."""
        private_dirs(LAB_DIR)  # 0700, ours, not a link (targets/procs.py)
        lay = self.layout
        old = self.record() if carry else {}
        st = {"study": lay.study, "hosts": lay.hosts, "subnet": str(lay.subnet), "nodes": lay.nodes,
              "created": old.get("created", time.time()), "owner": owner_token()}
        st |= {k: old[k] for k in ("kept", "config") if k in old} | fields
        (LAB_DIR / f"{lay.study}.json").write_text(json.dumps(st))



def _ensure_addr(ipr: IPRoute | NetNS, idx: int, address: str, prefixlen: int) -> None:
    have = {a.get("address") for a in ipr.get_addr(index=idx)}
    if address not in have:
        ipr.addr("add", index=idx, address=address, prefixlen=prefixlen)


def _wait_oper_up(ns: NetNS, idx: int, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ns.get_links(idx)[0].get("operstate") == "UP":
            return
        time.sleep(0.02)
