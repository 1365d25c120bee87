"""The lab's network: one namespace per host on a bridge, one veth pair per host (pyroute2);
with nodes, the hosts' bridges are per node (lab_nodes.py). Names and addresses:
lab_layout.py; link shaping: lab_shaping.py.
"""
from __future__ import annotations

import ipaddress
import json
import os
import re
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyroute2 import IPRoute, NetNS, netns
from pyroute2.netlink.exceptions import NetlinkError

from ..errors import NettuneError, NotRoot
from . import lab_nodes, lab_shaping
from .lab_layout import BENCH_NET, LabLayout, default_subnet, short_id, study_layout  # noqa: F401 - re-exported
from .procs import STATE_DIR, kill_pid, owner_alive, owner_token, stop_recorded

LAB_DIR = STATE_DIR / "labs"
NETNS_DIR = Path("/var/run/netns")
LINK_RE = re.compile(r"^nt[0-9a-f]{5}(br|r\d+|u\d+)$")


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


def require_root(what: str = "the lab target") -> None:
    if os.geteuid() != 0:
        raise NotRoot(
            f"{what} creates network namespaces and needs root: run it with sudo, "
            'or use [target] kind = "local" for loopback tests'
        )


class LabNet:
    """Creates, adjusts and removes one study's lab network."""

    def __init__(self, layout: LabLayout):
        self.layout = layout
        self.link: Any = None  # spec LinkSpec in force (None: unshaped)
        self.underlay: Any = None  # spec UnderlaySpec in force

    def up(self, mtu: int, queues: int | dict[str, int], underlay_mtu: int = 1500) -> None:
        require_root()
        lay = self.layout
        self._save_state()
        with deadline("creating the bridge"), IPRoute() as ipr:
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
            with deadline(f"setting up {lay.ns(h)}"), NetNS(lay.ns(h)) as ns:
                ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")
            self.recreate_veth(h, mtu, queues[h] if isinstance(queues, dict) else queues)

    def recreate_veth(self, host: str, mtu: int, queues: int) -> None:
        """(Re)create a host's veth pair: the lab's stand-in for restarting a VM's NIC. Its
        switch end is on the root bridge, or on its node's bridge in the node's namespace."""
        lay = self.layout
        rif, nif, nsname = lay.root_if(host), lay.ns_if(host), lay.ns(host)
        with deadline(f"re-creating the veth of {host}"), _switch(lay, host) as ipr:
            for idx in ipr.link_lookup(ifname=rif):
                ipr.link("del", index=idx)
            with NetNS(nsname) as ns:
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
        with deadline(f"configuring the veth of {host}"), NetNS(nsname) as ns:
            idx = ns.link_lookup(ifname=nif)[0]
            ns.link("set", index=idx, mtu=mtu, state="up")
            _ensure_addr(ns, idx, lay.address(host), lay.subnet.prefixlen)
            _wait_oper_up(ns, idx)
        self.shape_host(host)  # a new veth has the default qdiscs

    def move_host(self, host: str, node: str, mtu: int, queues: int) -> None:
        """Put a host on another node: its veth's switch end moves to that node's bridge (a
        pod rescheduled); the lab's record follows so cleanup finds every namespace."""
        lay = self.layout
        with deadline(f"moving {host} to node {node}"), _switch(lay, host) as old:
            for idx in old.link_lookup(ifname=lay.root_if(host)):
                old.link("del", index=idx)
        lay.nodes = {n: [h for h in hs if h != host] + ([host] if n == node else []) for n, hs in (lay.nodes or {}).items()}
        self._save_state()
        self.recreate_veth(host, mtu, queues)

    def set_shaping(self, link: Any, underlay: Any) -> None:
        """Shape every host's link ([target.link]) and the nodes' underlay links."""
        self.link, self.underlay = link, underlay
        for h in self.layout.hosts:
            self.shape_host(h)
        if self.layout.nodes:
            with deadline("shaping the underlay"):
                lab_nodes.shape_underlay(self.layout, underlay)

    def shape_host(self, host: str) -> None:
        shape = self.link.for_host(host) if self.link is not None else None
        if shape is None and not self.shaped_once:
            return  # never shaped: the default qdiscs are already there
        lay = self.layout
        with deadline(f"shaping the link of {host}"), NetNS(lay.ns(host)) as ns, _switch(lay, host) as sw:
            lab_shaping.apply(ns, lay.ns_if(host), shape)
            lab_shaping.apply(sw, lay.root_if(host), shape)

    def shaping_state(self) -> dict[str, Any]:
        """Per host: the shape asked for and the qdiscs on each end, read back from netlink."""
        lay, out = self.layout, {}
        for h in lay.hosts:
            with NetNS(lay.ns(h)) as ns, _switch(lay, h) as sw:
                out[h] = {
                    "shape": self.link.for_host(h).values() if self.link is not None else {},
                    "host_end": [q["kind"] for q in lab_shaping.qdiscs(ns, lay.ns_if(h))],
                    "switch_end": [q["kind"] for q in lab_shaping.qdiscs(sw, lay.root_if(h))],
                }
        return out

    @property
    def shaped_once(self) -> bool:
        return self.link is not None or self.underlay is not None

    def add_host(self, host: str, mtu: int = 1500) -> "LabLayout":
        """One more namespace on the bridge (the lab's SSH bastion), recorded with the lab so
        `nettune lab down` removes it; returns the layout that includes it."""
        require_root()
        lay = self.layout
        if host not in lay.hosts:
            lay = self.layout = LabLayout(lay.study, lay.hosts + [host], lay.subnet, lay.nodes)
        self._save_state()
        if lay.ns(host) not in netns.listnetns():
            netns.create(lay.ns(host))
        with deadline(f"setting up {lay.ns(host)}"), NetNS(lay.ns(host)) as ns:
            ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")
        self.recreate_veth(host, mtu, 1)
        return lay

    def set_mtu(self, mtu: int) -> None:
        """The hosts' MTU; the switch side already passes any frame size."""
        lay = self.layout
        for h in lay.hosts:
            with deadline(f"setting the MTU of {h}"), NetNS(lay.ns(h)) as ns:
                ns.link("set", index=ns.link_lookup(ifname=lay.ns_if(h))[0], mtu=mtu)

    def state(self) -> dict[str, dict[str, int | str]]:
        """Actual MTU and queue counts of each host's interface, read back from netlink."""
        out: dict[str, dict[str, int | str]] = {}
        for h in self.layout.hosts:
            with NetNS(self.layout.ns(h)) as ns:
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
        lay = self.layout
        for name in lay.namespaces():
            remove_namespace(name)
        with IPRoute() as ipr:
            for name in lay.root_links():
                for idx in ipr.link_lookup(ifname=name):
                    try:
                        ipr.link("del", index=idx)
                    except NetlinkError:
                        pass
        (LAB_DIR / f"{lay.study}.json").unlink(missing_ok=True)

    def _save_state(self) -> None:
        LAB_DIR.mkdir(parents=True, exist_ok=True)
        lay = self.layout
        (LAB_DIR / f"{lay.study}.json").write_text(
            json.dumps({"study": lay.study, "hosts": lay.hosts, "subnet": str(lay.subnet), "nodes": lay.nodes, "created": time.time(), "owner": owner_token()})
        )


