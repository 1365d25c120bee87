"""Hosts chosen by the sweep: `server = "{os}-a"`, `pairs = [["{os}-a", "{os}-b"]]`,
`[knobs.hosts] "mtu" = ["{os}-a", "{os}-b"]`.

The study file is read with the templates as written (spec.models skips them); once a
point is resolved, every host name it fills in must be one of the target's hosts. A name
that is not is a one-line SpecError naming the file, the field, the point and the fix,
raised by plan.points.expand_and_check: before anything is created, connected or changed.

When the pair follows the sweep, a knob without a [knobs.hosts] entry is set only on the
hosts of each point's pair (and on hosts that run no tests, an ssh target's hypervisors,
whose knobs are theirs alone): a FreeBSD point never touches the Debian VMs.
"""
from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..studyfile.expr import has_placeholder
from ..studyfile.load import find_line
from ..studyfile.models import Study, pairs_hosts, pairs_problem


def selection_follows_sweep(study: Study) -> bool:
    """Does the sweep choose the hosts (a template in server, client, pairs, or a command's host)?"""
    wl = study.workload
    if wl.engine == "command":
        return has_placeholder(wl.host)
    return has_placeholder([wl.server, wl.client]) or (wl.pairs is not None and has_placeholder(wl.pairs))


def check_point_hosts(study: Study, rp: Any, text: str, file: str) -> None:
    """Every host the resolved point names exists; then, when the sweep chooses the pair,
    knobs without a hosts entry are narrowed to this point's hosts (rp.extra)."""
    test_hosts = list(study.target.test_hosts)
    every = list(study.target.hosts)
    wl = rp.workload
    where = f"at point {rp.point.label()}"

    def bad(field: str, name: Any, known: list[str], written: Any) -> SpecError:
        fix = (f"the template {written!r} must give one of them at every point: change the sweep values or the template"
               if has_placeholder(written) else "use one of them")
        return SpecError(file, field, f"{name!r} ({where}) is not a target host{' that runs tests' if known is test_hosts else ''} "
                         f"({', '.join(known)}); {fix}", find_line(text, field.split(".")))

    if wl.engine == "command":  # one host runs it; server/client do not apply
        if wl.host is not None and wl.host not in test_hosts:
            raise bad("workload.host", wl.host, test_hosts, study.workload.host)
    elif wl.pairs is not None:
        for h in pairs_hosts(wl.pairs):
            if h not in test_hosts:
                raise bad("workload.pairs", h, test_hosts, study.workload.pairs)
        problem = pairs_problem(wl.pairs, test_hosts)
        if problem:
            raise SpecError(file, "workload.pairs", f"{problem} ({where})", find_line(text, ["workload", "pairs"]))
    else:
        for role, h, written in (("server", wl.server, study.workload.server), ("client", wl.client, study.workload.client)):
            if h not in test_hosts:
                raise bad(f"workload.{role}", h, test_hosts, written)
    knobs = rp.extra.get("knobs")
    if not knobs:
        return
    written_hosts = (study.knobs.hosts if study.knobs is not None else {}) or {}
    hosts = knobs.setdefault("hosts", {}) if isinstance(knobs, dict) else {}
    for key, names in list(hosts.items()):
        for h in names or []:
            if h not in every:
                raise SpecError(file, f"knobs.hosts.{key}", f"{h!r} ({where}) is not a target host ({', '.join(every)}); "
                                f"{'the template ' + repr(written_hosts.get(key)) + ' must give one of them at every point' if has_placeholder(written_hosts.get(key)) else 'use one of them'}",
                                find_line(text, ["knobs", "hosts", key]))
    if selection_follows_sweep(study):
        mine = point_hosts(rp)
        others = [h for h in every if h not in test_hosts]  # hypervisors: only sampled, their knobs are theirs
        for key in knobs:
            if key != "hosts" and key not in hosts:
                hosts[key] = mine + others


def point_hosts(rp: Any) -> list[str]:
    """The hosts a resolved point runs its tests on (server and client, or its pairs')."""
    wl = rp.workload
    if wl.engine == "command":
        return [wl.host or rp.target.test_hosts[0]]
    if wl.pairs is None:
        return [wl.server, wl.client]
    from .pairs import expand_pairs  # noqa: PLC0415

    names = list(rp.target.test_hosts)
    return list(dict.fromkeys(h for pair in expand_pairs(wl.pairs, names) for h in pair))
