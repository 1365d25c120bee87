"""The sandbox target: a test seam (like hyperfine's MockExecutor), not a user feature.

FOR TESTS ONLY. It is enabled by the environment variable NETTUNE_SANDBOX=DIR, and only
for studies with `[target] kind = "local"` (targets.make_target picks it then); there is
no spec kind for it, so no study file can ask for it.

What it fakes: each host's /proc/sys, /sys and /proc/irq live in DIR/<host>/ (seeded
with the values of a typical Linux 6.x machine the first time), so knobs read and write
files there instead of the kernel's. Every write goes into the tree: write_text refuses
(OSError) any path outside it, except the test credentials' private directories
(/tmp/nettune-auth.*) that the run makes; the file commands (mkdir, chmod, rm) are run
only on those same places. Commands that would change this machine (`ip`, `tc`,
`ethtool`, `sysctl`...) are never run: `ip link set dev X mtu|txqueuelen N` is emulated
on the tree, and a command outside a short read-only list fails as "not emulated".
The CPU power stack (tuned-adm and an amd_pstate mode switch) is modelled in
sandbox_cpu.py. What stays real: iperf3/iperf2 run on 127.0.0.1 as the local target runs them
(`which` finds the installed tools), reads of read-only files such as /proc/stat and
/proc/PID for the CPU probe, sockets, the knob journal, the store. So run, knob
session, `nettune restore` and failure paths run end to end without root and without
creating a namespace.

The journal records a sandbox host's place as remote with `reach` = {"sandbox": its
tree, "address": ...}: `nettune restore` after a kill -9 finds the tree again from the
journal alone (knobs/remote.py), with or without NETTUNE_SANDBOX set.

Faults, read from DIR/faults.json at every client start (so a test can write it before
`nettune run`): {"raise_in_client": N} makes the Nth client start raise RuntimeError
(an exception inside a test); {"fail_clients": [N, ...]} starts those clients with an
option the real tool refuses, so they fail as a failing client does. Counted from 1 per
run, across hosts.
"""
from __future__ import annotations

import errno
import json
import os
import posixpath
import re
import tempfile
from pathlib import Path
from typing import Any

from .base import CommandResult, HostBase, TargetBase
from .facts import linux_facts
from .local import LocalHost
from .procs import LocalProc, run_local
from .sandbox_cpu import STATUS, switch_mode, tuned_adm
from ..record.point_state import PointState

ENV = "NETTUNE_SANDBOX"
# the paths that live in the tree: every kernel file a knob kind writes (knobs/: sysctl and
# cc under /proc/sys, mtu/txqueuelen/rps/xps under /sys, irq_affinity under /proc/irq)
MAPPED = ("/proc/sys/", "/sys/", "/proc/irq/")
# run/credentials.py DIR_PREFIX (targets may not import run; tests/test_sandbox.py keeps
# them equal): the run's private directories for test credentials, on this machine
CREDENTIALS_PREFIX = "/tmp/nettune-auth."
# run for real: they change nothing on this machine
REAL_COMMANDS = {"uname", "iperf3", "iperf", "test", "ls", "cat", "nproc", "true", "false"}
# run for real on paths in the tree or under CREDENTIALS_PREFIX only: tool -> its allowed
# flag letters (rm -rf, mkdir -p, chmod -R); mkdir's -m MODE and chmod's MODE are not paths
FILE_COMMANDS = {"mkdir": "pv", "chmod": "Rfv", "rm": "rRfv"}
# options with which iperf3/iperf write a file wherever they are told
WRITING_OPTIONS = ("--logfile", "-I", "--pidfile")
BAD_OPTION = "--nettune-sandbox-injected-failure"

# what a fresh Linux 6.x machine holds (paths relative to a host's tree)
SEED = {
    "proc/sys/net/core/rmem_max": "212992",
    "proc/sys/net/core/wmem_max": "212992",
    "proc/sys/net/core/netdev_max_backlog": "1000",
    "proc/sys/net/core/somaxconn": "4096",
    "proc/sys/net/core/optmem_max": "20480",
    "proc/sys/net/core/default_qdisc": "fq_codel",
    "proc/sys/net/ipv4/tcp_rmem": "4096\t131072\t6291456",
    "proc/sys/net/ipv4/tcp_wmem": "4096\t16384\t4194304",
    "proc/sys/net/ipv4/tcp_mtu_probing": "0",
    "proc/sys/net/ipv4/tcp_fin_timeout": "60",
    "proc/sys/net/ipv4/tcp_congestion_control": "cubic",
    "proc/sys/net/ipv4/tcp_available_congestion_control": "reno cubic",
    "proc/sys/net/ipv4/tcp_allowed_congestion_control": "reno cubic",
    "sys/devices/system/cpu/possible": "0-3",
    "sys/class/net/lo/ifindex": "1",
    "sys/class/net/lo/mtu": "65536",
    "sys/class/net/lo/tx_queue_len": "1000",
    "sys/class/net/lo/flags": "0x9",
    "sys/class/net/lo/queues/rx-0/rps_cpus": "0",
    "sys/class/net/lo/queues/tx-0/xps_cpus": "0",
    # two IRQs of a NIC (as in irq_affinity:38,39), on every CPU as without irqbalance
    "proc/irq/38/smp_affinity_list": "0-3",
    "proc/irq/39/smp_affinity_list": "0-3",
}


