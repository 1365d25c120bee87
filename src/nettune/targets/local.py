"""The local target: every host is this machine, reached over loopback."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from .base import CommandResult, HostBase, TargetBase
from .facts import linux_facts
from .netns_access import listening_in
from .procs import LocalProc, run_local, with_env
from .scratch import scratch_namespaces
from ..record.point_state import PointState


class LocalHost(HostBase):
    on_this_machine = True  # this machine itself

    def __init__(self, name: str, address: str = "127.0.0.1"):
        self.name = name
        self.address = address

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> LocalProc:
        return LocalProc(argv, env=with_env(env))

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        return run_local(argv, timeout)

    def read_text(self, path: str) -> str:
        return Path(path).read_text()

    def write_text(self, path: str, text: str) -> None:
        Path(path).write_text(text)

    def which(self, tool: str) -> str | None:
        return shutil.which(tool)

    def listening(self, port: int, proto: str = "tcp", pid: int | None = None) -> bool:
        base = f"/proc/{pid}/net" if pid else "/proc/net"  # this process's namespace is the tools' too
        return listening_in(port, proto, None, lambda name: Path(f"{base}/{name}").read_text())


class LocalTarget(TargetBase):
    kind = "local"

    def __init__(self, study: Any):
        self.hosts = {h: LocalHost(h) for h in study.target.hosts}

    def prepare(self, resolved: Any) -> PointState:
        return PointState()

    def facts(self) -> dict[str, dict[str, Any]]:
        one = linux_facts(next(iter(self.hosts.values())))
        one["interface"] = {"name": "lo", "mtu": _lo_mtu()}
        return {name: one for name in self.hosts}

    def scratch(self, queues: int = 1, only: list[str] | None = None, each: bool = False) -> Any:
        """No stand-ins (the hosts are this machine), but a spare interface to try qdiscs on."""
        return scratch_namespaces({}, queues)


def _lo_mtu() -> int | None:
    try:
        return int(Path("/sys/class/net/lo/mtu").read_text())
    except (OSError, ValueError):
        return None


__all__ = ["LocalHost", "LocalTarget"]
