"""Every keyword of an OpenSSH client config, and how ssh checks its value.

Written from readconf.c (OpenSSH 9.2, the keyword table and process_config_line; the
keywords added up to 10.x are accepted too, so a newer ssh's config is not refused): a
value ssh rejects is rejected with ssh's own words, in a block that applies or not (ssh
checks every line); a value is kept only in a block that applies and only if none was
kept before (the first value wins); IdentityFile, CertificateFile, SendEnv and the
forwardings add up. Host, Match and Include are the reader's (ssh_config_read.py).
"""
from __future__ import annotations

import re
from typing import Callable

from . import ssh_keyword_checks as checks
from .ssh_options import FLAG, STATES, Bad, Options, one, time_value
from .ssh_words import a2port, atoi, parse_ssh_uri, parse_user_host_port

# `ssh -Q cipher|mac|kex|key-sig` of OpenSSH 9.2, and the names added up to 10.x
CIPHERS = set("3des-cbc aes128-cbc aes192-cbc aes256-cbc aes128-ctr aes192-ctr aes256-ctr aes128-gcm@openssh.com "
              "aes256-gcm@openssh.com chacha20-poly1305@openssh.com".split())
MACS = set("hmac-sha1 hmac-sha1-96 hmac-sha2-256 hmac-sha2-512 hmac-md5 hmac-md5-96 umac-64@openssh.com umac-128@openssh.com "
           "hmac-sha1-etm@openssh.com hmac-sha1-96-etm@openssh.com hmac-sha2-256-etm@openssh.com hmac-sha2-512-etm@openssh.com "
           "hmac-md5-etm@openssh.com hmac-md5-96-etm@openssh.com umac-64-etm@openssh.com umac-128-etm@openssh.com".split())
KEX = set("diffie-hellman-group1-sha1 diffie-hellman-group14-sha1 diffie-hellman-group14-sha256 diffie-hellman-group16-sha512 "
          "diffie-hellman-group18-sha512 diffie-hellman-group-exchange-sha1 diffie-hellman-group-exchange-sha256 ecdh-sha2-nistp256 "
          "ecdh-sha2-nistp384 ecdh-sha2-nistp521 curve25519-sha256 curve25519-sha256@libssh.org sntrup761x25519-sha512 "
          "sntrup761x25519-sha512@openssh.com mlkem768x25519-sha256 mlkem768nistp256-sha256 mlkem1024nistp384-sha384".split())
KEYS = set("ssh-ed25519 ssh-ed25519-cert-v01@openssh.com sk-ssh-ed25519@openssh.com sk-ssh-ed25519-cert-v01@openssh.com "
           "ecdsa-sha2-nistp256 ecdsa-sha2-nistp256-cert-v01@openssh.com ecdsa-sha2-nistp384 ecdsa-sha2-nistp384-cert-v01@openssh.com "
           "ecdsa-sha2-nistp521 ecdsa-sha2-nistp521-cert-v01@openssh.com sk-ecdsa-sha2-nistp256@openssh.com "
           "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com webauthn-sk-ecdsa-sha2-nistp256@openssh.com ssh-dss "
           "ssh-dss-cert-v01@openssh.com ssh-rsa ssh-rsa-cert-v01@openssh.com rsa-sha2-256 rsa-sha2-256-cert-v01@openssh.com "
           "rsa-sha2-512 rsa-sha2-512-cert-v01@openssh.com".split())
