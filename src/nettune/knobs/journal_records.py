"""The journal's records as types, and the checksum chain that ties a session's records together.

A journal line is untrusted input when it is read back: another process, an editor or a
damaged disk may have changed it since nettune wrote it. So every line carries `n` (its
place in its session, the `begin` is 0) and `sum`, a SHA-256 over the previous record's
sum and this record's canonical JSON. A record whose sum does not follow from the one
before, or a gap in `n`, breaks the chain at that record: from there on, nothing of the
session that would make nettune act (a change, a read-back value) is believed; what only
settles (done, end) is still honoured, since it can only make nettune do less, as a
journal cut short at its end does. The chain is not a signature (whoever may write the
journal may recompute it): it detects damage and hand edits; who may write the journal at
all is checked by journal.py (owner and mode).

JournalChange is one change record, typed: what the restore acts on. What a run keeps
beside it while the change is in force (its Place, its slot) lives in apply.Active,
never inside the record.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from .base import Loc

PLACE_TYPES = ("machine", "netns", "remote")


class JournalError(ValueError):
    """A record that is not what nettune writes; the message is one line."""


def canonical(rec: dict[str, Any]) -> str:
    """The text a record's checksum covers: its JSON with sorted keys, without `sum`."""
    return json.dumps({k: v for k, v in rec.items() if k != "sum"}, sort_keys=True, separators=(",", ":"), default=str)


def link(prev: str, rec: dict[str, Any]) -> str:
    """The checksum of `rec` following the record whose checksum is `prev` ('' for a begin)."""
    return hashlib.sha256(f"{prev}\n{canonical(rec)}".encode()).hexdigest()[:32]


def _text(d: dict[str, Any], key: str, what: str, optional: bool = False) -> str:
    v = d.get(key)
    if v is None and optional:
        return ""
    if not isinstance(v, str) or len(v) > 4096 or any(c in v for c in "\0\n\r"):
        raise JournalError(f"{what}: field {key!r} is not a one-line text")
    return v


def _loc(d: Any) -> Loc:
    if not isinstance(d, dict):
        raise JournalError("field 'loc' is not an object")
    key, kind = _text(d, "key", "loc"), _text(d, "kind", "loc")
    arg, device = d.get("arg"), d.get("device")
    for name, v in (("arg", arg), ("device", device)):
        if v is not None and (not isinstance(v, str) or not v or len(v) > 256 or any(ord(c) < 32 or c == "\x7f" for c in v)):
            raise JournalError(f"loc: field {name!r} is not a one-line text")
    spec = d.get("spec")
    if spec is not None and not isinstance(spec, dict):
        raise JournalError("loc: field 'spec' is not an object")
    return Loc(key, kind, arg, device, spec)


def _place(d: Any) -> dict[str, Any]:
    if not isinstance(d, dict) or d.get("type") not in PLACE_TYPES:
        raise JournalError(f"field 'place' is not one of {', '.join(PLACE_TYPES)}")
    for k in ("label", "key", "netns", "address"):
        if k in d and d[k] is not None:
            _text(d, k, "place")
    if d.get("reach") is not None and not isinstance(d["reach"], dict):
        raise JournalError("place: field 'reach' is not an object")
    return dict(d)


@dataclass
class JournalChange:
    """One setting nettune changed: where, what it was, what nettune wrote (and read back)."""

    session: str
    seq: int
    study: str
    host: str
    loc: Loc
    place: dict[str, Any]  # places.Place.record(): how to find the place again
    original: Any
    new: Any
    ident: dict[str, Any] = field(default_factory=dict)  # places.identity(): what must still match
    time: float = 0.0
    actual: Any = None  # the value read back after the change (when read_back)
    read_back: bool = False

    @property
    def made(self) -> Any:
        """What nettune's change left: the value read back, else the value it wrote."""
        return self.actual if self.read_back else self.new

    def set_actual(self, value: Any) -> None:
        self.actual, self.read_back = value, True

    def to_json(self) -> dict[str, Any]:
        """The "change" line (the read-back value is its own "actual" line, written later)."""
        return {"op": "change", "session": self.session, "seq": self.seq, "study": self.study, "host": self.host, "knob": self.loc.key,
                "loc": self.loc.record(), "place": self.place, "ident": self.ident, "original": self.original, "new": self.new,
                "time": self.time}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "JournalChange":
        """A change line read back; JournalError (one line) when it is not one nettune writes."""
        seq = d.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            raise JournalError("field 'seq' is not a whole number")
        ident = d.get("ident") or {}
        if not isinstance(ident, dict):
            raise JournalError("field 'ident' is not an object")
        if "original" not in d or "new" not in d:
            raise JournalError("a change needs 'original' and 'new'")
        t = d.get("time", 0.0)
        return cls(_text(d, "session", "change"), seq, _text(d, "study", "change", optional=True), _text(d, "host", "change", optional=True),
                   _loc(d.get("loc")), _place(d.get("place")), d["original"], d["new"], dict(ident),
                   float(t) if isinstance(t, (int, float)) else 0.0)


