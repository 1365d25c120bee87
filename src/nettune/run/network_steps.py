"""The steps of one network test that the single-process driver (driver.py) and the
fan-out driver (fanout_driver.py) share: the server's port, waiting until it listens,
letting it write its final report, a side's output (secrets hidden), why a fresh server
may succeed, the failed result of a test that could not run, and the study's server
access (binding, credentials) as one test asks it.

No fixed sleeps: every wait polls and is bounded.
"""
from __future__ import annotations

import signal
import time
from typing import Protocol

from ..engines.access import Access, redact
from ..engines.base import Engine
from ..engines.result import SideOutput, TestResult
from ..studyfile.workload import Workload
from ..targets.base import Host, Proc


class ServerAccess(Protocol):
    """A study's server access (run/credentials.py StudyAccess), as a slot uses it."""

    def for_test(self, wl: Workload, server: Host, client: Host) -> Access: ...

    def admit(self, wl: Workload) -> str | None: ...


SERVER_START_TIMEOUT = 10.0
BUSY_RETRIES = 5


def pick_port(host: Host, wanted: int | str | None) -> int:
    """`[workload] port` (a resolved point's: a number), else a free one of the host's."""
    if wanted:
        return int(wanted)
    return host.free_port()  # each kind of host knows where to look (its own sockets)


def port_raced(why: str, wanted: int | str | None) -> bool:
    """A server could not bind a port nettune picked itself: free when picked, taken since
    (on a busy machine an ephemeral port is taken by any connection); a new one is worth a
    try. A port the study fixed is the study's to change."""
    return not wanted and "address already in use" in why.lower()


# what a process that faulted dies of (never what nettune stops one with: TERM, then KILL)
_CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE}


def crashed(side: SideOutput) -> str | None:
    """The signal a process died of when it faulted ("SIGSEGV"), else None. A shell that
    ran it says 128+N; a local or SSH process, -N."""
    code = side.exit_code
    for sig in _CRASH_SIGNALS:
        if code in (-sig, 128 + sig):
            return sig.name
    return None


def say_crash(res: TestResult, server: SideOutput) -> None:
    """A crashed server is said as it is, not as the report it left cut short."""
    if sig := crashed(server):
        if res.ok:
            res.warnings.append(f"the server crashed ({sig}) after its report")
        else:
            res.error = f"the server crashed ({sig}) during the test: {res.error}"


def retry_reason(engine: Engine, client: SideOutput | None, server: SideOutput) -> str | None:
    """Why a fresh server may succeed: someone else's test holds this one (busy), another
    connection ended the one-off server before our client reached it (client None: before
    our client even started), or the server crashed (iperf 2.1.8's server segfaults now and
    then on a --full-duplex connection after the warm-up's: docs/engines.md; test in
    tests/test_server_crash.py)."""
    if client is not None and engine.busy(client):
        return "server busy"
    if sig := crashed(server):
        return f"the server crashed ({sig})"
    if engine.taken(client, server):
        return "another connection ended the one-off server before our client reached it"
    return None


def hidden(argv: list[str], secret_values: list[str]) -> list[str]:
    return [redact(a, secret_values) for a in argv]


def wait_listening(host: Host, proc: Proc, port: int, proto: str) -> bool:
    end = time.monotonic() + SERVER_START_TIMEOUT
    delay = 0.002
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        if host.listening(port, proto, pid=proc.pid):
            return True
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return False


def wait_server(engine: Engine, wl: Workload, srv: Proc, side: SideOutput, limit: float = 10.0) -> None:
    """Let the server write its final report: iperf3 -1 exits by itself; iperf2 is done
    when the engine sees its final report in the output."""
    if engine.server_exits:  # iperf3 -1: its exit is the signal, and wait() wakes at that moment
        try:
            srv.wait(limit)
        except TimeoutError:
            side.timed_out = True
        return
    end = time.monotonic() + limit
    while time.monotonic() < end and srv.poll() is None:
        if engine.server_done(wl, srv.output()[0]):
            return
        time.sleep(0.02)


def finish(proc: Proc, side: SideOutput, secret_values: list[str] | None = None) -> None:
    side.exit_code = proc.poll()
    out, err = proc.output()
    side.stdout, side.stderr = redact(out, secret_values or []), redact(err, secret_values or [])
    side.ended = time.time()


def failed_result(engine: Engine, version: str, wl: Workload, error: str, warnings: list[str], server: SideOutput | None = None) -> TestResult:
    return TestResult(engine=engine.name, tool_version=version, ok=False, error=error, protocol=str(wl.protocol), duration=float(wl.duration), warnings=warnings, server=server)