_LOGLEVELS = {"quiet", "fatal", "error", "info", "verbose", "debug", "debug1", "debug2", "debug3"}
_FACILITIES = {"daemon", "user", "auth", "authpriv", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"}
_DIGESTS = {"md5", "sha1", "sha256", "sha384", "sha512"}
MAX_IDENTITY_FILES = 100


def _multistate(table: str) -> Callable[..., None]:
    def handle(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
        arg = words.pop(0) if words else None
        if arg is None or arg == "":
            raise Bad("missing argument.")
        value = STATES[table].get(arg.lower()) if table != "flag" else FLAG.get(arg.lower())
        if value is None:
            raise Bad(f'unsupported option "{arg}".')
        o.keep(name, value, active)
    return handle


def _int(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    arg = words.pop(0) if words else None
    value = atoi(arg)
    if value is None:
        raise Bad(f"integer value {'invalid' if arg else 'missing'}.")
    o.keep(name, value, active)


def _string(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    o.keep(name, one(words), active)


def _port(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    arg = one(words)
    port = a2port(arg)
    if not port:
        raise Bad(f"Bad port '{arg}'.")
    o.keep(name, port, active)


def _array(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    """UserKnownHostsFile, GlobalKnownHostsFile, LogVerbose: the first line that applies."""
    empty = name not in o.v
    got = []
    for i, arg in enumerate(words):
        if arg == "":
            raise Bad(f"keyword {name} empty argument")
        if arg.lower() == "none" and (i > 0 or len(words) > 1):
            raise Bad(f'keyword {name} "none" argument must appear alone.')
        got.append(arg)
    words.clear()
    if active and empty:
        o.v[name] = got
        o.origin[name] = o.at


def _append_file(certificates: bool) -> Callable[..., None]:
    limit = "certificate files" if certificates else "identity files"

    def handle(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
        arg = one(words)
        files = o.certificate_files if certificates else o.identity_files
        if active:
            if len(files) >= MAX_IDENTITY_FILES:
                raise Bad(f"Too many {limit} specified (max {MAX_IDENTITY_FILES}).")
            if arg not in files:
                files.append(arg)
                o.origin.setdefault(f"{name}:{arg}", o.at)
    return handle


def _command(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    """ProxyCommand, LocalCommand, RemoteCommand, KnownHostsCommand: the rest of the line
    (a ProxyCommand after a ProxyJump is ignored, as ssh does; not after `ProxyJump none`,
    which ssh 9.2 keeps for ProxyJump alone: `ssh -G` then shows the later ProxyCommand)."""
    if not (name == "ProxyCommand" and str(o.v.get("ProxyJump", "none")).lower() != "none"):
        o.keep(name, rest.lstrip(" \t\r\n="), active)
    words.clear()


def parse_jump(value: str) -> list[tuple[str | None, str, int | None]]:
    """The hops of a ProxyJump value (ssh's parse_jump: a '#' starts a comment; each hop is
    [user@]host[:port] or ssh://[user@]host[:port]); [] for none; Bad when ssh refuses."""
    value = value.split("#", 1)[0].rstrip()
    if value.lower() == "none":
        return []
    hops = []
    for part in value.split(","):
        got = parse_ssh_uri(part)
        if got is False:
            got = parse_user_host_port(part)
        if not got:
            raise Bad(f'Invalid ProxyJump "{value}"')
        hops.append(got)
    return hops


def _jump(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    value = rest.lstrip(" \t\r\n=")
    parse_jump(value)  # syntax is checked even where it does not apply
    if active and "ProxyJump" not in o.v and "ProxyCommand" not in o.v:
        bare = value.split("#", 1)[0].rstrip()
        # ssh 9.2 compares the whole value with "none": `ProxyJump none  # note` is a jump host
        # named "none" there; kept whole, so ssh_resolve refuses it rather than guess
        o.v["ProxyJump"] = value.rstrip() if bare.lower() == "none" and bare != value.rstrip() else bare
        o.origin.setdefault("ProxyJump", o.at)
    words.clear()


def _algos(known: set[str], what: str, wildcard: bool = False) -> Callable[..., None]:
    def handle(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
        arg = one(words)
        if arg[0] != "-":
            for n in (arg[1:] if arg[0] in "+^" else arg).split(","):
                if n == "":
                    break  # ssh stops at an empty name
                if n not in known and not (wildcard and any(re.fullmatch(_glob(p), k) for k in known for p in [n.lstrip("!")])):
                    raise Bad(f"{what} '{arg}'.")
        o.keep(name, arg, active)
    return handle


def _glob(pattern: str) -> str:
    return "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)


def _choice(values: set[str], message: str) -> Callable[..., None]:
    def handle(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
        arg = words.pop(0) if words else None
        if arg is None or arg.lower() not in values:
            raise Bad(message.format(arg or "<NONE>"))
        o.keep(name, arg.lower(), active)
    return handle


def _consume(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    words.clear()


def _unsupported(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    o.unsupported.append(name)  # ssh: 'Unsupported option "X"' printed, the config still read
    words.clear()


def _loose(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    """Keywords of OpenSSH newer than 9.2 that change nothing nettune reads: kept as written."""
    o.keep(name, list(words), active)
    words.clear()


Handler = Callable[[Options, str, list[str], str, bool], None]
_flag = _multistate("flag")

# lowercased keyword -> (name as documented, handler); aliases map to the same name
KEYWORDS: dict[str, tuple[str, Handler]] = {}


def _add(handler: Handler, *names: str) -> None:
    for n in names:
        canonical = n.split("=")[-1]
        KEYWORDS[n.split("=")[0].lower()] = (canonical, handler)


_add(_consume, "Protocol")
_add(_consume, "Cipher", "FallBackToRsh", "GlobalKnownHostsFile2", "RhostsAuthentication", "UserKnownHostsFile2",
     "UseRoaming", "UseRsh", "UsePrivilegedPort")  # deprecated: ssh notes them and goes on
_add(_unsupported, "AFSTokenPassing", "KerberosAuthentication", "KerberosTGTPassing", "RSAAuthentication",
     "RhostsRSAAuthentication", "CompressionLevel")
_add(_flag, "GSSAPIAuthentication", "GSSAPIDelegateCredentials", "ForwardX11", "ForwardX11Trusted", "ExitOnForwardFailure",
     "GatewayPorts", "PasswordAuthentication", "KbdInteractiveAuthentication",
     "ChallengeResponseAuthentication=KbdInteractiveAuthentication", "SkeyAuthentication=KbdInteractiveAuthentication",
     "TisAuthentication=KbdInteractiveAuthentication", "HostbasedAuthentication", "IdentitiesOnly", "BatchMode",
     "CheckHostIP", "TCPKeepAlive", "KeepAlive=TCPKeepAlive", "ClearAllForwardings", "EnableSSHKeysign",
     "NoHostAuthenticationForLocalhost", "PermitLocalCommand", "VisualHostKey", "HashKnownHosts", "StdinNull",
     "ForkAfterAuthentication", "ProxyUseFdpass", "CanonicalizeFallbackLocal", "StreamLocalBindUnlink",
     "EnableEscapeCommandline")
_add(_string, "PKCS11Provider", "SmartcardDevice=PKCS11Provider", "KbdInteractiveDevices", "HostKeyAlias", "User", "XAuthLocation",
     "Hostname", "PreferredAuthentications", "BindAddress", "BindInterface", "SecurityKeyProvider", "ControlPath",
     "IgnoreUnknown", "RevokedHostKeys", "Tag")
_add(_multistate("pubkey"), "PubkeyAuthentication", "DSAAuthentication=PubkeyAuthentication")
_add(_multistate("yesnoask"), "VerifyHostKeyDNS", "UpdateHostKeys")
_add(_multistate("strict"), "StrictHostKeyChecking")
_add(_multistate("compression"), "Compression")
_add(_multistate("family"), "AddressFamily")
_add(_multistate("controlmaster"), "ControlMaster")
_add(_multistate("tunnel"), "Tunnel")
_add(_multistate("requesttty"), "RequestTTY")
_add(_multistate("sessiontype"), "SessionType")
_add(_multistate("canonicalize"), "CanonicalizeHostname")
_add(checks.agent_path, "ForwardAgent", "IdentityAgent")
_add(time_value, "ForwardX11Timeout", "ConnectTimeout", "ServerAliveInterval")
_add(_int, "NumberOfPasswordPrompts", "ConnectionAttempts", "ServerAliveCountMax", "CanonicalizeMaxDots", "RequiredRSASize")
_add(checks.rekey, "RekeyLimit")
_add(_append_file(False), "IdentityFile", "IdentityFile2=IdentityFile")
_add(_append_file(True), "CertificateFile")
_add(_array, "GlobalKnownHostsFile", "UserKnownHostsFile", "LogVerbose")
_add(_command, "KnownHostsCommand", "ProxyCommand", "LocalCommand", "RemoteCommand")
_add(_jump, "ProxyJump")
_add(_port, "Port")
_add(_algos(CIPHERS, "Bad SSH2 cipher spec"), "Ciphers")
_add(_algos(MACS, "Bad SSH2 MAC spec"), "MACs")
_add(_algos(KEX, "Bad SSH2 KexAlgorithms"), "KexAlgorithms")
_add(_algos(KEYS, "Bad key types", wildcard=True), "HostKeyAlgorithms", "CASignatureAlgorithms", "HostbasedAcceptedAlgorithms",
     "HostbasedKeyTypes=HostbasedAcceptedAlgorithms", "PubkeyAcceptedAlgorithms", "PubkeyAcceptedKeyTypes=PubkeyAcceptedAlgorithms")
_add(_choice(_LOGLEVELS, "unsupported log level '{}'"), "LogLevel")
_add(_choice(_FACILITIES, "unsupported log facility '{}'"), "SyslogFacility")
_add(_choice(_DIGESTS, 'Invalid hash algorithm "{}".'), "FingerprintHash")
_add(checks.forward, "LocalForward", "RemoteForward", "DynamicForward")
_add(checks.remote_open, "PermitRemoteOpen")
_add(checks.escape, "EscapeChar")
_add(checks.persist, "ControlPersist")
_add(checks.send_env, "SendEnv")
_add(checks.set_env, "SetEnv")
_add(checks.ipqos, "IPQoS")
_add(checks.mask, "StreamLocalBindMask")
_add(checks.tundev, "TunnelDevice")
_add(checks.add_keys, "AddKeysToAgent")
_add(checks.domains, "CanonicalDomains")
_add(checks.cnames, "CanonicalizePermittedCNAMEs")
_add(_loose, "ObscureKeystrokeTiming", "ChannelTimeout", "VersionAddendum", "RefuseConnection", "WarnWeakCrypto")  # OpenSSH 9.5+
CONDITIONALS = {"host": "Host", "match": "Match", "include": "Include"}
