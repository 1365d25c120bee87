"""Reaching remote hosts again for `nettune restore`, from the journal alone.

Every remote place in the journal carries `reach` (places.Place.record): address, port,
user, absolute key path, known_hosts file, sudo, connect timeout and the host key the
run saw. RemotePlaces opens one SSH connection per host (the first change of that host
that needs it), accepting only that recorded key, and remembers a host it could not
reach so its other changes fail at once with the same reason (they stay pending).
"""
from __future__ import annotations

from typing import Any

from ..targets.reconnect import NoWayToReach, Reconnector
from .base import KnobError
from .journal_records import JournalChange
from .places import Place


def reach_of(place: dict[str, Any]) -> dict[str, Any]:
    """How the journal says to reach a remote place (older records: the address only)."""
    return place.get("reach") or {"address": place.get("address")}


def host_label(rec: JournalChange) -> str:
    """`name (address)` of the host a change lives on, as the user knows it."""
    place = rec.place
    if place.get("type") == "remote":
        r = reach_of(place)
        port = r.get("port")
        return f"{place.get('label', '?')} ({r.get('address')}{':' + str(port) if port and port != 22 else ''})"
    if place.get("type") == "netns":
        return f"{place.get('label', '?')} (namespace {place.get('netns')})"
    return "this machine"


class RemotePlaces:
    """One connection per remote host for the length of a restore; close() ends them."""

    def __init__(self) -> None:
        self._reconnect = Reconnector()
        self.unreachable: dict[str, str] = {}  # host label -> why

    def __enter__(self) -> "RemotePlaces":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def place(self, rec: dict[str, Any]) -> Place:
        """The place of a remote change, connected; KnobError (one line) when out of reach."""
        reach = reach_of(rec)
        label = rec.get("label", "?")
        who = f"{label} ({reach.get('address')})"
        if who in self.unreachable:
            raise KnobError(f"cannot reach {who}: {self.unreachable[who]}")
        try:
            host = self._reconnect.host(label, reach)
        except NoWayToReach as e:
            raise self._fail(who, str(e)) from None
        except ConnectionError as e:  # refused key, unreachable, sudo broken
            raise self._fail(who, str(e)) from None
        except ValueError as e:  # pydantic's ValidationError: a journal edited by hand
            raise self._fail(who, f"the journal's record of it is unusable: {' '.join(str(e).split())[:200]}") from None
        return Place(label, "remote", host)

    def _fail(self, who: str, why: str) -> KnobError:
        self.unreachable[who] = why
        return KnobError(f"cannot reach {who}: {why}")

    def close(self) -> None:
        self._reconnect.close()
