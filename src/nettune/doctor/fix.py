"""`nettune doctor --fix CHECK...`: make the named checks' fixes through the knob journal.

Only a finding that names a knob can be fixed here (a kernel command line change or a
hypervisor slot cannot). The changes are journaled in a session marked `kept`: they stay
in force after doctor exits, never block a study (it measures with them), and
`nettune restore` puts each value back exactly as it was before the fix.
"""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

from ..errors import NettuneError
from ..knobs.apply import KnobSession
from ..knobs.base import KnobError, Loc
from ..knobs.items import Item
from ..knobs.keys import parse_key
from ..knobs.places import place_for
from ..knobs.registry import KINDS
from .base import Finding, HostView
from .registry import check_ids


def chosen(findings: list[Finding], names: list[str]) -> list[Finding]:
    """The findings `--fix NAME...` asks for (a check id, or `all`); a name that is no check,
    or a check with nothing to fix on these hosts, is an error saying which can be fixed."""
    ids = set(check_ids())
    fixable = sorted({f.check for f in findings if f.knob})
    for n in names:
        if n != "all" and n not in ids:
            raise NettuneError(f"--fix {n}: no such check; checks: {', '.join(sorted(ids))}")
    wanted = [f for f in findings if f.knob and f.severity != "info" and ("all" in names or f.check in names)]
    missing = [n for n in names if n != "all" and not any(f.check == n for f in wanted)]
    if missing:
        raise NettuneError(f"--fix {', '.join(missing)}: nothing nettune can fix there on these hosts"
                           + (f" (fixable now: {', '.join(fixable)})" if fixable else " (no finding has an automatic fix; run the fix commands shown)"))
    return wanted


def _item(view: HostView, knob: dict[str, Any]) -> Item:
    key, raw = knob["key"], knob["value"]
    kk = parse_key(key)
    kind = KINDS[kk.kind]
    loc = Loc(key, kk.kind, kk.arg, kk.device)
    try:
        loc, value = kind.split(loc, kind.parse(loc, raw))
    except KnobError as e:
        raise NettuneError(f"doctor fix {key}: {e}") from None
    if kind.needs_device and not loc.device:
        loc = dataclasses.replace(loc, device=view.interface)
    return Item(view.name, place_for(view.host, kind.scope(view.host, loc)), loc, value)


def apply_fixes(findings: list[Finding], views: list[HostView]) -> list[str]:
    """Apply each finding's knob (one journal session, kept); returns a line per change."""
    by_name = {v.name: v for v in views}
    items, seen = [], set()
    for f in findings:
        view = by_name.get(f.host) or next(v for v in views if v.machine == f.host)
        it = _item(view, f.knob or {})
        if it.slot not in seen:  # two lab hosts asking for one host-wide value: once
            seen.add(it.slot)
            items.append(it)
    session = KnobSession(SimpleNamespace(name="nettune doctor --fix"), None, None, kept=True)  # type: ignore[arg-type]
    lines = []
    try:
        done = session.set_items(items)
    finally:
        lines += session.take_messages()
    for place, values in done.items():
        lines += [f"{place}: {k} = {v}" for k, v in values.items()]
    if not session.active:
        session.journal.end(session.sid)  # nothing changed (already as wanted): nothing to keep
    return lines
