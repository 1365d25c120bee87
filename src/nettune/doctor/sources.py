"""Where a doctor check's inputs come from, and what is known about each one.

A check never reads a host directly: it asks a Source for a file, a command's output, the
files a glob matches or whether a tool is installed. There are three sources: a live host
(through the Host protocol: this machine, a lab namespace, an ssh host, a pod), a nettune
capture (what doctor read from a host, replayed: doctor/capture.py) and a sosreport
(doctor/sosreport.py). Every answer says where it came from (`where`) and whether it is
known: a file the host does not have is a fact (`absent`), a file a capture does not
contain is not (`known` False, with `why` and `how` to get it). A check that lacks what it
needs says "cannot tell", never a verdict.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..targets.base import CommandResult


@dataclass(frozen=True)
class Got:
    """A file read: its text (stripped), or that the host has no such file, or neither."""

    text: str | None
    where: str  # "live: /proc/interrupts", "sosreport: proc/interrupts", "capture: ..."
    absent: bool = False  # the host has no such file (a fact: a live read, or a capture that recorded it)
    why: str = ""  # why it is not known
    how: str = ""  # how to get it

    @property
    def known(self) -> bool:
        return self.text is not None or self.absent


@dataclass(frozen=True)
class Ran:
    """A command's result; rc None: not known (the capture does not have it)."""

    argv: tuple[str, ...]
    rc: int | None
    stdout: str
    stderr: str
    where: str
    why: str = ""
    how: str = ""

    @property
    def known(self) -> bool:
        return self.rc is not None

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def result(self) -> CommandResult:
        return CommandResult(list(self.argv), self.rc if self.rc is not None else -1, self.stdout, self.stderr)


@dataclass(frozen=True)
class Files:
    """The files a glob matches, {path: text}; known False: the source cannot list them."""

    texts: dict[str, str]
    where: str
    known: bool = True
    why: str = ""
    how: str = ""


class Source(Protocol):
    kind: str  # "live", "capture", "sosreport"
    label: str  # the input as the report names it ("live", "capture FILE", "sosreport DIR")
    live: bool  # reading again later gives new values (counters' trend)
    os: str
    netns: str | None

    # again=True: the second read of a counter (its trend); a source that holds one
    # snapshot answers "not known"
    def read(self, path: str, again: bool = False) -> Got: ...

    def run(self, argv: list[str], timeout: float = 20.0, again: bool = False) -> Ran: ...

    def files(self, pattern: str, again: bool = False) -> Files: ...

    def which(self, tool: str) -> Got:
        """The tool's path as text; absent: not installed."""
        ...


class SourceBase:
    """Defaults of the Source protocol: a Linux host's record, read later (not live)."""

    kind = ""
    label = ""
    live = False
    os = "linux"
    netns: str | None = None

    def read(self, path: str, again: bool = False) -> Got:
        raise NotImplementedError

    def run(self, argv: list[str], timeout: float = 20.0, again: bool = False) -> Ran:
        raise NotImplementedError

    def files(self, pattern: str, again: bool = False) -> Files:
        raise NotImplementedError

    def which(self, tool: str) -> Got:
        raise NotImplementedError


class LiveSource(SourceBase):
    """A live host: every read and command goes through the Host protocol."""

    kind, live = "live", True

    def __init__(self, host: Any):
        self.host = host
        self.os: str = host.os
        self.netns: str | None = host.netns
        self.label = "live"

    def read(self, path: str, again: bool = False) -> Got:
        where = f"live: {path}"
        try:
            return Got(self.host.read_text(path).strip(), where)
        except FileNotFoundError:
            return Got(None, where, absent=True)
        except (OSError, ValueError) as e:
            msg = str(e)
            if "No such file" in msg:  # a lab namespace's or a remote `cat` saying so
                return Got(None, where, absent=True)
            return Got(None, where, why=f"cannot read: {msg[:200]}", how="run nettune as root on the host")

    def run(self, argv: list[str], timeout: float = 20.0, again: bool = False) -> Ran:
        r = self.host.run(list(argv), timeout=timeout)
        where = f"live: {' '.join(argv)}"
        # a tool that is not installed gives no output to judge: not known (never "empty")
        if r.returncode == 127 or ("exec of" in r.stderr and "No such file" in r.stderr):
            return Ran(tuple(argv), None, "", r.stderr, where, why=f"{argv[0]} is not installed", how=f"install {argv[0]} (nettune setup installs what nettune uses)")
        return Ran(tuple(argv), r.returncode, r.stdout, r.stderr, where)

    def files(self, pattern: str, again: bool = False) -> Files:
        # the pattern is an argument of the shell, never part of its text: a name read from
        # the host (an interface, a PCI function) can only widen the glob, not run anything
        # (-Z: a NUL after each file name; PCI paths contain ':')
        r = self.host.run(["sh", "-c", 'grep -sHZ "" -- $1 </dev/null; true', "sh", pattern], timeout=20)
        out: dict[str, list[str]] = {}
        for line in r.stdout.splitlines():
            path, sep, text = line.partition("\0")
            if sep:
                out.setdefault(path, []).append(text)
        return Files({p: "\n".join(lines).strip() for p, lines in out.items()}, f"live: {pattern}")

    def which(self, tool: str) -> Got:
        path = self.host.which(tool)
        return Got(path, f"live: {tool} on PATH", absent=path is None)


@dataclass
class Recorder:
    """A source whose every answer is kept, in order, for `nettune doctor --capture`: the
    capture holds exactly what doctor read (doctor/capture.py replays it)."""

    inner: Any
    log: dict[str, dict[str, list[Any]]] = field(default_factory=lambda: {"read": {}, "run": {}, "files": {}, "which": {}})

    @property
    def kind(self) -> str:
        return str(self.inner.kind)

    @property
    def label(self) -> str:
        return str(self.inner.label)

    @property
    def live(self) -> bool:
        return bool(self.inner.live)

    @property
    def os(self) -> str:
        return str(self.inner.os)

    @property
    def netns(self) -> str | None:
        return self.inner.netns  # type: ignore[no-any-return]

    def read(self, path: str, again: bool = False) -> Got:
        g = self.inner.read(path, again)
        self.log["read"].setdefault(path, []).append({"text": g.text, "absent": g.absent, "why": g.why, "how": g.how})
        return g  # type: ignore[no-any-return]

    def run(self, argv: list[str], timeout: float = 20.0, again: bool = False) -> Ran:
        r = self.inner.run(argv, timeout, again)
        self.log["run"].setdefault(argv_key(argv), []).append({"rc": r.rc, "stdout": r.stdout, "stderr": r.stderr, "why": r.why, "how": r.how})
        return r  # type: ignore[no-any-return]

    def files(self, pattern: str, again: bool = False) -> Files:
        f = self.inner.files(pattern, again)
        self.log["files"].setdefault(pattern, []).append({"texts": f.texts, "known": f.known, "why": f.why, "how": f.how})
        return f  # type: ignore[no-any-return]

    def which(self, tool: str) -> Got:
        g = self.inner.which(tool)
        self.log["which"].setdefault(tool, []).append({"text": g.text, "absent": g.absent, "why": g.why, "how": g.how})
        return g  # type: ignore[no-any-return]


def argv_key(argv: list[str] | tuple[str, ...]) -> str:
    """A command's key in a capture: its words joined by a NUL (no word contains one)."""
    return "\0".join(argv)