def sandbox_dir() -> Path | None:
    """The sandbox root when a test enabled it (NETTUNE_SANDBOX), else None."""
    d = os.environ.get(ENV)
    return Path(d) if d else None


def _inside(path: str, base: str) -> bool:
    """Whether `path`, symlinks and `..` resolved, is `base` or under it."""
    real, top = os.path.realpath(path), os.path.realpath(base)
    return real == top or real.startswith(top.rstrip("/") + "/")


def _credentials_dir(path: str) -> bool:
    """Whether `path`, resolved, is a credentials directory of a run or inside one."""
    head = os.path.realpath(os.path.dirname(CREDENTIALS_PREFIX)) + "/" + os.path.basename(CREDENTIALS_PREFIX)
    return os.path.realpath(path).startswith(head)


def _operands(tool: str, args: list[str]) -> list[str] | None:
    """The paths a file command acts on; None for an option the sandbox does not allow."""
    out: list[str] = []
    options, mode = True, tool == "chmod"  # chmod's first operand is its mode
    i = 0
    while i < len(args):
        a = args[i]
        if options and a == "--":
            options = False
        elif options and tool == "mkdir" and a == "-m":
            i += 1  # its value is a mode
        elif options and tool == "mkdir" and (a.startswith("-m") or a.startswith("--mode=")):
            pass
        elif options and a.startswith("-") and a != "-":
            if not re.fullmatch(f"-[{FILE_COMMANDS[tool]}]+", a):
                return None
        elif mode:
            mode = False
        else:
            out.append(a)
        i += 1
    return out


def seed_tree(root: Path) -> None:
    """Create the files of SEED that are missing under one host's tree (a test may pre-seed)."""
    for rel, value in SEED.items():
        p = root / rel
        if not p.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(value + "\n")


class _Faults:
    """Client starts counted across the hosts of one run, and the faults asked for."""

    def __init__(self, file: Path | None):
        self.file, self.clients = file, 0

    def client_argv(self, argv: list[str]) -> list[str]:
        if "-c" not in argv:
            return argv  # a server
        self.clients += 1
        try:
            faults = json.loads(self.file.read_text()) if self.file else {}
        except FileNotFoundError:
            faults = {}
        if faults.get("raise_in_client") == self.clients:
            raise RuntimeError(f"injected failure inside a test (nettune sandbox, client {self.clients})")
        if self.clients in faults.get("fail_clients", []):
            return [argv[0], BAD_OPTION, *argv[1:]]
        return argv


