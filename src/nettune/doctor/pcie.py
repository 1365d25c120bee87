"""The PCIe link of the test NIC: current vs maximum speed and width, the Gbit/s it can
carry, and whether that is below what the card's ports need together.

Source of truth: /sys/bus/pci/devices/*/{current,max}_link_{speed,width}
(drivers/pci/pci-sysfs.c); usable Gbit/s per lane from drivers/pci/pci.h
PCIE_SPEED2MBS_ENC (8b/10b for Gen1-2, 128b/130b for Gen3-5). The minimum is taken up the
chain of bridges (a card with an on-board switch shows its private link first).
"""
from __future__ import annotations

import re

from .base import Check, Finding, HostView, cannot
from .link import device_path, link_facts

# GT/s -> usable Gbit/s per lane, and the generation's name
LANE = {2.5: (2.0, "Gen1"), 5.0: (4.0, "Gen2"), 8.0: (7.877, "Gen3"), 16.0: (15.754, "Gen4"), 32.0: (31.508, "Gen5"), 64.0: (64.0, "Gen6")}


def _gts(text: str | None) -> float | None:
    m = re.match(r"\s*([\d.]+)\s*GT/s", text or "")
    return float(m.group(1)) if m else None


class PcieLink(Check):
    id, title = "pcie.link", "PCIe link of the NIC: speed, width, ceiling"
    source = "/sys/class/net/IF/device -> /sys/bus/pci/devices/D/{current,max}_link_{speed,width}, up the parent bridges"
    per_machine = False  # per NIC

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        if not dev:
            return [self.no_interface(h)]
        facts = link_facts(h, dev)
        if facts.kind in ("virtual", "paravirtual"):
            return []  # a veth, a bridge, virtio in a VM: no PCIe link of its own
        path, link = device_path(h, dev)
        if path is None:
            if not link.known:
                return [cannot(self.id, h.name, f"{dev}'s PCIe link", link)]
            return []  # not a device of its own
        if path.rsplit("/", 1)[-1].startswith("virtio"):
            path = path.rsplit("/", 1)[0]
        if not re.fullmatch(r"/sys/devices/pci[\w:./-]+", path):
            return []  # not PCI (a name with other characters is not a sysfs path either)
        links = []  # (path, cur GT/s, cur width, max GT/s, max width), NIC first, then its bridges
        p = path
        while p.startswith("/sys/devices/pci") and p.count("/") > 3:
            cur, width = _gts(h.read(p + "/current_link_speed")), h.read(p + "/current_link_width")
            if cur is not None and width and width.isdigit() and int(width) > 0:
                links.append((p, cur, int(width), _gts(h.read(p + "/max_link_speed")), int(h.read(p + "/max_link_width") or 0)))
            p = p.rsplit("/", 1)[0]
        if not links:
            speed = h.get(path + "/current_link_speed")
            if not speed.known:
                return [cannot(self.id, h.name, f"{dev}'s PCIe link", speed)]
            return []  # a virtual PCI device (virtio in a VM) reports no link
        nic = links[0]
        func = nic[0].rsplit("/", 1)[1]
        ceil = min(LANE.get(c, (0.0, ""))[0] * w for _, c, w, _, _ in links)
        gen = LANE.get(nic[1], (0, f"{nic[1]} GT/s"))[1]
        port_names = sorted({x.split("/")[-2] for x in h.files(f"/sys/bus/pci/devices/{func.rsplit('.', 1)[0]}.*/net/*/ifindex").texts})
        speed = h.read(f"/sys/class/net/{dev}/speed")
        link_gbps = int(speed) / 1000 if speed and speed.isdigit() and int(speed) > 0 else None
        need = link_gbps * max(len(port_names), 1) if link_gbps else None
        ev = (f"{nic[0]}: current_link_speed {nic[1]:g} GT/s x{nic[2]}, max {nic[3]:g} GT/s x{nic[4]}"
              + (f"; narrowest up the chain: {ceil:.0f} Gbit/s" if len(links) > 1 else "") + (f"; ports on this card: {', '.join(port_names)}" if len(port_names) > 1 else ""))
        seen = f"x{nic[2]} {gen}: about {ceil:.0f} Gbit/s" + (f" for the {len(port_names)} ports of this card" if len(port_names) > 1 else "") + (f" (link {link_gbps:g} Gbit/s)" if link_gbps else "")
        out = []
        if (nic[3] and nic[1] < nic[3]) or (nic[4] and nic[2] < nic[4]):
            out.append(Finding(self.id, h.name, "warn", f"{dev}: PCIe link degraded: {nic[1]:g} GT/s x{nic[2]} of {nic[3]:g} GT/s x{nic[4]}", ev,
                               "a slot, riser or BIOS setting gives the card fewer lanes or a lower generation than it supports",
                               "move the card to a slot wired for its full width, check BIOS PCIe settings; reboot", ""))
        if need and ceil < need:
            out.append(Finding(self.id, h.name, "problem", f"{dev}: {seen}, below the {need:g} Gbit/s its ports need together", ev,
                               "the bus, not the network, caps throughput when the ports run at once (study D's third host: 36 instead of 42 Gbit/s)",
                               "use one port per card in tests, or a slot with more lanes / a newer generation", ""))
        if not out:
            out.append(Finding(self.id, h.name, "info", f"{dev}: {seen}", ev))
        return out


CHECKS = (PcieLink(),)
