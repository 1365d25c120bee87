"""What doctor knows of one network device, from whichever inputs the source has.

Live: /sys/class/net/IF/{operstate,carrier,speed,duplex,mtu} and `ethtool -i`/`ethtool IF`
(the kernel's own attributes, drivers/net/net-sysfs.c; ethtool's link modes). A
sosreport has no sysfs link attributes (sos copies only flags, statistics/ and
device/numa_node), so the same facts come from `ethtool IF`, `ethtool -i IF` and the
`ip -s -d link` / `ip -d address` text it keeps. A virtual device (veth, bridge, tun, a
tunnel) has no physical rate: the speed it reports (veth: 10000) is nominal, never a limit.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .base import NO_INTERFACE, HostView
from .parsers import Link, Settings, ethtool_info, ethtool_settings, ip_links, num
from .sources import Got, Ran

NET = "/sys/class/net/"
# drivers (ethtool -i) of devices with no wire of their own
VIRTUAL = {"veth", "bridge", "tun", "vxlan", "geneve", "wireguard", "dummy", "macvlan", "ipvlan", "openvswitch", "vrf", "802.1Q VLAN Support",
           "bonding", "team", "ipip", "gre", "ip_gre", "ip6_gre", "sit", "nlmon", "ifb", "xfrm"}
# paravirtual NICs: what they report as speed is what the hypervisor sets, not a wire's
PARAVIRT = {"virtio_net", "vmxnet3", "hv_netvsc", "xen-netfront", "netvsc"}


@dataclass
class LinkFacts:
    dev: str
    driver: str | None = None
    bus: str = ""
    kind: str = "unknown"  # physical | paravirtual | virtual | unknown
    speed: int | None = None  # Mb/s as reported (nominal for virtual/paravirtual)
    duplex: str | None = None
    carrier: bool | None = None
    operstate: str | None = None
    mtu: int | None = None
    settings: Settings | None = None  # `ethtool IF`, when read
    ip: Link | None = None  # the device in a capture's `ip -d link` text
    gone: list[Got | Ran] = field(default_factory=list)  # inputs that were not there

    @property
    def wire_speed(self) -> int | None:
        """The physical rate (Mb/s), None when there is none or it is unknown."""
        return self.speed if self.kind == "physical" and self.speed and self.speed > 0 else None


def ip_text(h: HostView) -> dict[str, Link]:
    """A capture's `ip -s -d link` / `ip -d address` text, parsed (live hosts are read
    from sysfs instead: nettune does not parse `ip`'s output where it can ask the kernel)."""
    if h.source.live:
        return {}
    r = h.first(["ip", "-s", "-d", "link"], ["ip", "-d", "address"], ["ip", "-s", "link"], ["ip", "address"], ["ip", "-o", "addr"])
    return ip_links(r.stdout) if r.known else {}


def link_facts(h: HostView, dev: str) -> LinkFacts:
    f = LinkFacts(dev)
    info = h.cmd(["ethtool", "-i", dev])
    if info.known and info.ok:
        i = ethtool_info(info.stdout)
        f.driver, f.bus = i.get("driver") or None, i.get("bus-info", "")
    elif not info.known:
        f.gone.append(info)
    f.ip = ip_text(h).get(dev)
    if f.driver is None and f.ip is not None and f.ip.kind:
        f.driver = f.ip.kind
    if f.driver in VIRTUAL or (f.ip is not None and f.ip.kind in VIRTUAL) or dev == "lo":
        f.kind = "virtual"
    elif f.driver in PARAVIRT:
        f.kind = "paravirtual"
    elif f.driver:
        f.kind = "physical" if f.bus and f.bus not in ("N/A", "tap") else "virtual"
    oper, carrier, speed, duplex, mtu = (h.get(f"{NET}{dev}/{a}") for a in ("operstate", "carrier", "speed", "duplex", "mtu"))
    f.operstate = oper.text
    f.carrier = None if carrier.text is None else carrier.text == "1"
    f.mtu = num(mtu.text)
    f.speed = num(speed.text) if speed.text is not None else None
    f.duplex = duplex.text if duplex.text not in (None, "unknown") else None
    if f.kind != "virtual" or f.speed is None:
        eth = h.cmd(["ethtool", dev])
        if eth.known and "Settings for" in eth.stdout:
            f.settings = ethtool_settings(eth.stdout)
            f.speed = f.speed if f.speed is not None and f.speed > 0 else f.settings.speed
            f.duplex = f.duplex or f.settings.duplex
            if f.carrier is None and f.settings.link is not None:
                f.carrier = f.settings.link
        elif not eth.known and speed.text is None:
            f.gone.append(eth)
    if f.ip is not None:
        f.mtu = f.mtu if f.mtu is not None else f.ip.mtu
        f.operstate = f.operstate or (f.ip.state.lower() if f.ip.state else None)
        if f.carrier is None and f.ip.flags:
            f.carrier = "NO-CARRIER" not in f.ip.flags and "LOWER_UP" in f.ip.flags
    if f.mtu is None and not mtu.known:
        f.gone.append(mtu)
    if f.carrier is None and not carrier.known:
        f.gone.append(carrier)
    return f


def device_path(h: HostView, dev: str) -> tuple[str | None, Ran]:
    """The sysfs directory of the device behind `dev` (/sys/devices/pci.../0000:3b:00.0, or
    .../virtio2 for virtio-net), from where /sys/class/net/IF points: a sosreport keeps
    that link too. None when it cannot be told or `dev` has no device (virtual)."""
    r = h.cmd(["readlink", "-f", f"{NET}{dev}"])
    path = r.stdout.strip() if r.known else ""
    if not path.endswith(f"/net/{dev}") or path.startswith("/sys/devices/virtual/"):
        return None, r
    return path[: -len(f"/net/{dev}")], r


def link_rate(h: HostView) -> tuple[float | None, str]:
    """The test NIC's physical rate (bit/s) and how it is known; None when it has none
    (virtual, paravirtual) or it cannot be told."""
    if not h.interface:
        return None, NO_INTERFACE
    f = link_facts(h, h.interface)
    if f.wire_speed:
        return f.wire_speed * 1e6, f"{h.interface} link {f.wire_speed / 1000:g} Gbit/s"
    if f.kind in ("virtual", "paravirtual"):
        return None, f"{h.interface} is {'a virtual' if f.kind == 'virtual' else 'a paravirtual'} device ({f.driver}): no physical rate" + (f" (it reports {f.speed / 1000:g} Gbit/s, a nominal figure)" if f.speed and f.speed > 0 else "")
    return None, f"{h.interface}: link rate not known"
