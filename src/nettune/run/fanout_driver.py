"""One test as N tool processes at once (`[workload] processes`): N servers on consecutive
ports, then N clients started together, each with its share of the streams; the
machine's CPU sampled once over the whole window, each process's CPU on its own; the N
results summed by engines.fanout.combine.

The same rules as run/driver.py: no fixed sleeps (each client starts the moment every
server listens), every wait bounded, every process stopped in `finally`, a failure
recorded, never raised. When another client took one of the servers (busy, or a
one-off server ended by someone else's connection), the whole test is run again with
fresh servers after a backoff, as run/driver.py does for one process: a sum with one
process missing would be a wrong number.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..engines.access import Access, redact
from ..engines.base import Engine, client_budget
from ..engines.fanout import combine, process_workloads
from ..engines.result import SideOutput, TestResult
from ..probes.base import Probe
from ..probes.registry import process_probes, server_machine, window_probes
from ..studyfile.workload import Workload
from ..targets.base import Host, Proc
from .network_steps import BUSY_RETRIES, SERVER_START_TIMEOUT, failed_result, finish, hidden, pick_port, port_raced, retry_reason, say_crash, wait_listening, wait_server


def run_fanout(engine: Engine, wl: Workload, server: Host, client: Host, tool_version: str, machine: Host | None,
               extra_machines: dict[str, Host], access: Access, processes: int) -> TestResult:
    base = pick_port(server, wl.port)
    warnings: list[str] = []
    wls = _workloads(engine, wl, processes, base, warnings)
    proto = engine.listen_proto(wl)
    hide = access.secrets()
    machine = machine or client
    taken = [int(w.port) for w in wls if w.port is not None and server.listening(int(w.port), proto)]
    for _ in range(BUSY_RETRIES if taken and not wl.port else 0):  # nettune's own pick: its next ports may be in use
        base = pick_port(server, None)
        wls = _workloads(engine, wl, processes, base, warnings)
        taken = [int(w.port) for w in wls if w.port is not None and server.listening(int(w.port), proto)]
        if not taken:
            break
    if taken:
        return failed_result(engine, tool_version, wl, f"port {taken[0]}/{proto} is already in use on {server.name} (processes = {len(wls)} use "
                       f"ports {base}..{base + len(wls) - 1}); set [workload] port to the first of {len(wls)} free ones", warnings)
    for attempt in range(BUSY_RETRIES):
        got = _attempt(engine, wl, wls, server, client, tool_version, machine, extra_machines, access, proto, warnings)
        if isinstance(got, TestResult):
            if port_raced(got.error or "", wl.port) and attempt + 1 < BUSY_RETRIES:
                warnings.append(f"{got.error}; retried on new ports (attempt {attempt + 2})")
                base = pick_port(server, None)
                wls = _workloads(engine, wl, processes, base, warnings)
                continue
            return got
        if isinstance(got, str):  # a server was taken before any client started
            if attempt + 1 < BUSY_RETRIES:
                warnings.append(f"{got} (one of {len(wls)} processes), retried with new servers (attempt {attempt + 2})")
                continue
            return failed_result(engine, tool_version, wl, f"{got} ({BUSY_RETRIES} attempts)", warnings)
        srvs, clis, srv_sides, cli_sides, probes, window = got.srvs, got.clis, got.srv_sides, got.cli_sides, got.probes, got.window
        why = next((w for w in (retry_reason(engine, c, s) for c, s in zip(cli_sides, srv_sides)) if w), None)
        if why and attempt + 1 < BUSY_RETRIES:
            time.sleep(0.5 * 2**attempt)  # backoff: someone else's test holds a server
            warnings.append(f"{why} (one of {len(wls)} processes), retried with new servers (attempt {attempt + 2})")
            continue
        break

    parts = []
    for i, (w, cside, sside) in enumerate(zip(wls, cli_sides, srv_sides)):
        r = engine.parse(w, cside, sside)
        r.tool_version = r.tool_version or tool_version
        r.client, r.server = cside, sside
        if cside.timed_out:
            r.ok, r.error = False, f"client did not finish within {client_budget(wl):.0f}s and was stopped"
        say_crash(r, sside)
        for p in probes[i][1]:
            p.write(r)
        parts.append(r)
    res = combine(engine.name, tool_version, wls, parts)
    res.warnings = warnings + res.warnings
    for p in window:
        p.write(res)
    lost = [proc.lost for proc in (*srvs, *clis) if proc.lost]
    if lost:
        res.ok, res.error = False, f"connection lost during the test: {lost[0]}"
    if res.error:
        res.error = redact(res.error, hide)
    return res


def _workloads(engine: Engine, wl: Workload, processes: int, base: int, warnings: list[str]) -> list[Workload]:
    """Each process's workload on consecutive ports from `base`, within the tool's limits
    (iperf3: 128 streams); what the tool cannot run as asked is added to `warnings` once."""
    out = []
    for w in process_workloads(wl, processes, base):
        w, notes = engine.warnings(w)
        out.append(w)
        warnings += [n for n in notes if n not in warnings]
    return out


@dataclass
class _Tried:
    """One try's processes, their outputs, and the probes that watched them."""

    srvs: list[Proc]
    clis: list[Proc]
    srv_sides: list[SideOutput]
    cli_sides: list[SideOutput]
    probes: list[tuple[int, list[Probe]]]  # (process index, its probes)
    window: list[Probe]  # the machine's, over the whole window


