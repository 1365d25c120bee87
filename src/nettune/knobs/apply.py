"""Apply a study's knobs point by point during a run; put everything back at the end.

run_study() calls, after precheck (precheck.py):
    KnobSession(study, target, study_id)    opens a session in the journal
    session.apply_point(rp)                 after target.prepare(rp), for each point
    session.restore_all()                   in `finally`, before target.close()

Every change is journaled (fsynced) and listed in `active` before it is made, so an
interrupt at any moment leaves restore_all, or `nettune restore` after kill -9, knowing it.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import NettuneError, PointFailed
from ..studyfile.models import Study
from ..targets.base import Target
from .base import Ctx, Kind, KnobError, NotInForce
from .boot_batch import BootBatch
from .items import Item, SpecLocator, lab_queues, point_items
from .journal import Journal
from .journal_records import JournalChange
from .places import CpuCounts, Place, ident_changed, identity
from .registry import KINDS
from .restore import Chains, critical, restore_changes, slot_of


@dataclass
class Active:
    """A journaled change in force, with what this run keeps beside its record: the live
    place it was made at and the setting it changes (never written to the journal)."""

    change: JournalChange
    place: Place
    slot: tuple[Any, ...]


def study_source(study: Study) -> tuple[str, str] | None:
    """(absolute path, SHA-256 of the text) of the study file this run read, if it read one."""
    src = study.source if isinstance(study, Study) else None  # doctor --fix names a session, reads no file
    return (src[0], hashlib.sha256(src[1].encode()).hexdigest()) if src else None


class KnobSession:
    def __init__(self, study: Study, target: Target | None, study_id: int | None, kept: bool = False,
                 announce: Callable[[str], None] | None = None):
        """kept: the changes stay in force after this process (`nettune doctor --fix`);
        nothing restores them but `nettune restore`. announce: says a disruptive step (a
        reboot, a VM restart, a link reset) at the moment it is taken, before it is."""
        self.study, self.target = study, target
        self.announce = announce or (lambda text: None)
        self.journal = Journal()
        self.sid = self.journal.begin(study.name, study_id, kept=kept, source=study_source(study))
        self.seq = 0
        self.active: list[Active] = []  # journaled changes in force, oldest first
        self.messages: list[str] = []
        self.warnings: list[str] = []
        self.read_back: dict[str, dict[str, Any]] = {}  # place -> what the last point's knobs decide beyond their values
        self._said: set[str] = set()
        self._scopes: dict[Any, str] = {}
        self._cpus = CpuCounts()
        self._closed = False
        self._pid = os.getpid()

    def take_messages(self) -> list[str]:
        out, self.messages = self.messages, []
        return out

    def _say(self, msg: str) -> None:
        if msg not in self._said:
            self._said.add(msg)
            self.messages.append(msg)

    def apply_point(self, rp: Any) -> dict[str, dict[str, Any]]:
        """Set this point's knobs (restoring those it no longer sets); returns what is in force."""
        items = point_items(rp, self.target.hosts, self._scopes, SpecLocator("<study>", ""))
        for it in items:
            in_lab = bool(self.target.hosts[it.host].netns)
            if it.place.type == "machine" and in_lab:
                self._say(f"knob {it.loc.key} is host-wide (not per network namespace): set once on this machine for all lab hosts, restored at the end")
            ctx = Ctx(self._cpus(it.place), lab_queues(rp) if in_lab else None, host=it.host)
            try:
                it.kind.validate(it.place.ex, it.loc, it.value, ctx)
            except KnobError as e:
                raise NettuneError(f"knob {it.loc.key} on {it.host} (point {rp.point.label()}): {e}") from None
            for n in ctx.notes:
                self._say(n)
        # No signal blocking here (an apply may take minutes, e.g. a VM restart): a change
        # is journaled and listed in self.active before it is made, so an interrupt at any
        # point leaves restore_all (or `nettune restore`) knowing about it.
        self._drop_stale()
        wanted = {it.slot for it in items}
        stale = [a for a in self.active if a.slot not in wanted]
        if stale:
            self._restore(stale)
        return self._set_all(items)

    def set_items(self, items: list[Item]) -> dict[str, dict[str, Any]]:
        """Validate these items (doctor fixes), then set them, each journaled before it is made."""
        for it in items:
            ctx = Ctx(self._cpus(it.place), None, host=it.host)
            try:
                it.kind.validate(it.place.ex, it.loc, it.value, ctx)
            except KnobError as e:
                raise NettuneError(f"knob {it.loc.key} on {it.host}: {e}") from None
        return self._set_all(items)

    def _set_all(self, items: list[Item]) -> dict[str, dict[str, Any]]:
        """Boot-time values first, all of a host's with one reboot (a reboot after a
        run-time value was set would take that value away again), then the others."""
        values: dict[str, dict[str, Any]] = {}
        for it, shown in self._set_at_boot([it for it in items if it.kind.at_boot]):
            values.setdefault(it.place.label, {})[it.loc.key] = shown
        for it in sorted(items, key=lambda it: it.kind.apply_order):  # a mode switch before a profile before single settings
            if not it.kind.at_boot:
                values.setdefault(it.place.label, {})[it.loc.key] = self._set(it)
        self.read_back = {}
        for it in items:  # what the point's knobs decide beyond their own values, once all are set
            if it.place.label not in self.read_back and (seen := it.kind.read_back(it.place.ex)):
                self.read_back[it.place.label] = seen
        return values

    def _set(self, it: Item) -> Any:
        kind, ex, loc = it.kind, it.place.ex, it.loc
        cur = kind.read(ex, loc)
        if self._in_force(it, cur):
            return self._shown(kind, cur, it.value)
        rec = self._journaled(it, cur)
        self._disrupting(it, cur)
        try:
            kind.apply(ex, loc, it.value)
        except NotInForce as e:  # made and journaled (restored at the end), but not what the host runs with
            raise PointFailed(f"knob {loc.key} on {it.place.label}: {e}") from None
        except KnobError as e:
            raise self._failed(it, rec, cur, e) from None
        return self._read_back(it, rec, cur)

    def _set_at_boot(self, items: list[Item]) -> list[tuple[Item, Any]]:
        """Boot-time items: every edit first, then each host rebooted once for all of them
        (boot_batch.py), then each value checked and read back as _set does."""
        shown: list[tuple[Item, Any]] = []
        boots = BootBatch()
        for it in items:
            cur = it.kind.read(it.place.ex, it.loc)
            if self._in_force(it, cur):
                shown.append((it, self._shown(it.kind, cur, it.value)))
                continue
            rec = self._journaled(it, cur)
            try:
                it.kind.configure(it.place.ex, it.loc, it.value)
            except KnobError as e:
                raise self._failed(it, rec, cur, e) from None
            self._disrupting(it, cur)
            boots.add(it.place, it.kind, it.loc, it.slot, it.value, (it, rec, cur))
        not_in_force: list[str] = []
        for w, err in boots.settle():
            it, rec, cur = w.entries[0]
            if isinstance(err, NotInForce):  # made and journaled (restored at the end), but not what the host runs with
                not_in_force.append(f"knob {it.loc.key} on {it.place.label}: {err}")
            elif err is not None:
                raise self._failed(it, rec, cur, err)
            else:
                try:
                    shown.append((it, self._read_back(it, rec, cur)))
                except PointFailed as e:
                    not_in_force.append(str(e))
        if not_in_force:
            raise PointFailed("; ".join(not_in_force))
        return shown

    def _disrupting(self, it: Item, cur: Any) -> None:
        """Say a change that reboots a host, restarts a VM or resets a link, as it starts."""
        d = it.kind.disruption(it.loc)
        if d is None:
            return
        vm = f", VM {it.kind.vm_name(it.loc)}" if it.kind.vm_field else ""
        when = f" {d.when}" if d.when else ""
        self.announce(f"{d.what.upper()}: {it.loc.key} {it.kind.show(cur)} -> {it.kind.show(it.value)} on {it.place.label}{vm}{when} "
                      f"({d.does}): {' | '.join(it.kind.commands(it.loc, it.value))}; put back at the end")

    def _in_force(self, it: Item, cur: Any) -> bool:
        """Is the item's value already there (this session's own change, or before it)?"""
        top = next((a.change for a in reversed(self.active) if a.slot == it.slot), None)
        if top is not None:
            return it.kind.same(top.new, it.value) and it.kind.same(cur, top.made)
        return it.kind.same(cur, it.value)

    def _journaled(self, it: Item, cur: Any) -> Active:
        """The change's record, fsynced and listed in self.active before it is made."""
        self.seq += 1
        rec = self.journal.change(self.sid, self.seq, self.study.name, it.place.label, it.loc.record(), it.place.record(), cur, it.value,
                                  identity(it.place, it.loc))
        active = Active(rec, it.place, it.slot)
        self.active.append(active)  # before the change: restore_all must know about it
        return active

    def _failed(self, it: Item, rec: Active, cur: Any, e: KnobError) -> NettuneError:
        """A change that raised: settled as not-applied when nothing changed, else kept for the restore."""
        try:
            now = it.kind.read(it.place.ex, it.loc)
        except KnobError:
            now = None
        if now is not None and it.kind.same(now, cur):
            self.journal.done(self.sid, rec.change.seq, "not-applied", str(e))
            self.active.remove(rec)
        return NettuneError(f"knob {it.loc.key} on {it.place.label}: {e}")

    def _read_back(self, it: Item, rec: Active, cur: Any) -> Any:
        kind, ex, loc = it.kind, it.place.ex, it.loc
        after = kind.read(ex, loc)
        self.journal.actual(self.sid, rec.change.seq, after)
        rec.change.set_actual(after)
        if not kind.looks_like(after, it.value):
            if kind.must_read_back:  # the tool said yes but nothing changed: measuring it would lie
                if kind.same(after, cur):
                    self.journal.done(self.sid, rec.change.seq, "not-applied", "did not read back")
                    self.active.remove(rec)
                raise PointFailed(f"knob {loc.key} on {it.place.label}: set {kind.show(it.value)} but it reads back {kind.show(after)} (the host accepted the command and kept the old value)")
            self._say(f"knob {loc.key} on {it.place.label}: set {it.value!r} but it reads back {after!r}")
        return self._shown(kind, after, it.value)

    @staticmethod
    def _shown(kind: Kind, current: Any, wanted: Any) -> Any:
        return wanted if kind.looks_like(current, wanted) else current

    def _drop_stale(self) -> None:
        """Forget changes whose namespace or interface the target re-created: the new one
        starts from defaults (nothing to restore there), and this point sets it again."""
        keep = []
        for rec in self.active:
            place = rec.place
            why = place.gone() or ident_changed(place, rec.change.loc, rec.change.ident)
            if why:
                self.journal.done(self.sid, rec.change.seq, "void", why)
                self._say(f"{place.label}: {why}; its knobs are applied again")
            else:
                keep.append(rec)
        self.active = keep

    def _restore(self, records: list[Active]) -> None:
        places = {a.change.seq: a.place for a in records}

        def place_of(rec: JournalChange) -> tuple[Place | None, str]:
            why = places[rec.seq].gone()
            return (None, why) if why else (places[rec.seq], "")

        out = restore_changes(self.journal, self.sid, [a.change for a in records], place_of)
        self.warnings += out.warnings
        failed = set(out.failed_seqs)
        gone = {a.change.seq for a in records if a.change.seq not in failed}
        self.active = [a for a in self.active if a.change.seq not in gone]

    def restore_all(self) -> list[str]:
        """Put every value back, newest first; returns warnings (never raises for a knob)."""
        if self._closed or os.getpid() != self._pid:  # never from a fork()ed helper
            return []
        self._closed = True
        with critical():
            # what putting back will disrupt, said before it starts, in the order it will: once per
            # setting, back to its first original (restore.py puts a chain of changes back at once)
            first = Chains.of([a.change for a in self.active]).first
            said = set()
            for a in reversed(self.active):
                d = KINDS[a.change.loc.kind].disruption(a.change.loc)
                if d is not None and slot_of(a.change) not in said:
                    said.add(slot_of(a.change))
                    self.announce(f"{d.what.upper()} to restore: {a.change.loc.key} back to {KINDS[a.change.loc.kind].show(first[slot_of(a.change)])} "
                                  f"on {a.place.label}" + (f" {d.when}" if d.when else ""))
            if self.active:
                self._restore(list(self.active))
            if self.active:
                self.warnings.append(f"{len(self.active)} setting(s) could not be restored; run `nettune restore` (journal {self.journal.path})")
            else:
                self.journal.end(self.sid)
        return self.warnings
