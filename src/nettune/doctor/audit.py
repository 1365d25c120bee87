"""Run the checks on a set of hosts and gather what they found (nothing is changed here).

Hosts come from this machine (no study), a study's target (local, lab namespaces, ssh
hosts) or named hosts of an inventory. Checks about the machine itself (CPU, power,
virtualization, the installed tools) run once per machine, so lab namespaces sharing this
machine are not audited twice for it; a host-wide setting a per-host check reads (a sysctl
a namespace cannot set, HostView.setting) is reported once, under the machine, the
strictest of what its hosts asked for. A check that fails is an error of the report (exit code 2), never
a traceback; the other checks still run.
"""
from __future__ import annotations

import logging
import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from .base import SEVERITIES, Finding, HostView
from .path_mtu import peers_of
from .registry import CHECKS, STUDY_CHECKS
from .sources import LiveSource, Recorder

log = logging.getLogger("nettune.doctor")
# the evidence names files and commands; which source answered is the finding's `inputs`
# (so a host read live and through its own capture gives the same evidence)
LIVE_OR_CAPTURE = re.compile(r"(?<![\w-])(?:live|capture): ")
SHAPE_VERSION = 2
THIS_MACHINE = "this machine"  # the name findings about the machine the lab's hosts share go under


@dataclass
class DoctorReport:
    hosts: list[str]
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    input: str = "live"  # what was read: "live", "capture FILE", "sosreport PATH"

    @property
    def exit_code(self) -> int:
        """0: nothing above info (a "cannot tell" is neither); 1: warnings or problems; 2: a check could not run."""
        if self.errors:
            return 2
        return 1 if any(f.rank > 0 for f in self.findings) else 0

    def counts(self) -> dict[str, int]:
        return {s: sum(f.severity == s for f in self.findings) for s in SEVERITIES}

    def as_json(self) -> dict[str, Any]:
        """The documented shape (docs/doctor.md): version, input, hosts, summary, findings, errors."""
        return {"version": SHAPE_VERSION, "input": self.input, "hosts": self.hosts, "summary": self.counts(),
                "findings": [f.as_dict() for f in self.findings], "errors": self.errors}


def audit(views: list[HostView], addresses: dict[str, Any] | None = None, only: set[str] | None = None) -> DoctorReport:
    """Every check on every host (those in `only`, if given). `addresses`: where the hosts
    reach each other (for the path checks across them)."""
    rep = DoctorReport([v.name for v in views], input=", ".join(sorted({v.source.label for v in views})) or "live")
    peers = peers_of(views, addresses or {})
    for sc in STUDY_CHECKS:  # first: they measure the RTT the buffer check uses
        if only is None or sc.id in only:
            for v in views:
                v.used = []
            try:
                found = sc.run_all(views, peers)
            except Exception as e:  # noqa: BLE001 - one broken check must not hide the others
                rep.errors.append(f"{sc.id}: {type(e).__name__}: {e}")
                continue
            by = {v.name: v for v in views}
            for f in found:
                f.inputs = f.inputs or list(by[f.host].used if f.host in by else [])
                f.evidence = LIVE_OR_CAPTURE.sub("", f.evidence)
            rep.findings += found
    done_machines: set[tuple[str, str]] = set()
    todo: list[tuple[HostView, list[Any]]] = []  # each host's checks, in order
    for v in views:
        mine = []
        for c in CHECKS:
            if (only is not None and c.id not in only) or v.os not in c.oses:
                continue
            if c.per_machine:
                if (v.machine, c.id) in done_machines:
                    continue
                done_machines.add((v.machine, c.id))
            mine.append(c)
        todo.append((v, mine))
    # hosts are audited side by side (each host's checks in turn: a view caches its reads);
    # most of the time is waiting for each host's commands
    with ThreadPoolExecutor(max(1, min(8, len(todo)))) as pool:
        for found, errors in pool.map(lambda t: _run_checks(*t), todo):
            rep.findings += found
            rep.errors += errors
    rep.findings = _once_per_machine(rep.findings, set(rep.hosts))
    return rep


def _once_per_machine(findings: list[Finding], hosts: set[str]) -> list[Finding]:
    """One finding per host-wide setting of a shared machine (findings under a machine's
    name, not a host's): the lab's hosts each read it, the machine has it once. The
    strictest stays: the highest severity, then the largest fix value (rmem_max judged
    against each host's own bandwidth-delay product)."""
    keep: dict[tuple[str, str, str], int] = {}
    out: list[Finding] = []
    for f in findings:
        if f.host in hosts:
            out.append(f)
            continue
        key = (f.check, f.host, str(f.knob["key"]) if f.knob else f.seen)
        if key not in keep:
            keep[key] = len(out)
            out.append(f)
        elif _strictness(f) > _strictness(out[keep[key]]):
            out[keep[key]] = f
    return out


