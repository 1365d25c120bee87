"""What hosts reached through a shell on them have in common (ssh hosts, Kubernetes pods):
tools found with `command -v`, sockets read from /proc/net, a free port picked from
them. Each member says how to run a command (`run`); Linux answers are read here."""
from __future__ import annotations

from .base import HostBase
from .procs import port_listening


class ShellHostBase(HostBase):
    def read_text(self, path: str) -> str:
        r = self.run(["cat", "--", path], timeout=15)
        if r.returncode != 0:
            msg = f"{self.name}:{path}: {r.stderr.strip() and r.said() or 'cannot read'}"  # never the file's text
            raise FileNotFoundError(msg) if "No such file" in r.stderr else OSError(msg)
        return r.stdout

    def which(self, tool: str) -> str | None:
        r = self.run(["sh", "-c", 'command -v "$1"', "sh", tool], timeout=15)
        out = r.stdout.strip()
        return out if r.returncode == 0 and out.startswith("/") else None

    def _sockets(self, proto: str) -> list[str]:
        return [self.run(["cat", f"/proc/net/{proto}", f"/proc/net/{proto}6"], timeout=15).stdout]

    def listening(self, port: int, proto: str = "tcp", pid: int | None = None) -> bool:
        return port_listening(self._sockets(proto), port, proto)

    def _free_in(self, first: int, last: int) -> int:
        """A port in first..last nothing listens on (TCP) or is bound to (UDP); `first` if none."""
        tcp, udp = self._sockets("tcp"), self._sockets("udp")
        for port in range(first, last + 1):
            if not port_listening(tcp, port, "tcp") and not port_listening(udp, port, "udp"):
                return port
        return first