class SandboxHost(HostBase):
    """A host whose /proc/sys and /sys are files under `root`; processes run on loopback."""

    interface = "lo"

    def __init__(self, name: str, root: Path, faults: _Faults | None = None, address: str = "127.0.0.1"):
        self.name, self.address = name, address
        self.root = Path(root)
        self._faults = faults or _Faults(None)
        self._real = LocalHost(name, address)  # sockets and processes: this machine's own

    @classmethod
    def from_reach(cls, label: str, reach: dict[str, Any]) -> "SandboxHost":
        """The host a journal's `reach` names (for `nettune restore` in a new process)."""
        root = Path(reach["sandbox"])
        if not root.is_dir():
            raise FileNotFoundError(f"the sandbox tree {root} no longer exists")
        return cls(label, root, address=str(reach.get("address") or "127.0.0.1"))

    def path(self, path: str) -> str:
        """Where `path` lives for this host: in the tree for the MAPPED kernel paths, else as is."""
        if not path.startswith("/"):
            return path
        norm = posixpath.normpath(path)  # /sys/../etc is /etc, not the tree's
        return str(self.root / norm.lstrip("/")) if (norm + "/").startswith(MAPPED) else path

    def writable(self, path: str) -> bool:
        """Whether this host may change `path` (already mapped): in the tree, or in a run's
        credentials directory; nothing else on this machine."""
        return _inside(path, str(self.root)) or _credentials_dir(path)

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> LocalProc:
        if any(a.startswith(WRITING_OPTIONS) for a in argv[1:]):
            raise PermissionError(errno.EPERM, f"the nettune sandbox does not let {argv[0]} write files ({', '.join(WRITING_OPTIONS)})")
        return self._real.spawn(self._faults.client_argv(argv), env)

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        tool = os.path.basename(argv[0]) if argv else ""
        if tool == "ip":
            return self._ip(argv)
        if tool == "tuned-adm":  # sandbox_cpu.py: tuned's profiles on the tree
            return tuned_adm(self.root, argv)
        argv = [argv[0], *(self.path(a) for a in argv[1:])]
        if tool in FILE_COMMANDS:
            paths = _operands(tool, argv[1:])
            if paths is None:
                return CommandResult(argv, 1, "", f"{tool}: an option the nettune sandbox does not allow (only -{FILE_COMMANDS[tool]})")
            outside = [p for p in paths if not self.writable(p)]
            if outside:
                return CommandResult(argv, 1, "", f"{tool}: {outside[0]}: refused by the nettune sandbox: outside its tree {self.root} and {CREDENTIALS_PREFIX}* (it never changes this machine's files)")
            return run_local(argv, timeout)
        if tool not in REAL_COMMANDS:
            return CommandResult(argv, 1, "", f"{tool}: not emulated by the nettune sandbox (it never changes this machine)")
        if tool in ("iperf3", "iperf") and any(a.startswith(WRITING_OPTIONS) for a in argv[1:]):
            return CommandResult(argv, 1, "", f"{tool}: {', '.join(WRITING_OPTIONS)} refused by the nettune sandbox (it never writes this machine's files)")
        return run_local(argv, timeout)

    def _ip(self, argv: list[str]) -> CommandResult:
        m = re.fullmatch(r"ip link set dev (\S+) (mtu|txqueuelen) (\d+)", " ".join(argv))
        if not m:
            return CommandResult(argv, 1, "", "ip: only `ip link set dev DEV mtu|txqueuelen N` is emulated by the nettune sandbox")
        dev, what, value = m.groups()
        f = self.root / "sys/class/net" / dev / ("mtu" if what == "mtu" else "tx_queue_len")
        if "/" in dev or not f.exists() or not _inside(str(f), str(self.root)):
            return CommandResult(argv, 1, "", f'Cannot find device "{dev}"')
        f.write_text(value + "\n")
        return CommandResult(argv, 0, "", "")

    def read_text(self, path: str) -> str:
        return Path(self.path(path)).read_text()

    def write_text(self, path: str, text: str) -> None:
        where = self.path(path)
        if not self.writable(where):
            raise PermissionError(errno.EACCES, f"refused by the nettune sandbox: {path} is outside its tree {self.root} (it never writes this machine's files)", path)
        p = Path(where)
        if where != path and not p.exists():  # a mapped kernel path: the kernel's files cannot be created
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        before = p.read_text().strip() if posixpath.normpath(path) == STATUS else None
        # all or nothing, as the kernel takes a write to /proc/sys or /sys: a run killed with
        # -9 mid-write must not leave an empty (truncated) file that no kernel file can hold
        # (restore would take it for someone else's value and leave it)
        fd, tmp = tempfile.mkstemp(prefix=".nettune-write.", dir=p.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.chmod(tmp, p.stat().st_mode & 0o777 if p.exists() else 0o644)
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        if before is not None and text.strip() != before:  # amd-pstate switches over: new policies (sandbox_cpu.py)
            switch_mode(self.root, text.strip())

    def which(self, tool: str) -> str | None:
        return self._real.which(tool)

    def listening(self, port: int, proto: str = "tcp", pid: int | None = None) -> bool:
        return self._real.listening(port, proto, pid)

    def reach(self) -> dict[str, Any] | None:
        return {"sandbox": str(self.root), "address": self.address}


class SandboxTarget(TargetBase):
    """Every host of a local study as a SandboxHost with its own tree under `root`."""

    kind = "local"

    def __init__(self, study: Any, root: Path):
        root = Path(root)
        faults = _Faults(root / "faults.json")
        self.hosts = {}
        for h in study.target.hosts:
            seed_tree(root / h)
            self.hosts[h] = SandboxHost(h, root / h, faults)

    def prepare(self, resolved: Any) -> PointState:
        return PointState()

    def facts(self) -> dict[str, dict[str, Any]]:
        out = {}
        for name, host in self.hosts.items():
            one = linux_facts(host)
            one["interface"] = {"name": "lo", "mtu": int(host.read_text("/sys/class/net/lo/mtu"))}
            out[name] = one
        return out


__all__ = ["ENV", "SandboxHost", "SandboxTarget", "sandbox_dir", "seed_tree"]
