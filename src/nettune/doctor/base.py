"""What a doctor check is, what it finds, and the view of a host it reads.

A Check reads one host through a HostView (a Source: the live host through the Host
protocol, a nettune capture or a sosreport, doctor/sources.py) and returns Findings. A
finding carries its evidence (the file or command and the value seen), the inputs it used,
why it matters in one line, and the fix and revert as commands a user can run; when nettune
can make the fix itself, `knob` names the knob (key and value) that `nettune doctor --fix`
applies through the journal, so `nettune restore` undoes it.

Severity "cannot_tell" is the third state between a pass and a problem: an input the check
needs is not there (a tool not installed, a file the capture lacks, a link with no
physical rate). It names what was missing and how to get it, and is never counted as a
warning or a pass.
"""
from __future__ import annotations

import shlex
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from ..knobs.base import cpu_list
from ..knobs.kinds.sysctl import sysctl_scope
from .sources import Files, Got, LiveSource, Ran

SEVERITIES = ("info", "cannot_tell", "warn", "problem")
RANK = {"info": 0, "cannot_tell": 0, "warn": 1, "problem": 2}
INTERVAL = 2.0  # seconds between the two reads of a counter (its trend)


@dataclass
class Finding:
    check: str
    host: str
    severity: str  # info | cannot_tell | warn | problem
    seen: str  # what was found, with numbers
    evidence: str  # the file or command, and the value read (cannot_tell: what was missing)
    why: str = ""  # why it matters, one line
    fix: str = ""  # command(s) to fix it ("" = nothing to do); cannot_tell: how to get the input
    revert: str = ""  # command(s) to undo the fix
    knob: dict[str, Any] | None = None  # {"key": ..., "value": ...}: `--fix` can apply it (journaled)
    inputs: list[str] = field(default_factory=list)  # where every value it used came from

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def rank(self) -> int:
        return RANK[self.severity]


NO_INTERFACE = "no test interface"  # a check of the test NIC on a host where none was named or found


def missing(what: str, *gone: Got | Ran | Files | str) -> tuple[str, str]:
    """(evidence, how to get it) for the inputs a check lacked."""
    ev, how = [], []
    for g in gone:
        if isinstance(g, str):
            ev.append(g)
            continue
        if isinstance(g, Ran) and g.known:  # it ran and failed (dmesg without root)
            said = (g.stderr.strip() or g.stdout.strip()).splitlines()
            ev.append(f"{g.where}: exit {g.rc}" + (f": {said[0][:120]}" if said else ""))
            continue
        ev.append(f"{g.where}: {g.why or ('absent' if isinstance(g, Got) and g.absent else 'not available')}")
        if g.how and g.how not in how:
            how.append(g.how)
    return "missing: " + "; ".join(ev), "; ".join(how)


def cannot(check: str, host: str, what: str, *gone: Got | Ran | Files | str, why: str = "", how: str = "") -> Finding:
    """A "cannot tell" finding: `what` could not be judged, for want of `gone`."""
    ev, got_how = missing(what, *gone)
    if not (how or got_how):  # "cannot tell" always says how to get what was missing
        no_nic = any(g == NO_INTERFACE for g in gone)
        got_how = ("name the test NIC: --interface IF (or `interface` on the host in the study)" if no_nic else
                   "run nettune doctor as root on the host itself, outside any network namespace, or read a capture "
                   "(nettune doctor --capture) made there")
    return Finding(check, host, "cannot_tell", f"cannot tell {what}", ev, why, how or got_how)


