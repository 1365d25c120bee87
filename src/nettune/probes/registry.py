"""Which probes run during a test, and which machine-CPU member serves each OS.

Explicit, like the engine and knob registries: a host declares its `os`, and the
member for that OS reads its counters (an unknown OS gets the Linux one, whose reads
then fail and leave the column empty).
"""
from __future__ import annotations

from ..targets.base import Host, Proc
from .base import Probe
from .cgroup_cpu import CgroupCpu
from .freebsd_cpu import CpTimeCpu
from .linux_cpu import ProcStatCpu
from .machine_cpu import SERVER_MACHINE, MachineCpu
from .power_command import PowerCommandProbe
from .powercap import PowercapProbe
from .process_cpu import ProcessCpu
from .self_cpu import SelfCpu

MACHINE_CPU: dict[str, type[MachineCpu]] = {"linux": ProcStatCpu, "freebsd": CpTimeCpu}


def machine_cpu(host: Host, key: str | None = None) -> MachineCpu:
    if host.cpu_counters == "cgroup":  # a container (a Kubernetes pod): its cgroup, throttling included
        return CgroupCpu(host, key)
    return MACHINE_CPU.get(host.os, ProcStatCpu)(host, key)


def window_probes(machine: Host, extra_machines: dict[str, Host]) -> list[Probe]:
    """Started before the client: the test machine's CPU and energy, nettune's own CPU, and
    each extra machine's (e.g. "hypervisor:pve") as cpu_extra[key] and energy[key]."""
    return [machine_cpu(machine), PowercapProbe(machine), SelfCpu(),
            *(machine_cpu(h, k) for k, h in extra_machines.items()), *(PowercapProbe(h, k) for k, h in extra_machines.items())]


def server_machine(server: Host, machine: Host) -> list[Probe]:
    """The server's machine CPU and energy too when it is another machine (cpu_server_host,
    energy["server"]): two hosts of this machine (lab, loopback) are one machine, measured
    once as the test's."""
    if server is machine or (server.on_this_machine and machine.on_this_machine):
        return []
    return [machine_cpu(server, SERVER_MACHINE), PowercapProbe(server, "server")]


def meter_probes(power_command: list[str] | None) -> list[Probe]:
    """[probes] power_command: the external meter, sampled every second of the window."""
    return [PowerCommandProbe(list(power_command))] if power_command else []


def process_probes(client: Host, cli: Proc, server: Host, srv: Proc) -> list[Probe]:
    """Started once the client runs: each side's process CPU. The server is sampled at
    the end of the window; the client has exited by then (its exact CPU tells)."""
    return [ProcessCpu(client, cli, "client", sample_end=False), ProcessCpu(server, srv, "server")]