def _switch(lay: LabLayout, host: str) -> IPRoute | NetNS:
    """Netlink to the namespace of the host's switch end (root, or its node's)."""
    where = lay.switch_ns(host)
    return IPRoute() if where is None else NetNS(where)


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


def pids_in_namespace(name: str) -> list[int]:
    """PIDs whose network namespace is this named one (processes nettune ran in the lab)."""
    try:
        ino = os.stat(NETNS_DIR / name).st_ino
    except OSError:
        return []
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.stat(f"/proc/{d}/ns/net").st_ino == ino:
                    pids.append(int(d))
            except OSError:
                continue
    return pids


def remove_namespace(name: str) -> None:
    for pid in pids_in_namespace(name):
        kill_pid(pid)
    if name in netns.listnetns():
        try:
            netns.remove(name)
        except OSError:
            pass


def leftovers() -> dict[str, list[str]]:
    """Everything that looks like ours: namespaces nettune-*, links nt<id>br / nt<id>r<i>."""
    nss = sorted(n for n in netns.listnetns() if n.startswith("nettune-"))
    links = sorted(n for n in os.listdir("/sys/class/net") if LINK_RE.match(n))
    labs = sorted(p.stem for p in LAB_DIR.glob("*.json")) if LAB_DIR.is_dir() else []
    return {"namespaces": nss, "links": links, "labs": labs}


def live_labs() -> dict[str, list[str]]:
    """Labs whose nettune process is still running: study -> its namespaces."""
    live: dict[str, list[str]] = {}
    if not LAB_DIR.is_dir():
        return live
    for f in LAB_DIR.glob("*.json"):
        try:
            st = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if owner_alive(st.get("owner", "")):
            live[st["study"]] = [f"nettune-{st['study']}-{h}" for h in st.get("hosts", [])] + [f"nettune-{st['study']}.{n}" for n in st.get("nodes") or {}]
    return live


