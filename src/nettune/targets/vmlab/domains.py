"""One VM lab guest as libvirt sees it: its disk (a qcow2 overlay over the cached image),
its seed (a tar archive read as a raw disk), and its domain XML.

The XML is what a libvirt user writes for a small Linux guest: BIOS boot from the disk
(SeaBIOS, then GRUB), ACPI (so `virsh shutdown` presses the power button), a virtio NIC
on the lab bridge whose queue count is <driver queues='N'/> (absent for one queue, as
libvirt itself writes it), the serial console into a file of the lab, a virtio RNG (sshd
needs entropy early). With TCG the domain type is 'qemu'; libvirt then drops vhost-net
silently, so nothing here asks for it.
"""
from __future__ import annotations

import io
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from ...errors import NettuneError, ToolMissing


@dataclass
class GuestSpec:
    name: str  # the host's name in the study, and its domain's name
    address: str
    mac: str
    tap: str  # the tap device libvirt creates on the bridge (named like the lab's links)
    vcpus: int
    memory_mib: int
    queues: int


def domain_xml(g: GuestSpec, domain_type: str, disk: Path, seed: Path, bridge: str, console: Path) -> str:
    driver = f"\n      <driver queues='{g.queues}'/>" if g.queues > 1 else ""
    return f"""<domain type='{domain_type}'>
  <name>{escape(g.name)}</name>
  <description>nettune VM lab guest; nettune lab down removes it</description>
  <memory unit='MiB'>{g.memory_mib}</memory>
  <vcpu placement='static'>{g.vcpus}</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <boot dev='hd'/>
  </os>
  <features>
    <acpi/>
  </features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2'/>
      <source file={quoteattr(str(disk))}/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file={quoteattr(str(seed))}/>
      <target dev='vdb' bus='virtio'/>
      <readonly/>
    </disk>
    <interface type='bridge'>
      <mac address='{g.mac}'/>
      <source bridge='{bridge}'/>
      <target dev='{g.tap}'/>
      <model type='virtio'/>{driver}
    </interface>
    <serial type='file'>
      <source path={quoteattr(str(console))} append='on'/>
      <target port='0'/>
    </serial>
    <console type='file'>
      <source path={quoteattr(str(console))} append='on'/>
      <target type='serial' port='0'/>
    </console>
    <rng model='virtio'>
      <backend model='random'>/dev/urandom</backend>
    </rng>
  </devices>
</domain>
"""


def overlay(base: Path, path: Path) -> None:
    """A qcow2 file whose unwritten blocks read from the cached image (never written)."""
    try:
        r = subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(base), str(path)], capture_output=True, text=True)
    except FileNotFoundError:
        raise ToolMissing("qemu-img is not installed: apt-get install qemu-utils (or: nettune setup --vms)") from None
    if r.returncode != 0:
        raise NettuneError(f"qemu-img create {path}: {r.stderr.strip()}")


def seed(path: Path, files: dict[str, tuple[str, int]]) -> None:
    """A tar archive of {path in the guest: (text, mode)}, owned by root, as a raw disk
    (tar pads to 10 KiB records: a whole number of 512-byte sectors)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        dirs = sorted({str(Path(p).parent) for p in files} - {"."})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755 if not d.startswith("root") else 0o700
            tar.addfile(info)
        for p, (text, mode) in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(p)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
