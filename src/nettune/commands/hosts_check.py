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
    notes: list[str] = field(default_factory=list)
    version: str = ""  # what it runs, once connected (a Kubernetes API server's version)


def _key_source(h: Any) -> str:
    if h.key:
        return h.key + (" + ssh-agent" if h.agent else "")
    return "ssh-agent, then ~/.ssh/id_*"


def describe_hosts(study: Any) -> list[HostCheck]:
    """How each host of the study's target is reached (nothing is connected)."""
    t = study.target
    if t.kind == "kubernetes":  # pods exist only while a run lasts: say where they will be made
        from ..targets.kubernetes.k8s_hosts import host_rows  # noqa: PLC0415

        return [HostCheck(*row) for row in host_rows(t)]
    if t.kind != "ssh":
        return [HostCheck(h, "test", "this machine" if t.kind == "local" else f"lab namespace nettune-{study.name}-{h}", None,
                          str(os.environ.get("USER") or "root"), "-", "-", "-", False, f"target kind {t.kind}") for h in t.test_hosts]
    out = []
    for name, h in t.hosts.items():
        source = f"ssh_config {h.resolved_from}" if h.resolved_from else (f"inventory {t.inventory}" if t.inventory else "the study")
        out.append(HostCheck(name, h.role, h.address, h.port, h.user or os.environ.get("USER") or "(local user)", _key_source(h),
                             describe(h.jump) or "direct", h.known_hosts or "~/.ssh/known_hosts", h.sudo, source, notes=list(h.ignored)))
    return out


def check_hosts(study: Any) -> list[HostCheck]:
    """describe_hosts, then connect to each (through its jump hosts) and look for its tools."""
    rows = describe_hosts(study)
    t = study.target
    if t.kind == "kubernetes":  # the API server answers (context, version, nodes); the pods come with the run
        from ..targets.kubernetes.k8s_hosts import ask_cluster  # noqa: PLC0415

        answer = ask_cluster(t)
        for r in rows:
            r.ok, r.reason = answer.status(r.name)
            r.version = answer.version
        return rows
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
            spec = t.hosts[r.name]
            host = SshHost(r.name, spec, loop, t.trust_on_first_use, t.connect_timeout, 0.0)
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
