"""Whom an SSH connection trusts: host keys, the private key file, sudo on the host.

Host keys (decided before connecting, from files only):
  - the host's pinned file is its `known_hosts` (inventory or study), else ~/.ssh/known_hosts;
    a `known_hosts` that is named but does not exist is an error (never "not in ~/.ssh/...");
  - keys pinned there always win: only that file is checked, and a key for the same host
    in nettune's trust-on-first-use file that is not pinned too is a conflict, refused
    naming both fingerprints and both files (whatever trust_on_first_use says);
  - nothing pinned: the trust-on-first-use file is checked; nothing there either: refused,
    or (trust_on_first_use = true) accepted once and recorded;
  - `nettune restore` passes the key seen when the change was made: only that key is
    accepted, so a restore never writes into a different machine at the same address.
Every message names the file actually used and the fix for that file.

The private key file is refused, like OpenSSH does, when group or others may read it,
and loaded here so a missing or malformed file is reported with the host and the path.

sudo = true is checked once per connection with `sudo -n true` (sudo_problem), so a
missing sudo or one that wants a password is reported as that, not as a missing tool.
"""
from __future__ import annotations

import asyncio
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from .ssh_error import SshError


def tofu_file() -> Path:
    """Where host keys trusted on first use are recorded."""
    if os.environ.get("NETTUNE_KNOWN_HOSTS"):
        return Path(os.environ["NETTUNE_KNOWN_HOSTS"])
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "nettune" / "known_hosts"


def openssh_line(key: Any) -> str:
    """'ssh-ed25519 AAAA...' of a public key, without a comment."""
    return " ".join(key.export_public_key("openssh").decode().split()[:2])


def record_first_use(address: str, port: int, key: Any) -> str:
    """Append a host key to nettune's trust-on-first-use file; returns the note to show."""
    f = tofu_file()
    f.parent.mkdir(parents=True, exist_ok=True)
    with open(f, "a") as fh:
        fh.write(f"{pattern(address, port)} {openssh_line(key)}\n")
    os.chmod(f, 0o600)
    return f"trusted on first use: {key.get_fingerprint()} recorded in {f}"


def pattern(address: str, port: int) -> str:
    """How known_hosts writes a host: bare on port 22, else [address]:port."""
    return address if port == 22 else f"[{address}]:{port}"


def fingerprints(keys: Any) -> str:
    return ", ".join(k.get_fingerprint() for k in keys)


def _pubkey(key: Any) -> bytes:
    return bytes(key.public_data)


@dataclass
class Trust:
    """What to pass asyncssh as known_hosts; record=True: accept any key, then record it."""

    known_hosts: Any
    record: bool
    pinned_file: str  # the file a missing key should be added to (named in every fix)
    checked: str  # the file(s) a mismatching key was compared with, for messages
    expected: Any = None  # nettune restore: the one key seen when the change was made


def _keys_in(paths: str | list[str], address: str, port: int) -> tuple[Any, list[Any]]:
    kh = asyncssh.read_known_hosts(paths)
    keys, cas = kh.match(address, address, port if port != 22 else None)[:2]
    return kh, list(keys) + list(cas)


def host_trust(where: str, address: str, port: int, known_hosts: str | None, tofu_file: str, tofu: bool, expected: str | None = None,
               more: list[str] | tuple[str, ...] = ()) -> Trust:
    """Decide how the host key of address:port is checked (raises SshError, one line).
    `more`: further files read as pinned keys too (ssh_config's other UserKnownHostsFile
    and GlobalKnownHostsFile entries; missing ones skipped, as ssh skips them)."""

    if expected:
        key = asyncssh.import_public_key(expected)
        kh = asyncssh.import_known_hosts(f"{pattern(address, port)} {expected}\n")
        return Trust(kh, False, "", "the nettune journal", key)
    named = bool(known_hosts)
    extra = [os.path.abspath(os.path.expanduser(f)) for f in more if os.path.isfile(os.path.expanduser(f))]
    # where a missing key is to be added: the named file, else the first one ssh reads
    pinned_file = os.path.abspath(os.path.expanduser(known_hosts or (more[0] if more else "~/.ssh/known_hosts")))
    scan = f"ssh-keyscan -p {port} {address} >> {pinned_file}"
    if named and not os.path.isfile(pinned_file):
        raise SshError(f"{where}: its known_hosts file {pinned_file} does not exist; create it with the host's key ({scan}, after checking the key) or correct the path")
    files = ([pinned_file] if os.path.isfile(pinned_file) else []) + [f for f in extra if f != pinned_file]
    try:
        pinned_kh, pinned = _keys_in(files, address, port) if files else (None, [])
        tofu_kh, first_use = _keys_in(tofu_file, address, port) if os.path.isfile(tofu_file) else (None, [])
    except (OSError, ValueError) as e:
        raise SshError(f"{where}: cannot read a known_hosts file: {e}") from None
    checked = " and ".join(files) if files else pinned_file
    if pinned:
        conflict = [k for k in first_use if _pubkey(k) not in {_pubkey(p) for p in pinned}]
        if conflict:
            raise SshError(
                f"{where}: host key conflict: {checked} pins {fingerprints(pinned)} but nettune's trust-on-first-use file "
                f"{tofu_file} holds {fingerprints(conflict)}; the pinned key wins, so check which is right and remove the other "
                f"(ssh-keygen -R '{pattern(address, port)}' -f {tofu_file})")
        return Trust(pinned_kh, False, pinned_file, checked)
    if first_use:
        return Trust(tofu_kh, False, pinned_file, tofu_file)
    if tofu:
        return Trust(None, True, pinned_file, "")
    missing = "" if os.path.isfile(pinned_file) else ", which does not exist yet"
    others = "".join(f" or {f}" for f in files if f != pinned_file) + (f" or {tofu_file}" if os.path.isfile(tofu_file) else "")
    raise SshError(f"{where}: host key unknown (not in {pinned_file}{missing}{others}); add it after checking it ({scan}) or set trust_on_first_use = true")


