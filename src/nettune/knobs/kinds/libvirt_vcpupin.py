"""libvirt_vcpupin:DOMAIN = "0:2;1:3;2:4-5"  (pin a guest's vCPUs to host CPUs; study C)

Runs on the KVM host: [knobs.hosts] "libvirt_vcpupin:fedora-vm" = ["kvmhost"].
The value is VCPU:CPULIST pairs separated by ';' (a CPU list is the kernel's format,
'2', '4-5', '0-3,8'); vCPUs not named keep their pinning.

read:    `virsh vcpupin DOMAIN`: the whole map, e.g. "0:0-31;1:0-31" (every vCPU), and
         which vCPUs the persistent definition pins (<cputune><vcpupin vcpu= cpuset=/>
         of `virsh dumpxml --inactive`): the journal keeps both.
apply:   `virsh vcpupin DOMAIN VCPU CPULIST --config` for each pair, plus `--live`
         when the guest runs: no restart needed.
restore: only the vCPUs whose pinning differs from the saved one. A vCPU that was
         pinned gets its old CPU list back (`virsh vcpupin ... --config`, `--live`);
         one that was not pinned is unpinned again: since libvirt 1.3 pinning to every
         CPU no longer removes a pin (it writes <vcpupin cpuset='0-N'/>), so its
         <vcpupin> element is removed from the persistent definition (`virsh define`
         of the document with that one line gone, libvirt_xml.py; an emptied <cputune>
         goes too) and the running guest gets its old affinity back with `--live` (its
         live definition shows that pin until the guest next starts; there is no API
         to unpin a running vCPU).
Run on a real libvirtd (9.0, the VM lab's, QEMU under TCG: tests/test_vmlab.py): the map,
the persistent <vcpupin> and the QEMU vCPU threads' affinity set and put back. Also tested
against `virsh vcpupin` output in both the table format (libvirt >= 5) and the older
"VCPU: CPU Affinity" one, and domain XML from libvirt's test suite
(tests/fixtures/hypervisor/real/libvirt).
"""
from __future__ import annotations

import re
from typing import Any

from ...targets.base import Host
from .. import libvirt_xml as lx
from ..base import Ctx, Kind, KnobError, Loc, catalog_row, check_plain, cpu_list, cpu_list_text, run_ok
from .libvirt_queues import define_xml, domain_of, domstate, macs_in

CPUTUNE = ("domain", "cputune")


def parse_pins(text: str) -> dict[int, str]:
    """`virsh vcpupin DOMAIN` output -> {vcpu: normalised cpu list}."""
    out: dict[int, str] = {}
    for m in re.finditer(r"^\s*(\d+):?\s+([0-9][0-9,\-]*)\s*$", text, re.M):
        out[int(m.group(1))] = cpu_list_text(cpu_list(m.group(2)))
    return out


def parse_value(key: str, raw: Any) -> dict[int, str]:
    """'0:2;1:4-5' -> {0: '2', 1: '4-5'}; KnobError naming the key otherwise."""
    out: dict[int, str] = {}
    for part in str(raw).replace(" ", "").split(";"):
        if not part:
            continue
        vcpu, sep, cpus = part.partition(":")
        try:
            if not sep or not vcpu.isdigit():
                raise ValueError(part)
            out[int(vcpu)] = cpu_list_text(cpu_list(cpus))
            if not out[int(vcpu)]:
                raise ValueError(part)
        except ValueError:
            raise KnobError(f"{key}: {part!r} is not VCPU:CPULIST (e.g. '0:2;1:3' or '0:4-5')") from None
    if not out:
        raise KnobError(f"{key}: empty pinning; write VCPU:CPULIST pairs separated by ';'")
    return out


def pins_text(pins: dict[int, str]) -> str:
    return ";".join(f"{v}:{c}" for v, c in sorted(pins.items()))


def map_of(value: Any) -> str:
    """The VCPU:CPULIST map of a value: the study's string or a read-back record."""
    return str(value["map"]) if isinstance(value, dict) else str(value)


