"""A lab host: a network namespace of this machine that nettune created (LabTarget makes
them; the knobs layer and scratch namespaces make stand-ins the same way)."""
from __future__ import annotations

import shutil
from pathlib import Path

from ..base import CommandResult, HostBase
from ..netns_access import PER_TASK, listening_in, read_in_netns, write_in_netns
from ..procs import LocalProc, run_local, with_env

# Paths whose content differs per network namespace: read/write them from inside it
# (PER_TASK ones from a thread that entered it; sysfs through `ip netns exec`, which
# mounts the namespace's own /sys).
_SYSFS_NET = "/sys/class/net/"
LAB_PORT = 5201  # a lab namespace is nettune's own: its servers always listen here


class LabHost(HostBase):
    on_this_machine = True  # a namespace of this machine: its host-wide settings are the machine's

    def __init__(self, name: str, netns: str, address: str, interface: str):
        self.name = name
        self.netns = netns
        self.address = address
        self.interface = interface  # the host's NIC inside its namespace

    def _wrap(self, argv: list[str]) -> list[str]:
        # `ip netns exec` setns()es and then execs argv, so the PID we get is the tool's own
        return ["ip", "netns", "exec", self.netns, *argv]

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> LocalProc:
        return LocalProc(self._wrap(argv), pid_argv=argv, env=with_env(env))  # ip netns exec keeps the environment

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        r = run_local(self._wrap(argv), timeout)
        r.argv = argv
        return r

    def probe_run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        """Read-only probes (tool versions) before the namespace exists: the namespace
        shares this machine's files, so the answer is the same."""
        return run_local(argv, timeout)

    def read_text(self, path: str) -> str:
        if path.startswith(PER_TASK):
            return read_in_netns(self.netns, path)
        if path.startswith(_SYSFS_NET):
            r = self.run(["cat", path], timeout=10)
            if r.returncode != 0:
                raise OSError(r.stderr.strip() or f"cannot read {path} in {self.netns}")
            return r.stdout
        return Path(path).read_text()

    def write_text(self, path: str, text: str) -> None:
        if path.startswith(PER_TASK):
            write_in_netns(self.netns, path, text)
            return
        if path.startswith(_SYSFS_NET):
            r = self.run(["sh", "-c", 'printf "%s" "$1" > "$2"', "sh", text, path], timeout=10)
            if r.returncode != 0:
                raise OSError(r.stderr.strip() or f"cannot write {path} in {self.netns}")
            return
        Path(path).write_text(text)

    def which(self, tool: str) -> str | None:
        return shutil.which(tool)

    def free_port(self) -> int:
        return LAB_PORT  # a namespace we created: nothing else listens there

    def listening(self, port: int, proto: str = "tcp", pid: int | None = None) -> bool:
        # /proc/PID/net shows the network namespace of that process
        return listening_in(port, proto, self.netns,
                            lambda name: Path(f"/proc/{pid}/net/{name}").read_text() if pid else self.read_text(f"/proc/net/{name}"))
