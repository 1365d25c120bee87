"""Reaching remote hosts again from what the knob journal recorded, without the study file.

Host.reach() gives what a journal record keeps of a remote host (address, port, user,
absolute key path, known_hosts file, sudo, connect timeout, the host key seen, and the jump
hosts on the way, each with the key it showed);
Reconnector turns such a record back into a connected host, accepting only that
recorded key, one connection per host for as long as it is open.
"""
from __future__ import annotations

from typing import Any

from .base import Host


class NoWayToReach(Exception):
    """The journal's record of a host does not say how to reach it (an older nettune wrote it)."""


class Reconnector:
    def __init__(self) -> None:
        self._loop: Any = None
        self._hosts: dict[tuple[Any, ...], Any] = {}
        self._k8s: Any = None  # k8s_reach.NodeReach, once a kubernetes node is to be reached

    def host(self, label: str, reach: dict[str, Any]) -> Host:
        """The host `reach` describes, connected. NoWayToReach: the record does not say how
        to reach it; ValueError: the record is unusable (a journal edited by hand);
        ConnectionError: refused key, unreachable, sudo broken."""
        if reach.get("sandbox"):  # the test seam's directory tree (targets/sandbox.py): no connection
            from .sandbox import SandboxHost

            try:
                return SandboxHost.from_reach(label, reach)
            except OSError as e:
                raise ConnectionError(str(e)) from None
        if reach.get("kubernetes"):  # a node of a cluster, through a privileged pod (targets/kubernetes/k8s_reach.py)
            from .kubernetes.k8s_reach import NodeReach

            self._k8s = self._k8s or NodeReach()
            key = ("kubernetes", reach.get("context"), reach.get("node"))
            if key not in self._hosts:
                self._hosts[key] = self._k8s.host(label, reach)
            return self._hosts[key]  # type: ignore[no-any-return]
        if not reach.get("port"):
            raise NoWayToReach("the journal does not say how to reach it (written by an older nettune)")
        key = (reach["address"], reach["port"], reach.get("user"), reach.get("host_key"))
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = self._ssh_host(label, reach)
        host.connect()
        return host

    def _ssh_host(self, label: str, reach: dict[str, Any]) -> Any:
        from ..studyfile.ssh_hosts import SshHopSpec, SshHostSpec
        from .ssh.ssh import SshHost
        from .ssh.sshproc import EventLoopThread

        jump = [dict(h) for h in reach.get("jump") or []]
        keys = [h.pop("host_key", None) for h in jump]  # each hop must show the key it showed then
        spec = SshHostSpec(address=reach["address"], port=reach["port"], user=reach.get("user"), key=reach.get("key"),
                           sudo=bool(reach.get("sudo")), known_hosts=reach.get("known_hosts"), agent=reach.get("agent"),
                           more_keys=reach.get("more_keys") or [], more_known_hosts=reach.get("more_known_hosts") or [],
                           agent_path=reach.get("agent_path"), jump=[SshHopSpec.model_validate(h) for h in jump])
        if self._loop is None:
            self._loop = EventLoopThread()
        return SshHost(label, spec, self._loop, tofu=False, connect_timeout=float(reach.get("connect_timeout") or 10.0),
                       host_key=reach.get("host_key"), jump_keys=keys)

    def close(self) -> None:
        for h in self._hosts.values():
            h.close()
        self._hosts.clear()
        if self._k8s is not None:
            self._k8s.close()
        if self._loop is not None:
            self._loop.stop()
            self._loop = None
