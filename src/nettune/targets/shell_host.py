"""What hosts reached through a shell on them have in common (ssh hosts, Kubernetes pods):
tools found in PATH as exec finds them, sockets read from /proc/net, a free port picked from
them. Each member says how to run a command (`run`); Linux answers are read here."""
from __future__ import annotations

from .base import HostBase
from .procs import port_listening

# a name with a slash is a path; else the first regular executable file in PATH
_WHICH = ('case "$1" in */*) [ -f "$1" ] && [ -x "$1" ] && echo "$1" && exit 0; exit 1;; esac; '
          'set -f; IFS=:; for d in $PATH; do [ -n "$d" ] && [ -f "$d/$1" ] && [ -x "$d/$1" ] && echo "$d/$1" && exit 0; done; exit 1')


class ShellHostBase(HostBase):
    def read_text(self, path: str) -> str:
        r = self.run(["cat", "--", path], timeout=15)
        if r.returncode != 0:
            msg = f"{self.name}:{path}: {r.stderr.strip() and r.said() or 'cannot read'}"  # never the file's text
            raise FileNotFoundError(msg) if "No such file" in r.stderr else OSError(msg)
        return r.stdout

    def which(self, tool: str) -> str | None:
        """The executable file `tool` names, searched in PATH as exec does (the command
        runs exec'd, not in a shell). Not `command -v`: for a shell builtin such as `true`
        it prints the bare name, and /usr/bin/true would read as not installed."""
        r = self.run(["sh", "-c", _WHICH, "sh", tool], timeout=15)
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
