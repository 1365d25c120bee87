"""The boot loaders' own readings of their files, written here independently of nettune
(tests compare nettune's edits against them, never against nettune's own reader):

- bls_boot_args: GRUB's blscfg / the Boot Loader Specification: the default entry's
  `options` lines (the key, then spaces or tabs) joined with one space, `$name` expanded
  from grubenv as the real `grub-editenv list` prints it;
- kernel_install_args: systemd's kernel-install (90-loaderentry), run as the shell
  pipeline it uses: `grep -Gv '^\\s*#' /etc/kernel/cmdline | tr -s "$IFS" ' '`;
- grub_mkconfig_args: the real grub-mkconfig (Debian's grub2-common) on a scratch root,
  in private mount and PID namespaces, and the arguments of the `linux` line it writes for the
  first (default) entry. None when grub-mkconfig, unshare or mount cannot run here.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

GRUB_MKCONFIG = "/usr/sbin/grub-mkconfig"
TEN_LINUX = "/etc/grub.d/10_linux"
KERNEL = "6.1.0-28-amd64"
# a thin fake of grub-probe, the one part that looks at this machine's disks: a root
# device, its UUID and file system (grub-mkconfig and 10_linux ask nothing else)
FAKE_PROBE = """#!/bin/sh
for a in "$@"; do case "$a" in --target=*) t="${a#--target=}";; esac; done
case "$t" in
  device) echo /dev/sda2;; fs_uuid) echo 3f1c0000-aaaa-bbbb-cccc-000000000001;; partuuid) echo 0000-02;;
  fs) echo ext2;; partmap) echo gpt;; drive) echo '(hd0)';; compatibility_hint) echo hd0,gpt2;; *) echo;;
esac
"""


def bls_entries(root: Path) -> list[Path]:
    """grubby-bls's order: rpm-sort of the names, newest first (the default without a saved_entry)."""
    def version(p: Path) -> list:
        return [(1, int(x)) if x.isdigit() else (0, x) for x in re.split(r"(\d+)", p.stem)]
    return sorted((root / "boot/loader/entries").glob("*.conf"), key=version, reverse=True)


def bls_entry_args(text: str, env: dict[str, str]) -> str:
    args = [re.split(r"[ \t]+", ln, 1)[1] if re.match(r"options[ \t]+\S", ln) else "" for ln in text.splitlines() if re.match(r"options([ \t]|$)", ln)]
    joined = " ".join(a.strip() for a in args)
    return " ".join(re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m[1], ""), joined).split())


def grubenv_list(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    listing = subprocess.run(["grub-editenv", str(path), "list"], capture_output=True, text=True, check=True).stdout
    return dict(ln.split("=", 1) for ln in listing.splitlines() if "=" in ln)


def bls_boot_args(root: Path) -> str:
    entries = bls_entries(root)
    return bls_entry_args(entries[0].read_text(), grubenv_list(root / "boot/grub2/grubenv")) if entries else ""


def kernel_install_args(path: Path) -> str:
    r = subprocess.run(["sh", "-c", 'grep -Gv \'^\\s*#\' "$1" | tr -s "$IFS" \' \'', "sh", str(path)], capture_output=True, text=True)
    return r.stdout.strip()


def grub_mkconfig_ready() -> str:
    """'' when the real grub-mkconfig can run here, else why not (a test skips with it)."""
    for tool in (GRUB_MKCONFIG, TEN_LINUX, shutil.which("unshare") or "/nonexistent"):
        if not Path(tool).exists():
            return f"{tool} is not installed (scripts/env.sh installs grub2-common)"
    r = subprocess.run(["unshare", "-m", "-p", "-f", "--mount-proc", "--propagation", "private", "true"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot make a private mount namespace here ({r.stderr.strip()})"
    return ""


def grub_mkconfig_args(files: dict[str, str]) -> str:
    """The real grub-mkconfig on these files (path -> text: /etc/default/grub and
    /etc/default/grub.d/*.cfg), never this machine's: /etc and /boot are scratch trees
    bind-mounted in a private mount namespace (an /etc with the files, 10_linux as
    installed and a RHEL-style /etc/system-release, which RHEL's GRUB_DISTRIBUTOR reads),
    one kernel in /boot. Returns the first `linux` line's arguments after `ro`."""
    with tempfile.TemporaryDirectory(prefix="nt-grub-") as tmp:
        t = Path(tmp)
        etc = t / "etc"
        (etc / "default" / "grub.d").mkdir(parents=True)
        for path, text in files.items():
            (etc / path.lstrip("/").removeprefix("etc/")).write_text(text)
        (etc / "grub.d").mkdir()
        shutil.copy(TEN_LINUX, etc / "grub.d" / "10_linux")
        (etc / "system-release").write_text("Red Hat Enterprise Linux release 9.2 (Plow)\n")
        (t / "boot").mkdir()
        for f in (f"vmlinuz-{KERNEL}", f"initrd.img-{KERNEL}"):
            (t / "boot" / f).write_text("")
        (t / "probe").write_text(FAKE_PROBE)
        (t / "probe").chmod(0o755)
        script = ('set -e; mount --bind "$1/probe" /usr/sbin/grub-probe; mount --bind "$1/etc" /etc; mount --bind "$1/boot" /boot; '
                  'PATH=/usr/sbin:/usr/bin:/sbin:/bin exec grub-mkconfig')
        # a PID namespace of its own too: its /proc/1 is grub-mkconfig's shell, which a drop-in
        # may stat (BenTGNU's 00-riced.cfg); this machine's init is not readable here
        r = subprocess.run(["unshare", "-m", "-p", "-f", "--mount-proc", "--propagation", "private", "sh", "-c", script, "sh", tmp],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"grub-mkconfig failed: {r.stderr.strip()[-300:]}")
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("linux"))
    return line.split(" ro ", 1)[1].strip() if " ro " in line else ""
