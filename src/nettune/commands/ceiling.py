"""`nettune ceiling`: what each tool configuration reaches on a path of a host machine, -P 1
to 16 (or the study's largest -P), each test repeated (`runs`, interleaved round by
round so drift falls on every configuration alike); every run stored per machine and path
class (store/instrument_tables.py), with the mean and its 95% interval.

Paths (analysis/ceilings.py says what each may judge):
- "loopback": server and client on the host's own 127.0.0.1 (this machine, or a remote
  host through the study's SSH connections). It steers engine = "auto" on loopback
  studies; it judges no lab or remote path, and a loopback study is its own experiment;
- "lab mtu=N queues=Q": two namespaces of a lab of this machine on an unshaped link,
  at the study's MTU and queues (`nettune ceiling LAB-STUDY.toml`): it judges the lab
  points of that MTU and queue count that shaping or knobs make a different path.

Configurations: iperf3 in one process; iperf3 fanned out (before 3.16) over as many
processes as engine = "auto" would use on that path (one per core the client may use,
half the machine's when both ends share it; at least two); iperf2. Each test is a real
run_test, so the numbers are measured exactly as a study's are.
"""
from __future__ import annotations

import socket
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ..engines import get_engine
from ..engines.choice import config_label, threaded
from ..studyfile.models import Workload
from ..run.driver import run_test
from ..run.engine_choice import HostAnswers
from ..store.instrument_tables import ceiling_interval

MAX_STREAMS = 16  # -P 1..16 by default: the stream counts studies sweep (study D's peak was at 10)
RUNS = 3


@dataclass
class Plan:
    machine: str
    cores: int
    versions: dict[str, str]  # engine -> version ('' missing)
    tests: list[tuple[str, int, int]]  # (engine, processes, streams)
    path: str = "loopback"


@dataclass
class Where:
    """One path to measure: its server and client hosts, what they said, its class."""

    server: Any
    client: Any
    answers: HostAnswers
    path: str = "loopback"
    label: str = ""  # how the output names it
    extra: dict[str, Any] = field(default_factory=dict)


class _One:
    """One host, asked as a target would be (HostAnswers reads target.hosts)."""

    def __init__(self, host: Any):
        self.hosts = {host.name: host}


