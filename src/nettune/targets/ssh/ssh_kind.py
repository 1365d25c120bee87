"""The ssh target kind: real machines reached over SSH (ssh.py, which loads asyncssh: only
imported once a study of this kind makes its target or connects)."""
from __future__ import annotations

import os

from ...studyfile.models import Study
from ...studyfile.ssh_config import describe
from ...studyfile.ssh_hosts import SshHostSpec, SshTargetSpec
from ..base import Target
from ..target_kind import TOOLS, HostCheck, TargetKindBase
from ..footprint import Footprint


def _spec(study: Study) -> SshTargetSpec:
    spec = study.target
    assert isinstance(spec, SshTargetSpec)  # TARGETS["ssh"] is only asked about ssh studies
    return spec


def _key_source(h: SshHostSpec) -> str:
    if h.key:
        return h.key + (" + ssh-agent" if h.agent else "")
    return "ssh-agent, then ~/.ssh/id_*"


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
