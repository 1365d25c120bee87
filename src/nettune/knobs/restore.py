"""Putting values back, newest change first, only where nettune's value is still there.

For every pending change (in reverse order):
  - its place is gone (lab namespace removed, interface re-created): nothing to restore;
  - the current value is already the original: nothing to do;
  - the current value is what nettune wrote: write the original back and check it;
  - anything else: someone else changed it since; leave it and warn (and leave the
    older changes of the same setting alone too).
Every outcome is journaled, so a restore interrupted half way is simply run again.
Boot-time changes (Kind.at_boot) are put back in the configuration in that same order,
then each host is rebooted once for all of them (boot_batch.py) and each is journaled
only once the reboot showed its original in force.

`nettune restore` (restore_pending) reconnects to remote hosts from the journal
(remote.py); a change whose host cannot be reached stays pending and the outcome says
which host and why. `only` limits a restore (or forget) to some changes: one host
(`nettune restore HOST`), the hosts of a study (--restore-first), a lab being removed.
"""
from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .base import Kind, KnobError, Loc
from .boot_batch import BootBatch
from .journal import Journal, OpenSession
from .places import Place, ident_changed, place_from_record
from .registry import KINDS
from .remote import RemotePlaces, host_label

Select = Callable[[dict[str, Any]], bool]  # which pending changes an operation is about