def _lab_records() -> dict[str, dict]:
    out = {}
    for f in sorted(LAB_DIR.glob("*.json")) if LAB_DIR.is_dir() else []:
        try:
            out[f.stem] = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
    return out


def removal_plan(name: str | None = None, force: bool = False) -> tuple[set[str], list[ipaddress.IPv4Network]]:
    """The namespaces and subnets `nettune lab down` (every lab, or lab `name`) is about to
    remove, so that settings changed on those hosts can be put back first."""
    require_root("nettune lab down")
    records = _lab_records()
    live = {} if force else live_labs()
    if name is not None:
        st = records.get(name)
        if st is None or name in live:
            return set(), []
        return {f"nettune-{name}-{h}" for h in st.get("hosts", [])}, [ipaddress.ip_network(st["subnet"])]
    keep = {n for nss in live.values() for n in nss}
    namespaces = {n for n in leftovers()["namespaces"] if n not in keep}
    subnets = [ipaddress.ip_network(st["subnet"]) for lab, st in records.items() if lab not in live and st.get("subnet")]
    return namespaces, subnets


def down_one(name: str, force: bool = False) -> dict[str, list[str]]:
    """Remove one lab (`nettune lab down NAME`), leaving every other lab alone. A lab whose
    study is still running is kept unless force (then its run finds its hosts gone)."""
    require_root("nettune lab down")
    st = _lab_records().get(name)
    if st is None:
        labs = ", ".join(_lab_records()) or "none"
        raise NettuneError(f"no lab named {name!r} on this machine (labs: {labs}); `nettune lab status` lists what is there")
    if not force and owner_alive(st.get("owner", "")):
        return {"kept (study still running; --force removes it)": [name]}
    layout = LabLayout(name, list(st.get("hosts", [])), ipaddress.ip_network(st["subnet"]), st.get("nodes"))
    present = set(netns.listnetns())
    links = set(os.listdir("/sys/class/net"))
    namespaces = [n for n in layout.namespaces() if n in present]
    gone_links = [n for n in layout.root_links() if n in links]
    LabNet(layout).down()
    return {"namespaces": namespaces, "links": gone_links, "labs": [name]}


def clear_dead_lab(study: str) -> list[str]:
    """Remove the lab a killed run of `study` left on this machine (its namespaces with
    the processes in them, its bridge and veths), as recorded when it was created; a new
    run would otherwise reuse those namespaces, a dead run's iperf3 server still bound
    in them. Refuses when the run that owns the lab is still alive. Returns the
    namespaces removed."""
    f = LAB_DIR / f"{study}.json"
    try:
        st = json.loads(f.read_text())
        layout = LabLayout(study, list(st["hosts"]), ipaddress.ip_network(st["subnet"]), st.get("nodes"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise NettuneError(f"lab state {f} is unreadable ({e}); run `nettune lab down` to remove what is left") from None
    owner = str(st.get("owner", ""))
    if owner == owner_token():
        return []  # this process made it (e.g. `lab up` from Python): it is ours to use
    if owner_alive(owner):
        raise NettuneError(f"the lab of study {study!r} belongs to a nettune run still going (pid {owner.split()[0]}); wait for it to end, or give this study another name")
    found = [n for n in layout.namespaces() if n in netns.listnetns()]
    LabNet(layout).down()
    return found


def down_all(force: bool = False) -> dict[str, list[str]]:
    """Remove every lab left behind (by a killed run, or `nettune lab up`). Labs of a
    study still running are kept unless force. Returns what was removed or kept."""
    require_root("nettune lab down")
    found = leftovers()
    live = {} if force else live_labs()
    keep_ns = {n for nss in live.values() for n in nss}
    keep_links = {f"nt{short_id(study)}" for study in live}
    stopped = stop_recorded(force)
    for n in found["namespaces"]:
        if n not in keep_ns:
            remove_namespace(n)
    with IPRoute() as ipr:
        for name in found["links"]:
            if name[:7] in keep_links:
                continue
            for idx in ipr.link_lookup(ifname=name):
                try:
                    ipr.link("del", index=idx)
                except NetlinkError:
                    pass
    for lab in found["labs"]:
        if lab not in live:
            (LAB_DIR / f"{lab}.json").unlink(missing_ok=True)
    removed = {
        "namespaces": [n for n in found["namespaces"] if n not in keep_ns],
        "links": [n for n in found["links"] if n[:7] not in keep_links],
        "labs": [lab for lab in found["labs"] if lab not in live],
        "processes": [str(p) for p in stopped],
    }
    if live:
        removed["kept (study still running; --force removes it)"] = sorted(live)
    return removed
