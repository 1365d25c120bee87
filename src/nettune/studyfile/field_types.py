"""The value types and base models every part of the study file shares: numbers that are
never booleans, templates, ranges the tools accept, rates, the strict base model, and
what the targets whose hosts are this machine have in common. models.py, the target specs
(lab_target.py, ...) and the workload kinds import them from here, so none of them imports
models.py, which imports them all."""
from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, WithJsonSchema
from pydantic_core import PydanticCustomError

from .rates import RATE_PATTERN, parse_rate


def _not_bool(value: Any) -> Any:
    # TOML has real booleans: `runs = true` is a mistake, not the 1 pydantic would make of it
    if isinstance(value, bool):
        raise PydanticCustomError("not_bool", "expected a number, got {value}", {"value": str(value).lower()})
    return value


NotBool = BeforeValidator(_not_bool)
# A string holding at least one {placeholder}; only valid before a point is resolved.
Template = Annotated[str, StringConstraints(pattern=r"\{[^{}]+\}")]
Mtu = Annotated[int, NotBool, Field(ge=68, le=65535)]
Queues = Annotated[int, NotBool, Field(ge=1, le=256)]
Port = Annotated[int, NotBool, Field(ge=1024, le=65535)]
# Upper bounds are the tools' own (iperf3 3.12 refuses -t above 86400 and -O above 60) or
# far past any sensible test, so a typo such as duration = 100000000 is an error at load.
Duration = Annotated[int, NotBool, Field(ge=1, le=86400)]
Omit = Annotated[int, NotBool, Field(ge=0, le=60)]
Streams = Annotated[int, NotBool, Field(ge=1, le=1024)]
Bytes = Annotated[int, NotBool, Field(ge=1)]  # -w / -l as a number of bytes


def _rate(value: Any) -> Any:
    # a template ("{rate}") is left to the Template member of the union; anything else is
    # read once into bits/s (spec.rates: one meaning for "1G" on every engine)
    if isinstance(value, str) and "{" in value:
        raise PydanticCustomError("template", "a template")
    try:
        return parse_rate(value)
    except ValueError as e:
        raise PydanticCustomError("rate", "{why}", {"why": str(e)}) from None


# bits per second; the schema says what the file may hold: a whole number or a rate text
Rate = Annotated[int, BeforeValidator(_rate), WithJsonSchema({"anyOf": [
    {"type": "integer", "minimum": 0}, {"type": "string", "pattern": RATE_PATTERN}]})]
MAX_LAB_HOSTS = 245  # host i is at .(10+i) of a /24
BENCH_NET = ipaddress.ip_network("198.18.0.0/15")  # the lab's addresses are only ever in here


def bench_subnet(v: str | None, *, exactly_24: bool = False) -> str | None:
    """A lab's `subnet`: IPv4 inside the benchmarking range, a /24 or (where the lab allows
    it, not the VM lab: its guests' network config is a /24) a larger block of it."""
    if v is None:
        return v
    try:
        net = ipaddress.ip_network(v)
    except ValueError as e:
        raise ValueError(f"{v!r}: {e}; write a network such as '198.18.40.0/24'") from None
    if not isinstance(net, ipaddress.IPv4Network) or not net.subnet_of(BENCH_NET) or net.prefixlen > 24 or (exactly_24 and net.prefixlen != 24):
        raise ValueError(f"{v!r}: use a /24 inside 198.18.0.0/15 (the benchmarking range), e.g. '198.18.40.0/24'")
    return v


class Strict(BaseModel):
    """Unknown keys are errors: a typo must never be silently ignored."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ThisMachine:
    """What the target specs whose hosts are this machine (lab namespaces, loopback) have in
    common: every host runs tests, and their binaries and files are this machine's."""

    kind: str
    hosts: list[str]

    @property
    def test_hosts(self) -> list[str]:
        """Hosts that may be a workload's server or client: all of them."""
        return list(self.hosts)

    @property
    def on_this_machine(self) -> bool:
        return True

    @property
    def over_loopback(self) -> bool:
        """Do its tests cross this machine's loopback (where `nettune ceiling`'s loopback
        ceilings predict the path)? The lab's cross veths and a bridge instead."""
        return False

    def study_problem(self, bind: bool, knobs: Any) -> str | None:
        """What can never work in a study on this target (None: nothing; only a cluster's
        pods refuse some knobs and binds)."""
        return None

    @property
    def hypervisors(self) -> list[str]:
        """Hosts only sampled, never running traffic (an ssh target's role = "hypervisor"): none here."""
        return []

    def disruption_seconds(self, what: str, host: str) -> float:
        """Nothing here reboots or restarts (refused when the file is read)."""
        return 0.0

    def vm_host(self, field: str, name: str) -> str | None:
        """The host that is VM `name` of a hypervisor: none (this machine's hosts are no VMs of a study host)."""
        return None

    def disruption_refusal(self, what: str, opt_in: str, hosts: tuple[str, ...]) -> str | None:
        """Why a change that reboots, restarts or resets a link of these hosts cannot be
        made: a reboot of this machine never; a link reset of a lab veth or of loopback is
        nettune's own test path (no opt-in)."""
        return self.reboot_refusal(hosts) if what == "reboot" else None

    def reboot_refusal(self, hosts: tuple[str, ...]) -> str | None:
        """Why a boot-time knob on these hosts (all, when empty) cannot be set: hosts that
        are this machine are never rebooted."""
        return (f"needs a reboot, and a {self.kind} target's hosts are this machine, the one nettune runs on, which is never rebooted; "
                "use an ssh target host with allow_reboot = true")


class OtherMachines:
    """What the target specs whose hosts are other kernels (ssh hosts, the VM lab's guests,
    a cluster's pods) have in common: their binaries and files are known only once
    connected, the target sets no queue count for every interface, and their tests never
    cross this machine's loopback. Members override what is theirs (a cluster refuses some
    knobs; ssh hosts and guests reboot, restart and are VMs of a hypervisor)."""

    @property
    def on_this_machine(self) -> bool:
        return False

    @property
    def queues(self) -> int | None:
        """Queues per host interface the target sets: none (knobs change a NIC's own, or a
        guest's per host)."""
        return None

    @property
    def over_loopback(self) -> bool:
        return False

    def study_problem(self, bind: bool, knobs: Any) -> str | None:
        """What can never work in a study on this target: nothing (a host's knobs are its own)."""
        return None

    def vm_host(self, field: str, name: str) -> str | None:
        """The study host that is VM `name` of a hypervisor: none known."""
        return None

    def disruption_seconds(self, what: str, host: str) -> float:
        """Nothing is waited for: no reboot or restart (refused when the file is read)."""
        return 0.0


class RoleHosts(OtherMachines):
    """Hosts in a table, each with a role: "test" hosts run the workload's server and client,
    "hypervisor" hosts are only sampled (their CPU, their VMs' settings)."""

    hosts: Mapping[str, Any]

    @property
    def test_hosts(self) -> list[str]:
        """Hosts that may be a workload's server or client (not role = "hypervisor")."""
        return [n for n, h in self.hosts.items() if h.role == "test"]

    @property
    def hypervisors(self) -> list[str]:
        return [n for n, h in self.hosts.items() if h.role == "hypervisor"]

