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
from ..studyfile.models import Study, hypervisor_hint, workload_kind


def selection_follows_sweep(study: Study) -> bool:
    """Does the sweep choose the hosts (a template in a field the workload kind names hosts
    with: server, client, pairs, or a command's host)?"""
    return workload_kind(str(study.workload.engine)).follows_sweep(study.workload)


def check_point_hosts(study: Study, rp: Any, text: str, file: str) -> None:
    """Every host the resolved point names exists; then, when the sweep chooses the pair,
    knobs without a hosts entry are narrowed to this point's hosts (rp.extra)."""
    test_hosts = list(study.target.test_hosts)
    every = list(study.target.hosts)
    wl = rp.workload
    kind = workload_kind(str(wl.engine))
    where = f"at point {rp.point.label()}"
    written_workload = study.workload.model_dump()

    def bad(field: str, name: Any, known: list[str], written: Any) -> SpecError:
        fix = (f"the template {written!r} must give one of them at every point: change the sweep values or the template"
               if has_placeholder(written) else "use one of them")
        return SpecError(file, field, f"{name!r} ({where}) is not a target host{' that runs tests' if known is test_hosts else ''} "
                         f"({', '.join(known)}); {fix}{hypervisor_hint([str(name)], list(study.target.hypervisors))}",
                         find_line(text, field.split(".")))

    for named in kind.host_fields(wl):
        if named.name not in test_hosts:
            raise bad(named.field, named.name, test_hosts, written_workload[named.field.removeprefix("workload.")])
    problem = kind.hosts_problem(wl, test_hosts)
    if problem is not None:
        field, why = problem
        raise SpecError(file, field, f"{why} ({where})", find_line(text, field.split(".")))
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
    """The hosts a resolved point runs its tests on (server and client, its pairs', or a
    command's one host)."""
    return workload_kind(str(rp.workload.engine)).point_hosts(rp.workload, list(rp.target.test_hosts))
