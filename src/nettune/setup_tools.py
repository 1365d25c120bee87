"""`nettune setup`: install the system tools nettune drives, with apt-get or dnf."""
from __future__ import annotations

import os
import shutil
import subprocess

from .errors import NettuneError

# Every command nettune runs on this machine -> (Debian package, Fedora package).
# scripts/env.sh installs the same packages before nettune itself is installed
# (tests/test_setup_tools.py keeps the two in step).
TOOLS = {
    "iperf3": ("iperf3", "iperf3"),
    "iperf": ("iperf", "iperf"),
    "ethtool": ("ethtool", "ethtool"),
    "sshd": ("openssh-server", "openssh-server"),  # `lab up --ssh`: an sshd per lab host
    "ssh-keygen": ("openssh-client", "openssh-clients"),
    "ip": ("iproute2", "iproute"),
    "tc": ("iproute2", "iproute-tc"),
    "sysctl": ("procps", "procps-ng"),
    "ps": ("procps", "procps-ng"),
    "pgrep": ("procps", "procps-ng"),
    "sudo": ("sudo", "sudo"),  # hosts with sudo = true (the SSH rehearsal on the lab uses it)
    "ping": ("iputils-ping", "iputils"),
    "time": ("time", "time"),  # GNU time: a timed command's peak RSS from about 1 MiB up (engines/rss_helper.py)
    "nft": ("nftables", "nftables"),  # `lab up --ssh --bastion`: hosts behind the bastion refuse direct connections
    "ssh": ("openssh-client", "openssh-clients"),  # tests: `ssh -G` is the truth the ssh_config reader is compared with  # `nettune doctor`: path MTU (don't-fragment pings) and RTT between hosts
}
# Commands only the tests run on this machine -> (Debian package, Fedora package): the boot
# loaders' own readings of the files cmdline:KEY edits (tests/boot_readers.py: the real
# grub-mkconfig in private namespaces, grub-editenv for grubenv). scripts/env.sh installs them
# too; `nettune setup` does not put a boot loader's tools on a user's machine. Fedora names the
# boot loader's grub2-*: there the tests that need them skip, saying why.
TEST_TOOLS = {
    "grub-mkconfig": ("grub2-common", "grub2-tools"),
    "grub-editenv": ("grub-common", "grub2-tools-minimal"),
}
# PostgreSQL's server programs, for the store tests' throwaway cluster (tests/pg_cluster.py).
# scripts/test.sh installs them in the shard that runs those tests beside the rest of the suite
# (so the rest does not wait for the install); a PostgreSQL store's server is the user's own,
# anywhere, so `nettune setup` installs none.
PG_TEST_TOOLS = {
    "initdb": ("postgresql", "postgresql-server"),
    "pg_ctl": ("postgresql", "postgresql-server"),
}


def missing_tools() -> list[str]:
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return [t for t in TOOLS if shutil.which(t, path=path) is None]


def install_command(missing: list[str]) -> list[str] | None:
    if shutil.which("apt-get"):
        return ["apt-get", "install", "-y", "-q", *sorted({TOOLS[t][0] for t in missing})]
    if shutil.which("dnf"):
        return ["dnf", "install", "-y", "-q", *sorted({TOOLS[t][1] for t in missing})]
    return None


def install_hint(tool: str) -> str:
    deb, rpm = TOOLS.get(tool, (tool, tool))
    return f"install it with `nettune setup` (or: apt-get install {deb} / dnf install {rpm})"


def setup(echo=print) -> list[str]:
    """Install what is missing; returns the tools installed."""
    missing = missing_tools()
    if not missing:
        echo("all tools present: " + ", ".join(TOOLS))
        return []
    cmd = install_command(missing)
    if cmd is None:
        raise NettuneError(f"missing {', '.join(missing)} and neither apt-get nor dnf is available; install them with your package manager")
    if os.geteuid() != 0:
        raise NettuneError(f"missing {', '.join(missing)}; installing needs root: sudo nettune setup")
    echo("installing: " + " ".join(cmd[3:]))
    _install(cmd)
    still = missing_tools()
    if still:
        raise NettuneError(f"still missing after install: {', '.join(still)}")
    return missing


