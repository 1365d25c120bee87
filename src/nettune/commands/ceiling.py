"""`nettune ceiling`: what each tool configuration reaches on a host's loopback, -P 1 to
the cores the host may use; stored per machine (store/instrument_tables.py) as a host
fact. Analysis then says when a path result is within 10% of it (the instrument, not the
path, is the limit), and engine = "auto" picks the configuration that went fastest.

Configurations: iperf3 in one process; iperf3 fanned out over one process per stream up
to the cores (only where iperf3 runs every stream of a process on one thread, before
3.16); iperf2. Each test is a real run_test (server and client on the host, 127.0.0.1),
so the numbers are measured exactly as a study's are. A remote host (ssh) is measured on
its own loopback, through the same connection a study uses.
"""
from __future__ import annotations

import socket
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from ..engines import get_engine
from ..engines.choice import config_label, threaded
from ..studyfile.models import Workload
from ..run.driver import run_test
from ..run.engine_choice import HostAnswers


@dataclass
class Plan:
    machine: str
    cores: int
    versions: dict[str, str]  # engine -> version ('' missing)
    tests: list[tuple[str, int, int]]  # (engine, processes, streams)


class _One:
    """One host, asked as a target would be (HostAnswers reads target.hosts)."""

    def __init__(self, host: Any):
        self.hosts = {host.name: host}


def plan(host: Any, max_streams: int | None = None, answers: HostAnswers | None = None) -> Plan:
    """`answers`: what the host already said (hosts_to_measure asked its machine name), so
    nothing is asked twice."""
    answers = answers or HostAnswers(_One(host))
    cores = answers.cores(host.name)
    versions = {e: answers.version(e, host.name) for e in ("iperf3", "iperf2")}
    top = max(1, max_streams or cores)
    tests = []
    for p in range(1, top + 1):
        if versions["iperf3"]:
            tests.append(("iperf3", 1, p))
            fan = min(cores, p)
            if fan > 1 and not threaded(versions["iperf3"]):
                tests.append(("iperf3", fan, p))
        if versions["iperf2"]:
            tests.append(("iperf2", 1, p))
    return Plan(answers.machine(host.name) or host.name, cores, versions, tests)


def measure(host: Any, p: Plan, duration: int, on_row: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run the plan's tests on `host`'s loopback; one row per test (bps None: it failed)."""
    rows = []
    for engine_name, procs, streams in p.tests:
        wl = Workload(engine=engine_name, parallel=streams, processes=procs, duration=duration, auth=False, bind=True)
        res = run_test(get_engine(engine_name), wl, host, host, p.versions[engine_name])
        row = {"config": config_label(engine_name, procs), "engine": engine_name, "processes": procs, "streams": streams,
               "tool_version": res.tool_version or p.versions[engine_name], "bps": res.total_bps if res.ok else None,
               "duration": float(duration), "cores": p.cores, "error": res.error}
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


def best(rows: list[dict[str, Any]]) -> dict[str, tuple[float, int]]:
    """config family ("iperf3", "iperf3 fanned out", "iperf2") -> (best bits/s, at -P)."""
    out: dict[str, tuple[float, int]] = {}
    for r in rows:
        if r["bps"] is None:
            continue
        fam = "iperf3 fanned out" if r["processes"] > 1 else r["engine"]
        if fam not in out or r["bps"] > out[fam][0]:
            out[fam] = (float(r["bps"]), int(r["streams"]))
    return out


LOCAL_NAMES = ("localhost", "local", "127.0.0.1")


@contextmanager
def hosts_to_measure(what: list[str], inventory: str | None = None) -> Iterator[list[tuple[Any, HostAnswers]]]:
    """The loopbacks `nettune ceiling` measures: this machine (no argument, `localhost`, or a
    study whose hosts are this machine); a study's ssh test hosts; or hosts named in an
    inventory / ssh_config. One per machine: hosts sharing a machine share its ceiling.
    Each comes with its answers so far (its machine name), for plan()."""
    from ..plan.study_file import load_study
    from ..studyfile.local_commands import allow_local_commands
    from ..targets import make_target
    from ..targets.local import LocalHost
    from ..targets.loopback import LoopbackView
    from ..targets.ssh.ssh_named import named_ssh_hosts

    me = socket.gethostname()
    studies = [w for w in what if w.endswith(".toml") or Path(w).is_file()]
    names = [w for w in what if w not in studies and w not in LOCAL_NAMES and w != me]
    local = not what or len(names) + len(studies) < len(what)
    with ExitStack() as stack:
        found: list[Any] = [LocalHost("loopback")] if local else []
        for path in studies:
            with allow_local_commands():  # measuring connects: ssh_config Match exec runs as ssh would run it
                study = load_study(Path(path))
            if study.target.on_this_machine:  # a lab or loopback study: this machine (counted once below)
                found.append(LocalHost("loopback"))
                continue
            target = make_target(study)
            stack.callback(target.close)
            found += [LoopbackView(target.hosts[n]) for n in target.test_hosts]
        if names:
            found += [LoopbackView(h) for h in stack.enter_context(named_ssh_hosts(names, inventory, "ceiling"))]
        yield _one_per_machine(found)


def _one_per_machine(hosts: list[Any]) -> list[tuple[Any, HostAnswers]]:
    seen: set[str] = set()
    out = []
    for h in hosts:
        answers = HostAnswers(_One(h))
        machine = answers.machine(h.name) or h.name
        if machine not in seen:
            seen.add(machine)
            out.append((h, answers))
    return out
