"""Virtualization: is this a VM, of which hypervisor, and are its virtio-net queues a match
for its vCPUs; on a Proxmox host, each VM NIC's queues= against that VM's vCPUs (study A).

Sources of truth: the x86 `hypervisor` CPU flag (/proc/cpuinfo; CPUID leaf 1 ECX bit 31,
set by KVM, Hyper-V, VMware and Xen HVM), DMI (/sys/class/dmi/id/{sys_vendor,product_name,
chassis_asset_tag,bios_vendor,bios_version}, or dmidecode's text: the strings systemd's
src/basic/virt.c and cloud-init's ds-identify match), the kernel's "Hypervisor detected:"
boot line, systemd-detect-virt; ethtool -l of a virtio_net NIC (its queue pairs); qm(1)
`qm list` / `qm config VMID` (netN ... queues=N, cores, sockets, vcpus).
"""
from __future__ import annotations

import re

from .base import Check, Finding, HostView, cannot, q
from .parsers import dmidecode

DMI = "/sys/class/dmi/id/"
FIELDS = ("sys_vendor", "product_name", "chassis_asset_tag", "bios_vendor", "bios_version", "product_version", "board_vendor")
AZURE_TAG = "7783-7084-3265-9085-8269-3286-77"  # the chassis asset tag of every Azure VM
# (field, pattern) -> hypervisor; the first match names it
VENDORS = (
    ("chassis_asset_tag", AZURE_TAG, "Microsoft Azure (Hyper-V)"),
    ("sys_vendor", r"^Microsoft Corporation$", "Hyper-V"),  # with product "Virtual Machine" (a Surface is "Microsoft Corporation" too)
    ("sys_vendor", r"^Amazon EC2$", "Amazon EC2 (Nitro/KVM)"),
    ("bios_version", r"amazon", "Amazon EC2 (Xen)"),
    ("sys_vendor", r"^Google$", "Google Compute Engine"),
    ("product_name", r"^Google Compute Engine$", "Google Compute Engine"),
    ("sys_vendor", r"^QEMU$", "QEMU/KVM"),
    ("sys_vendor", r"^OpenStack Foundation$|^OpenStack Nova", "OpenStack (KVM)"),
    ("product_name", r"^OpenStack Nova$|^OpenStack Compute$", "OpenStack (KVM)"),
    ("product_name", r"^KVM$|^RHEV Hypervisor$|^oVirt Node$", "KVM"),
    ("sys_vendor", r"^VMware, Inc\.$", "VMware"),
    ("product_name", r"^VMware", "VMware"),
    ("sys_vendor", r"^Xen$", "Xen"),
    ("sys_vendor", r"^innotek GmbH$", "VirtualBox"),
    ("product_name", r"^VirtualBox$", "VirtualBox"),
    ("sys_vendor", r"^Parallels", "Parallels"),
    ("sys_vendor", r"^BHYVE$", "bhyve"),
    ("sys_vendor", r"^Alibaba Cloud$", "Alibaba Cloud (KVM)"),
    ("sys_vendor", r"^DigitalOcean$", "DigitalOcean (KVM)"),
    ("sys_vendor", r"^Hetzner$", "Hetzner (KVM)"),
    ("bios_vendor", r"^SeaBIOS$", "KVM/QEMU (SeaBIOS)"),
)


def hypervisor_of(dmi: dict[str, str]) -> str | None:
    for field, pattern, name in VENDORS:
        v = dmi.get(field, "")
        if field == "sys_vendor" and name == "Hyper-V" and dmi.get("product_name") != "Virtual Machine":
            continue
        if v and re.search(pattern, v, re.I):
            return name
    return None


