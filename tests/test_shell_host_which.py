"""Tools on a host reached through a shell (ssh hosts, pods) are found as exec finds them:
a shell builtin's own program (`true`, `echo`) is installed, not refused as missing."""
from __future__ import annotations

import shutil
import subprocess

from nettune.targets.base import CommandResult
from nettune.targets.shell_host import ShellHostBase

DASH = shutil.which("dash")


class HereThroughSh(ShellHostBase):
    """The thinnest layer: the command runs on this machine with the PATH given, as the ssh
    member runs it on the remote one (argv, never a shell line of ours)."""

    name = "here"

    def __init__(self, path: str) -> None:
        self.path = path

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        if argv[0] == "sh" and DASH:
            argv = [DASH, *argv[1:]]  # Debian's /bin/sh, where `command -v true` prints "true"
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={"PATH": self.path})
        return CommandResult(argv, p.returncode, p.stdout, p.stderr)


def test_builtins_are_found_as_their_programs_and_missing_tools_are_not(tmp_path):
    bin_, other = tmp_path / "bin", tmp_path / "other"
    bin_.mkdir(), other.mkdir()
    (bin_ / "tool").write_text("#!/bin/sh\n"), (bin_ / "tool").chmod(0o755)
    (bin_ / "notexec").write_text("")  # a file without x is no program
    (bin_ / "adir").mkdir()  # nor is a directory
    (other / "notexec").write_text("#!/bin/sh\n"), (other / "notexec").chmod(0o755)
    host = HereThroughSh(f"{bin_}:{other}:/usr/bin:/bin")
    assert host.which("true") in ("/usr/bin/true", "/bin/true")
    assert host.which("echo") in ("/usr/bin/echo", "/bin/echo")
    assert host.which("tool") == f"{bin_}/tool"
    assert host.which("notexec") == f"{other}/notexec"  # the first executable one, as exec picks
    assert host.which("adir") is None and host.which("nettune-no-such-tool") is None
    assert host.which(f"{bin_}/tool") == f"{bin_}/tool" and host.which(f"{bin_}/notexec") is None
    assert host.which("*") is None  # a PATH walk, never a glob

