"""Apply a study's knobs point by point during a run; put everything back at the end.

run_study() calls, after precheck (precheck.py):
    KnobSession(study, target, study_id)    opens a session in the journal
    session.apply_point(rp)                 after target.prepare(rp), for each point
    session.restore_all()                   in `finally`, before target.close()

Every change is journaled (fsynced) and listed in `active` before it is made, so an
interrupt at any moment leaves restore_all, or `nettune restore` after kill -9, knowing it.
"""
from __future__ import annotations

import os
from typing import Any

from ..errors import NettuneError, PointFailed
from ..spec.models import Study
from ..targets.base import Target
from .base import Ctx, Kind, KnobError, Loc, NotInForce
from .items import Item, SpecLocator, lab_queues, point_items
from .journal import Journal
from .places import CpuCounts, Place, ident_changed, identity
from .restore import critical, restore_changes


class KnobSession:
    def __init__(self, study: Study, target: Target | None, study_id: int | None, kept: bool = False):
        """kept: the changes stay in force after this process (`nettune doctor --fix`);
        nothing restores them but `nettune restore`."""
        self.study, self.target = study, target
        self.journal = Journal()
        self.sid = self.journal.begin(study.name, study_id, kept=kept)
        self.seq = 0
        self.active: list[dict[str, Any]] = []  # journaled changes in force, oldest first
        self.messages: list[str] = []
        self.warnings: list[str] = []
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
        values: dict[str, dict[str, Any]] = {}
        self._drop_stale()
        wanted = {it.slot for it in items}
        stale = [r for r in self.active if r["_slot"] not in wanted]
        if stale:
            self._restore(stale)
        for it in items:
            values.setdefault(it.place.label, {})[it.loc.key] = self._set(it)
        return values

    def set_items(self, items: list[Item]) -> dict[str, dict[str, Any]]:
        """Validate and set these items (doctor fixes), each journaled before it is made."""
        values: dict[str, dict[str, Any]] = {}
        for it in items:
            ctx = Ctx(self._cpus(it.place), None, host=it.host)
            try:
                it.kind.validate(it.place.ex, it.loc, it.value, ctx)
            except KnobError as e:
                raise NettuneError(f"knob {it.loc.key} on {it.host}: {e}") from None
            values.setdefault(it.place.label, {})[it.loc.key] = self._set(it)
        return values

    def _set(self, it: Item) -> Any:
        kind, ex, loc = it.kind, it.place.ex, it.loc
        cur = kind.read(ex, loc)
        top = next((r for r in reversed(self.active) if r["_slot"] == it.slot), None)
        if top is not None:
            if kind.same(top["new"], it.value) and kind.same(cur, top.get("actual", top["new"])):
                return self._shown(kind, cur, it.value)
        elif kind.same(cur, it.value):
            return self._shown(kind, cur, it.value)
        self.seq += 1
        rec = self.journal.change(self.sid, self.seq, self.study.name, it.place.label, loc.record(), it.place.record(), cur, it.value, identity(it.place, loc))
        rec["_place"], rec["_slot"] = it.place, it.slot
        self.active.append(rec)  # before the change: restore_all must know about it
        try:
            kind.apply(ex, loc, it.value)
        except NotInForce as e:  # made and journaled (restored at the end), but not what the host runs with
            raise PointFailed(f"knob {loc.key} on {it.place.label}: {e}") from None
        except KnobError as e:
            try:
                now = kind.read(ex, loc)
            except KnobError:
                now = None
            if now is not None and kind.same(now, cur):
                self.journal.done(self.sid, self.seq, "not-applied", str(e))
                self.active.remove(rec)
            raise NettuneError(f"knob {loc.key} on {it.place.label}: {e}") from None
        after = kind.read(ex, loc)
        self.journal.actual(self.sid, self.seq, after)
        rec["actual"] = after
        if not kind.looks_like(after, it.value):
            if kind.must_read_back:  # the tool said yes but nothing changed: measuring it would lie
                if kind.same(after, cur):
                    self.journal.done(self.sid, self.seq, "not-applied", "did not read back")
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
            place: Place = rec["_place"]
            why = place.gone() or ident_changed(place, Loc.from_record(rec["loc"]), rec.get("ident") or {})
            if why:
                self.journal.done(self.sid, rec["seq"], "void", why)
                self._say(f"{place.label}: {why}; its knobs are applied again")
            else:
                keep.append(rec)
        self.active = keep

    def _restore(self, records: list[dict[str, Any]]) -> None:
        def place_of(rec: dict[str, Any]) -> tuple[Place | None, str]:
            why = rec["_place"].gone()
            return (None, why) if why else (rec["_place"], "")

        out = restore_changes(self.journal, self.sid, records, place_of)
        self.warnings += out.warnings
        failed = set(out.failed_seqs)
        gone = {id(r) for r in records if r["seq"] not in failed}
        self.active = [r for r in self.active if id(r) not in gone]

    def restore_all(self) -> list[str]:
        """Put every value back, newest first; returns warnings (never raises for a knob)."""
        if self._closed or os.getpid() != self._pid:  # never from a fork()ed helper
            return []
        self._closed = True
        with critical():
            if self.active:
                self._restore(list(self.active))
            if self.active:
                self.warnings.append(f"{len(self.active)} setting(s) could not be restored; run `nettune restore` (journal {self.journal.path})")
            else:
                self.journal.end(self.sid)
        return self.warnings
