"""libvirt_queues:DOMAIN[/MAC|/INDEX] = N  (virtio-net queues of a libvirt guest; study C)

Runs on the KVM host: [knobs.hosts] "libvirt_queues:fedora-vm" = ["kvmhost"].

read:  `virsh dumpxml DOMAIN` (the running definition): the interface's
       <driver queues='N'/>; no queues attribute means one queue pair. With it, the
       <driver> start tag of the persistent definition (`virsh dumpxml --inactive`), or
       none: that is what the journal keeps, so a restore puts back exactly that.
apply: libvirt refuses to change driver attributes of a live NIC ("cannot modify virtio
       network device driver attributes"), so: `virsh dumpxml --inactive`, change only
       the queues attribute of that interface's <driver> in place (libvirt_xml.py: the
       rest of the document stays byte for byte; an interface without <driver> gets
       <driver queues='N'/>, libvirt's own form, which forces no backend), `virsh define`
       it (through a mktemp file), then if the guest runs: `virsh shutdown` (sent again
       every 15 s: a guest still booting drops the ACPI request), wait for "shut off",
       `virsh start`, wait for "running". A guest that does not shut down
       in time is left alone (never destroyed) and the knob fails with that reason. The
       guest's ssh connection then reconnects (the ssh target retries for
       reconnect_timeout seconds).
restore: the saved <driver> start tag back in place; absent before: the element nettune
       added is removed (a <driver> that had other attributes only loses queues). A guest
       that was running and is shut off (an apply killed between its shutdown and its
       start) is started again.
The interface is the first <interface> by default, or the one with that MAC address, or
the INDEX-th (0-based). Range 1..256 (libvirt's limit); at most the guest's vCPUs.
Run on a real libvirtd (9.0, the VM lab's, QEMU under TCG: tests/test_vmlab.py): apply and
restore per point, the guest's own ethtool seeing the queues, the inactive definition back
byte for byte, a kill -9 mid-restart restored; also tested on domain XML from libvirt's own
test suite (tests/fixtures/hypervisor/real/libvirt, SOURCES.md) through a recorded-command fake.
"""
from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET  # reading only; edits are libvirt_xml's
from typing import Any

from ...targets.base import Host
from .. import libvirt_xml as lx
from ..base import VM_RESTART, Ctx, Disruption, Kind, KnobError, Loc, catalog_row, check_plain, run_ok, whole

DOMAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}$")  # never read as an option (leading "-")
DRIVER_TAG = re.compile(r"""<driver(\s+[A-Za-z_][\w:.-]*\s*=\s*("[^"<>]*"|'[^'<>]*'))*\s*/?>""")
MAC = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$")
RESTART_TIMEOUT = 300.0
# what `virsh domstate` prints (virshDomainStateToString)
DOMAIN_STATES = ("no state", "running", "idle", "paused", "in shutdown", "shut off", "crashed", "pmsuspended", "unknown")
SHUTDOWN_RESEND = 15.0  # seconds between `virsh shutdown` requests while waiting for "shut off"
IFACE = ("domain", "devices", "interface")
# <driver> attributes libvirt writes after queues (virDomainNetDriverAttributesFormat)
AFTER_QUEUES = ("rx_queue_size", "tx_queue_size", "iommu", "ats", "packed", "page_per_vq", "rss", "rss_hash_report")


def domain_of(loc: Loc, kind: str) -> str:
    dom = (loc.arg or "").split("/", 1)[0]
    if not DOMAIN.match(dom):
        raise KnobError(f"{loc.key}: write '{kind}:DOMAIN' with the libvirt domain name (letters, digits, '_.+-')")
    return dom


def _parse(xml: str) -> list[lx.Element]:
    try:
        return lx.elements(xml)
    except lx.XmlEditError as e:
        raise KnobError(f"the domain XML is {e}") from None


def find_interface(els: list[lx.Element], selector: str | None) -> lx.Element:
    ifaces = lx.find(els, IFACE)
    if not ifaces:
        raise KnobError("the domain has no <interface>")
    if selector is None:
        return ifaces[0]
    if selector.isdigit():
        if int(selector) >= len(ifaces):
            raise KnobError(f"interface index {selector}: the domain has {len(ifaces)} interface(s)")
        return ifaces[int(selector)]
    for i in ifaces:
        mac = lx.child(els, i, "mac")
        if mac is not None and mac.attrs.get("address", "").lower() == selector.lower():
            return i
    raise KnobError(f"no interface with MAC {selector}")


