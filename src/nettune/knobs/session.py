"""Apply a study's knobs point by point; journal first, restore everything at the end.

run_study() calls, in this order:
    precheck(study, target, resolved, ...)   before anything is created or changed: refuses
                                             to start over changes a killed run left on
                                             this study's hosts (gate.py), checks
                                             every knob of every point (in a throw-away
                                             namespace for lab hosts)
    KnobSession(study, target, study_id)
    session.apply_point(rp)                  after target.prepare(rp), for each point
    session.restore_all()                    in `finally`, before target.close()
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from typing import Any

from ..errors import NettuneError, SpecError
from .base import Ctx, Kind, KnobError, Loc, cpu_count
from .journal import Journal
from .places import Place, ident_changed, identity, machine, place_for
from .probe import SCRATCH_DEV, probe_namespace
from .registry import KINDS
from .gate import journal_gate
from .restore import critical, restore_changes
from .spec import knob_items, parse_key


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
        return (self.place.key, self.loc.kind, self.loc.arg, self.loc.device, self.loc.key if self.loc.kind == "command" else "")


class _Where:
    def __init__(self, file: str, text: str):
        self.file, self.text = file, text

    def error(self, key: str, msg: str, field: str = "") -> SpecError:
        from ..spec.load import find_line

        for prefix in (f"{key}: ", f"{key!r}: "):
            msg = msg.removeprefix(prefix)
        loc = ["knobs", "hosts", key] if field == "hosts" else ["knobs", key]
        return SpecError(self.file, ".".join(loc), msg, find_line(self.text, loc))


def plan(rp: Any, hosts: dict[str, Any], scopes: dict[Any, str] | None, where: _Where) -> list[Item]:
    """The knobs of one point, host by host, deduplicated by place (a host-wide value
    asked for by two lab hosts is one item). scopes=None: static checks only."""
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
                dev = getattr(host, "interface", None)
                if not dev:
                    raise where.error(key, f"host {name} has no default interface: name one, e.g. '{key}@eth0'")
                loc = dataclasses.replace(loc0, device=dev)
            scope = "ns"
            if scopes is not None:
                ck = (bool(getattr(host, "netns", None)), type(host).__name__, kk.kind, kk.arg, json.dumps(loc.spec, sort_keys=True))
                if ck not in scopes:
                    scopes[ck] = kind.scope(host, loc)
                scope = scopes[ck]
            item = Item(name, place_for(host, scope), loc, value)
            prev = seen.get(item.slot)
            if prev is not None:
                if not kind.same(prev.value, value):
                    raise where.error(key, f"{prev.host} and {name} share {item.place.label} but want different values")
                continue
            seen[item.slot] = item
            items.append(item)
    return items


class _CpuCounts:
    """CPU count per place (a lab namespace sees the machine's CPUs; a remote host its own)."""

    def __init__(self) -> None:
        self._n: dict[str, int] = {}

    def __call__(self, place: Place) -> int:
        key = "machine" if place.type != "remote" else place.key
        if key not in self._n:
            self._n[key] = cpu_count(place.ex if place.type == "remote" else machine().ex)
        return self._n[key]


def _queues(rp: Any) -> int | None:
    q = getattr(rp.target, "queues", None)
    return q if isinstance(q, int) else None


def precheck(study: Any, target: Any, resolved: list[Any], spec_text: str = "", spec_file: str = "<study>", restore_first: bool = False, gate: bool = True) -> list[str]:
    """Everything that can be checked before the first change; raises SpecError naming the knob.
    gate=False: the caller already ran journal_gate (run_study does, before connecting)."""
    notes = journal_gate(bool(getattr(study, "knobs", None)), restore_first, study=study) if gate else []
    if not getattr(study, "knobs", None):
        return notes
    _check_writable(Journal())
    where = _Where(spec_file, spec_text)
    for rp in resolved:
        plan(rp, target.hosts, None, where)
    lab = {n: h for n, h in target.hosts.items() if getattr(h, "netns", None)}
    queues = max([_queues(rp) or 1 for rp in resolved] or [1])
    with probe_namespace([h.interface for h in lab.values()], queues) as probe:
        from ..targets.lab import LabHost

        vhosts = dict(target.hosts)
        if probe is not None:
            vhosts |= {n: LabHost(n, probe.netns, "", h.interface) for n, h in lab.items()}
        cpus = _CpuCounts()
        scopes: dict[Any, str] = {}
        done: set[str] = set()
        for rp in resolved:
            for it in plan(rp, vhosts, scopes, where):
                scratch = probe is not None and it.place.type == "netns" and it.place.netns == probe.netns
                local = it.place.type != "remote"  # the scratch veth shows this kernel, not a remote one
                ctx = Ctx(cpus(it.place), _queues(rp) if it.host in lab else None, scratch, probe if local else None, SCRATCH_DEV, it.host)
                sig = json.dumps([it.slot, it.value, ctx.queues], default=str)
                if sig in done:
                    continue
                done.add(sig)
                try:
                    it.kind.validate(it.place.ex, it.loc, it.value, ctx)
                except KnobError as e:
                    at = f" (host {it.host}" + (f", point {rp.point.label()})" if len(resolved) > 1 else ")")
                    raise where.error(it.loc.key, str(e) + at) from None
                notes += [n for n in ctx.notes if n not in notes]
    return notes


def _check_writable(journal: Journal) -> None:
    d = journal.path.parent
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise NettuneError(f"cannot create {d} for the knob journal ({e.strerror}); run as root or set NETTUNE_STATE_DIR") from None
    if not os.access(d, os.W_OK) or (journal.path.exists() and not os.access(journal.path, os.W_OK)):
        raise NettuneError(f"cannot write the knob journal in {d}; run as root or set NETTUNE_STATE_DIR")


class KnobSession:
    def __init__(self, study: Any, target: Any, study_id: int | None):
        self.study, self.target = study, target
        self.journal = Journal()
        self.sid = self.journal.begin(study.name, study_id)
        self.seq = 0
        self.active: list[dict[str, Any]] = []  # journaled changes in force, oldest first
        self.messages: list[str] = []
        self.warnings: list[str] = []
        self._said: set[str] = set()
        self._scopes: dict[Any, str] = {}
        self._cpus = _CpuCounts()
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
        items = plan(rp, self.target.hosts, self._scopes, _Where("<study>", ""))
        for it in items:
            if it.place.type == "machine" and getattr(self.target.hosts[it.host], "netns", None):
                self._say(f"knob {it.loc.key} is host-wide (not per network namespace): set once on this machine for all lab hosts, restored at the end")
            ctx = Ctx(self._cpus(it.place), _queues(rp) if getattr(self.target.hosts[it.host], "netns", None) else None, host=it.host)
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
