"""Hosts named only by an alias, resolved through the user's OpenSSH client configuration.

`[target.hosts.pve1]` with no `address` means "the machine `ssh pve1` reaches", and an
Ansible inventory host means "the machine Ansible's `ssh ... HOST` reaches". The config is
read by nettune's own reader of OpenSSH's rules (ssh_config_read.py, ssh_resolve.py;
asyncssh's reader differs from ssh on comments, Match, unknown options and more), and its
result turned into host fields here:

  - read: HostName, User, Port, IdentityFile (every file, in ssh's order; ssh's default
    ~/.ssh/id_* when none is named), IdentitiesOnly, IdentityAgent, ProxyJump (each hop
    resolved as ssh resolves it: the last hop with the earlier ones as its own `-J`),
    ConnectTimeout, UserKnownHostsFile and GlobalKnownHostsFile (all read as known hosts),
    StrictHostKeyChecking, CanonicalizeHostname;
  - refused with one line (file, host, directive, fix) what would change where nettune
    connects, as whom or which keys it trusts and that it cannot do: ProxyCommand,
    KnownHostsCommand, CertificateFile, HostKeyAlias, PKCS11Provider, RevokedHostKeys,
    BindAddress, BindInterface, RemoteCommand, LocalCommand with PermitLocalCommand,
    PubkeyAuthentication no, StrictHostKeyChecking no;
  - what ssh itself refuses is refused with ssh's reason (ssh_words.SshConfigError).

Values written in the study (or an inventory) win over the file, as `ssh -o` wins.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .local_commands import redact
from .ssh_keywords import Bad, parse_jump
from .ssh_resolve import CommandLine, Resolution, evaluate
from .ssh_words import SshConfigError, passwd_home

MAX_HOPS = 8

# Directive -> why nettune cannot honour it and what to write instead (None/"none" values pass).
_REFUSED = {
    "ProxyCommand": "nettune connects with its own SSH client and checks every hop's host key; use ProxyJump",
    "KnownHostsCommand": "list the keys in a UserKnownHostsFile",
    "HostKeyAlias": "write the host's own name or address in known_hosts",
    "PKCS11Provider": "hardware tokens are not supported; use a key file or ssh-agent",
    "RevokedHostKeys": "nettune cannot read a revoked-keys list; remove revoked keys from known_hosts",
    "BindAddress": "nettune connects from the default address",
    "BindInterface": "nettune connects from the default interface",
    "RemoteCommand": "ssh itself refuses a RemoteCommand when given a command (\"Cannot execute command-line and remote command\"), and nettune runs commands",
}


def default_path() -> Path:
    return Path(passwd_home()) / ".ssh" / "config"


def _refuse(r: Resolution, where: str) -> None:
    o = r.options
    for option, fix in _REFUSED.items():
        value = o.get(option)
        if option == "ProxyCommand" and (r.jump is not None or _proxy(r) is not None):
            continue  # ignored after a ProxyJump, as ssh does; or `ssh -W %h:%p bastion`, a jump host
        if value is not None and str(value).lower() != "none":
            raise SshConfigError(f"{where}: nettune cannot honour {option} ({redact(str(value))}); {fix}, "
                                 "or write the host's address, user and key in the study")
    if o.certificate_files:
        raise SshConfigError(f"{where}: nettune cannot honour CertificateFile ({o.certificate_files[0]}); "
                             "certificates named apart are not supported: use the key (IdentityFile), with its KEY-cert.pub beside it")
    if o.get("LocalCommand") and o.get("PermitLocalCommand"):
        raise SshConfigError(f"{where}: nettune cannot honour LocalCommand with PermitLocalCommand yes; nettune runs no local command")
    if o.get("PubkeyAuthentication") == 0:
        raise SshConfigError(f"{where}: PubkeyAuthentication no: nettune logs in with keys only, so it would have no way in; allow keys for this host")
    if r.strict == "no":
        raise SshConfigError(f"{where}: StrictHostKeyChecking no: nettune always checks host keys; use accept-new "
                             "(a host never seen is trusted once and recorded, a changed key is refused) or add the key to known_hosts")


def fields(r: Resolution, where: str) -> dict[str, Any]:
    """SshHostSpec fields of a resolution (refusing what nettune cannot honour)."""
    _refuse(r, where)
    out: dict[str, Any] = {"address": r.hostname, "user": r.user, "port": r.port, "resolved_from": r.config}
    existing = [f for f in r.identity_files if os.path.isfile(f)]
    # ssh offers the files present, in order; with none present it offers agent keys only, or
    # (IdentitiesOnly) nothing: then the first file named stays, and connecting says it is missing
    keys = existing or (r.identity_files[:1] if r.identities_explicit and r.identities_only else [])
    if keys:
        out["key"], out["more_keys"] = keys[0], keys[1:]
    out["agent"] = not r.identities_only and r.identity_agent != "none"
    if r.identity_agent not in (None, "none"):
        out["agent_path"] = r.identity_agent
    # every file ssh reads host keys from; `known_hosts` (where a missing key is to be added,
    # and which must exist when the study names it) only when the first one exists
    user_kh = r.user_known_hosts
    if user_kh and os.path.isfile(user_kh[0]):
        out["known_hosts"], out["more_known_hosts"] = user_kh[0], user_kh[1:] + r.global_known_hosts
    else:
        out["more_known_hosts"] = user_kh + r.global_known_hosts
    if r.strict == "accept-new":
        out["trust_on_first_use"] = True
    elif r.strict == "yes":
        out["trust_on_first_use"] = False
    if r.connect_timeout:
        out["connect_timeout"] = float(r.connect_timeout)
    if r.evaluation.ran:
        out["local_commands"] = list(r.evaluation.ran)
    if r.evaluation.pending:
        out["unresolved"] = list(r.evaluation.pending)
    return out


def resolve(alias: str, path: Path | None, given: dict[str, Any] | None = None, cl: CommandLine | None = None,
            destination: str | None = None) -> dict[str, Any]:
    """SshHostSpec fields for `alias` as `ssh [cl] destination` would connect (destination:
    the alias unless an inventory names an address; path None: ~/.ssh/config and
    /etc/ssh/ssh_config, as ssh reads them); `given` fields win, as `ssh -l/-p/-J` do."""
    given = dict(given or {})
    dest = destination or alias
    cl = cl or CommandLine()
    jump = given.pop("jump", None)
    if isinstance(jump, str):
        cl.first("J", jump)
    if given.get("port") is not None:
        cl.first("p", str(given["port"]))
    if given.get("user") is not None:
        cl.first("l", str(given["user"]))
    path = cl.config or path  # ssh -F: the jump hosts are read from it too
    r = evaluate(dest, path, cl)
    out = fields(r, f"ssh_config {r.config}, Host {dest}")
    hops = jump if isinstance(jump, list) else chain(r, path)
    if given.get("key"):  # a key or known_hosts written in the study replaces ssh's lists
        out.pop("more_keys", None)
    if given.get("known_hosts"):
        out.pop("more_known_hosts", None)
    out.update(given)
    out["jump"] = hops
    return out


def _proxy(r: Resolution) -> tuple[CommandLine, str] | None:
    from .ssh_proxy import proxy_as_jump  # noqa: PLC0415

    return proxy_as_jump(r.proxy_command, r.hostname, r.port, r.user, r.destination) if r.proxy_command else None


def chain(r: Resolution, path: Path | None, depth: int = 0) -> list[dict[str, Any]]:
    """The hops before r's host, as ssh reaches them: `ProxyJump a,b` connects to b with
    `ssh -J a b` (b's own ProxyJump is not used) and to a as `ssh a` (a's is);
    `ProxyCommand ssh -W %h:%p b` connects to b as that inner ssh would."""
    if r.jump is None and _proxy(r) is None:
        return []
    if depth >= MAX_HOPS:
        raise SshConfigError(f"ssh {r.destination}: more than {MAX_HOPS} jump hosts deep "
                             "(a loop, such as a -> b -> a?); ssh would start ssh processes without end")
    if r.jump is not None:
        try:
            hops = parse_jump(r.jump)
        except Bad as e:
            raise SshConfigError(f"ssh {r.destination}: {e}; write [user@]host[:port][,...]") from None
        user, host, port = hops[-1]
        extra = ",".join(_hop_text(h) for h in hops[:-1]) or None
        args = [("l", user)] if user else []
        args += [("p", str(port))] if port else []
        args += [("J", extra)] if extra else []
        cl, hop_path = CommandLine(args), path
    else:
        cl, host = _proxy(r)  # type: ignore[misc]
        hop_path = cl.config  # the inner ssh reads the default files unless given -F
    hr = evaluate(host, hop_path, cl)
    hop = fields(hr, f"ssh_config {hr.config}, jump host {host} on the way to {r.destination}")
    hop.pop("resolved_from", None)
    if hop.get("unresolved"):
        hop["unresolved"] = [f"jump host {host}: {u}" for u in hop["unresolved"]]
    return chain(hr, hop_path, depth + 1) + [{"name": host, **hop}]


def _hop_text(hop: tuple[str | None, str, int | None]) -> str:
    user, host, port = hop
    h = f"[{host}]" if ":" in host else host
    return f"{user + '@' if user else ''}{h}{':' + str(port) if port else ''}"


def resolve_jump(value: str, path: Path | None, use_config: bool = True) -> list[dict[str, Any]]:
    """A jump written in the study (`jump = "user@gw:2222,bastion"`, ssh -J syntax): the hops
    ssh would go through, each looked up in ssh_config (use_config False: taken as written)."""
    if value.strip().lower() == "none":
        return []
    if not use_config:
        try:
            hops = parse_jump(value)
        except Bad as e:
            raise SshConfigError(f"jump {value!r}: {e}; write [user@]host[:port][,...]") from None
        return [{"name": h, "address": h, **({"user": u} if u else {}), **({"port": p} if p else {})} for u, h, p in hops]
    return chain(Resolution.of_jump(value), path)


def describe(hops: list[Any]) -> str:
    """'bastion (root@198.18.0.9:22) -> ...' for messages and `nettune hosts`."""
    return " -> ".join(f"{h.name} ({h.user + '@' if h.user else ''}{h.address}:{h.port})" for h in hops)
