"""Hosts named only by an alias, resolved through the user's OpenSSH client configuration.

`[target.hosts.pve1]` with no `address` means "the machine `ssh pve1` reaches": HostName,
User, Port, IdentityFile, IdentitiesOnly, ProxyJump (every hop resolved the same way,
recursively, as OpenSSH does), ConnectTimeout, UserKnownHostsFile and StrictHostKeyChecking
are read from ~/.ssh/config or from `[target] ssh_config = PATH` (like `ssh -F`). The file is
parsed by asyncssh's own config reader (Host and Match blocks, Include, %-tokens); two
directives OpenSSH users rely on are added to its table (StrictHostKeyChecking, which
asyncssh does not read) and every directive it does not know is recorded, so that one
nettune cannot honour is an error naming it, never a silent fallback.

Values written in the study or the inventory win over the file (resolve() is called with
them and only fills what is missing).
"""
from __future__ import annotations

import getpass
import os
import shlex
from pathlib import Path
from typing import Any

from asyncssh.config import ConfigParseError, SSHClientConfig

# Directives that change where we connect, as whom, or which host keys we trust, and that
# nettune does not implement: refusing them beats connecting somewhere else than `ssh` would.
_REFUSED = {
    "ProxyCommand": "use ProxyJump instead",
    "KnownHostsCommand": "list the keys in a UserKnownHostsFile",
    "CertificateFile": "certificates are not supported; use a key (IdentityFile)",
    "IdentityAgent": "nettune uses the agent of SSH_AUTH_SOCK",
    "HostKeyAlias": "write the host's own name or address in known_hosts",
    "PKCS11Provider": "hardware tokens are not supported; use a key file or ssh-agent",
    "SecurityKeyProvider": "hardware tokens are not supported; use a key file or ssh-agent",
    "GlobalKnownHostsFile": "use UserKnownHostsFile",
    "BindAddress": "nettune connects from the default address",
    "BindInterface": "nettune connects from the default interface",
    "CanonicalizeHostname": "write the full host name in HostName",
    "ProxyUseFdpass": "use ProxyJump instead",
    "RemoteCommand": "nettune runs its own commands",
    "LocalCommand": "nettune runs no local command",
    "GSSAPIAuthentication": "use a key or ssh-agent",
    "HostbasedAuthentication": "use a key or ssh-agent",
}
# Values of a refused directive that mean "off" and so change nothing.
_HARMLESS_VALUES = {"none", "no", "false", "off", "$ssh_auth_sock"}
MAX_HOPS = 8


class SshConfigError(ValueError):
    """The ssh_config cannot be honoured for a host (one line: file, host, directive, fix)."""


def _record_unknown(config: "_Config", option: str, args: list[str]) -> None:
    config.unknown.setdefault(option, " ".join(args))
    args.clear()


class _Handlers(dict):
    """asyncssh's directive table; a directive it does not know is recorded, not skipped."""

    def __missing__(self, key: str) -> tuple[str, Any]:
        return key, _record_unknown


class _Config(SSHClientConfig):
    # asyncssh looks directives up in this class attribute (private, but stable since 2.x;
    # tests/test_ssh_config.py fails if that changes): extend it rather than re-parse the file.
    _handlers = _Handlers({**SSHClientConfig._handlers,  # type: ignore[misc]
                           "stricthostkeychecking": ("StrictHostKeyChecking", SSHClientConfig._set_string)})

    def __init__(self, *args: Any) -> None:
        self.unknown: dict[str, str] = {}
        super().__init__(*args)


def default_path() -> Path:
    return Path("~/.ssh/config").expanduser()


def _load(path: Path, alias: str, user: str | None, port: int | None) -> _Config:
    try:
        return _Config.load(None, [path], False, False, False, getpass.getuser(), user or (), alias, port or ())  # type: ignore[return-value]
    except ConfigParseError as e:
        raise SshConfigError(f"ssh_config {e}") from None
    except OSError as e:
        raise SshConfigError(f"ssh_config {path}: {e.strerror or e}") from None


def _first_file(values: Any, home: Path) -> str | None:
    for v in values or []:
        p = Path(os.path.expanduser(str(v)))
        p = p if p.is_absolute() else home / p
        if p.exists():
            return str(p)
    return None


def parse_jump(value: str) -> list[tuple[str | None, str, int | None]]:
    """ProxyJump / `ssh -J` syntax: [user@]host[:port] or ssh://[user@]host[:port], comma-separated."""
    hops = []
    for part in value.split(","):
        part = part.strip().removeprefix("ssh://")
        if not part:
            raise SshConfigError(f"jump {value!r}: an empty hop; write [user@]host[:port][,...]")
        user, _, hostport = part.rpartition("@")
        host, port = hostport, None
        if hostport.startswith("["):  # [v6addr]:port
            host, _, rest = hostport[1:].partition("]")
            port = rest.removeprefix(":") or None
        elif hostport.count(":") == 1:
            host, port = hostport.split(":")
        if port is not None and not str(port).isdigit():
            raise SshConfigError(f"jump {value!r}: port {port!r} is not a number")
        hops.append((user or None, host, int(port) if port else None))
    return hops


