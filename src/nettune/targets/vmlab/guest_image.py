"""The VM lab's guest disk image, built once into a cache (`nettune setup --vms`).

Steps, none of which mounts anything (no loop device is needed):
  1. the kernel: Debian's linux-image-amd64 package (`apt-get download`, then
     `dpkg-deb -x` into the cache; never installed, so this machine's boot is untouched);
  2. the root tree (guest_tree.py) and nettune's busybox initrd (a cpio archive);
  3. the disk: an MBR with one partition at 1 MiB, the ext4 filesystem written into it
     from the tree (`mke2fs -d`, at that offset), GRUB's boot.img in the MBR and a
     core.img (grub-mkimage: biosdisk, part_msdos, ext2) in the sectors after it, as
     grub-install does on a BIOS disk;
  4. the first boot (QEMU, no libvirt): GRUB boots a bootstrap grub.cfg, the guest runs
     update-grub, which writes /boot/grub/grub.cfg from /etc/default/grub, and powers off.
Only then is the image moved into place: a cache entry exists only once it has booted.
Guests never write to it: each gets a qcow2 overlay (domains.py).
"""
from __future__ import annotations

import fcntl
import gzip
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import NettuneError, ToolMissing
from . import guest_files as gf
from . import guest_tree as tree

CACHE = Path(os.environ.get("NETTUNE_VM_CACHE", "/var/cache/nettune/vmlab"))
FORMAT = 1  # raise when the image's contents change: a new cache entry is built
KERNEL_META = "linux-image-amd64"  # Debian's package that depends on the current kernel
DISK_MB = 1024  # sparse; the tree takes about 150 MB
PART_START = 2048  # sectors: the partition starts at 1 MiB, core.img goes in the gap before
FIRSTBOOT_TIMEOUT = 600.0
Echo = Callable[[str], None]


@dataclass
class GuestImage:
    disk: Path  # raw, read-only from now on
    release: str  # the guest kernel's release, e.g. 6.1.0-56-amd64
    package: str  # the Debian package it came from, with its version
    accel: str  # what the first boot ran on


def _run(argv: list[str], what: str, **kw: object) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    except FileNotFoundError:
        raise ToolMissing(f"{argv[0]} is not installed: nettune setup --vms") from None
    if r.returncode != 0:
        raise NettuneError(f"{what} failed: {(r.stderr or r.stdout).strip()[-500:]}")
    return str(r.stdout)


# -- the kernel -------------------------------------------------------------------------

def kernel_package() -> str:
    """linux-image-<release>-amd64, the package linux-image-amd64 depends on (apt's lists)."""
    for attempt in (0, 1):
        r = subprocess.run(["apt-cache", "depends", "--important", KERNEL_META], capture_output=True, text=True)
        m = re.search(r"Depends:\s*(linux-image-\S+)", r.stdout)
        if m:
            return m.group(1)
        if attempt == 0:  # a fresh machine has no package lists yet
            subprocess.run(["apt-get", "update", "-q"], capture_output=True)
    raise NettuneError(f"apt does not know {KERNEL_META} (the guests' kernel comes from Debian's package); "
                       "the VM lab needs a Debian machine with its package lists: apt-get update")


def kernel(echo: Echo) -> tuple[Path, str, str]:
    """(unpacked package dir, release, package=version); downloaded and unpacked once."""
    base = CACHE / "kernel"
    have = sorted(base.glob("*/boot/vmlinuz-*")) if base.is_dir() else []
    if have:
        d = have[-1].parent.parent
        return d, have[-1].name.removeprefix("vmlinuz-"), (d / "PACKAGE").read_text().strip()
    pkg = kernel_package()
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        echo(f"downloading the guest kernel: apt-get download {pkg}")
        _run(["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", pkg], f"apt-get download {pkg}", cwd=tmp)
        debs = sorted(Path(tmp).glob("*.deb"))
        if not debs:
            raise NettuneError(f"apt-get download {pkg} gave no package file")
        version = _run(["dpkg-deb", "-f", str(debs[0]), "Version"], "dpkg-deb -f").strip()
        out = Path(tmp) / "x"
        _run(["dpkg-deb", "-x", str(debs[0]), str(out)], f"dpkg-deb -x {debs[0].name}")
        vmlinuz = sorted(out.glob("boot/vmlinuz-*"))
        if not vmlinuz:
            raise NettuneError(f"{debs[0].name} holds no /boot/vmlinuz-*")
        release = vmlinuz[0].name.removeprefix("vmlinuz-")
        if (out / "usr/lib/modules").is_dir() and not (out / "lib").exists():
            (out / "lib").symlink_to("usr/lib")
        tree.depmod(out, release)
        (out / "PACKAGE").write_text(f"{pkg}={version}\n")
        final = base / pkg
        out.rename(final)
    return final, release, f"{pkg}={version}"


