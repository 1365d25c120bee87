"""The engine protocols: the tool a `[workload] engine =` names, and, for the network
engines, how to start each side and read what it printed.

Every engine is a `Tool` (a program on the hosts with a version; EngineBase). A network
engine (iperf3, iperf2) is also an `Engine`: server and client command lines, parsing,
how its servers keep other clients out (NetworkEngineBase gives the defaults). The
command workload's tool (timed_command.py) is a Tool only: it has no server, no client
and nothing to parse; its workload kind (run/workloads/command_run.py) runs it.

An engine knows command lines and output formats only. Starting processes, waiting for
the server's port, timeouts, retries and probes live in run.driver, shared by every
network engine; arithmetic on streams (totals, weighted means) lives in engines.streams.
Everything the driver and the run layer call is declared here, so no caller asks an
engine what it can do (no getattr/hasattr): a new engine subclasses a base and
overrides what differs.
"""
from __future__ import annotations

from typing import Protocol

from ..studyfile.models import Workload
from .access import Access, Iperf3Credentials
from .result import SideOutput, TestResult


def client_budget(wl: Workload) -> float:
    """Seconds the client may run before it is stopped: the test, plus `timeout` (default
    10 s + a quarter of the duration) for connecting and the final reports."""
    return float(wl.duration + wl.omit + (wl.timeout if wl.timeout is not None else 10.0 + 0.25 * wl.duration))


class Tool(Protocol):
    """Every engine: a program on the hosts, with a version the store records."""

    name: str  # "iperf3", "iperf2", "command": the `engine =` value
    binary: str  # executable name on the hosts
    install_hint: str  # e.g. "apt-get install iperf3 (or: nettune setup)"

    def version(self, version_output: str) -> str:
        """Parse the tool's version from `binary --version`/`-v` output (may be on stderr)."""
        ...

    def version_argv(self) -> list[str]: ...


class Engine(Tool, Protocol):
    """A network engine: a traffic tool with a server and a client (iperf3, iperf2)."""

    server_exits: bool  # True if the server exits by itself after one test (iperf3 -1)
    # How its servers keep other clients out (run/credentials.py makes and installs them):
    # "password": a user, password and RSA key in files (credential_files, password_access);
    # "permit_key": a key on both command lines (permit_key_usable says when); "": none.
    auth: str

    def server_argv(self, wl: Workload, port: int, tool_version: str, access: Access | None = None) -> list[str]:
        """The server's command: bound to `access.bind`, requiring its credentials."""
        ...

    def client_argv(self, wl: Workload, server_address: str, port: int, tool_version: str, access: Access | None = None) -> list[str]: ...

    def client_env(self, access: Access | None) -> dict[str, str]:
        """Environment for the client (secrets that must not be on a command line)."""
        ...

    def listen_proto(self, wl: Workload) -> str:
        """Protocol of the server's listening socket ("tcp" or "udp"), to know when it is ready."""
        ...

    def busy(self, client: SideOutput) -> bool:
        """True if the client failed only because the server was busy (retry later)."""
        ...

    def taken(self, client: SideOutput | None, server: SideOutput) -> bool:
        """True if another connection ended a one-off server before our client reached it
        (client None: before our client even started); a fresh server is worth a retry."""
        ...

    def server_error(self, server: SideOutput) -> str:
        """Why a server that never listened stopped, in the tool's own words ('' unknown)."""
        ...

    def server_done(self, wl: Workload, stdout: str) -> bool:
        """For a server that does not exit by itself: True once `stdout` holds its final
        report, so the driver can stop it."""
        ...

    def permit_key_usable(self, wl: Workload) -> str | None:
        """Why this workload's server cannot require a permit key (iperf2's --permit-key),
        or None if it can."""
        ...

    def auth_probe_argv(self) -> list[str]:
        """The command whose output tells whether a host's build can require credentials
        (run before the target is prepared); [] when the tool never can."""
        ...

    def auth_available(self, probe_output: str) -> bool:
        """From auth_probe_argv's output (stdout + stderr): can this build require them?"""
        ...

    def auth_missing(self, hosts: list[str], required: bool) -> str:
        """Why the tool on `hosts` cannot require credentials; required: said to refuse
        auth = true, else a note that their tests run without credentials."""
        ...

    def credential_files(self, side: str) -> tuple[str, ...]:
        """Files of the study's "password" credentials the "server" or "client" side needs
        (each host gets them in a private directory)."""
        ...

    def password_access(self, bind: str | None, creds: Iperf3Credentials, server_dir: str, client_dir: str,
                        server_version: str, client_version: str) -> Access:
        """One test's Access with the "password" credentials, their files in these
        directories, for these tool versions on the server and client hosts."""
        ...

    def parse(self, wl: Workload, client: SideOutput, server: SideOutput) -> TestResult:
        """Build the result from both sides' outputs. Never raises on bad output:
        returns ok=False with the reason in `error`."""
        ...

    def warnings(self, wl: Workload) -> tuple[Workload, list[str]]:
        """Adjust a workload the tool cannot run as asked (e.g. clip iperf3 -P to 128)
        and say so."""
        ...

    def warm_up(self, wl: Workload) -> Workload | None:
        """A short test the driver runs against a fresh server before the measured one (its
        output left out of the parse), where the tool's first test on a new server is
        slower than the next; None: none needed."""
        ...


class EngineBase:
    """What every engine declares (the Tool protocol); its members are ENGINES."""

    name: str
    binary: str
    install_hint: str


class NetworkEngineBase(EngineBase):
    """Defaults of the Engine protocol: a tool whose server is never busy, never taken
    by another connection, and that cannot require credentials."""

    server_exits = True
    auth = ""

    def client_env(self, access: Access | None) -> dict[str, str]:
        return {}

    def listen_proto(self, wl: Workload) -> str:
        return "tcp"

    def busy(self, client: SideOutput) -> bool:
        return False

    def taken(self, client: SideOutput | None, server: SideOutput) -> bool:
        return False

    def server_error(self, server: SideOutput) -> str:
        # the tool's last line with words in it (iperf2: "bind failed: Address already in use")
        lines = [ln.strip() for ln in (server.stderr or server.stdout or "").splitlines() if any(c.isalpha() for c in ln)]
        return lines[-1] if lines else ""

    def server_done(self, wl: Workload, stdout: str) -> bool:
        # only asked when server_exits is False; an engine whose server keeps running
        # must say when its report is complete, until then: done as soon as asked
        return True

    def permit_key_usable(self, wl: Workload) -> str | None:
        return f"{self.name} has no permit key"

    def auth_probe_argv(self) -> list[str]:
        return []

    def auth_available(self, probe_output: str) -> bool:
        return False

    def auth_missing(self, hosts: list[str], required: bool) -> str:
        return f"{self.name} on {', '.join(hosts)} cannot require credentials"

    def credential_files(self, side: str) -> tuple[str, ...]:
        return ()

    def password_access(self, bind: str | None, creds: Iperf3Credentials, server_dir: str, client_dir: str,
                        server_version: str, client_version: str) -> Access:
        return Access(bind=bind)  # auth != "password": never asked

    def warnings(self, wl: Workload) -> tuple[Workload, list[str]]:
        return wl, []

    def warm_up(self, wl: Workload) -> Workload | None:
        return None
