"""Putting values back, newest change first, only where nettune's value is still there.

For every pending change (in reverse order):
  - its place is gone (lab namespace removed, interface re-created): nothing to restore;
  - the current value is already the original: nothing to do;
  - the current value is what nettune wrote: write the original back and check it;
  - anything else: someone else changed it since; leave it and warn (and leave the
    older changes of the same setting alone too).
Every outcome is journaled, so a restore interrupted half way is simply run again.
A setting changed several times goes straight from the newest value back to the first
original, in one write (one VM restart or link reset for a setting that disrupts), never
through the values in between; its older changes share that outcome (restored, or pending
with it). Boot-time changes (Kind.at_boot) are put back in the configuration in that same order,
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
from .journal import Journal
from .journal_records import JournalChange, OpenSession, Refused
from .places import Place, ident_changed, place_from_record
from .registry import KINDS
from .remote import RemotePlaces, host_label
from .verify import Verifier

Select = Callable[[JournalChange], bool]  # which pending changes an operation is about

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
    journal: Journal, session: str, changes: list[JournalChange], place_of: Callable[[JournalChange], tuple[Place | None, str]]
) -> RestoreOutcome:
    out = RestoreOutcome()
    boots = BootBatch()  # boot-time changes configured back, waiting for their host's one reboot
    left: set[tuple[str, str]] = set()
    ch = Chains.of(changes)
    # a setting changed several times goes straight back to its first original: one write (for
    # a setting that disrupts, one VM restart or link reset), never the values in between (a
    # sysctl changed twice was set to its middle value, then to the original); its older
    # changes follow the newest's outcome. Boot-time settings are batched per reboot instead.
    collapsed: dict[tuple[str, str], str] = {}  # slot -> "restored" | "failed"
    for rec in reversed(changes):
        loc = rec.loc
        kind = KINDS[loc.kind]
        who = _who(rec)
        slot = slot_of(rec)
        if slot in collapsed:
            if collapsed[slot] == "restored":
                journal.done(session, rec.seq, "restored")
            else:
                out.failed += 1
                out.failed_seqs.append(rec.seq)
            continue
        try:
            place, why = place_of(rec)
        except KnobError as e:
            by_hand = "; ".join(kind.commands(loc, rec.original)) or "see the journal"
            forget = f"--forget {rec.host}" if rec.place.get("type") == "remote" else "--forget"
            msg = f"{who}: {e}; it stays pending: run `nettune restore` again once that is fixed, or put back {kind.show(rec.original)} by hand ({by_hand}), then `nettune restore {forget}`"
            out.failed += 1
            out.failed_seqs.append(rec.seq)
            out.lines.append(("failed", msg))
            out.warnings.append(msg)
            continue
        if place is None:
            journal.done(session, rec.seq, "gone", why)
            out.lines.append(("gone", f"{who}: nothing to restore: {why}"))
            continue
        why = ident_changed(place, loc, rec.ident)
        if why:
            journal.done(session, rec.seq, "gone", why)
            out.lines.append(("gone", f"{who}: nothing to restore: {why}"))
            continue
        if slot in left:
            journal.done(session, rec.seq, "left", "a later value was changed by someone else")
            continue
        chain = ch.count[slot] > 1 and ch.newest[slot] == rec.seq and not kind.at_boot
        original = ch.first[slot] if chain else rec.original
        made = rec.made
        try:
            cur = kind.read(place.ex, loc)
            waiting = boots.waiting(place, slot)
            if waiting is not None and kind.looks_like(cur, original):
                boots.add(place, kind, loc, slot, original, (rec, who, cur))  # configured as before already: the reboot decides
                continue
            if kind.same(cur, original):
                journal.done(session, rec.seq, "unchanged", "already the original value")
                out.lines.append(("unchanged", f"{who}: already {kind.show(original)}"))
                if chain:
                    collapsed[slot] = "restored"
                continue
            ours = kind.same(cur, rec.actual) if rec.read_back else kind.looks_like(cur, rec.new)
            ours = ours or kind.between(cur, original, made)  # a kill mid-write
            ours = ours or (chain and kind.between(cur, rec.original, made))  # mid-write of this change itself
            if kind.at_boot:
                # the host's reboot is still to come in this restore: what runs is stale, the configuration tells
                ours = ours or (boots.host_waits(place) and kind.looks_like(cur, made))
                # a restore of this setting's changes that configured the first original and did not reboot (killed, failed)
                ours = ours or kind.between(cur, ch.first[slot], made)
            if not ours:
                left.add(slot)
                msg = (f"{who} is now {kind.show(cur)}, not the {kind.show(made)} nettune set: "
                       f"changed by someone else since; left as is (before nettune it was {kind.show(ch.first[slot])})")
                journal.done(session, rec.seq, "left", msg)
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
            if chain:
                collapsed[slot] = "failed"  # the older changes stay pending with it
            continue
        _restored(journal, session, out, kind, rec, who, cur, after, original)
        if chain:
            collapsed[slot] = "restored"
    for w, err in boots.settle():  # each host rebooted once for all its boot-time changes, then checked
        after = None
        if err is None:
            try:
                after = w.kind.read(w.place.ex, w.loc)
            except KnobError as e:
                err = e
        for rec, who, cur in w.entries:
            if err is not None:
                _not_restored(journal, session, out, w.place, w.loc, rec, who, w.kind.show(rec.original), err)
            else:  # the oldest change's original is in force: every change of the setting is back
                _restored(journal, session, out, w.kind, rec, who, cur, after if rec is w.entries[-1][0] else rec.original)
    return out


def _who(rec: JournalChange) -> str:
    loc = rec.loc
    return f"{rec.host or '?'}: {loc.key}" + (f" ({loc.device})" if loc.device and "@" not in loc.key else "")


def _restored(journal: Journal, session: str, out: RestoreOutcome, kind: Kind, rec: JournalChange, who: str, cur: Any, after: Any,
              original: Any = None) -> None:
    """`original`: the value put back when not the change's own (a chain's first original)."""
    journal.done(session, rec.seq, "restored")
    original = rec.original if original is None else original
    if kind.same(after, original):
        out.lines.append(("restored", f"{who}: {kind.show(cur)} -> {kind.show(original)}"))
    else:
        msg = f"{who}: restored, but it reads back {kind.show(after)} instead of {kind.show(original)}"
        out.lines.append(("restored", msg))
        out.warnings.append(msg)


def _not_restored(journal: Journal, session: str, out: RestoreOutcome, place: Place, loc: Loc, rec: JournalChange, who: str, shown: str,
                  e: Exception) -> None:
    """A restore that raised: gone if its place vanished meanwhile, else pending (failed)."""
    why = place.gone() or ident_changed(place, loc, rec.ident)
    if why:  # vanished while we were at it (the lab was being removed)
        journal.done(session, rec.seq, "gone", why)
        out.lines.append(("gone", f"{who}: nothing to restore: {why}"))
        return
    out.failed += 1
    out.failed_seqs.append(rec.seq)
    msg = f"{who}: could not restore {shown}: {e}; run `nettune restore` again once fixed"
    out.lines.append(("failed", msg))
    out.warnings.append(msg)


@dataclass
class Chains:
    """The changes of each setting (slot) in order: the value before nettune's first change
    of it, the seq of its newest change, how many there were."""

    first: dict[tuple[str, str], Any] = field(default_factory=dict)
    newest: dict[tuple[str, str], int] = field(default_factory=dict)
    count: dict[tuple[str, str], int] = field(default_factory=dict)

    @classmethod
    def of(cls, changes: list[JournalChange]) -> "Chains":
        ch = cls()
        for rec in changes:
            slot = slot_of(rec)
            ch.first.setdefault(slot, rec.original)
            ch.newest[slot] = rec.seq
            ch.count[slot] = ch.count.get(slot, 0) + 1
        return ch


def slot_of(rec: JournalChange) -> tuple[str, str]:
    """One setting of one place: the changes of it form a chain, newest put back first."""
    loc = rec.loc
    return (str(rec.place.get("key", "")), f"{loc.kind}|{loc.arg}|{loc.device}|{KINDS[loc.kind].slot_key(loc)}")


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
    `only` selects; remote hosts are reconnected, one connection each. Every record is
    checked first (verify.py): one that fails is reported and left, never acted on.
    Returns the outcome and the sessions left alone because their runner is still running."""
    journal = journal or Journal()
    dead, alive = pending(journal)
    out = RestoreOutcome()
    verifier = Verifier()
    with RemotePlaces() as remote:
        for s in dead:
            changes = [c for c in s.changes if only is None or only(c)]
            refused = [r for r in s.refused if only is None or r.change is None or only(r.change)]
            if (s.changes or s.refused) and not changes and not refused:
                continue  # none of its changes is asked for (a session with none left just ends)
            trusted = []
            for c in changes:
                why = verifier.check(c, s)
                if why is None:
                    trusted.append(c)
                else:
                    refused.append(Refused(s.id, None, 0, why, c))
            for r in refused:
                _refused(out, journal, r)
            with critical():
                res = restore_changes(journal, s.id, trusted, lambda rec: place_from_record(rec.place, remote))
                if not res.failed and not refused and len(changes) == len(s.changes) and not s.refused:
                    journal.end(s.id)
            out.add(res)
        out.unreachable |= remote.unreachable
    return out, alive