class Vm(Check):
    id, title, per_machine = "virt.vm", "Virtual machine, hypervisor, virtio-net queues vs vCPUs", True
    source = ("/proc/cpuinfo flags (hypervisor), /sys/class/dmi/id/{sys_vendor,product_name,chassis_asset_tag,bios_vendor,bios_version} or dmidecode, "
              "the kernel log's \"Hypervisor detected\", systemd-detect-virt; ethtool -i/-l IF")

    def run(self, h: HostView) -> list[Finding]:
        info = h.get("/proc/cpuinfo")
        flags = re.search(r"^flags\s*:(.*)$", info.text or "", re.M)
        flag = None if flags is None else " hypervisor " in flags.group(1) + " "  # None: no x86 flags line to tell
        dmi_files = {f: h.get(DMI + f) for f in FIELDS}
        dmi = {f: g.text for f, g in dmi_files.items() if g.text}
        dmi_src = f"{DMI}*"
        if not dmi:
            dd = h.cmd(["dmidecode"])
            if dd.known:
                dmi, dmi_src = dmidecode(dd.stdout), "dmidecode"
        # the kernel's own boot line names the hypervisor when DMI cannot (a container, a capture)
        log = h.first(["dmesg"], ["journalctl", "-k", "-b", "--no-pager", "-q"]) if not dmi else None
        detected = re.search(r"Hypervisor detected: (\S+)", log.stdout) if log and log.known else None
        det = h.cmd(["systemd-detect-virt", "--vm"])
        detect = det.stdout.strip() if det.known and det.rc in (0, 1) else ""
        name = hypervisor_of(dmi)
        ev = (f"/proc/cpuinfo: {'hypervisor flag' if flag else 'no hypervisor flag' if flag is False else 'no x86 flags line' if info.known else 'not read'}; "
              f"{dmi_src}: {', '.join(f'{k}={v}' for k, v in dmi.items() if k in ('sys_vendor', 'product_name', 'chassis_asset_tag')) or 'not read'}"
              + (f"; kernel log: Hypervisor detected: {detected.group(1)}" if detected else "") + (f"; systemd-detect-virt: {detect}" if detect else ""))
        if flag or name or detected or detect not in ("", "none"):
            what = name or (detect if detect not in ("", "none") else None) or (detected.group(1) if detected else None) or "hypervisor not named"
            out = [Finding(self.id, h.name, "info", f"a virtual machine ({what})", ev,
                           "CPU and NIC numbers depend on the host's load and settings too; measure the hypervisor's CPU as well (role = \"hypervisor\")")]
            return out + self._virtio(h)
        if flag is False and (dmi or detect == "none"):
            return [Finding(self.id, h.name, "info", "not a virtual machine (no hypervisor CPU flag, " + ("systemd-detect-virt: none" if detect == "none" else f"DMI: {dmi.get('sys_vendor', '?')} {dmi.get('product_name', '')}".rstrip()) + ")", ev)]
        if flag is False:
            return [Finding(self.id, h.name, "info", "probably not a virtual machine (no hypervisor CPU flag; DMI not read)", ev)]
        gone = [g for g in (info, *dmi_files.values()) if not g.known][:3]
        return [cannot(self.id, h.name, "whether this is a virtual machine", *gone,
                       how="send /proc/cpuinfo and /sys/class/dmi/id/* (or `dmidecode`), or `nettune doctor --capture`")]

    def _virtio(self, h: HostView) -> list[Finding]:
        dev = h.interface
        drv = h.cmd(["ethtool", "-i", dev]) if dev else None
        if drv is None or "driver: virtio_net" not in drv.stdout:
            return []
        chans = h.cmd(["ethtool", "-l", dev])
        m = re.search(r"Pre-set maximums:.*?Combined:\s*(\d+)", chans.stdout, re.S)
        vcpus = h.cpus()
        if not chans.known or vcpus is None:
            return [cannot(self.id, h.name, f"whether {dev}'s virtio queues match the vCPUs", *([chans] if not chans.known else list(h.cpus_missing())))]
        if m and int(m.group(1)) < vcpus:
            return [Finding(self.id, h.name, "warn", f"{dev}: virtio-net with {m.group(1)} queue(s) for {vcpus} vCPUs", f"ethtool -l {dev}: max combined {m.group(1)}; {vcpus} CPUs online",
                            "one queue pair is served by one vCPU (and one vhost thread on the host): a ceiling below the link (study A)",
                            f"on the hypervisor: give the NIC queues={vcpus} (Proxmox: qm set VMID --netN ...,queues={vcpus}; libvirt: <driver queues='{vcpus}'/>), restart the VM, then ethtool -L {q(dev)} combined {vcpus}",
                            f"the same with the old queue count ({m.group(1)})")]
        return []


class ProxmoxQueues(Check):
    id, title, per_machine = "virt.proxmox", "Proxmox VM NICs: queues= vs the VM's vCPUs", True
    source = "qm list; qm config VMID (netN: ...,queues=N; cores, sockets, vcpus)"

    def run(self, h: HostView) -> list[Finding]:
        w = h.which("qm")
        if w.absent:
            return []  # not a Proxmox host
        r = h.cmd(["qm", "list"])
        if not r.known:
            return [cannot(self.id, h.name, "whether this is a Proxmox host with VMs (qm list)", w, r)]
        if r.rc != 0:
            return []
        out = []
        for line in r.stdout.splitlines()[1:]:
            parts = line.split()
            if len(parts) < 3 or not parts[0].isdigit() or parts[2] != "running":
                continue
            vmid = parts[0]
            cfg = dict(ln.split(": ", 1) for ln in h.cmd(["qm", "config", vmid]).stdout.splitlines() if ": " in ln)
            vcpus = int(cfg.get("vcpus") or int(cfg.get("cores", "1")) * int(cfg.get("sockets", "1")))
            for key in sorted(k for k in cfg if re.fullmatch(r"net\d+", k)):
                opts = dict(o.split("=", 1) for o in cfg[key].split(",") if "=" in o)
                if "virtio" not in cfg[key].split(",")[0] and opts.get("model") != "virtio":
                    continue
                queues = int(opts.get("queues", "1") or 1)
                if queues < vcpus:
                    out.append(Finding(self.id, h.name, "warn", f"VM {vmid} {key}: queues={queues} for {vcpus} vCPUs", f"qm config {vmid}: {key}: {cfg[key]}; cores x sockets = {vcpus}",
                                       "the guest's receive work for this NIC is limited to that many vCPUs (study A)",
                                       f"qm set {vmid} --{key} <same line>,queues={vcpus}; restart the VM", f"qm set {vmid} --{key} {q(cfg[key])}",
                                       {"key": f"pve_queues:{vmid}/{key}", "value": vcpus}))
        return out


CHECKS = (Vm(), ProxmoxQueues())
