"""`nettune hosts STUDY`: each host as nettune will connect to it, then whether it answers
and has its tools, without running a test (connections are made one host at a time, so
one host that is down is reported as that host, with its reason)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..studyfile.ssh_config import describe

TOOLS = ("iperf3", "iperf")


@dataclass
class HostCheck:
    name: str
    role: str
    address: str
    port: int | None
    user: str
    key: str
    jump: str
    known_hosts: str
    sudo: bool
    source: str
    ok: bool = True
    reason: str = ""
    tools: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # inventory settings not honoured
    ran: list[str] = field(default_factory=list)  # Match exec commands run to resolve it
    unresolved: list[str] = field(default_factory=list)  # what was not run (a dry run): values guessed
    connect_timeout: float | None = None


def _key_source(h: Any) -> str:
    if h.key:
        more = f" (then {', '.join(h.more_keys)})" if h.more_keys else ""
        return h.key + more + (" + ssh-agent" if h.agent else "")
    return "ssh-agent, then ~/.ssh/id_*" if h.agent is not False else "none"


def _known_hosts(h: Any) -> str:
    files = ([h.known_hosts] if h.known_hosts else []) + list(h.more_known_hosts)
    return ", ".join(files) if files else "~/.ssh/known_hosts"


def left_out(study: Any) -> dict[str, str]:
    """Inventory hosts the ssh target does not reach (ansible_connection=local, ...)."""
    return dict(study.target.left_out) if study.target.kind == "ssh" else {}


def describe_hosts(study: Any) -> list[HostCheck]:
    """How each host of the study's target is reached (nothing is connected)."""
    t = study.target
    if t.kind == "kubernetes":  # pods exist only while a run lasts: say where they will be made
        where = f"pod, context {t.context or '(current)'}"
        return [HostCheck(h, "test", where, None, "-", "kubeconfig", "-", "-", False,
                          f"made by the run from {t.image} (see run --dry-run)") for h in t.test_hosts]
    if t.kind != "ssh":
        return [HostCheck(h, "test", "this machine" if t.kind == "local" else f"lab namespace nettune-{study.name}-{h}", None,
                          str(os.environ.get("USER") or "root"), "-", "-", "-", False, f"target kind {t.kind}") for h in t.test_hosts]
    out = []
    for name, h in t.hosts.items():
        if h.resolved_from:  # "PATH" or "inventory + PATH" (an Ansible host: its inventory, then ssh_config)
            inv, _, cfg = h.resolved_from.rpartition("inventory + ")
            source = (f"inventory {t.inventory} + " if _ else "") + f"ssh_config {cfg}"
        else:
            source = f"inventory {t.inventory}" if t.inventory else "the study"
        hops = [u for j in h.jump for u in j.unresolved]
        out.append(HostCheck(name, h.role, h.address, h.port, h.user or os.environ.get("USER") or "(local user)", _key_source(h),
                             describe(h.jump) or "direct", _known_hosts(h), h.sudo, source, notes=list(h.ignored),
                             ran=list(h.local_commands) + [c for j in h.jump for c in j.local_commands],
                             unresolved=list(h.unresolved) + hops, connect_timeout=h.connect_timeout or t.connect_timeout))
    return out


def check_hosts(study: Any) -> list[HostCheck]:
    """describe_hosts, then connect to each (through its jump hosts) and look for its tools."""
    rows = describe_hosts(study)
    t = study.target
    if t.kind == "kubernetes":
        return rows  # nothing to connect to before a run makes the pods; their tools come with the image
    if t.kind != "ssh":
        import shutil

        for r in rows:
            r.tools = {tool: shutil.which(tool) for tool in TOOLS}
            r.ok, r.reason = all(r.tools.values()), "" if all(r.tools.values()) else "missing: " + ", ".join(k for k, v in r.tools.items() if not v)
        return rows
    from ..targets.ssh.ssh import SshError, SshHost
    from ..targets.ssh.sshproc import EventLoopThread

    loop = EventLoopThread()
    try:
        for r in rows:
            if r.unresolved:
                r.ok, r.reason = False, f"not connected: {r.unresolved[0]}"
                continue
            host = SshHost(r.name, t.hosts[r.name], loop, t.trust_on_first_use, t.connect_timeout, 0.0)
            try:
                host.connect()
                if r.role == "test":
                    r.tools = {tool: host.which(tool) for tool in TOOLS}
                    missing = [k for k, v in r.tools.items() if not v]
                    if missing:
                        r.ok, r.reason = False, f"connected, but {', '.join(missing)} not installed (nettune setup on that host, or apt-get install iperf3 iperf)"
            except (SshError, ConnectionError, OSError) as e:
                r.ok, r.reason = False, str(e)
            finally:
                host.close()
    finally:
        loop.stop()
    return rows


def resolution_notes(study: Any) -> list[str]:
    """What reading the study's hosts ran or did not run, one line each (said by `nettune
    run` before anything starts, and by its dry run): inventory settings not honoured (names
    only), Match exec commands run or not run, an inventory script run, hosts the inventory
    has that are not reached over SSH."""
    t = study.target
    if t.kind != "ssh":
        return []
    lines = []
    if t.inventory_read and t.inventory_read.startswith("ran "):
        lines.append(f"inventory {t.inventory}: {t.inventory_read}")
    for name, h in t.hosts.items():
        lines += [f"{name}: inventory setting not honoured: {x}" for x in h.ignored]
        lines += [f"{name}: {x}" for x in h.local_commands + [c for j in h.jump for c in j.local_commands]]
        lines += [f"{name}: {x}" for x in h.unresolved + [u for j in h.jump for u in j.unresolved]]
    lines += [f"{name}: left out: {why}" for name, why in t.left_out.items()]
    return lines
