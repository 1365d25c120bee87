"""The [knobs] section of a study file.

    [knobs]
    "sysctl:net.core.rmem_max" = "{rmem_max}"
    "offload:gro" = "{gro}"
    "mtu@eth0" = 9000
    "command:swappiness" = {value = "{swap}", read = "cat /proc/sys/vm/swappiness", apply = 'echo "$1" > /proc/sys/vm/swappiness'}
    [knobs.hosts]
    "mtu@eth0" = ["server"]

A key is KIND[:ARG][@DEVICE]; DEVICE defaults to the host's own interface. Only pydantic
is imported here so spec.models can use this model without an import cycle.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

KIND_NAMES = (
    "sysctl", "mtu", "offload", "channels", "ring", "rps", "xps", "irq_affinity",
    "txqueuelen", "cc", "qdisc", "tuned", "command",
    "pve_queues", "libvirt_queues", "libvirt_vcpupin",  # hypervisor knobs (ssh targets)
)
# Never changed automatically: they need a reboot or weaken the machine's security.
FORBIDDEN = {
    "cmdline": "the kernel command line needs a reboot and can leave a machine unbootable",
    "kernel_cmdline": "the kernel command line needs a reboot and can leave a machine unbootable",
    "grub": "boot loader settings need a reboot and can leave a machine unbootable",
    "bootloader": "boot loader settings need a reboot and can leave a machine unbootable",
    "mitigations": "mitigations=off weakens the machine's security and needs a reboot",
    "amd_pstate": "amd_pstate is a kernel command line option (needs a reboot)",
    "intel_pstate": "intel_pstate is a kernel command line option (needs a reboot)",
}
_KEY = re.compile(r"^(?P<kind>[a-z_]+)(?::(?P<arg>[^@\s]+))?(?:@(?P<device>[A-Za-z0-9_.:-]{1,15}))?$")
NEEDS_ARG = {"sysctl", "offload", "command", "pve_queues", "libvirt_queues", "libvirt_vcpupin"}
NO_ARG = {"mtu", "txqueuelen", "cc", "qdisc", "tuned"}


@dataclass(frozen=True)
class KnobKey:
    key: str  # as written
    kind: str
    arg: str | None
    device: str | None


def parse_key(key: str) -> KnobKey:
    """Split KIND[:ARG][@DEVICE]; raises ValueError with a message naming the key."""
    m = _KEY.match(key)
    kind = m.group("kind") if m else key.split(":", 1)[0].split("@", 1)[0]
    if kind in FORBIDDEN:
        raise ValueError(f"{key!r}: never changed automatically: {FORBIDDEN[kind]}; change it by hand (see `nettune knobs list`)")
    if not m:
        raise ValueError(f"{key!r}: a knob is KIND[:ARG][@DEVICE], e.g. 'sysctl:net.core.rmem_max', 'offload:gro', 'mtu@eth0'")
    if kind not in KIND_NAMES:
        import difflib

        close = difflib.get_close_matches(kind, KIND_NAMES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"{key!r}: unknown knob kind {kind!r}; {hint}known: {', '.join(KIND_NAMES)}")
    arg = m.group("arg")
    if kind in NEEDS_ARG and not arg:
        raise ValueError(f"{key!r}: {kind} needs a name after ':', e.g. '{kind}:{_EXAMPLE_ARG[kind]}'")
    if kind in NO_ARG and arg:
        raise ValueError(f"{key!r}: {kind} takes no ':{arg}' part")
    if kind in ("sysctl", "cc", "tuned", "command", "pve_queues", "libvirt_queues", "libvirt_vcpupin") and m.group("device"):
        raise ValueError(f"{key!r}: {kind} is not per interface; remove '@{m.group('device')}'")
    return KnobKey(key, kind, arg, m.group("device"))


_EXAMPLE_ARG = {"sysctl": "net.core.rmem_max", "offload": "gro", "command": "mysetting", "pve_queues": "101", "libvirt_queues": "myvm", "libvirt_vcpupin": "myvm"}

Scalar = Union[bool, int, float, str]


class CommandKnob(BaseModel):
    """A knob nettune has no kind for: your own read/apply/restore commands.

    A string command runs as `sh -c CMD nettune-knob VALUE` (use "$1" for the value);
    a list is an argv and gets VALUE appended. The value is never pasted into shell text.
    """

    model_config = ConfigDict(extra="forbid")
    value: Scalar = Field(description="The value to set; may use sweep parameters, e.g. \"{swap}\".")
    read: str | list[str] = Field(description="Prints the current value on stdout.")
    apply: str | list[str] = Field(description="Sets the value (passed as $1 / the last argument).")
    restore: str | list[str] | None = Field(default=None, description="Puts the original back (given as $1 / last argument); default: apply.")
    scope: Literal["host", "machine"] = Field(default="host", description="host: on each host (inside its namespace in the lab); machine: once on the machine.")


KnobValue = Union[Scalar, CommandKnob]


class KnobsSpec(BaseModel):
    """Settings changed per sweep point and always restored: "KIND[:ARG][@DEVICE]" = value."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, KnobValue] = Field(init=False)  # type: ignore[assignment]
    # an empty list must not quietly mean "every host" (a missing key does)
    hosts: dict[str, Annotated[list[str], Field(min_length=1)]] = Field(
        default_factory=dict, description="Which hosts a knob applies to, by knob key (default: all hosts)."
    )

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        # checked before field validation so a bad key gets this message, not a type error
        if isinstance(data, dict):
            for key, value in data.items():
                if key == "hosts":
                    continue
                k = parse_key(key)
                if (k.kind == "command") != isinstance(value, (dict, CommandKnob)):
                    if k.kind == "command":
                        raise ValueError(f"{key!r}: a command knob is a table: {{value = ..., read = ..., apply = ..., restore = ...}}")
                    raise ValueError(f"{key!r}: expected a value (string, number or true/false), got {type(value).__name__}")
        return data

    @model_validator(mode="after")
    def _check(self) -> "KnobsSpec":
        extra = self.__pydantic_extra__ or {}
        for key in self.hosts:
            if key not in extra:
                raise ValueError(f"hosts: {key!r} is not a knob in [knobs]")
        return self

    def knobs(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})


def knob_items(section: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """(knobs, hosts) from a resolved (filled-in) [knobs] dict."""
    section = dict(section or {})
    hosts = section.pop("hosts", None) or {}
    return section, hosts


def summary(section: dict[str, Any] | None) -> str:
    """One line for a point's filled-in knobs, e.g. for `nettune run --dry-run`:
    'mtu=1500 (server), offload:gro=off, command:swap=10'."""
    knobs, hosts = knob_items(section)
    parts = []
    for key, value in knobs.items():
        v = value.get("value") if isinstance(value, dict) else value
        parts.append(f"{key}={v}" + (f" ({','.join(hosts[key])})" if key in hosts else ""))
    return ", ".join(parts)