class HostView:
    """One host as the checks see it: reads and command outputs, each made once, each
    noted with where it came from (`used`, per check)."""

    def __init__(self, name: str, host: Any = None, interface: str | None = None, machine: str | None = None,
                 machine_host: Any = None, source: Any = None, machine_source: Any = None):
        self.name, self.host = name, host
        self.source = source or LiveSource(host)
        self.os: str = self.source.os
        self.machine = machine or name  # hosts sharing a machine (lab namespaces) share its CPU, PCIe...
        self.machine_source = machine_source or (LiveSource(machine_host) if machine_host is not None else None)
        self._reads: dict[str, Got] = {}
        self._runs: dict[tuple[str, ...], Ran] = {}
        self._files: dict[str, Files] = {}
        self._which: dict[str, Got] = {}
        self._started: dict[tuple[str, str], float] = {}
        self.used: list[str] = []
        self.memo: dict[str, Any] = {}  # facts several checks derive from the same inputs (the kernel log's events)
        self.rtt_ms: float | None = None  # measured to a peer of the study (path check), for the BDP
        self.rtt_peer = ""
        self.max_streams: int | None = None  # the study's largest -P (instrument, listen queue)
        self.window: int | None = None  # the study's largest -w in bytes (rmem_max/wmem_max)
        self.app_cpus: list[int] | None = None  # where the application runs (--app-cpus)
        self.interface = interface or (host.interface if host is not None else None) or self._default_interface()

    # -- reads, each once
    def _note(self, where: str) -> None:
        if where not in self.used:
            self.used.append(where)

    def note(self, where: str) -> None:
        """Name an input a check used through a fact another check derived (memo)."""
        if where:
            self._note(where)

    def get(self, path: str) -> Got:
        if path not in self._reads:
            self._reads[path] = self.source.read(path)
        g = self._reads[path]
        if g.known:
            self._note(g.where)
        return g

    def read(self, path: str) -> str | None:
        """A file's text (stripped); None when it is absent or not known."""
        return self.get(path).text

    def cmd(self, argv: list[str], timeout: float = 20.0) -> Ran:
        key = tuple(argv)
        if key not in self._runs:
            self._runs[key] = self.source.run(list(argv), timeout)
        r = self._runs[key]
        if r.known:
            self._note(r.where)
        return r

    def run(self, argv: list[str], timeout: float = 20.0) -> Any:
        """The command's result (CommandResult shape; returncode -1 when not known)."""
        return self.cmd(argv, timeout).result()

    def first(self, *argvs: list[str]) -> Ran:
        """The first of these commands whose output is known (a capture may hold another
        command with the same facts: `tc -s qdisc show` for `tc qdisc show dev IF`)."""
        tried = [self.cmd(a) for a in argvs[:1]]
        for a in argvs[1:]:
            if tried[-1].known:
                break
            tried.append(self.cmd(a))
        return next((r for r in tried if r.known), tried[0])

    def files(self, pattern: str) -> Files:
        """{path: text} of the files a glob matches (`pattern`: nettune's own glob; names
        from the host in it can only widen it, never run anything: LiveSource.files)."""
        if pattern not in self._files:
            self._files[pattern] = self.source.files(pattern)
        f = self._files[pattern]
        if f.known:
            self._note(f.where)
        return f

    def which(self, tool: str) -> Got:
        if tool not in self._which:
            self._which[tool] = self.source.which(tool)
        g = self._which[tool]
        if g.known:
            self._note(g.where)
        return g

    # -- counters read twice, for their trend: every counter check takes its first read in
    # Check.prepare (before any check runs), so one INTERVAL covers them all
    def sample(self, path: str) -> Got:
        self._started.setdefault(("read", path), time.monotonic())
        return self.get(path)

    def sample_cmd(self, argv: list[str]) -> Ran:
        self._started.setdefault(("run", " ".join(argv)), time.monotonic())
        return self.cmd(argv)

    def sample_files(self, pattern: str) -> Files:
        self._started.setdefault(("files", pattern), time.monotonic())
        return self.files(pattern)

    def again(self, path: str) -> Got:
        """The file read a second time, INTERVAL after its first read (a capture replays its
        second read; a sosreport has none: not known)."""
        self._wait(("read", path))
        g = self.source.read(path, again=True)
        if g.known:
            self._note(g.where + " (second read)")
        return g

    def again_cmd(self, argv: list[str]) -> Ran:
        self._wait(("run", " ".join(argv)))
        r = self.source.run(list(argv), 20.0, again=True)
        if r.known:
            self._note(r.where + " (second read)")
        return r

    def again_files(self, pattern: str) -> Files:
        self._wait(("files", pattern))
        f = self.source.files(pattern, again=True)
        if f.known:
            self._note(f.where + " (second read)")
        return f

    def _wait(self, key: tuple[str, str]) -> None:
        start = self._started.get(key)
        if self.source.live and start is not None:
            left = start + INTERVAL - time.monotonic()
            if left > 0:
                time.sleep(left)

    # -- derived facts
    def sysctl(self, name: str) -> Got:
        """A sysctl's value: /proc/sys, else a `sysctl -a` the capture holds."""
        path = "/proc/sys/" + name.replace(".", "/")
        g = self.get(path)
        if g.known:
            return g
        r = self.cmd(["sysctl", "-a"])
        if not r.known:
            return Got(None, g.where, why=g.why or "not read", how=g.how or r.how)
        for line in r.stdout.splitlines():
            k, sep, v = line.partition("=")
            if sep and k.strip() == name:
                return Got(" ".join(v.split()), f"{r.where} ({name})")
        return Got(None, f"{r.where} ({name})", absent=True, why="not listed (a container or network namespace does not show the host's own sysctls)",
                   how="read it on the host itself (or its sosreport)")

    def wide(self, path: str) -> bool:
        """True when the sysctl in `path` (under /proc/sys) is the machine's, shared with the
        other hosts on it: this host shares its machine and is no namespace, or the sysctl
        knob's own rule says a namespace shares it (net.core.rmem_max, netdev_max_backlog)."""
        if self.machine == self.name:
            return False
        if self.source.netns is None or self.host is None:
            return True
        return sysctl_scope(self.host, path.removeprefix("/proc/sys/")) == "machine"

    def setting(self, name: str) -> tuple[Got, str]:
        """(a sysctl, the host it belongs to): a host-wide one is the machine's, read on the
        machine when the namespace does not show it, and reported once for it."""
        path = "/proc/sys/" + name.replace(".", "/")
        if not self.wide(path):
            return self.sysctl(name), self.name
        g = self.sysctl(name)
        if g.text is None and self.machine_source is not None:
            m = self.machine_source.read(path)
            if m.known:
                self._note(m.where + " (the machine's)")
                g = m
        return g, self.machine

    def cpus(self) -> int | None:
        """Online CPUs: cpu/online, else the processors /proc/cpuinfo lists; None: unknown."""
        online = self.read("/sys/devices/system/cpu/online")
        if online:
            return max(len(cpu_list(online)), 1)
        info = self.read("/proc/cpuinfo")
        n = sum(1 for ln in (info or "").splitlines() if ln.startswith("processor"))
        return n or None

    def cpus_missing(self) -> tuple[Got, Got]:
        return self.get("/sys/devices/system/cpu/online"), self.get("/proc/cpuinfo")

    def _default_interface(self) -> str | None:
        """The interface of the default route (/proc/net/route, or `ip route` text a capture
        holds), else the only non-loopback one; None when that cannot be told."""
        if self.os != "linux":
            r = self.cmd(["route", "-n", "get", "default"])
            for line in r.stdout.splitlines():
                if line.strip().startswith("interface:"):
                    return line.split(":", 1)[1].strip()
            return None
        route = self.get("/proc/net/route")
        for line in (route.text or "").splitlines()[1:]:
            parts = line.split()
            if len(parts) > 2 and parts[1] == "00000000":
                return parts[0]
        if not route.known:
            r = self.first(["ip", "route", "show", "table", "all"], ["ip", "route"])
            for line in r.stdout.splitlines():
                words = line.split()
                if words[:1] == ["default"] and "dev" in words[:-1]:
                    return words[words.index("dev") + 1]
        devs = self.files("/sys/class/net/*/ifindex")
        names = sorted(p.split("/")[4] for p in devs.texts)
        others = [n for n in names if n != "lo"]
        return others[0] if len(others) == 1 or (others and self.source.live) else None


class Check:
    """One audit: `id` (what `--fix` names), what it reads (`source`, for docs/doctor.md)."""

    id = ""
    title = ""
    source = ""
    oses: tuple[str, ...] = ("linux",)
    per_machine = False  # CPU, PCIe, virtualization: once per machine, not per lab namespace

    def prepare(self, h: HostView) -> None:
        """Take the first read of a counter (before any check runs; `run` reads it again)."""

    def run(self, h: HostView) -> list[Finding]:
        raise NotImplementedError

    def no_interface(self, h: HostView) -> Finding:
        return cannot(self.id, h.name, "which NIC to check", "no default route and no interface named",
                      how="give the host's `interface` (study or inventory), or `--interface IF`")


class StudyCheck:
    """A check across the study's hosts (MTU consistency, path MTU between them)."""

    id = ""
    title = ""
    source = ""

    def run_all(self, views: list[HostView], peers: dict[str, str]) -> list[Finding]:
        raise NotImplementedError


def q(word: str) -> str:
    return shlex.quote(word)
