"""What a target is: a set of hosts nettune can run commands on.

A Target owns the hosts of one study (namespaces on a bridge, loopback, SSH machines...).
A Host runs processes, reads and writes files (for /proc sampling and for knobs), and
has an address its peers reach it at. Engines, probes and knobs only see these
protocols, so a new kind of target is one new file in this package.

Every attribute or method a caller uses is declared here, and HostBase, ProcBase and
TargetBase give the defaults, so no caller ever asks an object what it can do
(no getattr/hasattr feature probing): a member overrides what differs.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
import socket
from typing import Any, ContextManager, Iterator, Mapping, Protocol, runtime_checkable
from ..record.point_state import PointState


@dataclass
class CommandResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    def said(self, lines: int = 20, chars: int = 2000) -> str:
        """What the command said, on one line: all of stderr (stdout if stderr is empty),
        its last `lines` lines and `chars` characters, lines joined with ' | '. Tools put
        the reason before their last line (FreeBSD sysctl: "oid '...' is a read only
        tunable", then the failed assignment), so no line is dropped below the bound."""
        text = self.stderr.strip() or self.stdout.strip()
        kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
        out = " | ".join(kept)
        return out if len(out) <= chars else "..." + out[-chars:]


@runtime_checkable
class Proc(Protocol):
    """A process started on a host. `pid` is its PID on that host (for /proc/PID/stat)."""

    pid: int
    argv: list[str]
    lost: str | None  # why the connection to its host was lost (its results cannot be trusted)

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int:
        """Exit code; raises TimeoutError if it has not exited within timeout."""
        ...

    def stop(self, grace: float = 2.0) -> None:
        """SIGTERM this PID (only this one), SIGKILL after `grace` seconds. Idempotent."""
        ...

    def output(self) -> tuple[str, str]:
        """(stdout, stderr) captured so far (complete once the process has exited)."""
        ...

    def cpu_seconds(self) -> float | None:
        """Exact CPU time (user + system) once exited, where the host reports it; else None."""
        ...

    def rusage_tree(self) -> dict[str, float] | None:
        """Once exited: user and system CPU seconds and peak RSS (KiB) of the process and its
        reaped descendants ({"user", "sys", "max_rss_kb"}), where the host reports them."""
        ...

    def stop_group(self, grace: float = 2.0) -> None:
        """Stop the process group this process leads (it and every descendant that stayed
        in its group: a build's compilers), found by its PID; TERM, KILL after `grace`."""
        ...


@runtime_checkable
class Host(Protocol):
    name: str
    address: str  # where peers reach this host (the server address clients use)
    os: str  # "linux" or "freebsd"
    netns: str | None  # the network namespace nettune created for it (lab), else None
    interface: str | None  # its test NIC (default device of interface knobs), if known
    # True: this machine itself (or one of its namespaces), so a setting outside a namespace
    # is this machine's and the knob journal records it as "machine"; False: elsewhere, and
    # reach() must say how to find it again (nettune restore writes originals back there)
    on_this_machine: bool
    # the study or inventory allows nettune to reboot it (boot-time knobs); never for
    # hosts on this machine; reboot_timeout bounds the wait for it to answer again
    allow_reboot: bool
    reboot_timeout: float
    # the study lets boot-time knobs edit files other packages own (a /etc/default/grub.d
    # drop-in, grubenv's tuned_params) when the setting is made there
    override_boot_dropins: bool
    # where its machine CPU counters come from: "os" (the OS's own: /proc/stat, kern.cp_time)
    # or "cgroup" (a container's cgroup cpu.stat: a Kubernetes pod's CPU and its throttling)
    cpu_counters: str

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> Proc:
        """Start argv. `env`: variables added to its environment (secrets such as
        IPERF3_PASSWORD: they never appear on a command line, here or remote)."""
        ...

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        """Run to completion and capture output; never raises on a non-zero exit."""
        ...

    def read_text(self, path: str) -> str:
        """Read a file as this host sees it (per-namespace for /proc/sys/net and /sys/class/net)."""
        ...

    def write_text(self, path: str, text: str) -> None: ...

    def which(self, tool: str) -> str | None: ...

    def probe_run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        """Run a read-only probe (a tool's version) before the target is prepared."""
        ...

    def listening(self, port: int, proto: str = "tcp", pid: int | None = None) -> bool:
        """True when something listens on `port` on this host (no connection is made);
        with `pid`, as seen from that process's network namespace."""
        ...

    def free_port(self) -> int:
        """A port a server can listen on here (TCP and UDP free)."""
        ...

    def reach(self) -> dict[str, Any] | None:
        """How to reach this host again without the study file (the knob journal keeps
        it); None for hosts on this machine (on_this_machine)."""
        ...


@dataclass
class Scratch:
    """Throw-away stand-ins for a target's hosts on this machine (Target.scratch): fresh
    namespaces answer every per-namespace and device question as the real hosts will, and
    may be changed freely, so knobs are checked before anything real exists."""

    hosts: dict[str, Host]  # a stand-in per host name (a host that is real already has none)
    spare: Host  # holds spare_dev
    spare_dev: str  # an interface nothing uses, to try settings on (a qdisc the kernel may lack)


class HostSet(Protocol):
    """The hosts of a target by name, and which of them run tests (what the plan-level
    helpers read of a Target, or of a dry run's stand-ins for hosts on this machine)."""

    @property
    def hosts(self) -> Mapping[str, Host]: ...

    @property
    def test_hosts(self) -> list[str]: ...


class Target(Protocol):
    kind: str
    hosts: dict[str, Host]
    test_hosts: list[str]  # hosts that run tests (the others are hypervisors)
    extra_machines: dict[str, Host]  # sampled for CPU during every test ("hypervisor:NAME")
    warnings: list[str]  # said once before the study starts (a host key recorded...)

    def prepare(self, resolved: Any) -> PointState:
        """Bring the target into the state a point needs (create, re-create, adjust).

        Returns the target's actual state for the point (e.g. mtu, queues per host),
        stored with each run.
        """
        ...

    def state(self) -> PointState:
        """The actual state now (after knobs changed it); empty when nothing can change."""
        ...

    def settle(self, resolved: Any) -> PointState:
        """After the point's knobs are in force: bring into force what depends on them (a
        Kubernetes pod copies some sysctls from its node only when it is created, so its
        pods are re-created after such a node value changed); the state that adds (empty: none)."""
        ...

    def facts(self) -> dict[str, dict[str, Any]]:
        """Host facts once per study: kernel, CPU model and count, tool versions..."""
        ...

    def close(self) -> None:
        """Tear down everything the target created. Safe to call twice."""
        ...

    def scratch(self, queues: int = 1, only: list[str] | None = None, each: bool = False) -> ContextManager[Scratch | None]:
        """Stand-ins for the hosts (or `only` these) in throw-away namespaces, their
        interfaces with `queues` queues; each=True: one namespace per host. None when the
        target has none (its hosts are not on this machine) or they cannot be made."""
        ...


class ProcBase:
    """Defaults of the Proc protocol."""

    lost: str | None = None

    def cpu_seconds(self) -> float | None:
        return None

    def rusage_tree(self) -> dict[str, float] | None:
        return None

    def stop(self, grace: float = 2.0) -> None:
        raise NotImplementedError

    def stop_group(self, grace: float = 2.0) -> None:
        self.stop(grace)  # a member whose processes lead no group of their own


class HostBase:
    """Defaults of the Host protocol: a Linux host elsewhere (not on this machine), outside
    any namespace. Remote is the safe default: a member that is this machine says so
    (on_this_machine = True); one that is not must implement reach()."""

    name: str
    address: str
    os = "linux"
    netns: str | None = None
    interface: str | None = None
    on_this_machine = False
    allow_reboot = False
    reboot_timeout = 600.0
    override_boot_dropins = False
    cpu_counters = "os"

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        raise NotImplementedError

    def probe_run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        return self.run(argv, timeout)

    def free_port(self) -> int:
        # this machine's loopback: ask the kernel (a tiny race, handled as "port in use")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    def reach(self) -> dict[str, Any] | None:
        if self.on_this_machine:
            return None
        # never a silent None: the journal would take the host for this machine, and
        # `nettune restore` would write its original values onto this machine
        raise NotImplementedError(
            f"{type(self).__name__} is not on this machine (on_this_machine = False): the member must implement "
            "reach(), how the knob journal reaches this host again, or set on_this_machine = True")


class TargetBase:
    """Defaults of the Target protocol."""

    kind: str
    hosts: dict[str, Any]

    @property
    def test_hosts(self) -> list[str]:
        return list(self.hosts)

    @property
    def extra_machines(self) -> dict[str, Any]:
        return {}

    @property
    def warnings(self) -> list[str]:
        return []

    def state(self) -> PointState:
        return PointState()

    def settle(self, resolved: Any) -> PointState:
        return PointState()  # nothing of the target depends on the knobs

    def facts(self) -> dict[str, dict[str, Any]]:
        return {name: {} for name in self.hosts}

    def close(self) -> None:
        pass

    @contextmanager
    def scratch(self, queues: int = 1, only: list[str] | None = None, each: bool = False) -> Iterator[Scratch | None]:
        yield None

