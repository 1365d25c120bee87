"""What a target is: a set of hosts nettune can run commands on.

A Target owns the hosts of one study (namespaces on a bridge, loopback, SSH machines...).
A Host runs processes, reads and writes files (for /proc sampling and for knobs), and
has an address its peers reach it at. Engines, probes and knobs only see these two
protocols, so a new kind of target is one new file in this package.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass
class CommandResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


@runtime_checkable
class Proc(Protocol):
    """A process started on a host. `pid` is its PID on that host (for /proc/PID/stat)."""

    pid: int
    argv: list[str]

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int:
        """Exit code; raises TimeoutError if it has not exited within timeout."""
        ...

    def stop(self, grace: float = 2.0) -> None:
        """SIGTERM this PID (only this one), SIGKILL after `grace` seconds. Idempotent."""
        ...

    def output(self) -> tuple[str, str]:
        """(stdout, stderr) captured so far (complete once the process has exited)."""
        ...


@runtime_checkable
class Host(Protocol):
    name: str
    address: str  # where peers reach this host (the server address clients use)
    os: str  # "linux" or "freebsd"

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> Proc:
        """Start argv. `env`: variables added to its environment (secrets such as
        IPERF3_PASSWORD: they never appear on a command line, here or remote)."""
        ...

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        """Run to completion and capture output; never raises on a non-zero exit."""
        ...

    def read_text(self, path: str) -> str:
        """Read a file as this host sees it (per-namespace for /proc/sys/net and /sys/class/net)."""
        ...

    def write_text(self, path: str, text: str) -> None: ...

    def which(self, tool: str) -> str | None: ...

    def listening(self, port: int, proto: str = "tcp") -> bool:
        """True when something listens on `port` on this host (no connection is made)."""
        ...


class Target(Protocol):
    kind: str
    hosts: dict[str, Host]

    def prepare(self, resolved: Any) -> dict[str, Any]:
        """Bring the target into the state a point needs (create, re-create, adjust).

        Returns the target's actual state for the point (e.g. mtu, queues per host),
        stored with each run.
        """
        ...

    def facts(self) -> dict[str, dict[str, Any]]:
        """Host facts once per study: kernel, CPU model and count, tool versions..."""
        ...

    def close(self) -> None:
        """Tear down everything the target created. Safe to call twice."""
        ...