def config_pins(xml: str) -> dict[str, str]:
    """{vcpu: cpuset} of the <vcpupin> elements of a (persistent) domain definition."""
    try:
        els = lx.elements(xml)
    except lx.XmlEditError as e:
        raise KnobError(f"the domain XML is {e}") from None
    out: dict[str, str] = {}
    for tune in lx.find(els, CPUTUNE):
        for pin in lx.children(els, tune, "vcpupin"):
            out[pin.attrs.get("vcpu", "")] = pin.attrs.get("cpuset", "")
    return out


def unpin(xml: str, vcpus: set[str]) -> str:
    """The definition without the <vcpupin> elements of `vcpus` (each with its line), and
    without <cputune> when nothing is left in it; everything else byte for byte."""
    while True:
        els = lx.elements(xml)
        tune = next(iter(lx.find(els, CPUTUNE)), None)
        if tune is None:
            return xml
        pin = next((p for p in lx.children(els, tune, "vcpupin") if p.attrs.get("vcpu") in vcpus), None)
        if pin is None:
            return xml
        xml = lx.remove(xml, pin)
        tune = lx.find(lx.elements(xml), CPUTUNE)[0]
        inner = xml[tune.tag_end:tune.end].rsplit("</", 1)[0]
        if not tune.children and not tune.empty and not inner.strip():  # libvirt writes no empty <cputune>
            xml = lx.remove(xml, tune)


