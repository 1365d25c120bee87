"""sysctl_unsafe:NAME = VALUE: a sysctl of the denylist (kinds/sysctl.py DENY), changed
because the study file says so in so many words.

    [knobs]
    "sysctl_unsafe:kernel.core_pattern" = "core.%p"

The override is the kind's name itself: it stands in the study file, in every line the
dry run prints, in the warning every run prints before the first change (DANGER: ...),
and in the journal. Everything else is the sysctl kind's: one canonical spelling, the
journal, the restore. A journal record of this kind is acted on by `nettune restore`
only while the study file the run read is unchanged and names this knob (verify.py), so
an edited journal cannot use it to reach a denied sysctl.
"""
from __future__ import annotations

from typing import Any

from ...targets.base import Host
from ..base import Ctx, Loc, catalog_row
from .sysctl import Sysctl, denied, sysctl_parts


def danger_notes(keys: list[str]) -> list[str]:
    """The DANGER line of every sysctl_unsafe knob among `keys` (the dry run's, before any host is touched)."""
    out = []
    for key in keys:
        kind, _, name = key.partition(":")
        if kind == UnsafeSysctl.name:
            why = denied(sysctl_parts(key, name)) or "not on the denylist: write \"sysctl:\" instead"
            out.append(f"DANGER: {key} is set although nettune never changes {name} by itself ({why}); the study asks for it by name")
    return out


class UnsafeSysctl(Sysctl):
    name = "sysctl_unsafe"
    example_arg = "kernel.core_pattern"
    allow_denied = True
    declared_only = True

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        super().validate(ex, loc, value, ctx)
        why = denied(sysctl_parts(loc.key, loc.arg or "")) or "not on the denylist: write \"sysctl:\" instead"
        ctx.notes.append(f"DANGER: {loc.key} on {ctx.host or 'this machine'} is set to {value!r} although nettune never changes it "
                         f"by itself ({why}); the study file asked for it by name (sysctl_unsafe). It is restored at the end")

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row("sysctl_unsafe", '"sysctl_unsafe:kernel.core_pattern" = ...', "as the sysctl",
                            "a sysctl of the denylist, changed because the study names it so (docs/security.md)", "-", "-", "no",
                            "names a program run as root, weakens hardening, or can take the machine down", "")]
