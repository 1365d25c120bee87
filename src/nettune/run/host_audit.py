"""`nettune run` audits the study's hosts once, before the first point's knobs (the doctor's
checks, nothing changed), and stores what it found with the host facts, so the report can
say what a reader should know about the hosts next to the numbers. `--doctor off` skips it."""
from __future__ import annotations

from typing import Any

from ..doctor.audit import audit, target_views
from ..studyfile.models import Study
from ..targets.base import Target


def audit_target(study: Study, target: Target) -> tuple[dict[str, list[dict[str, Any]]], str]:
    """({host: [finding dicts]}, a one-line summary for the run's output)."""
    views = target_views(target)
    addresses = {n: h.address for n, h in target.hosts.items() if n in target.test_hosts}
    rep = audit(views, addresses)
    by_host: dict[str, list[dict[str, Any]]] = {}
    for f in rep.findings:
        by_host.setdefault(f.host, []).append(f.as_dict())
    c = rep.counts()
    errors = f", {len(rep.errors)} check(s) could not run" if rep.errors else ""
    return by_host, (f"doctor: {c['problem']} problem(s), {c['warn']} warning(s) on the hosts{errors}; stored with the study "
                     "(`nettune report` lists them, `nettune doctor` explains; `--doctor off` skips this)")