@dataclass
class Refused:
    """A record that is not acted on, and why (shown by `nettune restore`)."""

    session: str
    record: int | None  # its `n` in the session, when it has one
    line: int  # line number in the journal file
    why: str
    change: JournalChange | None = None  # a change record that was readable, for --forget's by-hand commands

    def describe(self) -> str:
        where = f"record {self.record} (line {self.line})" if self.record is not None else f"line {self.line}"
        return f"session {self.session}, {where}: {self.why}"


def process_start_time(pid: int) -> str | None:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@dataclass
class OpenSession:
    """A session that has not ended: its pending changes (oldest first), and the records
    of it that are not believed (a broken chain, a record of the wrong shape)."""

    id: str
    study: str = "?"
    study_id: int | None = None
    pid: int | None = None
    pid_start: str | None = None
    started: float = 0.0
    changes: list[JournalChange] = field(default_factory=list)
    kept: bool = False  # `nettune doctor --fix`: meant to stay in force; restored only by `nettune restore`
    study_file: str = ""  # the study file the run read (absolute), and the SHA-256 of its text:
    study_digest: str = ""  # a command knob's commands run at restore only as that file declares them
    refused: list[Refused] = field(default_factory=list)

    @property
    def pending(self) -> list[JournalChange]:
        """Every change still pending: those to restore and those not believed (refused)."""
        return self.changes + [r.change for r in self.refused if r.change is not None]

    @property
    def unreadable(self) -> bool:
        """Does the session hold a record not even readable as a change (its place unknown)?"""
        return any(r.change is None for r in self.refused)

    @property
    def alive(self) -> bool:
        """Is the process that wrote this session still running (same PID and start time)?"""
        return self.pid is not None and self.pid_start is not None and process_start_time(self.pid) == self.pid_start and self.pid != os.getpid()

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started)) if self.started else "?"
        n = len(self.changes) + len(self.refused)
        return f"study {self.study!r} (pid {self.pid}, started {when}): {n} change{'s' if n != 1 else ''} not restored"


class SessionChain:
    """Follows one session's records in file order and says whether each is believed."""

    def __init__(self) -> None:
        self.n = 0
        self.prev = ""
        self.broken: str | None = None  # why the chain broke (then nothing more is believed)

    def check(self, rec: dict[str, Any]) -> str | None:
        """None when `rec` follows the records before it; else why not (and from then on, always)."""
        if self.broken is None:
            n, s = rec.get("n"), rec.get("sum")
            if not isinstance(n, int) or not isinstance(s, str):
                self.broken = "it has no checksum (written by hand, or by a nettune without checksums); not acted on"
            elif n > self.n:
                self.broken = f"record{'s' if n - self.n > 1 else ''} {self.n}{f'..{n - 1}' if n - self.n > 1 else ''} of the session " \
                              "are missing (the journal was cut or edited); not acted on"
            elif n < self.n or s != link(self.prev, rec):
                self.broken = "it does not match its checksum (the journal was edited or damaged after nettune wrote it); not acted on"
            else:
                self.n, self.prev = n + 1, s
                return None
            return self.broken
        return "an earlier record of this session failed its check, so this one is not believed either"

    def stamp(self, rec: dict[str, Any]) -> dict[str, Any]:
        """`rec` with its place and checksum in the chain, which then moves on past it."""
        out = {k: v for k, v in rec.items() if k not in ("n", "sum")}
        out["n"] = self.n
        out = json.loads(json.dumps(out, default=str))  # the checksum covers what a reader will parse
        out["sum"] = link(self.prev, out)
        self.n, self.prev = self.n + 1, out["sum"]
        return out