class LibvirtVcpupin(Kind):
    name = "libvirt_vcpupin"
    takes_arg, example_arg = "required", "myvm"
    host_wide = True
    vm_field = "domain"  # no restart (--live), but the guest is still one of the study's hosts

    def vm_name(self, loc: Loc) -> str:
        return domain_of(loc, self.name)

    def parse(self, loc: Loc, raw: Any) -> str:
        domain_of(loc, self.name)
        return pins_text(parse_value(loc.key, raw))

    def check_loc(self, loc: Loc) -> None:
        domain_of(loc, self.name)

    def check_reading(self, loc: Loc, value: Any) -> None:
        """{"map", "pinned": {vCPU: cpuset}}: numbers and cpusets only (restore passes them to virsh)."""
        check_plain(loc, value)
        if not isinstance(value, dict):
            self.parse(loc, value)
            return
        parse_value(loc.key, map_of(value))
        pinned = value.get("pinned") or {}
        if set(value) - {"map", "pinned"} or not isinstance(pinned, dict) or \
                not all(str(v).isdigit() and re.fullmatch(r"[0-9,^-]{1,256}", str(c)) for v, c in pinned.items()):
            raise KnobError(f"{loc.key}: the journaled reading is not a vCPU pinning nettune reads")

    def _map(self, ex: Host, loc: Loc) -> dict[int, str]:
        dom = domain_of(loc, self.name)
        pins = parse_pins(run_ok(ex, ["virsh", "vcpupin", dom], f"{loc.key}: virsh vcpupin"))
        if not pins:
            raise KnobError(f"{loc.key}: cannot read the vCPU pinning of {dom}")
        return pins

    def _inactive(self, ex: Host, loc: Loc) -> str:
        dom = domain_of(loc, self.name)
        return run_ok(ex, ["virsh", "dumpxml", "--inactive", dom], f"{loc.key}: virsh dumpxml")

    def vm_macs(self, ex: Host, loc: Loc) -> list[str]:
        """Every NIC of the domain (a pinning acts on the whole guest: its study host's
        interface may be any of them)."""
        dom = domain_of(loc, self.name)
        try:
            return macs_in(run_ok(ex, ["virsh", "dumpxml", dom], f"{loc.key}: virsh dumpxml"), None, every=True)
        except KnobError as e:
            raise KnobError(f"{loc.key}: {e}") from None

    def read(self, ex: Host, loc: Loc) -> dict[str, Any]:
        """{"map": every vCPU's affinity now, "pinned": {vcpu: cpuset} of the persistent
        definition's <vcpupin> elements}."""
        inactive = self._inactive(ex, loc)
        try:
            pinned = config_pins(inactive)
        except KnobError as e:
            raise KnobError(f"{loc.key}: {e}") from None
        return {"map": pins_text(self._map(ex, loc)), "pinned": pinned}

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        have = self._map(ex, loc)
        for vcpu, cpus in parse_value(loc.key, value).items():
            if vcpu not in have:
                raise KnobError(f"{loc.key}: the guest has no vCPU {vcpu} (it has {len(have)})")
            too_high = [c for c in cpu_list(cpus) if c >= ctx.cpus] if ctx.cpus > 1 else []
            if too_high:
                ctx.notes.append(f"{loc.key}: CPU {too_high[0]} is beyond this machine's count; check it exists on the hypervisor")

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        dom = domain_of(loc, self.name)
        live = ["--live"] if domstate(ex, dom, loc.key) == "running" else []
        for vcpu, cpus in parse_value(loc.key, map_of(value)).items():
            run_ok(ex, ["virsh", "vcpupin", dom, str(vcpu), cpus, "--config", *live], f"{loc.key}: virsh vcpupin")

    def restore(self, ex: Host, loc: Loc, original: Any) -> None:
        if not isinstance(original, dict):  # a journal from before the pins were kept
            self.apply(ex, loc, original)
            return
        dom = domain_of(loc, self.name)
        want_map = parse_value(loc.key, map_of(original))
        want_pins: dict[str, str] = dict(original.get("pinned") or {})
        xml = self._inactive(ex, loc)
        now_pins = config_pins(xml)
        # vCPUs pinned only by nettune: their <vcpupin> line goes (pinning to all CPUs would keep one)
        extra = {v for v in now_pins if v not in want_pins}
        if extra:
            define_xml(ex, loc.key, unpin(xml, extra))
        for v, cpus in sorted(want_pins.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else -1):
            if now_pins.get(v) is None or _cpus(now_pins[v]) != _cpus(cpus):
                run_ok(ex, ["virsh", "vcpupin", dom, v, cpus, "--config"], f"{loc.key}: virsh vcpupin")
        if domstate(ex, dom, loc.key) == "running":
            live = self._map(ex, loc)
            for vcpu, cpus in sorted(want_map.items()):
                if live.get(vcpu) != cpus:
                    run_ok(ex, ["virsh", "vcpupin", dom, str(vcpu), cpus, "--live"], f"{loc.key}: virsh vcpupin")

    def same(self, a: Any, b: Any) -> bool:
        if isinstance(a, dict) and isinstance(b, dict):  # two readings: the persistent pins too
            return parse_value("", map_of(a)) == parse_value("", map_of(b)) and _norm_pins(a) == _norm_pins(b)
        return parse_value("", map_of(a)) == parse_value("", map_of(b))

    def looks_like(self, current: Any, new: Any) -> bool:
        cur = parse_value("", map_of(current))
        return all(cur.get(v) == c for v, c in parse_value("", map_of(new)).items())

    def show(self, value: Any) -> str:
        return map_of(value)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        dom = domain_of(loc, self.name)
        if isinstance(value, dict):  # an original: unpinned vCPUs lose their <vcpupin> line
            pinned = value.get("pinned") or {}
            out = [f"virsh vcpupin {dom} {v} {c} --live --config" for v, c in parse_value(loc.key, map_of(value)).items() if str(v) in pinned]
            free = [str(v) for v in parse_value(loc.key, map_of(value)) if str(v) not in pinned]
            if free:
                out.append(f"virsh edit {dom}  # remove <vcpupin vcpu='N'/> for vCPU {', '.join(free)} (unpinned before)")
            return out
        return [f"virsh vcpupin {dom} {v} {c} --live --config" for v, c in parse_value(loc.key, value).items()]

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "libvirt_vcpupin", '"libvirt_vcpupin:DOMAIN" = "0:2;1:3"', "hypervisor", "pin a libvirt guest's vCPUs to host CPUs (virsh vcpupin)",
            "unpinned", "NIC-local cores", "no", "save the old map first (nettune does)", "n/a",
        )]


def _cpus(text: str) -> str:
    """A cpuset in the kernel's form; as written when it is not a plain list ('0-3,^2')."""
    try:
        return cpu_list_text(cpu_list(text))
    except ValueError:
        return str(text)


def _norm_pins(value: dict[str, Any]) -> dict[str, str]:
    return {str(v): _cpus(c) for v, c in (value.get("pinned") or {}).items()}
