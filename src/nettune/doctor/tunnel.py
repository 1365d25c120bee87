"""Tunnels (VXLAN, Geneve, WireGuard): their MTU against the underlay's, whether the
underlay NIC segments UDP tunnels itself, their counters, and over-MTU drops in the log.

Overheads (outer headers a tunnel adds to each inner frame): VXLAN and Geneve 50 bytes
over IPv4, 70 over IPv6 (outer IP 20/40 + UDP 8 + VXLAN/Geneve 8 + inner Ethernet 14;
Geneve options add to it: OVN's take 8 more); WireGuard 60 over IPv4, 80 over IPv6 (IP +
UDP 8 + its 32-byte header and tag; it carries IP, no Ethernet header), hence wg's 1420
default. Devices: DEVTYPE in /sys/class/net/*/uevent (vxlan, geneve, wireguard set it);
a capture's `ip -d link` text (its "vxlan id N ... dev IF" line names the underlay). A
metadata ("external") tunnel, as Open vSwitch's vxlan_sys_4789 or Cilium's, has MTU 65000
by design: the limit is applied where traffic enters it, so its MTU is not judged.
Offload: ethtool -k UNDERLAY tx-udp_tnl-segmentation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .base import Check, Finding, HostView, cannot, q
from .kernel_log import nic_events
from .link import NET, ip_text, link_facts
from .parsers import ethtool_features, num
from .sources import Files

OVERHEAD = {"vxlan": (50, 70), "geneve": (50, 70), "wireguard": (60, 80)}


@dataclass
class Tunnel:
    name: str
    kind: str
    mtu: int | None
    under: str | None  # the device it is bound to (-d text "dev IF"), if known
    ipv6: bool | None  # underlay address family, if known
    external: bool
    where: str


def tunnels(h: HostView) -> tuple[list[Tunnel] | None, str, list[Files]]:
    """(the tunnel devices, where they were read), None when the source cannot list them."""
    ue = h.files(f"{NET}*/uevent")
    if ue.known and ue.texts:
        out = []
        for path, text in sorted(ue.texts.items()):
            m = re.search(r"^DEVTYPE=(vxlan|geneve|wireguard)$", text, re.M)
            if m:
                name = path.split("/")[4]
                out.append(Tunnel(name, m.group(1), num(h.read(f"{NET}{name}/mtu")), None, None, False, ue.where))
        return out, ue.where, []
    links = ip_text(h)
    if links:
        out = []
        for lk in links.values():
            if lk.kind in OVERHEAD:
                addr = lk.details.get("remote") or lk.details.get("local") or lk.details.get("group") or ""
                out.append(Tunnel(lk.name, lk.kind, lk.mtu, lk.details.get("dev"), (":" in addr) if addr else None,
                                  "external" in lk.details, "ip -d link (capture)"))
        return out, "ip -d link (capture)", []
    return None, "", [ue]


class Tunnels(Check):
    id, title = "net.tunnel", "Tunnels (VXLAN, Geneve, WireGuard): MTU vs the underlay, tunnel offload, over-MTU drops"
    source = ("/sys/class/net/*/uevent (DEVTYPE), /sys/class/net/T/mtu, the underlay's mtu, ethtool -k UNDERLAY (tx-udp_tnl-segmentation); "
              "a capture's ip -d link; the kernel log (dropped over-mtu packet)")

    def run(self, h: HostView) -> list[Finding]:
        found, where, gone = tunnels(h)
        out: list[Finding] = []
        log = nic_events(h)
        for e in (log.events if log.known else []):
            if e.kind == "overmtu":
                out.append(Finding(self.id, h.name, "problem", f"{e.dev}: {e.count} packet(s) dropped for exceeding the MTU", f"{log.where}: {e.line[:200]}",
                                   "a guest, container or tunnel end sends frames bigger than the next hop carries: they are dropped silently (stalls, retransmits)",
                                   "give the sender's interface an MTU that fits the path (tunnel MTU = underlay MTU - overhead), or raise the underlay's", ""))
        if found is None:
            return out + [cannot(self.id, h.name, "whether this host has VXLAN, Geneve or WireGuard tunnels", *gone)]
        if not found:
            return out + [Finding(self.id, h.name, "info", "no VXLAN, Geneve or WireGuard device", where)]
        for t in found:
            out += self._one(h, t)
        return out

    def _one(self, h: HostView, t: Tunnel) -> list[Finding]:
        if t.external:
            return [Finding(self.id, h.name, "info", f"{t.name}: a metadata ({t.kind} external) tunnel, MTU {t.mtu}: its limit is applied where traffic enters (Open vSwitch, OVN, Cilium), not judged here", t.where)]
        under = t.under or h.interface
        if not under:
            return [cannot(self.id, h.name, f"{t.name}'s underlay (no default route)", t.where)]
        uf = link_facts(h, under)
        if t.mtu is None or uf.mtu is None:
            return [cannot(self.id, h.name, f"whether {t.name}'s MTU fits {under}'s", *(uf.gone or [f"{t.where}: no MTU for {t.name}"]))]  # type: ignore[arg-type]
        v4, v6 = OVERHEAD[t.kind]
        fam = "IPv6" if t.ipv6 else "IPv4"
        ovh = v6 if t.ipv6 else v4
        assumed = "" if t.under else f" (underlay taken as the default-route NIC {under})"
        ev = f"{t.where}: {t.name} ({t.kind}) MTU {t.mtu}; {under} MTU {uf.mtu}{assumed}; {t.kind} over {fam} adds {ovh} bytes" + ("" if t.ipv6 is not None else " (address family not known: IPv4 taken)")
        out = []
        if t.mtu + ovh > uf.mtu:
            want = uf.mtu - ovh
            out.append(Finding(self.id, h.name, "problem", f"{t.name}: MTU {t.mtu} + {ovh} bytes of {t.kind} = {t.mtu + ovh} > {under}'s MTU {uf.mtu}", ev,
                               "full-size inner packets do not fit the underlay: they are fragmented or dropped (VXLAN and Geneve set don't-fragment): stalls and retransmits",
                               f"ip link set dev {q(t.name)} mtu {want}   (or raise {under}'s MTU and every hop's to {t.mtu + ovh})",
                               f"ip link set dev {q(t.name)} mtu {t.mtu}", {"key": f"mtu@{t.name}", "value": want}))
        elif t.kind == "wireguard" and t.ipv6 is None and t.mtu + v6 > uf.mtu:
            out.append(Finding(self.id, h.name, "info", f"{t.name}: MTU {t.mtu} fits {under} ({uf.mtu}) for IPv4 endpoints only (IPv6 adds {v6})", ev))
        else:
            out.append(Finding(self.id, h.name, "info", f"{t.name}: MTU {t.mtu} + {ovh} = {t.mtu + ovh} fits {under}'s {uf.mtu}", ev))
        out += self._counters(h, t)
        if t.kind in ("vxlan", "geneve"):
            k = h.cmd(["ethtool", "-k", under])
            if not k.known:
                out.append(cannot(self.id, h.name, f"whether {under} segments {t.kind} packets itself", k))
            else:
                state, fixed = ethtool_features(k.stdout).get("tx-udp_tnl-segmentation", ("?", True))
                if state == "off" and not fixed:
                    out.append(Finding(self.id, h.name, "warn", f"{under}: UDP tunnel segmentation offload off (the NIC could do it)", f"ethtool -k {under}: tx-udp_tnl-segmentation: off",
                                       f"{t.kind} traffic is then segmented by the CPU: more CPU per Gbit/s through {t.name}",
                                       f"ethtool -K {q(under)} tx-udp_tnl-segmentation on", f"ethtool -K {q(under)} tx-udp_tnl-segmentation off"))
                elif state == "off":
                    out.append(Finding(self.id, h.name, "info", f"{under} cannot segment UDP tunnels (tx-udp_tnl-segmentation off [fixed]): the kernel segments {t.kind} in software",
                                       f"ethtool -k {under}: tx-udp_tnl-segmentation: off [fixed]"))
        return out


    def _counters(self, h: HostView, t: Tunnel) -> list[Finding]:
        """The tunnel device's own error and drop counters (sysfs, else a capture's ip -s link)."""
        f = h.files(f"{NET}{t.name}/statistics/*")
        stats = {p.rsplit("/", 1)[1]: int(v) for p, v in f.texts.items() if v.isdigit()} if f.known else {}
        where = f.where
        if not stats:
            lk = ip_text(h).get(t.name)
            stats, where = (lk.stats, "ip -s link (capture)") if lk is not None else ({}, "")
        errors = {k: v for k, v in stats.items() if v and k in ("rx_errors", "tx_errors", "tx_carrier_errors", "tx_aborted_errors")}
        drops = {k: v for k, v in stats.items() if v and k in ("rx_dropped", "tx_dropped")}
        shown = ", ".join(f"{k} {v}" for k, v in sorted({**errors, **drops}.items()))
        if errors:
            return [Finding(self.id, h.name, "warn", f"{t.name}: {shown}", f"{where}: {shown}",
                            f"packets the {t.kind} device failed to send or receive: an unreachable remote, a missing forwarding entry, or the underlay's MTU",
                            f"compare with the underlay's counters (nic.errors) and the tunnel's remote/forwarding entries (bridge fdb show dev {q(t.name)})", "")]
        if drops:
            return [Finding(self.id, h.name, "info", f"{t.name}: {shown}", f"{where}: {shown}",
                            "a tunnel drops what it has no forwarding entry or route for: matters only if it rises during a test")]
        return []


CHECKS = (Tunnels(),)