def mismatch_message(where: str, trust: Trust, presented: Any, host: str) -> str:
    now = f" it presents {presented.get_fingerprint()}" if presented is not None else ""
    if trust.expected is not None:
        return (f"{where}: host key is not the {trust.expected.get_fingerprint()} seen when nettune changed its settings;{now}; "
                "not restoring into what may be another machine: check the host, then put the values back by hand (`nettune restore --forget HOST` prints the commands)")
    return (f"{where}: host key does NOT match the one in {trust.checked};{now}; if the host was reinstalled, "
            f"remove its old key (ssh-keygen -R '{host}' -f {trust.checked}) and check the new one")


async def presented_key(address: str, port: int, timeout: float, tunnel: Any = None) -> Any:
    """The host key the server offers (for a mismatch message); None if it cannot be had."""
    try:
        return await asyncio.wait_for(asyncssh.get_server_host_key(address, port, **({'tunnel': tunnel} if tunnel is not None else {})), timeout)
    except (OSError, asyncssh.Error, asyncio.TimeoutError):
        return None


def client_keys(where: str, path: str) -> list[Any]:
    """The key pair(s) of a private key file, refusing what OpenSSH refuses."""

    full = os.path.abspath(os.path.expanduser(path))
    try:
        st = os.stat(full)
    except FileNotFoundError:
        raise SshError(f"{where}: key file {full} does not exist; fix `key` or create the key (ssh-keygen -t ed25519 -f {full})") from None
    except OSError as e:
        raise SshError(f"{where}: key file {full}: {e.strerror}") from None
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise SshError(f"{where}: key file {full} is accessible by group or others (mode {mode:04o}); OpenSSH refuses such a key, and so does nettune: chmod 600 {full}")
    try:
        return list(asyncssh.load_keypairs([full]))
    except (ValueError, OSError) as e:  # KeyImportError is a ValueError
        raise SshError(f"{where}: key file {full} cannot be used: {e}") from None


def other_keys(path: str) -> list[Any]:
    """A further identity file from ssh_config: used when present and usable, else skipped
    (ssh skips a missing one, and one readable by others with a warning)."""
    full = os.path.abspath(os.path.expanduser(path))
    try:
        if stat.S_IMODE(os.stat(full).st_mode) & 0o077:
            return []
        return list(asyncssh.load_keypairs([full]))
    except (ValueError, OSError):
        return []


# What `sudo -n` prints when it would have to ask (sudo 1.8/1.9; see docs/targets.md)
_ASKS = ("password is required", "a terminal is required", "askpass")


def sudo_problem(where: str, user: str, rc: int, stderr: str) -> str | None:
    """The one-line error for a failed `sudo -n true` (None when it worked)."""
    if rc == 0:
        return None
    said = " ".join(stderr.split())[:200] or f"exit code {rc}"
    root = "or set sudo = false (root needs no sudo)" if user == "root" else "or log in as root with sudo = false"
    if rc == 127 or "not found" in said:
        return f"{where}: sudo = true but sudo is not installed there (`sudo -n true`: {said}); install sudo (e.g. apt-get install sudo), {root}"
    if "must have a tty" in said:
        return (f"{where}: sudo = true but sudo wants a terminal for {user} (`sudo -n true`: {said}); "
                f"add 'Defaults:{user} !requiretty' in /etc/sudoers.d/nettune (via visudo), {root}")
    if any(s in said for s in _ASKS):
        return (f"{where}: sudo = true but sudo asks {user} for a password (`sudo -n true`: {said}); "
                f"allow {user} to use it without one ('{user} ALL=(ALL) NOPASSWD: ALL' in /etc/sudoers.d/nettune, via visudo), {root}")
    return f"{where}: sudo = true but `sudo -n true` fails for {user} ({said}); fix sudo for {user} (NOPASSWD in /etc/sudoers.d/), {root}"
