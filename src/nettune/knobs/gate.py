"""Which pending changes concern what: a study's hosts, one host, a lab being removed.

A change left pending by a killed run lives on this machine (place "machine", or a lab
namespace) or on a remote host (identified by the address and port it was reached at).
It blocks only the studies it could distort:

    local and lab studies   <- changes on this machine (machine and namespace places)
    ssh studies             <- changes on a remote host the study connects to

Every other study runs, with a note naming the hosts that still have pending changes.
restore_journal is `nettune restore [HOST] [--forget]`; settle_labs runs before `lab down`.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NettuneError
from ..targets import footprint
from ..targets.procs import stop_dead_runs
from .journal import Journal
from .journal_records import JournalChange, OpenSession
from .remote import host_label, reach_of
from .restore import RestoreOutcome, Select, forget, pending, restore_pending


def _remote(rec: JournalChange) -> tuple[str, int | None] | None:
    place = rec.place
    if place.get("type") != "remote":
        return None
    r = reach_of(place)
    return str(r.get("address") or "").lower(), r.get("port")


def study_touches(study: Any) -> Select:
    """Does a pending change live on a host this study uses (targets/footprint.py)?"""
    fp = footprint(study)
    remote_addresses = {a for a, _ in fp.remotes}

    def touches(rec: JournalChange) -> bool:
        place = rec.place
        if place.get("type") == "netns":
            return place.get("netns") in fp.namespaces
        where = _remote(rec)
        if where is None:
            return fp.machine  # this machine
        address, port = where
        if (address, port) in fp.remotes or (not port and address in remote_addresses):  # older records: no port
            return True
        try:
            return any(ipaddress.ip_address(address) in net for net in fp.subnets)  # a lab host reached over SSH
        except ValueError:
            return False

    return touches


def for_host(name: str) -> Select:
    """A host as the user names it: its name in the study, its address, or `machine`."""
    want = name.lower()

    def match(rec: JournalChange) -> bool:
        place = rec.place
        names = {str(place.get("label", "")).lower(), rec.host.lower()}
        if place.get("type") == "remote":
            names.add(str(reach_of(place).get("address") or "").lower())
        elif place.get("type") == "netns":
            names.add(str(place.get("netns", "")).lower())
        return want in names

    return match


def in_labs(namespaces: set[str], subnets: list[Any]) -> Select:
    """Changes on lab hosts about to be removed: in their namespaces, or reached over SSH
    at one of their addresses (the lab's sshd)."""

    def match(rec: JournalChange) -> bool:
        place = rec.place
        if place.get("type") == "netns":
            return place.get("netns") in namespaces
        where = _remote(rec)
        if where is None:
            return False
        try:
            address = ipaddress.ip_address(where[0])
        except ValueError:
            return False
        return any(address in net for net in subnets)

    return match


def pending_hosts(journal: Journal, only: Select | None = None) -> list[str]:
    """Hosts with pending changes of dead runs (those `only` selects), as the user knows them."""
    dead, _ = pending(journal)
    return sorted({host_label(c) for s in dead for c in s.pending if only is None or only(c)})


def journal_gate(has_knobs: bool, restore_first: bool = False, journal: Journal | None = None, study: Any = None) -> list[str]:
    """Refuse to start over settings a killed run left changed on this study's hosts (or
    restore them first); returns notes (pending changes elsewhere, what was restored)."""
    journal = journal or Journal()
    try:
        dead, alive = pending(journal)
    except NettuneError:
        if has_knobs:
            raise
        return []  # cannot read root's journal (not root): a study without knobs changes nothing
    touches: Select = study_touches(study) if study is not None else (lambda rec: True)
    notes: list[str] = []
    kept = [s for s in dead if s.kept and s.pending]
    if kept:  # doctor fixes: in force on purpose; the study measures with them
        hosts = sorted({host_label(c) for s in kept for c in s.pending})
        notes.append(f"note: `nettune doctor --fix` changes are in force on {', '.join(hosts)} ({sum(len(s.pending) for s in kept)} setting(s)); "
                     "`nettune restore` puts them back")
    dead = [s for s in dead if not s.kept]
    kept_ids = {s.id for s in kept}
    ours: Select = lambda rec: touches(rec) and rec.session not in kept_ids  # noqa: E731
    # a record not even readable as a change could be anywhere: it blocks every study until restored or given up
    mine = [s for s in dead if s.unreadable or any(touches(c) for c in s.pending)]
    if mine:
        hosts = ", ".join(pending_hosts(journal, ours)) or "a host a journal record does not say (it is unreadable)"
        if not restore_first:
            raise NettuneError(
                f"an earlier run was interrupted and left settings changed on {hosts}, which this study uses "
                f"({mine[0].describe()}; journal {journal.path}); run `nettune restore` to put them back, or pass --restore-first"
            )
        out, _ = restore_pending(journal, ours)
        notes += [f"restore-first: {result}: {text}" for result, text in out.lines]
        if out.failed:
            raise NettuneError(f"--restore-first: {out.failed} setting(s) could not be restored ({out.warnings[0]}); fix that and run `nettune restore`")
    for s in dead:
        if not s.changes and not s.refused:
            journal.end(s.id)  # died before changing anything
    still = pending(journal)[0] if mine else dead  # only a restore changed what is pending
    others = sorted({host_label(c) for s in still if not s.kept for c in s.pending})
    if others:
        notes.append(f"note: an interrupted run left settings changed on {', '.join(others)}; this study does not use "
                     "them, so it runs (`nettune restore` puts them back, `nettune restore --forget HOST` gives them up)")
    if alive and has_knobs:
        raise NettuneError(f"another nettune run is changing settings on this machine right now ({alive[0].describe()}); wait for it to finish")
    journal.rotate_if_big()  # if nothing is open; a study without knobs never begins a session, which rotates too
    return notes


def settle_labs(namespaces: set[str], subnets: list[Any], journal: Journal | None = None) -> tuple[Any, list[tuple[str, str]]]:
    """Before `nettune lab down` removes these lab hosts: restore their pending changes
    while they are still reachable (namespaces, and the lab's sshds), and give up what
    cannot be restored. Returns (restore outcome, (host, command) lines given up)."""
    journal = journal or Journal()
    if not namespaces and not subnets:
        return None, []
    chosen = in_labs(namespaces, subnets)
    out, _ = restore_pending(journal, chosen)
    given_up = forget(journal, chosen, "given up: `nettune lab down` removed the lab before it could be restored")
    return out, given_up


@dataclass
class RestoreReport:
    """What `nettune restore [HOST] [--forget]` did, for the CLI to print."""

    outcome: RestoreOutcome
    alive: list[OpenSession]  # sessions left alone: their run is still going
    given_up: list[tuple[str, str]] | None  # (host, command) lines forgotten with --forget; None: nothing forgotten
    journal: Path
    stopped: list[int] = field(default_factory=list)  # processes of killed runs stopped first


def restore_journal(host: str | None = None, forget_failed: bool = False, journal: Journal | None = None) -> RestoreReport:
    """Restore what interrupted runs left changed (only HOST's, if given); with
    forget_failed, give up what could not be restored. NettuneError when HOST has nothing.
    First, every process a killed run left on this machine is stopped (an iperf3 server
    of the run would hold its port, and its knobs' values would be measured meanwhile)."""
    journal = journal or Journal()
    stopped = stop_dead_runs()
    only = None
    if host:
        only = for_host(host)
        if not pending_hosts(journal, only):
            others = pending_hosts(journal)
            raise NettuneError(f"no pending change on {host!r}" + (f"; hosts with pending changes: {', '.join(others)}" if others else "; nothing is pending"))
    out, alive = restore_pending(journal, only)
    given_up = forget(journal, only) if out.failed and forget_failed else None
    return RestoreReport(out, alive, given_up, journal.path, stopped)
