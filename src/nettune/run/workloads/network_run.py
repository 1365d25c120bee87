"""The network workload kind, its run half: traffic between a server and a client host
(iperf3, iperf2), or over many host pairs in rounds (its study-file half:
studyfile/network_workload.py).

Preflight: the engine's tool on every host of every point that uses it, its version read
on the last one (the client). Each slot is one test, or one per host pair; a parallel
round of pairs takes the time of one test. Its servers are protected by the study's
credentials (run/credentials.py asks `server_engine`). One test: run/driver.py (one
process per side) or run/fanout_driver.py (`processes`); pairs and rounds: run/slots.py.
"""
from __future__ import annotations

import shlex
from dataclasses import replace

from ...engines import network_engine
from ...engines.access import Access, placeholder
from ...engines.base import Engine
from ...engines.result import TestResult
from ...errors import NettuneError, ToolMissing
from ...plan.points import ResolvedPoint
from ...studyfile.models import Study
from ...studyfile.workload import Workload
from ...targets import planned_port, server_address
from ...targets.base import Target
from ..driver import run_test_failed
from ..slots import pair_rounds, run_slot
from .base import PlannedTest, SlotRun, ToolVersion, WorkloadRunBase

DEFAULT_PORT = 5201  # built into the command, then shown as FREE_PORT where the run picks a port itself
FREE_PORT = "<port>"  # the run asks the server host for a free port when the test starts


class NetworkRun(WorkloadRunBase):
    name = "network"
    cross_checked = True

    def server_engine(self, wl: Workload) -> Engine | None:
        return network_engine(str(wl.engine))

    def tests_per_slot(self, wl: Workload, test_hosts: list[str]) -> int:
        """1, or the number of host pairs when the workload runs over pairs."""
        return sum(map(len, pair_rounds(wl, test_hosts))) if wl.pairs is not None else 1

    def slot_seconds(self, wl: Workload, test_hosts: list[str]) -> float:
        """Its tests (one per host pair, or one per round when a round's pairs run at
        once), each duration + omit + overhead."""
        tests = 1
        if wl.pairs is not None:
            rounds = pair_rounds(wl, test_hosts)
            tests = len(rounds) if wl.parallel_pairs else sum(map(len, rounds))
        return self.test_seconds(wl) * tests

    def preflight(self, engine: str, resolved: list[ResolvedPoint], target: Target) -> str:
        tool = network_engine(engine)
        # every host of every point with this engine (the sweep may choose the pair: "{os}-a")
        names = list(dict.fromkeys(h for r in resolved for h in self.hosts(r.workload, list(target.test_hosts))))
        for name in names:
            host = target.hosts[name]
            if host.which(tool.binary) is None:
                raise ToolMissing(f"{tool.binary} is not installed on {host.name}: {tool.install_hint}")
        client = target.hosts[names[-1]]
        r = client.probe_run(tool.version_argv(), timeout=10)  # a lab host's namespace does not exist yet
        version = tool.version(r.stdout + r.stderr)
        if not version:
            raise NettuneError(f"cannot tell the version of {tool.binary} ({(r.stdout + r.stderr).strip()[:80]!r}); is it really {engine}?")
        return version

    def planned(self, study: Study, rp: ResolvedPoint, tool: ToolVersion, notes: list[str]) -> PlannedTest:
        engine = network_engine(str(rp.workload.engine))
        wl, said = engine.warnings(rp.workload)  # as run.driver does first
        notes = said + notes + ([tool.note] if tool.note else [])
        server, client = wl.server, wl.client
        if wl.pairs is not None:
            rounds = pair_rounds(wl, list(rp.target.test_hosts))
            server, client = rounds[0][0]
            shown = " | ".join(", ".join(f"{a}->{b}" for a, b in rnd) for rnd in rounds)
            mode = "pairs of a round at once" if wl.parallel_pairs else "one pair at a time"
            notes.insert(0, f"{sum(map(len, rounds))} pairs in {len(rounds)} rounds ({mode}): {shown}; commands shown for {server}->{client}")
        address = server_address(study, server)
        access, note = planned_access(engine, wl, address)
        notes += [note] if note else []
        port = int(wl.port) if wl.port is not None else planned_port(study)
        warm = engine.warm_up(wl) if not (isinstance(wl.processes, int) and wl.processes > 1) else None  # as run.driver
        if warm is not None:
            argv = _port_shown(engine.client_argv(warm, address, port or DEFAULT_PORT, tool.version, access), port)
            notes.append(f"before it, against the same fresh server, a {warm.duration:g} s warm-up test, not measured "
                         f"(docs/engines.md): {shlex.join(argv)}")
        target = ", ".join(f"{k}={v}" for k, v in rp.target.model_dump().items() if k in ("mtu", "queues"))
        return PlannedTest(
            index=rp.point.index, label=rp.point.label(), target=target, server_host=server, client_host=client,
            server_argv=_port_shown(engine.server_argv(wl, port or DEFAULT_PORT, tool.version, access), port),
            client_argv=_port_shown(engine.client_argv(wl, address, port or DEFAULT_PORT, tool.version, access), port),
            client_env=engine.client_env(access), notes=notes,
        )

    def run_slot(self, slot: SlotRun) -> list[TestResult]:
        return run_slot(network_engine(str(slot.workload.engine)), slot.workload, slot.target, slot.tool_version, slot.on_result,
                        skip=slot.skip, on_round=slot.on_round, access=slot.access, meters=slot.meters)

    def failed(self, wl: Workload, tool_version: str, why: str) -> TestResult:
        return run_test_failed(network_engine(str(wl.engine)), wl, tool_version, why)

    def value(self, result: TestResult) -> float | None:
        return result.total_bps if result.ok else None

    def result_text(self, result: TestResult) -> str:
        return "" if result.total_bps is None else f"{result.total_bps / 1e9:.2f} Gbit/s"


def _port_shown(argv: list[str], port: int | None) -> list[str]:
    """The command with FREE_PORT where the run puts a port it picks itself (port None)."""
    if port is not None:
        return argv
    return [FREE_PORT if i and argv[i - 1] in ("-p", "--port") and a == str(DEFAULT_PORT) else a for i, a in enumerate(argv)]


def planned_access(engine: Engine, wl: Workload, bind: str) -> tuple[Access, str]:
    """The server's binding and credentials as a run would use them (secrets as names),
    and a note on them ('' if none)."""
    bound = bind if wl.bind else None
    if wl.auth is False:
        return Access(bind=bound), "auth = false: servers accept any client"
    if engine.auth == "password":
        note = "" if wl.auth is True else f"auth auto: credentials used if every host's {engine.name} has authentication"
        return replace(placeholder(bound), permit_key=None), note
    why = engine.permit_key_usable(wl)
    return (Access(bind=bound), why) if why else (replace(placeholder(bound), user=None, public_key=None), "")

