"""What a doctor check is, what it finds, and the view of a host it reads.

A Check reads one host (HostView: cached file reads and commands through the Host
protocol, so it works on this machine, in a lab namespace and over SSH) and returns
Findings. A finding carries its evidence (the file or command and the value seen), why it
matters in one line, and the fix and revert as commands a user can run; when nettune can
make the fix itself, `knob` names the knob (key and value) that `nettune doctor --fix`
applies through the journal, so `nettune restore` undoes it.
"""
from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass
from typing import Any

from ..knobs.base import cpu_list
from ..knobs.kinds.sysctl import sysctl_scope

SEVERITIES = ("info", "warn", "problem")


@dataclass
class Finding:
    check: str
    host: str
    severity: str  # info | warn | problem
    seen: str  # what was found, with numbers
    evidence: str  # the file or command, and the value read
    why: str = ""  # why it matters, one line
    fix: str = ""  # command(s) to fix it ("" = nothing to do)
    revert: str = ""  # command(s) to undo the fix
    knob: dict[str, Any] | None = None  # {"key": ..., "value": ...}: `--fix` can apply it (journaled)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def rank(self) -> int:
        return SEVERITIES.index(self.severity)


class HostView:
    """One host as the checks see it: reads and command outputs, each made once."""

    def __init__(self, name: str, host: Any, interface: str | None = None, machine: str | None = None, machine_host: Any = None):
        self.name, self.host = name, host
        self.os: str = host.os
        self.machine = machine or name  # hosts sharing a machine (lab namespaces) share its CPU, PCIe...
        self.machine_host = machine_host  # that machine itself, outside any namespace (None: not shared)
        self._reads: dict[str, str | None] = {}
        self._runs: dict[tuple[str, ...], Any] = {}
        self.interface = interface or host.interface or self._default_interface()
        self.rtt_ms: float | None = None  # measured to a peer of the study (path check), for the BDP
        self.rtt_peer = ""
        self.max_streams: int | None = None  # the study's largest -P, for the instrument check

    def read(self, path: str) -> str | None:
        """A file's text (stripped), None when it cannot be read."""
        if path not in self._reads:
            try:
                self._reads[path] = self.host.read_text(path).strip()
            except (OSError, ValueError):
                self._reads[path] = None
        return self._reads[path]

    def run(self, argv: list[str], timeout: float = 20.0) -> Any:
        key = tuple(argv)
        if key not in self._runs:
            self._runs[key] = self.host.run(argv, timeout=timeout)
        return self._runs[key]

    def wide(self, path: str) -> bool:
        """True when the sysctl in `path` (under /proc/sys) is the machine's, shared with the
        other hosts on it: this host shares its machine and is no namespace, or the sysctl
        knob's own rule says a namespace shares it (net.core.rmem_max, netdev_max_backlog)."""
        if self.machine == self.name:
            return False
        return self.host.netns is None or sysctl_scope(self.host, path.removeprefix("/proc/sys/")) == "machine"

    def setting(self, path: str) -> tuple[str | None, str]:
        """(a setting's text, the host it belongs to): a host-wide one is the machine's, read
        on the machine when the namespace does not show it, and reported once for it."""
        if not self.wide(path):
            return self.read(path), self.name
        text = self.read(path)
        if text is None and self.machine_host is not None:
            try:
                text = self.machine_host.read_text(path).strip()
            except (OSError, ValueError):
                text = None
        return text, self.machine

    def files(self, pattern: str) -> dict[str, str]:
        """{path: text} of the files a shell glob matches (one command, works remotely).
        `pattern` is nettune's own constant glob, never a study value."""
        # -Z: a NUL after each file name (PCI paths contain ':')
        r = self.run(["sh", "-c", f"grep -sHZ '' {pattern} </dev/null; true"])
        out: dict[str, list[str]] = {}
        for line in r.stdout.splitlines():
            path, sep, text = line.partition("\0")
            if sep:
                out.setdefault(path, []).append(text)
        return {p: "\n".join(lines).strip() for p, lines in out.items()}

    def cpus(self) -> int:
        return max(len(cpu_list(self.read("/sys/devices/system/cpu/online") or "0")), 1)

    def _default_interface(self) -> str | None:
        """The interface of the default route (/proc/net/route), else the first non-loopback."""
        if self.os != "linux":
            r = self.run(["route", "-n", "get", "default"])
            for line in r.stdout.splitlines():
                if line.strip().startswith("interface:"):
                    return line.split(":", 1)[1].strip()
            return None
        for line in (self.read("/proc/net/route") or "").splitlines()[1:]:
            parts = line.split()
            if len(parts) > 2 and parts[1] == "00000000":
                return parts[0]
        devs = self.files("/sys/class/net/*/ifindex")
        names = sorted(p.split("/")[4] for p in devs)
        return next((n for n in names if n != "lo"), None)


class Check:
    """One audit: `id` (what `--fix` names), what it reads (`source`, for docs/doctor.md)."""

    id = ""
    title = ""
    source = ""
    oses: tuple[str, ...] = ("linux",)
    per_machine = False  # CPU, PCIe, virtualization: once per machine, not per lab namespace

    def run(self, h: HostView) -> list[Finding]:
        raise NotImplementedError


class StudyCheck:
    """A check across the study's hosts (MTU consistency, path MTU between them)."""

    id = ""
    title = ""
    source = ""

    def run_all(self, views: list[HostView], peers: dict[str, str]) -> list[Finding]:
        raise NotImplementedError


def q(word: str) -> str:
    return shlex.quote(word)
