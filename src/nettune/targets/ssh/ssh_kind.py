"""The ssh target kind: real machines reached over SSH (ssh.py, which loads asyncssh: only
imported once a study of this kind makes its target or connects)."""
from __future__ import annotations

import os
from typing import Any

from ...studyfile.models import Study
from ...studyfile.ssh_hosts import SshHopSpec, SshHostSpec, SshTargetSpec
from ..base import Host, Target
from ..footprint import Footprint
from ..target_kind import TOOLS, HostCheck, HostReconnector, TargetKindBase


def _spec(study: Study) -> SshTargetSpec:
    spec = study.target
    assert isinstance(spec, SshTargetSpec)  # TARGETS["ssh"] is only asked about ssh studies
    return spec


def _key_source(h: SshHostSpec) -> str:
    if h.key:
        return h.key + (" + ssh-agent" if h.agent else "")
    return "ssh-agent, then ~/.ssh/id_*"


class SshReconnector:
    """Remote hosts again from what their reach() recorded (address, port, user, absolute
    key path, known_hosts file, sudo, connect timeout, the host key seen, and the jump
    hosts on the way, each with the key it showed), accepting only that recorded key,
    one connection per host for as long as the restore lasts."""

    def __init__(self) -> None:
        self._loop: Any = None  # sshproc.EventLoopThread, made with the first host (asyncssh)
        self._hosts: dict[tuple[Any, ...], Any] = {}

    def host(self, label: str, reach: dict[str, Any]) -> Host:
        from .ssh import SshHost  # noqa: PLC0415 - asyncssh, only when a remote host is to be reached
        from .sshproc import EventLoopThread  # noqa: PLC0415

        key = (reach["address"], reach["port"], reach.get("user"), reach.get("host_key"))
        host = self._hosts.get(key)
        if host is None:
            jump = [dict(h) for h in reach.get("jump") or []]
            keys = [h.pop("host_key", None) for h in jump]  # each hop must show the key it showed then
            spec = SshHostSpec(address=reach["address"], port=reach["port"], user=reach.get("user"), key=reach.get("key"),
                               sudo=bool(reach.get("sudo")), known_hosts=reach.get("known_hosts"), agent=reach.get("agent"),
                               jump=[SshHopSpec.model_validate(h) for h in jump])
            if self._loop is None:
                self._loop = EventLoopThread()
            host = self._hosts[key] = SshHost(label, spec, self._loop, tofu=False, connect_timeout=float(reach.get("connect_timeout") or 10.0),
                                              host_key=reach.get("host_key"), jump_keys=keys)
        host.connect()
        return host  # type: ignore[no-any-return]

    def close(self) -> None:
        for h in self._hosts.values():
            h.close()
        self._hosts.clear()
        if self._loop is not None:
            self._loop.stop()
            self._loop = None


class SshKind(TargetKindBase):
    name = "ssh"

    def make(self, study: Study) -> Target:
        from .ssh import SshTarget  # noqa: PLC0415 - asyncssh, only for ssh studies

        return SshTarget(study)

    def footprint(self, study: Study) -> Footprint:
        return Footprint(remotes={(h.address.lower(), h.port) for h in _spec(study).hosts.values()})

    def server_address(self, study: Study, host: str) -> str:
        return str(_spec(study).hosts[host].address)

    def describe_hosts(self, study: Study) -> list[HostCheck]:
        from ...studyfile.ssh_config import describe  # noqa: PLC0415 - asyncssh's config reader, only for ssh studies

        t = _spec(study)
        out = []
        for name, h in t.hosts.items():
            source = f"ssh_config {h.resolved_from}" if h.resolved_from else (f"inventory {t.inventory}" if t.inventory else "the study")
            out.append(HostCheck(name, h.role, h.address, h.port, h.user or os.environ.get("USER") or "(local user)", _key_source(h),
                                 describe(h.jump) or "direct", h.known_hosts or "~/.ssh/known_hosts", h.sudo, source, notes=list(h.ignored)))
        return out

    def check_hosts(self, study: Study, rows: list[HostCheck]) -> None:
        from .ssh import SshError, SshHost  # noqa: PLC0415 - asyncssh, only when connecting
        from .sshproc import EventLoopThread  # noqa: PLC0415

        t = _spec(study)
        loop = EventLoopThread()
        try:
            for r in rows:
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

    def knob_os(self, study: Study, host: str) -> tuple[str | None, str | None]:
        return None, _spec(study).hosts[host].interface  # its OS is known once connected (uname -s)

    def reaches(self, reach: dict[str, Any]) -> bool:
        return bool(reach.get("port"))  # an ssh host (a journal written before restores over SSH kept only the address)

    def reconnector(self) -> HostReconnector:
        return SshReconnector()
