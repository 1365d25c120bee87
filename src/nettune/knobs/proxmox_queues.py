"""pve_queues:VMID[/netN] = N  (virtio-net queues of a Proxmox VE VM's NIC; study A)

Runs on the hypervisor: give the knob to it, e.g.
    [knobs]
    "pve_queues:101" = "{queues}"
    "pve_queues:102" = "{queues}"
    [knobs.hosts]
    "pve_queues:101" = ["pve"]
    "pve_queues:102" = ["pve"]

read:  `qm config VMID --current 1` (the value in effect, not a pending one): the netN
       line "virtio=MAC,bridge=vmbr0,...,queues=N"; no queues= means one queue pair.
apply: `qm set VMID --netN <the same line with queues=N>` (every other option kept),
       then `qm pending VMID`: if the change is still pending (hotplug without
       "network", or a running VM that could not hot-plug), `qm reboot VMID` (shuts the
       guest down and starts it again, applying pending changes) and wait until
       `qm status VMID` says running. The guest's own ssh connection then reconnects
       (the ssh target retries for reconnect_timeout seconds while it boots).
Range 1..64 (qemu-server's limit). Proxmox recommends queues = the VM's vCPUs; more
than that is refused by validate. The guest may still need `ethtool -L eth0 combined N`
(a channels knob on the guest) if its driver does not enable every queue by itself.
Not verified on a real Proxmox host: tested against outputs written from qm(1) and
qm.conf(5) formats.
"""
from __future__ import annotations

import re
import shlex
import time
from typing import Any

from ..targets.base import Host
from .base import Ctx, Kind, KnobError, Loc, catalog_row, run_ok, whole

_ARG = re.compile(r"^(?P<vmid>[1-9][0-9]{2,8})(?:/(?P<net>net[0-9]{1,2}))?$")
RESTART_TIMEOUT = 300.0


def parse_config(text: str) -> dict[str, str]:
    """`qm config` output -> {key: value}; stops at the first [snapshot] section."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("["):
            break
        if not line.strip() or line.lstrip().startswith("#") or ":" not in line:
            continue
        k, v = line.split(":", 1)
        out[k.strip()] = v.strip()
    return out


def net_options(value: str) -> list[tuple[str, str]]:
    """'virtio=MAC,bridge=vmbr0,queues=4' -> [('virtio', MAC), ('bridge', 'vmbr0'), ('queues', '4')]."""
    opts = []
    for part in value.split(","):
        k, _, v = part.partition("=")
        opts.append((k.strip(), v.strip()))
    return opts


def queues_of(value: str) -> int:
    for k, v in net_options(value):
        if k == "queues" and v.isdigit():
            return max(1, int(v))  # 0 and absent both mean a single queue pair
    return 1


def with_queues(value: str, n: int) -> str:
    """The same netN value with queues=n (n == 1: the option removed, Proxmox's default)."""
    opts = [(k, v) for k, v in net_options(value) if k != "queues"]
    if n > 1:
        opts.append(("queues", str(n)))
    return ",".join(f"{k}={v}" if v else k for k, v in opts)


def pending_keys(text: str) -> set[str]:
    """Keys with a pending change in `qm pending` output ('new KEY: ...' / 'del KEY: ...')."""
    return {m.group(2) for m in re.finditer(r"^(new|del) ([A-Za-z0-9_]+):", text, re.M)}


def vm_status(text: str) -> str:
    m = re.search(r"status:\s*(\S+)", text)
    return m.group(1) if m else "unknown"


class ProxmoxQueues(Kind):
    name = "pve_queues"
    takes_arg, example_arg = "required", "101"
    host_wide = True  # lives on the hypervisor machine, not in a network namespace

    def target(self, loc: Loc) -> tuple[str, str]:
        m = _ARG.match(loc.arg or "")
        if not m:
            raise KnobError(f"{loc.key}: write 'pve_queues:VMID' or 'pve_queues:VMID/netN' (VMID >= 100), e.g. 'pve_queues:101/net0'")
        return m.group("vmid"), m.group("net") or "net0"

    def parse(self, loc: Loc, raw: Any) -> int:
        self.target(loc)
        return whole(loc, raw, 1, 64)

    def _net(self, ex: Host, loc: Loc, current: bool) -> tuple[str, dict[str, str]]:
        vmid, net = self.target(loc)
        cfg = parse_config(run_ok(ex, ["qm", "config", vmid] + (["--current", "1"] if current else []), f"{loc.key}: VM {vmid}"))
        if net not in cfg:
            raise KnobError(f"{loc.key}: VM {vmid} has no {net} (qm config shows {', '.join(k for k in cfg if k.startswith('net')) or 'no NIC'})")
        return cfg[net], cfg

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        line, cfg = self._net(ex, loc, current=True)
        model = net_options(line)[0][0] if line else ""
        if model != "virtio":
            raise KnobError(f"{loc.key}: {self.target(loc)[1]} is a {model or 'unknown'} NIC; multiqueue needs virtio")
        vcpus = int(cfg.get("vcpus") or 0) or int(cfg.get("cores") or 1) * int(cfg.get("sockets") or 1)
        if int(value) > vcpus:
            raise KnobError(f"{loc.key}: {value} queues for a VM with {vcpus} vCPUs; Proxmox recommends at most one queue per vCPU")

    def read(self, ex: Host, loc: Loc) -> int:
        return queues_of(self._net(ex, loc, current=True)[0])

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        vmid, net = self.target(loc)
        line, _ = self._net(ex, loc, current=False)  # pending-aware: keep any other pending edit
        run_ok(ex, ["qm", "set", vmid, f"--{net}", with_queues(line, int(value))], f"{loc.key}: qm set")
        if net in pending_keys(run_ok(ex, ["qm", "pending", vmid], f"{loc.key}: qm pending")):
            self.restart(ex, loc, vmid)

    def restart(self, ex: Host, loc: Loc, vmid: str, timeout: float = RESTART_TIMEOUT, poll: float = 2.0) -> None:
        """Reboot a running VM so pending changes apply; wait until it runs again."""
        if vm_status(run_ok(ex, ["qm", "status", vmid], f"{loc.key}: qm status")) != "running":
            return  # stopped: the change applies when it is started
        run_ok(ex, ["qm", "reboot", vmid, "--timeout", str(int(timeout))], f"{loc.key}: qm reboot", timeout=timeout + 60)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if vm_status(run_ok(ex, ["qm", "status", vmid], f"{loc.key}: qm status")) == "running":
                return
            time.sleep(poll)
        raise KnobError(f"{loc.key}: VM {vmid} is not running {timeout:.0f}s after qm reboot; check it (qm status {vmid})")

    def same(self, a: Any, b: Any) -> bool:
        return int(a) == int(b)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        vmid, net = self.target(loc)
        return [f"qm set {vmid} --{net} {shlex.quote('<current ' + net + ' value>,queues=' + str(value))}  # keep the other options", f"qm reboot {vmid}"]

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "pve_queues", '"pve_queues:VMID[/netN]" = N', "hypervisor", "virtio-net queues of a Proxmox VM's NIC (qm set --netN ...,queues=N)",
            "1", "= vCPUs", "VM reboot (qm reboot) when not hot-plugged", "guest link drops; the VM restarts", "n/a",
        )]