# -- initrd and disk ----------------------------------------------------------------------

def cpio_gz(src: Path, dest: Path) -> None:
    """A gzip'd newc cpio archive of a directory (the format the kernel unpacks)."""
    names = sorted(str(p.relative_to(src)) for p in src.rglob("*"))
    r = subprocess.run([tree.BUSYBOX, "cpio", "-o", "-H", "newc"], input="\n".join(["."] + names).encode() + b"\n",
                       capture_output=True, cwd=src)
    if r.returncode != 0:
        raise NettuneError(f"cpio of {src} failed: {r.stderr.decode(errors='replace').strip()}")
    dest.write_bytes(gzip.compress(r.stdout, 6))


def initrd(work: Path, kernel_dir: Path, release: str, dest: Path) -> None:
    d = work / "initrd"
    for sub in ("bin", "dev", "proc", "sys", "newroot"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy2(tree.BUSYBOX, d / "bin/busybox")
    for applet in ("sh", "mount", "umount", "modprobe", "findfs", "switch_root", "sleep", "cat"):
        (d / "bin" / applet).symlink_to("busybox")
    (d / "sbin").symlink_to("bin")  # the kernel calls /sbin/modprobe for crypto-crc32c
    moddir = d / "lib/modules" / release
    src = kernel_dir / "lib/modules" / release
    for rel in tree.module_closure(src, [f"*/{m}.ko" for m in gf.INITRD_MODULES]):
        (moddir / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, moddir / rel)
    shutil.copy2(src / "modules.builtin", moddir / "modules.builtin")
    tree.depmod(d, release)
    tree.write(d, "init", gf.fill(gf.INITRD_INIT), 0o755)
    cpio_gz(d, dest)


def mbr(disk: Path, size: int) -> None:
    """One bootable Linux partition from PART_START to the end (LBA only, as GRUB uses it)."""
    sectors = size // 512 - PART_START
    entry = struct.pack("<B3sB3sII", 0x80, b"\xfe\xff\xff", 0x83, b"\xfe\xff\xff", PART_START, sectors)
    with disk.open("r+b") as f:
        f.seek(446)
        f.write(entry + b"\0" * 48 + b"\x55\xaa")


def grub_boot(disk: Path, work: Path) -> None:
    """GRUB for a BIOS disk without grub-install (which needs the disk as a device): boot.img
    in the MBR's first 440 bytes, core.img from sector 1 (boot.img's built-in kernel sector;
    core.img's first sector loads the rest from sector 2 on, grub-mkimage sets the count)."""
    core = work / "core.img"
    _run(["grub-mkimage", "-O", "i386-pc", "-o", str(core), "-p", "(hd0,msdos1)/boot/grub", "biosdisk", "part_msdos", "ext2"],
         "grub-mkimage")
    if core.stat().st_size > (PART_START - 1) * 512:
        raise NettuneError(f"core.img is {core.stat().st_size} bytes, more than the gap before the partition")
    with disk.open("r+b") as f:
        f.write((tree.GRUB_PC / "boot.img").read_bytes()[:440])
        f.seek(512)
        f.write(core.read_bytes())


def make_disk(work: Path, root: Path, fs_uuid: str) -> Path:
    disk = work / "disk.img"
    size = DISK_MB * 1024 * 1024
    with disk.open("wb") as f:
        f.truncate(size)
    mbr(disk, size)
    fs_kib = (size - PART_START * 512) // 1024
    _run(["mke2fs", "-q", "-F", "-t", "ext4", "-U", fs_uuid, "-L", "nettune-root", "-d", str(root), "-E", f"offset={PART_START * 512}",
          str(disk), f"{fs_kib}k"], "mke2fs -d (the guest's root filesystem)")
    grub_boot(disk, work)
    return disk


# -- the image --------------------------------------------------------------------------

def image_dir(release: str) -> Path:
    return CACHE / "images" / f"{release}-f{FORMAT}"


def cached() -> GuestImage | None:
    """The image in the cache, if one was built (and booted) for the cached kernel."""
    for manifest in sorted((CACHE / "images").glob(f"*-f{FORMAT}/manifest.json")) if (CACHE / "images").is_dir() else []:
        try:
            m = json.loads(manifest.read_text())
            return GuestImage(manifest.parent / "disk.img", str(m["release"]), str(m["package"]), str(m["accel"]))
        except (OSError, ValueError, KeyError):
            continue
    return None


def build(accel: str, echo: Echo = print) -> GuestImage:
    """The guest image: from the cache, or built and first booted now on `accel` (kvm or
    tcg: accel.py's probe), under a lock, so two runs never build it twice."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        have = cached()
        if have is not None:
            return have
        kdir, release, package = kernel(echo)
        final = image_dir(release)
        final.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=final.name + ".build-", dir=final.parent))
        try:
            echo(f"building the VM lab guest image (kernel {release}, GRUB on a BIOS disk) in {final}")
            root = work / "root"
            tree.skeleton(root)
            tree.add_binaries(root)
            tree.add_modules(root, kdir, release, tree.ROOT_MODULES + [f"*/{m}.ko" for m in gf.INITRD_MODULES])
            tree.add_config(root, release)
            for f in ("vmlinuz", "config", "System.map"):
                if (kdir / "boot" / f"{f}-{release}").exists():
                    shutil.copy2(kdir / "boot" / f"{f}-{release}", root / "boot" / f"{f}-{release}")
            initrd(work, kdir, release, root / "boot" / f"initrd.img-{release}")
            fs_uuid = str(uuid.uuid4())
            tree.write(root, "boot/grub/grub.cfg", gf.bootstrap_grub_cfg(fs_uuid, release))
            disk = make_disk(work, root, fs_uuid)
            shutil.rmtree(root)
            shutil.rmtree(work / "initrd")
            echo(f"first boot of the image ({accel}): update-grub writes /boot/grub/grub.cfg from /etc/default/grub")
            first_boot(disk, work / "firstboot.log", accel)
            (work / "manifest.json").write_text(json.dumps({"release": release, "package": package, "accel": accel,
                                                           "format": FORMAT, "built": time.time(), "fs_uuid": fs_uuid}))
            os.chmod(disk, 0o444)
            work.rename(final)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        return GuestImage(final / "disk.img", release, package, accel)


def qemu_argv(accel: str, memory_mib: int = 384) -> list[str]:
    return ["qemu-system-x86_64", "-accel", accel, "-machine", "pc", "-m", str(memory_mib), "-smp", "1", "-display", "none",
            "-monitor", "none", "-no-reboot", "-nic", "none"]


def first_boot(disk: Path, log: Path, accel: str) -> None:
    argv = qemu_argv(accel) + ["-drive", f"file={disk},if=virtio,format=raw", "-serial", f"file:{log}"]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=FIRSTBOOT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise NettuneError(f"the guest image's first boot did not finish within {FIRSTBOOT_TIMEOUT:.0f}s; its console: {log}") from None
    except FileNotFoundError:
        raise ToolMissing("qemu-system-x86_64 is not installed: apt-get install qemu-system-x86 (or: nettune setup --vms)") from None
    text = log.read_text(errors="replace") if log.exists() else ""
    if gf.FIRSTBOOT_MARK not in text:
        said = next((ln for ln in text.splitlines() if gf.FIRSTBOOT_FAILED in ln), "") or r.stderr.strip()[-300:] or text.strip()[-300:]
        raise NettuneError(f"the guest image's first boot failed (update-grub in the guest): {said}; console log {log}")
