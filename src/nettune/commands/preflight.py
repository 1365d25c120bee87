"""`nettune run FILE --preflight`: the read-only half of a run. It connects to the study's
hosts and reads what the run's own checks read before its first change, then says what the
run would refuse, change, restart or reboot; it changes nothing on any host and writes
no study to any database.

What it reads, in the run's order:
  - each engine's tool on its hosts and its version (run/study.py preflight, as the run);
  - every knob of every point against its host (knobs/precheck.py, as the run: sysctl
    files writable, `qm config VMID` of a pve_queues VM and its vCPUs, `virsh dumpxml`,
    tuned-adm's profiles, /proc/cmdline and the boot files, interface queues...): the
    first refusal is the run's own SpecError;
  - each knob's value in force now (Kind.read), beside the values the study sets: "already
    in force" or "would change A -> B, C";
  - the reboots, VM restarts and link resets along the run's order (the dry run's steps).
It does not run `engine = "auto"`'s ceilings, the doctor, nor the hosts' credentials
(the run makes those): the version check and the knobs' reads are the contract.
"""
from __future__ import annotations

from typing import Any

from ..errors import NettuneError
from ..knobs.base import KnobError
from ..knobs.items import SpecLocator, point_items
from ..knobs.offline import check_offline
from ..knobs.precheck import precheck
from ..plan.points import ResolvedPoint, expand_and_check
from ..plan.run_order import run_order
from ..run.engine_choice import choose_engines
from ..run.study import preflight
from ..studyfile.models import Study
from ..targets import make_target
from ..targets.base import Target
from .dry_run_disruptions import steps


def preflight_report(study: Study, text: str, file: str) -> list[str]:
    """The preflight's lines (see the module doc); SpecError / NettuneError for what the
    run would refuse, naming the file's line."""
    resolved = expand_and_check(study, text, file)
    check_offline(study, resolved, text, file)
    target = make_target(study)  # connects (a lab target builds its namespaces, as the run would)
    try:
        resolved, _choices, notes = choose_engines(resolved, target, None)
        out = [f"{engine}: {version or 'version unknown'} on the study's hosts" for engine, version in preflight(study, resolved, target).items()]
        out += notes
        if study.knobs is not None:
            out += precheck(study, target, resolved, text, file, gate=False)
            out += in_force(target, resolved, SpecLocator(file, text))
            out += vm_ties(study, target, resolved, SpecLocator(file, text))
        order = run_order(study, resolved)
        out += [s.text for s in steps(study, resolved, order)]
        out.append("preflight: nothing was changed on any host")
        return out
    finally:
        target.close()


def in_force(target: Target, resolved: list[ResolvedPoint], where: SpecLocator) -> list[str]:
    """Per host and knob: the value read now, and whether the study would change it."""
    planned: dict[tuple[str, tuple[Any, ...]], list[Any]] = {}
    items: dict[tuple[str, tuple[Any, ...]], Any] = {}
    for rp in resolved:
        for it in point_items(rp, target.hosts, {}, where):
            k = (it.host, it.slot)
            items.setdefault(k, it)
            if not any(it.kind.same(v, it.value) for v in planned.setdefault(k, [])):
                planned[k].append(it.value)
    out: list[str] = []
    lab = sorted({h for h, _slot in items if target.hosts[h].netns})
    if lab:  # their namespaces do not exist yet: the run makes them, with the kernel's defaults
        out.append(f"{', '.join(lab)}: lab hosts, created by the run with this kernel's defaults; their knobs were checked "
                   "in throw-away stand-ins, as the run checks them")
    for k, it in items.items():
        if it.host in lab:
            continue
        try:
            now = it.kind.read(it.place.ex, it.loc)
        except (KnobError, OSError) as e:
            out.append(f"{it.loc.key} on {it.host}: cannot tell its value now ({e})")
            continue
        values = planned[k]
        shown = ", ".join(it.kind.show(v) for v in values)
        if all(it.kind.same(now, v) for v in values):
            out.append(f"{it.loc.key} on {it.host}: {it.kind.show(now)} already in force (nothing to change)")
        else:
            out.append(f"{it.loc.key} on {it.host}: {it.kind.show(now)} now; the run would set {shown}, and put {it.kind.show(now)} back at the end")
    return out


def vm_ties(study: Study, target: Target, resolved: list[ResolvedPoint], where: SpecLocator) -> list[str]:
    """Each VM a hypervisor knob acts on is the study host that names it (vmid / domain):
    the NIC's MAC in the hypervisor's config is the MAC of that host's interface. A
    mismatch is refused (the knob would restart some other machine); what cannot be read
    is said as "cannot tell"."""
    out: list[str] = []
    done: set[tuple[str, str]] = set()
    for rp in resolved:
        for it in point_items(rp, target.hosts, {}, where):
            kind = it.kind
            if not kind.vm_field or (it.host, it.loc.key) in done:
                continue
            done.add((it.host, it.loc.key))
            vm = kind.vm_name(it.loc)
            name = study.target.vm_host(kind.vm_field, vm)
            guest = target.hosts.get(name or "")
            if name is None or guest is None:
                continue  # refused when the file was loaded (knobs/offline.py)
            try:
                theirs = [m.upper() for m in kind.vm_macs(it.place.ex, it.loc)]
            except KnobError as e:
                raise NettuneError(str(e)) from None
            iface = guest.interface
            if not theirs or not iface:
                out.append(f"{it.loc.key}: cannot tell that VM {vm} is {name} ("
                           + ("its hypervisor's config gives no MAC" if not theirs else f"give {name} its interface = \"...\"") + ")")
                continue
            try:
                ours = guest.read_text(f"/sys/class/net/{iface}/address").strip().upper()
            except OSError as e:
                out.append(f"{it.loc.key}: cannot tell that VM {vm} is {name} (reading {iface}'s MAC there: {e})")
                continue
            if ours not in theirs:
                nic = f"NIC has MAC {theirs[0]}" if len(theirs) == 1 else f"NICs have MACs {', '.join(theirs)}"
                raise NettuneError(f"{it.loc.key}: VM {vm}'s {nic} on {it.host}, but {name}'s {iface} has {ours}: "
                                   f"{kind.vm_field} = {vm} in [target.hosts.{name}] names another VM; correct it before the run restarts one")
            out.append(f"{it.loc.key}: VM {vm} on {it.host} is {name} (its NIC's MAC {ours} is {name}'s {iface})")
    return out
