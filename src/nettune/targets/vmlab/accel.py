"""Which accelerator runs the VM lab's guests: KVM when it really boots a stock kernel,
else QEMU's TCG (an emulated CPU).

/dev/kvm existing is not enough: a paravirtual KVM (kvm_pvm, as on this project's build
machines) opens /dev/kvm and then fails or spins on a stock kernel. So a short probe boot
decides: the guest kernel with a one-line busybox initrd under `-accel kvm`; KVM is used
only if the probe prints its mark within PROBE_TIMEOUT (a real KVM does it in about a
second; TCG takes about five). The answer is kept in the cache per (this machine's
kernel, QEMU version), so the probe runs once. NETTUNE_VM_ACCEL=tcg forces TCG.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import NettuneError
from . import guest_image as gi
from . import guest_tree as tree

PROBE_TIMEOUT = 12.0
MARK = "NETTUNE-KVM-PROBE-OK"


@dataclass
class Accel:
    name: str  # "kvm" or "tcg"
    why: str  # one line: how it was decided

    @property
    def emulated(self) -> bool:
        return self.name == "tcg"

    @property
    def domain_type(self) -> str:
        """libvirt's <domain type=...>: 'kvm', or 'qemu' for TCG."""
        return "kvm" if self.name == "kvm" else "qemu"


def qemu_version() -> str:
    try:
        out = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise NettuneError("qemu-system-x86_64 is not installed: apt-get install qemu-system-x86 (or: nettune setup --vms)") from None
    return out.splitlines()[0].strip() if out else "?"


def _key() -> str:
    return f"{platform.release()} | {qemu_version()} | pvm={os.path.isdir('/sys/module/kvm_pvm')}"


def accelerator(echo: Callable[[str], None] = print) -> Accel:
    forced = os.environ.get("NETTUNE_VM_ACCEL", "").strip().lower()
    if forced == "tcg":
        return Accel("tcg", "NETTUNE_VM_ACCEL=tcg")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return Accel("tcg", "no usable /dev/kvm")
    cache = gi.CACHE / "accel.json"
    key = _key()
    try:
        seen = json.loads(cache.read_text())
        if seen.get("key") == key:
            return Accel(str(seen["name"]), str(seen["why"]))
    except (OSError, ValueError, KeyError):
        pass
    echo(f"probing whether KVM runs a stock guest kernel here (at most {PROBE_TIMEOUT:.0f}s, once)")
    acc = probe()
    gi.CACHE.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"key": key, "name": acc.name, "why": acc.why}))
    return acc


def probe() -> Accel:
    kdir, release, _ = gi.kernel(lambda s: None)
    pvm = " (this is a paravirtual KVM, kvm_pvm, which runs only guests built for it)" if os.path.isdir("/sys/module/kvm_pvm") else ""
    with tempfile.TemporaryDirectory(prefix="nettune-kvm-probe.") as tmp:
        d = Path(tmp) / "root"
        (d / "bin").mkdir(parents=True)
        shutil.copy2(tree.BUSYBOX, d / "bin/busybox")
        tree.write(d, "init", f"#!/bin/busybox sh\n/bin/busybox echo {MARK}\n/bin/busybox poweroff -f\n", 0o755)
        img = Path(tmp) / "probe.img"
        gi.cpio_gz(d, img)
        log = Path(tmp) / "console"
        argv = gi.qemu_argv("kvm", 128) + ["-kernel", str(kdir / "boot" / f"vmlinuz-{release}"), "-initrd", str(img),
                                           "-append", "console=ttyS0 quiet panic=-1", "-serial", f"file:{log}"]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT)
            said = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        except subprocess.TimeoutExpired:
            said = f"no boot within {PROBE_TIMEOUT:.0f}s"
        if MARK in (log.read_text(errors="replace") if log.exists() else ""):
            return Accel("kvm", "KVM booted the probe guest")
    return Accel("tcg", f"KVM could not boot a stock kernel here ({said}){pvm}: TCG, an emulated CPU")


def guest_image(echo: Callable[[str], None] = print) -> gi.GuestImage:
    """The guest image (guest_image.build), built on the accelerator this machine runs
    guests with (the probe boots the cached kernel first)."""
    return gi.build(accelerator(echo).name, echo)
