"""A host made of recorded files and command outputs (tests/fixtures/doctor/*.json), for
the doctor checks that need hardware this machine lacks: the thinnest layer (the Host
protocol's read_text/run/which) is faked, the checks run unchanged."""
from __future__ import annotations

import fnmatch
import json
from pathlib import Path

from nettune.targets.base import CommandResult, HostBase

FIX = Path(__file__).parent / "fixtures" / "doctor"


class RecordedHost(HostBase):
    def __init__(self, case: str, os: str = "linux", data: dict | None = None):
        data = data or json.loads((FIX / f"{case}.json").read_text())
        self.name, self.os, self.netns = case, os, None
        self.address = "198.18.0.10"
        self.interface = data.get("interface")
        self.files: dict[str, str] = data["files"]
        self.commands = {k: tuple(v) for k, v in data["commands"].items()}
        self.tools = set(data.get("which", [])) | {k.split()[0] for k in self.commands}
        self.ran: list[list[str]] = []

    def read_text(self, path: str) -> str:
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path] + "\n"

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        self.ran.append(list(argv))
        if argv[:2] == ["sh", "-c"] and argv[2].startswith('grep -sHZ "" -- $1'):
            glob = argv[4]  # the pattern is an argument, never part of the shell text
            lines = [f"{p}\0{line}" for p, text in sorted(self.files.items()) if fnmatch.fnmatch(p, glob) for line in text.splitlines()]
            return CommandResult(argv, 0, "\n".join(lines) + "\n", "")
        rc, out, err = self.commands.get(" ".join(argv), (127, "", f"{argv[0]}: not recorded"))
        return CommandResult(argv, rc, out, err)

    def which(self, tool: str) -> str | None:
        return f"/usr/bin/{tool}" if tool in self.tools else None

    def write_text(self, path: str, text: str) -> None:
        raise OSError("recorded host: read-only")