def resolve(alias: str, path: Path | None, given: dict[str, Any] | None = None, _depth: int = 0) -> dict[str, Any]:
    """SshHostSpec fields for `alias` as `ssh alias` would connect; `given` fields win."""
    given = dict(given or {})
    path = path or default_path()
    where = f"ssh_config {path}, Host {alias}"
    if not path.exists():
        if given.get("address"):
            return given
        raise SshConfigError(f"host {alias!r} has no address and {path} does not exist; add address = \"...\" to it, "
                             "or a `Host` block for it to an OpenSSH client config (name another with [target] ssh_config = \"PATH\")")
    cfg = _load(path, alias, given.get("user"), given.get("port"))
    for option, fix in _REFUSED.items():
        value = cfg.get(option, cfg.unknown.get(option.lower()))
        if value not in (None, [], False) and str(value).lower() not in _HARMLESS_VALUES:
            raise SshConfigError(f"{where}: nettune cannot honour {option} ({value}); {fix}, or write the host's address, user and key in the study")
    strict = str(cfg.get("StrictHostKeyChecking") or "").lower()
    if strict in ("no", "off", "false"):
        raise SshConfigError(f"{where}: StrictHostKeyChecking {strict}: nettune always checks host keys; use accept-new "
                             "(a host never seen is trusted once and recorded, a changed key is refused) or add the key to known_hosts")
    home = Path.home()
    out: dict[str, Any] = {"address": str(cfg.get("Hostname") or alias), "resolved_from": str(path)}
    if cfg.get("User"):
        out["user"] = str(cfg.get("User"))
    if cfg.get("Port"):
        out["port"] = int(cfg.get("Port"))  # type: ignore[call-overload]
    files = cfg.get("IdentityFile") or []
    key = _first_file(files, home)
    if files and key is None and cfg.get("IdentitiesOnly"):
        raise SshConfigError(f"{where}: IdentitiesOnly yes but none of its IdentityFile exists ({', '.join(map(str, files))})")
    if key:
        out["key"] = key
        out["agent"] = not bool(cfg.get("IdentitiesOnly"))  # OpenSSH offers agent keys too unless IdentitiesOnly
    if cfg.get("UserKnownHostsFile"):
        kh = [os.path.expanduser(str(f)) for f in cfg.get("UserKnownHostsFile")]  # type: ignore[union-attr]
        out["known_hosts"] = next((f for f in kh if os.path.isfile(f)), kh[0])
    if strict == "accept-new":
        out["trust_on_first_use"] = True
    elif strict == "yes":
        out["trust_on_first_use"] = False
    if cfg.get("ConnectTimeout"):
        out["connect_timeout"] = float(cfg.get("ConnectTimeout"))  # type: ignore[arg-type]
    jump = given.pop("jump", cfg.get("ProxyJump"))
    out.update(given)
    if isinstance(jump, str):
        out["jump"] = resolve_jump(jump, path, _depth)
    elif jump is not None:
        out["jump"] = jump  # already resolved (a re-validated study)
    return out


def resolve_jump(value: str, path: Path | None, _depth: int = 0) -> list[dict[str, Any]]:
    """The hops of a ProxyJump value, each resolved through the config (its own jumps first)."""
    if value.strip().lower() == "none":  # OpenSSH: ProxyJump none = connect directly
        return []
    if _depth >= MAX_HOPS:
        raise SshConfigError(f"jump {value!r}: more than {MAX_HOPS} hops (a ProxyJump loop?)")
    hops: list[dict[str, Any]] = []
    for user, host, port in parse_jump(value):
        given = {k: v for k, v in (("user", user), ("port", port)) if v is not None}
        if path is not None and path.exists():
            hop = resolve(host, path, given, _depth + 1)
        else:
            hop = {"address": host, **given}
        hops += hop.pop("jump", [])
        hop.pop("resolved_from", None)
        hops.append({"name": host, **hop})
    return hops


def describe(hops: list[Any]) -> str:
    """'bastion (root@198.18.0.9:22) -> ...' for messages and `nettune hosts`."""
    return " -> ".join(f"{h.name} ({h.user + '@' if h.user else ''}{h.address}:{h.port})" for h in hops)


def ansible_jump(args: str) -> tuple[str | None, list[str]]:
    """The jump host in ansible_ssh_common_args / extra_args (`-J host`, `-o ProxyJump=host`),
    and the other words, which nettune does not honour."""
    words, rest, jump = shlex.split(args), [], None
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("-J", "-o") and i + 1 < len(words):
            w, i = w + words[i + 1], i + 1
        if w.startswith("-J") and len(w) > 2:
            jump = w[2:]
        elif w.startswith("-o") and w[2:].partition("=")[0].strip().lower() == "proxyjump":
            jump = w[2:].partition("=")[2].strip()
        else:
            rest.append(w)
        i += 1
    return jump or None, rest
