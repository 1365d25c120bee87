"""libvirt_vcpupin:DOMAIN = "0:2;1:3;2:4-5"  (pin a guest's vCPUs to host CPUs; study C)

Runs on the KVM host: [knobs.hosts] "libvirt_vcpupin:fedora-vm" = ["kvmhost"].
The value is VCPU:CPULIST pairs separated by ';' (a CPU list is the kernel's format,
'2', '4-5', '0-3,8'); vCPUs not named keep their pinning.

read:    `virsh vcpupin DOMAIN`: the whole map, e.g. "0:0-31;1:0-31" (every vCPU).
apply:   `virsh vcpupin DOMAIN VCPU CPULIST --config` for each pair, plus `--live`
         when the guest runs: no restart needed.
restore: the whole saved map, the same way.
Not verified on a real libvirt host: tested against `virsh vcpupin` output in both
the table format (libvirt >= 5) and the older "VCPU: CPU Affinity" one.
"""
from __future__ import annotations

import re
from typing import Any

from ..targets.base import Host
from .base import Ctx, Kind, KnobError, Loc, catalog_row, cpu_list, cpu_list_text, run_ok
from .libvirt_queues import domain_of, domstate


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


class LibvirtVcpupin(Kind):
    name = "libvirt_vcpupin"
    takes_arg, example_arg = "required", "myvm"
    host_wide = True

    def parse(self, loc: Loc, raw: Any) -> str:
        domain_of(loc, self.name)
        return pins_text(parse_value(loc.key, raw))

    def read(self, ex: Host, loc: Loc) -> str:
        dom = domain_of(loc, self.name)
        pins = parse_pins(run_ok(ex, ["virsh", "vcpupin", dom], f"{loc.key}: virsh vcpupin"))
        if not pins:
            raise KnobError(f"{loc.key}: cannot read the vCPU pinning of {dom}")
        return pins_text(pins)

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        have = parse_value(loc.key, self.read(ex, loc))
        for vcpu, cpus in parse_value(loc.key, value).items():
            if vcpu not in have:
                raise KnobError(f"{loc.key}: the guest has no vCPU {vcpu} (it has {len(have)})")
            too_high = [c for c in cpu_list(cpus) if c >= ctx.cpus] if ctx.cpus > 1 else []
            if too_high:
                ctx.notes.append(f"{loc.key}: CPU {too_high[0]} is beyond this machine's count; check it exists on the hypervisor")

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        dom = domain_of(loc, self.name)
        live = ["--live"] if domstate(ex, dom, loc.key) == "running" else []
        for vcpu, cpus in parse_value(loc.key, value).items():
            run_ok(ex, ["virsh", "vcpupin", dom, str(vcpu), cpus, "--config", *live], f"{loc.key}: virsh vcpupin")

    def same(self, a: Any, b: Any) -> bool:
        return parse_value("", a) == parse_value("", b)

    def looks_like(self, current: Any, new: Any) -> bool:
        cur = parse_value("", current)
        return all(cur.get(v) == c for v, c in parse_value("", new).items())

    def commands(self, loc: Loc, value: Any) -> list[str]:
        dom = domain_of(loc, self.name)
        return [f"virsh vcpupin {dom} {v} {c} --live --config" for v, c in parse_value(loc.key, value).items()]

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "libvirt_vcpupin", '"libvirt_vcpupin:DOMAIN" = "0:2;1:3"', "hypervisor", "pin a libvirt guest's vCPUs to host CPUs (virsh vcpupin)",
            "unpinned", "NIC-local cores", "no", "save the old map first (nettune does)", "n/a",
        )]
