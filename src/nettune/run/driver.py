"""The test driver: runs one test (server up, wait for its port, client, probes, both
outputs kept).

Shared by every engine; it calls probes only through the probe protocol (probes.base).
No fixed sleeps: the client starts the moment the server's socket is listening; every
wait is bounded; a failure is recorded, never raised.
"""
from __future__ import annotations

import time
from typing import Any

from ..engines.access import Access, redact
from ..engines.base import Engine, client_budget
from ..engines.result import SideOutput, TestResult
from ..probes.base import Probe
from ..probes.registry import process_probes, server_machine, window_probes
from ..studyfile.workload import Workload
from ..targets.base import Host, Proc
from .fanout_driver import run_fanout
from .network_steps import BUSY_RETRIES, SERVER_START_TIMEOUT, failed_result, finish, hidden, pick_port, port_raced, retry_reason, say_crash, wait_listening, wait_server

def run_test(
    engine: Engine,
    wl: Workload,
    server: Host,
    client: Host,
    tool_version: str,
    machine: Host | None = None,
    extra_machines: dict[str, Host] | None = None,
    access: Access | None = None,
    meters: list[Probe] | None = None,
) -> TestResult:
    """Run one test of `wl` between two hosts. `machine` is the host whose CPU counters
    give the machine-wide CPU (default: the client's). `extra_machines` are more hosts
    sampled the same way, stored as cpu_extra[key] (busy % of all their cores), e.g.
    {"hypervisor:pve": host}. A lost connection to a remote host (a ConnectionError from
    a Host, or a Proc whose `lost` is set) gives a failed result with the reason.
    `access` (run.credentials) binds the server and gives it credentials; without it the
    server is still bound to `server.address` unless `wl.bind` is false. Its secrets
    are replaced by <secret> in every command line and output kept in the result.
    `meters`: more window probes for this test (the [probes] power meter)."""
    if access is None:
        access = Access(bind=server.address if wl.bind else None)
    try:
        if isinstance(wl.processes, int) and wl.processes > 1:
            res = run_fanout(engine, wl, server, client, tool_version, machine, extra_machines or {}, access, wl.processes)
        else:
            res = _run_test(engine, wl, server, client, tool_version, machine, extra_machines or {}, access, meters or [])
    except ConnectionError as e:
        res = failed_result(engine, tool_version, wl, redact(f"connection lost: {e}", access.secrets()), [])
    res.details["server_access"] = access.summary()  # how the server was kept to our client (no code reads it)
    return res


def run_test_failed(engine: Engine, wl: Workload, tool_version: str, error: str) -> TestResult:
    """The result of a test that could not start (its reason recorded, never raised)."""
    return failed_result(engine, tool_version, wl, error, [])


