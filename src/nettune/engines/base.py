"""The engine protocol: how to start each side of a tool and read what it printed.

An engine knows command lines and output formats only. Starting processes, waiting for
the server's port, timeouts, retries and CPU sampling live in engines.session, shared by
every engine.
"""
from __future__ import annotations

from typing import Protocol

from ..spec.models import Workload
from .access import Access
from .result import SideOutput, TestResult


def client_budget(wl: Workload) -> float:
    """Seconds the client may run before it is stopped: the test, plus `timeout` (default
    10 s + a quarter of the duration) for connecting and the final reports."""
    return float(wl.duration + wl.omit + (wl.timeout if wl.timeout is not None else 10.0 + 0.25 * wl.duration))


class Engine(Protocol):
    name: str  # "iperf3", "iperf2"
    binary: str  # executable name on the hosts
    install_hint: str  # e.g. "apt-get install iperf3 (or: nettune setup)"
    server_exits: bool  # True if the server exits by itself after one test (iperf3 -1)

    def version(self, version_output: str) -> str:
        """Parse the tool's version from `binary --version`/`-v` output (may be on stderr)."""
        ...

    def version_argv(self) -> list[str]: ...

    def server_argv(self, wl: Workload, port: int, tool_version: str, access: Access | None = None) -> list[str]:
        """The server's command: bound to `access.bind`, requiring its credentials."""
        ...

    def client_argv(self, wl: Workload, server_address: str, port: int, tool_version: str, access: Access | None = None) -> list[str]: ...

    def client_env(self, access: Access | None) -> dict[str, str]:
        """Environment for the client (secrets that must not be on a command line)."""
        ...

    def listen_proto(self, wl: Workload) -> str:
        """Protocol of the server's listening socket ("tcp" or "udp"), to know when it is ready."""
        ...

    def busy(self, client: SideOutput) -> bool:
        """True if the client failed only because the server was busy (retry later)."""
        ...

    def parse(self, wl: Workload, client: SideOutput, server: SideOutput) -> TestResult:
        """Build the result from both sides' outputs. Never raises on bad output:
        returns ok=False with the reason in `error`."""
        ...

    def warnings(self, wl: Workload) -> tuple[Workload, list[str]]:
        """Adjust a workload the tool cannot run as asked (e.g. clip iperf3 -P to 128)
        and say so."""
        ...