def macs_in(xml: str, selector: str | None, every: bool = False) -> list[str]:
    """The <mac address=> of the chosen interface (every: of each interface) of a domain XML."""
    els = _parse(xml)
    ifaces = lx.find(els, IFACE) if every else [find_interface(els, selector)]
    macs = [lx.child(els, i, "mac") for i in ifaces]
    return [m.attrs["address"] for m in macs if m is not None and MAC.match(m.attrs.get("address", ""))]


def queues_in(xml: str, selector: str | None) -> int:
    els = _parse(xml)
    drv = lx.child(els, find_interface(els, selector), "driver")
    q = drv.attrs.get("queues") if drv is not None else None
    return int(q) if q and q.isdigit() else 1


def driver_tag(xml: str, selector: str | None) -> str | None:
    """The interface's <driver> start tag as written, or None when it has no <driver>."""
    els = _parse(xml)
    drv = lx.child(els, find_interface(els, selector), "driver")
    return lx.start_tag(xml, drv) if drv is not None else None


def _virtio(els: list[lx.Element], iface: lx.Element) -> lx.Element:
    model = lx.child(els, iface, "model")
    mtype = model.attrs.get("type", "") if model is not None else ""
    if not mtype.startswith("virtio"):  # virtio, virtio-transitional, virtio-non-transitional
        raise KnobError(f"the interface is not virtio ({mtype or 'no model'}); multiqueue needs virtio")
    assert model is not None
    return model


def set_queues(xml: str, selector: str | None, n: int) -> str:
    """The domain XML with queues=n on the chosen interface's <driver>, edited in place
    (n == 1: the attribute removed, and a <driver> left with nothing in it removed)."""
    els = _parse(xml)
    iface = find_interface(els, selector)
    model = _virtio(els, iface)
    drv = lx.child(els, iface, "driver")
    if drv is None:
        if n == 1:
            return xml
        return lx.insert_after(xml, model, f"<driver queues={lx.quote_of(lx.start_tag(xml, model))}{n}{lx.quote_of(lx.start_tag(xml, model))}/>")
    tag = lx.start_tag(xml, drv)
    if n > 1:
        return lx.replace_tag(xml, drv, lx.set_attr(tag, "queues", str(n), AFTER_QUEUES))
    tag = lx.del_attr(tag, "queues")
    if drv.empty and not lx.attr_names(tag):
        return lx.remove(xml, drv)
    return lx.replace_tag(xml, drv, tag)


def put_driver(xml: str, selector: str | None, tag: str | None) -> str:
    """The domain XML with the interface's <driver> start tag put back to `tag` as read
    before nettune's change (None: there was no <driver>)."""
    els = _parse(xml)
    iface = find_interface(els, selector)
    drv = lx.child(els, iface, "driver")
    if tag is None:
        if drv is None:
            return xml
        cur = lx.start_tag(xml, drv)
        if drv.empty and set(lx.attr_names(cur)) <= {"queues"}:
            return lx.remove(xml, drv)  # the element nettune added
        return lx.replace_tag(xml, drv, lx.del_attr(cur, "queues"))
    if drv is None:
        return lx.insert_after(xml, _virtio(els, iface), tag)
    if drv.empty != tag.rstrip().endswith("/>"):
        raise KnobError(f"the interface's <driver> changed shape since nettune read it; put back {tag} by hand (virsh edit)")
    return lx.replace_tag(xml, drv, tag)


def queues_of(value: Any) -> int:
    """The queue count of a value: a number (the study's) or a read-back record."""
    return int(value["queues"]) if isinstance(value, dict) else int(value)


def vcpu_count(xml: str) -> int:
    v = ET.fromstring(xml).find("vcpu")
    return int(v.text) if v is not None and v.text and v.text.strip().isdigit() else 1


def domstate(ex: Host, dom: str, key: str) -> str:
    out = run_ok(ex, ["virsh", "domstate", dom], f"{key}: virsh domstate").strip()
    return out.splitlines()[0].strip() if out else "unknown"


