"""`[target] kind = "vmlab"`: hosts are QEMU guests on this machine, under a private libvirtd.

    [target]
    kind = "vmlab"
    [target.hosts.server]
    vcpus = 2                # the domain's <vcpu>
    memory = "512M"          # MiB, or a size such as "512M", "1G"
    queues = 2               # its virtio NIC's <driver queues='N'/> when the lab comes up
    [target.hosts.client]
    [target.hosts.kvm]
    role = "hypervisor"      # this machine, reached over SSH; default: one named "hypervisor"
    [target.link]            # netem/tbf inside the guests: delay, jitter, loss, rate
    delay = "20ms"

Each guest boots Debian's kernel through GRUB from a disk image, has an sshd, and is reached
through the ssh target; the hypervisor host is this machine (its private libvirtd), reached
over SSH too, so libvirt knobs act through `virsh` as on a real KVM host.
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, field_validator, model_validator
from pydantic_core import PydanticCustomError

from .field_types import RoleHosts, bench_subnet
from .lab_link import LinkSpec

MAX_GUESTS = 8
DEFAULT_HYPERVISOR = "hypervisor"
_SIZE = re.compile(r"^\s*(\d+)\s*(M|MB|MiB|G|GB|GiB)?\s*$", re.I)


def _mib(value: Any) -> Any:
    if isinstance(value, bool):
        raise PydanticCustomError("memory", "expected a size such as 512 (MiB), '512M' or '1G', got {v}", {"v": str(value).lower()})
    if isinstance(value, int):
        return value
    m = _SIZE.match(str(value))
    if m is None:
        raise PydanticCustomError("memory", "{v} is not a memory size: write 512 (MiB), '512M' or '1G'", {"v": repr(value)})
    n = int(m.group(1))
    return n * 1024 if (m.group(2) or "M").upper().startswith("G") else n


MiB = Annotated[int, BeforeValidator(_mib), Field(ge=128, le=65536), WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string"}]})]


class VmHostSpec(BaseModel):
    """One host of the VM lab: a guest, or (role = "hypervisor") this machine."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["test", "hypervisor"] = Field(default="test", description='"hypervisor": this machine (the private libvirtd), reached over SSH; sampled for CPU, runs no traffic.')
    vcpus: int = Field(default=1, ge=1, le=64, description="The guest's vCPUs (<vcpu>).")
    memory: MiB = Field(default=384, description="The guest's memory in MiB (or '512M', '1G').")
    queues: int = Field(default=1, ge=1, le=256, description="Queue pairs of the guest's virtio NIC when the lab comes up (<driver queues='N'/>); the libvirt_queues knob changes it per point.")
    allow_reboot: bool = Field(default=True, description="nettune may reboot this guest (boot-time knobs such as cmdline:mitigations). Never the hypervisor.")
    reboot_timeout: float = Field(default=300.0, gt=0, le=7200, description="Seconds to wait for the guest to answer over SSH after a reboot or restart.")

    @model_validator(mode="after")
    def _hypervisor(self) -> "VmHostSpec":
        if self.role == "hypervisor":
            # compared with the defaults, not model_fields_set: a point re-validates the dumped model
            values = {"vcpus": self.vcpus, "memory": self.memory, "queues": self.queues, "reboot_timeout": self.reboot_timeout}
            given = [k for k, v in values.items() if v != type(self).model_fields[k].default]
            if given:
                raise ValueError(f"{', '.join(given)}: the hypervisor is this machine, not a guest; give these to a guest host")
            if "allow_reboot" in self.model_fields_set and self.allow_reboot:
                raise ValueError("allow_reboot: the hypervisor is this machine, which nettune never reboots")
            self.allow_reboot = False
        return self