def plan(host: Any, max_streams: int | None = None, answers: HostAnswers | None = None, path: str = "loopback") -> Plan:
    """`answers`: what the host already said (hosts_to_measure asked its machine name), so
    nothing is asked twice. Both ends of every path measured here share the machine, so
    fan-out uses half its cores (at least two processes), as engine = "auto" would."""
    answers = answers or HostAnswers(_One(host))
    cores = answers.cores(host.name)
    versions = {e: answers.version(e, host.name) for e in ("iperf3", "iperf2")}
    top = max(1, max_streams or MAX_STREAMS)
    tests = []
    for p in range(1, top + 1):
        if versions["iperf3"]:
            tests.append(("iperf3", 1, p))
            fan = max(2, min(cores // 2, p))
            if p > 1 and not threaded(versions["iperf3"]):
                tests.append(("iperf3", fan, p))
        if versions["iperf2"]:
            tests.append(("iperf2", 1, p))
    return Plan(answers.machine(host.name) or host.name, cores, versions, tests, path)


def measure(server: Any, client: Any, p: Plan, duration: int, runs: int = RUNS,
            on_row: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run the plan's tests `runs` times, round by round; one row per configuration and -P
    with every run's bits/s (`values`, failed runs left out, `errors` their reasons)."""
    rows = {t: {"config": config_label(t[0], t[1]), "engine": t[0], "processes": t[1], "streams": t[2],
                "tool_version": p.versions[t[0]], "values": [], "errors": [], "duration": float(duration), "cores": p.cores}
            for t in p.tests}
    for rnd in range(runs):
        for t in p.tests:
            engine_name, procs, streams = t
            wl = Workload(engine=engine_name, parallel=streams, processes=procs, duration=duration, auth=False, bind=True)
            res = run_test(get_engine(engine_name), wl, server, client, p.versions[engine_name])
            row = rows[t]
            row["tool_version"] = res.tool_version or row["tool_version"]
            if res.ok and res.total_bps:
                row["values"].append(float(res.total_bps))
            else:
                row["errors"].append(res.error or "no throughput")
            if on_row and rnd == runs - 1:
                on_row(row)
    return list(rows.values())


def row_line(row: dict[str, Any]) -> str:
    """One measured configuration and -P as `nettune ceiling` prints it: the mean with the
    95% interval that is stored and judged with, and the runs' range beside it, each named
    (a bare "(a to b)" read as an interval while it was the two runs' min and max)."""
    vals = row["values"]
    head = f"{row['config']} -P {row['streams']}"
    if not vals:
        return f"{head}: failed: {row['errors'][-1] if row['errors'] else '?'}"
    mean, lo, hi = ceiling_interval(vals)
    if lo is None or hi is None or mean is None:
        return f"{head}: {vals[0] / 1e9:.2f} Gbit/s (one run: no interval)"
    return (f"{head}: {mean / 1e9:.2f} Gbit/s (95% CI {lo / 1e9:.2f} to {hi / 1e9:.2f}; "
            f"runs {min(vals) / 1e9:.2f} to {max(vals) / 1e9:.2f}, N={len(vals)})")


def best(rows: list[dict[str, Any]]) -> dict[str, tuple[float, int]]:
    """config family ("iperf3", "iperf3 fanned out", "iperf2") -> (best mean bits/s, at -P)."""
    out: dict[str, tuple[float, int]] = {}
    for r in rows:
        if not r["values"]:
            continue
        mean = sum(r["values"]) / len(r["values"])
        fam = "iperf3 fanned out" if r["processes"] > 1 else r["engine"]
        if fam not in out or mean > out[fam][0]:
            out[fam] = (mean, int(r["streams"]))
    return out


LOCAL_NAMES = ("localhost", "local", "127.0.0.1")


@contextmanager
def hosts_to_measure(what: list[str], inventory: str | None = None) -> Iterator[list[Where]]:
    """The paths `nettune ceiling` measures: this machine's loopback (no argument,
    `localhost`, or a local study), a lab study's lab path (a lab of its own, unshaped,
    at the study's MTU and queues), an ssh study's test hosts' loopbacks, or hosts named
    in an inventory / ssh_config. One loopback per machine: hosts sharing a machine share
    its ceiling."""
    from ..plan.study_file import load_study
    from ..studyfile.local_commands import allow_local_commands
    from ..targets import make_target, target_kind
    from ..targets.local import LocalHost
    from ..targets.loopback import LoopbackView
    from ..targets.ssh.ssh_named import named_ssh_hosts

    me = socket.gethostname()
    studies = [w for w in what if w.endswith(".toml") or Path(w).is_file()]
    names = [w for w in what if w not in studies and w not in LOCAL_NAMES and w != me]
    local = not what or len(names) + len(studies) < len(what)
    with ExitStack() as stack:
        found: list[Any] = [LocalHost("loopback")] if local else []
        labs: list[Where] = []
        for path in studies:
            with allow_local_commands():  # measuring connects: ssh_config Match exec runs as ssh would run it
                study = load_study(Path(path))
            own_path = target_kind(study).ceiling_path(study)
            if own_path is not None:  # a lab study: the lab's own path (a lab of its own, unshaped)
                cp = stack.enter_context(own_path)
                labs.append(Where(cp.server, cp.client, HostAnswers(cp.target), cp.path, cp.label))
                continue
            if study.target.on_this_machine:  # a loopback study: this machine (counted once below)
                found.append(LocalHost("loopback"))
                continue
            target = make_target(study)
            stack.callback(target.close)
            found += [LoopbackView(target.hosts[n]) for n in target.test_hosts]
        if names:
            found += [LoopbackView(h) for h in stack.enter_context(named_ssh_hosts(names, inventory, "ceiling"))]
        yield _one_per_machine(found) + labs


def _one_per_machine(hosts: list[Any]) -> list[Where]:
    seen: set[str] = set()
    out = []
    for h in hosts:
        answers = HostAnswers(_One(h))
        machine = answers.machine(h.name) or h.name
        if machine not in seen:
            seen.add(machine)
            out.append(Where(h, h, answers))
    return out