def _refused(out: RestoreOutcome, journal: Journal, r: Refused) -> None:
    """A record that failed its checks: reported, left pending, never acted on."""
    who = _who(r.change) if r.change is not None else "a record"
    where = r.describe() if r.change is None or r.line else f"session {r.session}, change {r.change.seq}"
    where = f"journal {journal.path}, {where}"
    msg = (f"{who}: not acted on: {r.why} ({where}); check the setting by hand, then `nettune restore --forget"
           + (f" {r.change.host}`" if r.change is not None and r.change.place.get("type") == "remote" else "`"))
    out.failed += 1
    out.lines.append(("refused", msg))
    out.warnings.append(msg)


def forget(journal: Journal | None = None, only: Select | None = None, why: str = "given up by `nettune restore --forget`") -> list[tuple[str, str]]:
    """Give up pending changes (all, or those `only` selects): mark them done and return
    (host, command) lines that put each original back by hand, newest change first. A
    record that fails its checks (verify.py) is given up too, but its commands are never
    offered: a line says to check that setting by hand."""
    journal = journal or Journal()
    dead, _ = pending(journal)
    verifier = Verifier()
    lines: list[tuple[str, str]] = []
    for s in dead:
        chosen = [c for c in s.changes if only is None or only(c)]
        refused = [r for r in s.refused if only is None or r.change is None or only(r.change)]
        for rec in reversed(chosen):
            bad = verifier.check(rec, s)
            if bad is None:
                for cmd in KINDS[rec.loc.kind].commands(rec.loc, rec.original):
                    lines.append((host_label(rec), cmd))
            else:
                lines.append((host_label(rec), f"# {rec.loc.key}: the record is not shown ({bad}); check this setting by hand"))
            journal.done(s.id, rec.seq, "forgotten", why)
        for r in refused:
            lines.append((host_label(r.change) if r.change else "?", f"# {r.describe()}; check this setting by hand"))
            if r.change is not None:
                journal.done(s.id, r.change.seq, "forgotten", why)
        if len(chosen) == len(s.changes) and len(refused) == len(s.refused):
            journal.end(s.id)
    return lines
