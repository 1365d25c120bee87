"""Everything about a study's knobs that can be checked before the first change.

run_study() calls, before anything is created or changed:
    journal_gate(...)   (gate.py) refuses to start over changes a killed run left on this
                        study's hosts, unless --restore-first restores them
    precheck(...)       the journal can be written, and every knob of every point is
                        valid: statically, then against the hosts (lab hosts through
                        stand-ins in throw-away namespaces, Target.scratch)
Errors are SpecErrors naming the knob's line in the study file.
"""
from __future__ import annotations

import json
import os
from typing import Any

from ..errors import NettuneError
from ..studyfile.models import Study
from ..targets.base import Target
from .base import Ctx, KnobError
from .gate import journal_gate
from .items import SpecLocator, lab_queues, point_items
from .journal import Journal
from .places import CpuCounts


def precheck(study: Study, target: Target, resolved: list[Any], spec_text: str = "", spec_file: str = "<study>", restore_first: bool = False, gate: bool = True) -> list[str]:
    """Everything that can be checked before the first change; raises SpecError naming the knob.
    gate=False: the caller already ran journal_gate (run_study does, before connecting)."""
    notes = journal_gate(bool(study.knobs), restore_first, study=study) if gate else []
    if not study.knobs:
        return notes
    check_journal_writable(Journal())
    where = SpecLocator(spec_file, spec_text)
    for rp in resolved:
        point_items(rp, target.hosts, None, where)
    lab = {n for n, h in target.hosts.items() if h.netns}
    queues = max([lab_queues(rp) or 1 for rp in resolved] or [1])
    with target.scratch(queues) as scratch:
        hosts = dict(target.hosts) | (scratch.hosts if scratch is not None else {})
        cpus = CpuCounts()
        scopes: dict[Any, str] = {}
        done: set[str] = set()
        for rp in resolved:
            for it in point_items(rp, hosts, scopes, where):
                in_scratch = scratch is not None and it.place.type == "netns" and it.place.netns == scratch.spare.netns
                # the spare interface shows this machine's kernel, not a remote one
                spare = scratch.spare if scratch is not None and it.place.type != "remote" else None
                ctx = Ctx(cpus(it.place), lab_queues(rp) if it.host in lab else None, in_scratch, spare,
                          scratch.spare_dev if scratch is not None else "", it.host)
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


def check_journal_writable(journal: Journal) -> None:
    d = journal.path.parent
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise NettuneError(f"cannot create {d} for the knob journal ({e.strerror}); run as root or set NETTUNE_STATE_DIR") from None
    if not os.access(d, os.W_OK) or (journal.path.exists() and not os.access(journal.path, os.W_OK)):
        raise NettuneError(f"cannot write the knob journal in {d}; run as root or set NETTUNE_STATE_DIR")
