"""Stand-ins for a Proxmox host (`qm`) and a libvirt host (`virsh`) as knob executors.

They answer in the formats of tests/fixtures/hypervisor (written from qm(1), qm.conf(5)
and libvirt's domain XML / virsh(1) documentation) and keep state, so apply -> read ->
restore round trips and restart sequences can be checked. `on_restart` lets a test make
a "reboot" do something real (re-create a lab host).
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Callable

from nettune.targets.base import CommandResult

FIX = Path(__file__).parent / "fixtures" / "hypervisor"


class _Fake:
    os = "linux"
    name = "hv"
    address = "198.18.0.1"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.files: dict[str, str] = {}

    def ok(self, argv: list[str], out: str = "", err: str = "", rc: int = 0) -> CommandResult:
        return CommandResult(argv, rc, out, err)

    def write_text(self, path: str, text: str) -> None:
        self.files[path] = text

    def read_text(self, path: str) -> str:
        return self.files[path]


class FakePve(_Fake):
    """VM 101 from qm_config.txt; `hotplug_network` False: net changes stay pending."""

    def __init__(self, on_restart: Callable[[], None] | None = None, hotplug_network: bool = False, boot_polls: int = 1):
        super().__init__()
        text = (FIX / "qm_config.txt").read_text()
        self.current = text.split("\n[", 1)[0].splitlines()
        self.pending: dict[str, str] = {}
        self.status = "running"
        self.hotplug, self.on_restart, self.boot_polls = hotplug_network, on_restart, boot_polls
        self._booting = 0

    def _cfg(self, pending: bool) -> str:
        lines = []
        for ln in self.current:
            k = ln.split(":", 1)[0]
            lines.append(f"{k}: {self.pending[k]}" if pending and k in self.pending else ln)
        return "\n".join(lines) + "\n"

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        self.calls.append(list(argv))
        if argv[:2] == ["qm", "config"]:
            if argv[2] != "101":
                return self.ok(argv, err=f"Configuration file 'nodes/pve/qemu-server/{argv[2]}.conf' does not exist", rc=2)
            return self.ok(argv, self._cfg(pending="--current" not in argv))
        if argv[:2] == ["qm", "set"]:
            key, value = argv[3].lstrip("-"), argv[4]
            if self.hotplug and self.status == "running":
                self.current = [f"{key}: {value}" if ln.startswith(key + ":") else ln for ln in self.current]
            else:
                self.pending[key] = value
            return self.ok(argv, f"update VM {argv[2]}: -{key} {value}\n")
        if argv[:2] == ["qm", "pending"]:
            out = []
            for ln in self.current:
                k, v = ln.split(":", 1)
                if k == "digest":
                    continue
                out.append(f"cur {k}:{v}")
                if k in self.pending:
                    out.append(f"new {k}: {self.pending[k]}")
            return self.ok(argv, "\n".join(out) + "\n")
        if argv[:2] == ["qm", "status"]:
            if self._booting:
                self._booting -= 1
                return self.ok(argv, "status: stopped\n")
            return self.ok(argv, f"status: {self.status}\n")
        if argv[:2] == ["qm", "reboot"]:
            for k, v in self.pending.items():
                self.current = [f"{k}: {v}" if ln.startswith(k + ":") else ln for ln in self.current]
            self.pending.clear()
            self._booting = self.boot_polls
            if self.on_restart:
                self.on_restart()
            return self.ok(argv)
        return self.ok(argv, err=f"{argv[0]}: command not found", rc=127)

    def queues_line(self) -> str:
        return next(ln for ln in self.current if ln.startswith("net0:"))


class FakeVirsh(_Fake):
    """Domain fedora-vm from virsh_dumpxml.xml; pinning from virsh_vcpupin.txt."""

    def __init__(self, on_restart: Callable[[], None] | None = None, old_vcpupin_format: bool = False, shutdown_polls: int = 1, never_shuts_down: bool = False):
        super().__init__()
        self.inactive = self.live = (FIX / "virsh_dumpxml.xml").read_text()
        fmt = "virsh_vcpupin_old.txt" if old_vcpupin_format else "virsh_vcpupin.txt"
        self.pins = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\s*(\d+):?\s+(\S+)\s*$", (FIX / fmt).read_text(), re.M)}
        self.old_fmt = old_vcpupin_format
        self.state, self.on_restart = "running", on_restart
        self.shutdown_polls, self.never_shuts_down = shutdown_polls, never_shuts_down
        self._stopping = 0

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        self.calls.append(list(argv))
        if argv[0] == "mktemp":
            return self.ok(argv, "/tmp/nettune-libvirt.Ab12Cd\n")
        if argv[0] == "rm":
            self.files.pop(argv[-1], None)
            return self.ok(argv)
        if argv[0] != "virsh":
            return self.ok(argv, err=f"{argv[0]}: command not found", rc=127)
        cmd, rest = argv[1], argv[2:]
        if rest and rest[-1] != "fedora-vm" and cmd in ("dumpxml", "domstate", "shutdown", "start") or (cmd == "vcpupin" and rest[0] != "fedora-vm"):
            return self.ok(argv, err="error: failed to get domain '" + rest[-1] + "'", rc=1)
        if cmd == "dumpxml":
            return self.ok(argv, self.inactive if "--inactive" in rest else self.live)
        if cmd == "define":
            self.inactive = self.files[rest[0]]
            if self.state != "running":
                self.live = self.inactive
            return self.ok(argv, "Domain 'fedora-vm' defined from " + rest[0] + "\n")
        if cmd == "domstate":
            if self._stopping:
                self._stopping -= 1
                if not self._stopping and not self.never_shuts_down:
                    self.state = "shut off"
            return self.ok(argv, self.state + "\n\n")
        if cmd == "shutdown":
            self._stopping = self.shutdown_polls + 1 if not self.never_shuts_down else 10**9
            return self.ok(argv, "Domain 'fedora-vm' is being shutdown\n")
        if cmd == "start":
            self.state, self.live = "running", self.inactive
            if self.on_restart:
                self.on_restart()
            return self.ok(argv, "Domain 'fedora-vm' started\n")
        if cmd == "vcpupin":
            if len(rest) == 1:
                if self.old_fmt:
                    body = "".join(f"  {v:2d}: {c}\n" for v, c in sorted(self.pins.items()))
                    return self.ok(argv, "VCPU: CPU Affinity\n----------------------------------\n" + body)
                body = "".join(f" {v:<6} {c}\n" for v, c in sorted(self.pins.items()))
                return self.ok(argv, " VCPU   CPU Affinity\n----------------------\n" + body + "\n")
            if "--live" in rest and self.state != "running":
                return self.ok(argv, err="error: Requested operation is not valid: domain is not running", rc=1)
            self.pins[int(rest[1])] = rest[2]
            return self.ok(argv)
        return self.ok(argv, err="error: unknown command: " + shlex.quote(cmd), rc=1)
