"""The knobs of one sweep point as items: which value goes to which place for which host.

point_items() reads a resolved point's [knobs], checks every key and value statically
(kind.parse), picks the device of interface knobs (the host's own interface unless the
key names one) and the place each value lives in (places.py), and merges what two hosts
share: a host-wide value asked for by two lab hosts is one item, and two different values
for one place are an error naming the knob's line in the study file.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError
from ..studyfile.load import find_line
from ..targets.base import Host
from .base import Kind, KnobError, Loc
from .keys import knob_items, parse_key
from .places import Place, place_for
from .registry import KINDS


@dataclass
class Item:
    """One knob to set at one place for one point."""

    host: str
    place: Place
    loc: Loc
    value: Any

    @property
    def kind(self) -> Kind:
        return KINDS[self.loc.kind]

    @property
    def slot(self) -> tuple[str, str, str | None, str | None, str]:
        """The setting this item changes (two items with one slot are one setting)."""
        return (self.place.key, self.loc.kind, self.loc.arg, self.loc.device, self.kind.slot_key(self.loc))


class SpecLocator:
    """Turns a knob's error into a SpecError naming the study file, field and line."""

    def __init__(self, file: str, text: str):
        self.file, self.text = file, text

    def error(self, key: str, msg: str, field: str = "") -> SpecError:
        key = key.split(" (", 1)[0]  # an OS-neutral knob's setting, "sockbuf:max (sysctl:kern.ipc.maxsockbuf)": its line
        for prefix in (f"{key}: ", f"{key!r}: "):
            msg = msg.removeprefix(prefix)
        loc = ["knobs", "hosts", key] if field == "hosts" else ["knobs", key]
        return SpecError(self.file, ".".join(loc), msg, find_line(self.text, loc))


def lab_queues(rp: Any) -> int | None:
    """The queue count a point's target gives each host's interface (the channels knob's
    upper bound): the lab's veths; None where the target does not set it."""
    return rp.target.queues


def point_items(rp: Any, hosts: dict[str, Host], scopes: dict[Any, str] | None, where: SpecLocator) -> list[Item]:
    """The knobs of one point, host by host, deduplicated by place. scopes: a cache of
    each kind's scope answer (it may run commands); None: static checks only."""
    knobs, hosts_map = knob_items(rp.extra.get("knobs"))
    items: list[Item] = []
    seen: dict[tuple, Item] = {}
    for key, raw in knobs.items():
        try:
            kk = parse_key(key)
        except ValueError as e:
            raise where.error(key, str(e)) from None
        kind = KINDS[kk.kind]
        try:
            loc0, value = kind.split(Loc(key, kk.kind, kk.arg, kk.device), kind.parse(Loc(key, kk.kind, kk.arg, kk.device), raw))
        except KnobError as e:
            raise where.error(key, f"{e} (at point {rp.point.label()})") from None
        names = hosts_map.get(key) or list(hosts)
        unknown = [n for n in names if n not in hosts]
        if unknown:
            raise where.error(key, f"{', '.join(unknown)} is not a target host ({', '.join(hosts)})", "hosts")
        for name in names:
            host = hosts[name]
            loc = loc0
            if kind.needs_device and not loc.device:
                if not host.interface:
                    raise where.error(key, f"host {name} has no default interface: name one, e.g. '{key}@eth0'")
                loc = dataclasses.replace(loc0, device=host.interface)
            for sloc, svalue in kind.forms(host.os, loc, value):  # an OS-neutral knob: this OS's settings
                skind = KINDS[sloc.kind]
                scope = "ns"
                if scopes is not None:
                    # hosts alike in these respects get the same answer from kind.scope
                    ck = (bool(host.netns), host.on_this_machine, host.os, sloc.kind, sloc.arg, json.dumps(sloc.spec, sort_keys=True))
                    if ck not in scopes:
                        scopes[ck] = skind.scope(host, sloc)
                    scope = scopes[ck]
                item = Item(name, place_for(host, scope), sloc, svalue)
                prev = seen.get(item.slot)
                if prev is not None:
                    if not skind.same(prev.value, svalue):
                        raise where.error(key, f"{prev.host} and {name} share {item.place.label} but want different values")
                    continue
                seen[item.slot] = item
                items.append(item)
    return items
