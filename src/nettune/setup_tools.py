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
    "nft": ("nftables", "nftables"),  # `lab up --ssh --bastion`: hosts behind the bastion refuse direct connections
    "ssh": ("openssh-client", "openssh-clients"),  # tests: `ssh -G` is the truth the ssh_config reader is compared with  # `nettune doctor`: path MTU (don't-fragment pings) and RTT between hosts
}
# Commands only the tests run on this machine -> (Debian package, Fedora package): the boot
# loaders' own readings of the files cmdline:KEY edits (tests/boot_readers.py: the real
# grub-mkconfig in private namespaces, grub-editenv for grubenv), and PostgreSQL's server
# programs. scripts/env.sh installs them too; `nettune setup` does not put a boot loader's
# tools or a database server on a user's machine. Fedora names the boot loader's grub2-*:
# there the tests that need them skip, saying why.
TEST_TOOLS = {
    "grub-mkconfig": ("grub2-common", "grub2-tools"),
    "grub-editenv": ("grub-common", "grub2-tools-minimal"),
    # the store tests' throwaway PostgreSQL cluster (tests/pg_cluster.py); a PostgreSQL store's
    # server is the user's own, anywhere, so `nettune setup` installs none
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
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")  # iperf3's debconf must not ask about a daemon
    echo("installing: " + " ".join(cmd[3:]))
    if subprocess.run(cmd, env=env).returncode != 0 and cmd[0] == "apt-get":
        subprocess.run(["apt-get", "update", "-q"], env=env, check=False)
        if subprocess.run(cmd, env=env).returncode != 0:
            raise NettuneError(f"`{' '.join(cmd)}` failed; see the output above")
    still = missing_tools()
    if still:
        raise NettuneError(f"still missing after install: {', '.join(still)}")
    return missing
