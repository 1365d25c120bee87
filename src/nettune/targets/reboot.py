"""Reboot a remote host and wait until it answers again, bounded (boot-time knobs).

The kernel's boot id (/proc/sys/kernel/random/boot_id, a new random UUID every boot)
tells a reboot that happened from one that did not: the wait ends when the host answers
with another boot id, or fails after `timeout` seconds saying which. The reboot is
started detached, a second later, so the command returns its exit status before the
connection drops; an SSH host's next command reconnects by itself (targets/ssh/ssh.py).

Never for a host on this machine (a lab namespace, the local target) or one that shares
this machine's boot id (an SSH "host" that is this machine under another address).
"""
from __future__ import annotations

import time
from pathlib import Path

from ..errors import NettuneError
from .base import Host

BOOT_ID = "/proc/sys/kernel/random/boot_id"
# started in the background, a second later: the exit status gets back before the drop
POLL = 2.0  # seconds between tries while the host is down
REBOOT_ARGV = ["sh", "-c", "(sleep 1; reboot) </dev/null >/dev/null 2>&1 &"]


class RebootError(NettuneError):
    """A reboot was refused, did not happen, or the host did not come back in time."""


def boot_id(host: Host) -> str:
    return host.read_text(BOOT_ID).strip()


def this_machine_boot_id() -> str:
    try:
        return Path(BOOT_ID).read_text().strip()
    except OSError:
        return ""


def refuse_unless_rebootable(host: Host) -> None:
    """RebootError (one line) unless nettune may reboot `host`."""
    if host.on_this_machine:
        raise RebootError(f"{host.name} is this machine (or one of its namespaces), the one nettune runs on: it is never rebooted; "
                          "use an ssh target host with allow_reboot = true")
    if not host.allow_reboot:
        raise RebootError(f"{host.name} does not allow reboots: add allow_reboot = true to [target.hosts.{host.name}] "
                          "(inventory: allow_reboot = true, Ansible: nettune_allow_reboot=true)")
    try:
        theirs = boot_id(host)
    except OSError as e:
        raise RebootError(f"{host.name}: cannot read {BOOT_ID} ({e}); a reboot could not be verified") from None
    if theirs and theirs == this_machine_boot_id():
        raise RebootError(f"{host.name} ({host.address}) has this machine's boot id: it is the machine nettune runs on, "
                          "which is never rebooted")


def reboot_and_wait(host: Host, timeout: float | None = None, poll: float | None = None) -> float:
    """Reboot `host` and wait until it answers with a new boot id; the seconds it took."""
    timeout = host.reboot_timeout if timeout is None else timeout
    poll = POLL if poll is None else poll
    before = boot_id(host)
    t0 = time.monotonic()
    try:
        r = host.run(REBOOT_ARGV, timeout=30)
        if r.returncode != 0:
            raise RebootError(f"{host.name}: reboot failed: {r.said() or f'exit code {r.returncode}'}")
    except ConnectionError:
        pass  # the connection went as the host went down: that is the reboot
    deadline = t0 + timeout
    last = "it kept its boot id (no reboot happened)"
    while time.monotonic() < deadline:
        try:
            now = boot_id(host)
        except (ConnectionError, OSError) as e:
            last = f"not answering: {e}"
        else:
            if now and now != before:
                return time.monotonic() - t0
            last = "it kept its boot id (no reboot happened)"
        time.sleep(poll)
    raise RebootError(f"{host.name} ({host.address}) did not come back from a reboot within {timeout:.0f}s ({last}); "
                      "check the host's console, then `nettune restore`")
