"""Boot-time changes (Kind.at_boot, e.g. cmdline:KEY) settled with one reboot per host.

A reboot takes minutes on real hardware, and it brings every boot-time value of the host
in at once: so when a point changes several of them, or a restore puts several back (end
of a run, `nettune restore` after kill -9, --restore-first), each change's configuration
is edited first (Kind.configure / Kind.unconfigure) and waits here; settle() then reboots
each host once, only if one of its values is not running yet (Kind.needs_boot), and asks
each change whether its value is in force (Kind.check_booted). The caller journals each
change's outcome only after that answer: a reboot that fails, or a value the kernel did
not get, leaves the change pending exactly as a change settled alone would.

Waiting changes are kept per setting (slot): when a restore puts back a setting changed
twice (off, then auto), the newer change's configuration goes back first, then the older
one's, and the reboot has to bring the older one's original, the value before nettune.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from ..targets.base import Host
from ..targets.reboot import RebootError, reboot_and_wait
from .base import Kind, KnobError, Loc
from .place_record import Place


def reboot(ex: Host) -> None:
    """Reboot a host and wait for it (targets/reboot.py); KnobError if it fails."""
    try:
        reboot_and_wait(ex)
    except RebootError as e:
        raise KnobError(str(e)) from None


@dataclass
class Waiting:
    """One setting whose configuration holds `target`, waiting for its host's reboot."""

    place: Place
    kind: Kind
    loc: Loc
    target: Any  # the value the next boot must bring (a study value or a journaled reading)
    entries: list[Any] = field(default_factory=list)  # the caller's records, newest first


class BootBatch:
    def __init__(self) -> None:
        self._hosts: dict[str, dict[Any, Waiting]] = {}  # place key -> slot -> waiting

    def __bool__(self) -> bool:
        return bool(self._hosts)

    def host_waits(self, place: Place) -> bool:
        """Is a reboot of this place's host due (its running values are stale until then)?"""
        return place.key in self._hosts

    def waiting(self, place: Place, slot: Any) -> Waiting | None:
        return self._hosts.get(place.key, {}).get(slot)

    def add(self, place: Place, kind: Kind, loc: Loc, slot: Any, target: Any, entry: Any) -> None:
        """A change whose configuration now holds `target`; an older change of the same
        setting, added later, makes its own target the one the boot must bring."""
        slots = self._hosts.setdefault(place.key, {})
        w = slots.get(slot)
        if w is None:
            slots[slot] = Waiting(place, kind, loc, target, [entry])
        else:
            w.target = target
            w.entries.append(entry)

    def settle(self) -> Iterator[tuple[Waiting, KnobError | None]]:
        """Reboot each host once if any of its values is not running yet, then check each
        setting; yields every waiting setting with None (in force) or the error."""
        hosts, self._hosts = self._hosts, {}
        for slots in hosts.values():
            ws = list(slots.values())
            ex = ws[0].place.ex
            try:
                if any(w.kind.needs_boot(ex, w.loc, w.target) for w in ws):
                    reboot(ex)
            except Exception as e:  # noqa: BLE001 - every change of the host stays pending, with the reason
                for w in ws:
                    yield w, KnobError(f"{w.loc.key}: {e}")
                continue
            for w in ws:
                try:
                    w.kind.check_booted(ex, w.loc, w.target)
                except KnobError as e:
                    yield w, e
                except Exception as e:  # noqa: BLE001 - the host dropped again: not known to be in force
                    yield w, KnobError(f"{w.loc.key}: {e}")
                else:
                    yield w, None