def _install(cmd: list[str]) -> None:
    """Run an install command; apt-get's package lists may be stale (a fresh machine has
    none): update them once and try again."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")  # iperf3's debconf must not ask about a daemon
    if subprocess.run(cmd, env=env).returncode == 0:
        return
    if cmd[0] == "apt-get":
        subprocess.run(["apt-get", "update", "-q"], env=env, check=False)
        if subprocess.run(cmd, env=env).returncode == 0:
            return
    raise NettuneError(f"`{' '.join(cmd)}` failed; see the output above")


# `nettune setup --vms`: what the VM lab ([target] kind = "vmlab") runs on this machine, with
# its Debian package (the guests' kernel is Debian's too: apt only). scripts/test.sh installs
# the same list (tests/test_setup_tools.py keeps them in step).
VM_TOOLS = {
    "qemu-system-x86_64": "qemu-system-x86",
    "qemu-img": "qemu-utils",
    "libvirtd": "libvirt-daemon",
    "virsh": "libvirt-clients",
    "busybox": "busybox-static",
    "grub-mkimage": "grub-common",
    "update-grub": "grub2-common",
    "mke2fs": "e2fsprogs",
    "unshare": "util-linux",
    "dpkg-deb": "dpkg",
    "dash": "dash",
}
# files no command names: libvirt's QEMU driver, GRUB's BIOS boot images and modules
VM_FILES = {
    "/usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_qemu.so": "libvirt-daemon-driver-qemu",
    "/usr/lib/grub/i386-pc/boot.img": "grub-pc-bin",
}
QEMU_USER = "libvirt-qemu"  # libvirt's QEMU driver refuses to start without this user and group


def missing_vm_packages() -> list[str]:
    """Debian packages of the VM lab not installed here (a static busybox is required: the
    guests' initrd has no libraries)."""
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    out = {pkg for tool, pkg in VM_TOOLS.items() if shutil.which(tool, path=path) is None}
    out |= {pkg for f, pkg in VM_FILES.items() if not os.path.exists(f)}
    busybox = shutil.which("busybox", path=path)
    if busybox and subprocess.run(["ldd", busybox], capture_output=True, text=True).returncode == 0:
        out.add("busybox-static")  # a dynamic busybox (Debian's `busybox` package) cannot run in the initrd
    return sorted(out)


def _qemu_user(echo) -> None:
    import grp
    import pwd

    try:
        pwd.getpwnam(QEMU_USER)
        grp.getgrnam(QEMU_USER)
        return
    except KeyError:
        pass
    echo(f"creating the {QEMU_USER} system user and group (libvirt's QEMU driver requires them; the VM lab runs QEMU as root)")
    r = subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/var/lib/libvirt", "--shell", "/usr/sbin/nologin",
                        "--user-group", QEMU_USER], capture_output=True, text=True)
    if r.returncode != 0:
        raise NettuneError(f"useradd {QEMU_USER} failed: {r.stderr.strip()}")


def setup_vms(echo=print) -> list[str]:
    """Install the VM lab's packages (apt-get only), create libvirt's user, and build the
    guest image into the cache (once). Returns the packages installed."""
    if os.geteuid() != 0:
        raise NettuneError("the VM lab needs root (libvirtd, QEMU, the lab bridge): sudo nettune setup --vms")
    missing = missing_vm_packages()
    if missing:
        if not shutil.which("apt-get"):
            raise NettuneError(f"the VM lab uses Debian's packages (and Debian's kernel for its guests); install {', '.join(missing)} "
                               "with apt-get on a Debian machine")
        echo("installing: " + " ".join(missing))
        _install(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing])
        still = missing_vm_packages()
        if still:
            raise NettuneError(f"still missing after install: {', '.join(still)}")
    _qemu_user(echo)
    from .targets.vmlab.accel import guest_image  # noqa: PLC0415 - the layer below the CLI; only here

    img = guest_image(echo)
    echo(f"guest image: {img.disk} ({img.package}, first boot on {img.accel})")
    return missing
