"""Virtualization: is this a VM, of which hypervisor, and are its virtio-net queues a match
for its vCPUs; on a Proxmox host, each VM NIC's queues= against that VM's vCPUs (study A).

Sources of truth: /proc/cpuinfo `hypervisor` flag, /sys/class/dmi/id/{sys_vendor,
product_name}, systemd-detect-virt; ethtool -l of a virtio_net NIC (its queue pairs);
qm(1) `qm list` / `qm config VMID` (netN ... queues=N, cores, sockets, vcpus).
"""
from __future__ import annotations

import re

from .base import Check, Finding, HostView, q


class Vm(Check):
    id, title, per_machine = "virt.vm", "Virtual machine, hypervisor, virtio-net queues vs vCPUs", True
    source = "/proc/cpuinfo flags (hypervisor), /sys/class/dmi/id/{sys_vendor,product_name}, systemd-detect-virt, ethtool -i/-l IF"

    def run(self, h: HostView) -> list[Finding]:
        flags = re.search(r"^flags\s*:(.*)$", h.read("/proc/cpuinfo") or "", re.M)
        vm = bool(flags and " hypervisor" in flags.group(1) + " ")
        vendor = " ".join(x for x in (h.read("/sys/class/dmi/id/sys_vendor"), h.read("/sys/class/dmi/id/product_name")) if x)
        detect = h.run(["systemd-detect-virt"]).stdout.strip() if vm else ""
        if not vm:
            return [Finding(self.id, h.name, "info", "not a virtual machine (no hypervisor CPU flag)", "/proc/cpuinfo flags")]
        what = detect or vendor or "unknown hypervisor"
        ev = f"/proc/cpuinfo: hypervisor flag; dmi: {vendor or '-'}; systemd-detect-virt: {detect or '-'}"
        out = [Finding(self.id, h.name, "info", f"a virtual machine ({what})", ev,
                       "CPU and NIC numbers depend on the host's load and settings too; measure the hypervisor's CPU as well (role = \"hypervisor\")")]
        dev = h.interface
        drv = h.run(["ethtool", "-i", dev]).stdout if dev else ""
        if "driver: virtio_net" in drv:
            chans = h.run(["ethtool", "-l", dev]).stdout
            m = re.search(r"Pre-set maximums:.*?Combined:\s*(\d+)", chans, re.S)
            vcpus = h.cpus()
            if m and int(m.group(1)) < vcpus:
                out.append(Finding(self.id, h.name, "warn", f"{dev}: virtio-net with {m.group(1)} queue(s) for {vcpus} vCPUs", f"ethtool -l {dev}: max combined {m.group(1)}; {vcpus} CPUs online",
                                   "one queue pair is served by one vCPU (and one vhost thread on the host): a ceiling below the link (study A)",
                                   f"on the hypervisor: give the NIC queues={vcpus} (Proxmox: qm set VMID --netN ...,queues={vcpus}; libvirt: <driver queues='{vcpus}'/>), restart the VM, then ethtool -L {q(dev)} combined {vcpus}",
                                   f"the same with the old queue count ({m.group(1)})"))
        return out


class ProxmoxQueues(Check):
    id, title, per_machine = "virt.proxmox", "Proxmox VM NICs: queues= vs the VM's vCPUs", True
    source = "qm list; qm config VMID (netN: ...,queues=N; cores, sockets, vcpus)"

    def run(self, h: HostView) -> list[Finding]:
        r = h.run(["qm", "list"])
        if r.returncode != 0:
            return []  # not a Proxmox host
        out = []
        for line in r.stdout.splitlines()[1:]:
            parts = line.split()
            if len(parts) < 3 or not parts[0].isdigit() or parts[2] != "running":
                continue
            vmid = parts[0]
            cfg = dict(ln.split(": ", 1) for ln in h.run(["qm", "config", vmid]).stdout.splitlines() if ": " in ln)
            vcpus = int(cfg.get("vcpus") or int(cfg.get("cores", "1")) * int(cfg.get("sockets", "1")))
            for key in sorted(k for k in cfg if re.fullmatch(r"net\d+", k)):
                opts = dict(o.split("=", 1) for o in cfg[key].split(",") if "=" in o)
                if "virtio" not in cfg[key].split(",")[0] and opts.get("model") != "virtio":
                    continue
                queues = int(opts.get("queues", "1") or 1)
                if queues < vcpus:
                    out.append(Finding(self.id, h.name, "warn", f"VM {vmid} {key}: queues={queues} for {vcpus} vCPUs", f"qm config {vmid}: {key}: {cfg[key]}; cores x sockets = {vcpus}",
                                       "the guest's receive work for this NIC is limited to that many vCPUs (study A)",
                                       f"qm set {vmid} --{key} <same line>,queues={vcpus}; restart the VM", f"qm set {vmid} --{key} '{cfg[key]}'",
                                       {"key": f"pve_queues:{vmid}/{key}", "value": vcpus}))
        return out


CHECKS = (Vm(), ProxmoxQueues())