def _strictness(f: Finding) -> tuple[int, float]:
    value = f.knob["value"] if f.knob else None
    return f.rank, float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _run_checks(v: HostView, checks: list[Any]) -> tuple[list[Finding], list[str]]:
    found: list[Finding] = []
    errors: list[str] = []
    for c in checks:  # counters' first reads, so that one interval serves every trend
        try:
            c.prepare(v)
        except Exception as e:  # noqa: BLE001 - run() meets the same failure and reports it
            log.debug("prepare %s on %s: %s", c.id, v.name, e)
    for c in checks:
        v.used = []
        try:
            got = c.run(v)
        except Exception as e:  # noqa: BLE001 - one broken check must not hide the others
            log.debug("check %s on %s", c.id, v.name, exc_info=True)
            errors.append(f"{c.id} on {v.name}: {type(e).__name__}: {e}")
            continue
        for f in got:
            f.inputs = f.inputs or list(v.used)
            f.evidence = LIVE_OR_CAPTURE.sub("", f.evidence)
            if c.per_machine and v.machine != v.name:
                f.host = v.machine
        found += got
    return found, errors


def _src(host: Any, record: bool) -> Any:
    """The host's source; recorded for `--capture` (wrapped before the first read)."""
    return Recorder(LiveSource(host)) if record else LiveSource(host)


def this_machine(record: bool = False, interface: str | None = None) -> list[HostView]:
    from ..targets.local import LocalHost

    host = LocalHost(THIS_MACHINE)
    return [HostView(THIS_MACHINE, host, interface=interface, source=_src(host, record))]


@contextmanager
def study_views(study: Any, streams: int | None = None, window: int | None = None, record: bool = False) -> Iterator[tuple[list[HostView], dict[str, Any], Any]]:
    """The hosts of a study's target as views, with their addresses; a lab is brought up
    for the audit (its first point) and removed after. Yields (views, addresses, target)."""
    from ..plan.points import expand, resolve
    from ..targets import make_target

    target = make_target(study)
    try:
        first = expand(study)[0]
        target.prepare(resolve(study, first))
        views = target_views(target, record)
        for v in views:
            v.max_streams, v.window = streams, window
        yield views, {n: h.address for n, h in target.hosts.items() if n in target.test_hosts}, target
    finally:
        target.close()


def target_views(target: Any, record: bool = False) -> list[HostView]:
    """A target's hosts as views. Hosts on this machine (a lab's namespaces, a local study's
    hosts: `on_this_machine`) share it, so its CPU, tools and host-wide settings are audited
    once, under "this machine"."""
    from ..targets.local import LocalHost

    machine = LocalHost(THIS_MACHINE)
    return [HostView(n, h, machine=THIS_MACHINE, source=_src(h, record), machine_source=_src(machine, record)) if h.on_this_machine
            else HostView(n, h, source=_src(h, record)) for n, h in target.hosts.items()]


@contextmanager
def gather(names: list[str], inventory: str | None = None, study: Any = None, record: bool = False,
           interface: str | None = None) -> Iterator[tuple[list[HostView], dict[str, Any]]]:
    """The hosts `nettune doctor` was asked about: a study's, named hosts (from an inventory,
    else looked up in ssh_config like `ssh NAME`), or this machine. Yields (views, addresses).
    record: every read is kept for `--capture`."""
    if study is not None:
        from ..plan.points import expand, resolve

        points = [resolve(study, p).workload for p in expand(study)]
        streams = max((int(w.parallel or 1) for w in points), default=1)
        windows = [_bytes(w.window) for w in points if w.window is not None]
        with study_views(study, streams, max((w for w in windows if w), default=None), record) as (views, addresses, _):
            yield views, addresses
        return
    if not names:
        yield this_machine(record, interface), {}
        return
    from ..targets.ssh.ssh_named import named_ssh_hosts

    with named_ssh_hosts(names, inventory, "doctor") as hosts:
        yield [HostView(h.name, h, source=_src(h, record)) for h in hosts], {h.name: h.address for h in hosts}


def _bytes(window: Any) -> int | None:
    """A study's -w in bytes ('4M' = 4 MiB: iperf reads K/M/G of -w as powers of 1024),
    None if it is no size (a template left unresolved)."""
    if isinstance(window, int) and not isinstance(window, bool):
        return window
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)i?\s*", str(window))
    if not m:
        return None
    return int(float(m.group(1)) * 1024 ** " kmg".index(m.group(2).lower() or " "))