_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextmanager
def critical() -> Iterator[None]:
    """Hold Ctrl-C/SIGTERM until a change and its journal record are both done."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    except (ValueError, OSError):  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@dataclass
class RestoreOutcome:
    lines: list[tuple[str, str]] = field(default_factory=list)  # (result, text)
    warnings: list[str] = field(default_factory=list)
    failed: int = 0
    failed_seqs: list[int] = field(default_factory=list)
    unreachable: dict[str, str] = field(default_factory=dict)  # remote host -> why

    def add(self, other: "RestoreOutcome") -> None:
        self.lines += other.lines
        self.warnings += other.warnings
        self.failed += other.failed
        self.failed_seqs += other.failed_seqs
        self.unreachable |= other.unreachable


def restore_changes(
    journal: Journal, session: str, changes: list[dict[str, Any]], place_of: Callable[[dict[str, Any]], tuple[Place | None, str]]
) -> RestoreOutcome:
    out = RestoreOutcome()
    boots = BootBatch()  # boot-time changes configured back, waiting for their host's one reboot
    left: set[tuple[str, str]] = set()
    first: dict[tuple[str, str], Any] = {}  # the value before nettune's first change of a setting
    for rec in changes:
        first.setdefault(_slot(rec), rec["original"])
    for rec in reversed(changes):
        loc = Loc.from_record(rec["loc"])
        kind = KINDS[loc.kind]
        who = f"{rec.get('host', '?')}: {loc.key}" + (f" ({loc.device})" if loc.device and "@" not in loc.key else "")
        slot = _slot(rec)
        try:
            place, why = place_of(rec)
        except KnobError as e:
            by_hand = "; ".join(kind.commands(loc, rec["original"])) or "see the journal"
            forget = f"--forget {rec.get('host')}" if (rec.get("place") or {}).get("type") == "remote" else "--forget"
            msg = f"{who}: {e}; it stays pending: run `nettune restore` again once that is fixed, or put back {kind.show(rec['original'])} by hand ({by_hand}), then `nettune restore {forget}`"
            out.failed += 1
            out.failed_seqs.append(rec["seq"])
            out.lines.append(("failed", msg))
            out.warnings.append(msg)
            continue
        if place is None:
            journal.done(session, rec["seq"], "gone", why)
            out.lines.append(("gone", f"{who}: nothing to restore: {why}"))
            continue
        why = ident_changed(place, loc, rec.get("ident") or {})
        if why:
            journal.done(session, rec["seq"], "gone", why)
            out.lines.append(("gone", f"{who}: nothing to restore: {why}"))
            continue
        if slot in left:
            journal.done(session, rec["seq"], "left", "a later value was changed by someone else")
            continue
        original = rec["original"]
        made = rec.get("actual", rec["new"])
        try:
            cur = kind.read(place.ex, loc)
            waiting = boots.waiting(place, slot)
            if waiting is not None and kind.looks_like(cur, original):
                boots.add(place, kind, loc, slot, original, (rec, who, cur))  # configured as before already: the reboot decides
                continue
            if kind.same(cur, original):
                journal.done(session, rec["seq"], "unchanged", "already the original value")
                out.lines.append(("unchanged", f"{who}: already {kind.show(original)}"))
                continue
            ours = kind.same(cur, rec["actual"]) if "actual" in rec else kind.looks_like(cur, rec["new"])
            ours = ours or kind.between(cur, original, made)  # a kill mid-write
            if kind.at_boot:
                # the host's reboot is still to come in this restore: what runs is stale, the configuration tells
                ours = ours or (boots.host_waits(place) and kind.looks_like(cur, made))
                # a restore of this setting's changes that configured the first original and did not reboot (killed, failed)
                ours = ours or kind.between(cur, first[slot], made)
            if not ours:
                left.add(slot)
                msg = (f"{who} is now {kind.show(cur)}, not the {kind.show(rec.get('actual', rec['new']))} nettune set: "
                       f"changed by someone else since; left as is (before nettune it was {kind.show(first[slot])})")
                journal.done(session, rec["seq"], "left", msg)
                out.lines.append(("left", msg))
                out.warnings.append(msg)
                continue
            if kind.at_boot:  # the configuration now, the reboot once all of the host's are back
                kind.unconfigure(place.ex, loc, original)
                boots.add(place, kind, loc, slot, original, (rec, who, cur))
                continue
            kind.restore(place.ex, loc, original)
            after = kind.read(place.ex, loc)
        except Exception as e:  # noqa: BLE001 - one knob must not stop the others' restore
            _not_restored(journal, session, out, place, loc, rec, who, kind.show(original), e)
            continue
        _restored(journal, session, out, kind, rec, who, cur, after)
    for w, err in boots.settle():  # each host rebooted once for all its boot-time changes, then checked
        after = None
        if err is None:
            try:
                after = w.kind.read(w.place.ex, w.loc)
            except KnobError as e:
                err = e
        for rec, who, cur in w.entries:
            if err is not None:
                _not_restored(journal, session, out, w.place, w.loc, rec, who, w.kind.show(rec["original"]), err)
            else:  # the oldest change's original is in force: every change of the setting is back
                _restored(journal, session, out, w.kind, rec, who, cur, after if rec is w.entries[-1][0] else rec["original"])
    return out


def _restored(journal: Journal, session: str, out: RestoreOutcome, kind: Kind, rec: dict[str, Any], who: str, cur: Any, after: Any) -> None:
    journal.done(session, rec["seq"], "restored")
    original = rec["original"]
    if kind.same(after, original):
        out.lines.append(("restored", f"{who}: {kind.show(cur)} -> {kind.show(original)}"))
    else:
        msg = f"{who}: restored, but it reads back {kind.show(after)} instead of {kind.show(original)}"
        out.lines.append(("restored", msg))
        out.warnings.append(msg)


def _not_restored(journal: Journal, session: str, out: RestoreOutcome, place: Place, loc: Loc, rec: dict[str, Any], who: str, shown: str,
                  e: Exception) -> None:
    """A restore that raised: gone if its place vanished meanwhile, else pending (failed)."""
    why = place.gone() or ident_changed(place, loc, rec.get("ident") or {})
    if why:  # vanished while we were at it (the lab was being removed)
        journal.done(session, rec["seq"], "gone", why)
        out.lines.append(("gone", f"{who}: nothing to restore: {why}"))
        return
    out.failed += 1
    out.failed_seqs.append(rec["seq"])
    msg = f"{who}: could not restore {shown}: {e}; run `nettune restore` again once fixed"
    out.lines.append(("failed", msg))
    out.warnings.append(msg)


def _slot(rec: dict[str, Any]) -> tuple[str, str]:
    loc = Loc.from_record(rec["loc"])
    return (rec["place"].get("key", ""), f"{loc.kind}|{loc.arg}|{loc.device}|{KINDS[loc.kind].slot_key(loc)}")


def pending(journal: Journal | None = None) -> tuple[list[OpenSession], list[OpenSession]]:
    """(dead sessions with changes left, sessions whose runner is still alive)."""
    journal = journal or Journal()
    dead, alive = [], []
    for s in journal.open_sessions():
        if s.pid == os.getpid():
            continue
        (alive if s.alive else dead).append(s)
    return dead, alive


def restore_pending(journal: Journal | None = None, only: Select | None = None) -> tuple[RestoreOutcome, list[OpenSession]]:
    """Restore every session whose runner died (kill -9, power loss), or only the changes
    `only` selects; remote hosts are reconnected, one connection each. Returns the
    outcome and the sessions left alone because their runner is still running."""
    journal = journal or Journal()
    dead, alive = pending(journal)
    out = RestoreOutcome()
    with RemotePlaces() as remote:
        for s in dead:
            changes = [c for c in s.changes if only is None or only(c)]
            if s.changes and not changes:
                continue  # none of its changes is asked for (a session with none left just ends)
            with critical():
                res = restore_changes(journal, s.id, changes, lambda rec: place_from_record(rec["place"], remote))
                if not res.failed and len(changes) == len(s.changes):
                    journal.end(s.id)
            out.add(res)
        out.unreachable |= remote.unreachable
    return out, alive


def forget(journal: Journal | None = None, only: Select | None = None, why: str = "given up by `nettune restore --forget`") -> list[tuple[str, str]]:
    """Give up pending changes (all, or those `only` selects): mark them done and return
    (host, command) lines that put each original back by hand, newest change first."""
    journal = journal or Journal()
    dead, _ = pending(journal)
    lines: list[tuple[str, str]] = []
    for s in dead:
        chosen = [c for c in s.changes if only is None or only(c)]
        for rec in reversed(chosen):
            loc = Loc.from_record(rec["loc"])
            for cmd in KINDS[loc.kind].commands(loc, rec["original"]):
                lines.append((host_label(rec), cmd))
            journal.done(s.id, rec["seq"], "forgotten", why)
        if len(chosen) == len(s.changes):
            journal.end(s.id)
    return lines
