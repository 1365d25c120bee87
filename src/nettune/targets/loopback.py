"""A host seen through its own loopback: every command still runs on the host, but the
address peers use is 127.0.0.1 (`nettune ceiling` measures a remote host's tools with
server and client both on that host, so no traffic ever leaves it)."""
from __future__ import annotations

from typing import Any

from .base import CommandResult, Host, HostBase, Proc


class LoopbackView(HostBase):
    def __init__(self, host: Host):
        self.inner = host
        self.name, self.address = host.name, "127.0.0.1"
        self.os, self.netns, self.interface = host.os, host.netns, "lo"
        self.on_this_machine = host.on_this_machine

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> Proc:
        return self.inner.spawn(argv, env)

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        return self.inner.run(argv, timeout)

    def probe_run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        return self.inner.probe_run(argv, timeout)

    def read_text(self, path: str) -> str:
        return self.inner.read_text(path)

    def write_text(self, path: str, text: str) -> None:
        self.inner.write_text(path, text)

    def which(self, tool: str) -> str | None:
        return self.inner.which(tool)

    def listening(self, port: int, proto: str = "tcp", pid: int | None = None) -> bool:
        return self.inner.listening(port, proto, pid)

    def free_port(self) -> int:
        return self.inner.free_port()

    def reach(self) -> dict[str, Any] | None:
        return self.inner.reach()
