"""Every journal record is checked again by its knob kind before a restore acts on it.

The journal is read back by a later process (`nettune restore`, `run --restore-first`,
`lab down`), and what it says is then done as root. So a change record is acted on only
when it is one nettune could have written:

  - its kind exists and passes the kind's own static checks of where it acts
    (Kind.check_loc: a sysctl's one spelling and its denylist, a device that is an
    interface name, an ARG that is neither a path nor an option);
  - its new value passes the kind's parse (Kind.check_value), and its original and
    read-back values have the shape the kind's read gives (Kind.check_reading: no path
    outside the kind's own, no second line);
  - its place is one of this machine, a named namespace, or a remote host;
  - a kind whose restore runs commands from the study file (Kind.declared_only: the
    command knob, sysctl_unsafe) also needs the study file the run read, unchanged (the
    SHA-256 in the session's begin record), to declare that knob with those commands.

A record that fails is reported with the reason and left pending, never acted on;
`nettune restore --forget` gives it up without printing its commands as a fix.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ..errors import SpecError
from ..plan.points import expand_and_check
from ..plan.study_file import parse_study
from ..studyfile.load import read_study_text
from .base import KnobError, Loc
from .journal_records import JournalChange, OpenSession
from .keys import knob_items, parse_key
from .registry import KINDS

NETNS_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")  # a name in /run/netns, never a path


def check_place(place: dict[str, Any]) -> str | None:
    """Why a journaled place is not one nettune writes (None: it is)."""
    t = place.get("type")
    if t == "netns":
        ns = place.get("netns")
        if not isinstance(ns, str) or not NETNS_NAME.fullmatch(ns):
            return f"its namespace {ns!r} is not a namespace name"
        ino = place.get("ino")
        if ino is not None and (not isinstance(ino, int) or isinstance(ino, bool)):
            return "its namespace's inode is not a number"
    elif t == "remote":
        reach = place.get("reach")
        if reach is not None and not all(isinstance(k, str) for k in reach):
            return "its way to reach the host is not a table of names"
    elif t != "machine":
        return f"its place {t!r} is none nettune writes"
    return None


class Verifier:
    """Checks change records; remembers each session's study file (read and expanded once)."""

    def __init__(self) -> None:
        self._declared: dict[str, set[tuple[str, str | None, str]] | str] = {}

    def check(self, ch: JournalChange, session: OpenSession) -> str | None:
        """Why `ch` must not be acted on (None: it may be)."""
        kind = KINDS.get(ch.loc.kind)
        if kind is None:
            return f"its knob kind {ch.loc.kind!r} does not exist"
        try:
            kind.check_loc(ch.loc)
            kind.check_value(ch.loc, ch.new)
            kind.check_reading(ch.loc, ch.original)
            if ch.read_back:
                kind.check_reading(ch.loc, ch.actual)
        except KnobError as e:
            return f"it fails the {kind.name} knob's checks: {e}"
        except Exception as e:  # noqa: BLE001 - a value of a type no parse expects: not nettune's record
            return f"it holds a value the {kind.name} knob never writes ({type(e).__name__})"
        why = check_place(ch.place)
        if why:
            return why
        if kind.declared_only:
            return self._declared_by_study(ch, session)
        return None

    def _declared_by_study(self, ch: JournalChange, session: OpenSession) -> str | None:
        declared = self._declared.get(session.id)
        if declared is None:
            declared = self._declared[session.id] = _study_declares(session)
        if isinstance(declared, str):
            return declared
        if (ch.loc.kind, ch.loc.arg, _spec(ch.loc.spec)) not in declared:
            return f"{session.study_file} does not declare {ch.loc.key} with the commands in this record; nettune runs only what the study declares"
        return None


def _spec(spec: Any) -> str:
    return json.dumps(spec, sort_keys=True, default=str)


def _study_declares(session: OpenSession) -> set[tuple[str, str | None, str]] | str:
    """(kind, ARG, commands) of every declared_only knob the session's study file names at
    any point; or why the file cannot vouch for any (missing, changed, unreadable)."""
    path, digest = session.study_file, session.study_digest
    what = "its restore runs commands, which nettune runs only as the study file declares them"
    if not path or not digest:
        return f"{what}, and this session names no study file"
    try:
        text = read_study_text(path)
    except SpecError as e:
        return f"{what}, and the study file the run read is unreadable now ({e})"
    if hashlib.sha256(text.encode()).hexdigest() != digest:
        return f"{what}, and {path} changed since the run read it (its SHA-256 differs)"
    try:
        study = parse_study(text, path)
        points = expand_and_check(study, text, path)
    except SpecError as e:
        return f"{what}, and {path} no longer loads ({e})"
    out: set[tuple[str, str | None, str]] = set()
    for rp in points:
        knobs, _ = knob_items(rp.extra.get("knobs"))
        for key, raw in knobs.items():
            kk = parse_key(key)
            kind = KINDS[kk.kind]
            if kind.declared_only:
                loc0 = Loc(key, kk.kind, kk.arg, kk.device)
                loc, _ = kind.split(loc0, kind.parse(loc0, raw))
                out.add((loc.kind, loc.arg, _spec(loc.spec)))
    return out
