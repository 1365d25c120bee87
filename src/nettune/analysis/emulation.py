"""Studies run on emulated CPUs (the VM lab under QEMU's TCG): numbers show behaviour only.

A guest whose CPU QEMU emulates instruction by instruction moves a gigabit or two, and
every difference between two points is as much the emulator's as the setting's. Such a
study still shows what a setting does (the guest got 4 queues, the pinning held, the
boot option is in /proc/cmdline, the delay is there), never how fast a real machine would
be. So analyze keeps the table of points and withholds every performance verdict: where
throughput saturates, the peak, the knee, which parameter mattered, the recommended point
per cost, better/worse comparisons, and the runs that would settle them. Results and the
report say so above their numbers.

The mark is the hosts' facts (`emulated`: true, stored by the vmlab target for every host).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # verdicts imports nothing of this module; the type only
    from .verdicts import Analysis

EMULATED = "emulated CPU: throughput shows behaviour, not performance"


def emulated_hosts(facts: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(h for h, f in facts.items() if isinstance(f, dict) and f.get("emulated") is True)


def note(facts: dict[str, dict[str, Any]]) -> str | None:
    """One line for results and the report, or None when no host was emulated."""
    hosts = emulated_hosts(facts)
    if not hosts:
        return None
    accel = next((str(facts[h].get("accelerator")) for h in hosts if facts[h].get("accelerator")), "an emulator")
    return f"{EMULATED} ({', '.join(hosts)} ran on QEMU's {accel.upper()}); performance verdicts are withheld"


def withhold(out: Analysis, facts: dict[str, dict[str, Any]]) -> Analysis:
    """The analysis without its performance verdicts when the study ran on emulated CPUs
    (the points' numbers stay: they are what was measured)."""
    line = note(facts)
    if line is None:
        return out
    withheld = ("performance verdicts withheld (saturation, peak, knee, which parameter mattered, recommended points, "
                "comparisons): on an emulated CPU they would be the emulator's; run the same study on hosts with real "
                "CPUs (a KVM host, or real machines) for them")
    for p in out.parameters:
        p.curves, p.comparisons, p.effect, p.cost_curves = [], [], None, []
    out.efficiency, out.repeats, out.effect_tests = [], [], 0
    if out.groups is not None:
        out.groups = None
    out.headline = [line, withheld]
    kept = [f for f in out.findings if f.startswith(("intervals:", "outlier run", "one point only"))]
    out.findings = [line, withheld] + kept
    out.sections = {"throughput": [line, withheld], "noise": kept} if kept else {"throughput": [line, withheld]}
    return out