def wait_state(ex: Host, dom: str, key: str, want: str, timeout: float, poll: float, resend: list[str] | None = None) -> None:
    """Poll until the domain is in state `want`. resend: a request the guest may have
    missed, sent again every SHUTDOWN_RESEND seconds (`virsh shutdown` is an ACPI button
    press: a guest still booting, before its ACPI daemon runs, drops it; seen on the VM
    lab when a restore restarted a guest seconds after a point had)."""
    end = time.monotonic() + timeout
    again = time.monotonic() + SHUTDOWN_RESEND
    while time.monotonic() < end:
        if domstate(ex, dom, key) == want:
            return
        if resend and time.monotonic() >= again:
            ex.run(resend, timeout=30)  # a refusal (the guest went off meanwhile) shows in the next domstate
            again = time.monotonic() + SHUTDOWN_RESEND
        time.sleep(poll)
    raise KnobError(f"{key}: domain {dom} is not '{want}' after {timeout:.0f}s; check it (virsh domstate {dom})")



def define_xml(ex: Host, key: str, xml: str) -> None:
    """`virsh define` a domain's XML through a temporary file on the host (removed after)."""
    path = run_ok(ex, ["mktemp", "-t", "nettune-libvirt.XXXXXX"], f"{key}: mktemp").strip()
    try:
        ex.write_text(path, xml)
        run_ok(ex, ["virsh", "define", path], f"{key}: virsh define")
    finally:
        ex.run(["rm", "-f", path])