def _attempt(engine: Engine, wl: Workload, wls: list[Workload], server: Host, client: Host, tool_version: str, machine: Host,
             extra_machines: dict[str, Host], access: Access, proto: str, warnings: list[str]) -> _Tried | TestResult | str:
    """One try: every server, then every client at once; returns the processes, their
    outputs and probes; or the TestResult of a server that never listened; or why a
    server was taken by someone else's connection before our clients started (retry)."""
    hide = access.secrets()
    srvs: list[Proc] = []
    clis: list[Proc] = []
    srv_sides: list[SideOutput] = []
    cli_sides: list[SideOutput] = []
    probes: list[tuple[int, list[Probe]]] = []
    window: list[Probe] = []
    try:
        for w in wls:
            srv = server.spawn(engine.server_argv(w, int(w.port or 0), tool_version, access))
            srvs.append(srv)
            srv_sides.append(SideOutput(role="server", host=server.name, argv=hidden(srv.argv, hide), started=time.time()))
        for i, (srv, side, w) in enumerate(zip(srvs, srv_sides, wls)):
            if not wait_listening(server, srv, int(w.port or 0), proto):
                for s in srvs:
                    s.stop()
                finish(srv, side, hide)
                retry = retry_reason(engine, None, side)
                if retry:  # someone else's connection ended it before our clients started
                    return retry
                why = "exited before listening" if srv.poll() is not None else f"did not listen on port {w.port} within {SERVER_START_TIMEOUT:.0f}s"
                detail = engine.server_error(side)
                head = f"server of process {i + 1} of {len(wls)} (port {w.port}) {why}"
                return failed_result(engine, tool_version, wl, f"{head}: {detail}" if detail else head, warnings, server=side)
        window = window_probes(machine, extra_machines) + server_machine(server, machine)
        for p in window:
            p.start()
        env = engine.client_env(access)
        for w in wls:
            argv = engine.client_argv(w, server.address, int(w.port or 0), tool_version, access)
            cli = client.spawn(argv, env=env) if env else client.spawn(argv)
            clis.append(cli)
            cli_sides.append(SideOutput(role="client", host=client.name, argv=hidden(cli.argv, hide), started=time.time()))
        for i, (cli, srv) in enumerate(zip(clis, srvs)):
            pp = process_probes(client, cli, server, srv)
            for p in pp:
                p.start()
            probes.append((i, pp))
        deadline = time.monotonic() + client_budget(wl)
        for cli, side in zip(clis, cli_sides):
            try:
                cli.wait(max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                side.timed_out = True
    finally:
        for cli in clis:
            cli.stop()  # no-op once exited; on Ctrl-C, an error or a hang it ends the client
        try:
            for _, pp in probes:
                for p in pp:
                    p.stop()
            for p in window:
                p.stop()
            for cli, side in zip(clis, cli_sides):
                finish(cli, side, hide)
            for w, srv, side, cside in zip(wls, srvs, srv_sides, cli_sides):
                ok = cside.exit_code == 0 and not cside.timed_out
                wait_server(engine, w, srv, side, 10.0 if ok else 1.0)
        finally:
            for srv in srvs:
                srv.stop()
    for srv, side in zip(srvs, srv_sides):
        finish(srv, side, hide)
    return _Tried(srvs, clis, srv_sides, cli_sides, probes, window)
