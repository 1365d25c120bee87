"""libvirt_queues:DOMAIN[/MAC|/INDEX] = N  (virtio-net queues of a libvirt guest; study C)

Runs on the KVM host: [knobs.hosts] "libvirt_queues:fedora-vm" = ["kvmhost"].

read:  `virsh dumpxml DOMAIN` (the running definition): the interface's
       <driver name='vhost' queues='N'/>; no queues attribute means one queue pair.
apply: libvirt refuses to change driver attributes of a live NIC ("cannot modify virtio
       network device driver attributes"), so: `virsh dumpxml --inactive`, set queues on
       that interface's <driver>, `virsh define` it (through a mktemp file), then if
       the guest runs: `virsh shutdown`, wait for "shut off", `virsh start`, wait for
       "running". A guest that does not shut down in time is left alone (never
       destroyed) and the knob fails with that reason. The guest's ssh connection then
       reconnects (the ssh target retries for reconnect_timeout seconds).
The interface is the first <interface> by default, or the one with that MAC address, or
the INDEX-th (0-based). Range 1..256 (libvirt's limit); at most the guest's vCPUs.
Not verified on a real libvirt host: tested against `virsh dumpxml` XML written from the
libvirt domain format documentation.
"""
from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from typing import Any

from ..targets.base import Host
from .base import Ctx, Kind, KnobError, Loc, catalog_row, run_ok, whole

DOMAIN = re.compile(r"^[A-Za-z0-9_.+-]{1,64}$")
MAC = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$")
RESTART_TIMEOUT = 300.0


def domain_of(loc: Loc, kind: str) -> str:
    dom = (loc.arg or "").split("/", 1)[0]
    if not DOMAIN.match(dom):
        raise KnobError(f"{loc.key}: write '{kind}:DOMAIN' with the libvirt domain name (letters, digits, '_.+-')")
    return dom


def find_interface(root: ET.Element, selector: str | None) -> ET.Element:
    ifaces = root.findall("./devices/interface")
    if not ifaces:
        raise KnobError("the domain has no <interface>")
    if selector is None:
        return ifaces[0]
    if selector.isdigit():
        if int(selector) >= len(ifaces):
            raise KnobError(f"interface index {selector}: the domain has {len(ifaces)} interface(s)")
        return ifaces[int(selector)]
    for i in ifaces:
        mac = i.find("mac")
        if mac is not None and mac.get("address", "").lower() == selector.lower():
            return i
    raise KnobError(f"no interface with MAC {selector}")


def queues_in(xml: str, selector: str | None) -> int:
    iface = find_interface(ET.fromstring(xml), selector)
    drv = iface.find("driver")
    q = drv.get("queues") if drv is not None else None
    return int(q) if q and q.isdigit() else 1


def set_queues(xml: str, selector: str | None, n: int) -> str:
    """The domain XML with queues=n on the chosen interface (n == 1: attribute removed)."""
    root = ET.fromstring(xml)
    iface = find_interface(root, selector)
    model = iface.find("model")
    if model is None or model.get("type") != "virtio":
        raise KnobError(f"the interface is not virtio ({model.get('type') if model is not None else 'no model'}); multiqueue needs virtio")
    drv = iface.find("driver")
    if drv is None:
        if n == 1:
            return xml
        drv = ET.SubElement(iface, "driver", {"name": "vhost"})
    if n > 1:
        drv.set("queues", str(n))
    else:
        drv.attrib.pop("queues", None)
    return ET.tostring(root, encoding="unicode")


def vcpu_count(xml: str) -> int:
    v = ET.fromstring(xml).find("vcpu")
    return int(v.text) if v is not None and v.text and v.text.strip().isdigit() else 1


def domstate(ex: Host, dom: str, key: str) -> str:
    out = run_ok(ex, ["virsh", "domstate", dom], f"{key}: virsh domstate").strip()
    return out.splitlines()[0].strip() if out else "unknown"


def wait_state(ex: Host, dom: str, key: str, want: str, timeout: float, poll: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if domstate(ex, dom, key) == want:
            return
        time.sleep(poll)
    raise KnobError(f"{key}: domain {dom} is not '{want}' after {timeout:.0f}s; check it (virsh domstate {dom})")


class LibvirtQueues(Kind):
    name = "libvirt_queues"
    takes_arg, example_arg = "required", "myvm"
    host_wide = True

    def _sel(self, loc: Loc) -> tuple[str, str | None]:
        dom = domain_of(loc, self.name)
        sel = (loc.arg or "").split("/", 1)[1] if "/" in (loc.arg or "") else None
        if sel is not None and not (sel.isdigit() or MAC.match(sel)):
            raise KnobError(f"{loc.key}: after '/' give a MAC address or an interface index, got {sel!r}")
        return dom, sel

    def parse(self, loc: Loc, raw: Any) -> int:
        self._sel(loc)
        return whole(loc, raw, 1, 256)

    def _xml(self, ex: Host, loc: Loc, inactive: bool = False) -> str:
        dom, _ = self._sel(loc)
        return run_ok(ex, ["virsh", "dumpxml", *(["--inactive"] if inactive else []), dom], f"{loc.key}: virsh dumpxml")

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        xml = self._xml(ex, loc)
        try:
            set_queues(xml, self._sel(loc)[1], int(value))
        except KnobError as e:
            raise KnobError(f"{loc.key}: {e}") from None
        if int(value) > vcpu_count(xml):
            raise KnobError(f"{loc.key}: {value} queues for a guest with {vcpu_count(xml)} vCPUs; use at most one per vCPU")

    def read(self, ex: Host, loc: Loc) -> int:
        try:
            return queues_in(self._xml(ex, loc), self._sel(loc)[1])
        except KnobError as e:
            raise KnobError(f"{loc.key}: {e}") from None

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        dom, sel = self._sel(loc)
        try:
            new = set_queues(self._xml(ex, loc, inactive=True), sel, int(value))
        except KnobError as e:
            raise KnobError(f"{loc.key}: {e}") from None
        path = run_ok(ex, ["mktemp", "-t", "nettune-libvirt.XXXXXX"], f"{loc.key}: mktemp").strip()
        try:
            ex.write_text(path, new)
            run_ok(ex, ["virsh", "define", path], f"{loc.key}: virsh define")
        finally:
            ex.run(["rm", "-f", path])
        self.restart(ex, loc, dom)

    def restart(self, ex: Host, loc: Loc, dom: str, timeout: float = RESTART_TIMEOUT, poll: float = 2.0) -> None:
        """Shut down and start a running guest so its new definition applies."""
        if domstate(ex, dom, loc.key) != "running":
            return
        run_ok(ex, ["virsh", "shutdown", dom], f"{loc.key}: virsh shutdown")
        wait_state(ex, dom, loc.key, "shut off", timeout, poll)
        run_ok(ex, ["virsh", "start", dom], f"{loc.key}: virsh start")
        wait_state(ex, dom, loc.key, "running", timeout, poll)

    def same(self, a: Any, b: Any) -> bool:
        return int(a) == int(b)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        dom, _ = self._sel(loc)
        return [f"virsh edit {dom}  # <driver name='vhost' queues='{value}'/> in the <interface>", f"virsh shutdown {dom} && virsh start {dom}"]

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "libvirt_queues", '"libvirt_queues:DOMAIN[/MAC]" = N', "hypervisor", "virtio-net queues of a libvirt guest (<driver name='vhost' queues='N'/>)",
            "1", "<= vCPUs", "guest shutdown + start (live change refused)", "MSI vectors; 64 KiB per queue; the guest restarts", "n/a",
        )]