class VmlabTargetSpec(BaseModel, RoleHosts):
    """QEMU guests booted through GRUB, domains of a private libvirtd on this machine."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    kind: Literal["vmlab"]
    hosts: dict[str, VmHostSpec] = Field(default_factory=lambda: {"server": VmHostSpec(), "client": VmHostSpec()},
                                         description="[target.hosts.NAME]: guests, and the hypervisor (role = \"hypervisor\"; one named \"hypervisor\" is added when none is given).")
    subnet: str | None = Field(default=None, description="A /24 inside 198.18.0.0/15; default derived from the study name. The bridge (and the hypervisor) get .1, guest i .(10+i).")
    link: LinkSpec | None = Field(default=None, description="[target.link]: delay (round trip), jitter, loss and rate of every guest's link, made by the guests' own kernels (netem, tbf); [target.link.HOST] for one guest. Sweepable.")
    reconnect_timeout: float = Field(default=300.0, ge=0, le=3600, description="After a lost connection (a guest restarted by a knob), keep trying this long.")

    @model_validator(mode="before")
    @classmethod
    def _add_hypervisor(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("hosts", {}), dict):
            return data
        hosts = dict(data.get("hosts") or {"server": {}, "client": {}})
        roles = [h.get("role") if isinstance(h, dict) else h.role if isinstance(h, VmHostSpec) else None for h in hosts.values()]
        if "hypervisor" not in roles and DEFAULT_HYPERVISOR not in hosts:
            hosts[DEFAULT_HYPERVISOR] = {"role": "hypervisor"}
        return {**data, "hosts": hosts}

    @field_validator("subnet")
    @classmethod
    def _subnet(cls, v: str | None) -> str | None:
        return bench_subnet(v, exactly_24=True)

    @model_validator(mode="after")
    def _check(self) -> "VmlabTargetSpec":
        for h in self.hosts:
            if not (h.replace("-", "").replace("_", "").isalnum() and len(h) <= 32):
                raise ValueError(f"host name {h!r}: use letters, digits, '-' or '_' (at most 32); it is also the libvirt domain's name")
        if not self.guests:
            raise ValueError('every host has role = "hypervisor"; give at least one guest ([target.hosts.NAME] without role)')
        if len(self.guests) > MAX_GUESTS:
            raise ValueError(f"{len(self.guests)} guests: the VM lab runs at most {MAX_GUESTS}")
        if len(self.hypervisors) > 1:
            raise ValueError(f"hosts {', '.join(self.hypervisors)} all have role = \"hypervisor\"; the VM lab has one (this machine)")
        if self.link is not None:
            for h in self.link.hosts:
                if h not in self.guests:
                    raise ValueError(f"link.{h}: {h!r} is not a guest of this lab ({', '.join(self.guests)}); [target.link.HOST] names a guest")
        return self

    @property
    def guests(self) -> list[str]:
        """The VMs: the hosts that run tests (the hypervisor is this machine, only sampled)."""
        return self.test_hosts

    def reboot_refusal(self, hosts: tuple[str, ...]) -> str | None:
        """Why a boot-time knob on these hosts (all, when empty) cannot be set: the
        hypervisor is this machine, and a guest may have allow_reboot = false."""
        for name in hosts or tuple(self.hosts):
            spec = self.hosts.get(name)
            if spec is not None and not spec.allow_reboot:
                if spec.role == "hypervisor":
                    return (f"needs a reboot of {name}, the VM lab's hypervisor: this machine, which nettune never reboots; "
                            "name the guests in [knobs.hosts]")
                return f"needs a reboot of {name}, which does not allow one: add allow_reboot = true to [target.hosts.{name}]"
        return None

    def disruption_refusal(self, what: str, opt_in: str, hosts: tuple[str, ...]) -> str | None:
        """Why a change that causes `what` (a reboot, a VM restart, a link reset) on these
        hosts (all, when empty) cannot be made. The guests are the lab's own VMs: nettune
        may restart them and bounce their links (a reboot only with allow_reboot, the
        default); the hypervisor is this machine, never rebooted, restarted or bounced."""
        if what == "reboot":
            return self.reboot_refusal(hosts)
        for name in hosts or tuple(self.hosts):
            spec = self.hosts.get(name)
            if spec is not None and spec.role == "hypervisor":
                return f"needs a {what} of {name}, the VM lab's hypervisor: this machine, which nettune never disrupts; name the guests"
        return None

    def disruption_seconds(self, what: str, host: str) -> float:
        """The most the run waits for a guest's reboot (its reboot_timeout) or a restarted
        guest (reconnect_timeout): what the ETA counts for it."""
        if what == "reboot":
            spec = self.hosts.get(host)
            return float(spec.reboot_timeout) if spec is not None else max((h.reboot_timeout for h in self.hosts.values()), default=300.0)
        return float(self.reconnect_timeout)

    def vm_host(self, field: str, name: str) -> str | None:
        """The study host that is the VM `name`: a guest's libvirt domain is named after it
        (no Proxmox vmid here)."""
        return name if field == "domain" and name in self.guests else None
