"""One SSH connection, direct or through jump hosts (ProxyJump), with nettune's trust rules.

Every hop is a connection of its own: its host key is checked exactly like a host's
(sshtrust.host_trust: pinned known_hosts, then trust on first use when allowed, a changed
key always refused; `nettune restore` insists on the key recorded for that hop), and the
next hop, then the host, are reached through it (asyncssh `tunnel=`). So a bastion with a
wrong key is refused before anything crosses it, and a lost bastion drops the host's
connection, which SshHost handles like any lost connection.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import asyncssh

from .ssh_error import SshError
from .sshtrust import client_keys, host_trust, other_keys, mismatch_message, pattern, presented_key, tofu_file

KEEPALIVE = 5.0  # seconds; 3 missed keepalives = connection lost


@dataclass
class Opened:
    conn: Any
    record: bool  # trusted on first use: the caller records the key
    trust_file: str | None


async def ssh_connect(where: str, spec: Any, tofu: bool, timeout: float, expected_key: str | None = None,
                      tunnel: Any = None) -> Opened:
    """Connect to spec (address, port, user, key, agent, known_hosts); SshError (one line) if not."""

    trust = host_trust(where, spec.address, spec.port, spec.known_hosts, str(tofu_file()), tofu, expected_key, spec.more_known_hosts)
    # config=None: asyncssh would otherwise apply ~/.ssh/config on its own, with its own host key
    # rules; nettune resolved the config already (spec.ssh_config) and checks keys itself.
    opts: dict[str, Any] = {"config": None, "port": spec.port, "connect_timeout": timeout, "keepalive_interval": KEEPALIVE, "keepalive_count_max": 3}
    if tunnel is not None:
        opts["tunnel"] = tunnel
    if spec.user:
        opts["username"] = spec.user
    if spec.key:
        # the key, then ssh's other identity files in its order (those missing or unusable skipped, as ssh skips them)
        opts["client_keys"] = client_keys(where, spec.key) + [k for f in spec.more_keys for k in other_keys(f)]
        if not spec.agent:
            opts["agent_path"] = None  # only the keys given: no "too many authentication failures"
    if spec.agent_path and spec.agent is not False:
        opts["agent_path"] = spec.agent_path  # ssh_config IdentityAgent
    try:
        conn = await asyncssh.connect(spec.address, known_hosts=trust.known_hosts, **opts)
    except asyncssh.HostKeyNotVerifiable:
        presented = await presented_key(spec.address, spec.port, timeout, tunnel)
        raise SshError(mismatch_message(where, trust, presented, pattern(spec.address, spec.port))) from None
    except asyncssh.PermissionDenied:
        raise SshError(f"{where}: login refused; check user and key ({spec.key or 'ssh-agent / ~/.ssh/id_*'})") from None
    except asyncssh.ChannelOpenError as e:  # the jump host would not forward to this one
        raise SshError(f"{where}: the jump host could not reach it: {e.reason}", retry=True) from None
    except ConnectionRefusedError:
        raise SshError(f"{where}: cannot connect: connection refused (nothing listens on port {spec.port} there, "
                       "or a firewall resets the connection)", retry=True) from None
    except (OSError, asyncssh.Error, asyncio.TimeoutError) as e:
        raise SshError(f"{where}: cannot connect: {str(e) or type(e).__name__}", retry=True) from None
    return Opened(conn, trust.record, trust.pinned_file or None)


def hop_where(hop: Any, host_name: str) -> str:
    return f"jump host {hop.name} ({hop.user + '@' if hop.user else ''}{hop.address}:{hop.port}) on the way to {host_name}"