class LibvirtQueues(Kind):
    name = "libvirt_queues"
    takes_arg, example_arg = "required", "myvm"
    host_wide = True
    vm_field = "domain"  # the study host that is this guest says domain = "myvm"

    def vm_name(self, loc: Loc) -> str:
        return self._sel(loc)[0]

    def disruption(self, loc: Loc) -> Disruption:
        dom = self._sel(loc)[0]
        return Disruption(VM_RESTART, "when the guest runs (libvirt refuses the change live)",
                          f"virsh define, virsh shutdown {dom}, virsh start {dom}: the guest shuts down and starts again")

    def restore_commands(self, loc: Loc) -> list[str]:
        dom = self._sel(loc)[0]
        return [f"virsh define <{dom}'s XML with the <driver> start tag as read before>", f"virsh shutdown {dom} && virsh start {dom}"]

    def _sel(self, loc: Loc) -> tuple[str, str | None]:
        dom = domain_of(loc, self.name)
        sel = (loc.arg or "").split("/", 1)[1] if "/" in (loc.arg or "") else None
        if sel is not None and not (sel.isdigit() or MAC.match(sel)):
            raise KnobError(f"{loc.key}: after '/' give a MAC address or an interface index, got {sel!r}")
        return dom, sel

    def parse(self, loc: Loc, raw: Any) -> int:
        self._sel(loc)
        return whole(loc, raw, 1, 256)

    def check_loc(self, loc: Loc) -> None:
        self._sel(loc)  # DOMAIN[/MAC|/INDEX]: its own form (a '/' in it is not a path)

    def check_reading(self, loc: Loc, value: Any) -> None:
        """{"queues", "driver": the <driver> start tag restore writes back, "state": one of
        virsh's domain states}: a tag with attributes only, so a journal cannot slip other
        XML into the guest's definition."""
        check_plain(loc, value)
        if not isinstance(value, dict):
            self.parse(loc, value)
            return
        tag = value.get("driver")
        if set(value) - {"queues", "driver", "state"} or (tag is not None and not DRIVER_TAG.fullmatch(str(tag))):
            raise KnobError(f"{loc.key}: the journaled reading is not a <driver> start tag nettune reads")
        if value.get("state") not in (None, *DOMAIN_STATES):
            raise KnobError(f"{loc.key}: the journaled domain state {str(value.get('state'))[:40]!r} is not one virsh reports")
        whole(loc, value.get("queues"), 1, 256)

    def _xml(self, ex: Host, loc: Loc, inactive: bool = False) -> str:
        dom, _ = self._sel(loc)
        return run_ok(ex, ["virsh", "dumpxml", *(["--inactive"] if inactive else []), dom], f"{loc.key}: virsh dumpxml")

    def vm_macs(self, ex: Host, loc: Loc) -> list[str]:
        try:
            return macs_in(self._xml(ex, loc), self._sel(loc)[1])
        except KnobError as e:
            raise KnobError(f"{loc.key}: {e}") from None

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        xml = self._xml(ex, loc)
        try:
            set_queues(xml, self._sel(loc)[1], int(value))
        except KnobError as e:
            raise KnobError(f"{loc.key}: {e}") from None
        if int(value) > vcpu_count(xml):
            raise KnobError(f"{loc.key}: {value} queues for a guest with {vcpu_count(xml)} vCPUs; use at most one per vCPU")

    def read(self, ex: Host, loc: Loc) -> dict[str, Any]:
        """{"queues": in effect, "driver": the persistent <driver> start tag or None,
        "state": the domain's state (a restore starts a guest that was running and that a
        killed apply left shut off between its shutdown and its start)}."""
        sel = self._sel(loc)[1]
        live, inactive = self._xml(ex, loc), self._xml(ex, loc, inactive=True)
        try:
            return {"queues": queues_in(live, sel), "driver": driver_tag(inactive, sel), "state": domstate(ex, self._sel(loc)[0], loc.key)}
        except KnobError as e:
            raise KnobError(f"{loc.key}: {e}") from None

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        sel = self._sel(loc)[1]
        self._define(ex, loc, lambda xml: set_queues(xml, sel, queues_of(value)))

    def restore(self, ex: Host, loc: Loc, original: Any) -> None:
        if not isinstance(original, dict):  # a journal from before the start tag was kept
            self.apply(ex, loc, original)
            return
        sel = self._sel(loc)[1]
        self._define(ex, loc, lambda xml: put_driver(xml, sel, original.get("driver")))
        dom = self._sel(loc)[0]
        if original.get("state") == "running" and domstate(ex, dom, loc.key) == "shut off":
            run_ok(ex, ["virsh", "start", dom], f"{loc.key}: virsh start")  # left off by an apply killed mid-restart
            wait_state(ex, dom, loc.key, "running", RESTART_TIMEOUT, 2.0)

    def _define(self, ex: Host, loc: Loc, edit: Any) -> None:
        """Edit the persistent definition, define it when it changed, restart a running guest."""
        dom, _ = self._sel(loc)
        old = self._xml(ex, loc, inactive=True)
        try:
            new = edit(old)
        except KnobError as e:
            raise KnobError(f"{loc.key}: {e}") from None
        if new != old:
            define_xml(ex, loc.key, new)
        if queues_in(self._xml(ex, loc), self._sel(loc)[1]) != queues_in(new, self._sel(loc)[1]):
            self.restart(ex, loc, dom)

    def restart(self, ex: Host, loc: Loc, dom: str, timeout: float = RESTART_TIMEOUT, poll: float = 2.0) -> None:
        """Shut down and start a running guest so its new definition applies."""
        if domstate(ex, dom, loc.key) != "running":
            return
        run_ok(ex, ["virsh", "shutdown", dom], f"{loc.key}: virsh shutdown")
        wait_state(ex, dom, loc.key, "shut off", timeout, poll, resend=["virsh", "shutdown", dom])
        run_ok(ex, ["virsh", "start", dom], f"{loc.key}: virsh start")
        wait_state(ex, dom, loc.key, "running", timeout, poll)

    def same(self, a: Any, b: Any) -> bool:
        if isinstance(a, dict) and isinstance(b, dict):  # two readings: the start tag too
            return queues_of(a) == queues_of(b) and a.get("driver") == b.get("driver")
        return queues_of(a) == queues_of(b)

    def show(self, value: Any) -> str:
        return str(queues_of(value))

    def commands(self, loc: Loc, value: Any) -> list[str]:
        dom, _ = self._sel(loc)
        if isinstance(value, dict):
            tag = value.get("driver")
            what = f"the <interface>'s <driver> start tag back to {tag}" if tag else "remove the queues attribute (or the <driver queues=.../> element) of the <interface>"
            return [f"virsh edit {dom}  # {what}", f"virsh shutdown {dom} && virsh start {dom}"]
        return [f"virsh edit {dom}  # <driver queues='{value}'/> in the <interface>", f"virsh shutdown {dom} && virsh start {dom}"]

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "libvirt_queues", '"libvirt_queues:DOMAIN[/MAC]" = N', "hypervisor", "virtio-net queues of a libvirt guest (<driver queues='N'/>)",
            "1", "<= vCPUs", "guest shutdown + start (live change refused)", "MSI vectors; 64 KiB per queue; the guest restarts", "n/a",
        )]
