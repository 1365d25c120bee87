"""Remote processes of the ssh target, and the event loop thread asyncssh runs on.

A spawned process runs under a small sh wrapper:

    exec 3>&2 2>/dev/null                       # the wrapper's own job messages: nowhere
    sh -c 'echo "$$"; exec "$@"' sh TOOL ARGS... 2>&3 &
    wait "$!"; rc=$?; printf '\\nNETTUNE-RUSAGE ' >&3; times >&3; exit "$rc"

The first stdout line is the tool's own remote PID (printed before exec, so nothing of
the tool can come before it): stop() kills that PID by number, and /proc/PID/stat works
for sampling while it runs. After the tool exits the wrapper prints `times` on stderr:
the rusage of its reaped children, i.e. the tool's exact user+system CPU, which
SshProc.cpu_seconds() returns (a remote process is gone when it exits, so /proc cannot
tell it any more). The marker and those lines are removed from the stderr engines parse.
POSIX sh only (dash, bash, FreeBSD sh).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import posixpath
import re
import threading
from typing import Any

from ..base import ProcBase

WRAPPER = """exec 3>&2 2>/dev/null; sh -c 'echo "$$"; exec "$@"' sh "$@" 2>&3 3>&- & wait "$!"; rc=$?; printf '\\nNETTUNE-RUSAGE ' >&3; times >&3; exit "$rc\""""
# With an environment (Host.spawn(env=...)), the wrapper is started as
#   sh -c 'ENV_PREAMBLE WRAPPER' sh NAME... -- TOOL ARGS...
# and the values come on stdin, one line each: a secret (IPERF3_PASSWORD) is never a
# word of any command line, local or remote, nor in sshd's environment handling.
ENV_PREAMBLE = """while [ "$1" != -- ]; do IFS= read -r v || exit 125; export "$1=$v"; shift; done; shift; exec 0</dev/null; """
RUSAGE_MARK = "\nNETTUNE-RUSAGE "

class EventLoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="nettune-ssh", daemon=True)
        self.thread.start()

    def call(self, coro: Any, timeout: float | None) -> Any:
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise

    def stop(self) -> None:
        if self.loop.is_closed():
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self.call(cancel_all(), 10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            if not self.thread.is_alive():
                self.loop.close()


class SshProc(ProcBase):
    """A process on a remote host; `pid` is its PID there."""

    def __init__(self, host: Any, argv: list[str]):
        self.host, self.argv = host, argv
        self.pid = 0
        self.lost: str | None = None
        self._out: list[str] = []
        self._err: list[str] = []
        self._code: int | None = None
        self._cpu: float | None = None
        self._user = self._sys = 0.0
        self._done = threading.Event()

    async def _collect(self, p: Any) -> None:
        async def pump(stream: Any, buf: list[str]) -> None:
            while True:
                chunk = await stream.read(65536)
                if not chunk:
                    return
                buf.append(chunk)

        err: BaseException | None = None
        try:
            await asyncio.gather(pump(p.stdout, self._out), pump(p.stderr, self._err))
            await p.wait()
        except asyncio.CancelledError:
            err = ConnectionError("nettune closed the connection")
        except Exception as e:  # asyncssh.DisconnectError, ConnectionLost, OSError
            err = e
        rc = p.returncode if err is None else None
        if rc is None:
            self.lost = self.host._lost_reason(err)
            self._code = -1
            if self.pid > 0:
                self.host._orphans[self.pid] = posixpath.basename(self.argv[0])[:15]
        else:
            self._code = rc
            self._parse_rusage()
        self.host._live.pop(self.pid, None)
        self._done.set()

    def _parse_rusage(self) -> None:
        err = "".join(self._err)
        i = err.rfind(RUSAGE_MARK)
        if i < 0:
            return
        times = re.findall(r"(\d+)m([\d.]+)s", err[i:])
        self._err = [err[:i]]
        if len(times) >= 4:  # shell user/sys, then children user/sys
            self._user, self._sys = (int(m) * 60 + float(s) for m, s in times[2:4])
            self._cpu = self._user + self._sys

    def poll(self) -> int | None:
        return self._code if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise TimeoutError(f"{self.argv[0]} (pid {self.pid} on {self.host.name}) still running after {timeout:.0f}s")
        assert self._code is not None
        return self._code

    def stop(self, grace: float = 2.0) -> None:
        """SIGTERM the remote PID, SIGKILL after `grace`. Never raises."""
        for sig, wait in (("TERM", grace), ("KILL", 5.0)):
            if self._done.is_set() or self.pid <= 0:
                return
            try:
                self.host.run(["kill", f"-{sig}", str(self.pid)], timeout=10)
            except ConnectionError:
                self._done.wait(5.0)  # the collector notices the lost channel and records the orphan
                return
            self._done.wait(wait)

    def output(self) -> tuple[str, str]:
        err = "".join(self._err)
        if not self._done.is_set():
            i = err.rfind(RUSAGE_MARK)
            err = err[:i] if i >= 0 else err
        return "".join(self._out), err

    def cpu_seconds(self) -> float | None:
        """Exact user+system CPU of the exited tool (the wrapper's `times`)."""
        return self._cpu

    def rusage_tree(self) -> dict[str, float] | None:
        """User and system CPU of the tool and its reaped descendants (`times` has no RSS)."""
        return None if self._cpu is None else {"user": self._user, "sys": self._sys}

    def stop_group(self, grace: float = 2.0) -> None:
        """TERM, then KILL, the remote process group the tool is in. sshd starts each
        channel's command in a session (and group) of its own, so that group holds only
        this channel's wrapper, the tool and its descendants."""
        if not self._done.is_set() and self.pid > 0:
            try:
                pgid = self.host.run(["ps", "-o", "pgid=", "-p", str(self.pid)], timeout=10).stdout.strip()
                if pgid.isdigit() and int(pgid) > 1:
                    for sig, wait in (("TERM", grace), ("KILL", 0.0)):
                        self.host.run(["kill", f"-{sig}", f"-{pgid}"], timeout=10)  # dash's kill takes no "--"
                        self._done.wait(wait)
            except ConnectionError:
                pass
        self.stop(grace)
