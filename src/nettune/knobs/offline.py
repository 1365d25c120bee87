"""Every check of a study's knobs that needs no connection, in one place: run when the
study file is read (plan/study_file.py), so `nettune run --dry-run`, `nettune run` and
every other command that loads the file refuse exactly the same things, before anything
is created, connected or changed. The run's precheck (precheck.py) then checks the rest
against the hosts themselves.

For every point and every knob:
  - the key (keys.parse_key: the kind, its ARG and device, a sysctl's denylist)
  - the value, as the kind parses it (types, ranges, value syntax: a cmdline value with
    `;` or a space, pve_queues = 128 against 1..64, a tuned profile that reads as an option)
  - what the kind checks of the value at this point without a host (Kind.check_offline:
    channels against the lab's queues)
  - where it goes: a hypervisor kind (pve_queues, libvirt_queues, libvirt_vcpupin) only on
    hosts named in [knobs.hosts] with role = "hypervisor", and only on a VM that is one of
    the study's hosts (its `vmid` or `domain`); an interface knob only on hosts whose
    interface is known (ssh: `interface`, or KIND@DEV)
  - what it disrupts (Kind.disruption): a reboot, a VM restart or a link reset only on a
    host that allows it (allow_reboot, allow_vm_restart, allow_link_reset; the target
    spec's disruption_refusal: this machine is never rebooted).
Each refusal is one SpecError naming the file, the knob's line and the fix.
"""
from __future__ import annotations

from typing import Any

from ..plan.points import ResolvedPoint
from ..studyfile.models import Study
from ..targets import target_kind
from .base import KnobError, Loc
from .items import SpecLocator
from .keys import knob_items, parse_key
from .registry import KINDS


def check_offline(study: Study, resolved: list[ResolvedPoint], text: str = "", file: str = "<study>") -> None:
    """Refuse (SpecError naming the knob) anything about the study's knobs that can be
    known wrong without a connection. Checks each distinct (key, value, hosts) once."""
    if study.knobs is None:
        return
    where = SpecLocator(file, text)
    seen: set[str] = set()
    for rp in resolved:
        knobs, hosts_map = knob_items(rp.extra.get("knobs"))
        for key, raw in knobs.items():
            sig = repr((key, raw, hosts_map.get(key), rp.target.queues))
            if sig in seen:
                continue
            seen.add(sig)
            try:
                _one(study, rp, key, raw, hosts_map, where)
            except KnobError as e:
                at = f" (at point {rp.point.label()})" if len(resolved) > 1 else ""
                raise where.error(key, f"{e}{at}") from None


def _one(study: Study, rp: ResolvedPoint, key: str, raw: Any, hosts_map: dict[str, list[str]], where: SpecLocator) -> None:
    try:
        kk = parse_key(key)
    except ValueError as e:
        raise KnobError(str(e)) from None
    kind = KINDS[kk.kind]
    loc, value = kind.split(Loc(key, kk.kind, kk.arg, kk.device), kind.parse(Loc(key, kk.kind, kk.arg, kk.device), raw))
    kind.check_offline(loc, value, rp.target.queues)
    spec = study.target
    written = key in hosts_map and key in ((study.knobs.hosts if study.knobs is not None else {}) or {})
    names = list(hosts_map.get(key) or list(spec.hosts))
    affected = names
    if kind.vm_field:
        affected = [_vm_host(study, kind.vm_field, kind.vm_name(loc), key, written, names)]
    if kind.needs_device and not loc.device:
        for h in names:
            if not target_kind(study).knob_os(study, h)[1]:
                raise KnobError(f"host {h} has no default interface: name one in its host table (interface = \"eth0\") "
                                f"or in the key ('{key}@eth0')")
    d = kind.disruption(loc)
    if d is not None:
        why = spec.disruption_refusal(d.what, d.opt_in, tuple(affected))
        if why:
            raise KnobError(f"{key} = {kind.show(value)}: {why}")


def _vm_host(study: Study, field: str, vm: str, key: str, written: bool, names: list[str]) -> str:
    """The study host that is the VM a hypervisor knob acts on; KnobError when the knob is
    not given to hypervisors alone, or the VM is not one of the study's hosts."""
    spec = study.target
    hv = list(spec.hypervisors)
    if not written:
        example = f'"{key}" = ["{hv[0]}"]' if hv else f'"{key}" = ["pve"]'
        raise KnobError(f"runs on the hypervisor, which [knobs.hosts] must name: add {example} under [knobs.hosts]"
                        + ("" if hv else ' (and the hypervisor to [target.hosts] with role = "hypervisor")'))
    guests = [h for h in names if h not in hv]
    if guests:
        raise KnobError(f"runs on a hypervisor, and {guests[0]} is not one (a host with role = \"hypervisor\": "
                        f"{', '.join(hv) or 'none in this study'}); give it to the hypervisor that runs the VM, not to the guest")
    host = spec.vm_host(field, vm)
    if host is None:
        raise KnobError(f"acts on VM {vm}, which is not one of the study's hosts: add {field} = "
                        f"{vm if field == 'vmid' else chr(34) + vm + chr(34)} to the [target.hosts] table of the host that is that VM "
                        "(nettune changes only VMs the study measures)")
    return host
