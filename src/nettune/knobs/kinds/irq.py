"""irq_affinity[@DEV] = "0-3"  or  irq_affinity:IRQ[,IRQ...] = "2"   (CPU list, smp_affinity_list)

Sets /proc/irq/N/smp_affinity_list for every IRQ of a NIC (found from its PCI device:
msi_irqs, or the legacy irq line), or for the IRQ numbers given. IRQs are machine-wide:
the value is set once on the machine. Virtual devices (veth, bridges) have no IRQs.
irqbalance, when running, rewrites affinities: nettune warns about it.
"""
from __future__ import annotations

from typing import Any

from ...targets.base import Host
from ..base import Ctx, Kind, KnobError, Loc, Persisted, catalog_row, check_plain, cpu_list, cpu_list_text, device_exists, mixed_uniform, read_file, same_uniform, write_file

_FIND = (
    'd=$(readlink -f "/sys/class/net/$1/device") || exit 3; [ -n "$d" ] || exit 3; '
    'for p in "$d" "$(dirname "$d")"; do '
    'if [ -d "$p/msi_irqs" ]; then ls "$p/msi_irqs"; exit 0; fi; '
    'if [ -f "$p/irq" ] && [ "$(cat "$p/irq")" != 0 ]; then cat "$p/irq"; exit 0; fi; done; exit 4'
)


def cpus_text(loc: Loc, raw: Any) -> str:
    try:
        cpus = cpu_list(str(raw))
    except ValueError:
        cpus = set()
    if not cpus or isinstance(raw, bool):
        raise KnobError(f"{loc.key}: expected a CPU list like \"0-3\" or \"1,3\", got {raw!r}")
    return cpu_list_text(cpus)


class IrqAffinity(Kind):
    name = "irq_affinity"
    needs_device = True
    host_wide = True

    def parse(self, loc: Loc, raw: Any) -> str:
        if loc.arg is not None and not all(p.isdigit() for p in loc.arg.split(",")):
            raise KnobError(f"{loc.key}: the part after ':' is an IRQ number or list (irq_affinity:38,39), got {loc.arg!r}")
        return cpus_text(loc, raw)

    def check_reading(self, loc: Loc, value: Any) -> None:
        """A journaled CPU list, or one per IRQ: IRQs are numbers (paths under /proc/irq)."""
        check_plain(loc, value)
        for n, cpus in (value.items() if isinstance(value, dict) else [("0", value)]):
            if not str(n).isdigit() or len(str(n)) > 6:
                raise KnobError(f"{loc.key}: the journaled reading names {n!r}, not an IRQ number")
            cpus_text(loc, cpus)

    def acts_on_interface(self, loc: Loc) -> bool:
        return loc.device is not None and loc.arg is None  # irq_affinity:38,39 names IRQs, not the NIC

    def irqs(self, ex: Host, loc: Loc) -> list[str]:
        if loc.arg is not None:
            irqs = loc.arg.split(",")
        else:
            dev = loc.device or ""
            if not device_exists(ex, dev):
                raise KnobError(
                    f"{loc.key}: no interface {dev} on this machine; virtual interfaces such as the lab's veths have no IRQs "
                    f"(name a NIC: irq_affinity@eth0, or IRQ numbers: irq_affinity:38,39)"
                )
            r = ex.run(["sh", "-c", _FIND, "nettune-irq", dev], timeout=10)
            irqs = r.stdout.split() if r.returncode == 0 else []
            if not irqs:
                raise KnobError(f"{loc.key}: {dev} has no IRQs (a virtual device, or no PCI device behind it)")
        for n in irqs:
            try:
                ex.read_text(f"/proc/irq/{n}/smp_affinity_list")
            except OSError:
                raise KnobError(f"{loc.key}: no IRQ {n} on this machine (see /proc/interrupts)") from None
        return sorted(irqs, key=int)

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        top = max(cpu_list(value))
        if top >= ctx.cpus:
            raise KnobError(f"{loc.key}: CPU {top} does not exist (this machine has {ctx.cpus}: 0..{ctx.cpus - 1})")
        for n, cur in self.read(ex, loc).items():
            # writing back the value already there changes nothing; it finds managed IRQs (EIO)
            try:
                ex.write_text(f"/proc/irq/{n}/smp_affinity_list", cur)
            except OSError as e:
                raise KnobError(f"{loc.key}: IRQ {n} affinity cannot be set ({e.strerror or e}; the kernel manages it)") from None
        if ex.run(["pgrep", "-x", "irqbalance"], timeout=10).returncode == 0:
            ctx.notes.append(f"{loc.key}: irqbalance is running and may rewrite IRQ affinity during the study; stop it for stable results")

    def read(self, ex: Host, loc: Loc) -> dict[str, str]:
        return {n: cpu_list_text(cpu_list(read_file(ex, f"/proc/irq/{n}/smp_affinity_list", loc.key).strip())) for n in self.irqs(ex, loc)}

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        per_irq = value if isinstance(value, dict) else {n: value for n in self.irqs(ex, loc)}
        for n, cpus in per_irq.items():
            write_file(ex, f"/proc/irq/{n}/smp_affinity_list", str(cpus), loc.key)

    def same(self, a: Any, b: Any) -> bool:
        return same_uniform(_cpus(a), _cpus(b), set)

    def between(self, current: Any, original: Any, new: Any) -> bool:
        return mixed_uniform(_cpus(current), _cpus(original), _cpus(new), set)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        if isinstance(value, dict):
            return [f"echo {c} > /proc/irq/{n}/smp_affinity_list" for n, c in value.items()]
        if loc.arg is not None:
            return [f"echo {value} > /proc/irq/{n}/smp_affinity_list" for n in loc.arg.split(",")]
        dev = loc.device or "$IFACE"
        return [f"for n in $(ls /sys/class/net/{dev}/device/msi_irqs); do echo {value} > /proc/irq/$n/smp_affinity_list; done"]

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        return Persisted.script_only(loc, self.commands(loc, value))

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "irq_affinity", '"irq_affinity" = "0-3"  ("irq_affinity:38,39")', "machine", "CPUs that take a NIC's interrupts",
            "all CPUs", "NIC-local cores (+20-30% [fasterdata])", "no", "irqbalance overwrites it", "cpuset -l CPUS -x IRQ",
        )]


def _cpus(v: Any) -> Any:
    """A value as CPU sets: one per IRQ (a dict), or one for every IRQ."""
    return {k: cpu_list(x) for k, x in v.items()} if isinstance(v, dict) else cpu_list(str(v))
