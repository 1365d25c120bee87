"""nettune's own capture: exactly what doctor read from each host, in a tarball.

`nettune doctor --capture OUT [HOST...]` audits the hosts as usual with every source
wrapped in a Recorder (doctor/sources.py), then writes OUT: a gzip'd tarball holding one
file, nettune-capture.json, with each host's name, machine, interface and OS, what the
study told doctor (its largest -P and -w, the application's CPUs), the hosts' addresses
(the path checks ping between them), and every read, command, glob and PATH look-up in
the order made (a counter read twice keeps both reads). `nettune doctor --from OUT`
replays it: each check asks the same questions and gets the same answers, so the findings
are those of the live run. A question the capture has no answer for (asked by a newer
nettune) is "cannot tell", never an empty file.
"""
from __future__ import annotations

import io
import json
import os
import tarfile
import time
from pathlib import Path
from typing import Any

from ..errors import NettuneError
from .base import HostView
from .sources import Files, Got, Ran, Recorder, SourceBase, argv_key

NAME = "nettune-capture.json"
FORMAT, VERSION = "nettune doctor capture", 1
HOW = "capture the host again with this nettune (`nettune doctor --capture FILE HOST`)"


class CaptureSource(SourceBase):
    """Answers from a capture's record, each question's answers in the order recorded."""

    kind = "capture"

    def __init__(self, record: dict[str, Any], label: str, os_: str = "linux", netns: str | None = None):
        self.record = {k: dict(record.get(k) or {}) for k in ("read", "run", "files", "which")}
        self.label, self.os, self.netns = label, os_, netns
        self._asked: dict[tuple[str, str], int] = {}

    def _next(self, kind: str, key: str, again: bool = False) -> dict[str, Any] | None:
        """The next recorded answer; asked once more than recorded: the last again, except
        for a counter's second read (again=True), which only a recorded one answers."""
        answers = self.record[kind].get(key)
        if not isinstance(answers, list) or not answers:
            return None
        n = self._asked.get((kind, key), 0)
        self._asked[(kind, key)] = n + 1
        if again and n >= len(answers):
            return None
        a = answers[min(n, len(answers) - 1)]
        return a if isinstance(a, dict) else None

    def read(self, path: str, again: bool = False) -> Got:
        where = f"capture: {path}"
        a = self._next("read", path, again)
        if a is None:
            return Got(None, where, why="not in the capture" + (" (no second read)" if again else ""), how=HOW)
        text = a.get("text")
        return Got(text if isinstance(text, str) else None, where, absent=a.get("absent") is True, why=str(a.get("why") or ""), how=str(a.get("how") or ""))

    def run(self, argv: list[str], timeout: float = 20.0, again: bool = False) -> Ran:
        where = f"capture: {' '.join(argv)}"
        a = self._next("run", argv_key(argv), again)
        if a is None:
            return Ran(tuple(argv), None, "", "", where, why="not in the capture", how=HOW)
        rc = a.get("rc")
        return Ran(tuple(argv), rc if isinstance(rc, int) and not isinstance(rc, bool) else None, str(a.get("stdout") or ""),
                   str(a.get("stderr") or ""), where, str(a.get("why") or ""), str(a.get("how") or ""))

    def files(self, pattern: str, again: bool = False) -> Files:
        where = f"capture: {pattern}"
        a = self._next("files", pattern, again)
        if a is None:
            return Files({}, where, known=False, why="not in the capture", how=HOW)
        texts = a.get("texts") if isinstance(a.get("texts"), dict) else {}
        return Files({str(k): str(v) for k, v in texts.items()}, where, known=a.get("known") is not False, why=str(a.get("why") or ""), how=str(a.get("how") or ""))

    def which(self, tool: str) -> Got:
        where = f"capture: {tool} on PATH"
        a = self._next("which", tool)
        if a is None:
            return Got(None, where, why="not in the capture", how=HOW)
        text = a.get("text")
        return Got(text if isinstance(text, str) else None, where, absent=a.get("absent") is True)


def write_capture(out: Path, views: list[HostView], addresses: dict[str, Any]) -> None:
    """OUT: the tarball `--from` reads (0600: it holds the hosts' settings and logs)."""
    hosts = []
    for v in views:
        if not isinstance(v.source, Recorder):
            raise NettuneError(f"internal: host {v.name} was not recorded")
        hosts.append({"name": v.name, "machine": v.machine, "interface": v.interface, "os": v.os, "netns": v.source.netns,
                      "max_streams": v.max_streams, "window": v.window, "app_cpus": v.app_cpus, "record": v.source.log,
                      "machine_record": v.machine_source.log if isinstance(v.machine_source, Recorder) else None})
    doc = {"format": FORMAT, "version": VERSION, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "addresses": {k: str(a) for k, a in addresses.items() if a}, "hosts": hosts}
    data = json.dumps(doc, indent=1).encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh, tarfile.open(fileobj=fh, mode="w:gz") as tar:
            info = tarfile.TarInfo(NAME)
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o600
            tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()


def capture_views(doc: Any, label: str) -> tuple[list[HostView], dict[str, str]]:
    """The views of a capture's hosts, replaying their records; one line on a bad file."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise NettuneError(f"--from {label}: {NAME} is not a nettune doctor capture")
    if doc.get("version") != VERSION:
        raise NettuneError(f"--from {label}: capture version {doc.get('version')!r}; this nettune reads version {VERSION} (capture again with it)")
    hosts = doc.get("hosts")
    if not isinstance(hosts, list) or not hosts:
        raise NettuneError(f"--from {label}: the capture holds no host")
    views = []
    for h in hosts:
        if not isinstance(h, dict) or not isinstance(h.get("name"), str) or not isinstance(h.get("record"), dict):
            raise NettuneError(f"--from {label}: a host entry lacks its name or record")
        os_ = h.get("os") if h.get("os") in ("linux", "freebsd") else "linux"
        netns = h.get("netns") if isinstance(h.get("netns"), str) else None
        src = CaptureSource(h["record"], f"capture {label}", os_, netns)
        msrc = CaptureSource(h["machine_record"], f"capture {label}", os_) if isinstance(h.get("machine_record"), dict) else None
        iface = h.get("interface") if isinstance(h.get("interface"), str) else None
        v = HostView(h["name"], None, interface=iface, machine=str(h.get("machine") or h["name"]), source=src, machine_source=msrc)
        v.max_streams = h.get("max_streams") if isinstance(h.get("max_streams"), int) else None
        v.window = h.get("window") if isinstance(h.get("window"), int) else None
        cpus = h.get("app_cpus")
        v.app_cpus = [c for c in cpus if isinstance(c, int)] if isinstance(cpus, list) else None
        views.append(v)
    addresses = doc.get("addresses") if isinstance(doc.get("addresses"), dict) else {}
    return views, {str(k): str(a) for k, a in addresses.items()}