def _run_test(engine: Engine, wl: Workload, server: Host, client: Host, tool_version: str, machine: Host | None, extra_machines: dict[str, Host], access: Access,
              meters: list[Probe] | None = None) -> TestResult:
    wl, warnings = engine.warnings(wl)
    port = pick_port(server, wl.port)
    proto = engine.listen_proto(wl)
    budget = client_budget(wl)
    machine = machine or client
    hide = access.secrets()

    if server.listening(port, proto):
        return failed_result(engine, tool_version, wl, f"port {port}/{proto} is already in use on {server.name}; set [workload] port to a free one", warnings)

    for attempt in range(BUSY_RETRIES):
        srv = server.spawn(engine.server_argv(wl, port, tool_version, access))
        try:  # from the moment it exists: a Ctrl-C anywhere below still stops it
            srv_side = SideOutput(role="server", host=server.name, argv=hidden(srv.argv, hide), started=time.time())
            if not wait_listening(server, srv, port, proto):
                srv.stop()
                finish(srv, srv_side, hide)
                retry = retry_reason(engine, None, srv_side)
                if retry and attempt + 1 < BUSY_RETRIES:
                    warnings.append(f"{retry}, retried with a new server (attempt {attempt + 2})")
                    continue
                why = "exited before listening" if srv.poll() is not None else f"did not listen on port {port} within {SERVER_START_TIMEOUT:.0f}s"
                detail = engine.server_error(srv_side)
                if port_raced(detail, wl.port) and attempt + 1 < BUSY_RETRIES:
                    warnings.append(f"server on port {port} {why}: {detail}; retried on a new port (attempt {attempt + 2})")
                    port = pick_port(server, None)
                    continue
                if access.bind and "assign requested address" in (srv_side.stderr + srv_side.stdout).lower():
                    detail = f"{detail} (cannot bind to {access.bind}: not an address of {server.name}, e.g. behind NAT? set [workload] bind = false)"
                return failed_result(engine, tool_version, wl, f"server {why}: {detail}" if detail else f"server {why}", warnings, server=srv_side)

            warm = _warm_up(engine, wl, server, client, srv, port, tool_version, access)  # before the probes: not measured
            window = window_probes(machine, extra_machines) + server_machine(server, machine) + list(meters or [])
            for p in window:
                p.start()
            cargv, env = engine.client_argv(wl, server.address, port, tool_version, access), engine.client_env(access)
            cli = client.spawn(cargv, env=env) if env else client.spawn(cargv)
            try:
                cli_side = SideOutput(role="client", host=client.name, argv=hidden(cli.argv, hide), started=time.time())
                probes = process_probes(client, cli, server, srv)
                for p in probes:
                    p.start()
                probes += window
                try:
                    cli.wait(budget)
                except TimeoutError:
                    cli_side.timed_out = True
            finally:
                cli.stop()  # no-op once exited; on Ctrl-C, an error or a hang it ends the client
            for p in probes:
                p.stop()
            finish(cli, cli_side, hide)
            # a client that failed (refused, error) never reached the server: don't wait
            wait_server(engine, wl, srv, srv_side, 10.0 if cli_side.exit_code == 0 and not cli_side.timed_out else 1.0)
        finally:
            srv.stop()
        finish(srv, srv_side, hide)

        again = retry_reason(engine, cli_side, srv_side)
        if again and attempt + 1 < BUSY_RETRIES:
            time.sleep(0.5 * 2**attempt)  # backoff: someone else's test holds the server
            warnings.append(f"{again}, retried with a new server (attempt {attempt + 2})")
            continue
        break

    # the warm-up's part of the server's output is kept in the record, not parsed
    res = engine.parse(wl, cli_side, srv_side.model_copy(update={"stdout": srv_side.stdout[warm.get("offset", 0):]}) if warm else srv_side)
    if warm:
        res.details["warm_up"] = warm  # what ran before the measured test (no code reads it)
    res.tool_version = res.tool_version or tool_version
    res.client, res.server = cli_side, srv_side
    res.warnings = warnings + res.warnings
    if cli_side.timed_out:
        res.ok = False
        res.error = f"client did not finish within {budget:.0f}s and was stopped" + (f"; {res.error}" if res.error else "")
    elif res.ok and cli_side.exit_code not in (0, None):
        res.warnings.append(f"client exited with code {cli_side.exit_code}")
    say_crash(res, srv_side)
    for p in probes:  # after both processes ended: a remote process's exact CPU is known now
        p.write(res)
    lost = [proc.lost for proc in (srv, cli) if proc.lost]
    if lost:
        res.ok, res.error = False, f"connection lost during the test: {lost[0]}"
    if res.error:
        res.error = redact(res.error, hide)
    return res


def _warm_up(engine: Engine, wl: Workload, server: Host, client: Host, srv: Proc, port: int, tool_version: str,
             access: Access) -> dict[str, Any]:
    """Run the engine's warm-up test against the fresh server (engines/iperf2.py says why),
    wait for the server's report of it, and return {argv, seconds, offset}: where the
    measured test's part of the server's output begins once redacted ({} without one)."""
    warm = engine.warm_up(wl)
    if warm is None:
        return {}
    argv = engine.client_argv(warm, server.address, port, tool_version, access)
    started = time.monotonic()
    client.run(argv, timeout=float(warm.duration) + 10.0)
    end = time.monotonic() + 5.0
    while time.monotonic() < end and srv.poll() is None and not engine.server_done(warm, srv.output()[0]):
        time.sleep(0.01)
    hide = access.secrets()
    return {"argv": hidden(argv, hide), "seconds": round(time.monotonic() - started, 3),
            "offset": len(redact(srv.output()[0], hide))}
