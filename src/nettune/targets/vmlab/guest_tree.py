"""The VM lab guest's root filesystem, assembled in a directory from this machine's own
Debian binaries (each with the shared libraries `ldd` names), busybox for the rest of
userland, GRUB's update-grub and its scripts, and a subset of the guest kernel's modules.

The tree is merged-/usr like Debian 12 (/bin, /sbin, /lib, /lib64 are links into /usr), so
a binary keeps the path it has here and every library the path the dynamic loader asks for.
Nothing here runs in the guest; guest_image.py turns the tree into a disk image.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from fnmatch import fnmatch
from pathlib import Path

from ...errors import NettuneError, ToolMissing
from . import guest_files as gf

# commands the guest needs -> the Debian package that brings them onto this machine
GUEST_TOOLS = {
    "dash": "dash", "sshd": "openssh-server", "iperf3": "iperf3", "iperf": "iperf", "ethtool": "ethtool", "ip": "iproute2", "tc": "iproute2",
    "ps": "procps", "sysctl": "procps", "pgrep": "procps",
    "sort": "coreutils", "chmod": "coreutils", "chown": "coreutils", "stat": "coreutils", "nproc": "coreutils",
    "mktemp": "coreutils", "timeout": "coreutils",
    "grub-mkconfig": "grub-common", "grub-probe": "grub-common", "grub-mkrelpath": "grub-common",
    "grub-script-check": "grub-common", "grub-editenv": "grub-common", "update-grub": "grub2-common",
}
BUSYBOX = "/bin/busybox"  # busybox-static: no libraries, so the initrd needs nothing else
GRUB_PC = Path("/usr/lib/grub/i386-pc")  # grub-pc-bin: boot.img, the modules core.img loads
TREES = {"/usr/share/grub": "grub2-common", "/etc/grub.d": "grub-common", "/usr/lib/x86_64-linux-gnu/tc": "iproute2"}
SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MERGED = ("bin", "sbin", "lib", "lib64")

# modules of the root filesystem (with everything they depend on); modprobe finds the
# rest of a qdisc or congestion control through modules.alias when tc or a sysctl asks
ROOT_MODULES = ["kernel/net/sched/*.ko", "kernel/net/ipv4/tcp_*.ko", "kernel/drivers/net/virtio_net.ko", "kernel/drivers/net/ifb.ko",
                "kernel/drivers/net/veth.ko", "kernel/drivers/net/dummy.ko", "kernel/drivers/char/hw_random/virtio-rng.ko",
                "kernel/drivers/acpi/button.ko", "kernel/drivers/input/evdev.ko"]


def guest_path(path: str) -> str:
    """Where a file of this machine goes in the merged-/usr guest (relative, no leading /)."""
    rel = path.lstrip("/")
    return "usr/" + rel if rel.split("/", 1)[0] in MERGED else rel


def find_tool(tool: str) -> str:
    path = shutil.which(tool, path=SEARCH_PATH)
    if path is None:
        raise ToolMissing(f"{tool} is needed in the VM lab guests and is not installed here: apt-get install {GUEST_TOOLS[tool]} "
                          "(or: nettune setup --vms)")
    return path


def is_elf(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


LDD_LINE = re.compile(r"^\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)\s*$")


def libraries(binary: str) -> list[str]:
    """The shared libraries (and the dynamic loader) `ldd` says a binary loads."""
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if r.returncode != 0:
        if "not a dynamic executable" in r.stdout + r.stderr:
            return []
        raise NettuneError(f"ldd {binary} failed: {(r.stderr or r.stdout).strip()}")
    missing = [ln.split()[0] for ln in r.stdout.splitlines() if "=> not found" in ln]
    if missing:
        raise NettuneError(f"{binary} needs {', '.join(missing)}, which this machine lacks; reinstall its package")
    return [m.group(1) for ln in r.stdout.splitlines() if (m := LDD_LINE.match(ln))]


def _copy(src: str, root: Path, rel: str) -> None:
    dest = root / rel
    if dest.exists() or dest.is_symlink():
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(os.path.realpath(src), dest)  # the file's content, under the name asked for


def write(root: Path, rel: str, text: str, mode: int = 0o644) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    p.chmod(mode)


def skeleton(root: Path) -> None:
    for d in ("usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "etc", "proc", "sys", "dev", "run", "tmp", "root/.ssh", "var/log",
              "var/empty", "boot/grub", "etc/nettune", "etc/ssh", "etc/acpi/PWRF", "etc/default/grub.d", "mnt"):
        (root / d).mkdir(parents=True, exist_ok=True)
    for d in MERGED:
        (root / d).symlink_to(f"usr/{d}")
    (root / "tmp").chmod(0o1777)
    (root / "root").chmod(0o700)


def add_binaries(root: Path) -> None:
    """Every GUEST_TOOLS command with its libraries, then busybox for every other applet."""
    for tool in GUEST_TOOLS:
        path = find_tool(tool)
        _copy(path, root, guest_path(path))
        if is_elf(path):
            for lib in libraries(path):
                _copy(lib, root, guest_path(lib))
    if not os.access(BUSYBOX, os.X_OK):
        raise ToolMissing(f"{BUSYBOX} is missing: apt-get install busybox-static (or: nettune setup --vms)")
    _copy(BUSYBOX, root, "usr/bin/busybox")
    # /bin/sh is dash, as on Debian: a shell that is busybox would run busybox's own ps,
    # sort, chmod... instead of the real ones above (its applets come before PATH)
    (root / "usr/bin/sh").symlink_to("dash")
    listed = subprocess.run([BUSYBOX, "--list-full"], capture_output=True, text=True, check=True).stdout.split()
    for applet in listed:
        rel = guest_path(applet)
        dest = root / rel
        if not (dest.exists() or dest.is_symlink()):
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.symlink_to("/usr/bin/busybox")
    for tree, package in TREES.items():
        if not Path(tree).is_dir():
            raise ToolMissing(f"{tree} is missing: apt-get install {package} (or: nettune setup --vms)")
        shutil.copytree(tree, root / guest_path(tree), symlinks=True, dirs_exist_ok=True)
    if not (GRUB_PC / "boot.img").is_file():
        raise ToolMissing(f"{GRUB_PC}/boot.img is missing: apt-get install grub-pc-bin (or: nettune setup --vms)")
    shutil.copytree(GRUB_PC, root / "boot/grub/i386-pc", dirs_exist_ok=True)


def module_closure(moddir: Path, patterns: list[str]) -> list[str]:
    """Module files (relative to moddir) matching `patterns`, with everything modules.dep
    says they need."""
    deps: dict[str, list[str]] = {}
    for line in (moddir / "modules.dep").read_text().splitlines():
        name, _, rest = line.partition(":")
        deps[name.strip()] = rest.split()
    want = [m for m in deps if any(fnmatch(m, p) for p in patterns)]
    out: dict[str, None] = {}
    while want:
        m = want.pop()
        if m not in out:
            out[m] = None
            want += deps.get(m, [])
    return sorted(out)


def add_modules(root: Path, kernel: Path, release: str, patterns: list[str]) -> None:
    src = kernel / "lib/modules" / release
    dest = root / guest_path(f"/lib/modules/{release}")
    for rel in module_closure(src, patterns):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, dest / rel)
    for f in ("modules.builtin", "modules.order", "modules.builtin.modinfo"):
        if (src / f).exists():
            shutil.copy2(src / f, dest / f)
    depmod(root, release)


def depmod(base: Path, release: str) -> None:
    """modules.dep and modules.alias of a tree (busybox depmod: no kmod needed here); base
    holds lib/modules/RELEASE or usr/lib/modules/RELEASE."""
    r = subprocess.run([BUSYBOX, "depmod", "-b", str(base), release], capture_output=True, text=True)
    if r.returncode != 0:
        raise NettuneError(f"depmod of the guest kernel's modules failed: {(r.stderr or r.stdout).strip()}")


def add_config(root: Path, release: str) -> None:
    write(root, "etc/inittab", gf.INITTAB)
    write(root, "etc/init.d/rcS", gf.fill(gf.RC_S), 0o755)
    write(root, "etc/init.d/rcK", gf.RC_K, 0o755)
    write(root, "etc/acpi/PWRF/00000080", gf.ACPI_POWER, 0o755)
    write(root, "etc/passwd", gf.PASSWD)
    write(root, "etc/group", gf.GROUP)
    write(root, "etc/shadow", gf.SHADOW, 0o640)
    write(root, "etc/nsswitch.conf", gf.NSSWITCH)
    write(root, "etc/hosts", gf.HOSTS)
    write(root, "etc/os-release", gf.OS_RELEASE)
    write(root, "etc/hostname", "nettune-guest\n")
    write(root, "etc/nettune/modules", "\n".join(gf.BOOT_MODULES) + "\n")
    write(root, "etc/nettune/firstboot", "update-grub writes /boot/grub/grub.cfg at the first boot\n")
    write(root, "etc/default/grub", gf.default_grub(Path("/usr/share/grub/default/grub").read_text()))
    write(root, "etc/nettune/kernel", release + "\n")
