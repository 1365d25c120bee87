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
        more = f" (then {', '.join(h.more_keys)})" if h.more_keys else ""
        return h.key + more + (" + ssh-agent" if h.agent else "")
    return "ssh-agent, then ~/.ssh/id_*" if h.agent is not False else "none"


def _known_hosts(h: SshHostSpec) -> str:
    files = ([h.known_hosts] if h.known_hosts else []) + list(h.more_known_hosts)
    return ", ".join(files) if files else "~/.ssh/known_hosts"


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
                               more_keys=reach.get("more_keys") or [], more_known_hosts=reach.get("more_known_hosts") or [],
                               agent_path=reach.get("agent_path"), jump=[SshHopSpec.model_validate(h) for h in jump])
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
        from ...studyfile.ssh_config import describe  # noqa: PLC0415 - the config reader, only for ssh studies

        t = _spec(study)
        out = []
        for name, h in t.hosts.items():
            if h.resolved_from:  # "PATH" or "inventory + PATH" (an Ansible host: its inventory, then ssh_config)
                _, through_inventory, cfg = h.resolved_from.rpartition("inventory + ")
                source = (f"inventory {t.inventory} + " if through_inventory else "") + f"ssh_config {cfg}"
            else:
                source = f"inventory {t.inventory}" if t.inventory else "the study"
            hops = [u for j in h.jump for u in j.unresolved]
            out.append(HostCheck(name, h.role, str(h.address), h.port, h.user or os.environ.get("USER") or "(local user)", _key_source(h),
                                 describe(h.jump) or "direct", _known_hosts(h), h.sudo, source, notes=list(h.ignored),
                                 ran=list(h.local_commands) + [c for j in h.jump for c in j.local_commands],
                                 unresolved=list(h.unresolved) + hops, connect_timeout=h.connect_timeout or t.connect_timeout))
        return out

    def left_out(self, study: Study) -> dict[str, str]:
        return dict(_spec(study).left_out)

    def inventory_read(self, study: Study) -> str | None:
        return _spec(study).inventory_read

    def resolution_notes(self, study: Study) -> list[str]:
        """Inventory settings not honoured (names only), Match exec commands run or not
        run, an inventory script run, hosts the inventory has that are not reached over SSH."""
        t = _spec(study)
        lines = []
        if t.inventory_read and t.inventory_read.startswith("ran "):
            lines.append(f"inventory {t.inventory}: {t.inventory_read}")
        for name, h in t.hosts.items():
            lines += [f"{name}: inventory setting not honoured: {x}" for x in h.ignored]
            lines += [f"{name}: {x}" for x in h.local_commands + [c for j in h.jump for c in j.local_commands]]
            lines += [f"{name}: {x}" for x in h.unresolved + [u for j in h.jump for u in j.unresolved]]
        lines += [f"{name}: left out: {why}" for name, why in t.left_out.items()]
        return lines

    def check_hosts(self, study: Study, rows: list[HostCheck]) -> None:
        from .ssh import SshError, SshHost  # noqa: PLC0415 - asyncssh, only when connecting
        from .sshproc import EventLoopThread  # noqa: PLC0415

        t = _spec(study)
        loop = EventLoopThread()
        try:
            for r in rows:
                if r.unresolved:  # a value guessed because a Match exec or inventory script was not run
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

    def knob_os(self, study: Study, host: str) -> tuple[str | None, str | None]:
        return None, _spec(study).hosts[host].interface  # its OS is known once connected (uname -s)

    def reaches(self, reach: dict[str, Any]) -> bool:
        return bool(reach.get("port"))  # an ssh host (a journal written before restores over SSH kept only the address)

    def reconnector(self) -> HostReconnector:
        return SshReconnector()
